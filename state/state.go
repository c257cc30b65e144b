// Package state holds the keyed state of user functions: values, lists,
// maps and reducing/aggregating values scoped to the key of the record
// being processed.
//
// A Backend stores state in one of two implementations:
//
//   - the heap (NewBackend): Go maps keyed by the key itself, fastest, for
//     state that fits in memory;
//   - Pebble (NewPebbleBackend): an embedded LSM store on local disk, for
//     state larger than memory. Keys and values are serialized with the
//     codecs of their types (codec.For); a store key is
//     (state id: 4 bytes BE, key group: 2 bytes BE, encoded key
//     [, encoded map key]), so that all of a key group is one contiguous
//     range of each state; a time map's (TimeMap) is (state id, time, key
//     group, encoded key), so that the times a watermark passes are one
//     range. The WAL is off: durability comes from checkpoints
//     (Snapshot), not from the store.
//
// Both implementations write the same snapshot format (see Snapshot), so a
// snapshot of either restores into either, and Restore can filter keys
// (for rescaling) and merge several snapshots.
//
// ValueWithTTL, ListWithTTL and MapWithTTL return states that expire in
// processing time, like Flink's StateTtlConfig (see TTL): a value, each
// list element and each map entry carries its own expiry, stored with it
// (Expiring), so TTL state snapshots and restores like any other. Expired
// data never reads back; it is removed when a read finds it and, for every
// key, when a snapshot is taken.
//
// State handle methods have no error results: a storage or codec failure
// of the Pebble implementation panics with an error, which the task
// reports as the operator's failure.
package state

import (
	"fmt"

	"github.com/weirproject/weir/codec"
)

// ValueState is one value per key.
type ValueState[T any] interface {
	// Value returns the current key's value, or the default and false.
	Value() (T, bool)
	// Update sets the current key's value.
	Update(v T)
	// Clear removes the current key's value.
	Clear()
}

// ListState is a list per key.
type ListState[T any] interface {
	// Get returns the current key's list (nil if none); the caller must not
	// modify it. With Pebble it is decoded on every call.
	Get() []T
	Add(v T)
	// Update replaces the list; an empty list clears it.
	Update(vs []T)
	Clear()
}

// MapState is a map per key.
type MapState[MK comparable, MV any] interface {
	Get(k MK) (MV, bool)
	Put(k MK, v MV)
	Remove(k MK)
	Contains(k MK) bool
	// All returns the current key's entries (nil if none); the caller must
	// not modify it, nor keep it past the next change to the state: on the
	// heap it is the state's own map, which is reused once it empties.
	// With Pebble it materializes (decodes) the whole map: prefer Range for
	// large maps.
	All() map[MK]MV
	// Range calls fn for each entry of the current key until fn returns
	// false. fn must not modify the state. With Pebble, entries come in the
	// order of their encoded map keys, without materializing the map.
	Range(fn func(k MK, v MV) bool)
	Clear()
}

// ReducingState is one value per key that Add folds with a reduce
// function: value = reduce(value, v).
type ReducingState[T any] interface {
	// Get returns the current key's reduced value, or the zero value and
	// false if nothing was added.
	Get() (T, bool)
	// Add folds v into the current key's value (the first Add stores v).
	Add(v T)
	Clear()
}

// AggregatingState folds inputs into an accumulator per key and reads a
// result from it.
type AggregatingState[IN, OUT any] interface {
	// Get returns result(accumulator), or the zero value and false if
	// nothing was added.
	Get() (OUT, bool)
	// Add folds v into the current key's accumulator (starting from zero()).
	Add(v IN)
	Clear()
}

// Backend is the keyed state of one operator subtask: it knows the current
// key and creates the state handles. It is not safe for concurrent use:
// the task goroutine owns it.
type Backend[K comparable] struct {
	// restoreFiles fetches the files of incremental snapshots.
	restoreFiles RestoreFiles
	current      K
	states       map[string]any  // registered handles, by name
	kinds        map[string]kind // kinds of registered handles
	restored     map[string]*rawState[K]
	kc           codec.Codec[K] // the key codec; nil until needed by the heap
	p            *pebbleStore[K]
	// ttlCleanup removes the expired entries of each TTL state, by name,
	// before a snapshot.
	ttlCleanup map[string]func() error
}

// NewBackend returns an empty heap backend.
func NewBackend[K comparable]() *Backend[K] {
	return &Backend[K]{states: make(map[string]any), kinds: make(map[string]kind), restored: make(map[string]*rawState[K])}
}

