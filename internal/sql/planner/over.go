package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
)

// Over computes window functions (OVER): each input row gets one more
// column per call, computed over the rows of its partition that the frame
// covers, in the partition's order.
type Over struct {
	Input     Plan
	Partition []int
	Order     []SortKey
	Calls     []OverCall
	fields    []Field
}

// OverCall is one window function.
type OverCall struct {
	// Rank is ROW_NUMBER, RANK or DENSE_RANK; "" for an aggregate.
	Rank string
	Agg  *functions.Aggregate
	Args []int
	// Rows says the frame counts rows (ROWS); otherwise it spans order
	// key values (RANGE). Preceding is the frame's start: -1 unbounded,
	// else a row count (ROWS) or an amount of the order key, in
	// milliseconds for time (RANGE). Following is the end: 0 the current
	// row (with its peers for RANGE), -1 unbounded.
	Rows      bool
	Preceding int64
	Following int64
	Name      string
}

// Rank keeps, per partition, the rows ranked 1..Limit by the order: the
// Top-N pattern (ROW_NUMBER() OVER (...) filtered by rownum <= N), which
// also covers deduplication (N = 1). The rank number is the last column.
type Rank struct {
	Input     Plan
	Partition []int
	Order     []SortKey
	Kind      string // ROW_NUMBER, RANK, DENSE_RANK
	Limit     int64
	fields    []Field
}

func (p *Over) Fields() []Field { return p.fields }
func (p *Rank) Fields() []Field { return p.fields }
func (p *Over) Inputs() []Plan  { return []Plan{p.Input} }
func (p *Rank) Inputs() []Plan  { return []Plan{p.Input} }

func sortKeys(keys []SortKey, in []Field) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = in[k.Index].Name
		if k.Desc {
			s[i] += " DESC"
		} else {
			s[i] += " ASC"
		}
	}
	return strings.Join(s, ", ")
}

func colNames(idx []int, in []Field) string {
	s := make([]string, len(idx))
	for i, k := range idx {
		s[i] = in[k].Name
	}
	return strings.Join(s, ", ")
}

func (p *Over) describe() string {
	in := p.Input.Fields()
	calls := make([]string, len(p.Calls))
	for i, c := range p.Calls {
		f := c.Rank
		if f == "" {
			f = c.Agg.Name + "(" + colNames(c.Args, in) + ")"
		} else {
			f += "()"
		}
		calls[i] = f + " AS " + c.Name
	}
	return fmt.Sprintf("OverAggregate(partitionBy=[%s], orderBy=[%s], select=[%s])", colNames(p.Partition, in), sortKeys(p.Order, in), strings.Join(calls, ", "))
}

func (p *Rank) describe() string {
	in := p.Input.Fields()
	return fmt.Sprintf("Rank(strategy=[%s], rankRange=[rankStart=1, rankEnd=%d], partitionBy=[%s], orderBy=[%s])", p.Kind, p.Limit, colNames(p.Partition, in), sortKeys(p.Order, in))
}

// overCallsIn finds the window function calls of an expression.
func overCallsIn(e parser.Expr) []*parser.FuncCall {
	var out []*parser.FuncCall
	var walk func(e parser.Expr)
	walk = func(e parser.Expr) {
		if e == nil {
			return
		}
		if f, ok := e.(*parser.FuncCall); ok && f.Over != nil {
			out = append(out, f)
			return
		}
		forChildren(e, walk)
	}
	walk(e)
	return out
}

