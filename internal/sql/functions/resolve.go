package functions

import (
	"github.com/weirproject/weir/internal/sql/types"
)

// conv converts an argument value to a parameter type.
type conv func(ctx *Context, v any) (any, error)

// needsConv reports whether values of from need converting to be read as
// to. Integral kinds read each other through toInt64, and FLOAT/DOUBLE
// read any number through toF64, so only representation changes count.
func convFor(from, to types.DataType) conv {
	f, t := from.Kind, to.Kind
	if f == types.KindNull || f == t && !t.IsConstructed() {
		return nil
	}
	if f.IsCharacterString() && t.IsCharacterString() && to.Length == types.MaxLength {
		return nil
	}
	if f.IsBinaryString() && t.IsBinaryString() && to.Length == types.MaxLength {
		return nil
	}
	if from.EqualIgnoringNull(to) {
		return nil
	}
	return func(ctx *Context, v any) (any, error) {
		return types.CastIn(v, from, to, ctx.Location())
	}
}

func anyNullable(ts []types.DataType) bool {
	for _, t := range ts {
		if t.IsNullable() {
			return true
		}
	}
	return false
}

// matches reports whether args implicitly cast to params.
func matches(args, params []types.DataType) bool {
	if len(args) != len(params) {
		return false
	}
	for i := range args {
		if !types.ImplicitCastable(args[i], params[i]) {
			return false
		}
	}
	return true
}

// fixed resolves a fixed signature: arguments implicitly cast to params.
// With strict, a NULL argument gives NULL and the result is nullable when
// any argument is.
func fixed(params []types.DataType, result types.DataType, strict bool, fn EvalFunc) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if !matches(args, params) {
			return nil, nil
		}
		return bind(args, params, result, strict, fn), nil
	}
}

// bind builds the Scalar for args cast to params.
func bind(args, params []types.DataType, result types.DataType, strict bool, fn EvalFunc) *Scalar {
	convs := make([]conv, len(args))
	hasConv := false
	for i := range args {
		if convs[i] = convFor(args[i], params[i]); convs[i] != nil {
			hasConv = true
		}
	}
	if strict && anyNullable(args) {
		result = result.Nullable()
	}
	eval := fn
	switch {
	case strict && !hasConv:
		eval = func(ctx *Context, a []any) (any, error) {
			for _, v := range a {
				if v == nil {
					return nil, nil
				}
			}
			return fn(ctx, a)
		}
	case hasConv:
		eval = func(ctx *Context, a []any) (any, error) {
			for i, c := range convs {
				if a[i] == nil {
					if strict {
						return nil, nil
					}
					continue
				}
				if c != nil {
					v, err := c(ctx, a[i])
					if err != nil {
						return nil, err
					}
					if v == nil && strict {
						return nil, nil
					}
					a[i] = v
				}
			}
			return fn(ctx, a)
		}
	}
	return &Scalar{Args: append([]types.DataType(nil), args...), Result: result, Deterministic: true, Eval: eval}
}

// common binds all args to their least restrictive common type.
func common(args []types.DataType, result func(c types.DataType) types.DataType, strict bool, fn func(c types.DataType) EvalFunc) *Scalar {
	c, ok := types.LeastRestrictive(args...)
	if !ok {
		return nil
	}
	params := make([]types.DataType, len(args))
	for i := range params {
		params[i] = c
	}
	return bind(args, params, result(c), strict, fn(c))
}

func isString(t types.DataType) bool {
	return t.Kind.IsCharacterString() || t.Kind == types.KindNull
}

func isNumeric(t types.DataType) bool { return t.Kind.IsNumeric() || t.Kind == types.KindNull }

func isIntegral(t types.DataType) bool { return t.Kind.IsIntegral() || t.Kind == types.KindNull }

// Value readers. They accept any Go representation the kind family allows
// so that operators need not convert between integral widths.

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int8:
		return int64(x)
	case int:
		return int64(x)
	case types.Decimal:
		return x.Int64()
	case float64:
		return int64(x)
	case float32:
		return int64(x)
	}
	return 0
}

func toF64(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case types.Decimal:
		return x.Float64()
	}
	return float64(toInt64(v))
}

func toDec(v any) types.Decimal {
	if d, ok := v.(types.Decimal); ok {
		return d
	}
	return types.DecimalFromInt64(toInt64(v))
}

// numOut converts a computed number to the Go type of kind t.
func intOut(x int64, t types.DataType) any { return types.NarrowInt(x, t.Kind) }

// decOut fits a decimal to its result type; overflow is NULL, as Flink.
func decOut(d types.Decimal, t types.DataType) any {
	r, ok := d.ToType(t.Precision, t.Scale)
	if !ok {
		return nil
	}
	return r
}

var (
	tBool   = types.Boolean()
	tInt    = types.Int()
	tBigInt = types.BigInt()
	tDouble = types.Double()
	tString = types.String()
	tBytes  = types.Bytes()
	sNN     = types.String().NotNull()
)
