package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// Versioned makes a temporal join an event-time one (FOR SYSTEM_TIME AS
// OF a rowtime attribute of the left input): each left row joins the
// version of the right row, by the right side's primary key, that was
// valid at the left row's time, once the watermark has passed that time.
type Versioned struct {
	// LeftTime and RightTime are the rowtime columns of the inputs.
	LeftTime, RightTime int
	// PK are the right columns of the primary key: the join's keys are
	// the equalities on them.
	PK []int
}

// versionedJoin makes a temporal join over a left rowtime attribute an
// event-time temporal join, checking what Flink checks: the right side is
// a versioned table (a primary key and a rowtime attribute of the same
// type as the left's), and the join's equalities cover the primary key.
// Equalities on other right columns are checked per pair, after the
// version is chosen.
func versionedJoin(j *Join, at Expr, atNode parser.Node, reg *functions.Registry) error {
	ref, ok := at.(*InputRef)
	if !ok {
		return errAt(atNode, "FOR SYSTEM_TIME AS OF needs a time attribute column of the left table, not the expression %s", at)
	}
	lf, rf := j.Left.Fields(), j.Right.Fields()
	pk := uniqueKey(j.Right)
	if len(pk) == 0 {
		return errAt(atNode, "Temporal Table Join requires primary key in versioned table, but no primary key can be found. The physical plan is:\n%s", strings.TrimRight(Explain(j.Right), "\n"))
	}
	rt := slices.IndexFunc(rf, func(f Field) bool { return f.Type.TimeAttr == types.TimeAttrRowtime })
	if rt < 0 {
		return errAt(atNode, "Event-Time Temporal Table Join requires both primary key and row time attribute in versioned table, but no row time attribute can be found.")
	}
	if lt, rtt := lf[ref.Index].Type, rf[rt].Type; lt.Kind != rtt.Kind {
		return errAt(atNode, "Event-Time Temporal Table Join requires same rowtime type in left table and versioned table, but the rowtime types are %s *ROWTIME* and %s *ROWTIME*.", lt.WithTimeAttr(types.TimeAttrNone), rtt.WithTimeAttr(types.TimeAttrNone))
	}
	v := &Versioned{LeftTime: ref.Index, RightTime: rt, PK: pk}
	for _, c := range pk {
		if !slices.Contains(j.RightKeys, c) {
			var eq []string
			for k := range j.LeftKeys {
				eq = append(eq, lf[j.LeftKeys[k]].Name+"="+rf[j.RightKeys[k]].Name)
			}
			var names []string
			for _, c := range pk {
				names = append(names, rf[c].Name)
			}
			return errAt(atNode, "Temporal table's primary key [%s] must be included in the equivalence condition of temporal join, but current temporal join condition is [%s].", strings.Join(names, ","), strings.Join(eq, ","))
		}
	}
	// The other equalities join the residual.
	nl := len(lf)
	var extra []Expr
	var lk, rk []int
	for i := range j.LeftKeys {
		if slices.Contains(pk, j.RightKeys[i]) && slices.Index(j.RightKeys, j.RightKeys[i]) == i {
			lk, rk = append(lk, j.LeftKeys[i]), append(rk, j.RightKeys[i])
			continue
		}
		a := &InputRef{Index: j.LeftKeys[i], T: lf[j.LeftKeys[i]].Type, Name: lf[j.LeftKeys[i]].Name}
		b := &InputRef{Index: nl + j.RightKeys[i], T: rf[j.RightKeys[i]].Type, Name: rf[j.RightKeys[i]].Name}
		fn, err := reg.Lookup("=", []types.DataType{a.T, b.T})
		if err != nil {
			return errAt(atNode, "temporal join condition %s = %s: %v", a.Name, b.Name, err)
		}
		extra = append(extra, &Call{Fn: fn, Args: []Expr{a, b}})
	}
	j.LeftKeys, j.RightKeys = lk, rk
	if len(extra) > 0 {
		j.Residual = and(reg, append(conjunctsOf(j.Residual), extra...))
	}
	j.Versioned = v
	return nil
}

