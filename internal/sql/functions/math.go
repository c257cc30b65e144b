package functions

import (
	"crypto/rand"
	"fmt"
	"math"
	"math/big"
	rnd "math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/weirproject/weir/internal/sql/types"
)

// numeric1 resolves a one-argument numeric function whose result has the
// argument's type.
func sameNumeric(fn func(t types.DataType) EvalFunc) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || !isNumeric(args[0]) {
			return nil, nil
		}
		t := nullToInt(args[0])
		return bind(args, []types.DataType{t}, t, true, fn(t)), nil
	}
}

// double1 resolves f(numeric) → DOUBLE, reading any number as float64.
func double1(f func(float64) float64) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || !isNumeric(args[0]) {
			return nil, nil
		}
		return bind(args, args, tDouble.NotNull(), true, func(_ *Context, a []any) (any, error) {
			return f(toF64(a[0])), nil
		}), nil
	}
}

func double2(f func(x, y float64) float64) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 || !isNumeric(args[0]) || !isNumeric(args[1]) {
			return nil, nil
		}
		return bind(args, args, tDouble.NotNull(), true, func(_ *Context, a []any) (any, error) {
			return f(toF64(a[0]), toF64(a[1])), nil
		}), nil
	}
}

// roundDecimalType is Flink's LogicalTypeMerging.findRoundDecimalType.
func roundDecimalType(p, s, r int) types.DataType {
	switch {
	case r >= s:
		return types.DecimalType(p, s)
	case r < 0:
		return types.DecimalType(min(38, 1+p-s), 0)
	}
	return types.DecimalType(min(38, 1+p-s+r), r)
}

// exactDecimal returns the exact decimal value of a float64 (as Java's
// new BigDecimal(double)), which is what Flink's ROUND(DOUBLE) rounds.
func exactDecimal(f float64) (types.Decimal, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return types.Decimal{}, false
	}
	s := new(big.Float).SetFloat64(f).Text('f', 1100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	d, err := types.ParseDecimal(s)
	return d, err == nil
}

func roundResolver(mode types.RoundingMode) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) < 1 || len(args) > 2 || !isNumeric(args[0]) || len(args) == 2 && !isIntegral(args[1]) {
			return nil, nil
		}
		t := nullToInt(args[0])
		res := t
		// The result scale depends on the digits argument, which Flink
		// requires to be a literal; we type it from the argument's value at
		// run time and declare the scale for the common literal 0 when the
		// planner has not bound it (see RoundType).
		if t.Kind == types.KindDecimal {
			res = roundDecimalType(t.Precision, t.Scale, 0)
		}
		return bind(args, args, res, true, roundEval(t, res, mode)), nil
	}
}

// RoundType is the result type of ROUND/TRUNCATE(x, digits) for a literal
// digits, as Flink's findRoundDecimalType; the planner uses it to re-type
// a call whose digits it knows.
func RoundType(x types.DataType, digits int) types.DataType {
	if x.Kind == types.KindDecimal {
		return roundDecimalType(x.Precision, x.Scale, digits).WithNullable(x.IsNullable())
	}
	return x
}

func roundEval(t, res types.DataType, mode types.RoundingMode) EvalFunc {
	return func(_ *Context, a []any) (any, error) {
		digits := 0
		if len(a) > 1 {
			digits = int(toInt64(a[1]))
		}
		switch t.Kind {
		case types.KindDecimal:
			d := a[0].(types.Decimal).RescaleMode(digits, mode)
			if digits < 0 {
				d = d.Rescale(0)
			}
			if digits > res.Scale {
				return decOut(d, types.DecimalType(38, digits)), nil
			}
			return decOut(d, res), nil
		case types.KindFloat, types.KindDouble:
			f := toF64(a[0])
			d, ok := exactDecimal(f)
			if !ok {
				return a[0], nil
			}
			r := d.RescaleMode(digits, mode)
			if digits < 0 {
				r = r.Rescale(0)
			}
			if t.Kind == types.KindFloat {
				return float32(r.Float64()), nil
			}
			return r.Float64(), nil
		}
		x := toInt64(a[0])
		if digits >= 0 {
			return a[0], nil
		}
		if digits < -18 {
			return intOut(0, t), nil
		}
		p := int64(1)
		for i := 0; i < -digits; i++ {
			p *= 10
		}
		q, rem := x/p, x%p
		if mode == types.HalfUp && (rem >= (p+1)/2 || -rem >= (p+1)/2) {
			if x < 0 {
				q--
			} else {
				q++
			}
		}
		return intOut(q*p, t), nil
	}
}

