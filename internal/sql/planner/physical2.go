package planner

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// scan reads a table, computes its computed columns, applies pushed-down
// filters and, for a table with a watermark, assigns event time and
// watermarks from its rowtime column.
func (t *Translator) scan(p *Scan) (*Rows, error) {
	var push *stream.WatermarkStrategy[types.Record]
	if p.Rowtime >= 0 {
		// Offered to the connector, for watermarks per split inside the
		// source (SupportsWatermarkPushDown in Flink): computed on the
		// source's rows, before any filter, as Flink's pushed-down
		// generator is.
		s := t.watermarkStrategy(p, true)
		push = &s
	}
	// A streaming table's watermark is computed on every row the source
	// reads: Flink's filter push-down stops at its WatermarkAssigner, so a
	// row that the WHERE drops still advances the watermark. Such a scan
	// passes no filters to the connector and filters after the assigner.
	// (A connector that takes the strategy computes it inside the source,
	// before any filter, itself.)
	filters, after := p.Filters, []Expr(nil)
	if p.Rowtime >= 0 && !t.Batch {
		filters, after = nil, p.Filters
	}
	src, pushed, err := t.Connectors.scanSource(t, p.Table, p.Needed, filters, push)
	if err != nil {
		return nil, err
	}
	if p.Computed != nil || len(filters) > 0 {
		var exprs []Expr
		if p.Computed != nil {
			exprs = make([]Expr, len(p.fields))
			for i, f := range p.fields {
				if p.Computed[i] != nil {
					exprs[i] = p.Computed[i]
				} else {
					exprs[i] = &InputRef{Index: i, T: f.Type, Name: f.Name}
				}
			}
		}
		src = t.calc(src, exprs, and(t.Funcs, filters), p.fields)
	}
	if p.Rowtime >= 0 && !pushed {
		src = withCodec(src.AssignTimestampsAndWatermarks(t.watermarkStrategy(p, false)).Name(t.OpName("WatermarkAssigner")), p.fields)
	}
	if len(after) > 0 {
		src = t.calc(src, nil, and(t.Funcs, after), p.fields)
	}
	return src, nil
}

// exprWatermarks is a table's WATERMARK FOR as Flink's table runtime
// (WatermarkAssignerOperator) runs it: the largest watermark the
// expression gave so far, starting at 0, is emitted
//
//   - eagerly, after the record that advanced it, when it is more than
//     pipeline.auto-watermark-interval (read as milliseconds of event
//     time) ahead of the last one emitted: with an interval of 0 at
//     every advance, so that which records are late does not depend on
//     how fast the input is read;
//   - and on the periodic timer, every interval of processing time, when
//     it advanced at all (no timer with an interval of 0).
type exprWatermarks struct {
	eval func(types.Record) (int64, bool)
	// current is the largest watermark so far, last the one emitted.
	current, last int64
	interval      int64
}

func (g *exprWatermarks) OnEvent(r types.Record, _ int64, out stream.WatermarkOutput) {
	if ms, ok := g.eval(r); ok && ms > g.current {
		g.current = ms
	}
	if g.current-g.last > g.interval {
		g.OnPeriodicEmit(out)
	}
}

func (g *exprWatermarks) OnPeriodicEmit(out stream.WatermarkOutput) {
	if g.current > g.last {
		g.last = g.current
		out.EmitWatermark(g.current)
	}
}

// joinFunc is a regular (unbounded) join: each side's rows are kept, per
// join key, as a multiset in keyed state; a row joins the other side's
// rows on arrival, and a retraction withdraws the rows it made. Outer
// sides emit a NULL-padded row while they have no match, withdrawn once a
// match arrives.
type joinFunc struct {
	joinRows
	p                   *Join
	left, right         state.MapState[string, int64]
	leftOuter, rightOut bool
	// batch: the inputs end, so NULL-padded rows wait for the end of the
	// input (a timer at the end of time) instead of being emitted and
	// withdrawn: a batch result has no retractions.
	batch bool
	// semi (SEMI or ANTI join): the output is the left rows that have a
	// match (anti: none).
	semi, anti bool
	// temporal: a processing-time temporal join.
	temporal bool
	// waitRight: the right side of a temporal join is bounded, and left
	// rows wait until it is loaded.
	waitRight bool
	waiting   state.ListState[[]byte] // encoded left records
	// interval: an interval join, whose state expires by the watermark.
	interval *intervalBounds
	ctx      *Translator
	// ttl expires each side's rows (table.exec.state.ttl); 0 for none.
	ttl time.Duration
}

