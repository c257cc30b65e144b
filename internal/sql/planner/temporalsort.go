package planner

import (
	"errors"
	"fmt"
	"slices"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// temporalSort reports a streaming ORDER BY whose first key is an
// ascending event-time attribute: Flink's temporal sort, which emits the
// rows in time order as the watermark passes them (append-only).
func temporalSort(p *Sort) bool {
	if len(p.Keys) == 0 {
		return false
	}
	k := p.Keys[0]
	return !k.Desc && p.Input.Fields()[k.Index].Type.TimeAttr == types.TimeAttrRowtime
}

// errNonTimeSort is Flink's refusal of a streaming ORDER BY whose first
// key is not an ascending time attribute.
var errNonTimeSort = errors.New("Sort on a non-time-attribute field is not supported. (A streaming ORDER BY needs an ascending event-time attribute as its first key; run other sorts with SET 'execution.runtime-mode' = 'batch')")

// temporalSortFunc buffers rows per event time in keyed state (one key:
// the operator runs in one subtask so that the order is global) and, when
// the watermark passes a time, emits that time's rows ordered by the
// other keys. Rows at or behind the watermark are late and dropped, as
// in Flink. Offset and Limit cut the sorted output.
type temporalSortFunc struct {
	p       *Sort
	ts      []types.DataType
	timeCol int
	list    rowList
	rows    state.MapState[int64, []byte]
	emitted state.ValueState[int64]
}

func (f *temporalSortFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.rows = state.Map[int64, []byte](ctx.State(), "rows")
	f.emitted = state.Value[int64](ctx.State(), "emitted", 0)
	return nil
}

func (f *temporalSortFunc) ProcessElement(r types.Record, ctx *stream.KeyedContext[string], _ stream.Collector[types.Record]) error {
	if !r.Kind.IsAccumulate() {
		return errors.New("ORDER BY a time attribute: the input retracted a row; a temporal sort takes appends only")
	}
	t, ok := millis(r.Row[f.timeCol])
	if !ok || t <= ctx.CurrentWatermark() {
		return nil // no time, or late
	}
	if f.p.Limit >= 0 {
		if n, _ := f.emitted.Value(); n >= f.p.Offset+f.p.Limit {
			return nil // the limit is reached: nothing more is emitted
		}
	}
	var rows []types.Row
	if b, ok := f.rows.Get(t); ok {
		var err error
		if rows, err = f.list.decode(b); err != nil {
			return fmt.Errorf("temporal sort: %w", err)
		}
	}
	f.rows.Put(t, f.list.encode(append(rows, r.Row)))
	ctx.RegisterEventTimeTimer(t)
	return nil
}

// OnTimer emits the rows of time ts, which the watermark has passed.
func (f *temporalSortFunc) OnTimer(ts int64, _ *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	b, ok := f.rows.Get(ts)
	if !ok {
		return nil
	}
	f.rows.Remove(ts)
	rows, err := f.list.decode(b)
	if err != nil {
		return fmt.Errorf("temporal sort: %w", err)
	}
	slices.SortStableFunc(rows, func(a, b types.Row) int { return compareRows(a, b, f.p.Keys[1:], f.ts) })
	n, _ := f.emitted.Value()
	for _, r := range rows {
		if f.p.Limit >= 0 && n >= f.p.Offset+f.p.Limit {
			break
		}
		if n >= f.p.Offset {
			out.Collect(types.Record{Kind: types.Insert, Row: r})
		}
		n++
	}
	f.emitted.Update(n)
	if f.p.Limit >= 0 && n >= f.p.Offset+f.p.Limit {
		f.rows.Clear()
	}
	return nil
}

// temporalSortOp translates a temporal sort: every row goes to one
// subtask, which emits in time order.
func (t *Translator) temporalSortOp(in *Rows, p *Sort) *Rows {
	f := &temporalSortFunc{p: p, ts: fieldTypes(p.Fields()), timeCol: p.Keys[0].Index}
	f.list = rowList{ts: f.ts}
	ks := stream.KeyBy(in.Global(), func(types.Record) string { return "" })
	s := stream.KeyedProcess[string, types.Record, types.Record](ks, f).Name(t.OpName("TemporalSort")).UID(t.nextUID("temporal-sort")).SetParallelism(1)
	return withCodec(s, p.Fields())
}
