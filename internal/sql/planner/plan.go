package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
)

// Field is a column of a plan node's output.
type Field struct {
	Name string
	Type types.DataType
	// Table is the alias or name of the table the column came from, for
	// qualified references (t.col); "" for derived columns.
	Table string
}

// Plan is a node of a logical plan: relational algebra over rows.
type Plan interface {
	Fields() []Field
	Inputs() []Plan
	// describe is the node's line in EXPLAIN.
	describe() string
}

// Scan reads a catalog table through its connector: its columns in
// declared order, the computed ones evaluated over the others.
type Scan struct {
	Table  *catalog.Table
	fields []Field
	// Computed holds the expression of each computed column (nil for the
	// others; nil if the table has none).
	Computed []Expr
	// Rowtime is the index of the event-time column, -1 if none;
	// Watermark is its watermark expression over the scan's fields.
	Rowtime   int
	Watermark Expr
	// Filters were pushed down from above; the connector may use them to
	// skip data, and the scan applies them in any case.
	Filters []Expr
	// Needed says which columns the plan reads (nil: all); the connector
	// may leave the others NULL. See markNeededColumns.
	Needed []bool
}

// Values is a constant relation (VALUES, or SELECT without FROM).
type Values struct {
	Rows   [][]Expr
	fields []Field
}

// Project computes one expression per output column.
type Project struct {
	Input  Plan
	Exprs  []Expr
	fields []Field
}

// Filter keeps the rows for which Cond is TRUE.
type Filter struct {
	Input Plan
	Cond  Expr
}

// AggCall is an aggregate function over input columns.
type AggCall struct {
	Agg    *functions.Aggregate
	Args   []int
	Filter int // input column of FILTER (WHERE ...), -1 if none
	Name   string
}

// Aggregate groups by key columns and computes aggregates. With Window
// set it is a window aggregation: the input carries window_start and
// window_end (columns Window.Start and Window.Start+1), groups are also
// per window, and each window's row is final when the watermark passes
// its end.
type Aggregate struct {
	Input Plan
	Keys  []int
	Aggs  []AggCall
	// Sets are the grouping sets (indexes into Keys); nil means one set
	// of all keys. A key not in a row's set is NULL in that row.
	Sets   [][]int
	Window *WindowRef
	fields []Field
}

// WindowRef says where a window aggregation finds its windows.
type WindowRef struct {
	// Start and End are the positions of window_start and window_end
	// among the aggregation's keys.
	Start, End int
	// Proctime windows fire by the clock.
	Proctime bool
	// Session windows: the gap, the time column of the input, and the
	// key position of window_time (-1 if not grouped by).
	Gap          int64
	TimeCol      int
	WindowTimeAt int
}

// WindowTVF is TUMBLE, HOP or CUMULATE: each input row is copied into every
// window it belongs to, with window_start, window_end and window_time
// appended.
type WindowTVF struct {
	Input   Plan
	Kind    string // TUMBLE, HOP, CUMULATE
	TimeCol int
	// Size, Slide (HOP), Step (CUMULATE) and Offset in milliseconds.
	Size, Slide, Step, Offset int64
	// Proctime: the time column is processing time, so windows close by
	// the clock, not by watermarks.
	Proctime bool
	// Gap is a SESSION window's gap: its rows pass with the window
	// columns empty, and the aggregation above finds the sessions.
	Gap    int64
	fields []Field
}

// Union is UNION ALL of inputs with the same columns (UNION is a
// distinct Aggregate above it).
type Union struct {
	Ins    []Plan
	fields []Field
}

// Join joins two inputs on equal keys and a residual condition over the
// concatenated row.
type Join struct {
	Left, Right         Plan
	Type                string // INNER, LEFT, RIGHT, FULL
	LeftKeys, RightKeys []int
	Residual            Expr // nil: none
	// Temporal: a processing-time temporal join (FOR SYSTEM_TIME AS OF):
	// a left row joins the right rows present when it arrives, and
	// later changes of the right side change no result.
	Temporal bool
	// Window: a window join (see WindowJoin); nil for other joins.
	Window *WindowJoin
	// Versioned: an event-time temporal join (temporaljoin.go).
	Versioned *Versioned
	fields    []Field
}

// Sort orders its input and keeps rows [Offset, Offset+Limit); Limit -1
// keeps all.
type Sort struct {
	Input         Plan
	Keys          []SortKey
	Offset, Limit int64
}

// SortKey is one ORDER BY item.
type SortKey struct {
	Index      int
	Desc       bool
	NullsFirst bool
}

func (p *Scan) Fields() []Field      { return p.fields }
func (p *Values) Fields() []Field    { return p.fields }
func (p *Project) Fields() []Field   { return p.fields }
func (p *Filter) Fields() []Field    { return p.Input.Fields() }
func (p *Aggregate) Fields() []Field { return p.fields }
func (p *WindowTVF) Fields() []Field { return p.fields }
func (p *Union) Fields() []Field     { return p.fields }
func (p *Join) Fields() []Field      { return p.fields }
func (p *Sort) Fields() []Field      { return p.Input.Fields() }

