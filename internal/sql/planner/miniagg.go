package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// Mini-batch and two-phase group aggregation, as Flink's
// table.exec.mini-batch.* and table.optimizer.agg-phase-strategy.
//
// With mini-batch on, a streaming GROUP BY buffers its input per key and
// applies a bundle of rows to a key's state at once, emitting at most one
// change per key per bundle. A bundle ends when it holds
// table.exec.mini-batch.size rows, when allow-latency has passed since
// its first row, and always before a checkpoint barrier or a watermark
// passes the operator (stream.KeyedFlusher, runtime.BarrierPreparer) and
// when the input ends: the buffer is never part of a checkpoint, so
// results stay exactly-once.
//
// Two-phase (AUTO or TWO_PHASE with mini-batch on, when every aggregate
// merges): a LocalGroupAggregate before the shuffle folds each bundle into
// one accumulator per key and sends that; the GlobalGroupAggregate after
// the shuffle merges them into its state (functions.Accumulator.Merge).

// aggStrategy says how a group aggregation runs: with mini-batches, and
// then in one or two phases.
func (t *Translator) aggStrategy(p *Aggregate) (miniBatch, twoPhase bool) {
	if t.Batch || p.Window != nil || !t.Opts.MiniBatch {
		return false, false
	}
	if t.Opts.AggPhase == "ONE_PHASE" {
		return true, false
	}
	retract := updating(p.Input, t.Batch)
	for _, a := range p.Aggs {
		if !a.Agg.CanMerge(retract) {
			return true, false
		}
	}
	return true, true
}

// miniBatch is the configuration and the bundle of a mini-batch group
// aggregation; the bundle is per subtask (made in Open).
type miniBatch struct {
	latency, size int64 // ms, rows
	merge         bool  // the input is a local aggregation's accumulators
	// bundle: rows per key, keys in the order they first came.
	rows    map[string][]types.Record
	order   []string
	n       int64
	timer   bool // a flush timer is set, at timerAt for timerKey
	timerAt int64
	timerK  string
	// partial decodes the accumulators of a local aggregation.
	partial []functions.Accumulator
}

func (f *aggFunc) openMiniBatch() {
	cfg := f.mini
	f.mini = &miniBatch{latency: cfg.latency, size: cfg.size, merge: cfg.merge, rows: map[string][]types.Record{}}
	if cfg.merge {
		f.mini.partial = make([]functions.Accumulator, len(f.p.Aggs))
		for i, a := range f.p.Aggs {
			f.mini.partial[i] = a.Agg.New(f.retract)
		}
	}
}

// buffer adds a row to the bundle, and applies the bundle when it is
// full.
func (f *aggFunc) buffer(r types.Record, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	m := f.mini
	k := ctx.CurrentKey()
	rows, ok := m.rows[k]
	if !ok {
		m.order = append(m.order, k)
	}
	m.rows[k] = append(rows, r)
	m.n++
	if !m.timer {
		m.timer, m.timerAt, m.timerK = true, ctx.CurrentProcessingTime()+m.latency, k
		ctx.RegisterProcessingTimeTimer(m.timerAt)
	}
	if m.n >= m.size {
		return f.Flush(ctx, out)
	}
	return nil
}

// Flush applies the bundle: each key's rows to its state, one change per
// key downstream.
func (f *aggFunc) Flush(ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.cache != nil {
		f.flushCache(ctx)
	}
	m := f.mini
	if m == nil {
		return nil
	}
	b := ctx.State()
	if m.timer {
		b.SetCurrentKey(m.timerK)
		ctx.DeleteProcessingTimeTimer(m.timerAt)
		m.timer = false
	}
	if m.n == 0 {
		return nil
	}
	for _, k := range m.order {
		b.SetCurrentKey(k)
		if err := f.applyBundle(m.rows[k], out); err != nil {
			return err
		}
	}
	clear(m.rows)
	m.order, m.n = m.order[:0], 0
	return nil
}