// uniqueKey finds the columns of a plan that are a key of its rows: a
// table's primary key, the partition of a deduplication (ROW_NUMBER ... =
// 1), the grouping keys of an aggregation; nil if none is known.
func uniqueKey(p Plan) []int {
	switch p := p.(type) {
	case *Scan:
		var out []int
		for _, name := range p.Table.PrimaryKey {
			i := p.Table.Column(name)
			if i < 0 {
				return nil
			}
			out = append(out, i)
		}
		return out
	case *Filter:
		// WHERE rn = 1 (or <= 1) over a ROW_NUMBER per partition, not
		// yet made a Rank node: a deduplication.
		for _, c := range conjuncts(p.Cond) {
			call, ok := c.(*Call)
			if !ok || len(call.Args) != 2 || call.Fn.Name != "=" && call.Fn.Name != "<=" {
				continue
			}
			r, rok := call.Args[0].(*InputRef)
			l, lok := call.Args[1].(*Literal)
			if rok && lok && l.Value != nil && toInt(l.Value) == 1 {
				if k := rowNumberKey(p.Input, r.Index); k != nil {
					return k
				}
			}
		}
		return uniqueKey(p.Input)
	case *Project:
		return throughProject(p, uniqueKey(p.Input))
	case *Rank:
		if p.Limit == 1 && p.Kind == "ROW_NUMBER" && len(p.Partition) > 0 {
			return slices.Clone(p.Partition)
		}
	case *Aggregate:
		if p.Window == nil && p.Sets == nil && len(p.Keys) > 0 {
			out := make([]int, len(p.Keys))
			for i := range out {
				out[i] = i
			}
			return out
		}
	}
	return nil
}

// rowNumberKey returns the partition columns of a ROW_NUMBER that column
// col of p is, nil if it is not one.
func rowNumberKey(p Plan, col int) []int {
	switch p := p.(type) {
	case *Over:
		n := len(p.Input.Fields())
		if col >= n && col-n < len(p.Calls) && p.Calls[col-n].Rank == "ROW_NUMBER" && len(p.Partition) > 0 {
			return slices.Clone(p.Partition)
		}
	case *Project:
		if r, ok := p.Exprs[col].(*InputRef); ok {
			return throughProject(p, rowNumberKey(p.Input, r.Index))
		}
	}
	return nil
}

// throughProject maps columns of a projection's input to the output
// columns that pass them on; nil if one is not passed on.
func throughProject(p *Project, in []int) []int {
	if in == nil {
		return nil
	}
	out := make([]int, len(in))
	for k, c := range in {
		out[k] = slices.IndexFunc(p.Exprs, func(e Expr) bool {
			r, ok := e.(*InputRef)
			return ok && r.Index == c
		})
		if out[k] < 0 {
			return nil
		}
	}
	return out
}

func (p *Join) describeTemporal() string {
	if s := lookupScan(p); s != nil {
		return p.describeLookup(s)
	}
	l, r := p.Left.Fields(), p.Right.Fields()
	var conds []string
	for i := range p.LeftKeys {
		conds = append(conds, l[p.LeftKeys[i]].Name+" = "+r[p.RightKeys[i]].Name)
	}
	if p.Versioned != nil {
		conds = append(conds, fmt.Sprintf("__TEMPORAL_JOIN_CONDITION(%s, %s)", l[p.Versioned.LeftTime].Name, r[p.Versioned.RightTime].Name))
	}
	if p.Residual != nil {
		conds = append(conds, p.Residual.String())
	}
	typ := map[string]string{"INNER": "InnerJoin", "LEFT": "LeftOuterJoin"}[p.Type]
	return fmt.Sprintf("TemporalJoin(joinType=[%s], where=[%s])", typ, strings.Join(conds, " AND "))
}

// temporalJoin translates an event-time temporal join: both inputs keyed
// by the right side's primary key.
func (t *Translator) temporalJoin(p *Join) (*Rows, error) {
	l, r, lt, rt, err := t.joinInputs(p)
	if err != nil {
		return nil, err
	}
	kt := make([]types.DataType, len(p.LeftKeys))
	for i := range kt {
		kt[i], _ = types.LeastRestrictive(lt[p.LeftKeys[i]], rt[p.RightKeys[i]])
	}
	f := &temporalJoinFunc{joinRows: joinRows{lTypes: lt, rTypes: rt}, v: p.Versioned, outer: p.Type == "LEFT", ctx: t}
	if p.Residual != nil {
		f.residual = compile(p.Residual)
	}
	ks := stream.ConnectKeyed(stream.KeyBy(l, versionKey(p.LeftKeys, lt, kt)), stream.KeyBy(r, versionKey(p.RightKeys, rt, kt)))
	s := stream.KeyedCoProcess[string, types.Record, types.Record, types.Record](ks, f).Name(t.OpName("TemporalJoin")).UID(t.nextUID("temporal-join"))
	return withCodec(s, p.fields), nil
}

// versionKey encodes join key columns in their common type; a NULL key
// matches nothing, so its rows share one key that no version has.
func versionKey(keys []int, from, to []types.DataType) func(types.Record) string {
	return func(rec types.Record) string {
		var buf []byte
		for i, k := range keys {
			v := rec.Row[k]
			if v != nil && !from[k].EqualIgnoringNull(to[i]) {
				v, _ = types.Cast(v, from[k], to[i])
			}
			if v == nil {
				return "\x00null"
			}
			buf = types.AppendKey(buf, to[i], v)
		}
		return string(buf)
	}
}