func (p *Scan) Inputs() []Plan      { return nil }
func (p *Values) Inputs() []Plan    { return nil }
func (p *Project) Inputs() []Plan   { return []Plan{p.Input} }
func (p *Filter) Inputs() []Plan    { return []Plan{p.Input} }
func (p *Aggregate) Inputs() []Plan { return []Plan{p.Input} }
func (p *WindowTVF) Inputs() []Plan { return []Plan{p.Input} }
func (p *Union) Inputs() []Plan     { return p.Ins }
func (p *Join) Inputs() []Plan      { return []Plan{p.Left, p.Right} }
func (p *Sort) Inputs() []Plan      { return []Plan{p.Input} }

func names(fs []Field) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.Name
	}
	return strings.Join(s, ", ")
}

func exprs(es []Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}

func (p *Scan) describe() string {
	s := fmt.Sprintf("TableSourceScan(table=[%s], fields=[%s]", p.Table.Path, names(p.fields))
	if p.Watermark != nil {
		s += fmt.Sprintf(", watermark=[%s]", p.Watermark)
	}
	if len(p.Filters) > 0 {
		s += fmt.Sprintf(", filter=[%s]", exprs(p.Filters))
	}
	if cols := p.neededColumns(); cols != nil {
		s += fmt.Sprintf(", project=[%s]", strings.Join(cols, ", "))
	}
	return s + ")"
}
func (p *Values) describe() string {
	return fmt.Sprintf("Values(tuples=%d, fields=[%s])", len(p.Rows), names(p.fields))
}
func (p *Project) describe() string {
	parts := make([]string, len(p.Exprs))
	for i, e := range p.Exprs {
		parts[i] = e.String() + " AS " + p.fields[i].Name
	}
	return "Calc(select=[" + strings.Join(parts, ", ") + "])"
}
func (p *Filter) describe() string { return "Calc(where=[" + p.Cond.String() + "])" }
func (p *Aggregate) describe() string {
	in := p.Input.Fields()
	keys := make([]string, len(p.Keys))
	for i, k := range p.Keys {
		keys[i] = in[k].Name
	}
	aggs := make([]string, len(p.Aggs))
	for i, a := range p.Aggs {
		args := make([]string, len(a.Args))
		for j, x := range a.Args {
			args[j] = in[x].Name
		}
		d := ""
		if a.Agg.Distinct {
			d = "DISTINCT "
		}
		aggs[i] = fmt.Sprintf("%s(%s%s) AS %s", a.Agg.Name, d, strings.Join(args, ", "), a.Name)
	}
	kind := "GroupAggregate"
	if p.Window != nil {
		kind = "WindowAggregate"
	}
	s := fmt.Sprintf("%s(groupBy=[%s], select=[%s]", kind, strings.Join(keys, ", "), strings.Join(aggs, ", "))
	if p.Sets != nil {
		s += fmt.Sprintf(", groupingSets=%v", p.Sets)
	}
	return s + ")"
}
func (p *WindowTVF) describe() string {
	in := p.Input.Fields()
	s := fmt.Sprintf("WindowTableFunction(window=[%s(time_col=[%s], size=[%d ms]", p.Kind, in[p.TimeCol].Name, p.Size)
	switch p.Kind {
	case "HOP":
		s += fmt.Sprintf(", slide=[%d ms]", p.Slide)
	case "CUMULATE":
		s += fmt.Sprintf(", step=[%d ms]", p.Step)
	}
	if p.Offset != 0 {
		s += fmt.Sprintf(", offset=[%d ms]", p.Offset)
	}
	return s + ")])"
}
func (p *Union) describe() string { return "Union(all=[true], fields=[" + names(p.fields) + "])" }
func (p *Join) describe() string {
	if p.Temporal {
		return p.describeTemporal()
	}
	l, r := p.Left.Fields(), p.Right.Fields()
	var conds []string
	for i := range p.LeftKeys {
		conds = append(conds, l[p.LeftKeys[i]].Name+" = "+r[p.RightKeys[i]].Name)
	}
	if p.Residual != nil {
		conds = append(conds, p.Residual.String())
	}
	if p.Window != nil {
		return describeWindowJoin(p, conds)
	}
	return fmt.Sprintf("Join(joinType=[%s], where=[%s])", p.Type, strings.Join(conds, " AND "))
}
func (p *Sort) describe() string {
	in := p.Input.Fields()
	keys := make([]string, len(p.Keys))
	for i, k := range p.Keys {
		keys[i] = in[k.Index].Name
		if k.Desc {
			keys[i] += " DESC"
		} else {
			keys[i] += " ASC"
		}
	}
	return fmt.Sprintf("Sort(orderBy=[%s], offset=[%d], fetch=[%d])", strings.Join(keys, ", "), p.Offset, p.Limit)
}

