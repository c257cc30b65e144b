package planner

import (
	"math"
	"sync"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// watermarkStrategy is a table's WATERMARK FOR as a stream strategy: the
// rowtime column is the event time, exprWatermarks the generator, and
// table.exec.source.idle-timeout the idleness. onSource: the rows are the
// source's, whose computed columns are not computed yet (the scan's calc
// computes them after the source); the strategy computes the ones it
// needs itself.
func (t *Translator) watermarkStrategy(p *Scan, onSource bool) stream.WatermarkStrategy[types.Record] {
	rt := p.Rowtime
	wm := compile(p.Watermark)
	var computed []evaluator // by column, nil where physical
	if onSource && p.Computed != nil {
		computed = make([]evaluator, len(p.Computed))
		for i, e := range p.Computed {
			if e != nil {
				computed[i] = compile(e)
			}
		}
	}
	base := t.Ctx
	// full completes a source row with its computed columns, in a copy:
	// the row itself goes on to the scan's calc.
	full := func(ctx *functions.Context, r types.Record) (types.Row, bool) {
		if computed == nil {
			return r.Row, true
		}
		row := make(types.Row, len(r.Row))
		copy(row, r.Row)
		for i, c := range computed {
			if c != nil && i < len(row) {
				v, err := c(ctx, r.Row)
				if err != nil {
					return nil, false
				}
				row[i] = v
			}
		}
		return row, true
	}
	strategy := stream.ForGenerator(func() stream.WatermarkGenerator[types.Record] {
		// One generator per subtask (per split in a source), with its
		// own context.
		ctx := subtaskContext(base)
		return &exprWatermarks{eval: func(r types.Record) (int64, bool) {
			row, ok := full(ctx, r)
			if !ok {
				return 0, false
			}
			v, err := wm(ctx, row)
			if err != nil {
				return 0, false
			}
			return millis(v)
		}, interval: config.AutoWatermarkInterval.Get(t.Env.Config()).Milliseconds()}
	})
	// The assigner is shared by the subtasks: a computed rowtime takes a
	// context of its own from the pool.
	ctxs := sync.Pool{New: func() any { return subtaskContext(base) }}
	strategy = strategy.WithTimestampAssigner(func(r types.Record, _ int64) int64 {
		v := r.Row[rt]
		if computed != nil && computed[rt] != nil {
			ctx := ctxs.Get().(*functions.Context)
			row, ok := full(ctx, r)
			ctxs.Put(ctx)
			if !ok {
				return math.MinInt64
			}
			v = row[rt]
		}
		ms, ok := millis(v)
		if !ok {
			return math.MinInt64
		}
		return ms
	})
	if d := t.Opts.SourceIdleTimeout; d > 0 {
		// table.exec.source.idle-timeout: a subtask (in a source, a split)
		// without rows for d is idle, and active again at its next row,
		// as in Flink.
		strategy = strategy.WithIdleness(d)
	}
	return strategy
}
