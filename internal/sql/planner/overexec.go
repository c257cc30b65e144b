package planner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// rowList encodes a list of rows for keyed state.
type rowList struct{ ts []types.DataType }

func (l rowList) encode(rows []types.Row) []byte {
	buf := binary.AppendUvarint(nil, uint64(len(rows)))
	for _, r := range rows {
		buf = types.AppendRow(buf, l.ts, r)
	}
	return buf
}

func (l rowList) decode(b []byte) ([]types.Row, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errors.New("corrupt row list in state")
	}
	b = b[k:]
	rows := make([]types.Row, 0, n)
	for range n {
		r, rest, err := types.DecodeRow(l.ts, b)
		if err != nil {
			return nil, err
		}
		rows, b = append(rows, r), rest
	}
	return rows, nil
}

// windowEnd finds a partition's window_end column when the rows come from
// a window TVF or window aggregation: such a partition is complete when
// the watermark passes its window's end.
func windowEnd(in Plan, partition []int) int {
	fs := in.Fields()
	hasStart, end := false, -1
	for _, k := range partition {
		switch fs[k].Name {
		case "window_start":
			hasStart = true
		case "window_end":
			end = k
		}
	}
	if !hasStart || end < 0 || !fromWindow(in) {
		return -1
	}
	return end
}

func fromWindow(p Plan) bool {
	switch p := p.(type) {
	case *WindowTVF:
		return true
	case *Aggregate:
		return p.Window != nil
	case *Filter:
		return fromWindow(p.Input)
	case *Project:
		return fromWindow(p.Input)
	case *Over:
		return fromWindow(p.Input)
	}
	return false
}

// rankFunc keeps each partition's rows in rank order. Streaming, it emits
// the changes to the top rows as they happen; in batch mode, or per window
// when the partition is a window, it emits the final top rows when the
// partition is complete.
type rankFunc struct {
	p       *Rank
	ts      []types.DataType
	list    rowList
	st      state.ValueState[[]byte]
	final   bool // batch or windowed: emit once, at the end
	endCol  int  // window_end column, -1
	keepAll bool
	// ttl expires idle partitions (table.exec.state.ttl); 0 for none.
	ttl time.Duration
}

func (f *rankFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.st = bytesValue(ctx, "rows", f.ttl)
	return nil
}

func (f *rankFunc) load() ([]types.Row, error) {
	b, ok := f.st.Value()
	if !ok {
		return nil, nil
	}
	return f.list.decode(b)
}

func (f *rankFunc) cmp(a, b types.Row) int { return compareRows(a, b, f.p.Order, f.ts) }

// ranks numbers sorted rows by the rank kind.
func (f *rankFunc) ranks(rows []types.Row) []int64 {
	out := make([]int64, len(rows))
	dense := int64(0)
	for i := range rows {
		switch {
		case f.p.Kind == "ROW_NUMBER":
			out[i] = int64(i + 1)
		case i > 0 && f.cmp(rows[i-1], rows[i]) == 0:
			out[i] = out[i-1]
		case f.p.Kind == "RANK":
			out[i] = int64(i + 1)
			dense++
		default:
			dense++
			out[i] = dense
		}
	}
	return out
}

// top returns the rows ranked within the limit, with their ranks.
func (f *rankFunc) top(rows []types.Row) ([]types.Row, []int64) {
	rs := f.ranks(rows)
	n := 0
	for n < len(rows) && rs[n] <= f.p.Limit {
		n++
	}
	return rows[:n], rs[:n]
}

func withRank(r types.Row, rank int64) types.Row {
	out := make(types.Row, len(r)+1)
	copy(out, r)
	out[len(r)] = rank
	return out
}

