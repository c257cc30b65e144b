package window

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/runtime"
)

// Snapshots. SnapshotState encodes everything that determines the
// operator's future output, so that a restored operator continues exactly
// as the original would:
//
//   - the operator's watermark (lateness, EventTimeTrigger.OnElement and
//     the fast path's "already fired" all depend on it);
//   - general path: every key with its windows (accumulator, or buffered
//     elements with their timestamps; the trigger's state; the function's
//     per-window State), its timer index (time -> windows, event and
//     processing time) and its per-key State; then the runtime
//     TimerService's timers (TimerService.Snapshot);
//   - fast path: every open pane (window start -> each key's accumulator
//     and per-window State, in the keys' arrival order) and the per-key
//     State.
//
// Accumulators are encoded with codec.For[ACC], buffered elements with
// codec.For[T] and keys with codec.For[K]; a type without a codec makes
// SnapshotState fail (the checkpoint is declined, never taken without the
// state) while the operator holds state of that type. An operator with no
// state at all snapshots to nothing.
//
// RestoreState runs before Open, once per piece (after a rescale, once per
// old subtask): it keeps only the keys of this subtask's key groups when
// the state was rescaled, and merges the pieces. The watermark is the
// lowest of the pieces' (aligned barriers give every subtask the same
// one). The runtime timers are restored in Open, after the watermark is
// set, so that none fires before the operator runs; every (key, time) in
// the restored timer index is registered again, which keeps the runtime's
// timers consistent with the index.

const (
	snapVersion = 1
	modeGeneral = 0
	modeFast    = 1
)

var errCorruptSnapshot = errors.New("window: corrupt snapshot")

// SnapshotState encodes the operator's state (see above).
func (op *operator[K, T, ACC, V, OUT]) SnapshotState(int64) ([]byte, error) {
	if op.fast != nil {
		if len(op.fast.panes) == 0 && len(op.fast.global) == 0 {
			return nil, nil
		}
		return op.snapshotFast()
	}
	if len(op.keys) == 0 && op.timers.NumEventTimeTimers() == 0 && op.timers.NumProcessingTimeTimers() == 0 {
		return nil, nil
	}
	return op.snapshotGeneral()
}

func (op *operator[K, T, ACC, V, OUT]) header(mode byte) []byte {
	buf := []byte{snapVersion, mode}
	return codec.Int64.Append(buf, op.watermark())
}

func (op *operator[K, T, ACC, V, OUT]) snapshotGeneral() ([]byte, error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("window state: key: %w", err)
	}
	var tc codec.Codec[T]
	var ac codec.Codec[ACC]
	if op.buffers {
		if tc, err = codec.For[T](); err != nil {
			return nil, fmt.Errorf("window state: buffered elements: %w", err)
		}
	} else if ac, err = codec.For[ACC](); err != nil {
		return nil, fmt.Errorf("window state: accumulator: %w", err)
	}
	tm, err := op.timers.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("window state: %w", err)
	}
	buf := op.header(modeGeneral)
	buf = codec.Uint64.Append(buf, uint64(len(op.keys)))
	for key, ks := range op.keys {
		buf = kc.Append(buf, key)
		buf = codec.Uint64.Append(buf, uint64(len(ks.windows)))
		for _, w := range sortedWindows(ks.windows) {
			st := ks.windows[w]
			buf = appendWindow(buf, w)
			if op.buffers {
				buf = codec.AppendSlice(tc, buf, st.vals)
				buf = codec.AppendSlice(codec.Int64, buf, st.ts)
			} else {
				buf = codec.Bool.Append(buf, st.has)
				if st.has {
					buf = ac.Append(buf, st.acc)
				}
			}
			buf = appendNamed(buf, st.trig)
			buf = appendNamed(buf, st.state.m)
		}
		buf = appendTimerIndex(buf, ks.eventTimers)
		buf = appendTimerIndex(buf, ks.procTimers)
		buf = appendNamed(buf, ks.global.m)
	}
	return codec.Bytes.Append(buf, tm), nil
}

func (op *operator[K, T, ACC, V, OUT]) snapshotFast() ([]byte, error) {
	if n := op.timers.NumEventTimeTimers() + op.timers.NumProcessingTimeTimers(); n != 0 {
		return nil, fmt.Errorf("window state: fast path with %d timers set", n)
	}
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("window state: key: %w", err)
	}
	ac, err := codec.For[ACC]()
	if err != nil {
		return nil, fmt.Errorf("window state: accumulator: %w", err)
	}
	fs := op.fast
	buf := op.header(modeFast)
	buf = codec.Uint64.Append(buf, uint64(len(fs.panes)))
	for _, p := range fs.panes {
		buf = codec.Int64.Append(buf, p.start)
		buf = codec.Uint64.Append(buf, uint64(len(p.slots)))
		for i := range p.slots {
			buf = kc.Append(buf, p.keys[i])
			buf = ac.Append(buf, p.slots[i].acc)
			buf = appendNamed(buf, p.slots[i].state.m)
		}
	}
	buf = codec.Uint64.Append(buf, uint64(len(fs.global)))
	for k, g := range fs.global {
		buf = kc.Append(buf, k)
		buf = appendNamed(buf, g.m)
	}
	return buf, nil
}

