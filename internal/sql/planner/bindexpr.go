package planner

import (
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
)

// expr resolves a parsed expression against a scope.
func (b *binder) expr(e parser.Expr, sc *scope) (Expr, error) {
	if sc.agg != nil {
		if x, ok := sc.resolveAggregated(e); ok {
			return x, nil
		}
	}
	if f, ok := e.(*parser.FuncCall); ok && f.Over != nil && sc.over != nil {
		if i, ok := sc.over[parser.Format(f)]; ok {
			return &InputRef{Index: i, T: sc.fields[i].Type, Name: sc.fields[i].Name}, nil
		}
	}
	switch e := e.(type) {
	case *parser.Ident:
		if sc.agg != nil {
			if _, err := sc.agg.input.lookup(e); err == nil {
				return nil, errAt(e, "Expression '%s' is not being grouped", strings.Join(e.Parts, "."))
			}
		}
		i, err := sc.lookup(e)
		if err != nil {
			// a.b may be field b of ROW column a.
			if len(e.Parts) >= 2 {
				base, berr := sc.lookup(&parser.Ident{Parts: e.Parts[:len(e.Parts)-1]})
				if berr == nil {
					f := sc.fields[base]
					return b.field(&InputRef{Index: base, T: f.Type, Name: f.Name}, e.Parts[len(e.Parts)-1], e)
				}
			}
			return nil, b.outerRef(e, err)
		}
		f := sc.fields[i]
		return &InputRef{Index: i, T: f.Type, Name: f.Name}, nil
	case *parser.Literal:
		return literal(e)
	case *parser.IntervalLiteral:
		return intervalLiteral(e)
	case *parser.Unary:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case parser.OpPos:
			return x, nil
		case parser.OpNeg:
			if l, ok := x.(*Literal); ok && l.Value != nil {
				if y := fold(mustCall(b, "-", l), b.Ctx); y != nil {
					return y, nil
				}
			}
			return b.call(e, "-", x)
		}
		return b.call(e, "NOT", x)
	case *parser.Binary:
		l, err := b.expr(e.Left, sc)
		if err != nil {
			return nil, err
		}
		r, err := b.expr(e.Right, sc)
		if err != nil {
			return nil, err
		}
		return b.call(e, string(e.Op), l, r)
	case *parser.Is:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		name := "IS " + string(e.What)
		if e.Not {
			name = "IS NOT " + string(e.What)
		}
		return b.call(e, name, x)
	case *parser.Between:
		if e.Symmetric {
			return nil, errAt(e, "BETWEEN SYMMETRIC is not supported yet")
		}
		args, err := b.exprs(sc, e.Expr, e.Low, e.High)
		if err != nil {
			return nil, err
		}
		name := "BETWEEN"
		if e.Not {
			name = "NOT BETWEEN"
		}
		return b.call(e, name, args...)
	case *parser.Like:
		parts := []parser.Expr{e.Expr, e.Pattern}
		if e.Escape != nil {
			parts = append(parts, e.Escape)
		}
		args, err := b.exprs(sc, parts...)
		if err != nil {
			return nil, err
		}
		name := "LIKE"
		if e.Similar {
			name = "SIMILAR TO"
		}
		if e.Not {
			name = "NOT " + name
		}
		return b.call(e, name, args...)
	case *parser.In:
		if e.Query != nil {
			return nil, errAt(e, "IN (subquery) is supported as a condition of WHERE, not inside other expressions")
		}
		args, err := b.exprs(sc, append([]parser.Expr{e.Expr}, e.List...)...)
		if err != nil {
			return nil, err
		}
		name := "IN"
		if e.Not {
			name = "NOT IN"
		}
		return b.call(e, name, args...)
	case *parser.FuncCall:
		return b.funcCall(e, sc)
	case *parser.Cast:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		t, err := catalog.DataTypeOf(e.Type)
		if err != nil {
			return nil, err
		}
		if !types.ExplicitCastable(x.Type(), t) {
			return nil, errAt(e, "Cast function cannot convert value of type %s to type %s", x.Type(), t)
		}
		if !x.Type().IsNullable() && !e.Try {
			t = t.NotNull()
		} else if e.Try {
			t = t.Nullable()
		}
		return &CastExpr{Expr: x, T: t, Try: e.Try}, nil
	case *parser.Case:
		return b.caseExpr(e, sc)
	case *parser.Extract:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		return b.call(e, "EXTRACT", unit(e.Unit), x)
	case *parser.Position:
		parts := []parser.Expr{e.Sub, e.Str}
		if e.Start != nil {
			parts = append(parts, e.Start)
		}
		args, err := b.exprs(sc, parts...)
		if err != nil {
			return nil, err
		}
		return b.call(e, "POSITION", args...)
	case *parser.Trim:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		mode := e.Mode
		if mode == "" {
			mode = "BOTH"
		}
		var chars Expr = &Literal{Value: " ", T: types.Char(1).NotNull()}
		if e.Chars != nil {
			if chars, err = b.expr(e.Chars, sc); err != nil {
				return nil, err
			}
		}
		return b.call(e, "TRIM", &Literal{Value: mode, T: types.VarChar(len(mode)).NotNull()}, chars, x)
	case *parser.Substring:
		parts := []parser.Expr{e.Expr, e.Start}
		if e.Length != nil {
			parts = append(parts, e.Length)
		}
		args, err := b.exprs(sc, parts...)
		if err != nil {
			return nil, err
		}
		return b.call(e, "SUBSTRING", args...)
	case *parser.Overlay:
		parts := []parser.Expr{e.Expr, e.Repl, e.Start}
		if e.Length != nil {
			parts = append(parts, e.Length)
		}
		args, err := b.exprs(sc, parts...)
		if err != nil {
			return nil, err
		}
		return b.call(e, "OVERLAY", args...)
	case *parser.FloorCeil:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		name := "FLOOR"
		if e.Ceil {
			name = "CEIL"
		}
		return b.call(e, name, x, unit(e.Unit))
	case *parser.TimestampAdd:
		args, err := b.exprs(sc, e.Count, e.Timestamp)
		if err != nil {
			return nil, err
		}
		return b.call(e, "TIMESTAMPADD", append([]Expr{unit(e.Unit)}, args...)...)
	case *parser.TimestampDiff:
		args, err := b.exprs(sc, e.Start, e.End)
		if err != nil {
			return nil, err
		}
		return b.call(e, "TIMESTAMPDIFF", append([]Expr{unit(e.Unit)}, args...)...)
	case *parser.ArrayCtor:
		args, err := b.exprs(sc, e.Elems...)
		if err != nil {
			return nil, err
		}
		elem, err := common(e, args)
		if err != nil {
			return nil, err
		}
		for i := range args {
			args[i] = castTo(args[i], elem)
		}
		return &Ctor{Kind: types.KindArray, Args: args, T: types.Array(elem).NotNull()}, nil
	case *parser.MapCtor:
		ks, err := b.exprs(sc, e.Keys...)
		if err != nil {
			return nil, err
		}
		vs, err := b.exprs(sc, e.Values...)
		if err != nil {
			return nil, err
		}
		kt, err := common(e, ks)
		if err != nil {
			return nil, err
		}
		vt, err := common(e, vs)
		if err != nil {
			return nil, err
		}
		var args []Expr
		for i := range ks {
			args = append(args, castTo(ks[i], kt), castTo(vs[i], vt))
		}
		return &Ctor{Kind: types.KindMap, Args: args, T: types.MapType(kt, vt).NotNull()}, nil
	case *parser.RowExpr:
		args, err := b.exprs(sc, e.Items...)
		if err != nil {
			return nil, err
		}
		fs := make([]types.Field, len(args))
		for i, a := range args {
			fs[i] = types.F("EXPR$"+itoa(i), a.Type())
		}
		return &Ctor{Kind: types.KindRow, Args: args, T: types.RowType(fs...).NotNull()}, nil
	case *parser.Index:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		idx, err := b.expr(e.Index, sc)
		if err != nil {
			return nil, err
		}
		switch x.Type().Kind {
		case types.KindArray:
			if !idx.Type().Kind.IsIntegral() {
				return nil, errAt(e, "an array index must be an integer, not %s", idx.Type())
			}
			return &Item{Expr: x, Index: idx, T: x.Type().ElemType().Nullable()}, nil
		case types.KindMap:
			return &Item{Expr: x, Index: castTo(idx, x.Type().KeyType()), T: x.Type().ValueType().Nullable()}, nil
		}
		return nil, errAt(e, "cannot index a value of type %s", x.Type())
	case *parser.FieldAccess:
		x, err := b.expr(e.Expr, sc)
		if err != nil {
			return nil, err
		}
		return b.field(x, e.Field, e)
	case *parser.Star:
		return nil, errAt(e, "* is only allowed in a select list or COUNT(*)")
	case *parser.Subquery:
		if x, ok := sc.subq[e]; ok {
			return x, nil
		}
		return nil, errAt(e, "a scalar subquery is not supported here")
	case *parser.Exists:
		return nil, errAt(e, "EXISTS is supported as a condition of WHERE (or NOT EXISTS), not inside other expressions")
	}
	return nil, errAt(e, "%T is not supported here", e)
}