// Explain renders a plan as an indented tree, as Flink's EXPLAIN does.
func Explain(p Plan) string {
	var b strings.Builder
	var walk func(p Plan, depth int)
	walk = func(p Plan, depth int) {
		b.WriteString(strings.Repeat("   ", depth))
		if depth > 0 {
			b.WriteString("+- ")
		}
		b.WriteString(p.describe())
		b.WriteString("\n")
		for _, in := range p.Inputs() {
			walk(in, depth+1)
		}
	}
	walk(p, 0)
	return b.String()
}

// Updating reports whether a plan's output carries updates and deletes.
func Updating(p Plan, batch bool) bool { return updating(p, batch) }

// ProducerOfUpdates names the node whose output first carries updates.
func ProducerOfUpdates(p Plan, batch bool) string { return producerOfUpdates(p, batch) }

// updating reports whether a plan's output is a changelog with updates
// and deletes (as opposed to inserts only) when it runs as a stream.
func updating(p Plan, batch bool) bool {
	if batch {
		return false
	}
	switch p := p.(type) {
	case *Scan:
		return changelogSource(p.Table)
	case *Aggregate:
		return p.Window == nil
	case *Join:
		if p.Window != nil {
			return updating(p.Left, batch) || updating(p.Right, batch)
		}
		if p.Temporal && !batch {
			return updating(p.Left, batch)
		}
		return updating(p.Left, batch) || updating(p.Right, batch) || p.Type != "INNER" && p.Type != "SEMI"
	case *Sort:
		return updating(p.Input, batch) || p.Limit >= 0 && !temporalSort(p)
	case *Rank:
		return windowEnd(p.Input, p.Partition) < 0 || updating(p.Input, batch)
	}
	for _, in := range p.Inputs() {
		if updating(in, batch) {
			return true
		}
	}
	return false
}

// producerOfUpdates names the node that makes a plan updating, for the
// error that refuses it.
func producerOfUpdates(p Plan, batch bool) string {
	for _, in := range p.Inputs() {
		if updating(in, batch) {
			return producerOfUpdates(in, batch)
		}
	}
	return p.describe()
}

// CastToSink fits a query's columns to a sink table's physical columns
// (all of them, or those named by INSERT INTO t (cols)), casting where the
// types differ, as INSERT INTO does in Flink.
func CastToSink(p Plan, t *catalog.Table, cols []string) (Plan, error) {
	var target []int
	if len(cols) == 0 {
		for i, c := range t.Columns {
			if c.Kind == catalog.Physical || c.Kind == catalog.Metadata && !c.Virtual {
				target = append(target, i)
			}
		}
	} else {
		for _, name := range cols {
			i := t.Column(name)
			if i < 0 {
				return nil, fmt.Errorf("Unknown target column '%s'", name)
			}
			target = append(target, i)
		}
	}
	in := p.Fields()
	if len(in) != len(target) && len(cols) == 0 {
		return nil, fmt.Errorf("Column types of query result and sink for '%s' do not match.\nCause: Different number of columns.\n\nQuery schema: [%s]\nSink schema:  [%s]", t.Path, schemaString(in), tableSchema(t, target))
	}
	if len(in) != len(target) {
		return nil, fmt.Errorf("INSERT INTO %s names %d columns, the query has %d", t.Path, len(target), len(in))
	}
	// Every physical column of the sink gets a value: those the INSERT
	// did not name get NULL.
	var all []int
	for i, c := range t.Columns {
		if c.Kind == catalog.Physical {
			all = append(all, i)
		}
	}
	if len(cols) == 0 {
		all = target
	}
	exprs := make([]Expr, len(all))
	fields := make([]Field, len(all))
	for j, col := range all {
		ct := t.Columns[col].Type
		fields[j] = Field{Name: t.Columns[col].Name, Type: ct}
		k := slices.Index(target, col)
		if k < 0 {
			if !ct.IsNullable() {
				return nil, fmt.Errorf("column %s of %s is NOT NULL and the INSERT gives it no value", t.Columns[col].Name, t.Path)
			}
			exprs[j] = &Literal{T: ct}
			continue
		}
		f := in[k]
		if !types.ImplicitCastable(f.Type, ct) && !types.ExplicitCastable(f.Type, ct) {
			return nil, fmt.Errorf("Column types of query result and sink for '%s' do not match: column %s has type %s, the sink's %s is %s", t.Path, f.Name, f.Type, t.Columns[col].Name, ct)
		}
		exprs[j] = castTo(&InputRef{Index: k, T: f.Type, Name: f.Name}, ct.WithNullable(ct.IsNullable() || f.Type.IsNullable()))
		fields[j].Type = exprs[j].Type()
	}
	return &Project{Input: p, Exprs: exprs, fields: fields}, nil
}

func schemaString(fs []Field) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.Name + ": " + f.Type.String()
	}
	return strings.Join(s, ", ")
}

func tableSchema(t *catalog.Table, cols []int) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = t.Columns[c].Name + ": " + t.Columns[c].Type.String()
	}
	return strings.Join(s, ", ")
}
