package planner

import (
	"fmt"
	"strings"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
)

// Expr is a resolved, typed scalar expression over the fields of one
// input row.
type Expr interface {
	Type() types.DataType
	String() string
}

// InputRef reads a field of the input row.
type InputRef struct {
	Index int
	T     types.DataType
	Name  string
}

// Literal is a constant.
type Literal struct {
	Value any
	T     types.DataType
}

// Call applies a resolved scalar function or operator.
type Call struct {
	Fn   *functions.Scalar
	Args []Expr
}

// CastExpr is CAST or TRY_CAST.
type CastExpr struct {
	Expr Expr
	T    types.DataType
	Try  bool
}

// CaseExpr is a searched CASE (a simple CASE is rewritten to one). Only
// the branch taken is evaluated, as SQL requires.
type CaseExpr struct {
	Conds, Results []Expr
	Else           Expr
	T              types.DataType
}

// Ctor builds an ARRAY, MAP or ROW value.
type Ctor struct {
	Kind types.Kind
	Args []Expr
	T    types.DataType
}

// Item reads an element of an array (1-based) or map, or a field of a row.
type Item struct {
	Expr  Expr
	Index Expr // nil for a row field
	Field int
	T     types.DataType
}

func (e *InputRef) Type() types.DataType { return e.T }
func (e *Literal) Type() types.DataType  { return e.T }
func (e *Call) Type() types.DataType     { return e.Fn.Result }
func (e *CastExpr) Type() types.DataType { return e.T }
func (e *CaseExpr) Type() types.DataType { return e.T }
func (e *Ctor) Type() types.DataType     { return e.T }
func (e *Item) Type() types.DataType     { return e.T }

func (e *InputRef) String() string { return "$" + fmt.Sprint(e.Index) + ":" + e.Name }
func (e *Literal) String() string {
	if e.Value == nil {
		return "null:" + e.T.String()
	}
	return types.Format(e.Value, e.T)
}
func (e *Call) String() string {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = a.String()
	}
	return e.Fn.Name + "(" + strings.Join(args, ", ") + ")"
}
func (e *CastExpr) String() string {
	f := "CAST"
	if e.Try {
		f = "TRY_CAST"
	}
	return f + "(" + e.Expr.String() + " AS " + e.T.String() + ")"
}
func (e *CaseExpr) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for i := range e.Conds {
		fmt.Fprintf(&b, " WHEN %s THEN %s", e.Conds[i], e.Results[i])
	}
	if e.Else != nil {
		fmt.Fprintf(&b, " ELSE %s", e.Else)
	}
	b.WriteString(" END")
	return b.String()
}
func (e *Ctor) String() string {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = a.String()
	}
	return e.Kind.String() + "[" + strings.Join(args, ", ") + "]"
}
func (e *Item) String() string {
	if e.Index == nil {
		return e.Expr.String() + "." + e.T.String()
	}
	return e.Expr.String() + "[" + e.Index.String() + "]"
}

// evaluator computes an expression on a row.
type evaluator func(ctx *functions.Context, row types.Row) (any, error)

// compile turns an expression into a closure tree, once, off the record
// path.
func compile(e Expr) evaluator {
	switch e := e.(type) {
	case *InputRef:
		i := e.Index
		return func(_ *functions.Context, row types.Row) (any, error) { return row[i], nil }
	case *Literal:
		v := e.Value
		return func(*functions.Context, types.Row) (any, error) { return v, nil }
	case *Call:
		args := make([]evaluator, len(e.Args))
		for i, a := range e.Args {
			args[i] = compile(a)
		}
		eval := e.Fn.Eval
		name := e.Fn.Name
		n := len(args)
		return func(ctx *functions.Context, row types.Row) (any, error) {
			// A fresh slice per call: Eval may keep or overwrite it, and
			// evaluation nests.
			vals := make([]any, n)
			for i, a := range args {
				v, err := a(ctx, row)
				if err != nil {
					return nil, err
				}
				vals[i] = v
			}
			v, err := eval(ctx, vals)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return v, nil
		}
	case *CastExpr:
		in := compile(e.Expr)
		from, to, try := e.Expr.Type(), e.T, e.Try
		return func(ctx *functions.Context, row types.Row) (any, error) {
			v, err := in(ctx, row)
			if err != nil || v == nil {
				return nil, err
			}
			if try {
				return types.TryCastIn(v, from, to, ctx.Location()), nil
			}
			return types.CastIn(v, from, to, ctx.Location())
		}
	case *CaseExpr:
		conds := make([]evaluator, len(e.Conds))
		results := make([]evaluator, len(e.Results))
		for i := range e.Conds {
			conds[i], results[i] = compile(e.Conds[i]), compile(e.Results[i])
		}
		var els evaluator
		if e.Else != nil {
			els = compile(e.Else)
		}
		return func(ctx *functions.Context, row types.Row) (any, error) {
			for i, c := range conds {
				v, err := c(ctx, row)
				if err != nil {
					return nil, err
				}
				if v == true {
					return results[i](ctx, row)
				}
			}
			if els == nil {
				return nil, nil
			}
			return els(ctx, row)
		}
	case *Ctor:
		args := make([]evaluator, len(e.Args))
		for i, a := range e.Args {
			args[i] = compile(a)
		}
		kind := e.Kind
		return func(ctx *functions.Context, row types.Row) (any, error) {
			vals := make([]any, len(args))
			for i, a := range args {
				v, err := a(ctx, row)
				if err != nil {
					return nil, err
				}
				vals[i] = v
			}
			switch kind {
			case types.KindArray:
				return vals, nil
			case types.KindMap:
				m := &types.Map{}
				for i := 0; i+1 < len(vals); i += 2 {
					m.Keys = append(m.Keys, vals[i])
					m.Values = append(m.Values, vals[i+1])
				}
				return m, nil
			default:
				return types.Row(vals), nil
			}
		}
	case *Item:
		in := compile(e.Expr)
		if e.Index == nil {
			f := e.Field
			return func(ctx *functions.Context, row types.Row) (any, error) {
				v, err := in(ctx, row)
				if err != nil || v == nil {
					return nil, err
				}
				return v.(types.Row)[f], nil
			}
		}
		idx := compile(e.Index)
		keyType := e.Index.Type()
		return func(ctx *functions.Context, row types.Row) (any, error) {
			v, err := in(ctx, row)
			if err != nil || v == nil {
				return nil, err
			}
			k, err := idx(ctx, row)
			if err != nil || k == nil {
				return nil, err
			}
			switch c := v.(type) {
			case []any:
				i := toInt(k)
				if i < 1 || i > int64(len(c)) {
					// Flink returns NULL for an index out of range.
					return nil, nil
				}
				return c[i-1], nil
			case *types.Map:
				for j, mk := range c.Keys {
					if mk != nil && types.Equal(mk, k, keyType) {
						return c.Values[j], nil
					}
				}
				return nil, nil
			}
			return nil, fmt.Errorf("cannot index a %T", v)
		}
	}
	panic(fmt.Sprintf("planner: compile of %T", e))
}

