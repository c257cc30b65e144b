package functions

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"unicode"

	"github.com/weirproject/weir/internal/sql/types"
)

func registerConditional(r *Registry) {
	r.add("COALESCE", "COALESCE(<ANY>...)", func(args []types.DataType) (*Scalar, error) {
		if len(args) == 0 {
			return nil, nil
		}
		allNullable := true
		for _, a := range args {
			if !a.IsNullable() {
				allNullable = false
			}
		}
		return common(args, func(c types.DataType) types.DataType { return c.WithNullable(allNullable) }, false,
			func(types.DataType) EvalFunc {
				return func(_ *Context, a []any) (any, error) {
					for _, v := range a {
						if v != nil {
							return v, nil
						}
					}
					return nil, nil
				}
			}), nil
	})
	r.add("IFNULL", "IFNULL(<ANY>, <ANY>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 {
			return nil, nil
		}
		return common(args, func(c types.DataType) types.DataType { return c.WithNullable(args[1].IsNullable()) }, false,
			func(types.DataType) EvalFunc {
				return func(_ *Context, a []any) (any, error) {
					if a[0] != nil {
						return a[0], nil
					}
					return a[1], nil
				}
			}), nil
	})
	r.add("NULLIF", "NULLIF(<ANY>, <ANY>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 {
			return nil, nil
		}
		c, ok := types.LeastRestrictive(args...)
		if !ok {
			return nil, nil
		}
		conv1 := convFor(args[1], c)
		conv0 := convFor(args[0], c)
		return &Scalar{Result: args[0].Nullable(), Deterministic: true, Eval: func(ctx *Context, a []any) (any, error) {
			if a[0] == nil || a[1] == nil {
				return a[0], nil
			}
			x, y := a[0], a[1]
			var err error
			if conv0 != nil {
				if x, err = conv0(ctx, x); err != nil {
					return nil, err
				}
			}
			if conv1 != nil {
				if y, err = conv1(ctx, y); err != nil {
					return nil, err
				}
			}
			if types.Compare(x, y, c) == 0 {
				return nil, nil
			}
			return a[0], nil
		}}, nil
	})
	r.add("IF", "IF(<BOOLEAN>, <ANY>, <ANY>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 3 || args[0].Kind != types.KindBoolean && args[0].Kind != types.KindNull {
			return nil, nil
		}
		c, ok := types.LeastRestrictive(args[1], args[2])
		if !ok {
			return nil, nil
		}
		return bind(args, []types.DataType{tBool, c, c}, c, false, func(_ *Context, a []any) (any, error) {
			if a[0] == true {
				return a[1], nil
			}
			return a[2], nil
		}), nil
	})
	for _, n := range []string{"GREATEST", "LEAST"} {
		greatest := n == "GREATEST"
		r.add(n, "$(<COMPARABLE>...)", func(args []types.DataType) (*Scalar, error) {
			if len(args) == 0 {
				return nil, nil
			}
			return common(args, func(c types.DataType) types.DataType { return c }, true, func(c types.DataType) EvalFunc {
				return func(_ *Context, a []any) (any, error) {
					best := a[0]
					for _, v := range a[1:] {
						cmp := types.Compare(v, best, c)
						if greatest && cmp > 0 || !greatest && cmp < 0 {
							best = v
						}
					}
					return best, nil
				}
			}), nil
		})
	}
	isStr := func(name string, pred func(string) bool) {
		r.add(name, "$(<STRING>)", func(args []types.DataType) (*Scalar, error) {
			if len(args) != 1 || !isString(args[0]) {
				return nil, nil
			}
			return bind(args, []types.DataType{tString}, tBool.NotNull(), false, func(_ *Context, a []any) (any, error) {
				if a[0] == nil {
					return false, nil
				}
				return pred(a[0].(string)), nil
			}), nil
		})
	}
	isStr("IS_ALPHA", func(s string) bool {
		for _, r := range s {
			if !unicode.IsLetter(r) {
				return false
			}
		}
		return s != ""
	})
	isStr("IS_DIGIT", func(s string) bool {
		for _, r := range s {
			if r < '0' || r > '9' {
				return false
			}
		}
		return s != ""
	})
	isStr("IS_DECIMAL", func(s string) bool {
		_, err := types.ParseDecimal(s)
		if err == nil {
			return true
		}
		_, err = types.ParseJavaDouble(s)
		return err == nil && strings.TrimSpace(s) == s
	})
}