func sortedWindows[X any](m map[TimeWindow]X) []TimeWindow {
	ws := slices.Collect(maps.Keys(m))
	slices.SortFunc(ws, compareWindows)
	return ws
}

func appendWindow(buf []byte, w TimeWindow) []byte {
	return codec.Int64.Append(codec.Int64.Append(buf, w.Start), w.End)
}

// appendNamed encodes named int64 state in name order.
func appendNamed(buf []byte, m map[string]int64) []byte {
	buf = codec.Uint64.Append(buf, uint64(len(m)))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		buf = codec.Int64.Append(codec.String.Append(buf, name), m[name])
	}
	return buf
}

// appendTimerIndex encodes a timer index; the windows at a time keep their
// order.
func appendTimerIndex(buf []byte, idx map[int64][]TimeWindow) []byte {
	buf = codec.Uint64.Append(buf, uint64(len(idx)))
	for _, t := range slices.Sorted(maps.Keys(idx)) {
		buf = codec.Int64.Append(buf, t)
		buf = codec.Uint64.Append(buf, uint64(len(idx[t])))
		for _, w := range idx[t] {
			buf = appendWindow(buf, w)
		}
	}
	return buf
}

// reader decodes a snapshot; the first error sticks.
type reader struct {
	data []byte
	err  error
}

func read[X any](r *reader, c codec.Codec[X]) X {
	var zero X
	if r.err != nil {
		return zero
	}
	v, n, err := c.Decode(r.data)
	if err != nil {
		r.err = err
		return zero
	}
	r.data = r.data[n:]
	return v
}

// count reads a count, which cannot exceed the bytes left (every counted
// item takes at least one byte, except values of empty types).
func (r *reader) count() int {
	n := read(r, codec.Uint64)
	if r.err == nil && n > uint64(len(r.data)) {
		r.err = errCorruptSnapshot
		return 0
	}
	return int(n)
}

func (r *reader) window() TimeWindow {
	s := read(r, codec.Int64)
	return TimeWindow{Start: s, End: read(r, codec.Int64)}
}

func (r *reader) named() map[string]int64 {
	n := r.count()
	if n == 0 || r.err != nil {
		return nil
	}
	m := make(map[string]int64, n)
	for range n {
		name := read(r, codec.String)
		m[name] = read(r, codec.Int64)
	}
	return m
}

func (r *reader) timerIndex() map[int64][]TimeWindow {
	n := r.count()
	if n == 0 || r.err != nil {
		return nil
	}
	idx := make(map[int64][]TimeWindow, n)
	for range n {
		t := read(r, codec.Int64)
		m := r.count()
		list := make([]TimeWindow, 0, m)
		for range m {
			list = append(list, r.window())
		}
		if len(list) > 0 {
			idx[t] = list
		}
	}
	return idx
}

// RestoreState loads one piece of a snapshot (see above).
func (op *operator[K, T, ACC, V, OUT]) RestoreState(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if len(data) < 2 || data[0] != snapVersion {
		return fmt.Errorf("%w: unknown version", errCorruptSnapshot)
	}
	mode := data[1]
	if mode == modeFast && op.fast == nil || mode == modeGeneral && op.fast != nil || mode > modeFast {
		return fmt.Errorf("window: the snapshot is of another kind of window operator (fast path %v, now %v)", mode == modeFast, op.fast != nil)
	}
	r := &reader{data: data[2:]}
	wm := read(r, codec.Int64)
	if r.err != nil {
		return fmt.Errorf("window: restore: %w", r.err)
	}
	if !op.restored || wm < op.restoredWm {
		op.restoredWm = wm
	}
	op.restored = true
	keep, err := op.keyFilter()
	if err != nil {
		return err
	}
	if mode == modeFast {
		err = op.restoreFast(r, keep)
	} else {
		err = op.restoreGeneral(r, keep)
	}
	if err == nil && r.err == nil && len(r.data) != 0 {
		err = fmt.Errorf("%w: %d trailing bytes", errCorruptSnapshot, len(r.data))
	}
	if err == nil {
		err = r.err
	}
	if err != nil {
		return fmt.Errorf("window: restore: %w", err)
	}
	return nil
}

// keyFilter returns, for a rescaled restore, the test that a key belongs
// to this subtask's key groups; nil keeps every key.
func (op *operator[K, T, ACC, V, OUT]) keyFilter() (func(K) bool, error) {
	if op.oc.Task == nil || !op.oc.Rescaled() {
		return nil, nil
	}
	hash, err := runtime.NewKeyHasher[K]()
	if err != nil {
		return nil, fmt.Errorf("window: restore: key hash: %w", err)
	}
	return runtime.KeyFilter(op.oc, hash), nil
}