func floorCeilNumeric(ceil bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || !isNumeric(args[0]) {
			return nil, nil
		}
		t := nullToInt(args[0])
		res := t
		if t.Kind == types.KindDecimal {
			p := t.Precision - t.Scale
			if t.Scale > 0 {
				p++
			}
			res = types.DecimalType(max(1, min(38, p)), 0)
		}
		mode := types.Floor
		if ceil {
			mode = types.Ceiling
		}
		return bind(args, args, res, true, func(_ *Context, a []any) (any, error) {
			switch t.Kind {
			case types.KindDecimal:
				return decOut(a[0].(types.Decimal).RescaleMode(0, mode), res), nil
			case types.KindFloat:
				if ceil {
					return float32(math.Ceil(float64(a[0].(float32)))), nil
				}
				return float32(math.Floor(float64(a[0].(float32)))), nil
			case types.KindDouble:
				if ceil {
					return math.Ceil(a[0].(float64)), nil
				}
				return math.Floor(a[0].(float64)), nil
			}
			return a[0], nil
		}), nil
	}
}

func registerMath(r *Registry) {
	r.add("ABS", "ABS(<NUMERIC>)", sameNumeric(func(t types.DataType) EvalFunc {
		return func(_ *Context, a []any) (any, error) {
			switch t.Kind {
			case types.KindDecimal:
				return a[0].(types.Decimal).Abs(), nil
			case types.KindFloat:
				return float32(math.Abs(float64(a[0].(float32)))), nil
			case types.KindDouble:
				return math.Abs(a[0].(float64)), nil
			}
			x := toInt64(a[0])
			if x < 0 {
				x = -x
			}
			return intOut(x, t), nil
		}
	}))
	r.add("SIGN", "SIGN(<NUMERIC>)", sameNumeric(func(t types.DataType) EvalFunc {
		return func(_ *Context, a []any) (any, error) {
			switch t.Kind {
			case types.KindDecimal:
				return decOut(types.DecimalFromInt64(int64(a[0].(types.Decimal).Sign())), t), nil
			case types.KindFloat, types.KindDouble:
				f := toF64(a[0])
				s := 0.0
				switch {
				case f > 0:
					s = 1
				case f < 0:
					s = -1
				case f != f:
					s = f
				}
				if t.Kind == types.KindFloat {
					return float32(s), nil
				}
				return s, nil
			}
			x := toInt64(a[0])
			switch {
			case x > 0:
				return intOut(1, t), nil
			case x < 0:
				return intOut(-1, t), nil
			}
			return intOut(0, t), nil
		}
	}))
	r.add("POWER|POW", "$(<NUMERIC>, <NUMERIC>)", double2(math.Pow))
	r.add("SQRT", "SQRT(<NUMERIC>)", double1(math.Sqrt))
	r.add("LN", "LN(<NUMERIC>)", double1(math.Log))
	r.add("LOG10", "LOG10(<NUMERIC>)", double1(math.Log10))
	r.add("LOG2", "LOG2(<NUMERIC>)", double1(math.Log2))
	r.add("LOG", "LOG(<NUMERIC>)", double1(math.Log))
	r.add("LOG", "LOG(<NUMERIC>, <NUMERIC>)", double2(func(b, x float64) float64 { return math.Log(x) / math.Log(b) }))
	r.add("EXP", "EXP(<NUMERIC>)", double1(math.Exp))
	r.add("CEIL|CEILING", "$(<NUMERIC>)", floorCeilNumeric(true))
	r.add("FLOOR", "FLOOR(<NUMERIC>)", floorCeilNumeric(false))
	r.add("ROUND", "ROUND(<NUMERIC> [, <INTEGER>])", roundResolver(types.HalfUp))
	r.add("TRUNCATE", "TRUNCATE(<NUMERIC> [, <INTEGER>])", roundResolver(types.Down))
	r.add("SIN", "SIN(<NUMERIC>)", double1(math.Sin))
	r.add("COS", "COS(<NUMERIC>)", double1(math.Cos))
	r.add("TAN", "TAN(<NUMERIC>)", double1(math.Tan))
	r.add("COT", "COT(<NUMERIC>)", double1(func(x float64) float64 { return 1 / math.Tan(x) }))
	r.add("ASIN", "ASIN(<NUMERIC>)", double1(math.Asin))
	r.add("ACOS", "ACOS(<NUMERIC>)", double1(math.Acos))
	r.add("ATAN", "ATAN(<NUMERIC>)", double1(math.Atan))
	r.add("ATAN2", "ATAN2(<NUMERIC>, <NUMERIC>)", double2(math.Atan2))
	r.add("SINH", "SINH(<NUMERIC>)", double1(math.Sinh))
	r.add("COSH", "COSH(<NUMERIC>)", double1(math.Cosh))
	r.add("TANH", "TANH(<NUMERIC>)", double1(math.Tanh))
	r.add("DEGREES", "DEGREES(<NUMERIC>)", double1(func(x float64) float64 { return x * 180 / math.Pi }))
	r.add("RADIANS", "RADIANS(<NUMERIC>)", double1(func(x float64) float64 { return x / 180 * math.Pi }))
	r.add("PI", "PI()", constant(tDouble.NotNull(), math.Pi))
	r.add("E", "E()", constant(tDouble.NotNull(), math.E))
	r.add("RAND", "RAND([<INTEGER>])", randResolver(false))
	r.add("RAND_INTEGER", "RAND_INTEGER([<INTEGER>,] <INTEGER>)", randResolver(true))
	r.add("BIN", "BIN(<INTEGER>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || !isIntegral(args[0]) {
			return nil, nil
		}
		return bind(args, args, sNN, true, func(_ *Context, a []any) (any, error) {
			return strconv.FormatUint(uint64(toInt64(a[0])), 2), nil
		}), nil
	})
	r.add("HEX", "HEX(<INTEGER>) | HEX(<STRING>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || !(isIntegral(args[0]) || isString(args[0])) {
			return nil, nil
		}
		return bind(args, args, sNN, true, func(_ *Context, a []any) (any, error) {
			if s, ok := a[0].(string); ok {
				return strings.ToUpper(fmt.Sprintf("%x", s)), nil
			}
			return strings.ToUpper(strconv.FormatUint(uint64(toInt64(a[0])), 16)), nil
		}), nil
	})
	r.add("UUID", "UUID()", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 0 {
			return nil, nil
		}
		return &Scalar{Result: tString.NotNull(), Eval: func(ctx *Context, _ []any) (any, error) {
			var b [16]byte
			if ctx != nil && ctx.Rand != nil {
				for i := range b {
					b[i] = byte(ctx.Rand.Uint32())
				}
			} else if _, err := rand.Read(b[:]); err != nil {
				return nil, err
			}
			b[6] = b[6]&0x0f | 0x40
			b[8] = b[8]&0x3f | 0x80
			return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
		}}, nil
	})
}

