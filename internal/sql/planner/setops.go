package planner

import (
	"slices"
	"strconv"

	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
)

// intersectExcept plans INTERSECT and EXCEPT [ALL]: both inputs are marked
// with their side and unioned, every distinct row is counted per side, and
// a row stays by the counts: INTERSECT when both are positive, EXCEPT when
// only the left is; the ALL forms repeat it min(l, r) or l - r times.
func (b *binder) intersectExcept(q *parser.SetOp, l, r Plan) (Plan, error) {
	lf, rf := l.Fields(), r.Fields()
	if len(lf) != len(rf) {
		return nil, errAt(q, "%s: the inputs have %d and %d columns", q.Op, len(lf), len(rf))
	}
	n := len(lf)
	fields := make([]Field, n, n+2)
	mark := func(in Plan, left bool) Plan {
		fs := in.Fields()
		exprs := make([]Expr, n, n+2)
		for i := range n {
			exprs[i] = castTo(&InputRef{Index: i, T: fs[i].Type, Name: fs[i].Name}, fields[i].Type)
		}
		t := types.Boolean().NotNull()
		exprs = append(exprs, &Literal{Value: left, T: t}, &Literal{Value: !left, T: t})
		out := append(slices.Clone(fields), Field{Name: "$l", Type: t}, Field{Name: "$r", Type: t})
		return &Project{Input: in, Exprs: exprs, fields: out}
	}
	for i := range n {
		t, ok := types.LeastRestrictive(lf[i].Type, rf[i].Type)
		if !ok {
			return nil, errAt(q, "%s: column %d has types %s and %s, which have no common type", q.Op, i+1, lf[i].Type, rf[i].Type)
		}
		fields[i] = Field{Name: lf[i].Name, Type: t}
	}
	u := &Union{Ins: []Plan{mark(l, true), mark(r, false)}, fields: append(slices.Clone(fields), Field{Name: "$l", Type: types.Boolean()}, Field{Name: "$r", Type: types.Boolean()})}
	cnt, err := b.Funcs.LookupAggregate("COUNT", nil, false)
	if err != nil {
		return nil, err
	}
	keys := make([]int, n)
	for i := range keys {
		keys[i] = i
	}
	aggFields := append(slices.Clone(fields), Field{Name: "$cl", Type: cnt.Result}, Field{Name: "$cr", Type: cnt.Result})
	agg := &Aggregate{Input: u, Keys: keys, Aggs: []AggCall{{Agg: cnt, Filter: n, Name: "$cl"}, {Agg: cnt, Filter: n + 1, Name: "$cr"}}, fields: aggFields}
	cl := &InputRef{Index: n, T: cnt.Result, Name: "$cl"}
	cr := &InputRef{Index: n + 1, T: cnt.Result, Name: "$cr"}
	zero := &Literal{Value: int64(0), T: types.BigInt().NotNull()}
	var cond, times Expr
	if q.Op == parser.Intersect {
		lp, err := b.call(q, ">", cl, zero)
		if err != nil {
			return nil, err
		}
		rp, err := b.call(q, ">", cr, zero)
		if err != nil {
			return nil, err
		}
		if cond, err = b.call(q, "AND", lp, rp); err != nil {
			return nil, err
		}
		if times, err = b.call(q, "LEAST", cl, cr); err != nil {
			return nil, err
		}
	} else {
		lp, err := b.call(q, ">", cl, zero)
		if err != nil {
			return nil, err
		}
		if q.All {
			if cond, err = b.call(q, ">", cl, cr); err != nil {
				return nil, err
			}
			if times, err = b.call(q, "-", cl, cr); err != nil {
				return nil, err
			}
		} else {
			rz, err := b.call(q, "=", cr, zero)
			if err != nil {
				return nil, err
			}
			if cond, err = b.call(q, "AND", lp, rz); err != nil {
				return nil, err
			}
		}
	}
	var out Plan = &Filter{Input: agg, Cond: cond}
	if q.All {
		exprs := make([]Expr, n+1)
		for i := range n {
			exprs[i] = &InputRef{Index: i, T: fields[i].Type, Name: fields[i].Name}
		}
		exprs[n] = times
		out = &Project{Input: out, Exprs: exprs, fields: append(slices.Clone(fields), Field{Name: "$times", Type: times.Type()})}
		return &Replicate{Input: out, fields: slices.Clone(fields)}, nil
	}
	exprs := make([]Expr, n)
	for i := range n {
		exprs[i] = &InputRef{Index: i, T: fields[i].Type, Name: fields[i].Name}
	}
	return &Project{Input: out, Exprs: exprs, fields: slices.Clone(fields)}, nil
}

// Replicate emits each input row as many times as its last column says,
// without that column.
type Replicate struct {
	Input  Plan
	fields []Field
}

func (p *Replicate) Fields() []Field { return p.fields }
func (p *Replicate) Inputs() []Plan  { return []Plan{p.Input} }
func (p *Replicate) describe() string {
	return "Replicate(times=[$" + strconv.Itoa(len(p.fields)) + "])"
}
