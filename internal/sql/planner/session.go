package planner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// session is one open session of a key: [start, end) where end is the
// last row's time plus the gap.
type session struct {
	start, end int64
	agg        *aggState
}

// sessionFunc aggregates per key and session: a row opens a session
// [t, t+gap) that merges with every session it overlaps; a session is
// final, and emitted, when the watermark passes its end.
type sessionFunc struct {
	p        *Aggregate
	keys     []int
	keyTypes []types.DataType
	st       state.ValueState[[]byte]
	args     []any
	maxArgs  int
	ltz      bool
}

func (f *sessionFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.st = state.Value[[]byte](ctx.State(), "sessions", nil)
	// Each subtask has its own copy of the function (a shallow one):
	// scratch space must be its own.
	f.args = make([]any, f.maxArgs)
	return nil
}

func (f *sessionFunc) newAgg() *aggState {
	s := &aggState{accs: make([]functions.Accumulator, len(f.p.Aggs))}
	for i, a := range f.p.Aggs {
		s.accs[i] = a.Agg.New(false)
	}
	return s
}

func (f *sessionFunc) load() ([]session, error) {
	b, ok := f.st.Value()
	if !ok {
		return nil, nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errors.New("corrupt session state")
	}
	b = b[k:]
	out := make([]session, 0, n)
	for range n {
		start, k1 := binary.Varint(b)
		if k1 <= 0 {
			return nil, errors.New("corrupt session state")
		}
		end, k2 := binary.Varint(b[k1:])
		if k2 <= 0 {
			return nil, errors.New("corrupt session state")
		}
		b = b[k1+k2:]
		l, k3 := binary.Uvarint(b)
		if k3 <= 0 || uint64(len(b)-k3) < l {
			return nil, errors.New("corrupt session state")
		}
		s := session{start: start, end: end, agg: f.newAgg()}
		if err := s.agg.decode(f.keyTypes, b[k3:k3+int(l)]); err != nil {
			return nil, err
		}
		out, b = append(out, s), b[k3+int(l):]
	}
	return out, nil
}

func (f *sessionFunc) save(ss []session) {
	if len(ss) == 0 {
		f.st.Clear()
		return
	}
	buf := binary.AppendUvarint(nil, uint64(len(ss)))
	for _, s := range ss {
		buf = binary.AppendVarint(buf, s.start)
		buf = binary.AppendVarint(buf, s.end)
		a := s.agg.encode(f.keyTypes)
		buf = binary.AppendUvarint(buf, uint64(len(a)))
		buf = append(buf, a...)
	}
	f.st.Update(buf)
}

func (f *sessionFunc) ProcessElement(r types.Record, ctx *stream.KeyedContext[string], _ stream.Collector[types.Record]) error {
	if !r.Kind.IsAccumulate() {
		return errors.New("SESSION windows take an input without updates")
	}
	ts, ok := millis(r.Row[f.p.Window.TimeCol])
	if !ok {
		return nil
	}
	w := f.p.Window
	ss, err := f.load()
	if err != nil {
		return err
	}
	if late(ss, ts, ts+w.Gap, ctx.CurrentWatermark()) {
		return nil
	}
	cur := session{start: ts, end: ts + w.Gap, agg: f.newAgg()}
	cur.agg.keyRow = make(types.Row, len(f.keys))
	for i, k := range f.keys {
		cur.agg.keyRow[i] = r.Row[k]
	}
	for i, a := range f.p.Aggs {
		if a.Filter >= 0 && r.Row[a.Filter] != true {
			continue
		}
		args := f.args[:len(a.Args)]
		for j, c := range a.Args {
			args[j] = r.Row[c]
		}
		if err := cur.agg.accs[i].Add(args); err != nil {
			return fmt.Errorf("%s: %w", a.Agg.Name, err)
		}
	}
	cur.agg.count = 1
	// Merge every session the new one overlaps.
	kept := ss[:0]
	for _, s := range ss {
		if intersects(s, cur) {
			cur.start, cur.end = min(cur.start, s.start), max(cur.end, s.end)
			for i := range cur.agg.accs {
				if err := s.agg.accs[i].Merge(cur.agg.accs[i]); err != nil {
					return err
				}
				cur.agg.accs[i] = s.agg.accs[i]
			}
			cur.agg.count += s.agg.count
			continue
		}
		kept = append(kept, s)
	}
	kept = append(kept, cur)
	f.save(kept)
	ctx.RegisterEventTimeTimer(cur.end - 1)
	return nil
}

