package functions

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/weirproject/weir/internal/sql/types"
)

// ErrDivisionByZero is integer or DECIMAL division (or MOD) by zero, which
// fails the query in Flink (java.lang.ArithmeticException: / by zero).
var ErrDivisionByZero = errors.New("division by zero")

func registerOperators(r *Registry) {
	arith := []struct {
		names string
		op    types.ArithOp
	}{{"+|PLUS", types.OpAdd}, {"-|MINUS", types.OpSub}, {"*|TIMES", types.OpMul}, {"/|DIVIDE", types.OpDiv}, {"%|MOD", types.OpMod}}
	for _, a := range arith {
		r.add(a.names, "$(<NUMERIC>, <NUMERIC>)", arithResolver(a.op))
	}
	r.add("+|-|MINUS|PLUS", "", arithResolver(0)) // unary, resolved by arity
	r.add("NEGATE", "NEGATE(<NUMERIC>)", arithResolver('n'))

	cmp := []struct {
		names string
		pred  func(int) bool
	}{
		{"=|EQUALS", func(c int) bool { return c == 0 }},
		{"<>|!=|NOT_EQUALS", func(c int) bool { return c != 0 }},
		{"<|LESS_THAN", func(c int) bool { return c < 0 }},
		{"<=|LESS_THAN_OR_EQUAL", func(c int) bool { return c <= 0 }},
		{">|GREATER_THAN", func(c int) bool { return c > 0 }},
		{">=|GREATER_THAN_OR_EQUAL", func(c int) bool { return c >= 0 }},
	}
	for _, c := range cmp {
		r.add(c.names, "$(<COMPARABLE>, <COMPARABLE>)", compareResolver(c.pred))
	}
	r.add("IS DISTINCT FROM|IS_DISTINCT_FROM", "$(<ANY>, <ANY>)", distinctResolver(true))
	r.add("IS NOT DISTINCT FROM|IS_NOT_DISTINCT_FROM", "$(<ANY>, <ANY>)", distinctResolver(false))

	r.add("AND", "AND(<BOOLEAN>, <BOOLEAN>...)", logicResolver(true))
	r.add("OR", "OR(<BOOLEAN>, <BOOLEAN>...)", logicResolver(false))
	r.add("NOT", "NOT(<BOOLEAN>)", fixed([]types.DataType{tBool}, tBool.NotNull(), true, func(_ *Context, a []any) (any, error) {
		return !a[0].(bool), nil
	}))

	isOps := []struct {
		name string
		f    func(v any) bool
	}{
		{"IS NULL|IS_NULL", func(v any) bool { return v == nil }},
		{"IS NOT NULL|IS_NOT_NULL", func(v any) bool { return v != nil }},
		{"IS TRUE|IS_TRUE", func(v any) bool { return v == true }},
		{"IS NOT TRUE|IS_NOT_TRUE", func(v any) bool { return v != true }},
		{"IS FALSE|IS_FALSE", func(v any) bool { return v == false }},
		{"IS NOT FALSE|IS_NOT_FALSE", func(v any) bool { return v != false }},
		{"IS UNKNOWN|IS_UNKNOWN", func(v any) bool { return v == nil }},
		{"IS NOT UNKNOWN|IS_NOT_UNKNOWN", func(v any) bool { return v != nil }},
	}
	for _, o := range isOps {
		f := o.f
		boolOnly := strings.Contains(o.name, "TRUE") || strings.Contains(o.name, "FALSE") || strings.Contains(o.name, "UNKNOWN")
		r.add(o.name, "$(<ANY>)", func(args []types.DataType) (*Scalar, error) {
			if len(args) != 1 || boolOnly && args[0].Kind != types.KindBoolean && args[0].Kind != types.KindNull {
				return nil, nil
			}
			return &Scalar{Result: tBool.NotNull(), Deterministic: true, Eval: func(_ *Context, a []any) (any, error) {
				return f(a[0]), nil
			}}, nil
		})
	}

	r.add("|||CONCAT_OP", "||(<STRING>, <STRING>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 || !isString(args[0]) || !isString(args[1]) {
			return nil, nil
		}
		l := args[0].Length + args[1].Length
		if l > types.MaxLength || l <= 0 {
			l = types.MaxLength
		}
		return bind(args, []types.DataType{tString, tString}, types.VarChar(l), true, func(_ *Context, a []any) (any, error) {
			return a[0].(string) + a[1].(string), nil
		}), nil
	})

	r.add("LIKE", "LIKE(<STRING>, <STRING> [, <STRING>])", likeResolver(false))
	r.add("NOT LIKE|NOT_LIKE", "NOT LIKE(<STRING>, <STRING> [, <STRING>])", likeResolver(true))
	r.add("SIMILAR TO|SIMILAR", "SIMILAR TO(<STRING>, <STRING> [, <STRING>])", similarResolver(false))
	r.add("NOT SIMILAR TO|NOT_SIMILAR", "NOT SIMILAR TO(<STRING>, <STRING> [, <STRING>])", similarResolver(true))

	r.add("BETWEEN", "BETWEEN(<COMPARABLE>, <COMPARABLE>, <COMPARABLE>)", betweenResolver(false))
	r.add("NOT BETWEEN|NOT_BETWEEN", "NOT BETWEEN(<COMPARABLE>, <COMPARABLE>, <COMPARABLE>)", betweenResolver(true))
	r.add("IN", "IN(<COMPARABLE>, <COMPARABLE>...)", inResolver(false))
	r.add("NOT IN|NOT_IN", "NOT IN(<COMPARABLE>, <COMPARABLE>...)", inResolver(true))
}