// applyBundle applies a key's buffered rows (or a local aggregation's
// accumulators) to its state and emits the change.
func (f *aggFunc) applyBundle(rows []types.Record, out stream.Collector[types.Record]) error {
	s, existed, err := f.load()
	if err != nil {
		return err
	}
	var before types.Row
	if existed {
		if before, err = f.result(s); err != nil {
			return err
		}
	} else if f.mini.merge {
		s.keyRow = slices.Clone(rows[0].Row[:len(f.keys)])
	} else {
		s.keyRow = make(types.Row, len(f.keys))
		for i, k := range f.keys {
			s.keyRow[i] = rows[0].Row[k]
		}
	}
	for _, r := range rows {
		if f.mini.merge {
			if err := f.mergePartial(s, r.Row); err != nil {
				return err
			}
			continue
		}
		add := r.Kind.IsAccumulate()
		if !add && s.count <= 0 {
			continue // a retraction of nothing (expired state), as one row at a time ignores it
		}
		if err := accumulate(f.p.Aggs, s, f.args, r, add); err != nil {
			return err
		}
	}
	if s.count <= 0 {
		f.st.Clear()
		if existed {
			out.Collect(types.Record{Kind: types.Delete, Row: before})
		}
		return nil
	}
	f.st.Update(s.encode(f.keyTypes))
	after, err := f.result(s)
	if err != nil {
		return err
	}
	emitGroupChange(out, existed, before, after, f.p.fields)
	return nil
}

// emitGroupChange emits a group's new result row: an insert for a new
// group, a -U/+U pair when the result changed, nothing when it did not.
func emitGroupChange(out stream.Collector[types.Record], existed bool, before, after types.Row, fields []Field) {
	switch {
	case !existed:
		out.Collect(types.Record{Kind: types.Insert, Row: after})
	case !rowsEqual(before, after, fields):
		out.Collect(types.Record{Kind: types.UpdateBefore, Row: before})
		out.Collect(types.Record{Kind: types.UpdateAfter, Row: after})
	}
}

// accumulate adds (or retracts) one input row to a group's accumulators.
func accumulate(aggs []AggCall, s *aggState, argBufs [][]any, r types.Record, add bool) error {
	for i, a := range aggs {
		if a.Filter >= 0 && r.Row[a.Filter] != true {
			continue
		}
		args := argBufs[i]
		for j, c := range a.Args {
			args[j] = r.Row[c]
		}
		var err error
		if add {
			err = s.accs[i].Add(args)
		} else {
			err = s.accs[i].Retract(args)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a.Agg.Name, err)
		}
	}
	if add {
		s.count++
	} else {
		s.count--
	}
	return nil
}

// mergePartial merges a local aggregation's row (keys, row count,
// accumulators) into a group.
func (f *aggFunc) mergePartial(s *aggState, row types.Row) error {
	nk := len(f.keys)
	s.count += row[nk].(int64)
	for i, acc := range s.accs {
		p := f.mini.partial[i]
		if err := p.DecodeState(row[nk+1+i].([]byte)); err != nil {
			return fmt.Errorf("%s: local accumulator: %w", f.p.Aggs[i].Agg.Name, err)
		}
		if err := acc.Merge(p); err != nil {
			return fmt.Errorf("%s: %w", f.p.Aggs[i].Agg.Name, err)
		}
	}
	return nil
}

// partialFields are the columns a local aggregation sends: the group's
// keys, its number of rows (net of retractions) and each accumulator.
func partialFields(p *Aggregate, inFields []Field, keys []int) []Field {
	out := make([]Field, 0, len(keys)+1+len(p.Aggs))
	for _, k := range keys {
		out = append(out, Field{Name: inFields[k].Name, Type: inFields[k].Type})
	}
	out = append(out, Field{Name: "$count", Type: types.BigInt().NotNull()})
	for _, a := range p.Aggs {
		out = append(out, Field{Name: "$acc_" + a.Name, Type: types.Bytes().NotNull()})
	}
	return out
}