// intersects is Flink's TimeWindow.intersects: windows that only touch
// (one's end is the other's start) intersect too, and merge.
func intersects(a, b session) bool { return a.start <= b.end && a.end >= b.start }

// late is Flink's rule for a row of a session window (its table
// runtime's MergingWindowProcessFunction): the row's window [start, end)
// is merged with the open sessions it intersects first, and the row is
// dropped only when the merged window has end - 1 at or below the
// watermark. Open sessions have not fired, so their end - 1 is above the
// watermark: a row whose own window closed still joins a session it
// touches, and is late only when it touches none.
func late(ss []session, start, end, wm int64) bool {
	if end-1 > wm {
		return false
	}
	row := session{start: start, end: end}
	for _, s := range ss {
		if intersects(s, row) {
			return false
		}
	}
	return true
}

func (f *sessionFunc) OnTimer(ts int64, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	ss, err := f.load()
	if err != nil {
		return err
	}
	kept := ss[:0]
	for _, s := range ss {
		// A merged session has a later end; its own timer emits it.
		if s.end-1 > ctx.CurrentWatermark() {
			kept = append(kept, s)
			continue
		}
		row := make(types.Row, 0, len(f.p.Keys)+len(f.p.Aggs))
		w := f.p.Window
		for i := range f.p.Keys {
			switch i {
			case w.Start:
				row = append(row, f.timestamp(s.start))
			case w.End:
				row = append(row, f.timestamp(s.end))
			case w.WindowTimeAt:
				row = append(row, f.timestamp(s.end-1))
			default:
				row = append(row, s.agg.keyRow[i])
			}
		}
		for _, acc := range s.agg.accs {
			v, err := acc.Result()
			if err != nil {
				return err
			}
			row = append(row, v)
		}
		out.Collect(types.Record{Kind: types.Insert, Row: row})
	}
	f.save(slices.Clone(kept))
	return nil
}

func (f *sessionFunc) timestamp(ms int64) any {
	if f.ltz {
		return types.TimestampLTZ{Millis: ms}
	}
	return types.Timestamp{Millis: ms}
}

// sessionAggregate keys rows by the keys other than the window's and runs
// sessionFunc.
func (t *Translator) sessionAggregate(in *Rows, p *Aggregate, inFields []Field) (*Rows, error) {
	w := p.Window
	var keys []int
	for i, k := range p.Keys {
		if i == w.Start || i == w.End || i == w.WindowTimeAt {
			// Keep the position so that keyRow lines up with p.Keys;
			// the value is the session's, filled in at emission.
			keys = append(keys, k)
			continue
		}
		keys = append(keys, k)
	}
	keyTypes := make([]types.DataType, len(keys))
	var routing []int
	var routingTypes []types.DataType
	for i, k := range keys {
		keyTypes[i] = inFields[k].Type.Nullable()
		if i != w.Start && i != w.End && i != w.WindowTimeAt {
			routing = append(routing, k)
			routingTypes = append(routingTypes, inFields[k].Type)
		}
	}
	maxArgs := 0
	for _, a := range p.Aggs {
		maxArgs = max(maxArgs, len(a.Args))
	}
	f := &sessionFunc{p: p, keys: keys, keyTypes: keyTypes, maxArgs: maxArgs,
		ltz: inFields[w.TimeCol].Type.Kind == types.KindTimestampLTZ}
	ks := stream.KeyBy(in, func(r types.Record) string { return keyOf(r.Row, routing, routingTypes) })
	s := stream.KeyedProcess[string, types.Record, types.Record](ks, f).Name(t.OpName("SessionWindowAggregate")).UID(t.nextUID("session"))
	if len(routing) == 0 {
		s = s.SetParallelism(1)
	}
	return withCodec(s, p.fields), nil
}