func arithResolver(op types.ArithOp) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if op == 0 || op == 'n' {
			if len(args) != 1 {
				return nil, nil
			}
			return unaryResolver(args[0], op == 'n'), nil
		}
		if len(args) != 2 {
			return nil, nil
		}
		a, b := args[0], args[1]
		res, ok := types.ArithmeticType(op, a, b)
		if !ok {
			return nil, nil
		}
		if res.Kind == types.KindNull {
			return &Scalar{Result: res, Deterministic: true, Eval: func(*Context, []any) (any, error) { return nil, nil }}, nil
		}
		var fn EvalFunc
		switch {
		case res.Kind.IsIntegral():
			fn = intArith(op, res, a.Kind == types.KindBigInt && b.Kind == types.KindBigInt)
		case res.Kind == types.KindDecimal:
			fn = decArith(op, res)
		case res.Kind == types.KindFloat:
			fn = floatArith(op, 32)
		case res.Kind == types.KindDouble:
			fn = floatArith(op, 64)
		default:
			fn = temporalArith(op, a, b, res)
		}
		s := bind(args, args, res, true, fn)
		s.Result = res
		return s, nil
	}
}

func unaryResolver(t types.DataType, negateOnly bool) *Scalar {
	var fn EvalFunc
	switch {
	case t.Kind.IsIntegral():
		fn = func(_ *Context, a []any) (any, error) { return intOut(-toInt64(a[0]), t), nil }
	case t.Kind == types.KindDecimal:
		fn = func(_ *Context, a []any) (any, error) { return a[0].(types.Decimal).Neg(), nil }
	case t.Kind == types.KindFloat:
		fn = func(_ *Context, a []any) (any, error) { return -a[0].(float32), nil }
	case t.Kind == types.KindDouble:
		fn = func(_ *Context, a []any) (any, error) { return -a[0].(float64), nil }
	case t.Kind == types.KindIntervalYearMonth:
		fn = func(_ *Context, a []any) (any, error) { return -a[0].(types.IntervalMonths), nil }
	case t.Kind == types.KindIntervalDayTime:
		fn = func(_ *Context, a []any) (any, error) { return -a[0].(types.IntervalMillis), nil }
	case t.Kind == types.KindNull:
		fn = func(*Context, []any) (any, error) { return nil, nil }
	default:
		return nil
	}
	_ = negateOnly
	return bind([]types.DataType{t}, []types.DataType{t}, t, true, fn)
}

