package planner

import (
	"slices"
	"strconv"
	"strings"

	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
)

// Subqueries are planned as joins: [NOT] EXISTS and IN (subquery) in WHERE
// become semi and anti joins, and a scalar subquery becomes a column that
// a left join adds. A subquery may be correlated by equalities between its
// columns and the outer query's (e2.dept = e.dept) in its WHERE: those
// become the join's keys (and, for a scalar subquery, its GROUP BY).

// correlation is a subquery with its correlating equalities taken out.
type correlation struct {
	sel   *parser.Select // the subquery without the correlating conjuncts
	inner []parser.Expr  // its side of each equality
	outer []parser.Expr  // the outer query's side
	// residual holds the other conditions between the two (b.v > a.v):
	// a semi or anti join evaluates them on each pair.
	residual []parser.Expr
}

// splitAnd lists the conjuncts of an AND tree.
func splitAnd(e parser.Expr) []parser.Expr {
	if b, ok := e.(*parser.Binary); ok && b.Op == parser.OpAnd {
		return append(splitAnd(b.Left), splitAnd(b.Right)...)
	}
	return []parser.Expr{e}
}

func joinAnd(es []parser.Expr) parser.Expr {
	if len(es) == 0 {
		return nil
	}
	out := es[0]
	for _, e := range es[1:] {
		out = &parser.Binary{Op: parser.OpAnd, Left: out, Right: e}
	}
	return out
}

// idents lists the names an expression reads (not inside subqueries).
func idents(e parser.Expr) []*parser.Ident {
	var out []*parser.Ident
	var walk func(e parser.Expr)
	walk = func(e parser.Expr) {
		if id, ok := e.(*parser.Ident); ok {
			out = append(out, id)
			return
		}
		forChildren(e, walk)
	}
	walk(e)
	return out
}

// resolvesIn reports whether every name of e resolves in sc.
func resolvesIn(e parser.Expr, sc *scope) bool {
	for _, id := range idents(e) {
		if _, err := sc.lookup(id); err != nil {
			if len(id.Parts) < 2 {
				return false
			}
			if _, err := sc.lookup(&parser.Ident{Parts: id.Parts[:len(id.Parts)-1]}); err != nil {
				return false
			}
		}
	}
	return true
}

// correlate finds the correlating equalities of a subquery against the
// outer scope.
func (b *binder) correlate(q parser.QueryExpr, outer *scope) (*correlation, error) {
	sel, ok := q.(*parser.Select)
	if !ok || sel.From == nil {
		return &correlation{}, nil
	}
	from, err := (&binder{Planner: b.Planner, ctes: b.ctes}).from(sel.From)
	if err != nil {
		return nil, err
	}
	inner := &scope{fields: from.Fields()}
	c := &correlation{}
	var rest []parser.Expr
	if sel.Where != nil {
		for _, cj := range splitAnd(sel.Where) {
			if resolvesIn(cj, inner) {
				rest = append(rest, cj)
				continue
			}
			eq, ok := cj.(*parser.Binary)
			if ok && eq.Op == parser.OpEq {
				switch {
				case resolvesIn(eq.Left, inner) && resolvesIn(eq.Right, outer):
					c.inner, c.outer = append(c.inner, eq.Left), append(c.outer, eq.Right)
					continue
				case resolvesIn(eq.Right, inner) && resolvesIn(eq.Left, outer):
					c.inner, c.outer = append(c.inner, eq.Right), append(c.outer, eq.Left)
					continue
				}
			}
			both := &scope{fields: append(slices.Clone(outer.fields), inner.fields...)}
			if !resolvesIn(cj, both) {
				return nil, errAt(cj, "this condition of a correlated subquery names columns that are not in the subquery or the outer query, or that are ambiguous (qualify them)")
			}
			c.residual = append(c.residual, cj)
		}
	}
	if len(c.inner) == 0 && len(c.residual) == 0 {
		return &correlation{}, nil
	}
	cp := *sel
	cp.Where = joinAnd(rest)
	c.sel = &cp
	return c, nil
}

// keyItems are the select items that expose a correlation's inner keys.
func (c *correlation) keyItems() []*parser.SelectItem {
	var out []*parser.SelectItem
	for i, e := range c.inner {
		out = append(out, &parser.SelectItem{Expr: e, Alias: "$ck" + strconv.Itoa(i)})
	}
	return out
}

