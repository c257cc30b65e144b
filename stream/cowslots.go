package stream

import "sync/atomic"

// cowChunkBits sizes the chunks of cowSlots: 1024 slots, so that a
// snapshot of 4 M keys copies 4 K pointers and a write after it copies
// at most one chunk of tens of kilobytes.
const (
	cowChunkBits = 10
	cowChunkLen  = 1 << cowChunkBits
	cowChunkMask = cowChunkLen - 1
)

// cowChunk holds consecutive slots. epoch is the snapshot epoch in which
// the chunk was created or last copied: a chunk of an earlier epoch may be
// read by a snapshot still being written and must not change in place.
type cowChunk[K, T any] struct {
	keys  [cowChunkLen]K
	vals  [cowChunkLen]T
	epoch uint64
}

// cowSlots is a dense, append-only array of (key, value) slots whose
// snapshots cost O(slots / 1024) in the record path: freeze shares the
// chunks with the snapshot, and the first write to a shared chunk after
// it copies that chunk (copy on write, as Flink's CopyOnWriteStateMap).
// The snapshot then reads its frozen view on another goroutine while
// records keep updating the live chunks.
type cowSlots[K, T any] struct {
	chunks []*cowChunk[K, T]
	n      int
	epoch  uint64
	// readers counts the frozen views still being read. With none, a
	// chunk of an older epoch is adopted in place instead of copied: the
	// reader's decrement orders its reads before the writes.
	readers atomic.Int32
}

// set returns slot i for writing.
func (s *cowSlots[K, T]) set(i int32) *T {
	c := s.chunks[i>>cowChunkBits]
	if c.epoch != s.epoch {
		c = s.own(int(i >> cowChunkBits))
	}
	return &c.vals[i&cowChunkMask]
}

// own makes chunk ci writable in the current epoch.
func (s *cowSlots[K, T]) own(ci int) *cowChunk[K, T] {
	c := s.chunks[ci]
	if s.readers.Load() == 0 {
		c.epoch = s.epoch
		return c
	}
	nc := new(cowChunk[K, T])
	*nc = *c
	nc.epoch = s.epoch
	s.chunks[ci] = nc
	return nc
}

// add appends a slot and returns its index.
func (s *cowSlots[K, T]) add(k K, v T) int32 {
	i := s.n
	ci := i >> cowChunkBits
	var c *cowChunk[K, T]
	if ci == len(s.chunks) {
		c = &cowChunk[K, T]{epoch: s.epoch}
		s.chunks = append(s.chunks, c)
	} else if c = s.chunks[ci]; c.epoch != s.epoch {
		c = s.own(ci)
	}
	c.keys[i&cowChunkMask] = k
	c.vals[i&cowChunkMask] = v
	s.n++
	return int32(i)
}

// cowView is a frozen view of the slots at a snapshot.
type cowView[K, T any] struct {
	chunks []*cowChunk[K, T]
	n      int
	// epoch is the slots' epoch when frozen: every chunk of the view is
	// of this epoch or older, and a chunk written after the freeze is of
	// a later one.
	epoch uint64
	owner *cowSlots[K, T]
	done  atomic.Bool
}

// freeze returns a view of the slots as they are now, which stays
// unchanged until release while the slots change.
func (s *cowSlots[K, T]) freeze() *cowView[K, T] {
	s.readers.Add(1)
	v := &cowView[K, T]{chunks: append([]*cowChunk[K, T](nil), s.chunks...), n: s.n, epoch: s.epoch, owner: s}
	s.epoch++
	return v
}

// each calls fn with every slot of the view in [lo, hi), in slot order,
// until fn returns false.
func (v *cowView[K, T]) each(lo, hi int, fn func(k *K, val *T) bool) {
	for i := lo; i < hi; i++ {
		c := v.chunks[i>>cowChunkBits]
		if !fn(&c.keys[i&cowChunkMask], &c.vals[i&cowChunkMask]) {
			return
		}
	}
}

// lastWrite is the epoch of the latest write to slots [lo, hi) before
// the freeze.
func (v *cowView[K, T]) lastWrite(lo, hi int) uint64 {
	var e uint64
	for ci := lo >> cowChunkBits; ci <= (hi-1)>>cowChunkBits && ci < len(v.chunks); ci++ {
		e = max(e, v.chunks[ci].epoch)
	}
	return e
}

// release ends the view's reads; later calls do nothing.
func (v *cowView[K, T]) release() {
	if v.done.CompareAndSwap(false, true) {
		v.chunks = nil
		v.owner.readers.Add(-1)
	}
}