func itoa(i int) string { return strconv.Itoa(i) }

func (b *binder) field(x Expr, name string, n parser.Node) (Expr, error) {
	t := x.Type()
	if t.Kind != types.KindRow {
		return nil, errAt(n, "%s has type %s, which has no field %s", x, t, name)
	}
	for i, f := range t.Fields {
		if f.Name == name {
			ft := f.Type
			if t.IsNullable() {
				ft = ft.Nullable()
			}
			return &Item{Expr: x, Field: i, T: ft}, nil
		}
	}
	return nil, errAt(n, "%s has no field %s", t, name)
}

func common(n parser.Node, args []Expr) (types.DataType, error) {
	ts := make([]types.DataType, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	t, ok := types.LeastRestrictive(ts...)
	if !ok {
		return types.DataType{}, errAt(n, "the values have types without a common type")
	}
	return t, nil
}

func unit(u parser.TimeUnit) Expr {
	return &Literal{Value: string(u), T: types.VarChar(len(u)).NotNull()}
}

func (b *binder) exprs(sc *scope, es ...parser.Expr) ([]Expr, error) {
	out := make([]Expr, len(es))
	for i, e := range es {
		x, err := b.expr(e, sc)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// call resolves a function or operator by name for its argument types.
func (b *binder) call(n parser.Node, name string, args ...Expr) (Expr, error) {
	ts := make([]types.DataType, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	fn, err := b.Funcs.Lookup(name, ts)
	if err != nil {
		return nil, errAt(n, "%v", err)
	}
	return &Call{Fn: fn, Args: args}, nil
}

func mustCall(b *binder, name string, args ...Expr) Expr {
	e, err := b.call(nil, name, args...)
	if err != nil {
		return nil
	}
	return e
}

// procTime is PROCTIME(): the processing time, a time attribute for
// processing-time windows.
var procTime = &functions.Scalar{
	Name:   "PROCTIME",
	Result: types.TimestampLTZType(3).NotNull().WithTimeAttr(types.TimeAttrProctime),
	Eval: func(*functions.Context, []any) (any, error) {
		return types.TimestampLTZ{Millis: time.Now().UnixMilli()}, nil
	},
}

func (b *binder) funcCall(f *parser.FuncCall, sc *scope) (Expr, error) {
	name := strings.ToUpper(f.Name[len(f.Name)-1])
	if name == "PROCTIME" && len(f.Args) == 0 && f.Over == nil {
		return &Call{Fn: procTime}, nil
	}
	if f.Over != nil {
		return nil, errAt(f, "OVER windows are not supported yet")
	}
	if b.Funcs.IsAggregate(name) {
		return nil, errAt(f, "aggregate %s is not allowed here", name)
	}
	if f.Distinct || f.Filter != nil {
		return nil, errAt(f, "DISTINCT and FILTER apply to aggregate functions only; %s is not one", name)
	}
	args, err := b.exprs(sc, f.Args...)
	if err != nil {
		return nil, err
	}
	return b.call(f, name, args...)
}

func (b *binder) caseExpr(c *parser.Case, sc *scope) (Expr, error) {
	out := &CaseExpr{}
	var operand Expr
	if c.Operand != nil {
		var err error
		if operand, err = b.expr(c.Operand, sc); err != nil {
			return nil, err
		}
	}
	var resultTypes []types.DataType
	for _, w := range c.Whens {
		cond, err := b.expr(w.Cond, sc)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			if cond, err = b.call(w, "=", operand, cond); err != nil {
				return nil, err
			}
		}
		if k := cond.Type().Kind; k != types.KindBoolean && k != types.KindNull {
			return nil, errAt(w.Cond, "a WHEN condition must be BOOLEAN, not %s", cond.Type())
		}
		r, err := b.expr(w.Result, sc)
		if err != nil {
			return nil, err
		}
		out.Conds = append(out.Conds, cond)
		out.Results = append(out.Results, r)
		resultTypes = append(resultTypes, r.Type())
	}
	if c.Else != nil {
		e, err := b.expr(c.Else, sc)
		if err != nil {
			return nil, err
		}
		out.Else = e
		resultTypes = append(resultTypes, e.Type())
	} else {
		resultTypes = append(resultTypes, types.Null())
	}
	t, ok := types.LeastRestrictive(resultTypes...)
	if !ok {
		return nil, errAt(c, "the results of CASE have types without a common type")
	}
	out.T = t
	for i := range out.Results {
		out.Results[i] = castTo(out.Results[i], t)
	}
	if out.Else != nil {
		out.Else = castTo(out.Else, t)
	}
	return out, nil
}