func (f *joinFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.left = countMap(ctx, "left", f.ttl)
	f.right = countMap(ctx, "right", f.ttl)
	f.evalCtx = subtaskContext(f.ctx.Ctx)
	if f.waitRight {
		f.waiting = state.List[[]byte](ctx.State(), "waiting")
	}
	return nil
}

func (f *joinFunc) ProcessElement1(r types.Record, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.temporal && f.waitRight && ctx.CurrentWatermark() == math.MinInt64 {
		// The bounded right table is still loading (its end moves the
		// watermark): hold the row until it has, so that every row sees
		// the whole table, as a lookup would.
		f.waiting.Add(types.AppendRecord(nil, f.lTypes, r))
		ctx.RegisterEventTimeTimer(math.MinInt64 + 1)
		return nil
	}
	if f.temporal {
		rights, counts, err := f.rows(f.right, f.rTypes)
		if err != nil {
			return err
		}
		matched := false
		for i, rr := range rights {
			ok, err := f.matches(r.Row, rr)
			if err != nil {
				return err
			}
			if ok {
				matched = true
				for range counts[i] {
					out.Collect(types.Record{Kind: r.Kind, Row: f.concat(r.Row, rr)})
				}
			}
		}
		if !matched && f.leftOuter {
			out.Collect(types.Record{Kind: r.Kind, Row: f.concat(r.Row, make(types.Row, len(f.rTypes)))})
		}
		return nil
	}
	if f.semi {
		return f.processSemi(r, true, ctx, out)
	}
	if f.batch {
		return f.processBatch(r, true, ctx, out)
	}
	f.expireLater(r.Row, true, ctx)
	return f.process(r, true, out)
}

// expireLater sets the timer at which an interval join's row can go.
func (f *joinFunc) expireLater(row types.Row, left bool, ctx *stream.KeyedContext[string]) {
	iv := f.interval
	if iv == nil {
		return
	}
	if left {
		if t, ok := millis(row[iv.leftCol]); ok {
			ctx.RegisterEventTimeTimer(t + iv.upper)
		}
		return
	}
	if t, ok := millis(row[iv.rightCol]); ok {
		ctx.RegisterEventTimeTimer(t - iv.lower)
	}
}

func (f *joinFunc) ProcessElement2(r types.Record, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.temporal {
		// The right side only changes the table later left rows see.
		key := string(types.AppendRow(nil, f.rTypes, r.Row))
		n, _ := f.right.Get(key)
		switch {
		case r.Kind.IsAccumulate():
			f.right.Put(key, n+1)
		case n <= 1:
			f.right.Remove(key)
		default:
			f.right.Put(key, n-1)
		}
		return nil
	}
	if f.semi {
		return f.processSemi(r, false, ctx, out)
	}
	if f.batch {
		return f.processBatch(r, false, ctx, out)
	}
	f.expireLater(r.Row, false, ctx)
	return f.process(r, false, out)
}