func constant(t types.DataType, v any) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 0 {
			return nil, nil
		}
		return &Scalar{Result: t, Deterministic: true, Eval: func(*Context, []any) (any, error) { return v, nil }}, nil
	}
}

// randResolver: RAND([seed]) and RAND_INTEGER([seed,] bound). A seeded
// call has its own sequence, as Flink's (new Random(seed) per call site).
func randResolver(integer bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		n := len(args)
		seeded := integer && n == 2 || !integer && n == 1
		if integer && (n < 1 || n > 2) || !integer && n > 1 {
			return nil, nil
		}
		for _, a := range args {
			if !isIntegral(a) {
				return nil, nil
			}
		}
		res := tDouble.WithNullable(seeded && args[0].IsNullable())
		if integer {
			res = tInt.WithNullable(anyNullable(args))
		}
		var mu sync.Mutex
		var own *rnd.Rand
		return &Scalar{Result: res, Eval: func(ctx *Context, a []any) (any, error) {
			src := ctx.rng()
			if seeded {
				if a[0] == nil {
					return nil, nil
				}
				mu.Lock()
				defer mu.Unlock()
				if own == nil {
					own = rnd.New(rnd.NewPCG(uint64(toInt64(a[0])), 0))
				}
				src = own
			}
			if !integer {
				return src.Float64(), nil
			}
			bv := a[len(a)-1]
			if bv == nil {
				return nil, nil
			}
			bound := toInt64(bv)
			if bound <= 0 {
				return nil, fmt.Errorf("RAND_INTEGER: bound must be positive, got %d", bound)
			}
			return int32(src.Int64N(bound)), nil
		}}, nil
	}
}