// CastScalar returns the Scalar for CAST(x AS to) (or TRY_CAST) from
// type from, with the session zone taken from the Context. CAST keeps the
// input's nullability (a DECIMAL overflow can still give NULL, as in
// Flink); TRY_CAST is always nullable. An impossible pair is an error.
func CastScalar(from, to types.DataType, try bool) (*Scalar, error) {
	if !types.ExplicitCastable(from, to) {
		return nil, fmt.Errorf("Cast function cannot convert value of type %s to type %s", from, to)
	}
	res := to.WithNullable(from.IsNullable() || try)
	name := "CAST"
	if try {
		name = "TRY_CAST"
	}
	return &Scalar{Name: name, Args: []types.DataType{from}, Result: res, Deterministic: true,
		Eval: func(ctx *Context, a []any) (any, error) {
			v, err := types.CastIn(a[0], from, to, ctx.Location())
			if err != nil {
				if try {
					return nil, nil
				}
				return nil, err
			}
			return v, nil
		}}, nil
}

func registerMisc(r *Registry) {
	r.add("TYPEOF", "TYPEOF(<ANY> [, <BOOLEAN>])", func(args []types.DataType) (*Scalar, error) {
		if len(args) < 1 || len(args) > 2 {
			return nil, nil
		}
		s := args[0].String()
		return &Scalar{Result: sNN, Deterministic: true, Eval: func(*Context, []any) (any, error) { return s, nil }}, nil
	})
	hashFn := func(name string, h func() hash.Hash) {
		r.add(name, "$(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
			x := h()
			x.Write([]byte(a[0].(string)))
			return hex.EncodeToString(x.Sum(nil)), nil
		}))
	}
	hashFn("MD5", md5.New)
	hashFn("SHA1", sha1.New)
	hashFn("SHA224", sha256.New224)
	hashFn("SHA256", sha256.New)
	hashFn("SHA384", sha512.New384)
	hashFn("SHA512", sha512.New)
	r.add("SHA2", "SHA2(<STRING>, <INTEGER>)", strFn("si", tString, func(_ *Context, a []any) (any, error) {
		var h hash.Hash
		switch toInt64(a[1]) {
		case 224:
			h = sha256.New224()
		case 256, 0:
			h = sha256.New()
		case 384:
			h = sha512.New384()
		case 512:
			h = sha512.New()
		default:
			return nil, nil
		}
		h.Write([]byte(a[0].(string)))
		return hex.EncodeToString(h.Sum(nil)), nil
	}))
	registerCollections(r)
}

