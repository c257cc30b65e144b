package planner

import (
	"slices"
	"strconv"
	"strings"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
)

// aggScope maps the grouped expressions and aggregate calls of a SELECT
// (by their SQL text) to the columns of the aggregation's output.
type aggScope struct {
	keys map[string]int
	aggs map[string]int
	// input resolves column names for the error that says a column is
	// not grouped.
	input *scope
}

func (b *binder) selectBlock(sel *parser.Select, q *parser.Query) (Plan, error) {
	var in Plan
	if sel.From == nil {
		in = &Values{Rows: [][]Expr{{}}}
	} else {
		var err error
		if in, err = b.from(sel.From); err != nil {
			return nil, err
		}
	}
	inScope := &scope{fields: in.Fields()}
	if sel.Where != nil {
		// [NOT] EXISTS and [NOT] IN (subquery) conjuncts filter by joins;
		// scalar subqueries become columns; the rest is a filter.
		var rest []parser.Expr
		for _, cj := range splitAnd(sel.Where) {
			var err error
			switch x := cj.(type) {
			case *parser.Exists:
				in, err = b.semiJoin(in, inScope, x, x.Query, nil, false)
			case *parser.Unary:
				ex, ok := x.Expr.(*parser.Exists)
				if x.Op != parser.OpNot || !ok {
					rest = append(rest, cj)
					continue
				}
				in, err = b.semiJoin(in, inScope, ex, ex.Query, nil, true)
			case *parser.In:
				switch {
				case x.Query == nil:
					rest = append(rest, cj)
					continue
				case x.Not:
					in, err = b.notIn(in, inScope, x)
				default:
					in, err = b.semiJoin(in, inScope, x, x.Query, x.Expr, false)
				}
			default:
				rest = append(rest, cj)
				continue
			}
			if err != nil {
				return nil, err
			}
		}
		if len(rest) > 0 {
			where := joinAnd(rest)
			var sc *scope
			var err error
			if in, sc, err = b.scalarSubqueries(in, inScope, where); err != nil {
				return nil, err
			}
			cond, err := b.expr(where, sc)
			if err != nil {
				return nil, err
			}
			if k := cond.Type().Kind; k != types.KindBoolean && k != types.KindNull {
				return nil, errAt(sel.Where, "WHERE needs a BOOLEAN condition, not %s", cond.Type())
			}
			in = &Filter{Input: in, Cond: cond}
			if len(sc.fields) > len(inScope.fields) {
				// Drop the subqueries' columns again.
				keep := make([]Expr, len(inScope.fields))
				for i, f := range inScope.fields {
					keep[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
				}
				in = &Project{Input: in, Exprs: keep, fields: slices.Clone(inScope.fields)}
			}
		}
	}
	var aggCalls []*parser.FuncCall
	collect := func(e parser.Expr) { aggCalls = append(aggCalls, b.aggregatesIn(e)...) }
	for _, it := range sel.Items {
		collect(it.Expr)
	}
	if sel.Having != nil {
		collect(sel.Having)
	}
	if q != nil {
		for _, o := range q.OrderBy {
			collect(o.Expr)
		}
	}
	sc := inScope
	if len(sel.GroupBy) > 0 || len(aggCalls) > 0 {
		var err error
		if in, sc, err = b.aggregate(sel, in, inScope, aggCalls); err != nil {
			return nil, err
		}
		if sel.Having != nil {
			cond, err := b.expr(sel.Having, sc)
			if err != nil {
				return nil, err
			}
			in = &Filter{Input: in, Cond: cond}
		}
	} else if sel.Having != nil {
		return nil, errAt(sel.Having, "HAVING without GROUP BY or aggregates")
	}

	// Scalar subqueries of the select list become columns.
	if sc.agg == nil {
		var items []parser.Expr
		for _, it := range sel.Items {
			items = append(items, it.Expr)
		}
		var err error
		if in, sc, err = b.scalarSubqueries(in, sc, items...); err != nil {
			return nil, err
		}
	}

	// Window functions (OVER) are computed before the select list.
	var overCalls []*parser.FuncCall
	for _, it := range sel.Items {
		overCalls = append(overCalls, overCallsIn(it.Expr)...)
	}
	if len(overCalls) > 0 {
		var err error
		agg := sc.agg
		if in, sc, err = b.over(sel, in, sc, overCalls); err != nil {
			return nil, err
		}
		// The Over nodes keep their input's columns in place, so the
		// aggregation's columns resolve as before.
		sc.agg = agg
	}

	// The select list.
	var exprs []Expr
	var fields []Field
	for _, it := range sel.Items {
		if star, ok := it.Expr.(*parser.Star); ok {
			if sc.agg != nil {
				return nil, errAt(star, "* in an aggregating SELECT")
			}
			n := 0
			for i, f := range sc.fields {
				if len(star.Qualifier) > 0 && f.Table != star.Qualifier[len(star.Qualifier)-1] || strings.HasPrefix(f.Name, "$") {
					continue
				}
				exprs = append(exprs, &InputRef{Index: i, T: f.Type, Name: f.Name})
				fields = append(fields, Field{Name: f.Name, Type: f.Type, Table: f.Table})
				n++
			}
			if n == 0 {
				return nil, errAt(star, "no columns for %s.*", strings.Join(star.Qualifier, "."))
			}
			continue
		}
		e, err := b.expr(it.Expr, sc)
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, fold(e, b.Ctx))
		fields = append(fields, Field{Name: itemName(it, len(fields)), Type: e.Type()})
	}
	visible := len(exprs)

	// ORDER BY: a select alias or position, or an expression over the
	// input, carried as a hidden column until the sort is done.
	var keys []SortKey
	if q != nil {
		for _, o := range q.OrderBy {
			idx := -1
			if id, ok := o.Expr.(*parser.Ident); ok && len(id.Parts) == 1 {
				idx = slices.IndexFunc(fields[:visible], func(f Field) bool { return f.Name == id.Parts[0] })
			}
			if l, ok := o.Expr.(*parser.Literal); ok && l.Kind == parser.IntegerLit {
				n, _ := strconv.Atoi(l.Text)
				if n < 1 || n > visible {
					return nil, errAt(l, "ORDER BY position %d is not in the select list (1 to %d)", n, visible)
				}
				idx = n - 1
			}
			if idx < 0 {
				e, err := b.expr(o.Expr, sc)
				if err != nil {
					return nil, err
				}
				idx = len(exprs)
				exprs = append(exprs, e)
				fields = append(fields, Field{Name: "$order" + strconv.Itoa(idx), Type: e.Type()})
			}
			nullsFirst := !o.Desc // Flink: NULLs are smallest
			switch o.Nulls {
			case parser.NullsFirst:
				nullsFirst = true
			case parser.NullsLast:
				nullsFirst = false
			}
			keys = append(keys, SortKey{Index: idx, Desc: o.Desc, NullsFirst: nullsFirst})
		}
	}
	var out Plan = &Project{Input: in, Exprs: exprs, fields: fields}
	if sel.Distinct {
		if len(exprs) > visible {
			return nil, errAt(sel, "ORDER BY expressions must appear in the select list of SELECT DISTINCT")
		}
		out = distinct(out)
	}
	if q == nil {
		return out, nil
	}
	out, err := b.orderLimit(out, q, keys)
	if err != nil {
		return nil, err
	}
	if len(exprs) > visible {
		fs := out.Fields()
		keep := make([]Expr, visible)
		for i := range keep {
			keep[i] = &InputRef{Index: i, T: fs[i].Type, Name: fs[i].Name}
		}
		out = &Project{Input: out, Exprs: keep, fields: fs[:visible]}
	}
	return out, nil
}

