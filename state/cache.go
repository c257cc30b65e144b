package state

import (
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// The Pebble backend keeps a cache of decoded values in front of the
// store (what RisingWave and Arroyo do in front of their LSMs, and what
// RocksDB's users miss in Flink): value, reducing and aggregating states
// and whole lists are read from the store once, then served and changed
// in memory, with no encoding, until they are evicted (least recently
// used first, but for the time maps' waiting entries: see victim), or a
// snapshot needs the store to hold everything. A changed
// entry is dirty until it is written back: on eviction (in batches) and
// in the synchronous part of every snapshot, so that snapshots, full or
// incremental, read a store that holds every change, and an incremental
// one uploads only the files the written-back changes made. A key that
// is not in the store is cached as absent, so that a new key costs one
// store read; a blind write (Update, Clear) reads nothing.
//
// Map states cache their entries one by one, by store key; Range first
// writes the cache's changes back and then iterates the store in order,
// and Clear forgets the key's cached entries before it removes its range.
// A list that is not cached takes Add as a merge, without reading the
// list.
//
// The cache's size counts each entry's store key, its value's encoded
// size when last read or written back (changes in between are estimated)
// and a fixed overhead; it is bounded by PebbleOptions.StateCacheSize.

// cacheEntryOverhead approximates what an entry costs beyond its key and
// value: the entry, its map slot and its list links.
const cacheEntryOverhead = 96

// cacheEntry is one cached store key; the typed entry of its state embeds
// it.
type cacheEntry struct {
	prev, next *cacheEntry
	owner      cachedState
	key        string
	size       int64
	// dirtyAt is the entry's index in the cache's dirty list plus one, or
	// 0 when the entry is clean.
	dirtyAt int
	// used is the cache's tick at the entry's last use.
	used uint64
	// timed says that the entry, a time map's that waits for the
	// watermark, is in the cache's list of those, not in the list of use.
	timed bool
}

func (e *cacheEntry) dirty() bool { return e.dirtyAt > 0 }

// time is a timed entry's time, from its key.
func (e *cacheEntry) time() int64 {
	ts, _ := e.owner.entryTime(e.key)
	return ts
}

// cachedState is a state handle with entries in the cache.
type cachedState interface {
	// writeBack adds the entry's current value, or its deletion, to
	// batch; evicting says that the entry is leaving the cache.
	writeBack(e *cacheEntry, batch *pebble.Batch, evicting bool) error
	// forget removes the entry from the state's index.
	forget(e *cacheEntry)
	// forgetAll empties the state's index.
	forgetAll()
	// entryTime is the time of the entry under key for a time map.
	entryTime(key string) (int64, bool)
}

// stateCache is the store's cache: entries in order of use, the most
// recent first.
type stateCache struct {
	db       *pebble.DB
	head     cacheEntry // sentinel: head.next is the most recent entry
	bytes    int64
	capacity int64
	// timed lists, in the order they came, the time maps' entries of
	// times the watermark has not passed (timed.prev came last). They are
	// not in the list of use: when each is needed next is known, which
	// recency cannot tell (see victim).
	timed cacheEntry
	// tick counts the uses of entries; recent is the entry used last,
	// which is never evicted: its caller holds it.
	tick   uint64
	recent *cacheEntry
	// wm is the last watermark, reached at tick wmTick, and tickRate the
	// ticks per unit of event time between watermarks, smoothed (0 until
	// the watermark has moved twice).
	wm       int64
	wmTick   uint64
	tickRate float64
	// stats counts the cache's work, for the operator's metrics.
	stats cacheStats
	// dirty lists the dirty entries; an evicted entry leaves it at once,
	// so that it does not keep its value until the next flush.
	dirty  []*cacheEntry
	owners map[cachedState]bool
	// stored filters the keys written to the store.
	stored storedKeys
	// spills are the time maps' spills of evicted entries (spill.go);
	// an eviction that spills fewer than spillMin entries of a time map
	// puts them in the store.
	spills   []spiller
	spillMin int
}

// spiller is a state that evicts some entries somewhere else than the
// store: it writes what an eviction gathered when the eviction ends
// (seal, into files or, when it gathered little, into the eviction's
// batch), and moves what it holds into the store for a snapshot
// (migrate); closeSpill deletes what it holds, for a store that closes.
type spiller interface {
	seal(batch *pebble.Batch) error
	migrate(batch *pebble.Batch) error
	closeSpill() error
	// linkSpill hard-links the spill's files into dir for an incremental
	// snapshot, and describes what of them is current.
	linkSpill(dir string) (spillSnapshot, error)
}

// minFilterBits is the least the filters of stored keys may take: 8 MiB,
// about 6 M keys. A small cache is one that its state outgrows, where
// reads of never-written keys would go to the store most often.
const minFilterBits = 64 << 20

func newStateCache(db *pebble.DB, capacity int64) *stateCache {
	// The filters may take a quarter of the cache's bytes, and at least
	// minFilterBits.
	c := &stateCache{db: db, capacity: capacity, owners: make(map[cachedState]bool), stored: storedKeys{maxBits: max(int(capacity)*2, minFilterBits)}}
	c.head.prev, c.head.next = &c.head, &c.head
	c.timed.prev, c.timed.next = &c.timed, &c.timed
	c.wm = math.MinInt64
	c.spillMin = spillMinRecords
	return c
}

// unlink takes e out of the list of use.
func (e *cacheEntry) unlink() { e.prev.next, e.next.prev = e.next, e.prev }

// linkAfter puts e in the list of use right after at.
func linkAfter(e, at *cacheEntry) {
	e.prev, e.next = at, at.next
	at.next.prev = e
	at.next = e
}

// use records a use of e.
func (c *stateCache) use(e *cacheEntry) {
	c.tick++
	e.used = c.tick
	c.recent = e
}

// touch makes e the most recently used entry.
func (c *stateCache) touch(e *cacheEntry) {
	c.use(e)
	if e.timed || c.head.next == e {
		return
	}
	e.unlink()
	linkAfter(e, &c.head)
}

// link inserts a new entry as the most recently used one, or, for a time
// map's entry of a time to come, as the last of the timed entries.
func (c *stateCache) link(e *cacheEntry) {
	c.use(e)
	if ts, ok := e.owner.entryTime(e.key); ok && ts > c.wm {
		e.timed = true
		linkAfter(e, c.timed.prev)
	} else {
		linkAfter(e, &c.head)
	}
	c.bytes += e.size
	c.owners[e.owner] = true
}

// watermarkAdvancing notes that the watermark moves to wm, and how many
// uses it took to get there.
func (c *stateCache) watermarkAdvancing(wm int64) {
	if wm <= c.wm {
		return
	}
	if c.wm != math.MinInt64 && wm != math.MaxInt64 {
		rate := float64(c.tick-c.wmTick) / float64(wm-c.wm)
		if c.tickRate == 0 {
			c.tickRate = rate
		} else {
			c.tickRate += (rate - c.tickRate) / 4
		}
	}
	c.wm, c.wmTick = wm, c.tick
}

// watermarkAdvanced moves the timed entries the watermark passed, which
// the timers left, to the end of the list of use: they are a map's
// entries like any other now.
func (c *stateCache) watermarkAdvanced(wm int64) {
	for e := c.timed.next; e != &c.timed && e.time() <= wm; e = c.timed.next {
		e.unlink()
		e.timed = false
		linkAfter(e, c.head.prev)
	}
}

// victim is the entry to evict next, or nil when only the most recent is
// left. It is the entry whose next use is furthest away, as far as the
// cache can tell: for the least recently used entry, as long as it has
// gone unused; for the last timed entry, when the watermark will reach
// its time, in uses at the rate the watermark moved so far. The entries
// that wait for the watermark longest go first, rather than, by recency,
// those it is about to reach (top-N and deduplication hold a window of
// them that may be larger than the cache: recency would then evict each
// before it is read).
func (c *stateCache) victim() *cacheEntry {
	lru := c.head.prev
	if lru == c.recent {
		lru = lru.prev
	}
	if lru == &c.head {
		lru = nil
	}
	last := c.timed.prev
	if last == c.recent {
		last = last.prev
	}
	if last == &c.timed {
		last = nil
	}
	switch {
	case last == nil:
		return lru
	case lru == nil:
		return last
	case c.tickRate > 0:
		if float64(last.time()-c.wm)*c.tickRate > float64(c.tick-lru.used) {
			return last
		}
		return lru
	}
	// Before the watermark has moved twice, by recency alone.
	if first := c.timed.next; first != c.recent && first.used < lru.used {
		return first
	}
	return lru
}

// evictOver evicts when the cache holds more than its capacity; the most
// recently used entry stays.
func (c *stateCache) evictOver() error {
	if c.bytes > c.capacity {
		return c.evict()
	}
	return nil
}

// resize changes an entry's size by delta.
func (c *stateCache) resize(e *cacheEntry, delta int64) error {
	e.size += delta
	c.bytes += delta
	if c.bytes > c.capacity {
		return c.evict()
	}
	return nil
}

// shrink makes an entry that became absent take only its key's room.
func (c *stateCache) shrink(e *cacheEntry) {
	size := int64(len(e.key)) + cacheEntryOverhead
	c.bytes += size - e.size
	e.size = size
}

// retire shrinks an entry that became absent and makes it the least
// recently used, so that the next eviction writes it back.
func (c *stateCache) retire(e *cacheEntry) {
	c.shrink(e)
	if c.head.prev == e {
		return
	}
	e.unlink()
	e.timed = false
	linkAfter(e, c.head.prev)
}

// markDirty records that e changed.
func (c *stateCache) markDirty(e *cacheEntry) {
	if e.dirtyAt == 0 {
		c.dirty = append(c.dirty, e)
		e.dirtyAt = len(c.dirty)
	}
}

// markClean takes e off the dirty list.
func (c *stateCache) markClean(e *cacheEntry) {
	i := e.dirtyAt - 1
	last := c.dirty[len(c.dirty)-1]
	c.dirty[i], last.dirtyAt = last, i+1
	c.dirty[len(c.dirty)-1] = nil
	c.dirty = c.dirty[:len(c.dirty)-1]
	e.dirtyAt = 0
}

// evict removes entries, the victims first, until the cache holds
// 7/8 of its capacity, writing back the dirty ones in one batch: evicting
// a little more than needed makes the batches, and so the writes, larger.
func (c *stateCache) evict() error {
	batch := c.db.NewBatch()
	defer batch.Close()
	target := c.capacity - c.capacity/8
	for c.bytes > target {
		e := c.victim()
		if e == nil {
			break
		}
		if e.dirty() {
			if err := e.owner.writeBack(e, batch, true); err != nil {
				return err
			}
			c.markClean(e)
		}
		e.unlink()
		e.prev, e.next = nil, nil
		c.bytes -= e.size
		e.owner.forget(e)
	}
	c.stats.evictions++
	for _, s := range c.spills {
		if err := s.seal(batch); err != nil {
			return err
		}
	}
	return batch.Commit(pebble.NoSync)
}

// remove takes an entry out of the cache without writing it back: the
// store is about to drop it.
func (c *stateCache) remove(e *cacheEntry) {
	if e.dirty() {
		c.markClean(e)
	}
	if c.recent == e {
		c.recent = nil
	}
	e.unlink()
	e.prev, e.next = nil, nil
	c.bytes -= e.size
	e.owner.forget(e)
}

// flush writes back every dirty entry, which stays cached, and what the
// spills hold.
func (c *stateCache) flush() error { return c.flushEntries(true) }

// flushEntries writes back every dirty entry, which stays cached, and, with
// spills, what the spills hold.
func (c *stateCache) flushEntries(spills bool) error {
	batch := c.db.NewBatch()
	defer batch.Close()
	for _, e := range c.dirty {
		if err := e.owner.writeBack(e, batch, false); err != nil {
			return err
		}
		e.dirtyAt = 0
	}
	clear(c.dirty)
	c.dirty = c.dirty[:0]
	if spills {
		for _, s := range c.spills {
			if err := s.migrate(batch); err != nil {
				return fmt.Errorf("state: write back spilled state: %w", err)
			}
		}
	}
	if batch.Empty() {
		return nil
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("state: write back cached state: %w", err)
	}
	return nil
}

// drop writes back the dirty entries and empties the cache: the store is
// about to change under it (a restore, the removal of expired entries).
func (c *stateCache) drop() error {
	if err := c.flush(); err != nil {
		return err
	}
	for o := range c.owners {
		o.forgetAll()
	}
	clear(c.owners)
	c.head.prev, c.head.next = &c.head, &c.head
	c.timed.prev, c.timed.next = &c.timed, &c.timed
	c.recent = nil
	c.bytes = 0
	return nil
}

// cached is the typed index of one state's cache entries.
type cached[T any] struct {
	cache *stateCache
	m     map[string]*cachedValue[T]
	// last is the entry lookup or insert returned last, while it is
	// cached: a record reads and then writes the same entry (Value then
	// Update, Get then Remove), and comparing its key costs less than
	// probing the index again (q19 on Pebble: 206 k -> 247 k events/s
	// per core).
	last *cachedValue[T]
	// absent is what a read of a key the store never held returns: not
	// an entry of the cache (prev is nil), never changed.
	absent cachedValue[T]
	// encode writes a value (ok) or its deletion into batch under key,
	// and returns the value's encoded size.
	encode func(batch *pebble.Batch, key []byte, v T, ok bool) (int, error)
	// dropsLater, set for a time map, is asked whether its range
	// deletion will cover an evicted removed entry; if so, it has
	// recorded the removal and no tombstone is written. A time map's
	// removed entries also keep their place rather than retiring: the
	// range deletion drops them as the watermark passes (timemap.go).
	dropsLater func(key string) bool
	// spill, set for a time map, is offered each present entry that
	// leaves the cache dirty; it reports whether it took it.
	spill func(key string, v T) bool
}

// cachedValue is a cached store key's value; ok is false for a key known
// to be absent.
type cachedValue[T any] struct {
	cacheEntry
	v  T
	ok bool
}

// writeBack writes the entry and measures it anew: changes since it was
// cached may have grown it. The cache evicts by the new size later.
func (c *cached[T]) writeBack(e *cacheEntry, batch *pebble.Batch, evicting bool) error {
	v := c.m[e.key]
	if evicting && !v.ok && c.dropsLater != nil && c.dropsLater(e.key) {
		return nil
	}
	if evicting && v.ok && c.spill != nil && c.spill(e.key, v.v) {
		c.cache.stats.spilled++
		return nil
	}
	c.cache.stats.writeBacks++
	key := []byte(e.key)
	n, err := c.encode(batch, key, v.v, v.ok)
	if err != nil {
		return err
	}
	if v.ok {
		c.cache.stored.add(key)
	}
	size := int64(len(e.key)+n) + cacheEntryOverhead
	c.cache.bytes += size - e.size
	e.size = size
	return nil
}

func (c *cached[T]) forget(e *cacheEntry) {
	if c.last != nil && &c.last.cacheEntry == e {
		c.last = nil
	}
	delete(c.m, e.key)
}

func (c *cached[T]) forgetAll() {
	c.last = nil
	clear(c.m)
}

func (c *cached[T]) entryTime(key string) (int64, bool) {
	if c.dropsLater == nil || len(key) < timeKeyLen {
		return 0, false
	}
	return timeOf([]byte(key[idLen:timeKeyLen])), true
}

// lookup returns the cached entry of key, as the most recently used, or
// nil.
func (c *cached[T]) lookup(key []byte) *cachedValue[T] {
	e := c.find(key)
	if e != nil {
		c.cache.stats.hits++
		c.cache.touch(&e.cacheEntry)
	}
	return e
}

// find returns the cached entry of key, or nil, leaving the order of use
// as it is.
func (c *cached[T]) find(key []byte) *cachedValue[T] {
	if e := c.last; e != nil && e.key == string(key) {
		return e
	}
	e := c.m[string(key)]
	if e != nil {
		c.last = e
	}
	return e
}

// insert caches v (ok) or the absence of key, with its encoded size, as
// dirty or as read from the store.
func (c *cached[T]) insert(key []byte, v T, ok bool, size int, dirty bool) (*cachedValue[T], error) {
	e := c.insertOnly(key, v, ok, size, dirty)
	return e, c.cache.evictOver()
}

// insertOnly is insert without the eviction: the caller evicts later.
func (c *cached[T]) insertOnly(key []byte, v T, ok bool, size int, dirty bool) *cachedValue[T] {
	e := &cachedValue[T]{cacheEntry: cacheEntry{owner: c, key: string(key),
		size: int64(len(key)+size) + cacheEntryOverhead}, v: v, ok: ok}
	c.m[e.key] = e
	c.last = e
	if dirty {
		c.cache.markDirty(&e.cacheEntry)
	}
	c.cache.link(&e.cacheEntry)
	return e
}

// cacheStats counts what a cache did since the backend was created.
type cacheStats struct {
	// hits are reads and writes of a cached entry; misses are the reads
	// of a key from the store (a read of a key never written is neither:
	// the filters of stored keys answer it); readAhead are the entries a
	// time map read from the store ahead of its timers.
	hits, misses, readAhead int64
	// writeBacks are the entries written to the store, on eviction and
	// at snapshots; evictions are the batches evictions wrote.
	writeBacks, evictions int64
	// spilled are the entries evictions wrote to a time map's spill
	// rather than the store; spillReads those read back.
	spilled, spillReads int64
}

// storedKeys remembers, in Bloom filters, every store key the backend
// wrote to its store since it was created: a cache miss on a key that
// was never written is absent without a store read. New keys are the
// common miss (a new auction, a new bidder), and a store read of a key
// that is not there costs microseconds even behind Pebble's own filters.
// The filters grow by adding one of twice the size when the last is full
// (a scalable Bloom filter); past maxBits in all, or when the store's
// files are adopted from a snapshot whose keys were never seen, they are
// given up and every miss reads the store.
type storedKeys struct {
	filters []bloomFilter
	bits    int
	maxBits int
	off     bool
}

// bloomFilter holds up to capacity keys at 10 bits a key, 7 probes: about
// 1 % false positives.
type bloomFilter struct {
	words    []uint64
	n        int
	capacity int
}

const bloomProbes = 7

func (s *storedKeys) add(key []byte) {
	if s.off {
		return
	}
	if len(s.filters) == 0 || s.filters[len(s.filters)-1].n >= s.filters[len(s.filters)-1].capacity {
		capacity := 1 << 16
		if len(s.filters) > 0 {
			capacity = 2 * s.filters[len(s.filters)-1].capacity
		}
		f := newBloomFilter(capacity)
		if s.bits+len(f.words)*64 > s.maxBits {
			s.giveUp()
			return
		}
		s.bits += len(f.words) * 64
		s.filters = append(s.filters, f)
	}
	s.filters[len(s.filters)-1].add(bloomHashes(key))
}

// mayHold reports whether key may be in the store: false only when it
// was certainly never written.
func (s *storedKeys) mayHold(key []byte) bool {
	if s.off {
		return true
	}
	h1, h2 := bloomHashes(key)
	for i := range s.filters {
		if s.filters[i].has(h1, h2) {
			return true
		}
	}
	return false
}

func newBloomFilter(capacity int) bloomFilter {
	return bloomFilter{words: make([]uint64, (capacity*10+63)/64), capacity: capacity}
}

func (f *bloomFilter) add(h1, h2 uint64) {
	m := uint64(len(f.words) * 64)
	for i := range uint64(bloomProbes) {
		b := (h1 + i*h2) % m
		f.words[b/64] |= 1 << (b % 64)
	}
	f.n++
}

func (f *bloomFilter) has(h1, h2 uint64) bool {
	m := uint64(len(f.words) * 64)
	for i := range uint64(bloomProbes) {
		b := (h1 + i*h2) % m
		if f.words[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// giveUp makes every key one the store may hold.
func (s *storedKeys) giveUp() {
	s.off, s.filters, s.bits = true, nil, 0
}

func bloomHashes(key []byte) (uint64, uint64) {
	h := xxhash.Sum64(key)
	return h, h>>33 | h<<31 | 1
}