func intArith(op types.ArithOp, res types.DataType, bothBig bool) EvalFunc {
	if bothBig && res.Kind == types.KindBigInt {
		switch op {
		case types.OpAdd:
			return func(_ *Context, a []any) (any, error) { return a[0].(int64) + a[1].(int64), nil }
		case types.OpSub:
			return func(_ *Context, a []any) (any, error) { return a[0].(int64) - a[1].(int64), nil }
		case types.OpMul:
			return func(_ *Context, a []any) (any, error) { return a[0].(int64) * a[1].(int64), nil }
		}
	}
	return func(_ *Context, a []any) (any, error) {
		x, y := toInt64(a[0]), toInt64(a[1])
		var z int64
		switch op {
		case types.OpAdd:
			z = x + y
		case types.OpSub:
			z = x - y
		case types.OpMul:
			z = x * y
		case types.OpDiv, types.OpMod:
			if y == 0 {
				return nil, ErrDivisionByZero
			}
			// Java semantics at the result width: MinValue / -1 wraps.
			if y == -1 {
				if op == types.OpDiv {
					z = -x
				}
				break
			}
			if op == types.OpDiv {
				z = x / y
			} else {
				z = x % y
			}
		}
		return intOut(z, res), nil
	}
}

func decArith(op types.ArithOp, res types.DataType) EvalFunc {
	return func(_ *Context, a []any) (any, error) {
		x, y := toDec(a[0]), toDec(a[1])
		var z types.Decimal
		var err error
		switch op {
		case types.OpAdd:
			z = x.Add(y)
		case types.OpSub:
			z = x.Sub(y)
		case types.OpMul:
			z = x.Mul(y)
		case types.OpDiv:
			if y.IsZero() {
				return nil, ErrDivisionByZero
			}
			z, err = x.Quo(y, res.Scale)
		case types.OpMod:
			if y.IsZero() {
				return nil, ErrDivisionByZero
			}
			z, err = x.Rem(y)
		}
		if err != nil {
			return nil, err
		}
		return decOut(z, res), nil
	}
}

func floatArith(op types.ArithOp, bits int) EvalFunc {
	return func(_ *Context, a []any) (any, error) {
		x, y := toF64(a[0]), toF64(a[1])
		if bits == 32 {
			fx, fy := float32(x), float32(y)
			switch op {
			case types.OpAdd:
				return fx + fy, nil
			case types.OpSub:
				return fx - fy, nil
			case types.OpMul:
				return fx * fy, nil
			case types.OpDiv:
				return fx / fy, nil
			}
			return float32(math.Mod(float64(fx), float64(fy))), nil
		}
		switch op {
		case types.OpAdd:
			return x + y, nil
		case types.OpSub:
			return x - y, nil
		case types.OpMul:
			return x * y, nil
		case types.OpDiv:
			return x / y, nil
		}
		return math.Mod(x, y), nil
	}
}

const millisPerDay = 86400000

// shiftTemporal adds an interval value to a temporal value.
func shiftTemporal(ctx *Context, v, iv any, sign int64) any {
	switch x := v.(type) {
	case types.Timestamp:
		switch d := iv.(type) {
		case types.IntervalMillis:
			return x.AddNanos(sign * int64(d) * 1e6)
		case types.IntervalMonths:
			return x.AddMonths(int(sign) * int(d))
		}
	case types.TimestampLTZ:
		switch d := iv.(type) {
		case types.IntervalMillis:
			return types.TimestampLTZ(types.Timestamp(x).AddNanos(sign * int64(d) * 1e6))
		case types.IntervalMonths:
			loc := ctx.Location()
			return x.ToTimestamp(loc).AddMonths(int(sign) * int(d)).ToLTZ(loc)
		}
	case types.Date:
		switch d := iv.(type) {
		case types.IntervalMillis:
			return x + types.Date(sign*int64(d)/millisPerDay)
		case types.IntervalMonths:
			return x.AddMonths(int(sign) * int(d))
		}
	case types.Time:
		if d, ok := iv.(types.IntervalMillis); ok {
			n := (int64(x) + sign*int64(d)*1e6) % (millisPerDay * 1e6)
			if n < 0 {
				n += millisPerDay * 1e6
			}
			return types.Time(n)
		}
	}
	return nil
}