// miniBatchAggregate builds a mini-batch group aggregation, in one phase
// or as a local and a global one.
func (t *Translator) miniBatchAggregate(in *Rows, p *Aggregate, inFields []Field, keys []int, keyTypes []types.DataType, twoPhase bool) *Rows {
	retract := updating(p.Input, t.Batch)
	cfg := &miniBatch{latency: max(1, t.Opts.MiniBatchLatency.Milliseconds()), size: t.Opts.MiniBatchSize}
	f := &aggFunc{p: p, keys: keys, retract: retract, keyTypes: keyTypes, ttl: t.stateTTL(), mini: cfg}
	// Flink's MiniBatchAssigner in ProcTime mode: the input's event-time
	// watermarks stop here (the end of input passes). A bundle ends
	// before every watermark, and a table's watermark may now advance
	// with every row; the aggregation's output has no time attribute, so
	// nothing after it needs them.
	in = withCodec(in.AssignTimestampsAndWatermarks(stream.NoWatermarks[types.Record]()).Name("MiniBatchAssigner"), inFields)
	name := "GroupAggregate"
	var ks *stream.KeyedStream[string, types.Record]
	if twoPhase {
		lop := &localAgg{p: p, keys: keys, keyTypes: keyTypes, retract: retract, latency: cfg.latency, size: cfg.size}
		local := stream.Transform[types.Record, types.Record](in, "local-group-aggregate", "LocalGroupAggregate",
			func(oc *runtime.OperatorContext, out runtime.Output[types.Record]) (runtime.Output[types.Record], error) {
				op := &localAggOp{localAgg: *lop, oc: oc, out: out, groups: map[string]*aggState{}}
				op.args = make([][]any, len(p.Aggs))
				for i, a := range p.Aggs {
					op.args[i] = make([]any, len(a.Args))
				}
				oc.Register(op)
				return op, nil
			})
		pf := partialFields(p, inFields, keys)
		local = withCodec(local, pf)
		prefix := make([]int, len(keys))
		for i := range prefix {
			prefix[i] = i
		}
		ks = stream.KeyBy(local, func(r types.Record) string { return keyOf(r.Row, prefix, keyTypes) })
		cfg.merge = true
		name = "GlobalGroupAggregate"
	} else {
		ks = stream.KeyBy(in, func(r types.Record) string { return keyOf(r.Row, keys, keyTypes) })
	}
	// The state is that of the one-phase aggregation (the same UID and
	// encoding), so that a savepoint restores across these options.
	s := stream.KeyedProcess[string, types.Record, types.Record](ks, f).Name(t.OpName(name)).UID(t.nextUID("agg"))
	if len(p.Keys) == 0 {
		s = s.SetParallelism(1)
	}
	return withCodec(s, p.fields)
}

// localAgg is the configuration of a local aggregation.
type localAgg struct {
	p             *Aggregate
	keys          []int
	keyTypes      []types.DataType
	retract       bool
	latency, size int64
}

// localAggOp is the LocalGroupAggregate: it folds the rows of a bundle
// into one accumulator per key and sends them on when the bundle ends.
// It keeps no state: the bundle is flushed before every checkpoint
// barrier.
type localAggOp struct {
	localAgg
	oc     *runtime.OperatorContext
	out    runtime.Output[types.Record]
	groups map[string]*aggState
	order  []string
	n      int64
	args   [][]any
	timer  int64 // the scheduled flush's id, 0 if none
}