func registerCollections(r *Registry) {
	r.add("CARDINALITY", "CARDINALITY(<ARRAY|MAP|MULTISET>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || !args[0].Kind.IsConstructed() || args[0].Kind == types.KindRow {
			return nil, nil
		}
		return bind(args, args, tInt.NotNull(), true, func(_ *Context, a []any) (any, error) {
			switch x := a[0].(type) {
			case []any:
				return int32(len(x)), nil
			case *types.Map:
				if args[0].Kind == types.KindMultiset {
					n := int32(0)
					for _, c := range x.Values {
						n += int32(toInt64(c))
					}
					return n, nil
				}
				return int32(len(x.Keys)), nil
			}
			return nil, nil
		}), nil
	})
	r.add("ELEMENT", "ELEMENT(<ARRAY>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || args[0].Kind != types.KindArray {
			return nil, nil
		}
		return bind(args, args, args[0].ElemType().Nullable(), true, func(_ *Context, a []any) (any, error) {
			x := a[0].([]any)
			switch len(x) {
			case 0:
				return nil, nil
			case 1:
				return x[0], nil
			}
			return nil, fmt.Errorf("ELEMENT: array has %d elements, want at most 1", len(x))
		}), nil
	})
	// ITEM is array[i] (1-based; out of range is NULL) and map[key].
	r.add("ITEM|AT", "ITEM(<ARRAY>, <INTEGER>) | ITEM(<MAP>, <KEY>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 {
			return nil, nil
		}
		switch args[0].Kind {
		case types.KindArray:
			if !isIntegral(args[1]) {
				return nil, nil
			}
			return bind(args, args, args[0].ElemType().Nullable(), true, func(_ *Context, a []any) (any, error) {
				x := a[0].([]any)
				i := toInt64(a[1])
				if i < 1 || i > int64(len(x)) {
					return nil, nil
				}
				return x[i-1], nil
			}), nil
		case types.KindMap:
			kt := args[0].KeyType()
			if !types.ImplicitCastable(args[1], kt) {
				return nil, nil
			}
			return bind(args, []types.DataType{args[0], kt}, args[0].ValueType().Nullable(), true, func(_ *Context, a []any) (any, error) {
				m := a[0].(*types.Map)
				for i, k := range m.Keys {
					if k != nil && types.Equal(k, a[1], kt) {
						return m.Values[i], nil
					}
				}
				return nil, nil
			}), nil
		}
		return nil, nil
	})
	r.add("MAP_KEYS", "MAP_KEYS(<MAP>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || args[0].Kind != types.KindMap {
			return nil, nil
		}
		return bind(args, args, types.Array(args[0].KeyType()).NotNull(), true, func(_ *Context, a []any) (any, error) {
			return append([]any{}, a[0].(*types.Map).Keys...), nil
		}), nil
	})
	r.add("MAP_VALUES", "MAP_VALUES(<MAP>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 || args[0].Kind != types.KindMap {
			return nil, nil
		}
		return bind(args, args, types.Array(args[0].ValueType()).NotNull(), true, func(_ *Context, a []any) (any, error) {
			return append([]any{}, a[0].(*types.Map).Values...), nil
		}), nil
	})
	r.add("ARRAY_CONTAINS", "ARRAY_CONTAINS(<ARRAY>, <ELEMENT>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 || args[0].Kind != types.KindArray {
			return nil, nil
		}
		et := args[0].ElemType()
		c, ok := types.LeastRestrictive(et, args[1])
		if !ok {
			return nil, nil
		}
		conv := convFor(args[1], c)
		convE := convFor(et, c)
		return &Scalar{Result: tBool.WithNullable(args[0].IsNullable()), Deterministic: true, Eval: func(ctx *Context, a []any) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			needle := a[1]
			if needle != nil && conv != nil {
				var err error
				if needle, err = conv(ctx, needle); err != nil {
					return nil, err
				}
			}
			for _, e := range a[0].([]any) {
				if e == nil || needle == nil {
					if e == nil && needle == nil {
						return true, nil
					}
					continue
				}
				if convE != nil {
					var err error
					if e, err = convE(ctx, e); err != nil {
						return nil, err
					}
				}
				if types.Equal(e, needle, c) {
					return true, nil
				}
			}
			return false, nil
		}}, nil
	})
	arrayOnly := func(name, sig string, res func(t types.DataType) types.DataType, f func(et types.DataType, xs []any) any) {
		r.add(name, sig, func(args []types.DataType) (*Scalar, error) {
			if len(args) != 1 || args[0].Kind != types.KindArray {
				return nil, nil
			}
			et := args[0].ElemType()
			return bind(args, args, res(args[0]), true, func(_ *Context, a []any) (any, error) {
				return f(et, a[0].([]any)), nil
			}), nil
		})
	}
	same := func(t types.DataType) types.DataType { return t }
	arrayOnly("ARRAY_DISTINCT", "ARRAY_DISTINCT(<ARRAY>)", same, func(et types.DataType, xs []any) any {
		out := []any{}
	next:
		for _, x := range xs {
			for _, o := range out {
				if (o == nil) == (x == nil) && types.Compare(o, x, et) == 0 {
					continue next
				}
			}
			out = append(out, x)
		}
		return out
	})
	arrayOnly("ARRAY_REVERSE", "ARRAY_REVERSE(<ARRAY>)", same, func(_ types.DataType, xs []any) any {
		out := make([]any, len(xs))
		for i, x := range xs {
			out[len(xs)-1-i] = x
		}
		return out
	})
	// ARRAY_POSITION and ARRAY_REMOVE compare with the needle cast to the
	// element type; NULL elements match a NULL needle, as Flink's.
	needle := func(name, sig string, res func(t types.DataType) types.DataType, f func(et types.DataType, xs []any, v any) any, nullNeedleIsNull bool) {
		r.add(name, sig, func(args []types.DataType) (*Scalar, error) {
			if len(args) != 2 || args[0].Kind != types.KindArray || !types.ImplicitCastable(args[1], args[0].ElemType()) {
				return nil, nil
			}
			et := args[0].ElemType()
			out := res(args[0]).WithNullable(args[0].IsNullable() || nullNeedleIsNull && args[1].IsNullable())
			return bind(args, []types.DataType{args[0], et}, out, false, func(_ *Context, a []any) (any, error) {
				if a[0] == nil || nullNeedleIsNull && a[1] == nil {
					return nil, nil
				}
				return f(et, a[0].([]any), a[1]), nil
			}), nil
		})
	}
	needle("ARRAY_POSITION", "ARRAY_POSITION(<ARRAY>, <ELEMENT>)", func(types.DataType) types.DataType { return tInt }, func(et types.DataType, xs []any, v any) any {
		for i, x := range xs {
			if x != nil && types.Compare(x, v, et) == 0 {
				return int32(i + 1)
			}
		}
		return int32(0)
	}, true)
	needle("ARRAY_REMOVE", "ARRAY_REMOVE(<ARRAY>, <ELEMENT>)", same, func(et types.DataType, xs []any, v any) any {
		out := []any{}
		for _, x := range xs {
			if (x == nil) == (v == nil) && (x == nil || types.Compare(x, v, et) == 0) {
				continue
			}
			out = append(out, x)
		}
		return out
	}, false)
	r.add("MAP_FROM_ARRAYS", "MAP_FROM_ARRAYS(<ARRAY>, <ARRAY>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 2 || args[0].Kind != types.KindArray || args[1].Kind != types.KindArray {
			return nil, nil
		}
		kt := args[0].ElemType()
		return bind(args, args, types.MapType(kt, args[1].ElemType()), true, func(_ *Context, a []any) (any, error) {
			ks, vs := a[0].([]any), a[1].([]any)
			if len(ks) != len(vs) {
				return nil, fmt.Errorf("MAP_FROM_ARRAYS: %d keys but %d values", len(ks), len(vs))
			}
			m := &types.Map{}
		next:
			for i, k := range ks {
				for j, old := range m.Keys {
					if (old == nil) == (k == nil) && types.Compare(old, k, kt) == 0 {
						m.Values[j] = vs[i]
						continue next
					}
				}
				m.Keys = append(m.Keys, k)
				m.Values = append(m.Values, vs[i])
			}
			return m, nil
		}), nil
	})
	// Value constructors: ARRAY[a, b], MAP[k1, v1, ...], ROW(a, b).
	r.add("ARRAY", "ARRAY(<ANY>...)", func(args []types.DataType) (*Scalar, error) {
		if len(args) == 0 {
			return nil, nil
		}
		return common(args, func(c types.DataType) types.DataType { return types.Array(c).NotNull() }, false,
			func(types.DataType) EvalFunc {
				return func(_ *Context, a []any) (any, error) { return append([]any{}, a...), nil }
			}), nil
	})
	r.add("MAP", "MAP(<KEY>, <VALUE>...)", func(args []types.DataType) (*Scalar, error) {
		if len(args) == 0 || len(args)%2 != 0 {
			return nil, nil
		}
		var ks, vs []types.DataType
		for i := 0; i < len(args); i += 2 {
			ks = append(ks, args[i])
			vs = append(vs, args[i+1])
		}
		kt, ok1 := types.LeastRestrictive(ks...)
		vt, ok2 := types.LeastRestrictive(vs...)
		if !ok1 || !ok2 {
			return nil, nil
		}
		params := make([]types.DataType, len(args))
		for i := range params {
			if i%2 == 0 {
				params[i] = kt
			} else {
				params[i] = vt
			}
		}
		return bind(args, params, types.MapType(kt, vt).NotNull(), false, func(_ *Context, a []any) (any, error) {
			m := &types.Map{}
		next:
			for i := 0; i < len(a); i += 2 {
				for j, k := range m.Keys {
					if types.Compare(k, a[i], kt) == 0 {
						m.Values[j] = a[i+1] // a later duplicate key wins
						continue next
					}
				}
				m.Keys = append(m.Keys, a[i])
				m.Values = append(m.Values, a[i+1])
			}
			return m, nil
		}), nil
	})
	r.add("ROW", "ROW(<ANY>...)", func(args []types.DataType) (*Scalar, error) {
		fs := make([]types.Field, len(args))
		for i, a := range args {
			fs[i] = types.F(fmt.Sprintf("EXPR$%d", i), a)
		}
		return &Scalar{Result: types.RowType(fs...).NotNull(), Deterministic: true, Eval: func(_ *Context, a []any) (any, error) {
			return types.Row(append([]any{}, a...)), nil
		}}, nil
	})
}