func (op *operator[K, T, ACC, V, OUT]) restoreGeneral(r *reader, keep func(K) bool) error {
	kc, err := codec.For[K]()
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	var tc codec.Codec[T]
	var ac codec.Codec[ACC]
	if op.buffers {
		if tc, err = codec.For[T](); err != nil {
			return fmt.Errorf("buffered elements: %w", err)
		}
	} else if ac, err = codec.For[ACC](); err != nil {
		return fmt.Errorf("accumulator: %w", err)
	}
	nk := read(r, codec.Uint64)
	for i := uint64(0); i < nk && r.err == nil; i++ {
		key := read(r, kc)
		ks := &keyState[T, ACC]{}
		nw := r.count()
		for range nw {
			w := r.window()
			st := &contents[T, ACC]{}
			if op.buffers {
				var m int
				st.vals, m, err = codec.DecodeSlice(tc, nil, r.data)
				if err != nil {
					return err
				}
				r.data = r.data[m:]
				st.ts, m, err = codec.DecodeSlice(codec.Int64, nil, r.data)
				if err != nil {
					return err
				}
				r.data = r.data[m:]
				if len(st.vals) != len(st.ts) {
					return fmt.Errorf("%w: %d elements with %d timestamps", errCorruptSnapshot, len(st.vals), len(st.ts))
				}
			} else if st.has = read(r, codec.Bool); st.has {
				st.acc = read(r, ac)
			}
			st.trig = r.named()
			st.state.m = r.named()
			if r.err != nil {
				return r.err
			}
			if ks.windows == nil {
				ks.windows = make(map[TimeWindow]*contents[T, ACC], nw)
			}
			ks.windows[w] = st
		}
		ks.eventTimers = r.timerIndex()
		ks.procTimers = r.timerIndex()
		ks.global.m = r.named()
		if r.err != nil {
			return r.err
		}
		if keep != nil && !keep(key) || ks.empty() {
			continue
		}
		if _, dup := op.keys[key]; dup {
			return fmt.Errorf("%w: key %v in two pieces", errCorruptSnapshot, key)
		}
		op.keys[key] = ks
	}
	tm := read(r, codec.Bytes)
	if r.err != nil {
		return r.err
	}
	op.pendingTimers = append(op.pendingTimers, pendingTimers[K]{data: tm, keep: keep})
	return nil
}

func (op *operator[K, T, ACC, V, OUT]) restoreFast(r *reader, keep func(K) bool) error {
	kc, err := codec.For[K]()
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	ac, err := codec.For[ACC]()
	if err != nil {
		return fmt.Errorf("accumulator: %w", err)
	}
	fs := op.fast
	np := r.count()
	for range np {
		start := read(r, codec.Int64)
		ns := r.count()
		if r.err != nil {
			return r.err
		}
		var p *pane[K, ACC]
		for range ns {
			key := read(r, kc)
			s := slot[ACC]{acc: read(r, ac)}
			s.state.m = r.named()
			if r.err != nil {
				return r.err
			}
			if keep != nil && !keep(key) {
				continue
			}
			if p == nil {
				p = fs.pane(start)
			}
			if _, dup := p.idx[key]; dup {
				return fmt.Errorf("%w: key %v twice in pane %d", errCorruptSnapshot, key, start)
			}
			p.idx[key] = int32(len(p.slots))
			p.keys = append(p.keys, key)
			p.slots = append(p.slots, s)
		}
	}
	ng := r.count()
	for range ng {
		key := read(r, kc)
		m := r.named()
		if r.err != nil {
			return r.err
		}
		if keep != nil && !keep(key) || len(m) == 0 {
			continue
		}
		if fs.global == nil {
			fs.global = make(map[K]*State)
		}
		if _, dup := fs.global[key]; dup {
			return fmt.Errorf("%w: key %v in two pieces", errCorruptSnapshot, key)
		}
		fs.global[key] = &State{m: m}
	}
	fs.last = nil
	return nil
}

// pendingTimers is a piece's runtime timers, restored in Open.
type pendingTimers[K any] struct {
	data []byte
	keep func(K) bool
}

// finishRestore runs in Open after a restore: it sets the watermark, then
// restores the runtime timers and registers every timer of the index
// again (a no-op for those restored), so that the runtime holds a timer
// for every (key, time) of the index.
func (op *operator[K, T, ACC, V, OUT]) finishRestore() error {
	if !op.restored {
		return nil
	}
	op.restored = false
	op.timers.AdvanceWatermark(op.restoredWm)
	for _, p := range op.pendingTimers {
		if err := op.timers.Restore(p.data, p.keep); err != nil {
			return fmt.Errorf("window: restore: %w", err)
		}
	}
	op.pendingTimers = nil
	for key, ks := range op.keys {
		for t := range ks.eventTimers {
			op.timers.RegisterEventTimeTimer(key, t)
		}
		for t := range ks.procTimers {
			op.timers.RegisterProcessingTimeTimer(key, t)
		}
	}
	return nil
}