// SetCurrentKey scopes every state handle to key; the operator calls it
// before each record and timer.
func (b *Backend[K]) SetCurrentKey(key K) {
	b.current = key
	if b.p != nil {
		b.p.curValid = false
	}
}

// CurrentKey returns the current key.
func (b *Backend[K]) CurrentKey() K { return b.current }

// ClearCurrentKey drops the current key's entry in every state: batch
// execution keeps state for the key it processes only.
func (b *Backend[K]) ClearCurrentKey() {
	for _, s := range b.states {
		if c, ok := s.(interface{ Clear() }); ok {
			c.Clear()
		}
	}
}

// IsPebble reports whether the backend stores its state in Pebble.
func (b *Backend[K]) IsPebble() bool { return b.p != nil }

// Len returns the number of keys with state, summed over all registered
// states. With Pebble it scans the store.
func (b *Backend[K]) Len() int {
	if b.p != nil {
		return b.p.len(b)
	}
	n := 0
	for _, s := range b.states {
		n += s.(heapHandle[K]).keys()
	}
	return n
}

// Metrics are a backend's size, for the operator's gauges.
type Metrics struct {
	// Entries is the number of keys with state, summed over the states
	// (heap only: counting them in Pebble would scan the store).
	Entries int64
	// DiskBytes, MemTableBytes and BlockCacheBytes are Pebble's live
	// data on disk, its memtables and its block cache (Flink's RocksDB
	// total-sst-files-size, cur-size-all-mem-tables, block-cache-usage).
	DiskBytes, MemTableBytes, BlockCacheBytes int64
	// CacheBytes is what the Pebble backend's cache of decoded values
	// holds, as it charges it against state.backend.pebble.cache-size:
	// keys, encoded values and a fixed overhead per entry.
	CacheBytes int64
	// CacheHits counts the reads and writes the cache served, CacheMisses
	// the reads that went to the store, CacheReadAhead the entries time
	// maps read from the store ahead of their timers, and
	// CacheWriteBacks the entries written to the store (on eviction and
	// at snapshots), since the backend was created.
	CacheHits, CacheMisses, CacheReadAhead, CacheWriteBacks int64
	// CacheSpilled counts the entries of times to come that time maps
	// evicted to their spill files rather than the store, and
	// CacheSpillReads those read back.
	CacheSpilled, CacheSpillReads int64
}

// Metrics measures the backend. Like every method it runs on the task's
// goroutine; it costs a map length per state on the heap and a read of
// Pebble's counters.
func (b *Backend[K]) Metrics() Metrics {
	if b.p != nil {
		if b.p.closed {
			return Metrics{}
		}
		m := b.p.db.Metrics()
		out := Metrics{DiskBytes: int64(m.DiskSpaceUsage()), MemTableBytes: int64(m.MemTable.Size), BlockCacheBytes: m.BlockCache.Size}
		if c := b.p.cache; c != nil {
			out.CacheBytes = c.bytes
			out.CacheHits, out.CacheMisses, out.CacheReadAhead, out.CacheWriteBacks = c.stats.hits, c.stats.misses, c.stats.readAhead, c.stats.writeBacks
			out.CacheSpilled, out.CacheSpillReads = c.stats.spilled, c.stats.spillReads
		}
		return out
	}
	return Metrics{Entries: int64(b.Len())}
}

// Close releases the backend. For Pebble it closes the store and removes
// its directory; for the heap it does nothing. The backend must not be used
// afterwards.
func (b *Backend[K]) Close() error {
	if b.p == nil {
		return nil
	}
	return b.p.close()
}

// kind is what a state name holds, as recorded in snapshots.
type kind byte

const (
	// kindValue: one value per key (Value, Reducing, Aggregating).
	kindValue kind = 1
	// kindList: a list per key.
	kindList kind = 2
	// kindMap: a map per key.
	kindMap kind = 3
)