func (o *localAggOp) Emit(r types.Record, _ int64) {
	o.oc.Enter()
	k := keyOf(r.Row, o.keys, o.keyTypes)
	g := o.groups[k]
	if g == nil {
		g = &aggState{keyRow: make(types.Row, len(o.keys)), accs: make([]functions.Accumulator, len(o.p.Aggs))}
		for i, c := range o.keys {
			g.keyRow[i] = r.Row[c]
		}
		for i, a := range o.p.Aggs {
			g.accs[i] = a.Agg.New(o.retract)
		}
		o.groups[k] = g
		o.order = append(o.order, k)
	}
	if err := accumulate(o.p.Aggs, g, o.args, r, r.Kind.IsAccumulate()); err != nil {
		o.oc.Fail(err)
	}
	o.n++
	if o.timer == 0 {
		pts := o.oc.Task.ProcessingTime()
		o.timer = pts.Schedule(pts.Now()+o.latency, func(int64) {
			o.timer = 0
			o.flush()
		})
	}
	if o.n >= o.size {
		o.flush()
	}
}

// flush sends each key's accumulators of the bundle.
func (o *localAggOp) flush() {
	if o.timer != 0 {
		o.oc.Task.ProcessingTime().Cancel(o.timer)
		o.timer = 0
	}
	if o.n == 0 {
		return
	}
	for _, k := range o.order {
		g := o.groups[k]
		row := make(types.Row, 0, len(o.keys)+1+len(g.accs))
		row = append(row, g.keyRow...)
		row = append(row, g.count)
		for _, acc := range g.accs {
			row = append(row, acc.AppendState(nil))
		}
		o.out.Emit(types.Record{Kind: types.Insert, Row: row}, runtime.NoTimestamp)
		o.oc.Enter()
	}
	clear(o.groups)
	o.order, o.n = o.order[:0], 0
}

func (o *localAggOp) EmitWatermark(wm int64) {
	o.flush()
	o.out.EmitWatermark(wm)
}

func (o *localAggOp) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(o.out, idle) }

func (o *localAggOp) PrepareSnapshotPreBarrier(int64) { o.flush() }

func (o *localAggOp) Open() error { return nil }

func (o *localAggOp) Finish() error {
	o.oc.Enter()
	o.flush()
	return nil
}

func (o *localAggOp) Close() error { return nil }

// ExplainWith renders a plan as Explain does, with the operators that the
// session's options add: a mini-batch group aggregation shows Flink's
// MiniBatchAssigner below it, and a two-phase one shows as a
// GlobalGroupAggregate over a LocalGroupAggregate.
func ExplainWith(p Plan, o ExecOptions, batch bool) string {
	t := &Translator{Batch: batch, Opts: o}
	var b strings.Builder
	line := func(depth int, text string) {
		b.WriteString(strings.Repeat("   ", depth))
		if depth > 0 {
			b.WriteString("+- ")
		}
		b.WriteString(text)
		b.WriteString("\n")
	}
	var walk func(p Plan, depth int)
	walk = func(p Plan, depth int) {
		agg, ok := p.(*Aggregate)
		if mini, two := false, false; ok {
			if mini, two = t.aggStrategy(agg); mini {
				d := agg.describe()
				assigner := fmt.Sprintf("MiniBatchAssigner(interval=[%dms], mode=[ProcTime])", o.MiniBatchLatency.Milliseconds())
				if two {
					line(depth, "Global"+d)
					line(depth+1, "Local"+d)
					line(depth+2, assigner)
					walk(agg.Input, depth+3)
					return
				}
				line(depth, d)
				line(depth+1, assigner)
				walk(agg.Input, depth+2)
				return
			}
		}
		// A projection over a filter is one Calc, as Flink shows it.
		if pr, ok := p.(*Project); ok {
			if f, ok := pr.Input.(*Filter); ok {
				d := pr.describe()
				line(depth, strings.TrimSuffix(d, ")")+", where=["+f.Cond.String()+"])")
				walk(f.Input, depth+1)
				return
			}
		}
		line(depth, p.describe())
		for _, in := range p.Inputs() {
			walk(in, depth+1)
		}
	}
	walk(p, 0)
	return b.String()
}