// processBatch keeps a row and emits its matches so far: every pair is
// emitted exactly once, by whichever of its two rows came second.
func (f *joinFunc) processBatch(r types.Record, fromLeft bool, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	thisState, otherState := f.left, f.right
	thisTypes, otherTypes := f.lTypes, f.rTypes
	if !fromLeft {
		thisState, otherState = f.right, f.left
		thisTypes, otherTypes = f.rTypes, f.lTypes
	}
	if !r.Kind.IsAccumulate() {
		return fmt.Errorf("join: a %s row in a batch input", r.Kind)
	}
	var err error
	otherState.Range(func(k string, n int64) bool {
		var row types.Row
		if row, _, err = types.DecodeRow(otherTypes, []byte(k)); err != nil {
			return false
		}
		l, rr := pairRows(fromLeft, r.Row, row)
		var ok bool
		if ok, err = f.matches(l, rr); err != nil {
			return false
		}
		if ok {
			for range n {
				out.Collect(types.Record{Kind: types.Insert, Row: f.concat(l, rr)})
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	key := string(types.AppendRow(nil, thisTypes, r.Row))
	n, _ := thisState.Get(key)
	thisState.Put(key, n+1)
	if f.leftOuter || f.rightOut {
		ctx.RegisterEventTimeTimer(math.MaxInt64)
	}
	return nil
}

// rows decodes a side's rows with their counts.
func (f *joinFunc) rows(st state.MapState[string, int64], ts []types.DataType) ([]types.Row, []int64, error) {
	var rows []types.Row
	var counts []int64
	var err error
	st.Range(func(k string, n int64) bool {
		var row types.Row
		if row, _, err = types.DecodeRow(ts, []byte(k)); err != nil {
			return false
		}
		rows, counts = append(rows, row), append(counts, n)
		return true
	})
	return rows, counts, err
}

// matchCount counts the right rows that match a left row.
func (f *joinFunc) matchCount(l types.Row, rights []types.Row, counts []int64) (int64, error) {
	var n int64
	for i, r := range rights {
		ok, err := f.matches(l, r)
		if err != nil {
			return 0, err
		}
		if ok {
			n += counts[i]
		}
	}
	return n, nil
}

// processSemi runs a semi or anti join: left rows pass while they have a
// match (semi) or none (anti). Batch, the decision waits for the end.
func (f *joinFunc) processSemi(r types.Record, fromLeft bool, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	st, ts := f.left, f.lTypes
	if !fromLeft {
		st, ts = f.right, f.rTypes
	}
	key := string(types.AppendRow(nil, ts, r.Row))
	add := r.Kind.IsAccumulate()
	if f.batch {
		if !add {
			return fmt.Errorf("join: a %s row in a batch input", r.Kind)
		}
		n, _ := st.Get(key)
		st.Put(key, n+1)
		ctx.RegisterEventTimeTimer(math.MaxInt64)
		return nil
	}
	passes := func(m int64) bool { return (m > 0) != f.anti }
	if fromLeft {
		rights, counts, err := f.rows(f.right, f.rTypes)
		if err != nil {
			return err
		}
		m, err := f.matchCount(r.Row, rights, counts)
		if err != nil {
			return err
		}
		n, _ := st.Get(key)
		switch {
		case add:
			st.Put(key, n+1)
		case n <= 1:
			st.Remove(key)
		default:
			st.Put(key, n-1)
		}
		if passes(m) && (add || n > 0) {
			kind := types.Insert
			if !add {
				kind = types.Delete
			}
			out.Collect(types.Record{Kind: kind, Row: r.Row})
		}
		return nil
	}
	// A right row changes the fate of the left rows it matches.
	lefts, lcounts, err := f.rows(f.left, f.lTypes)
	if err != nil {
		return err
	}
	rights, rcounts, err := f.rows(f.right, f.rTypes)
	if err != nil {
		return err
	}
	before := make([]int64, len(lefts))
	for i, l := range lefts {
		if before[i], err = f.matchCount(l, rights, rcounts); err != nil {
			return err
		}
	}
	n, _ := st.Get(key)
	switch {
	case add:
		st.Put(key, n+1)
	case n == 0:
		return nil
	case n == 1:
		st.Remove(key)
	default:
		st.Put(key, n-1)
	}
	for i, l := range lefts {
		ok, err := f.matches(l, r.Row)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		after := before[i] + 1
		if !add {
			after = before[i] - 1
		}
		if passes(before[i]) == passes(after) {
			continue
		}
		kind := types.Insert
		if !passes(after) {
			kind = types.Delete
		}
		for range lcounts[i] {
			out.Collect(types.Record{Kind: kind, Row: l})
		}
	}
	return nil
}

// OnTimer ends a batch join's key: the rows of an outer side that matched
// nothing are emitted padded with NULLs; a semi or anti join emits the
// left rows that (do not) match.
func (f *joinFunc) OnTimer(ts int64, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.temporal && ts == math.MinInt64+1 {
		rows := f.waiting.Get()
		f.waiting.Clear()
		for _, b := range rows {
			r, _, err := types.DecodeRecord(f.lTypes, b)
			if err != nil {
				return fmt.Errorf("temporal join: %w", err)
			}
			if err := f.ProcessElement1(r, ctx, out); err != nil {
				return err
			}
		}
		return nil
	}
	if f.interval != nil {
		return f.expire(ctx.CurrentWatermark())
	}
	if f.semi {
		lefts, lcounts, err := f.rows(f.left, f.lTypes)
		if err != nil {
			return err
		}
		rights, rcounts, err := f.rows(f.right, f.rTypes)
		if err != nil {
			return err
		}
		for i, l := range lefts {
			m, err := f.matchCount(l, rights, rcounts)
			if err != nil {
				return err
			}
			if (m > 0) != f.anti {
				for range lcounts[i] {
					out.Collect(types.Record{Kind: types.Insert, Row: l})
				}
			}
		}
		return nil
	}
	pad := func(outer, inner state.MapState[string, int64], outerTypes, innerTypes []types.DataType, outerIsLeft bool) error {
		var inners []types.Row
		var err error
		inner.Range(func(k string, _ int64) bool {
			var row types.Row
			if row, _, err = types.DecodeRow(innerTypes, []byte(k)); err != nil {
				return false
			}
			inners = append(inners, row)
			return true
		})
		if err != nil {
			return err
		}
		outer.Range(func(k string, n int64) bool {
			var row types.Row
			if row, _, err = types.DecodeRow(outerTypes, []byte(k)); err != nil {
				return false
			}
			for _, in := range inners {
				l, r := pairRows(outerIsLeft, row, in)
				ok, merr := f.matches(l, r)
				if merr != nil {
					err = merr
					return false
				}
				if ok {
					return true
				}
			}
			l, r := pairRows(outerIsLeft, row, make(types.Row, len(innerTypes)))
			for range n {
				out.Collect(types.Record{Kind: types.Insert, Row: f.concat(l, r)})
			}
			return true
		})
		return err
	}
	if f.leftOuter {
		if err := pad(f.left, f.right, f.lTypes, f.rTypes, true); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	if f.rightOut {
		if err := pad(f.right, f.left, f.rTypes, f.lTypes, false); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	return nil
}

// joinRows is what every join operator does with a pair of rows:
// concatenate them, and check the join's residual condition on the
// concatenation. The join operators embed it.
type joinRows struct {
	lTypes, rTypes []types.DataType
	residual       evaluator // nil: none
	evalCtx        *functions.Context
}

func (j *joinRows) concat(l, r types.Row) types.Row {
	row := make(types.Row, len(j.lTypes)+len(j.rTypes))
	copy(row, l)
	copy(row[len(j.lTypes):], r)
	return row
}

func (j *joinRows) matches(l, r types.Row) (bool, error) {
	if j.residual == nil {
		return true, nil
	}
	v, err := j.residual(j.evalCtx, j.concat(l, r))
	return v == true, err
}

// process handles a row of one side. "this" is the side the row came
// from, "other" the opposite.
func (f *joinFunc) process(r types.Record, fromLeft bool, out stream.Collector[types.Record]) error {
	thisState, otherState := f.left, f.right
	thisTypes, otherTypes := f.lTypes, f.rTypes
	thisOuter, otherOuter := f.leftOuter, f.rightOut
	if !fromLeft {
		thisState, otherState = f.right, f.left
		thisTypes, otherTypes = f.rTypes, f.lTypes
		thisOuter, otherOuter = f.rightOut, f.leftOuter
	}
	pair := func(mine, theirs types.Row) types.Row {
		if fromLeft {
			return f.concat(mine, theirs)
		}
		return f.concat(theirs, mine)
	}
	nulls := func(n int) types.Row { return make(types.Row, n) }
	key := string(types.AppendRow(nil, thisTypes, r.Row))
	add := r.Kind.IsAccumulate()

	// The other side's matching rows, decoded once.
	type match struct {
		row   types.Row
		count int64
	}
	var ms []match
	var rangeErr error
	otherState.Range(func(k string, n int64) bool {
		row, _, err := types.DecodeRow(otherTypes, []byte(k))
		if err != nil {
			rangeErr = err
			return false
		}
		ok, err := f.matches(pairRows(fromLeft, r.Row, row))
		if err != nil {
			rangeErr = err
			return false
		}
		if ok {
			ms = append(ms, match{row, n})
		}
		return true
	})
	if rangeErr != nil {
		return fmt.Errorf("join: %w", rangeErr)
	}
	// How many of this side's rows match an other-side row, before this
	// one changes: an outer other side needs it to know when its
	// NULL-padded row appears or goes.
	associations := func(other types.Row) (int64, error) {
		var n int64
		var err error
		thisState.Range(func(k string, c int64) bool {
			row, _, derr := types.DecodeRow(thisTypes, []byte(k))
			if derr != nil {
				err = derr
				return false
			}
			ok, merr := f.matches(pairRows(fromLeft, row, other))
			if merr != nil {
				err = merr
				return false
			}
			if ok {
				n += c
			}
			return true
		})
		return n, err
	}
	if add {
		for _, m := range ms {
			if otherOuter {
				n, err := associations(m.row)
				if err != nil {
					return err
				}
				if n == 0 {
					for range m.count {
						out.Collect(types.Record{Kind: types.Delete, Row: pair(nulls(len(thisTypes)), m.row)})
					}
				}
			}
			for range m.count {
				out.Collect(types.Record{Kind: types.Insert, Row: pair(r.Row, m.row)})
			}
		}
		if len(ms) == 0 && thisOuter {
			out.Collect(types.Record{Kind: types.Insert, Row: pair(r.Row, nulls(len(otherTypes)))})
		}
		n, _ := thisState.Get(key)
		thisState.Put(key, n+1)
		return nil
	}
	n, ok := thisState.Get(key)
	if !ok {
		return nil // a retraction of a row never seen (state expired)
	}
	if n <= 1 {
		thisState.Remove(key)
	} else {
		thisState.Put(key, n-1)
	}
	for _, m := range ms {
		for range m.count {
			out.Collect(types.Record{Kind: types.Delete, Row: pair(r.Row, m.row)})
		}
		if otherOuter {
			left, err := associations(m.row)
			if err != nil {
				return err
			}
			if left == 0 {
				for range m.count {
					out.Collect(types.Record{Kind: types.Insert, Row: pair(nulls(len(thisTypes)), m.row)})
				}
			}
		}
	}
	if len(ms) == 0 && thisOuter {
		out.Collect(types.Record{Kind: types.Delete, Row: pair(r.Row, nulls(len(otherTypes)))})
	}
	return nil
}

// pairRows orders a row of the side "this" and one of the other side as
// (left, right).
func pairRows(fromLeft bool, mine, theirs types.Row) (types.Row, types.Row) {
	if fromLeft {
		return mine, theirs
	}
	return theirs, mine
}

func (t *Translator) join(p *Join) (*Rows, error) {
	if p.Versioned != nil {
		return t.temporalJoin(p)
	}
	if s := lookupScan(p); s != nil {
		return t.lookupJoin(p, s)
	}
	l, r, lt, rt, err := t.joinInputs(p)
	if err != nil {
		return nil, err
	}
	lkey, rkey := joinKeyFuncs(p, lt, rt)
	f := &joinFunc{joinRows: joinRows{lTypes: lt, rTypes: rt}, p: p, ctx: t, batch: t.Batch,
		semi: p.Type == "SEMI" || p.Type == "ANTI", anti: p.Type == "ANTI", temporal: p.Temporal && !t.Batch,
		waitRight: p.Temporal && !t.Batch && bounded(p.Right),
		interval:  map[bool]*intervalBounds{false: intervalOf(p)}[t.Batch],
		leftOuter: p.Type == "LEFT" || p.Type == "FULL", rightOut: p.Type == "RIGHT" || p.Type == "FULL"}
	if p.Residual != nil {
		f.residual = compile(p.Residual)
	}
	if !f.temporal && f.interval == nil {
		f.ttl = t.stateTTL()
	}
	ks := stream.ConnectKeyed(stream.KeyBy(l, lkey), stream.KeyBy(r, rkey))
	s := stream.KeyedCoProcess[string, types.Record, types.Record, types.Record](ks, f).Name(t.OpName("Join")).UID(t.nextUID("join"))
	if len(p.LeftKeys) == 0 {
		s = s.SetParallelism(1)
	}
	return withCodec(s, p.fields), nil
}

// singleRow passes on the one row of a scalar subquery and fails when a
// second one arrives.
func (t *Translator) singleRow(p *SingleRow) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	var live int
	s := stream.Process(in.Global(), stream.ProcessFunc[types.Record, types.Record](func(r types.Record, _ *stream.Context, c stream.Collector[types.Record]) error {
		if r.Kind.IsAccumulate() {
			live++
		} else {
			live--
		}
		if live > 1 {
			return fmt.Errorf("a scalar subquery returned more than one row")
		}
		c.Collect(r)
		return nil
	})).Name(t.OpName("SingleRow")).SetParallelism(1)
	return withCodec(s, p.Fields()), nil
}

func (t *Translator) replicate(p *Replicate) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	n := len(p.fields)
	s := stream.Process(in, stream.ProcessFunc[types.Record, types.Record](func(r types.Record, _ *stream.Context, c stream.Collector[types.Record]) error {
		times := toInt(r.Row[n])
		for range times {
			c.Collect(types.Record{Kind: r.Kind, Row: r.Row[:n:n]})
		}
		return nil
	})).Name(t.OpName("Replicate"))
	return withCodec(s, p.fields), nil
}

// bounded reports a plan whose sources all end (files read once, JDBC
// scans, datagen with a number of rows).
func bounded(p Plan) bool {
	if s, ok := p.(*Scan); ok {
		o := s.Table.Options
		switch o["connector"] {
		case "filesystem":
			return o["source.monitor-interval"] == ""
		case "jdbc":
			return true
		case "datagen":
			return o["number-of-rows"] != "" || strings.Contains(fmt.Sprint(o), ".kind:sequence")
		}
		return false
	}
	for _, in := range p.Inputs() {
		if !bounded(in) {
			return false
		}
	}
	return len(p.Inputs()) > 0
}

// intervalBounds says that a join's rows match only when the right row's
// time minus the left row's lies in [Lower, Upper] (ms): an interval join,
// whose rows can be dropped from state once the watermark has passed the
// last time a future row could match them.
type intervalBounds struct {
	leftCol, rightCol int // time columns in the left and right inputs
	lower, upper      int64
}

// timeOffset reads `col`, `col + INTERVAL` or `col - INTERVAL`.
func timeOffset(e Expr) (int, int64, bool) {
	switch x := e.(type) {
	case *InputRef:
		return x.Index, 0, true
	case *CastExpr:
		return timeOffset(x.Expr)
	case *Call:
		if len(x.Args) != 2 || x.Fn.Name != "+" && x.Fn.Name != "-" {
			return 0, 0, false
		}
		i, off, ok := timeOffset(x.Args[0])
		l, lok := x.Args[1].(*Literal)
		if !ok || !lok {
			return 0, 0, false
		}
		ms, ok := l.Value.(types.IntervalMillis)
		if !ok {
			return 0, 0, false
		}
		if x.Fn.Name == "-" {
			ms = -ms
		}
		return i, off + int64(ms), true
	}
	return 0, 0, false
}

// intervalOf finds the time bounds of an inner join's residual between an
// event-time attribute of each input.
func intervalOf(p *Join) *intervalBounds {
	if p.Type != "INNER" || p.Temporal || p.Residual == nil {
		return nil
	}
	lf, rf := p.Left.Fields(), p.Right.Fields()
	nl := len(lf)
	isTime := func(i int) bool {
		if i < nl {
			return lf[i].Type.TimeAttr == types.TimeAttrRowtime
		}
		return i-nl < len(rf) && rf[i-nl].Type.TimeAttr == types.TimeAttrRowtime
	}
	b := &intervalBounds{leftCol: -1, rightCol: -1, lower: math.MinInt64, upper: math.MaxInt64}
	// bound records a >= b (ge) or a <= b between a time of each side:
	// a = ia + oa, b = ib + ob.
	bound := func(ia int, oa int64, ib int, ob int64, ge bool) {
		if !isTime(ia) || !isTime(ib) || (ia < nl) == (ib < nl) {
			return
		}
		// Normalize to r - l compared with a constant.
		r, l, or, ol := ia, ib, oa, ob
		if ia < nl {
			r, l, or, ol = ib, ia, ob, oa
			ge = !ge
		}
		if b.leftCol >= 0 && (b.leftCol != l || b.rightCol != r-nl) {
			return
		}
		b.leftCol, b.rightCol = l, r-nl
		// r + or >= l + ol  <=>  r - l >= ol - or
		if ge {
			b.lower = max(b.lower, ol-or)
		} else {
			b.upper = min(b.upper, ol-or)
		}
	}
	for _, c := range conjuncts(p.Residual) {
		call, ok := c.(*Call)
		if !ok {
			continue
		}
		switch call.Fn.Name {
		case ">=", ">", "<=", "<":
			ia, oa, ok1 := timeOffset(call.Args[0])
			ib, ob, ok2 := timeOffset(call.Args[1])
			if ok1 && ok2 {
				bound(ia, oa, ib, ob, call.Fn.Name[0] == '>')
			}
		case "BETWEEN":
			ix, ox, ok1 := timeOffset(call.Args[0])
			il, ol, ok2 := timeOffset(call.Args[1])
			ih, oh, ok3 := timeOffset(call.Args[2])
			if ok1 && ok2 && ok3 {
				bound(ix, ox, il, ol, true)
				bound(ix, ox, ih, oh, false)
			}
		}
	}
	if b.leftCol < 0 || b.lower == math.MinInt64 || b.upper == math.MaxInt64 {
		return nil
	}
	return b
}

// expire drops the rows that no future row can match any more.
func (f *joinFunc) expire(wm int64) error {
	iv := f.interval
	drop := func(st state.MapState[string, int64], ts []types.DataType, col int, last func(t int64) int64) error {
		var gone []string
		var err error
		st.Range(func(k string, _ int64) bool {
			var row types.Row
			if row, _, err = types.DecodeRow(ts, []byte(k)); err != nil {
				return false
			}
			if t, ok := millis(row[col]); ok && last(t) <= wm {
				gone = append(gone, k)
			}
			return true
		})
		for _, k := range gone {
			st.Remove(k)
		}
		return err
	}
	if err := drop(f.left, f.lTypes, iv.leftCol, func(t int64) int64 { return t + iv.upper }); err != nil {
		return err
	}
	return drop(f.right, f.rTypes, iv.rightCol, func(t int64) int64 { return t - iv.lower })
}

// joinInputs translates a join's two inputs and returns them with their
// field types.
func (t *Translator) joinInputs(p *Join) (l, r *Rows, lt, rt []types.DataType, err error) {
	if l, err = t.Translate(p.Left); err != nil {
		return nil, nil, nil, nil, err
	}
	if r, err = t.Translate(p.Right); err != nil {
		return nil, nil, nil, nil, err
	}
	return l, r, fieldTypes(p.Left.Fields()), fieldTypes(p.Right.Fields()), nil
}