func (f *rankFunc) ProcessElement(r types.Record, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.endCol >= 0 {
		end, _ := millis(r.Row[f.endCol])
		if end-1 <= ctx.CurrentWatermark() {
			return nil // late for its window
		}
		ctx.RegisterEventTimeTimer(end - 1)
	} else if f.final {
		ctx.RegisterEventTimeTimer(math.MaxInt64)
	}
	rows, err := f.load()
	if err != nil {
		return err
	}
	var oldTop []types.Row
	var oldRanks []int64
	if !f.final {
		oldTop, oldRanks = f.top(rows)
		oldTop = slices.Clone(oldTop)
	}
	if r.Kind.IsAccumulate() {
		// Insert after its peers: among equal keys, arrival order.
		i, _ := slices.BinarySearchFunc(rows, r.Row, func(a, b types.Row) int {
			if c := f.cmp(a, b); c != 0 {
				return c
			}
			return -1
		})
		rows = slices.Insert(rows, i, r.Row)
	} else {
		i := slices.IndexFunc(rows, func(x types.Row) bool { return rowsEqualTypes(x, r.Row, f.ts) })
		if i < 0 {
			return nil // never seen, or no longer kept
		}
		rows = slices.Delete(rows, i, i+1)
	}
	if !f.keepAll && !f.final {
		// An append-only input never brings a row back into the top:
		// the rest need not be kept.
		t, _ := f.top(rows)
		rows = rows[:len(t)]
	}
	f.st.Update(f.list.encode(rows))
	if f.final {
		return nil
	}
	newTop, newRanks := f.top(rows)
	for i := range max(len(oldTop), len(newTop)) {
		switch {
		case i >= len(newTop):
			out.Collect(types.Record{Kind: types.Delete, Row: withRank(oldTop[i], oldRanks[i])})
		case i >= len(oldTop):
			out.Collect(types.Record{Kind: types.Insert, Row: withRank(newTop[i], newRanks[i])})
		case oldRanks[i] != newRanks[i] || !rowsEqualTypes(oldTop[i], newTop[i], f.ts):
			out.Collect(types.Record{Kind: types.UpdateBefore, Row: withRank(oldTop[i], oldRanks[i])})
			out.Collect(types.Record{Kind: types.UpdateAfter, Row: withRank(newTop[i], newRanks[i])})
		}
	}
	return nil
}

func (f *rankFunc) OnTimer(_ int64, _ *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	rows, err := f.load()
	if err != nil {
		return err
	}
	f.st.Clear()
	top, ranks := f.top(rows)
	for i, r := range top {
		out.Collect(types.Record{Kind: types.Insert, Row: withRank(r, ranks[i])})
	}
	return nil
}

func rowsEqualTypes(a, b types.Row, ts []types.DataType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) || a[i] != nil && types.Compare(a[i], b[i], ts[i]) != 0 {
			return false
		}
	}
	return true
}

func partitionKey(in *Rows, partition []int, fs []Field) *stream.KeyedStream[string, types.Record] {
	kt := make([]types.DataType, len(partition))
	for i, k := range partition {
		kt[i] = fs[k].Type
	}
	return stream.KeyBy(in, func(r types.Record) string { return keyOf(r.Row, partition, kt) })
}

func (t *Translator) rank(p *Rank) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	inFields := p.Input.Fields()
	ts := fieldTypes(inFields)
	end := windowEnd(p.Input, p.Partition)
	f := &rankFunc{p: p, ts: ts, list: rowList{ts}, final: t.Batch || end >= 0, endCol: end, keepAll: updating(p.Input, t.Batch)}
	if !f.final {
		f.ttl = t.stateTTL()
	}
	s := stream.KeyedProcess[string, types.Record, types.Record](partitionKey(in, p.Partition, inFields), f).Name(t.OpName("Rank")).UID(t.nextUID("rank"))
	if len(p.Partition) == 0 {
		s = s.SetParallelism(1)
	}
	return withCodec(s, p.fields), nil
}

// overFunc computes window functions. In batch mode it sorts each whole
// partition when the input ends; streaming, the partition is ordered by an
// event-time attribute and rows are processed when the watermark passes
// their time, as Flink's OverAggregate does.
type overFunc struct {
	p        *Over
	ts       []types.DataType
	list     rowList
	batch    bool
	timeCol  int                        // streaming: the rowtime order column
	pending  state.TimeMapState[[]byte] // streaming: rows waiting for the watermark, by time
	all      state.ValueState[[]byte]   // batch: every row; streaming: retained rows
	accs     state.ValueState[[]byte]   // streaming: unbounded accumulators
	retainN  int64
	retainMs int64
}

func (f *overFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.all = state.Value[[]byte](ctx.State(), "rows", nil)
	f.pending = state.TimeMap[[]byte](ctx.State(), "pending")
	f.accs = state.Value[[]byte](ctx.State(), "accs", nil)
	return nil
}

func (f *overFunc) ProcessElement(r types.Record, ctx *stream.KeyedContext[string], _ stream.Collector[types.Record]) error {
	if !r.Kind.IsAccumulate() {
		return errors.New("OVER windows take an input without updates")
	}
	if f.batch {
		b, ok := f.all.Value()
		var rows []types.Row
		if ok {
			var err error
			if rows, err = f.list.decode(b); err != nil {
				return err
			}
		} else {
			ctx.RegisterEventTimeTimer(math.MaxInt64)
		}
		f.all.Update(f.list.encode(append(rows, r.Row)))
		return nil
	}
	ts, ok := millis(r.Row[f.timeCol])
	if !ok || ts <= ctx.CurrentWatermark() {
		return nil // late, as Flink drops it
	}
	b, _ := f.pending.Get(ts)
	var rows []types.Row
	if b != nil {
		var err error
		if rows, err = f.list.decode(b); err != nil {
			return err
		}
	} else {
		ctx.RegisterEventTimeTimer(ts)
	}
	f.pending.Put(ts, f.list.encode(append(rows, r.Row)))
	return nil
}