func temporalArith(op types.ArithOp, a, b, res types.DataType) EvalFunc {
	ak, bk := a.Kind, b.Kind
	switch {
	case ak.IsInterval() && bk.IsInterval():
		return func(_ *Context, x []any) (any, error) {
			s := int64(1)
			if op == types.OpSub {
				s = -1
			}
			if ak == types.KindIntervalYearMonth {
				return types.IntervalMonths(toInt64i(x[0]) + s*toInt64i(x[1])), nil
			}
			return types.IntervalMillis(toInt64i(x[0]) + s*toInt64i(x[1])), nil
		}
	case op == types.OpMul || op == types.OpDiv:
		iv, num := 0, 1
		if bk.IsInterval() {
			iv, num = 1, 0
		}
		return func(_ *Context, x []any) (any, error) {
			n := toInt64i(x[iv])
			var r int64
			if op == types.OpMul {
				r = int64(float64(n) * toF64(x[num]))
				if _, isInt := x[num].(int64); isInt || isIntVal(x[num]) {
					r = n * toInt64(x[num])
				}
			} else {
				d := toF64(x[num])
				if d == 0 {
					return nil, ErrDivisionByZero
				}
				r = int64(float64(n) / d)
			}
			if res.Kind == types.KindIntervalYearMonth {
				return types.IntervalMonths(r), nil
			}
			return types.IntervalMillis(r), nil
		}
	case ak.IsInterval(): // interval + temporal
		return func(ctx *Context, x []any) (any, error) { return shiftTemporal(ctx, x[1], x[0], 1), nil }
	default: // temporal ± interval
		s := int64(1)
		if op == types.OpSub {
			s = -1
		}
		return func(ctx *Context, x []any) (any, error) { return shiftTemporal(ctx, x[0], x[1], s), nil }
	}
}

func isIntVal(v any) bool {
	switch v.(type) {
	case int8, int16, int32, int64:
		return true
	}
	return false
}

func toInt64i(v any) int64 {
	switch x := v.(type) {
	case types.IntervalMonths:
		return int64(x)
	case types.IntervalMillis:
		return int64(x)
	}
	return toInt64(v)
}

// compareResolver binds a comparison: both sides cast to their common
// type, compared with types.Compare, except FLOAT/DOUBLE which compare as
// Java primitives (NaN is unequal to everything).
func compareResolver(pred func(int) bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 {
			return nil, nil
		}
		s := common(args, func(types.DataType) types.DataType {
			return types.Boolean().WithNullable(anyNullable(args))
		}, true, func(c types.DataType) EvalFunc {
			if c.Kind.IsApproxNumeric() {
				return func(_ *Context, a []any) (any, error) {
					x, y := toF64(a[0]), toF64(a[1])
					if x != x || y != y {
						return pred(1) && pred(-1), nil // only <> holds for NaN
					}
					switch {
					case x < y:
						return pred(-1), nil
					case x > y:
						return pred(1), nil
					}
					return pred(0), nil
				}
			}
			if c.Kind.IsIntegral() {
				return func(_ *Context, a []any) (any, error) {
					x, y := toInt64(a[0]), toInt64(a[1])
					switch {
					case x < y:
						return pred(-1), nil
					case x > y:
						return pred(1), nil
					}
					return pred(0), nil
				}
			}
			return func(_ *Context, a []any) (any, error) { return pred(types.Compare(a[0], a[1], c)), nil }
		})
		return s, nil
	}
}

func distinctResolver(distinct bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 {
			return nil, nil
		}
		return common(args, func(types.DataType) types.DataType { return tBool.NotNull() }, false,
			func(c types.DataType) EvalFunc {
				return func(_ *Context, a []any) (any, error) {
					if a[0] == nil || a[1] == nil {
						return (a[0] == nil) != (a[1] == nil) == distinct, nil
					}
					return (types.Compare(a[0], a[1], c) != 0) == distinct, nil
				}
			}), nil
	}
}