// semiJoin plans WHERE [NOT] EXISTS (q) or x [NOT] IN (q) as a semi or anti
// join of in with the subquery.
func (b *binder) semiJoin(in Plan, sc *scope, n parser.Node, q parser.QueryExpr, needle parser.Expr, anti bool) (Plan, error) {
	c, err := b.correlate(q, sc)
	if err != nil {
		return nil, err
	}
	defer b.within(sc)()
	var sub Plan
	if c.sel != nil {
		body := *c.sel
		// The correlating conditions move out of the subquery into the
		// join, which is right only for rows: over an aggregation they
		// would change what is aggregated (and EXISTS of an aggregate
		// without GROUP BY is always true).
		if len(body.GroupBy) > 0 || body.Having != nil || slices.ContainsFunc(body.Items, func(it *parser.SelectItem) bool { return len(b.aggregatesIn(it.Expr)) > 0 }) {
			return nil, errAt(n, "a correlated IN or EXISTS subquery that aggregates (GROUP BY, HAVING or an aggregate function) is not supported")
		}
		items := c.keyItems()
		if needle != nil {
			if len(body.Items) != 1 {
				return nil, errAt(n, "the subquery of IN must return one column")
			}
			items = append([]*parser.SelectItem{body.Items[0]}, items...)
		}
		if len(c.residual) > 0 {
			// The residual conditions read the subquery's columns.
			items = append(items, &parser.SelectItem{Expr: &parser.Star{}})
		}
		body.Items = items
		body.Distinct = false
		if sub, err = b.query(&body); err != nil {
			return nil, err
		}
	} else if sub, err = b.query(q); err != nil {
		return nil, err
	}
	lf, rf := in.Fields(), sub.Fields()
	j := &Join{Left: in, Right: sub, Type: "SEMI", fields: slices.Clone(lf)}
	if anti {
		j.Type = "ANTI"
	}
	// The keys: the IN needle against the subquery's first column, the
	// correlations against the exposed inner keys.
	var outerKeys []parser.Expr
	first := 0
	if needle != nil {
		if len(rf) < 1 || c.sel == nil && len(rf) != 1 {
			return nil, errAt(n, "the subquery of IN must return one column, not %d", len(rf))
		}
		outerKeys = append(outerKeys, needle)
		first = 0
	} else {
		first = -1
	}
	outerKeys = append(outerKeys, c.outer...)
	// Keys that are expressions are computed by a projection of the
	// outer input first.
	exprs := make([]Expr, len(lf))
	fields := slices.Clone(lf)
	for i, f := range lf {
		exprs[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
	}
	for i, k := range outerKeys {
		e, err := b.expr(k, sc)
		if err != nil {
			return nil, err
		}
		li := -1
		if r, ok := e.(*InputRef); ok {
			li = r.Index
		} else {
			li = len(exprs)
			exprs = append(exprs, e)
			fields = append(fields, Field{Name: "$sk" + strconv.Itoa(i), Type: e.Type()})
		}
		ri := i
		if first < 0 {
			ri = i // no needle: the subquery exposes only the keys
		}
		if !types.Comparable(fields[li].Type, rf[ri].Type) {
			return nil, errAt(n, "cannot compare %s with %s", fields[li].Type, rf[ri].Type)
		}
		j.LeftKeys, j.RightKeys = append(j.LeftKeys, li), append(j.RightKeys, ri)
	}
	if len(c.residual) > 0 {
		res, err := b.expr(joinAnd(c.residual), &scope{fields: append(slices.Clone(fields), rf...)})
		if err != nil {
			return nil, err
		}
		j.Residual = res
	}
	if len(exprs) > len(lf) {
		j.Left = &Project{Input: in, Exprs: exprs, fields: fields}
	}
	markWindowJoin(j)
	if len(exprs) > len(lf) {
		j.Left = &Project{Input: in, Exprs: exprs, fields: fields}
		j.fields = fields
		// Drop the computed keys again.
		keep := make([]Expr, len(lf))
		for i, f := range lf {
			keep[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
		}
		return &Project{Input: j, Exprs: keep, fields: slices.Clone(lf)}, nil
	}
	return j, nil
}

// notIn plans x NOT IN (uncorrelated q) with SQL's NULL semantics: true
// when the subquery is empty, and otherwise only when x is not NULL, the
// subquery holds no NULL, and x is not among its values.
func (b *binder) notIn(in Plan, sc *scope, n *parser.In) (Plan, error) {
	anti, err := b.semiJoin(in, sc, n, n.Query, n.Expr, true)
	if err != nil {
		return nil, err
	}
	pop := b.within(sc)
	sub, err := b.query(n.Query)
	pop()
	if err != nil {
		return nil, err
	}
	sf := sub.Fields()
	if len(sf) != 1 {
		return nil, errAt(n, "the subquery of NOT IN must return one column, not %d", len(sf))
	}
	cnt, err := b.Funcs.LookupAggregate("COUNT", nil, false)
	if err != nil {
		return nil, err
	}
	cntCol, err := b.Funcs.LookupAggregate("COUNT", []types.DataType{sf[0].Type}, false)
	if err != nil {
		return nil, err
	}
	stats := &Aggregate{Input: sub, Aggs: []AggCall{{Agg: cnt, Filter: -1, Name: "$c"}, {Agg: cntCol, Args: []int{0}, Filter: -1, Name: "$cy"}},
		fields: []Field{{Name: "$c", Type: cnt.Result}, {Name: "$cy", Type: cntCol.Result}}}
	af := anti.Fields()
	joined := &Join{Left: anti, Right: stats, Type: "INNER", fields: append(slices.Clone(af), stats.fields...)}
	// c = 0 OR (x IS NOT NULL AND cy = c)
	jsc := &scope{fields: joined.fields}
	x, err := b.expr(n.Expr, &scope{fields: af})
	if err != nil {
		return nil, err
	}
	c := &InputRef{Index: len(af), T: cnt.Result, Name: "$c"}
	cy := &InputRef{Index: len(af) + 1, T: cntCol.Result, Name: "$cy"}
	zero := &Literal{Value: int64(0), T: types.BigInt().NotNull()}
	empty, err := b.call(n, "=", c, zero)
	if err != nil {
		return nil, err
	}
	notNull, err := b.call(n, "IS NOT NULL", x)
	if err != nil {
		return nil, err
	}
	noNulls, err := b.call(n, "=", cy, c)
	if err != nil {
		return nil, err
	}
	both, err := b.call(n, "AND", notNull, noNulls)
	if err != nil {
		return nil, err
	}
	cond, err := b.call(n, "OR", empty, both)
	if err != nil {
		return nil, err
	}
	_ = jsc
	keep := make([]Expr, len(af))
	for i, f := range af {
		keep[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
	}
	return &Project{Input: &Filter{Input: joined, Cond: cond}, Exprs: keep, fields: slices.Clone(af)}, nil
}

// scalarSubqueries adds a column for every scalar subquery of e to in,
// by a left join, and returns the new input with a scope that resolves
// each subquery to its column.
func (b *binder) scalarSubqueries(in Plan, sc *scope, es ...parser.Expr) (Plan, *scope, error) {
	var subs []*parser.Subquery
	var walk func(e parser.Expr)
	walk = func(e parser.Expr) {
		if e == nil {
			return
		}
		if s, ok := e.(*parser.Subquery); ok {
			subs = append(subs, s)
			return
		}
		forChildren(e, walk)
	}
	for _, e := range es {
		walk(e)
	}
	if len(subs) == 0 {
		return in, sc, nil
	}
	out := &scope{fields: sc.fields, agg: sc.agg, over: sc.over, subq: map[*parser.Subquery]Expr{}}
	for k, v := range sc.subq {
		out.subq[k] = v
	}
	defer b.within(sc)()
	for _, s := range subs {
		c, err := b.correlate(s.Query, out)
		if err != nil {
			return nil, nil, err
		}
		lf := in.Fields()
		var sub Plan
		isCount := false
		if len(c.residual) > 0 {
			return nil, nil, errAt(c.residual[0], "a correlated scalar subquery supports only equalities with the outer query")
		}
		if c.sel != nil {
			body := *c.sel
			if len(body.Items) != 1 || len(b.aggregatesIn(body.Items[0].Expr)) == 0 || len(body.GroupBy) > 0 {
				return nil, nil, errAt(s, "a correlated scalar subquery must select one aggregate, without GROUP BY")
			}
			if f, ok := body.Items[0].Expr.(*parser.FuncCall); ok && strings.EqualFold(f.Name[len(f.Name)-1], "COUNT") {
				isCount = true
			}
			body.Items = append(c.keyItems(), body.Items[0])
			body.GroupBy = slices.Clone(c.inner)
			if sub, err = b.query(&body); err != nil {
				return nil, nil, err
			}
		} else {
			if sub, err = b.query(s.Query); err != nil {
				return nil, nil, err
			}
			if len(sub.Fields()) != 1 {
				return nil, nil, errAt(s, "a scalar subquery must return one column, not %d", len(sub.Fields()))
			}
			sub = &SingleRow{Input: sub}
		}
		rf := sub.Fields()
		fields := append(slices.Clone(lf), rf...)
		for i := len(lf); i < len(fields); i++ {
			fields[i].Type = fields[i].Type.Nullable()
			fields[i].Name = "$sq" + strconv.Itoa(i)
			fields[i].Table = ""
		}
		j := &Join{Left: in, Right: sub, Type: "LEFT", fields: fields}
		for i, k := range c.outer {
			e, err := b.expr(k, out)
			if err != nil {
				return nil, nil, err
			}
			r, ok := e.(*InputRef)
			if !ok {
				return nil, nil, errAt(k, "a correlation of a scalar subquery must compare plain columns")
			}
			j.LeftKeys, j.RightKeys = append(j.LeftKeys, r.Index), append(j.RightKeys, i)
		}
		in = j
		col := len(fields) - 1
		var ref Expr = &InputRef{Index: col, T: fields[col].Type, Name: fields[col].Name}
		if isCount {
			// COUNT over no rows is 0, not the NULL the left join gives.
			z := &Literal{Value: int64(0), T: types.BigInt().NotNull()}
			if ref, err = b.call(s, "COALESCE", ref, castTo(z, fields[col].Type)); err != nil {
				return nil, nil, err
			}
		}
		out.fields = fields
		out.subq[s] = ref
	}
	return in, out, nil
}

// SingleRow passes its input on and fails the job if it holds more than
// one row: the value of a scalar subquery.
type SingleRow struct{ Input Plan }

func (p *SingleRow) Fields() []Field  { return p.Input.Fields() }
func (p *SingleRow) Inputs() []Plan   { return []Plan{p.Input} }
func (p *SingleRow) describe() string { return "SingleRow" }
