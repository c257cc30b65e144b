package planner

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
)

// Planner turns parsed queries into logical plans against a catalog.
type Planner struct {
	Catalog *catalog.Catalog
	Funcs   *functions.Registry
	// Ctx is the session's evaluation context (time zone, statement time)
	// used for constant folding.
	Ctx *functions.Context
}

// Error is a planning error at a position of the statement.
type Error struct {
	Pos parser.Pos
	Msg string
}

func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Pos.Line, e.Pos.Column, e.Msg)
}

func errAt(n parser.Node, format string, args ...any) error {
	var pos parser.Pos
	if n != nil {
		pos = n.Pos()
	}
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// binder holds the state of planning one statement.
type binder struct {
	*Planner
	ctes map[string]Plan
	// outer holds the scopes of the queries that enclose the subquery
	// being planned, innermost last: a name that resolves only there is a
	// correlation in a place weir cannot plan, and is refused as such
	// rather than as a column that does not exist.
	outer []*scope
}

// within plans a subquery of the query of scope sc: pop undoes it.
func (b *binder) within(sc *scope) (pop func()) {
	b.outer = append(b.outer, sc)
	return func() { b.outer = b.outer[:len(b.outer)-1] }
}

// outerRef is the error for a name that the current scope lacks: if an
// enclosing query has it, the message says where correlation works.
func (b *binder) outerRef(id *parser.Ident, err error) error {
	for _, sc := range b.outer {
		if _, lerr := sc.lookup(id); lerr == nil {
			return errAt(id, "'%s' is a column of the enclosing query, which a subquery can read only in the conditions of its WHERE (for a scalar subquery: equalities), not in its SELECT list, GROUP BY or HAVING, in a nested subquery, in a set operation, or under NOT IN", strings.Join(id.Parts, "."))
		}
	}
	return err
}

// PlanQuery plans a query.
func (p *Planner) PlanQuery(q parser.QueryExpr) (Plan, error) {
	b := &binder{Planner: p, ctes: map[string]Plan{}}
	plan, err := b.query(q)
	if err != nil {
		return nil, err
	}
	return optimize(plan), nil
}

func (b *binder) query(q parser.QueryExpr) (Plan, error) {
	switch q := q.(type) {
	case *parser.Query:
		saved := b.ctes
		if len(q.With) > 0 {
			b.ctes = make(map[string]Plan, len(saved)+len(q.With))
			for k, v := range saved {
				b.ctes[k] = v
			}
			for _, c := range q.With {
				p, err := b.query(c.Query)
				if err != nil {
					return nil, err
				}
				if len(c.Columns) > 0 {
					if p, err = renameColumns(p, c.Columns, c); err != nil {
						return nil, err
					}
				}
				b.ctes[c.Name] = p
			}
		}
		defer func() { b.ctes = saved }()
		// ORDER BY may name select aliases or columns the select list
		// dropped, so a Select body binds its ORDER BY itself.
		if sel, ok := q.Body.(*parser.Select); ok && len(q.OrderBy) > 0 {
			return b.selectBlock(sel, q)
		}
		p, err := b.query(q.Body)
		if err != nil {
			return nil, err
		}
		return b.orderLimit(p, q, nil)
	case *parser.Select:
		return b.selectBlock(q, nil)
	case *parser.SetOp:
		l, err := b.query(q.Left)
		if err != nil {
			return nil, err
		}
		r, err := b.query(q.Right)
		if err != nil {
			return nil, err
		}
		if q.Op != parser.Union {
			return b.intersectExcept(q, l, r)
		}
		u, err := union(q, l, r)
		if err != nil {
			return nil, err
		}
		if q.All {
			return u, nil
		}
		return distinct(u), nil
	case *parser.Values:
		return b.values(q)
	}
	return nil, errAt(q, "unsupported query %T", q)
}

func union(n parser.Node, l, r Plan) (Plan, error) {
	lf, rf := l.Fields(), r.Fields()
	if len(lf) != len(rf) {
		return nil, errAt(n, "UNION: the inputs have %d and %d columns", len(lf), len(rf))
	}
	fields := make([]Field, len(lf))
	lc, rc := make([]Expr, len(lf)), make([]Expr, len(lf))
	castL, castR := false, false
	for i := range lf {
		t, ok := types.LeastRestrictive(lf[i].Type, rf[i].Type)
		if !ok {
			return nil, errAt(n, "UNION: column %d has types %s and %s, which have no common type", i+1, lf[i].Type, rf[i].Type)
		}
		fields[i] = Field{Name: lf[i].Name, Type: t}
		lc[i], rc[i] = castTo(&InputRef{Index: i, T: lf[i].Type, Name: lf[i].Name}, t), castTo(&InputRef{Index: i, T: rf[i].Type, Name: rf[i].Name}, t)
		castL = castL || !lf[i].Type.Equal(t)
		castR = castR || !rf[i].Type.Equal(t)
	}
	if castL {
		l = &Project{Input: l, Exprs: lc, fields: fields}
	}
	if castR {
		r = &Project{Input: r, Exprs: rc, fields: fields}
	}
	ins := []Plan{}
	for _, in := range []Plan{l, r} {
		if u, ok := in.(*Union); ok {
			ins = append(ins, u.Ins...)
		} else {
			ins = append(ins, in)
		}
	}
	return &Union{Ins: ins, fields: fields}, nil
}

func castTo(e Expr, t types.DataType) Expr {
	if e.Type().Equal(t) {
		return e
	}
	return &CastExpr{Expr: e, T: t}
}

// distinct groups by every column.
func distinct(p Plan) Plan {
	fs := p.Fields()
	keys := make([]int, len(fs))
	out := make([]Field, len(fs))
	for i := range fs {
		keys[i] = i
		out[i] = Field{Name: fs[i].Name, Type: fs[i].Type}
	}
	return &Aggregate{Input: p, Keys: keys, fields: out}
}

func renameColumns(p Plan, cols []string, n parser.Node) (Plan, error) {
	fs := p.Fields()
	if len(cols) != len(fs) {
		return nil, errAt(n, "%d column names for %d columns", len(cols), len(fs))
	}
	exprs := make([]Expr, len(fs))
	out := make([]Field, len(fs))
	for i, f := range fs {
		exprs[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
		out[i] = Field{Name: cols[i], Type: f.Type}
	}
	return &Project{Input: p, Exprs: exprs, fields: out}, nil
}

func (b *binder) values(q *parser.Values) (Plan, error) {
	if len(q.Rows) == 0 {
		return nil, errAt(q, "VALUES without rows")
	}
	rows := make([][]Expr, len(q.Rows))
	width := len(q.Rows[0])
	colTypes := make([][]types.DataType, width)
	for i, r := range q.Rows {
		if len(r) != width {
			return nil, errAt(q, "VALUES: row %d has %d values, row 1 has %d", i+1, len(r), width)
		}
		rows[i] = make([]Expr, width)
		for j, e := range r {
			x, err := b.expr(e, &scope{})
			if err != nil {
				return nil, err
			}
			rows[i][j] = x
			colTypes[j] = append(colTypes[j], x.Type())
		}
	}
	fields := make([]Field, width)
	for j := range fields {
		t, ok := types.LeastRestrictive(colTypes[j]...)
		if !ok {
			return nil, errAt(q, "VALUES: column %d has values of types without a common type", j+1)
		}
		fields[j] = Field{Name: "EXPR$" + strconv.Itoa(j), Type: t}
		for i := range rows {
			rows[i][j] = fold(castTo(rows[i][j], t), b.Ctx)
		}
	}
	return &Values{Rows: rows, fields: fields}, nil
}

// scope resolves column names against the fields of a plan.
type scope struct {
	fields []Field
	// agg, when set, maps grouped expressions and aggregate calls to the
	// columns of an aggregation's output.
	agg *aggScope
	// over maps window function calls (by SQL text) to the columns an
	// Over node added.
	over map[string]int
	// subq maps scalar subqueries to the expressions of their values.
	subq map[*parser.Subquery]Expr
}

func (s *scope) lookup(id *parser.Ident) (int, error) {
	parts := id.Parts
	match := func(table, col string) []int {
		var out []int
		for i, f := range s.fields {
			if f.Name == col && (table == "" || f.Table == table) {
				out = append(out, i)
			}
		}
		return out
	}
	var found []int
	if len(parts) == 1 {
		found = match("", parts[0])
	} else {
		found = match(parts[len(parts)-2], parts[len(parts)-1])
		if len(found) == 0 && len(parts) == 2 {
			// t.f may also be field f of a ROW column t: the caller
			// tries that when this fails.
			return -1, errAt(id, "Column '%s' not found in any table", strings.Join(parts, "."))
		}
	}
	switch len(found) {
	case 0:
		return -1, errAt(id, "Column '%s' not found in any table", strings.Join(parts, "."))
	case 1:
		return found[0], nil
	}
	return -1, errAt(id, "Column '%s' is ambiguous", strings.Join(parts, "."))
}

// from plans a FROM item.
func (b *binder) from(t parser.TableRef) (Plan, error) {
	switch t := t.(type) {
	case *parser.TableName:
		if t.SystemTime != nil {
			return nil, errAt(t, "FOR SYSTEM_TIME AS OF is not supported yet")
		}
		p, err := b.tableByName(t.Name)
		if err != nil {
			return nil, err
		}
		alias := t.Name.Parts[len(t.Name.Parts)-1]
		if t.Alias != nil {
			alias = t.Alias.Name
			if len(t.Alias.Columns) > 0 {
				if p, err = renameColumns(p, t.Alias.Columns, t); err != nil {
					return nil, err
				}
			}
		}
		return qualify(p, alias), nil
	case *parser.DerivedTable:
		if t.Lateral {
			return nil, errAt(t, "LATERAL subqueries are not supported yet")
		}
		p, err := b.query(t.Query)
		if err != nil {
			return nil, err
		}
		if t.Alias != nil {
			if len(t.Alias.Columns) > 0 {
				if p, err = renameColumns(p, t.Alias.Columns, t); err != nil {
					return nil, err
				}
			}
			return qualify(p, t.Alias.Name), nil
		}
		return p, nil
	case *parser.Join:
		return b.join(t)
	case *parser.WindowTVF:
		return b.windowTVF(t)
	case *parser.MatchRecognize:
		return b.matchRecognize(t)
	case *parser.TableFunc, *parser.Unnest:
		// A table function alone in FROM: called once, over one empty row.
		return b.lateral(&Values{Rows: [][]Expr{{}}}, t, nil)
	}
	return nil, errAt(t, "%T in FROM is not supported yet", t)
}

// qualify gives a plan's columns a table name for t.col references.
func qualify(p Plan, table string) Plan {
	fs := p.Fields()
	out := make([]Field, len(fs))
	exprs := make([]Expr, len(fs))
	for i, f := range fs {
		out[i] = Field{Name: f.Name, Type: f.Type, Table: table}
		exprs[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
	}
	switch q := p.(type) {
	case *Scan:
		c := *q
		c.fields = out
		return &c
	case *Project:
		c := *q
		c.fields = out
		return &c
	}
	return &Project{Input: p, Exprs: exprs, fields: out}
}

func (b *binder) tableByName(id *parser.Ident) (Plan, error) {
	if len(id.Parts) == 1 {
		if p, ok := b.ctes[id.Parts[0]]; ok {
			return p, nil
		}
	}
	path, err := b.Catalog.Resolve(id.Parts)
	if err != nil {
		return nil, errAt(id, "%v", err)
	}
	if v, err := b.Catalog.View(path); err == nil {
		q, err := parser.ParseStatement(v.Query)
		if err != nil {
			return nil, errAt(id, "view %s: %v", path, err)
		}
		qs, ok := q.(*parser.QueryStatement)
		if !ok {
			return nil, errAt(id, "view %s does not hold a query", path)
		}
		p, err := (&binder{Planner: b.Planner, ctes: map[string]Plan{}}).query(qs.Query)
		if err != nil {
			return nil, errAt(id, "view %s: %v", path, err)
		}
		if len(v.Columns) > 0 {
			return renameColumns(p, v.Columns, id)
		}
		return p, nil
	}
	t, err := b.Catalog.Table(path)
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, errAt(id, "Object '%s' not found", strings.Join(id.Parts, "."))
		}
		return nil, errAt(id, "%v", err)
	}
	return b.scan(t, id)
}

// scan plans a table: its columns in declared order, computed columns
// evaluated over the others, and the watermark.
func (b *binder) scan(t *catalog.Table, n parser.Node) (Plan, error) {
	fields := make([]Field, len(t.Columns))
	for i, c := range t.Columns {
		fields[i] = Field{Name: c.Name, Type: c.Type, Table: t.Path.Name}
	}
	s := &Scan{Table: t, fields: fields, Rowtime: -1}
	for i, c := range t.Columns {
		if c.Kind != catalog.Computed {
			continue
		}
		pe, err := parser.ParseExpr(c.Expr)
		if err != nil {
			return nil, errAt(n, "computed column %s of %s: %v", c.Name, t.Path, err)
		}
		e, err := b.expr(pe, &scope{fields: fields})
		if err != nil {
			return nil, errAt(n, "computed column %s of %s: %v", c.Name, t.Path, err)
		}
		if s.Computed == nil {
			s.Computed = make([]Expr, len(fields))
		}
		s.Computed[i] = e
		fields[i].Type = e.Type()
	}
	if t.Watermark != nil {
		col := t.Column(t.Watermark.Column)
		if col < 0 {
			return nil, errAt(n, "watermark of %s: no column %s", t.Path, t.Watermark.Column)
		}
		pe, err := parser.ParseExpr(t.Watermark.Expr)
		if err != nil {
			return nil, errAt(n, "watermark of %s: %v", t.Path, err)
		}
		wm, err := b.expr(pe, &scope{fields: fields})
		if err != nil {
			return nil, errAt(n, "watermark of %s: %v", t.Path, err)
		}
		if k := wm.Type().Kind; k != types.KindTimestamp && k != types.KindTimestampLTZ {
			return nil, errAt(n, "watermark of %s: the expression has type %s, want TIMESTAMP(3) or TIMESTAMP_LTZ(3)", t.Path, wm.Type())
		}
		s.Rowtime, s.Watermark = col, wm
		// The rowtime column is a time attribute from here on.
		fields[col].Type = fields[col].Type.WithTimeAttr(types.TimeAttrRowtime)
	}
	return s, nil
}

func retype(e Expr, t types.DataType) Expr {
	if r, ok := e.(*InputRef); ok {
		c := *r
		c.T = t
		return &c
	}
	return &CastExpr{Expr: e, T: t}
}

func (b *binder) join(j *parser.Join) (Plan, error) {
	if j.Natural {
		return nil, errAt(j, "NATURAL JOIN is not supported yet")
	}
	l, err := b.from(j.Left)
	if err != nil {
		return nil, err
	}
	// t FOR SYSTEM_TIME AS OF o.proctime: a processing-time temporal
	// join, which joins each left row with the right table as it is when
	// the row arrives.
	right := j.Right
	temporal := false
	var eventTime Expr // FOR SYSTEM_TIME AS OF a rowtime: see temporaljoin.go
	if tn, ok := right.(*parser.TableName); ok && tn.SystemTime != nil {
		at, err := b.expr(tn.SystemTime, &scope{fields: l.Fields()})
		if err != nil {
			return nil, err
		}
		switch at.Type().TimeAttr {
		case types.TimeAttrProctime:
		case types.TimeAttrRowtime:
			eventTime = at
		default:
			return nil, errAt(tn.SystemTime, "FOR SYSTEM_TIME AS OF needs a time attribute of the left table, not %s", at.Type())
		}
		if j.Type != parser.InnerJoin && j.Type != parser.LeftJoin {
			return nil, errAt(j, "a temporal join is INNER or LEFT, not %s", j.Type)
		}
		c := *tn
		c.SystemTime = nil
		right, temporal = &c, true
	}
	switch right.(type) {
	case *parser.TableFunc, *parser.Unnest:
		return b.lateral(l, right, j)
	}
	r, err := b.from(right)
	if err != nil {
		return nil, err
	}
	lf, rf := l.Fields(), r.Fields()
	fields := append(slices.Clone(lf), rf...)
	typ := string(j.Type)
	if typ == "," || typ == "CROSS" {
		typ = "INNER"
	}
	jp := &Join{Left: l, Right: r, Type: typ, Temporal: temporal}
	sc := &scope{fields: fields}
	var cond Expr
	switch {
	case j.On != nil:
		if cond, err = b.expr(j.On, sc); err != nil {
			return nil, err
		}
	case len(j.Using) > 0:
		for _, col := range j.Using {
			li := slices.IndexFunc(lf, func(f Field) bool { return f.Name == col })
			ri := slices.IndexFunc(rf, func(f Field) bool { return f.Name == col })
			if li < 0 || ri < 0 {
				return nil, errAt(j, "USING column %s is not in both inputs", col)
			}
			jp.LeftKeys, jp.RightKeys = append(jp.LeftKeys, li), append(jp.RightKeys, ri)
		}
	}
	for i := range fields {
		switch typ {
		case "LEFT":
			if i >= len(lf) {
				fields[i].Type = fields[i].Type.Nullable()
			}
		case "RIGHT":
			if i < len(lf) {
				fields[i].Type = fields[i].Type.Nullable()
			}
		case "FULL":
			fields[i].Type = fields[i].Type.Nullable()
		}
		// A join's output is no longer in event-time order, but for an
		// event-time temporal join's left rows: they leave when the
		// watermark passes them.
		if eventTime == nil || i >= len(lf) {
			fields[i].Type.TimeAttr = types.TimeAttrNone
		}
	}
	jp.fields = fields
	var out Plan = jp
	if cond != nil {
		out = absorb(jp, conjuncts(cond), b.Funcs)
	}
	markWindowJoin(jp)
	if eventTime != nil {
		if err := versionedJoin(jp, eventTime, j.Right.(*parser.TableName).SystemTime, b.Funcs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// absorb adds conditions over a join's output to the join: an equality
// between an expression of the left input and one of the right becomes a
// key (an expression other than a column is computed by a projection of
// its input); for an inner join, a condition on one input alone filters
// that input first; the rest is the residual, checked per pair.
func absorb(j *Join, conds []Expr, reg *functions.Registry) Plan {
	lf, rf := j.Left.Fields(), j.Right.Fields()
	nl := len(lf)
	side := func(e Expr) int { // -1 left only, 1 right only, 0 both or none
		set := map[int]bool{}
		refs(e, set)
		l, r := false, false
		for i := range set {
			if i < nl {
				l = true
			} else {
				r = true
			}
		}
		switch {
		case l && !r:
			return -1
		case r && !l:
			return 1
		}
		return 0
	}
	shift := map[int]int{}
	for i := range nl + len(rf) {
		shift[i] = i - nl
	}
	var leftExtra, rightExtra []Expr
	var leftFilter, rightFilter, rest []Expr
	for _, c := range conds {
		if call, ok := c.(*Call); ok && call.Fn.Name == "=" && len(call.Args) == 2 {
			a, bb := call.Args[0], call.Args[1]
			if side(a) == 1 && side(bb) == -1 {
				a, bb = bb, a
			}
			if side(a) == -1 && side(bb) == 1 && types.Comparable(a.Type(), bb.Type()) {
				li := -1
				if r, ok := a.(*InputRef); ok {
					li = r.Index
				} else {
					li = nl + len(leftExtra)
					leftExtra = append(leftExtra, a)
				}
				rb := remap(bb, shift)
				ri := -1
				if r, ok := rb.(*InputRef); ok {
					ri = r.Index
				} else {
					ri = len(rf) + len(rightExtra)
					rightExtra = append(rightExtra, rb)
				}
				j.LeftKeys, j.RightKeys = append(j.LeftKeys, li), append(j.RightKeys, ri)
				continue
			}
		}
		if j.Type == "INNER" && !j.Temporal {
			switch side(c) {
			case -1:
				leftFilter = append(leftFilter, c)
				continue
			case 1:
				rightFilter = append(rightFilter, remap(c, shift))
				continue
			}
		}
		rest = append(rest, c)
	}
	if len(leftFilter) > 0 {
		j.Left = &Filter{Input: j.Left, Cond: and(reg, leftFilter)}
	}
	if len(rightFilter) > 0 {
		j.Right = &Filter{Input: j.Right, Cond: and(reg, rightFilter)}
	}
	if len(leftExtra) == 0 && len(rightExtra) == 0 {
		j.Residual = and(reg, append(conjunctsOf(j.Residual), rest...))
		return j
	}
	extend := func(in Plan, extra []Expr) Plan {
		fs := in.Fields()
		exprs := make([]Expr, len(fs), len(fs)+len(extra))
		out := slices.Clone(fs)
		for i, f := range fs {
			exprs[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
		}
		for i, e := range extra {
			exprs = append(exprs, e)
			out = append(out, Field{Name: "$jk" + strconv.Itoa(i), Type: e.Type()})
		}
		return &Project{Input: in, Exprs: exprs, fields: out}
	}
	if len(leftExtra) > 0 {
		j.Left = extend(j.Left, leftExtra)
	}
	if len(rightExtra) > 0 {
		j.Right = extend(j.Right, rightExtra)
	}
	// The join's columns: the extended inputs'; the residual reads the
	// right input's columns after the left's extra ones.
	orig := j.fields
	moved := map[int]int{}
	for i := range nl + len(rf) {
		if i < nl {
			moved[i] = i
		} else {
			moved[i] = i + len(leftExtra)
		}
	}
	var res []Expr
	for _, e := range append(conjunctsOf(j.Residual), rest...) {
		res = append(res, remap(e, moved))
	}
	j.Residual = and(reg, res)
	jf := slices.Clone(orig[:nl])
	for _, e := range leftExtra {
		jf = append(jf, Field{Name: "$jk", Type: e.Type()})
	}
	jf = append(jf, orig[nl:]...)
	for _, e := range rightExtra {
		jf = append(jf, Field{Name: "$jk", Type: e.Type()})
	}
	j.fields = jf
	keep := make([]Expr, len(orig))
	for i, f := range orig {
		keep[i] = &InputRef{Index: moved[i], T: jf[moved[i]].Type, Name: f.Name}
	}
	return &Project{Input: j, Exprs: keep, fields: orig}
}

func conjunctsOf(e Expr) []Expr {
	if e == nil {
		return nil
	}
	return conjuncts(e)
}

func conjuncts(e Expr) []Expr {
	if c, ok := e.(*Call); ok && c.Fn.Name == "AND" {
		var out []Expr
		for _, a := range c.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []Expr{e}
}

func and(reg *functions.Registry, es []Expr) Expr {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	ts := make([]types.DataType, len(es))
	for i, e := range es {
		ts[i] = e.Type()
	}
	fn, err := reg.Lookup("AND", ts)
	if err != nil {
		panic(err) // AND of booleans always resolves
	}
	return &Call{Fn: fn, Args: es}
}

func (b *binder) windowTVF(w *parser.WindowTVF) (Plan, error) {
	in, err := b.from(w.Data)
	if err != nil {
		return nil, err
	}
	return b.windowOver(w, in)
}

// windowOver applies a window TVF's windows to an input.
func (b *binder) windowOver(w *parser.WindowTVF, in Plan) (*WindowTVF, error) {
	var err error
	fs := in.Fields()
	tc := slices.IndexFunc(fs, func(f Field) bool { return f.Name == w.TimeCol })
	if tc < 0 {
		return nil, errAt(w, "DESCRIPTOR(%s): no such column", w.TimeCol)
	}
	if fs[tc].Type.TimeAttr == types.TimeAttrNone {
		return nil, errAt(w, "The window function requires the timecol is a time attribute type, but is %s", fs[tc].Type)
	}
	interval := func(e parser.Expr, what string) (int64, error) {
		if e == nil {
			return 0, nil
		}
		x, err := b.expr(e, &scope{})
		if err != nil {
			return 0, err
		}
		l, ok := fold(x, b.Ctx).(*Literal)
		if !ok || l.T.Kind != types.KindIntervalDayTime {
			return 0, errAt(e, "the %s of a window must be a constant day-time interval", what)
		}
		return int64(l.Value.(types.IntervalMillis)), nil
	}
	t := &WindowTVF{Input: in, Kind: string(w.Kind), TimeCol: tc, Proctime: fs[tc].Type.TimeAttr == types.TimeAttrProctime}
	if w.Kind == parser.Session {
		if t.Proctime {
			return nil, errAt(w, "SESSION windows over processing time are not supported yet")
		}
		if t.Gap, err = interval(w.Gap, "gap"); err != nil {
			return nil, err
		}
		if t.Gap <= 0 {
			return nil, errAt(w, "the session gap must be positive")
		}
		return b.windowFields(t, w.Alias, fs, tc), nil
	}
	if t.Size, err = interval(w.Size, "size"); err != nil {
		return nil, err
	}
	if t.Slide, err = interval(w.Slide, "slide"); err != nil {
		return nil, err
	}
	if t.Step, err = interval(w.Step, "step"); err != nil {
		return nil, err
	}
	if t.Offset, err = interval(w.Offset, "offset"); err != nil {
		return nil, err
	}
	switch {
	case t.Size <= 0:
		return nil, errAt(w, "the window size must be positive")
	case w.Kind == parser.Hop && (t.Slide <= 0 || t.Size%t.Slide != 0):
		return nil, errAt(w, "HOP: the size (%d ms) must be a positive multiple of the slide (%d ms)", t.Size, t.Slide)
	case w.Kind == parser.Cumulate && (t.Step <= 0 || t.Size%t.Step != 0):
		return nil, errAt(w, "CUMULATE: the max size (%d ms) must be a positive multiple of the step (%d ms)", t.Size, t.Step)
	}
	return b.windowFields(t, w.Alias, fs, tc), nil
}

// windowFields gives a window TVF its columns: the input's, then
// window_start, window_end and window_time.
func (b *binder) windowFields(t *WindowTVF, alias *parser.TableAlias, fs []Field, tc int) *WindowTVF {
	ts := types.TimestampType(3).NotNull()
	if fs[tc].Type.Kind == types.KindTimestampLTZ {
		ts = types.TimestampLTZType(3).NotNull()
	}
	if t.Kind == "SESSION" {
		// Empty until the session aggregation fills them in.
		ts = ts.Nullable()
	}
	out := make([]Field, len(fs), len(fs)+3)
	for i, f := range fs {
		out[i] = f
		if i != tc {
			continue
		}
		// Only window_time stays a time attribute, as in Flink.
		out[i].Type.TimeAttr = types.TimeAttrNone
	}
	table := ""
	if alias != nil {
		table = alias.Name
	}
	out = append(out, Field{Name: "window_start", Type: ts, Table: table}, Field{Name: "window_end", Type: ts, Table: table},
		Field{Name: "window_time", Type: ts.WithTimeAttr(types.TimeAttrRowtime), Table: table})
	if table != "" {
		for i := range out {
			out[i].Table = table
		}
	}
	t.fields = out
	return t
}

// literal gives a parsed literal its value and type, as Flink types them:
// integers INT or BIGINT (DECIMAL beyond), 1.5 DECIMAL(2, 1), 1e3 DOUBLE,
// strings CHAR(n) NOT NULL.
func literal(l *parser.Literal) (*Literal, error) {
	switch l.Kind {
	case parser.IntegerLit:
		n, ok := new(big.Int).SetString(l.Text, 10)
		if !ok {
			return nil, errAt(l, "bad integer %s", l.Text)
		}
		switch {
		case n.IsInt64() && n.Int64() >= -1<<31 && n.Int64() < 1<<31:
			return &Literal{Value: int32(n.Int64()), T: types.Int().NotNull()}, nil
		case n.IsInt64():
			return &Literal{Value: n.Int64(), T: types.BigInt().NotNull()}, nil
		}
		fallthrough
	case parser.DecimalLit:
		d, err := types.ParseDecimal(l.Text)
		if err != nil {
			return nil, errAt(l, "%v", err)
		}
		digits := strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(l.Text, "-"), ".", ""), "0")
		scale := 0
		if i := strings.IndexByte(l.Text, '.'); i >= 0 {
			scale = len(l.Text) - i - 1
		}
		prec := max(len(digits), scale, 1)
		if prec > 38 {
			return nil, errAt(l, "numeric literal %s has more than 38 digits", l.Text)
		}
		return &Literal{Value: d, T: types.DecimalType(prec, scale).NotNull()}, nil
	case parser.ApproxLit:
		f, err := strconv.ParseFloat(l.Text, 64)
		if err != nil {
			return nil, errAt(l, "bad number %s", l.Text)
		}
		return &Literal{Value: f, T: types.Double().NotNull()}, nil
	case parser.StringLit:
		// The empty literal is CHAR(0), as in Flink (CharType.ofEmptyLiteral):
		// typed CHAR(1), it came out of a CASE or COALESCE with a NULL as
		// the padded ' '.
		return &Literal{Value: l.Text, T: types.Char(len([]rune(l.Text))).NotNull()}, nil
	case parser.BinaryLit:
		var bs []byte
		for i := 0; i+1 < len(l.Text); i += 2 {
			v, err := strconv.ParseUint(l.Text[i:i+2], 16, 8)
			if err != nil {
				return nil, errAt(l, "bad binary literal X'%s'", l.Text)
			}
			bs = append(bs, byte(v))
		}
		return &Literal{Value: bs, T: types.Binary(max(len(bs), 1)).NotNull()}, nil
	case parser.BooleanLit:
		return &Literal{Value: l.Text == "TRUE", T: types.Boolean().NotNull()}, nil
	case parser.UnknownLit:
		return &Literal{T: types.Boolean()}, nil
	case parser.NullLit:
		return &Literal{T: types.Null()}, nil
	case parser.DateLit:
		d, err := types.ParseDate(l.Text)
		if err != nil {
			return nil, errAt(l, "DATE '%s': %v", l.Text, err)
		}
		return &Literal{Value: d, T: types.DateType().NotNull()}, nil
	case parser.TimeLit:
		p := fracDigits(l.Text)
		t, err := types.ParseTime(l.Text, p)
		if err != nil {
			return nil, errAt(l, "TIME '%s': %v", l.Text, err)
		}
		return &Literal{Value: t, T: types.TimeType(p).NotNull()}, nil
	case parser.TimestampLit, parser.TimestampLTZLit:
		p := fracDigits(l.Text)
		ts, err := types.ParseTimestamp(l.Text, p)
		if err != nil {
			return nil, errAt(l, "TIMESTAMP '%s': %v", l.Text, err)
		}
		if l.Kind == parser.TimestampLTZLit {
			return &Literal{Value: types.TimestampLTZ(ts), T: types.TimestampLTZType(p).NotNull()}, nil
		}
		return &Literal{Value: ts, T: types.TimestampType(p).NotNull()}, nil
	}
	return nil, errAt(l, "unsupported literal %s", l.Kind)
}

func fracDigits(s string) int {
	i := strings.LastIndexByte(s, '.')
	if i < 0 || strings.ContainsAny(s[i:], " :-") {
		return 0
	}
	return len(s) - i - 1
}

// intervalLiteral computes an INTERVAL literal's value.
func intervalLiteral(l *parser.IntervalLiteral) (*Literal, error) {
	q := l.Qualifier
	t, err := catalog.IntervalType(q)
	if err != nil {
		return nil, errAt(l, "%v", err)
	}
	s := strings.TrimSpace(l.Value)
	neg := l.Negative
	if strings.HasPrefix(s, "-") {
		neg, s = !neg, s[1:]
	}
	sign := int64(1)
	if neg {
		sign = -1
	}
	bad := func() (*Literal, error) {
		return nil, errAt(l, "Illegal interval literal format '%s' for INTERVAL %s", l.Value, strings.TrimSuffix(string(q.Start)+" TO "+string(q.End), " TO "))
	}
	if t.Kind == types.KindIntervalYearMonth {
		var y, m int64
		var err1, err2 error
		switch {
		case q.Start == "YEAR" && q.End == "MONTH":
			ys, ms, ok := strings.Cut(s, "-")
			if !ok {
				return bad()
			}
			y, err1 = strconv.ParseInt(ys, 10, 64)
			m, err2 = strconv.ParseInt(ms, 10, 64)
		case q.Start == "YEAR":
			y, err1 = strconv.ParseInt(s, 10, 64)
		default:
			m, err1 = strconv.ParseInt(s, 10, 64)
		}
		if err1 != nil || err2 != nil {
			return bad()
		}
		return &Literal{Value: types.IntervalMonths(sign * (y*12 + m)), T: t.NotNull()}, nil
	}
	// Day-time: the fields from Start to End, separated by ' ' (after the
	// day) and ':' (between time fields), the seconds with a fraction.
	units := []string{"DAY", "HOUR", "MINUTE", "SECOND"}
	mult := []int64{86_400_000, 3_600_000, 60_000, 1000}
	from := slices.Index(units, string(q.Start))
	to := from
	if q.End != "" {
		to = slices.Index(units, string(q.End))
	}
	if from < 0 || to < from {
		return bad()
	}
	var parts []string
	rest := s
	if from == 0 && to > 0 {
		d, r, ok := strings.Cut(rest, " ")
		if !ok {
			return bad()
		}
		parts, rest = append(parts, d), r
	}
	if rest != "" || len(parts) == 0 {
		parts = append(parts, strings.Split(rest, ":")...)
	}
	if len(parts) != to-from+1 {
		return bad()
	}
	var ms int64
	for i, p := range parts {
		u := from + i
		if u == 3 {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f < 0 {
				return bad()
			}
			ms += int64(f*1000 + 0.5)
			continue
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return bad()
		}
		ms += v * mult[u]
	}
	return &Literal{Value: types.IntervalMillis(sign * ms), T: t.NotNull()}, nil
}
