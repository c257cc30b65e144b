package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirproject/weir/cep"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// MatchRecognize is row pattern recognition planned onto the cep package
// as Flink's planner does it: per partition (a keyed stream), rows in
// event-time order (cep's event-time mode sorts them) or as they arrive
// (proctime), a sequence of pattern variables with strict contiguity
// (Next), quantifiers greedy unless reluctant, the skip strategy and the
// window. The output is one row per match: the partition columns, then
// the measures.
type MatchRecognize struct {
	Input     Plan
	Partition []int
	ProcTime  bool
	Vars      []*mrVar
	Skip      cep.SkipStrategy
	Within    time.Duration
	Measures  []Expr // over the input's fields followed by refs
	Refs      []mrRef
	fields    []Field
	// rowtime is the input's rowtime column for MATCH_ROWTIME(), -1 if none.
	rowtime int
}

// mrVar is one pattern variable: its quantifier and its DEFINE condition
// (nil: always true), bound over the input's fields (the current row)
// followed by the variable's refs.
type mrVar struct {
	Name      string
	Min, Max  int // Max -1: unbounded
	Reluctant bool
	Cond      Expr
	Refs      []mrRef
}

type mrRefKind uint8

const (
	refLast mrRefKind = iota
	refFirst
	refAgg
	refRowtime
)

// mrRef is a value computed from the rows a match (or partial match) gave
// to a variable ("" for all of them): LAST(v.col, off), FIRST(v.col, off)
// or an aggregate over them.
type mrRef struct {
	kind mrRefKind
	vr   string
	col  int // -1: COUNT(*)
	// arg, when set, is an expression over one variable's row (SUM(A.price
	// * A.tax)) evaluated instead of column col.
	arg evaluator
	off int
	agg *functions.Aggregate
	t   types.DataType
}

func (p *MatchRecognize) Fields() []Field { return p.fields }
func (p *MatchRecognize) Inputs() []Plan  { return []Plan{p.Input} }
func (p *MatchRecognize) describe() string {
	var vs []string
	for _, v := range p.Vars {
		vs = append(vs, v.Name)
	}
	return fmt.Sprintf("Match(partitionBy=[%v], pattern=[%s], skip=[%v], select=[%s])", p.Partition, strings.Join(vs, " "), p.Skip, names(p.fields))
}

func mrUnsupported(n parser.Node, what string) error {
	return errAt(n, "MATCH_RECOGNIZE: %s is not supported", what)
}