func toInt(v any) int64 {
	switch v := v.(type) {
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// isConstant reports an expression that reads no field and calls only
// deterministic functions, so the planner may evaluate it once.
func isConstant(e Expr) bool {
	switch e := e.(type) {
	case *InputRef:
		return false
	case *Literal:
		return true
	case *Call:
		if !e.Fn.Deterministic {
			return false
		}
		for _, a := range e.Args {
			if !isConstant(a) {
				return false
			}
		}
		return true
	case *CastExpr:
		return isConstant(e.Expr)
	case *CaseExpr:
		for _, c := range append(append(append([]Expr(nil), e.Conds...), e.Results...), e.Else) {
			if c != nil && !isConstant(c) {
				return false
			}
		}
		return true
	case *Ctor:
		for _, a := range e.Args {
			if !isConstant(a) {
				return false
			}
		}
		return true
	case *Item:
		return isConstant(e.Expr) && (e.Index == nil || isConstant(e.Index))
	}
	return false
}

// fold evaluates constant subexpressions once (constant folding). A
// constant that fails to evaluate (1/0) is left for run time, where the
// error belongs to the record that reaches it, as in Flink.
func fold(e Expr, ctx *functions.Context) Expr {
	switch x := e.(type) {
	case *Literal, *InputRef:
		return e
	case *Call:
		for i, a := range x.Args {
			x.Args[i] = fold(a, ctx)
		}
	case *CastExpr:
		x.Expr = fold(x.Expr, ctx)
	case *CaseExpr:
		for i := range x.Conds {
			x.Conds[i], x.Results[i] = fold(x.Conds[i], ctx), fold(x.Results[i], ctx)
		}
		if x.Else != nil {
			x.Else = fold(x.Else, ctx)
		}
	case *Ctor:
		for i, a := range x.Args {
			x.Args[i] = fold(a, ctx)
		}
	case *Item:
		x.Expr = fold(x.Expr, ctx)
		if x.Index != nil {
			x.Index = fold(x.Index, ctx)
		}
	}
	if !isConstant(e) {
		return e
	}
	v, err := compile(e)(ctx, nil)
	if err != nil {
		return e
	}
	return &Literal{Value: v, T: e.Type()}
}

// refs adds the input fields an expression reads to set.
func refs(e Expr, set map[int]bool) {
	switch e := e.(type) {
	case *InputRef:
		set[e.Index] = true
	case *Call:
		for _, a := range e.Args {
			refs(a, set)
		}
	case *CastExpr:
		refs(e.Expr, set)
	case *CaseExpr:
		for i := range e.Conds {
			refs(e.Conds[i], set)
			refs(e.Results[i], set)
		}
		if e.Else != nil {
			refs(e.Else, set)
		}
	case *Ctor:
		for _, a := range e.Args {
			refs(a, set)
		}
	case *Item:
		refs(e.Expr, set)
		if e.Index != nil {
			refs(e.Index, set)
		}
	}
}

// remap rewrites the input references of an expression through m (old
// index to new index).
func remap(e Expr, m map[int]int) Expr {
	switch x := e.(type) {
	case *InputRef:
		c := *x
		c.Index = m[x.Index]
		return &c
	case *Literal:
		return x
	case *Call:
		c := *x
		c.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = remap(a, m)
		}
		return &c
	case *CastExpr:
		c := *x
		c.Expr = remap(x.Expr, m)
		return &c
	case *CaseExpr:
		c := *x
		c.Conds = make([]Expr, len(x.Conds))
		c.Results = make([]Expr, len(x.Results))
		for i := range x.Conds {
			c.Conds[i], c.Results[i] = remap(x.Conds[i], m), remap(x.Results[i], m)
		}
		if x.Else != nil {
			c.Else = remap(x.Else, m)
		}
		return &c
	case *Ctor:
		c := *x
		c.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = remap(a, m)
		}
		return &c
	case *Item:
		c := *x
		c.Expr = remap(x.Expr, m)
		if x.Index != nil {
			c.Index = remap(x.Index, m)
		}
		return &c
	}
	return e
}