// temporalJoinFunc is Flink's TemporalRowTimeJoinOperator. Per key it
// keeps the left rows not yet joined, by time, and the right versions by
// their time (a later row at the same time replaces the earlier; a -D
// ends the validity of the version before it; -U rows are not versions).
// When the watermark passes a left row's time the row joins the latest
// version at or before its time; versions older than the latest one at or
// below the watermark can no longer be chosen and are dropped.
type temporalJoinFunc struct {
	joinRows
	v     *Versioned
	outer bool
	ctx   *Translator
	// left: time -> encoded left records at that time; right: time ->
	// encoded right record (its kind says whether it is a version).
	left, right state.MapState[int64, []byte]
}

func (f *temporalJoinFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.left = state.Map[int64, []byte](ctx.State(), "left")
	f.right = state.Map[int64, []byte](ctx.State(), "right")
	f.evalCtx = subtaskContext(f.ctx.Ctx)
	return nil
}

func (f *temporalJoinFunc) ProcessElement1(r types.Record, ctx *stream.KeyedContext[string], _ stream.Collector[types.Record]) error {
	ts, ok := millis(r.Row[f.v.LeftTime])
	if !ok {
		return nil // no time: valid at no time
	}
	b, _ := f.left.Get(ts)
	f.left.Put(ts, types.AppendRecord(b, f.lTypes, r))
	ctx.RegisterEventTimeTimer(ts)
	return nil
}

func (f *temporalJoinFunc) ProcessElement2(r types.Record, ctx *stream.KeyedContext[string], _ stream.Collector[types.Record]) error {
	if r.Kind == types.UpdateBefore {
		// The +U that follows is the new version; the old one stays
		// valid until its time.
		return nil
	}
	ts, ok := millis(r.Row[f.v.RightTime])
	if !ok {
		return nil
	}
	f.right.Put(ts, types.AppendRecord(nil, f.rTypes, r))
	ctx.RegisterEventTimeTimer(ts)
	return nil
}

type version struct {
	ts  int64
	rec types.Record
}

// versions decodes the right versions sorted by time.
func (f *temporalJoinFunc) versions() ([]version, error) {
	var out []version
	var err error
	f.right.Range(func(ts int64, b []byte) bool {
		var r types.Record
		if r, _, err = types.DecodeRecord(f.rTypes, b); err != nil {
			return false
		}
		out = append(out, version{ts, r})
		return true
	})
	slices.SortFunc(out, func(a, b version) int { return cmpInt64(a.ts, b.ts) })
	return out, err
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// at returns the version valid at time ts, if any.
func at(vs []version, ts int64) (types.Row, bool) {
	i, found := slices.BinarySearchFunc(vs, ts, func(v version, t int64) int { return cmpInt64(v.ts, t) })
	if found {
		i++
	}
	if i == 0 || !vs[i-1].rec.Kind.IsAccumulate() {
		return nil, false
	}
	return vs[i-1].rec.Row, true
}

func (f *temporalJoinFunc) OnTimer(_ int64, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	wm := ctx.CurrentWatermark()
	vs, err := f.versions()
	if err != nil {
		return fmt.Errorf("temporal join: %w", err)
	}
	var due []int64
	f.left.Range(func(ts int64, _ []byte) bool {
		if ts <= wm {
			due = append(due, ts)
		}
		return true
	})
	slices.Sort(due)
	for _, ts := range due {
		b, _ := f.left.Get(ts)
		f.left.Remove(ts)
		for len(b) > 0 {
			var l types.Record
			if l, b, err = types.DecodeRecord(f.lTypes, b); err != nil {
				return fmt.Errorf("temporal join: %w", err)
			}
			if err := f.emit(l, vs, ts, out); err != nil {
				return err
			}
		}
	}
	// Keep the latest version at or below the watermark (left rows still
	// to come have later times) and those after it; a deletion at or
	// below the watermark ends everything before it, and itself.
	last := -1
	for i, v := range vs {
		if v.ts <= wm {
			last = i
		}
	}
	for i := range last {
		f.right.Remove(vs[i].ts)
	}
	if last >= 0 && !vs[last].rec.Kind.IsAccumulate() {
		f.right.Remove(vs[last].ts)
	}
	return nil
}

func (f *temporalJoinFunc) emit(l types.Record, vs []version, ts int64, out stream.Collector[types.Record]) error {
	r, ok := at(vs, ts)
	if ok && f.residual != nil {
		row := f.concat(l.Row, r)
		v, err := f.residual(f.evalCtx, row)
		if err != nil {
			return rowError(err, types.Record{Kind: l.Kind, Row: row})
		}
		ok = v == true
	}
	switch {
	case ok:
		out.Collect(types.Record{Kind: l.Kind, Row: f.concat(l.Row, r)})
	case f.outer:
		out.Collect(types.Record{Kind: l.Kind, Row: f.concat(l.Row, nil)})
	}
	return nil
}