// matchRecognize binds the clause; what cep cannot run is refused here
// with the position and what it is, as Flink's planner refuses it.
func (b *binder) matchRecognize(m *parser.MatchRecognize) (Plan, error) {
	in, err := b.from(m.Input)
	if err != nil {
		return nil, err
	}
	if updating(in, false) {
		return nil, errAt(m, "MATCH_RECOGNIZE takes an append-only input; %s produces updates", producerOfUpdates(in, false))
	}
	inSc := &scope{fields: in.Fields()}
	p := &MatchRecognize{Input: in, rowtime: -1, Skip: cep.SkipToNext()}
	if strings.HasPrefix(m.RowsPerMatch, "ALL ROWS") {
		return nil, mrUnsupported(m, "ALL ROWS PER MATCH (only ONE ROW PER MATCH is)")
	}
	if len(m.Subsets) > 0 {
		return nil, mrUnsupported(m.Subsets[0], "SUBSET")
	}
	if m.StrictStart || m.StrictEnd {
		return nil, mrUnsupported(m.Pattern, "the anchors ^ and $")
	}
	var out []Field
	for _, e := range m.PartitionBy {
		x, err := b.expr(e, inSc)
		if err != nil {
			return nil, err
		}
		r, ok := x.(*InputRef)
		if !ok {
			return nil, errAt(e, "MATCH_RECOGNIZE: PARTITION BY takes columns of the input")
		}
		p.Partition = append(p.Partition, r.Index)
		f := in.Fields()[r.Index]
		out = append(out, Field{Name: f.Name, Type: f.Type})
	}
	if len(m.OrderBy) == 0 {
		return nil, errAt(m, "MATCH_RECOGNIZE needs ORDER BY a time attribute (the rowtime or proctime of the input), ascending")
	}
	if len(m.OrderBy) > 1 {
		return nil, mrUnsupported(m.OrderBy[1], "ordering by more than the time attribute (rows with equal times are matched in arrival order)")
	}
	ob := m.OrderBy[0]
	x, err := b.expr(ob.Expr, inSc)
	if err != nil {
		return nil, err
	}
	r, ok := x.(*InputRef)
	if !ok || ob.Desc || in.Fields()[r.Index].Type.TimeAttr == types.TimeAttrNone {
		return nil, errAt(ob, "MATCH_RECOGNIZE must be ordered by an ascending time attribute (rowtime or proctime) first")
	}
	switch in.Fields()[r.Index].Type.TimeAttr {
	case types.TimeAttrRowtime:
		p.rowtime = r.Index
	default:
		p.ProcTime = true
	}
	if err := b.mrPattern(p, m.Pattern); err != nil {
		return nil, err
	}
	if m.Skip != nil {
		switch m.Skip.Kind {
		case "PAST LAST ROW":
			p.Skip = cep.SkipPastLastEvent()
		case "TO NEXT ROW":
			p.Skip = cep.SkipToNext()
		case "TO FIRST", "TO LAST":
			if p.variable(m.Skip.Var) == nil {
				return nil, errAt(m.Skip, "AFTER MATCH SKIP %s %s: %s is not a variable of the PATTERN", m.Skip.Kind, m.Skip.Var, m.Skip.Var)
			}
			if m.Skip.Kind == "TO FIRST" {
				p.Skip = cep.SkipToFirst(m.Skip.Var)
			} else {
				p.Skip = cep.SkipToLast(m.Skip.Var)
			}
		}
	}
	if m.Within != nil {
		w, err := b.expr(m.Within, inSc)
		if err != nil {
			return nil, err
		}
		l, ok := w.(*Literal)
		ms, isMs := l.Value.(types.IntervalMillis)
		if !ok || !isMs || ms <= 0 {
			return nil, errAt(m.Within, "MATCH_RECOGNIZE: WITHIN takes a positive day-time interval literal (months and years are not supported)")
		}
		p.Within = time.Duration(ms) * time.Millisecond
	}
	for _, d := range m.Defines {
		v := p.variable(d.Var)
		if v == nil {
			return nil, errAt(d, "DEFINE %s: %s is not a variable of the PATTERN", d.Var, d.Var)
		}
		if v.Cond != nil {
			return nil, errAt(d, "DEFINE %s is given twice", d.Var)
		}
		cond, refs, err := b.mrExpr(p, d.Cond, true)
		if err != nil {
			return nil, err
		}
		if cond.Type().Kind != types.KindBoolean {
			return nil, errAt(d.Cond, "DEFINE %s must be a BOOLEAN condition, not %s", d.Var, cond.Type())
		}
		v.Cond, v.Refs = cond, refs
	}
	// The measures share one list of refs.
	refs := &mrRefSet{}
	for _, ms := range m.Measures {
		e, err := b.mrExprRefs(p, ms.Expr, false, refs)
		if err != nil {
			return nil, err
		}
		p.Measures = append(p.Measures, e)
		out = append(out, Field{Name: ms.Alias, Type: e.Type()})
	}
	p.Refs = refs.refs
	if m.Alias != nil {
		for i := range out {
			out[i].Table = m.Alias.Name
		}
		if len(m.Alias.Columns) > 0 {
			return nil, mrUnsupported(m, "a column list after the MATCH_RECOGNIZE alias")
		}
	}
	p.fields = out
	return p, nil
}