func (f *overFunc) newAcc(c *OverCall) functions.Accumulator { return c.Agg.New(false) }

func (f *overFunc) add(acc functions.Accumulator, c *OverCall, r types.Row) error {
	args := make([]any, len(c.Args))
	for i, a := range c.Args {
		args[i] = r[a]
	}
	return acc.Add(args)
}

// aggOver computes an aggregate over rows[lo:hi].
func (f *overFunc) aggOver(c *OverCall, rows []types.Row) (any, error) {
	acc := f.newAcc(c)
	for _, r := range rows {
		if err := f.add(acc, c, r); err != nil {
			return nil, err
		}
	}
	return acc.Result()
}

func (f *overFunc) OnTimer(ts int64, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.batch {
		return f.finishBatch(out)
	}
	b, ok := f.pending.Get(ts)
	if !ok {
		return nil
	}
	f.pending.Remove(ts)
	rows, err := f.list.decode(b)
	if err != nil {
		return err
	}
	var retained []types.Row
	if rb, ok := f.all.Value(); ok {
		if retained, err = f.list.decode(rb); err != nil {
			return err
		}
	}
	// Unbounded accumulators, one per call that needs one.
	accs := make([]functions.Accumulator, len(f.p.Calls))
	var st aggState
	for i := range f.p.Calls {
		c := &f.p.Calls[i]
		if c.Rank == "" && c.Preceding < 0 {
			accs[i] = f.newAcc(c)
			st.accs = append(st.accs, accs[i])
		}
	}
	if ab, ok := f.accs.Value(); ok {
		if err := st.decode(nil, ab); err != nil {
			return err
		}
	}
	// RANGE: every row at this time is a peer of the others.
	for i := range f.p.Calls {
		c := &f.p.Calls[i]
		if accs[i] != nil && !c.Rows {
			for _, r := range rows {
				if err := f.add(accs[i], c, r); err != nil {
					return err
				}
			}
		}
	}
	for k, r := range rows {
		outRow := make(types.Row, len(r), len(f.p.fields))
		copy(outRow, r)
		for i := range f.p.Calls {
			c := &f.p.Calls[i]
			var v any
			switch {
			case accs[i] != nil:
				if c.Rows {
					if err := f.add(accs[i], c, r); err != nil {
						return err
					}
				}
				if v, err = accs[i].Result(); err != nil {
					return err
				}
			case c.Rows:
				// The n rows before this one, then this one.
				frame := append(slices.Clone(retained), rows[:k+1]...)
				if int64(len(frame)) > c.Preceding+1 {
					frame = frame[int64(len(frame))-c.Preceding-1:]
				}
				if v, err = f.aggOver(c, frame); err != nil {
					return err
				}
			default:
				var frame []types.Row
				for _, x := range retained {
					if xt, _ := millis(x[f.timeCol]); xt >= ts-c.Preceding {
						frame = append(frame, x)
					}
				}
				if v, err = f.aggOver(c, append(frame, rows...)); err != nil {
					return err
				}
			}
			outRow = append(outRow, v)
		}
		out.Collect(types.Record{Kind: types.Insert, Row: outRow})
	}
	if len(st.accs) > 0 {
		f.accs.Update(st.encode(nil))
	}
	if f.retainN > 0 || f.retainMs > 0 {
		retained = append(retained, rows...)
		keep := 0
		for i, x := range retained {
			xt, _ := millis(x[f.timeCol])
			if int64(len(retained)-i) <= f.retainN || xt >= ts-f.retainMs {
				keep = i
				break
			}
			keep = i + 1
		}
		retained = retained[keep:]
		f.all.Update(f.list.encode(retained))
	}
	return nil
}

