package stream

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/runtime"
)

// Batch-mode keyed aggregation that spills: a reduce holds its results
// per key in memory while they fit its share of
// taskmanager.memory.managed.size; past it, it sorts them by encoded key,
// writes them to a run file and starts afresh. When the input ends it
// merges the runs (and what it still holds) key by key, combining the
// partial results of a key with the reduce function, and emits one
// result per key. Memory stays at the share plus a read buffer per run.

// spilledRuns counts the runs written in this process, for tests.
var spilledRuns atomic.Int64

// managedMemory is the budget of one process's spilling operators in one
// attempt; each gets an equal share of it.
type managedMemory struct {
	mu        sync.Mutex
	total     int64
	consumers int
}

func managedMemoryOf(oc *runtime.OperatorContext) *managedMemory {
	return oc.Task.Shared("managed-memory", func() any {
		return &managedMemory{total: config.ManagedMemorySize.Get(oc.Config)}
	}).(*managedMemory)
}

func (m *managedMemory) register() {
	m.mu.Lock()
	m.consumers++
	m.mu.Unlock()
}

func (m *managedMemory) share() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total / int64(max(m.consumers, 1))
}

// entryOverhead approximates what a key costs beyond its encoded key and
// value: the map slot, the index and the result slot.
const entryOverhead = 48

// spiller writes and merges the sorted runs of one reduce subtask.
type spiller[K comparable, T any] struct {
	oc     *runtime.OperatorContext
	mem    *managedMemory
	kc     codec.Codec[K]
	tc     codec.Codec[T]
	key    func(T) K
	update func(acc, v *T)
	// used estimates the bytes the in-memory results take.
	used    int64
	runs    []*os.File
	scratch []byte
	spilled int64
}

// newSpiller returns nil when the records or keys have no codec: the
// reduce then keeps everything in memory, as before.
func newSpiller[K comparable, T any](oc *runtime.OperatorContext, key func(T) K, update func(acc, v *T)) *spiller[K, T] {
	kc, err := codec.For[K]()
	if err != nil {
		return nil
	}
	tc, err := codec.For[T]()
	if err != nil {
		return nil
	}
	s := &spiller[K, T]{oc: oc, mem: managedMemoryOf(oc), kc: kc, tc: tc, key: key, update: update}
	s.mem.register()
	oc.OnCleanup(s.removeRuns)
	oc.Gauge("spilledBytes", func() int64 { return s.spilled })
	return s
}

// added accounts for a new key's result and reports whether the results
// must be spilled now.
func (s *spiller[K, T]) added(v *T) bool {
	s.scratch = s.tc.Append(s.scratch[:0], *v)
	s.used += int64(len(s.scratch)) + entryOverhead
	return s.used > s.mem.share()
}

// spill writes results sorted by encoded key to a new run file.
func (s *spiller[K, T]) spill(results []T) error {
	type entry struct{ key, val []byte }
	var arena []byte
	entries := make([]entry, len(results))
	for i := range results {
		start := len(arena)
		arena = s.kc.Append(arena, s.key(results[i]))
		mid := len(arena)
		arena = s.tc.Append(arena, results[i])
		entries[i] = entry{key: arena[start:mid:mid], val: arena[mid:]}
	}
	// The arena may have moved while it grew: slice it again.
	off := 0
	for i := range entries {
		kl, vl := len(entries[i].key), len(entries[i].val)
		entries[i] = entry{key: arena[off : off+kl : off+kl], val: arena[off+kl : off+kl+vl : off+kl+vl]}
		off += kl + vl
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	dir := config.TmpDirs.Get(s.oc.Config)
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "weir-spill-")
	if err != nil {
		return fmt.Errorf("spill to %s: %w", dir, err)
	}
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 256<<10)
	var hdr []byte
	for _, e := range entries {
		hdr = binary.AppendUvarint(hdr[:0], uint64(len(e.key)))
		hdr = binary.AppendUvarint(hdr, uint64(len(e.val)))
		w.Write(hdr)
		w.Write(e.key)
		if _, err := w.Write(e.val); err != nil {
			return fmt.Errorf("spill to %s: %w", f.Name(), err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spill to %s: %w", f.Name(), err)
	}
	s.spilled += int64(len(arena))
	s.used = 0
	spilledRuns.Add(1)
	return nil
}

func (s *spiller[K, T]) removeRuns() {
	for _, f := range s.runs {
		f.Close()
		os.Remove(f.Name())
	}
	s.runs = nil
}

// runReader reads one run's entries in key order.
type runReader struct {
	r        *bufio.Reader
	key, val []byte
	index    int
}

func (r *runReader) next() (bool, error) {
	kl, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	vl, err := binary.ReadUvarint(r.r)
	if err != nil {
		return false, err
	}
	r.key = slices.Grow(r.key[:0], int(kl))[:kl]
	r.val = slices.Grow(r.val[:0], int(vl))[:vl]
	if _, err := io.ReadFull(r.r, r.key); err != nil {
		return false, err
	}
	if _, err := io.ReadFull(r.r, r.val); err != nil {
		return false, err
	}
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key, h[j].key); c != 0 {
		return c < 0
	}
	return h[i].index < h[j].index
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merge spills what is left in memory, then merges every run and emits
// one combined result per key.
func (s *spiller[K, T]) merge(rest []T, emit func(T)) error {
	if len(rest) > 0 {
		if err := s.spill(rest); err != nil {
			return err
		}
	}
	h := make(runHeap, 0, len(s.runs))
	for i, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r := &runReader{r: bufio.NewReaderSize(f, 64<<10), index: i}
		ok, err := r.next()
		if err != nil {
			return fmt.Errorf("read spilled run %s: %w", f.Name(), err)
		}
		if ok {
			h = append(h, r)
		}
	}
	heap.Init(&h)
	var cur []byte
	var acc, v T
	have := false
	for h.Len() > 0 {
		r := h[0]
		if have && bytes.Equal(r.key, cur) {
			var err error
			if v, _, err = s.tc.Decode(r.val); err != nil {
				return fmt.Errorf("read spilled run: %w", err)
			}
			s.update(&acc, &v)
		} else {
			if have {
				emit(acc)
			}
			var err error
			if acc, _, err = s.tc.Decode(r.val); err != nil {
				return fmt.Errorf("read spilled run: %w", err)
			}
			cur = append(cur[:0], r.key...)
			have = true
		}
		ok, err := r.next()
		if err != nil {
			return fmt.Errorf("read spilled run %s: %w", s.runs[r.index].Name(), err)
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	if have {
		emit(acc)
	}
	s.removeRuns()
	return nil
}