func (k kind) String() string {
	switch k {
	case kindValue:
		return "value"
	case kindList:
		return "list"
	case kindMap:
		return "map"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

func mustCodec[T any]() codec.Codec[T] {
	c, err := codec.For[T]()
	if err != nil {
		panic(fmt.Errorf("state: %w", err))
	}
	return c
}

// Value returns the value state registered under name, creating it on first
// use. Asking for one name with two different types panics.
func Value[T any, K comparable](b *Backend[K], name string, def T) ValueState[T] {
	if s, ok := b.states[name]; ok {
		return s.(ValueState[T])
	}
	var s ValueState[T]
	if b.p != nil {
		c := mustCodec[T]()
		s = &pValue[K, T]{pHandle: b.p.handle(b, name, kindValue), c: c, def: def, cache: newValueCache(b.p, c)}
	} else {
		s = &valueState[K, T]{b: b, m: make(map[K]T), def: def}
	}
	b.register(name, kindValue, s)
	return s
}

// List returns the list state registered under name.
func List[T any, K comparable](b *Backend[K], name string) ListState[T] {
	if s, ok := b.states[name]; ok {
		return s.(ListState[T])
	}
	var s ListState[T]
	if b.p != nil {
		c := mustCodec[T]()
		s = &pList[K, T]{pHandle: b.p.handle(b, name, kindList), c: c, cache: newListCache(b.p, c)}
	} else {
		s = &listState[K, T]{b: b, m: make(map[K][]T)}
	}
	b.register(name, kindList, s)
	return s
}

// Map returns the map state registered under name.
func Map[MK comparable, MV any, K comparable](b *Backend[K], name string) MapState[MK, MV] {
	if s, ok := b.states[name]; ok {
		if b.p != nil && b.p.meta[name].byTime {
			panic(fmt.Errorf("state %q is a time map, asked for as a map", name))
		}
		return s.(MapState[MK, MV])
	}
	var s MapState[MK, MV]
	if b.p != nil {
		vc := mustCodec[MV]()
		h := b.p.handle(b, name, kindMap)
		// A snapshot's files may hold it in a time map's layout.
		if err := b.p.layOut(h.m, false); err != nil {
			panic(fmt.Errorf("state %q: %w", name, err))
		}
		s = &pMap[K, MK, MV]{pHandle: h, kc: mustCodec[MK](), vc: vc, cache: newMapCache(b.p, vc)}
	} else {
		s = newMapState[K, MK, MV](b)
	}
	b.register(name, kindMap, s)
	return s
}

// Reducing returns the reducing state registered under name: Add stores
// reduce(current, v). reduce must not retain or modify its arguments'
// shared memory.
func Reducing[T any, K comparable](b *Backend[K], name string, reduce func(a, b T) T) ReducingState[T] {
	if s, ok := b.states[name]; ok {
		return s.(ReducingState[T])
	}
	var s ReducingState[T]
	if b.p != nil {
		c := mustCodec[T]()
		s = &pReducing[K, T]{pHandle: b.p.handle(b, name, kindValue), c: c, reduce: reduce, cache: newValueCache(b.p, c)}
	} else {
		s = &reducingState[K, T]{b: b, m: make(map[K]T), reduce: reduce}
	}
	b.register(name, kindValue, s)
	return s
}

// Aggregating returns the aggregating state registered under name. A key's
// accumulator starts as zero() (a function, so that accumulators of
// reference types are not shared), add folds an input into it and result
// reads the output. add may modify and return its accumulator.
func Aggregating[IN, ACC, OUT any, K comparable](b *Backend[K], name string, add func(ACC, IN) ACC, result func(ACC) OUT, zero func() ACC) AggregatingState[IN, OUT] {
	if s, ok := b.states[name]; ok {
		return s.(AggregatingState[IN, OUT])
	}
	var s AggregatingState[IN, OUT]
	if b.p != nil {
		c := mustCodec[ACC]()
		s = &pAggregating[K, IN, ACC, OUT]{pHandle: b.p.handle(b, name, kindValue), c: c, add: add, result: result, zero: zero, cache: newValueCache(b.p, c)}
	} else {
		s = &aggregatingState[K, IN, ACC, OUT]{b: b, m: make(map[K]ACC), add: add, result: result, zero: zero}
	}
	b.register(name, kindValue, s)
	return s
}

// register adds a state handle. On the heap it loads the state's restored
// entries, if any; Pebble restores into the store directly.
func (b *Backend[K]) register(name string, k kind, s any) {
	b.states[name] = s
	b.kinds[name] = k
	if b.p != nil {
		return
	}
	raw, ok := b.restored[name]
	if !ok {
		return
	}
	if raw.kind != k {
		panic(fmt.Errorf("state %q: restored as %v state, registered as %v state", name, raw.kind, k))
	}
	h := s.(heapHandle[K])
	for _, e := range raw.entries {
		if err := h.restoreEntry(e.key, e.value); err != nil {
			panic(fmt.Errorf("state %q: restore: %w", name, err))
		}
	}
	delete(b.restored, name)
}