func itemName(it *parser.SelectItem, i int) string {
	if it.Alias != "" {
		return it.Alias
	}
	if id, ok := it.Expr.(*parser.Ident); ok {
		return id.Parts[len(id.Parts)-1]
	}
	return "EXPR$" + strconv.Itoa(i)
}

// orderLimit adds ORDER BY, LIMIT and OFFSET of a query whose body is not
// a plain SELECT (ORDER BY then names output columns only).
func (b *binder) orderLimit(p Plan, q *parser.Query, keys []SortKey) (Plan, error) {
	if keys == nil && len(q.OrderBy) > 0 {
		fs := p.Fields()
		for _, o := range q.OrderBy {
			idx := -1
			switch e := o.Expr.(type) {
			case *parser.Ident:
				idx = slices.IndexFunc(fs, func(f Field) bool { return f.Name == e.Parts[len(e.Parts)-1] })
			case *parser.Literal:
				if n, err := strconv.Atoi(e.Text); err == nil {
					idx = n - 1
				}
			}
			if idx < 0 || idx >= len(fs) {
				return nil, errAt(o, "ORDER BY of a set operation must name an output column")
			}
			nullsFirst := !o.Desc
			if o.Nulls != "" {
				nullsFirst = o.Nulls == parser.NullsFirst
			}
			keys = append(keys, SortKey{Index: idx, Desc: o.Desc, NullsFirst: nullsFirst})
		}
	}
	limit, offset := int64(-1), int64(0)
	num := func(e parser.Expr, what string) (int64, error) {
		l, ok := e.(*parser.Literal)
		if !ok || l.Kind != parser.IntegerLit {
			return 0, errAt(e, "%s must be a non-negative integer literal", what)
		}
		n, err := strconv.ParseInt(l.Text, 10, 64)
		if err != nil || n < 0 {
			return 0, errAt(e, "%s must be a non-negative integer literal", what)
		}
		return n, nil
	}
	var err error
	if q.Limit != nil {
		if limit, err = num(q.Limit, "LIMIT"); err != nil {
			return nil, err
		}
	}
	if q.Offset != nil {
		if offset, err = num(q.Offset, "OFFSET"); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 && limit < 0 && offset == 0 {
		return p, nil
	}
	return &Sort{Input: p, Keys: keys, Offset: offset, Limit: limit}, nil
}

// aggregatesIn finds the aggregate calls in an expression (not inside
// subqueries, and not OVER windows).
func (b *binder) aggregatesIn(e parser.Expr) []*parser.FuncCall {
	var out []*parser.FuncCall
	var walk func(e parser.Expr)
	walk = func(e parser.Expr) {
		if e == nil {
			return
		}
		if f, ok := e.(*parser.FuncCall); ok && f.Over == nil && len(f.Name) == 1 && b.Funcs.IsAggregate(f.Name[0]) {
			out = append(out, f)
			return
		}
		forChildren(e, walk)
	}
	walk(e)
	return out
}

// forChildren calls fn on the direct subexpressions of e.
func forChildren(e parser.Expr, fn func(parser.Expr)) {
	switch e := e.(type) {
	case *parser.Unary:
		fn(e.Expr)
	case *parser.Binary:
		fn(e.Left)
		fn(e.Right)
	case *parser.Is:
		fn(e.Expr)
	case *parser.Between:
		fn(e.Expr)
		fn(e.Low)
		fn(e.High)
	case *parser.Like:
		fn(e.Expr)
		fn(e.Pattern)
		if e.Escape != nil {
			fn(e.Escape)
		}
	case *parser.In:
		fn(e.Expr)
		for _, x := range e.List {
			fn(x)
		}
	case *parser.FuncCall:
		for _, x := range e.Args {
			fn(x)
		}
		if e.Filter != nil {
			fn(e.Filter)
		}
	case *parser.Cast:
		fn(e.Expr)
	case *parser.Case:
		if e.Operand != nil {
			fn(e.Operand)
		}
		for _, w := range e.Whens {
			fn(w.Cond)
			fn(w.Result)
		}
		if e.Else != nil {
			fn(e.Else)
		}
	case *parser.Extract:
		fn(e.Expr)
	case *parser.Position:
		fn(e.Sub)
		fn(e.Str)
		if e.Start != nil {
			fn(e.Start)
		}
	case *parser.Trim:
		if e.Chars != nil {
			fn(e.Chars)
		}
		fn(e.Expr)
	case *parser.Substring:
		fn(e.Expr)
		fn(e.Start)
		if e.Length != nil {
			fn(e.Length)
		}
	case *parser.Overlay:
		fn(e.Expr)
		fn(e.Repl)
		fn(e.Start)
		if e.Length != nil {
			fn(e.Length)
		}
	case *parser.FloorCeil:
		fn(e.Expr)
	case *parser.TimestampAdd:
		fn(e.Count)
		fn(e.Timestamp)
	case *parser.TimestampDiff:
		fn(e.Start)
		fn(e.End)
	case *parser.ArrayCtor:
		for _, x := range e.Elems {
			fn(x)
		}
	case *parser.MapCtor:
		for i := range e.Keys {
			fn(e.Keys[i])
			fn(e.Values[i])
		}
	case *parser.RowExpr:
		for _, x := range e.Items {
			fn(x)
		}
	case *parser.Index:
		fn(e.Expr)
		fn(e.Index)
	case *parser.FieldAccess:
		fn(e.Expr)
	}
}

// groupElements flattens GROUP BY into its distinct key expressions and
// the grouping sets over them (nil when there is one plain set).
func groupElements(gb []parser.Expr) ([]parser.Expr, [][]int, error) {
	var keys []parser.Expr
	index := func(e parser.Expr) int {
		t := parser.Format(e)
		for i, k := range keys {
			if parser.Format(k) == t {
				return i
			}
		}
		keys = append(keys, e)
		return len(keys) - 1
	}
	items := func(e parser.Expr) []int {
		if r, ok := e.(*parser.RowExpr); ok {
			out := []int{}
			for _, x := range r.Items {
				out = append(out, index(x))
			}
			return out
		}
		return []int{index(e)}
	}
	// Each GROUP BY element contributes a list of sets; the query's sets
	// are their cross product, as SQL defines.
	var expand func(e parser.Expr) ([][]int, error)
	expand = func(e parser.Expr) ([][]int, error) {
		switch e := e.(type) {
		case *parser.GroupingSets:
			var out [][]int
			for _, s := range e.Sets {
				sub, err := expand(s)
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
			}
			return out, nil
		case *parser.Rollup:
			var parts [][]int
			for _, it := range e.Items {
				parts = append(parts, items(it))
			}
			var out [][]int
			for n := len(parts); n >= 0; n-- {
				var s []int
				for _, p := range parts[:n] {
					s = append(s, p...)
				}
				out = append(out, s)
			}
			return out, nil
		case *parser.Cube:
			var parts [][]int
			for _, it := range e.Items {
				parts = append(parts, items(it))
			}
			if len(parts) > 12 {
				return nil, errAt(e, "CUBE of %d elements makes too many grouping sets", len(parts))
			}
			var out [][]int
			for mask := (1 << len(parts)) - 1; mask >= 0; mask-- {
				s := []int{}
				for i, p := range parts {
					if mask&(1<<i) != 0 {
						s = append(s, p...)
					}
				}
				out = append(out, s)
			}
			return out, nil
		}
		return [][]int{items(e)}, nil
	}
	sets := [][]int{{}}
	plain := true
	for _, e := range gb {
		switch e.(type) {
		case *parser.GroupingSets, *parser.Rollup, *parser.Cube:
			plain = false
		}
		sub, err := expand(e)
		if err != nil {
			return nil, nil, err
		}
		var next [][]int
		for _, a := range sets {
			for _, s := range sub {
				next = append(next, append(slices.Clone(a), s...))
			}
		}
		sets = next
	}
	if plain {
		return keys, nil, nil
	}
	for i, s := range sets {
		slices.Sort(s)
		sets[i] = slices.Compact(s)
	}
	return keys, sets, nil
}

// aggregate plans GROUP BY and the aggregate calls: a projection of the
// keys and the aggregates' arguments, then the Aggregate. It returns the
// scope in which the select list, HAVING and ORDER BY resolve.
func (b *binder) aggregate(sel *parser.Select, in Plan, inScope *scope, calls []*parser.FuncCall) (Plan, *scope, error) {
	groupBy, aliases, in, inScope, err := b.groupWindow(sel.GroupBy, in, inScope)
	if err != nil {
		return nil, nil, err
	}
	keyExprs, sets, err := groupElements(groupBy)
	if err != nil {
		return nil, nil, err
	}
	var pre []Expr
	var preFields []Field
	add := func(e Expr, name string) int {
		for i, x := range pre {
			if x.String() == e.String() {
				return i
			}
		}
		pre = append(pre, e)
		preFields = append(preFields, Field{Name: name, Type: e.Type()})
		return len(pre) - 1
	}
	as := &aggScope{keys: map[string]int{}, aggs: map[string]int{}, input: inScope}
	var outFields []Field
	var keys []int
	for i, ke := range keyExprs {
		e, err := b.expr(ke, inScope)
		if err != nil {
			return nil, nil, err
		}
		name := "EXPR$" + strconv.Itoa(i)
		table := ""
		if id, ok := ke.(*parser.Ident); ok {
			name = id.Parts[len(id.Parts)-1]
			if r, ok := e.(*InputRef); ok {
				table = inScope.fields[r.Index].Table
			}
		}
		keys = append(keys, add(e, name))
		t := e.Type()
		if sets != nil {
			t = t.Nullable()
		}
		t.TimeAttr = types.TimeAttrNone
		outFields = append(outFields, Field{Name: name, Type: t, Table: table})
		as.keys[parser.Format(ke)] = i
	}
	var aggs []AggCall
	for _, c := range calls {
		text := parser.Format(c)
		if _, ok := as.aggs[text]; ok {
			continue
		}
		name := strings.ToUpper(c.Name[0])
		var args []int
		var argTypes []types.DataType
		for _, a := range c.Args {
			if _, ok := a.(*parser.Star); ok {
				if name != "COUNT" {
					return nil, nil, errAt(a, "%s(*) is not allowed; only COUNT(*)", name)
				}
				continue
			}
			if len(b.aggregatesIn(a)) > 0 {
				return nil, nil, errAt(a, "aggregate calls cannot be nested")
			}
			e, err := b.expr(a, inScope)
			if err != nil {
				return nil, nil, err
			}
			args = append(args, add(e, "$arg"))
			argTypes = append(argTypes, e.Type())
		}
		agg, err := b.Funcs.LookupAggregate(name, argTypes, c.Distinct)
		if err != nil {
			return nil, nil, errAt(c, "%v", err)
		}
		filter := -1
		if c.Filter != nil {
			e, err := b.expr(c.Filter, inScope)
			if err != nil {
				return nil, nil, err
			}
			filter = add(e, "$filter")
		}
		as.aggs[text] = len(keyExprs) + len(aggs)
		aggName := "EXPR$" + strconv.Itoa(len(keyExprs)+len(aggs))
		aggs = append(aggs, AggCall{Agg: agg, Args: args, Filter: filter, Name: aggName})
		outFields = append(outFields, Field{Name: aggName, Type: agg.Result})
	}
	// TUMBLE_START(ts, size) and the like name the window's columns.
	for text, col := range aliases {
		if i := slices.IndexFunc(outFields, func(f Field) bool { return f.Name == col }); i >= 0 {
			as.keys[text] = i
		}
	}
	proj := &Project{Input: in, Exprs: pre, fields: preFields}
	a := &Aggregate{Input: proj, Keys: keys, Aggs: aggs, Sets: sets, fields: outFields}
	// GROUP BY window_start, window_end over a window TVF is a window
	// aggregation.
	ws := slices.IndexFunc(outFields, func(f Field) bool { return f.Name == "window_start" })
	we := slices.IndexFunc(outFields, func(f Field) bool { return f.Name == "window_end" })
	if ws >= 0 && we >= 0 && sets == nil && fromWindowTVF(in) {
		tvf := windowTVFOf(in)
		a.Window = &WindowRef{Start: ws, End: we, Proctime: tvf.Proctime, WindowTimeAt: -1}
		if tvf.Kind == "SESSION" {
			a.Window.Gap = tvf.Gap
			a.Window.WindowTimeAt = slices.IndexFunc(outFields, func(f Field) bool { return f.Name == "window_time" })
			// The session's time column, as the aggregation's input
			// (the projection below it) has it.
			tc := -1
			for i, e := range pre {
				if r, ok := e.(*InputRef); ok && r.Index == tvf.TimeCol {
					tc = i
				}
			}
			if tc < 0 {
				tc = len(pre)
				tf := tvf.Input.Fields()[tvf.TimeCol]
				pre = append(pre, &InputRef{Index: tvf.TimeCol, T: tf.Type, Name: tf.Name})
				preFields = append(preFields, Field{Name: tf.Name, Type: tf.Type})
				proj.Exprs, proj.fields = pre, preFields
			}
			a.Window.TimeCol = tc
		}
	} else if tvf := windowTVFOf(in); tvf != nil && tvf.Kind == "SESSION" {
		return nil, nil, errAt(sel, "a SESSION window must be aggregated: GROUP BY window_start, window_end")
	}
	return a, &scope{fields: outFields, agg: as}, nil
}

// windowTVFOf finds the window TVF below filters and projections.
func windowTVFOf(p Plan) *WindowTVF {
	switch p := p.(type) {
	case *WindowTVF:
		return p
	case *Filter:
		return windowTVFOf(p.Input)
	case *Project:
		return windowTVFOf(p.Input)
	}
	return nil
}

// fromWindowTVF reports whether a plan's rows come from a window TVF,
// through filters and projections.
func fromWindowTVF(p Plan) bool {
	switch p := p.(type) {
	case *WindowTVF:
		return true
	case *Filter:
		return fromWindowTVF(p.Input)
	case *Project:
		return fromWindowTVF(p.Input)
	}
	return false
}

// resolveAggregated resolves an expression in an aggregating SELECT: a
// grouped expression or an aggregate call becomes a column of the
// aggregation's output.
func (s *scope) resolveAggregated(e parser.Expr) (Expr, bool) {
	if s.agg == nil {
		return nil, false
	}
	text := parser.Format(e)
	if i, ok := s.agg.keys[text]; ok {
		return &InputRef{Index: i, T: s.fields[i].Type, Name: s.fields[i].Name}, true
	}
	if i, ok := s.agg.aggs[text]; ok {
		return &InputRef{Index: i, T: s.fields[i].Type, Name: s.fields[i].Name}, true
	}
	return nil, false
}

var _ = functions.Context{}

// groupWindow rewrites Flink's legacy group windows, GROUP BY ...,
// TUMBLE(ts, size) | HOP(ts, slide, size) | SESSION(ts, gap), into the
// window TVF over the input with window_start, window_end and window_time
// as keys, and maps TUMBLE_START(...), TUMBLE_END(...), TUMBLE_ROWTIME(...)
// (and HOP_, SESSION_) to them.
func (b *binder) groupWindow(gb []parser.Expr, in Plan, sc *scope) ([]parser.Expr, map[string]string, Plan, *scope, error) {
	for i, e := range gb {
		f, ok := e.(*parser.FuncCall)
		if !ok || len(f.Name) != 1 || f.Over != nil {
			continue
		}
		kind := strings.ToUpper(f.Name[0])
		want := map[string]int{"TUMBLE": 2, "HOP": 3, "SESSION": 2}[kind]
		if want == 0 {
			continue
		}
		if len(f.Args) != want {
			return nil, nil, nil, nil, errAt(f, "%s in GROUP BY takes %d arguments", kind, want)
		}
		col, ok := f.Args[0].(*parser.Ident)
		if !ok {
			return nil, nil, nil, nil, errAt(f.Args[0], "the first argument of %s must be a time attribute column", kind)
		}
		w := &parser.WindowTVF{Kind: parser.WindowKind(kind), TimeCol: col.Parts[len(col.Parts)-1]}
		switch kind {
		case "TUMBLE":
			w.Size = f.Args[1]
		case "HOP":
			w.Slide, w.Size = f.Args[1], f.Args[2]
		case "SESSION":
			w.Gap = f.Args[1]
		}
		tvf, err := b.windowOver(w, in)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		out := slices.Clone(gb)
		out = slices.Delete(out, i, i+1)
		out = append(out, &parser.Ident{Parts: []string{"window_start"}}, &parser.Ident{Parts: []string{"window_end"}}, &parser.Ident{Parts: []string{"window_time"}})
		args := make([]string, len(f.Args))
		for j, a := range f.Args {
			args[j] = parser.Format(a)
		}
		aliases := map[string]string{}
		for suffix, c := range map[string]string{"_START": "window_start", "_END": "window_end", "_ROWTIME": "window_time"} {
			call := &parser.FuncCall{Name: []string{kind + suffix}, Args: f.Args}
			aliases[parser.Format(call)] = c
		}
		return out, aliases, tvf, &scope{fields: tvf.Fields()}, nil
	}
	return gb, nil, in, sc, nil
}