// logicResolver is AND/OR over two or more arguments with SQL's
// three-valued logic: FALSE AND NULL is FALSE, TRUE OR NULL is TRUE.
func logicResolver(and bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) < 2 {
			return nil, nil
		}
		for _, a := range args {
			if a.Kind != types.KindBoolean && a.Kind != types.KindNull {
				return nil, nil
			}
		}
		return &Scalar{Result: tBool.WithNullable(anyNullable(args)), Deterministic: true,
			Eval: func(_ *Context, a []any) (any, error) {
				sawNull := false
				for _, v := range a {
					if v == nil {
						sawNull = true
						continue
					}
					if v.(bool) != and {
						return !and, nil
					}
				}
				if sawNull {
					return nil, nil
				}
				return and, nil
			}}, nil
	}
}

func betweenResolver(not bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != 3 {
			return nil, nil
		}
		ge, _ := compareResolver(func(c int) bool { return c >= 0 })(args[:2])
		le, _ := compareResolver(func(c int) bool { return c <= 0 })([]types.DataType{args[0], args[2]})
		if ge == nil || le == nil {
			return nil, nil
		}
		return &Scalar{Result: tBool.WithNullable(anyNullable(args)), Deterministic: true,
			Eval: func(ctx *Context, a []any) (any, error) {
				x, lo, hi := a[0], a[1], a[2]
				r1, err := ge.Eval(ctx, []any{x, lo})
				if err != nil {
					return nil, err
				}
				r2, err := le.Eval(ctx, []any{x, hi})
				if err != nil {
					return nil, err
				}
				var r any
				switch {
				case r1 == false || r2 == false:
					r = false
				case r1 == nil || r2 == nil:
					return nil, nil
				default:
					r = true
				}
				if not {
					return !r.(bool), nil
				}
				return r, nil
			}}, nil
	}
}

// inResolver is x IN (v1, ..., vn): TRUE if x equals some vi, else NULL if
// x or some vi is NULL, else FALSE.
func inResolver(not bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) < 2 {
			return nil, nil
		}
		return common(args, func(types.DataType) types.DataType { return tBool.WithNullable(anyNullable(args)) }, false,
			func(c types.DataType) EvalFunc {
				return func(_ *Context, a []any) (any, error) {
					if a[0] == nil {
						return nil, nil
					}
					sawNull := false
					for _, v := range a[1:] {
						if v == nil {
							sawNull = true
							continue
						}
						if c.Kind.IsApproxNumeric() {
							if toF64(a[0]) == toF64(v) {
								return !not, nil
							}
						} else if types.Compare(a[0], v, c) == 0 {
							return !not, nil
						}
					}
					if sawNull {
						return nil, nil
					}
					return not, nil
				}
			}), nil
	}
}

// ---- LIKE and SIMILAR TO ----

type likeTok struct {
	kind byte // 'l' literal, '_' one char, '%' any sequence
	r    rune
}

func compileLike(pattern string, escape rune, hasEscape bool) ([]likeTok, error) {
	var toks []likeTok
	for i := 0; i < len(pattern); {
		r, sz := utf8.DecodeRuneInString(pattern[i:])
		i += sz
		switch {
		case hasEscape && r == escape:
			if i >= len(pattern) {
				return nil, fmt.Errorf("Invalid escape sequence '%s', %d", pattern, i-sz)
			}
			n, sz2 := utf8.DecodeRuneInString(pattern[i:])
			if n != '%' && n != '_' && n != escape {
				return nil, fmt.Errorf("Invalid escape sequence '%s', %d", pattern, i-sz)
			}
			i += sz2
			toks = append(toks, likeTok{'l', n})
		case r == '%':
			if len(toks) == 0 || toks[len(toks)-1].kind != '%' {
				toks = append(toks, likeTok{kind: '%'})
			}
		case r == '_':
			toks = append(toks, likeTok{kind: '_'})
		default:
			toks = append(toks, likeTok{'l', r})
		}
	}
	return toks, nil
}