// finishBatch sorts a whole partition and computes every call per row.
func (f *overFunc) finishBatch(out stream.Collector[types.Record]) error {
	b, ok := f.all.Value()
	if !ok {
		return nil
	}
	f.all.Clear()
	rows, err := f.list.decode(b)
	if err != nil {
		return err
	}
	order := f.p.Order
	cmp := func(a, b types.Row) int { return compareRows(a, b, order, f.ts) }
	slices.SortStableFunc(rows, cmp)
	// peersEnd[i] is one past the last row equal to row i in the order.
	peersEnd := make([]int, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		if i+1 < len(rows) && cmp(rows[i], rows[i+1]) == 0 {
			peersEnd[i] = peersEnd[i+1]
		} else {
			peersEnd[i] = i + 1
		}
	}
	vals := make([][]any, len(f.p.Calls))
	for ci := range f.p.Calls {
		c := &f.p.Calls[ci]
		vals[ci] = make([]any, len(rows))
		if c.Rank != "" {
			rf := &rankFunc{p: &Rank{Order: order, Kind: c.Rank}, ts: f.ts}
			for i, r := range rf.ranks(rows) {
				vals[ci][i] = r
			}
			continue
		}
		for i := range rows {
			lo, hi := 0, len(rows)
			if c.Rows {
				if c.Preceding >= 0 {
					lo = max(0, i-int(c.Preceding))
				}
				if c.Following >= 0 {
					hi = min(len(rows), i+int(c.Following)+1)
				}
			} else {
				if c.Following >= 0 {
					hi = peersEnd[i]
					if c.Following > 0 {
						hi = rangeEnd(rows, i, c.Following, order[0], f.ts)
					}
				}
				if c.Preceding >= 0 {
					lo = rangeStart(rows, i, c.Preceding, order[0], f.ts, cmp)
				}
			}
			v, err := f.aggOver(c, rows[lo:hi])
			if err != nil {
				return err
			}
			vals[ci][i] = v
		}
	}
	for i, r := range rows {
		outRow := make(types.Row, len(r), len(f.p.fields))
		copy(outRow, r)
		for ci := range f.p.Calls {
			outRow = append(outRow, vals[ci][i])
		}
		out.Collect(types.Record{Kind: types.Insert, Row: outRow})
	}
	return nil
}

// numeric reads an order key as a number for RANGE offsets: milliseconds
// for times, the value for numbers.
func numeric(v any) (float64, bool) {
	switch v := v.(type) {
	case types.Timestamp:
		return float64(v.Millis), true
	case types.TimestampLTZ:
		return float64(v.Millis), true
	case types.Date:
		return float64(v) * 86_400_000, true
	case int8, int16, int32, int64:
		return float64(toInt(v)), true
	case float32:
		return float64(v), true
	case float64:
		return v, true
	case types.Decimal:
		f, _ := types.Cast(v, types.DecimalType(38, 18), types.Double())
		x, ok := f.(float64)
		return x, ok
	}
	return 0, false
}

// rangeStart is the first row whose key lies within offset before row i's
// (in the order's direction); peers of i are always inside.
func rangeStart(rows []types.Row, i int, offset int64, k SortKey, ts []types.DataType, cmp func(a, b types.Row) int) int {
	x, ok := numeric(rows[i][k.Index])
	if !ok {
		// A NULL key's range is its peers, the other NULLs.
		lo := i
		for lo > 0 && cmp(rows[lo-1], rows[i]) == 0 {
			lo--
		}
		return lo
	}
	lo := i
	for lo > 0 {
		y, ok := numeric(rows[lo-1][k.Index])
		if !ok {
			break
		}
		d := x - y
		if k.Desc {
			d = y - x
		}
		if d > float64(offset) {
			break
		}
		lo--
	}
	return lo
}

func rangeEnd(rows []types.Row, i int, offset int64, k SortKey, ts []types.DataType) int {
	x, ok := numeric(rows[i][k.Index])
	if !ok {
		return i + 1
	}
	hi := i + 1
	for hi < len(rows) {
		y, ok := numeric(rows[hi][k.Index])
		if !ok {
			break
		}
		d := y - x
		if k.Desc {
			d = x - y
		}
		if d > float64(offset) {
			break
		}
		hi++
	}
	return hi
}

func (t *Translator) over(p *Over) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	inFields := p.Input.Fields()
	ts := fieldTypes(inFields)
	f := &overFunc{p: p, ts: ts, list: rowList{ts}, batch: t.Batch, timeCol: -1}
	if !t.Batch {
		if len(p.Order) != 1 || p.Order[0].Desc || inFields[p.Order[0].Index].Type.TimeAttr != types.TimeAttrRowtime {
			return nil, errors.New("OVER windows of a streaming query must be ordered by one ascending event-time attribute; run the query in batch mode for other orders")
		}
		if updating(p.Input, t.Batch) {
			return nil, errors.New("OVER windows of a streaming query take an input without updates")
		}
		f.timeCol = p.Order[0].Index
		for _, c := range p.Calls {
			switch {
			case c.Rank != "":
				return nil, fmt.Errorf("%s in a streaming query needs a filter on its result (WHERE rownum <= N): Top-N", c.Rank)
			case c.Following != 0:
				return nil, errors.New("OVER windows of a streaming query end at the current row")
			case c.Preceding < 0:
			case c.Rows:
				f.retainN = max(f.retainN, c.Preceding)
			default:
				f.retainMs = max(f.retainMs, c.Preceding)
			}
		}
	}
	s := stream.KeyedProcess[string, types.Record, types.Record](partitionKey(in, p.Partition, inFields), f).Name(t.OpName("OverAggregate")).UID(t.nextUID("over"))
	if len(p.Partition) == 0 {
		s = s.SetParallelism(1)
	}
	return withCodec(s, p.fields), nil
}