func (p *MatchRecognize) variable(name string) *mrVar {
	for _, v := range p.Vars {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// mrPattern accepts what Flink's planner accepts: a sequence of distinct
// variables, each with at most one quantifier.
func (b *binder) mrPattern(p *MatchRecognize, t parser.PatternTerm) error {
	items := []parser.PatternTerm{t}
	if c, ok := t.(*parser.PatternConcat); ok {
		items = c.Items
	}
	for _, it := range items {
		v := &mrVar{Min: 1, Max: 1}
		if q, ok := it.(*parser.PatternQuant); ok {
			v.Min, v.Max, v.Reluctant = q.Min, q.Max, q.Reluctant
			if v.Min == 0 && v.Max == 1 && v.Reluctant {
				return mrUnsupported(q, "the reluctant optional quantifier ??")
			}
			it = q.Term
		}
		switch x := it.(type) {
		case *parser.PatternVar:
			if p.variable(x.Name) != nil {
				return errAt(x, "MATCH_RECOGNIZE: pattern variables must be unique; %s appears twice", x.Name)
			}
			v.Name = x.Name
		case *parser.PatternAlt:
			return mrUnsupported(x, "alternation (|)")
		case *parser.PatternPermute:
			return mrUnsupported(x, "PERMUTE")
		case *parser.PatternExclude:
			return mrUnsupported(x, "exclusion ({- -})")
		default:
			return mrUnsupported(it, "a group pattern (a quantified or nested sequence in parentheses)")
		}
		// Flink's CEP refuses it too (an optional pattern cannot be
		// preceded by a greedy one): say so when planning.
		if n := len(p.Vars); n > 0 && v.Min == 0 && greedy(p.Vars[n-1]) {
			return errAt(it, "MATCH_RECOGNIZE: the optional variable %s cannot follow the greedy %s; make %s reluctant", v.Name, p.Vars[n-1].Name, p.Vars[n-1].Name)
		}
		p.Vars = append(p.Vars, v)
	}
	last := p.Vars[len(p.Vars)-1]
	if greedy(last) {
		return errAt(t, "MATCH_RECOGNIZE: greedy quantifiers are not allowed as the last element of a pattern; end it with a single variable or a reluctant quantifier")
	}
	return nil
}

// greedy: Flink makes every looping or times quantifier greedy unless it
// is reluctant; {n} and ? are not.
func greedy(v *mrVar) bool {
	return !v.Reluctant && v.Max != 1 && v.Min != v.Max
}

func (b *binder) mrExpr(p *MatchRecognize, e parser.Expr, define bool) (Expr, []mrRef, error) {
	rs := &mrRefSet{}
	x, err := b.mrExprRefs(p, e, define, rs)
	return x, rs.refs, err
}

// mrRefSet is the refs of one condition, or of all the measures, with
// the columns that stand for them.
type mrRefSet struct {
	refs   []mrRef
	keys   map[string]int
	fields []Field
}

// mrExprRefs binds a DEFINE condition or a measure: the navigation
// (FIRST, LAST, v.col), aggregates over a variable's rows and
// MATCH_ROWTIME() become refs, columns past the input's fields, so the
// rest binds as any expression. In DEFINE an unqualified column is the
// current row's; in MEASURES it is the match's last row's.
func (b *binder) mrExprRefs(p *MatchRecognize, e parser.Expr, define bool, rs *mrRefSet) (Expr, error) {
	in := p.Input.Fields()
	if rs.keys == nil {
		rs.keys = map[string]int{}
		rs.fields = slices.Clone(in)
	}
	inSc := &scope{fields: in}
	var ferr error
	add := func(n parser.Expr, r mrRef) {
		text := parser.Format(n)
		if _, ok := rs.keys[text]; ok {
			return
		}
		rs.keys[text] = len(rs.fields)
		rs.refs = append(rs.refs, r)
		rs.fields = append(rs.fields, Field{Name: "$" + text, Type: r.t})
	}
	// colRef resolves v.col or col to the variable and the input column.
	colRef := func(id *parser.Ident) (string, int, bool) {
		switch len(id.Parts) {
		case 1:
			i, err := inSc.lookup(id)
			if err != nil {
				ferr = err
				return "", 0, false
			}
			return "", i, true
		case 2:
			if p.variable(id.Parts[0]) == nil {
				ferr = errAt(id, "MATCH_RECOGNIZE: %s is not a pattern variable", id.Parts[0])
				return "", 0, false
			}
			i, err := inSc.lookup(&parser.Ident{Parts: id.Parts[1:]})
			if err != nil {
				ferr = errAt(id, "Column '%s' not found in any table", id.Parts[1])
				return "", 0, false
			}
			return id.Parts[0], i, true
		}
		ferr = errAt(id, "MATCH_RECOGNIZE: %s is not a column of a pattern variable", strings.Join(id.Parts, "."))
		return "", 0, false
	}
	// exprRef binds an expression over the rows of one variable: its
	// columns qualified by that variable, or not qualified (all rows).
	exprRef := func(a parser.Expr) (string, Expr, bool) {
		vr := ""
		parser.Inspect(a, func(n parser.Node) bool {
			if id, ok := n.(*parser.Ident); ok && len(id.Parts) == 2 && p.variable(id.Parts[0]) != nil {
				if vr != "" && vr != id.Parts[0] && ferr == nil {
					ferr = errAt(id, "MATCH_RECOGNIZE: an expression inside FIRST, LAST or an aggregate must refer to one pattern variable, not %s and %s", vr, id.Parts[0])
				}
				vr = id.Parts[0]
			}
			return true
		})
		if ferr != nil {
			return "", nil, false
		}
		fs := slices.Clone(in)
		for i := range fs {
			fs[i].Table = vr
		}
		x, err := b.expr(a, &scope{fields: fs})
		if err != nil {
			ferr = err
			return "", nil, false
		}
		return vr, x, true
	}
	parser.Inspect(e, func(n parser.Node) bool {
		if ferr != nil {
			return false
		}
		switch x := n.(type) {
		case *parser.Ident:
			if len(x.Parts) == 1 && define {
				return false // the current row
			}
			vr, col, ok := colRef(x)
			if ok {
				add(x, mrRef{kind: refLast, vr: vr, col: col, t: in[col].Type.Nullable()})
			}
			return false
		case *parser.FuncCall:
			if len(x.Name) != 1 || x.Over != nil {
				return true
			}
			name := strings.ToUpper(x.Name[0])
			switch name {
			case "PREV", "NEXT":
				ferr = errAt(x, "MATCH_RECOGNIZE: %s is not supported: Flink does not support physical offsets within partition; use LAST(v.col, n) or FIRST(v.col, n)", name)
				return false
			case "CLASSIFIER", "MATCH_NUMBER", "MATCH_PROCTIME":
				ferr = mrUnsupported(x, name+"()")
				return false
			case "MATCH_ROWTIME":
				if p.rowtime < 0 {
					ferr = errAt(x, "MATCH_ROWTIME() needs the input ordered by a rowtime attribute")
					return false
				}
				add(x, mrRef{kind: refRowtime, col: p.rowtime, t: in[p.rowtime].Type})
				return false
			case "FIRST", "LAST":
				if len(x.Args) < 1 || len(x.Args) > 2 {
					ferr = errAt(x, "%s takes a column and an optional offset", name)
					return false
				}
				id, ok := x.Args[0].(*parser.Ident)
				off := 0
				if len(x.Args) == 2 {
					l, ok := x.Args[1].(*parser.Literal)
					if !ok || l.Kind != parser.IntegerLit {
						ferr = errAt(x.Args[1], "the offset of %s must be a non-negative integer literal", name)
						return false
					}
					fmt.Sscan(l.Text, &off)
				}
				k := refLast
				if name == "FIRST" {
					k = refFirst
				}
				if !ok {
					if vr, a, ok := exprRef(x.Args[0]); ok {
						add(x, mrRef{kind: k, vr: vr, arg: compile(a), off: off, t: a.Type().Nullable()})
					}
					return false
				}
				if vr, col, ok := colRef(id); ok {
					add(x, mrRef{kind: k, vr: vr, col: col, off: off, t: in[col].Type.Nullable()})
				}
				return false
			}
			if !b.Funcs.IsAggregate(name) {
				return true
			}
			if x.Distinct || x.Filter != nil || len(x.Args) != 1 {
				ferr = mrUnsupported(x, "this form of "+name+" (one column argument, no DISTINCT or FILTER)")
				return false
			}
			r := mrRef{kind: refAgg, col: -1}
			var argTypes []types.DataType
			switch a := x.Args[0].(type) {
			case *parser.Star:
			case *parser.Ident:
				vr, col, ok := colRef(a)
				if !ok {
					return false
				}
				r.vr, r.col = vr, col
				argTypes = []types.DataType{in[col].Type}
			default:
				vr, bound, ok := exprRef(a)
				if !ok {
					return false
				}
				r.vr, r.arg = vr, compile(bound)
				argTypes = []types.DataType{bound.Type()}
			}
			agg, err := b.Funcs.LookupAggregate(name, argTypes, false)
			if err != nil {
				ferr = errAt(x, "%v", err)
				return false
			}
			r.agg, r.t = agg, agg.Result
			add(x, r)
			return false
		}
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	// The refs are resolved by their text, ahead of any other binding.
	sc := &scope{fields: rs.fields, agg: &aggScope{keys: rs.keys, input: &scope{}}}
	return b.expr(e, sc)
}

// ---------------------------------------------------------------------------
// Execution

// mrEvent is a row as cep keeps it in keyed state: encoded, so that its
// codec is the row's schema.
type mrEvent struct{ Row []byte }

type mrRuntime struct {
	p   *MatchRecognize
	ts  []types.DataType
	ctx *functions.Context
}

func (r *mrRuntime) decode(e mrEvent) (types.Row, error) {
	row, _, err := types.DecodeRow(r.ts, e.Row)
	return row, err
}

// rowsOf returns the rows given to vr ("": all, in pattern order).
func (r *mrRuntime) rowsOf(vr string, get func(string) []mrEvent, cur types.Row, curVar string) ([]types.Row, error) {
	var names []string
	if vr == "" {
		for _, v := range r.p.Vars {
			names = append(names, v.Name)
		}
	} else {
		names = []string{vr}
	}
	var out []types.Row
	for _, n := range names {
		for _, e := range get(n) {
			row, err := r.decode(e)
			if err != nil {
				return nil, err
			}
			out = append(out, row)
		}
		if cur != nil && n == curVar {
			out = append(out, cur)
		}
	}
	return out, nil
}

func (r *mrRuntime) refValues(refs []mrRef, get func(string) []mrEvent, cur types.Row, curVar string, dst types.Row) (types.Row, error) {
	for _, ref := range refs {
		rows, err := r.rowsOf(ref.vr, get, cur, curVar)
		if err != nil {
			return nil, err
		}
		val := func(row types.Row) (any, error) {
			if ref.arg != nil {
				return ref.arg(r.ctx, row)
			}
			return row[ref.col], nil
		}
		var v any
		switch ref.kind {
		case refLast, refRowtime:
			if i := len(rows) - 1 - ref.off; i >= 0 {
				if v, err = val(rows[i]); err != nil {
					return nil, err
				}
			}
		case refFirst:
			if ref.off < len(rows) {
				if v, err = val(rows[ref.off]); err != nil {
					return nil, err
				}
			}
		case refAgg:
			acc := ref.agg.New(false)
			for _, row := range rows {
				var args []any
				if ref.col >= 0 || ref.arg != nil {
					a, err := val(row)
					if err != nil {
						return nil, err
					}
					args = []any{a}
				}
				if err := acc.Add(args); err != nil {
					return nil, err
				}
			}
			if v, err = acc.Result(); err != nil {
				return nil, err
			}
		}
		dst = append(dst, v)
	}
	return dst, nil
}

func (r *mrRuntime) condition(v *mrVar) cep.Condition[mrEvent] {
	if v.Cond == nil {
		return cep.Simple(func(mrEvent) bool { return true })
	}
	eval := compile(v.Cond)
	return func(e mrEvent, c *cep.Context[mrEvent]) bool {
		cur, err := r.decode(e)
		if err != nil {
			return false
		}
		row, err := r.refValues(v.Refs, c.EventsForPattern, cur, v.Name, slices.Clone(cur))
		if err != nil {
			return false
		}
		ok, err := eval(r.ctx, row)
		return err == nil && ok == true
	}
}

func (r *mrRuntime) pattern() *cep.Pattern[mrEvent] {
	var pat *cep.Pattern[mrEvent]
	for i, v := range r.p.Vars {
		if i == 0 {
			pat = cep.BeginWithSkip[mrEvent](v.Name, r.p.Skip)
		} else {
			pat = pat.Next(v.Name)
		}
		pat = pat.Where(r.condition(v))
		switch {
		case v.Min == 1 && v.Max == 1:
		case v.Min == 0 && v.Max == 1:
			pat = pat.Optional()
		case v.Max == -1:
			pat = pat.TimesOrMore(max(v.Min, 1)).Consecutive()
			if greedy(v) {
				pat = pat.Greedy()
			}
			if v.Min == 0 {
				pat = pat.Optional()
			}
		default:
			pat = pat.TimesRange(v.Min, v.Max).Consecutive()
			if greedy(v) {
				pat = pat.Greedy()
			}
		}
	}
	if r.p.Within > 0 {
		pat = pat.Within(r.p.Within)
	}
	return pat
}

func (t *Translator) matchRecognize(p *MatchRecognize) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	rt := &mrRuntime{p: p, ts: fieldTypes(p.Input.Fields()), ctx: t.Ctx}
	evs := stream.Map(in, func(r types.Record) mrEvent {
		return mrEvent{Row: types.AppendRow(nil, rt.ts, r.Row)}
	}).Name(t.OpName("Calc"))
	keyTypes := make([]types.DataType, len(p.Partition))
	for i, c := range p.Partition {
		keyTypes[i] = rt.ts[c]
	}
	var ks *stream.KeyedStream[string, mrEvent]
	if len(p.Partition) == 0 {
		ks = stream.KeyBy(evs.Global(), func(mrEvent) string { return "" })
	} else {
		ks = stream.KeyBy(evs, func(e mrEvent) string {
			row, err := rt.decode(e)
			if err != nil {
				return ""
			}
			key := make(types.Row, len(p.Partition))
			for i, c := range p.Partition {
				key[i] = row[c]
			}
			return string(types.AppendRow(nil, keyTypes, key))
		})
	}
	ps := cep.Stream(ks, rt.pattern())
	if p.ProcTime {
		ps = ps.InProcessingTime()
	}
	measures := make([]evaluator, len(p.Measures))
	for i, e := range p.Measures {
		measures[i] = compile(e)
	}
	out := cep.Process[string, mrEvent, types.Record](ps, cep.ProcessFunc[string, mrEvent, types.Record](func(m cep.Match[mrEvent], _ *cep.MatchContext[string], c stream.Collector[types.Record]) error {
		get := func(n string) []mrEvent { return m[n] }
		rows, err := rt.rowsOf("", get, nil, "")
		if err != nil || len(rows) == 0 {
			return err
		}
		base := slices.Clone(rows[len(rows)-1])
		row, err := rt.refValues(p.Refs, get, nil, "", base)
		if err != nil {
			return err
		}
		res := make(types.Row, 0, len(p.Partition)+len(measures))
		for _, c := range p.Partition {
			res = append(res, base[c])
		}
		for _, ev := range measures {
			v, err := ev(rt.ctx, row)
			if err != nil {
				return err
			}
			res = append(res, v)
		}
		c.Collect(types.Record{Kind: types.Insert, Row: res})
		return nil
	}))
	s := out.Name(t.OpName("Match")).UID(t.nextUID("match"))
	if len(p.Partition) == 0 {
		s = s.SetParallelism(1)
	}
	return withCodec(s, p.fields), nil
}