// matchLike is wildcard matching with single-star backtracking: linear for
// patterns with one %, O(n·m) at worst, never exponential.
func matchLike(s string, toks []likeTok) bool {
	si, ti := 0, 0
	starTi, starSi := -1, 0
	for si < len(s) {
		if ti < len(toks) && toks[ti].kind != '%' {
			r, sz := utf8.DecodeRuneInString(s[si:])
			if toks[ti].kind == '_' || toks[ti].r == r {
				si += sz
				ti++
				continue
			}
		} else if ti < len(toks) {
			starTi, starSi = ti, si
			ti++
			continue
		}
		if starTi < 0 {
			return false
		}
		_, sz := utf8.DecodeRuneInString(s[starSi:])
		starSi += sz
		si = starSi
		ti = starTi + 1
	}
	for ti < len(toks) && toks[ti].kind == '%' {
		ti++
	}
	return ti == len(toks)
}

func escapeArg(a []any) (rune, bool, error) {
	if len(a) < 3 {
		return 0, false, nil
	}
	e := a[2].(string)
	if utf8.RuneCountInString(e) != 1 {
		return 0, false, fmt.Errorf("Invalid escape character '%s': it must be a single character", e)
	}
	r, _ := utf8.DecodeRuneInString(e)
	return r, true, nil
}

func likeResolver(not bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if (len(args) != 2 && len(args) != 3) || !isString(args[0]) || !isString(args[1]) || len(args) == 3 && !isString(args[2]) {
			return nil, nil
		}
		params := []types.DataType{tString, tString, tString}[:len(args)]
		// Patterns are nearly always constant: cache the last compiled one
		// (atomically, as one Scalar may serve several goroutines).
		type compiled struct {
			pat    string
			esc    rune
			hasEsc bool
			toks   []likeTok
		}
		var cache atomic.Pointer[compiled]
		return bind(args, params, tBool.NotNull(), true, func(_ *Context, a []any) (any, error) {
			esc, hasEsc, err := escapeArg(a)
			if err != nil {
				return nil, err
			}
			pat := a[1].(string)
			c := cache.Load()
			if c == nil || pat != c.pat || esc != c.esc || hasEsc != c.hasEsc {
				toks, err := compileLike(pat, esc, hasEsc)
				if err != nil {
					return nil, err
				}
				c = &compiled{pat, esc, hasEsc, toks}
				cache.Store(c)
			}
			return matchLike(a[0].(string), c.toks) != not, nil
		}), nil
	}
}

// similarToRegexp translates a SQL SIMILAR TO pattern into an anchored Go
// regular expression: % and _ become .* and ., the regex operators | * + ?
// {m,n} ( ) [ ] keep their meaning, and everything else is literal.
func similarToRegexp(p string, escape rune, hasEscape bool) (string, error) {
	var b strings.Builder
	b.WriteString("^(?s:")
	inClass := false
	for i := 0; i < len(p); {
		r, sz := utf8.DecodeRuneInString(p[i:])
		i += sz
		if hasEscape && r == escape {
			if i >= len(p) {
				return "", fmt.Errorf("Invalid escape sequence '%s'", p)
			}
			n, sz2 := utf8.DecodeRuneInString(p[i:])
			i += sz2
			b.WriteString(regexp.QuoteMeta(string(n)))
			continue
		}
		switch {
		case inClass:
			if r == ']' {
				inClass = false
			}
			if r == '\\' {
				b.WriteString(`\\`)
				continue
			}
			b.WriteRune(r)
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteString(".")
		case r == '[':
			inClass = true
			b.WriteRune(r)
		case strings.ContainsRune("|*+?{}()", r):
			b.WriteRune(r)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(")$")
	return b.String(), nil
}

func similarResolver(not bool) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if (len(args) != 2 && len(args) != 3) || !isString(args[0]) || !isString(args[1]) || len(args) == 3 && !isString(args[2]) {
			return nil, nil
		}
		params := []types.DataType{tString, tString, tString}[:len(args)]
		return bind(args, params, tBool.NotNull(), true, func(_ *Context, a []any) (any, error) {
			esc, hasEsc, err := escapeArg(a)
			if err != nil {
				return nil, err
			}
			pat := a[1].(string)
			src, err := similarToRegexp(pat, esc, hasEsc)
			if err != nil {
				return nil, err
			}
			re, err := compileRegex(src)
			if err != nil {
				return nil, fmt.Errorf("Invalid regular expression '%s': %v", pat, err)
			}
			return re.MatchString(a[0].(string)) != not, nil
		}), nil
	}
}