// over plans the window functions of a select list over its input: the
// partition, order and argument expressions are computed by a projection
// below, one Over node per distinct window. It returns the new input and
// the scope in which the select list resolves (the input's columns, and
// each call by its SQL text).
func (b *binder) over(sel *parser.Select, in Plan, sc *scope, calls []*parser.FuncCall) (Plan, *scope, error) {
	named := map[string]*parser.WindowSpec{}
	for _, w := range sel.Windows {
		named[w.Name] = w.Spec
	}
	resolve := func(spec *parser.WindowSpec) (*parser.WindowSpec, error) {
		if spec.Ref == "" {
			return spec, nil
		}
		base, ok := named[spec.Ref]
		if !ok {
			return nil, errAt(spec, "window %s is not defined", spec.Ref)
		}
		out := *base
		if len(spec.PartitionBy) > 0 {
			out.PartitionBy = spec.PartitionBy
		}
		if len(spec.OrderBy) > 0 {
			out.OrderBy = spec.OrderBy
		}
		if spec.Frame != nil {
			out.Frame = spec.Frame
		}
		return &out, nil
	}
	// Extra columns computed below the Over nodes.
	inFields := in.Fields()
	exprs := make([]Expr, len(inFields))
	fields := slices.Clone(inFields)
	for i, f := range inFields {
		exprs[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
	}
	col := func(e Expr) int {
		if r, ok := e.(*InputRef); ok {
			return r.Index
		}
		for i, x := range exprs {
			if x.String() == e.String() {
				return i
			}
		}
		exprs = append(exprs, e)
		fields = append(fields, Field{Name: "$w" + strconv.Itoa(len(exprs)), Type: e.Type()})
		return len(exprs) - 1
	}
	type group struct {
		key   string
		part  []int
		order []SortKey
		calls []OverCall
		texts []string
	}
	var groups []*group
	for _, c := range calls {
		spec, err := resolve(c.Over)
		if err != nil {
			return nil, nil, err
		}
		var part []int
		for _, p := range spec.PartitionBy {
			e, err := b.expr(p, sc)
			if err != nil {
				return nil, nil, err
			}
			part = append(part, col(e))
		}
		var order []SortKey
		for _, o := range spec.OrderBy {
			e, err := b.expr(o.Expr, sc)
			if err != nil {
				return nil, nil, err
			}
			nullsFirst := !o.Desc
			if o.Nulls != "" {
				nullsFirst = o.Nulls == parser.NullsFirst
			}
			order = append(order, SortKey{Index: col(e), Desc: o.Desc, NullsFirst: nullsFirst})
		}
		name := strings.ToUpper(c.Name[len(c.Name)-1])
		oc := OverCall{Preceding: -1, Following: 0}
		switch name {
		case "ROW_NUMBER", "RANK", "DENSE_RANK":
			if len(c.Args) > 0 {
				return nil, nil, errAt(c, "%s takes no arguments", name)
			}
			if len(order) == 0 {
				return nil, nil, errAt(c, "%s needs ORDER BY in its window", name)
			}
			oc.Rank = name
		default:
			if !b.Funcs.IsAggregate(name) {
				return nil, nil, errAt(c, "%s is not a window function or an aggregate", name)
			}
			var argTypes []types.DataType
			for _, a := range c.Args {
				if _, ok := a.(*parser.Star); ok {
					continue
				}
				e, err := b.expr(a, sc)
				if err != nil {
					return nil, nil, err
				}
				oc.Args = append(oc.Args, col(e))
				argTypes = append(argTypes, e.Type())
			}
			agg, err := b.Funcs.LookupAggregate(name, argTypes, c.Distinct)
			if err != nil {
				return nil, nil, errAt(c, "%v", err)
			}
			oc.Agg = agg
			if err := b.frame(spec, order, fields, &oc); err != nil {
				return nil, nil, err
			}
		}
		key := fmt.Sprint(part, order)
		var g *group
		for _, x := range groups {
			if x.key == key {
				g = x
			}
		}
		if g == nil {
			g = &group{key: key, part: part, order: order}
			groups = append(groups, g)
		}
		g.calls = append(g.calls, oc)
		g.texts = append(g.texts, parser.Format(c))
	}
	var p Plan = in
	if len(exprs) > len(inFields) {
		p = &Project{Input: in, Exprs: exprs, fields: fields}
	}
	texts := map[string]int{}
	for _, g := range groups {
		out := slices.Clone(p.Fields())
		for i := range g.calls {
			c := &g.calls[i]
			// Hidden from *: the select list names the call's column.
			c.Name = "$w" + strconv.Itoa(len(out))
			var t types.DataType
			if c.Rank != "" {
				t = types.BigInt().NotNull()
			} else {
				t = c.Agg.Result
			}
			texts[g.texts[i]] = len(out)
			out = append(out, Field{Name: c.Name, Type: t})
		}
		p = &Over{Input: p, Partition: g.part, Order: g.order, Calls: g.calls, fields: out}
	}
	return p, &scope{fields: p.Fields(), over: texts}, nil
}

// frame reads a window's frame into a call; without one, a window with
// ORDER BY covers the rows up to the current one and its peers (RANGE
// UNBOUNDED PRECEDING), one without covers the whole partition.
func (b *binder) frame(spec *parser.WindowSpec, order []SortKey, fields []Field, c *OverCall) error {
	f := spec.Frame
	if f == nil {
		if len(order) == 0 {
			c.Following = -1
		}
		return nil
	}
	c.Rows = f.Rows
	bound := func(fb parser.FrameBound, start bool) (int64, error) {
		switch fb.Kind {
		case parser.UnboundedPreceding, parser.UnboundedFollowing:
			return -1, nil
		case parser.CurrentRow:
			return 0, nil
		}
		x, err := b.expr(fb.Offset, &scope{})
		if err != nil {
			return 0, err
		}
		l, ok := fold(x, b.Ctx).(*Literal)
		if !ok || l.Value == nil {
			return 0, errAt(spec, "a frame bound must be a constant")
		}
		var n int64
		switch v := l.Value.(type) {
		case types.IntervalMillis:
			n = int64(v)
		default:
			n = toInt(v)
		}
		if n < 0 {
			return 0, errAt(spec, "a frame bound must not be negative")
		}
		if f.Rows && l.T.Kind.IsInterval() {
			return 0, errAt(spec, "ROWS frames count rows: an interval bound needs RANGE")
		}
		if (fb.Kind == parser.Preceding) != start {
			return 0, errAt(spec, "frames of the form %s are not supported; use PRECEDING for the start and CURRENT ROW or FOLLOWING for the end", fb.Kind)
		}
		return n, nil
	}
	var err error
	if c.Preceding, err = bound(f.Start, true); err != nil {
		return err
	}
	if f.End == nil {
		c.Following = 0
		return nil
	}
	c.Following, err = bound(*f.End, false)
	if err != nil {
		return err
	}
	if !f.Rows && c.Preceding > 0 && len(order) != 1 {
		return errAt(spec, "a RANGE frame with an offset needs exactly one ORDER BY key")
	}
	return nil
}
