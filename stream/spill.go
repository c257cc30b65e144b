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

// repartitioned counts the hash join partitions partitioned again in this
// process, for tests.
var repartitioned atomic.Int64

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

// register adds an operator to those sharing the budget until its task
// ends: in a staged batch job the stages that run later have the budget
// to themselves.
func (m *managedMemory) register(oc *runtime.OperatorContext) {
	m.mu.Lock()
	m.consumers++
	m.mu.Unlock()
	oc.OnCleanup(func() {
		m.mu.Lock()
		m.consumers--
		m.mu.Unlock()
	})
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
	runs    *runSet
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
	s := &spiller[K, T]{oc: oc, mem: managedMemoryOf(oc), kc: kc, tc: tc, key: key, update: update, runs: newRunSet(oc)}
	s.mem.register(oc)
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
	entries, n := encodeEntries(results, s.kc, s.tc, s.key)
	if err := s.runs.write(entries); err != nil {
		return err
	}
	s.spilled += int64(n)
	s.used = 0
	return nil
}

func (s *spiller[K, T]) removeRuns() { s.runs.remove() }

// runEntry is a record encoded for a run: its key and itself.
type runEntry struct{ key, val []byte }

// encodeEntries encodes records into one arena and returns them sorted
// by encoded key, with the arena's size.
func encodeEntries[K, T any](records []T, kc codec.Codec[K], tc codec.Codec[T], key func(T) K) ([]runEntry, int) {
	var e encodedRecords
	for i := range records {
		appendRecord(&e, kc, tc, key, records[i])
	}
	return e.sorted(), len(e.arena)
}

// encodedRecords holds records encoded once, key and value, in one
// arena; offsets rather than slices, since the arena moves as it grows.
type encodedRecords struct {
	arena []byte
	// starts holds each record's key and value offsets; a value ends
	// where the next key starts.
	starts [][2]int
}

// appendRecord encodes v and returns how many bytes it took.
func appendRecord[K, T any](e *encodedRecords, kc codec.Codec[K], tc codec.Codec[T], key func(T) K, v T) int {
	start := len(e.arena)
	e.arena = kc.Append(e.arena, key(v))
	mid := len(e.arena)
	e.arena = tc.Append(e.arena, v)
	e.starts = append(e.starts, [2]int{start, mid})
	return len(e.arena) - start
}

// sorted returns the records by encoded key, in arrival order within a
// key; they point into the arena, which reset must not reuse meanwhile.
func (e *encodedRecords) sorted() []runEntry {
	entries := make([]runEntry, len(e.starts))
	for i, b := range e.starts {
		end := len(e.arena)
		if i+1 < len(e.starts) {
			end = e.starts[i+1][0]
		}
		entries[i] = runEntry{key: e.arena[b[0]:b[1]:b[1]], val: e.arena[b[1]:end:end]}
	}
	slices.SortStableFunc(entries, func(a, b runEntry) int { return bytes.Compare(a.key, b.key) })
	return entries
}

// reset forgets the records; the next ones get a fresh arena, since
// entries handed out by sorted may still point into the old one.
func (e *encodedRecords) reset() { *e = encodedRecords{} }

// runSet is the run files of one operator input, under io.tmp.dirs.
type runSet struct {
	dir   string
	files []*os.File
}

func newRunSet(oc *runtime.OperatorContext) *runSet {
	r := &runSet{dir: tmpDir(oc.Config)}
	oc.OnCleanup(r.remove)
	return r
}

// write writes sorted entries to a new run file.
func (r *runSet) write(entries []runEntry) error {
	f, err := os.CreateTemp(r.dir, "weir-spill-")
	if err != nil {
		return fmt.Errorf("spill to %s: %w", r.dir, err)
	}
	r.files = append(r.files, f)
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
	spilledRuns.Add(1)
	return nil
}

func (r *runSet) remove() {
	for _, f := range r.files {
		f.Close()
		os.Remove(f.Name())
	}
	r.files = nil
}

// merged returns the entries of every run and of mem (sorted, in memory)
// in key order; entries of equal keys come run by run, mem last.
func (r *runSet) merged(mem []runEntry) (*runMerger, error) {
	m := &runMerger{}
	for i, f := range r.files {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		rd := &runReader{r: bufio.NewReaderSize(f, 64<<10), index: i, name: f.Name()}
		ok, err := rd.next()
		if err != nil {
			return nil, fmt.Errorf("read spilled run %s: %w", f.Name(), err)
		}
		if ok {
			m.h = append(m.h, rd)
		}
	}
	if len(mem) > 0 {
		rd := &runReader{mem: mem, index: len(r.files)}
		rd.next()
		m.h = append(m.h, rd)
	}
	heap.Init(&m.h)
	return m, nil
}

// runMerger yields entries in key order.
type runMerger struct {
	h   runHeap
	cur *runReader
}

// next advances to the next entry; key and val stay valid until the
// following call.
func (m *runMerger) next() (key, val []byte, ok bool, err error) {
	if m.cur != nil {
		more, err := m.cur.next()
		if err != nil {
			return nil, nil, false, fmt.Errorf("read spilled run %s: %w", m.cur.name, err)
		}
		if more {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
		}
		m.cur = nil
	}
	if m.h.Len() == 0 {
		return nil, nil, false, nil
	}
	m.cur = m.h[0]
	return m.cur.key, m.cur.val, true, nil
}

// runReader reads one run's entries in key order, from its file or,
// for what never left memory, from mem.
type runReader struct {
	r        *bufio.Reader
	mem      []runEntry
	key, val []byte
	index    int
	name     string
}

func (r *runReader) next() (bool, error) {
	if r.r == nil {
		if len(r.mem) == 0 {
			return false, nil
		}
		r.key, r.val = r.mem[0].key, r.mem[0].val
		r.mem = r.mem[1:]
		return true, nil
	}
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

// merge merges every run with what is left in memory and emits one
// combined result per key.
func (s *spiller[K, T]) merge(rest []T, emit func(T)) error {
	mem, _ := encodeEntries(rest, s.kc, s.tc, s.key)
	m, err := s.runs.merged(mem)
	if err != nil {
		return err
	}
	var cur []byte
	var acc, v T
	have := false
	for {
		key, val, ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if have && bytes.Equal(key, cur) {
			if v, _, err = s.tc.Decode(val); err != nil {
				return fmt.Errorf("read spilled run: %w", err)
			}
			s.update(&acc, &v)
			continue
		}
		if have {
			emit(acc)
		}
		if acc, _, err = s.tc.Decode(val); err != nil {
			return fmt.Errorf("read spilled run: %w", err)
		}
		cur = append(cur[:0], key...)
		have = true
	}
	if have {
		emit(acc)
	}
	s.removeRuns()
	return nil
}

// tmpDir is where operators put their working files: io.tmp.dirs, or
// the system's temporary directory.
func tmpDir(cfg *config.Configuration) string {
	if dir := config.TmpDirs.Get(cfg); dir != "" {
		return dir
	}
	return os.TempDir()
}
