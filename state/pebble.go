package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/weirproject/weir/codec"
)

// PebbleOptions configure a Pebble backend.
type PebbleOptions[K comparable] struct {
	// Dir is the parent directory: the store lives in a fresh subdirectory
	// of it (created with os.MkdirTemp), which Close removes. Dir is
	// created if missing. Empty means os.TempDir().
	Dir string
	// MaxParallelism is the number of key groups (at most 65536).
	MaxParallelism int
	// KeyGroup returns a key's key group, in [0, MaxParallelism); it must
	// be the job's key-group function so that the store's key-group ranges
	// are the subtask's. Nil puts every key in key group 0.
	KeyGroup func(K) int
	// CacheSize is the block cache size in bytes (default 32 MiB).
	CacheSize int64
	// MemTableSize is the memtable size in bytes (default 4 MiB).
	MemTableSize uint64
	// L0CompactionThreshold is the number of level-0 sublevels that
	// starts their compaction (default DefaultL0CompactionThreshold);
	// writes stop at four times as many.
	L0CompactionThreshold int
	// StateCacheSize bounds the cache of decoded values in front of the
	// store (see cache.go), in bytes: 0 means the default, 64 MiB; a
	// negative size turns the cache off.
	StateCacheSize int64
}

// NewPebbleBackend returns an empty backend that stores its state in a
// Pebble store in a fresh subdirectory of dir. Call Close to close the
// store and remove the subdirectory.
func NewPebbleBackend[K comparable](dir string, maxParallelism int, keyGroup func(K) int) (*Backend[K], error) {
	return NewPebbleBackendWithOptions(PebbleOptions[K]{Dir: dir, MaxParallelism: maxParallelism, KeyGroup: keyGroup})
}

// NewPebbleBackendWithOptions is NewPebbleBackend with every option.
func NewPebbleBackendWithOptions[K comparable](o PebbleOptions[K]) (*Backend[K], error) {
	if o.MaxParallelism <= 0 || o.MaxParallelism > 1<<16 {
		return nil, fmt.Errorf("state: max parallelism %d out of (0, 65536]", o.MaxParallelism)
	}
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("state: key codec: %w", err)
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	dir, err := os.MkdirTemp(o.Dir, "weir-state-")
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 32 << 20
	}
	if o.L0CompactionThreshold <= 0 {
		o.L0CompactionThreshold = DefaultL0CompactionThreshold
	}
	cache := pebble.NewCache(o.CacheSize)
	defer cache.Unref()
	opts := &pebble.Options{
		Cache:        cache,
		MemTableSize: o.MemTableSize,
		DisableWAL:   true, // durability comes from checkpoints
		Logger:       quietLogger{},
		Merger:       listMerger,
	}
	// State access is mostly point lookups of keys that may not exist (a
	// new key's first record): Bloom filters answer those without
	// reading a block, on every level (later levels inherit L0's).
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	// State written back and rewritten often spreads over the whole key
	// range: each level-0 compaction rewrites most of the level below.
	// Letting level 0 gather more files first cuts that write
	// amplification (q19 at a tenth of its state: 527 MB of compaction
	// output for 1 M events with Pebble's 4); reads consult more files,
	// each behind its Bloom filter.
	opts.L0CompactionThreshold = o.L0CompactionThreshold
	opts.L0CompactionFileThreshold = 4 * o.L0CompactionThreshold
	opts.L0StopWritesThreshold = 4 * o.L0CompactionThreshold
	db, err := pebble.Open(dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("state: open pebble store: %w", err)
	}
	b := NewBackend[K]()
	b.kc = kc
	cache.Ref() // kept for reopening the store on restore; released by close
	b.p = &pebbleStore[K]{db: db, dir: dir, kc: kc, keyGroup: o.KeyGroup, maxPar: o.MaxParallelism,
		meta: make(map[string]*pMeta), opts: opts}
	switch {
	case o.StateCacheSize == 0:
		b.p.cache = newStateCache(db, DefaultStateCacheSize)
	case o.StateCacheSize > 0:
		b.p.cache = newStateCache(db, o.StateCacheSize)
	}
	return b, nil
}

// DefaultStateCacheSize is the default bound of a Pebble backend's cache
// of decoded values.
const DefaultStateCacheSize = 64 << 20

// DefaultL0CompactionThreshold is PebbleOptions.L0CompactionThreshold's
// default, four times Pebble's own.
const DefaultL0CompactionThreshold = 16

// quietLogger drops Pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(format string, a ...any) { log.Printf("state: pebble: "+format, a...) }
func (quietLogger) Fatalf(format string, a ...any) {
	panic(fmt.Sprintf("state: pebble: "+format, a...))
}

type pebbleStore[K comparable] struct {
	db       *pebble.DB
	closed   bool
	dir      string
	kc       codec.Codec[K]
	keyGroup func(K) int
	maxPar   int
	meta     map[string]*pMeta
	nextID   uint32
	opts     *pebble.Options
	inc      incrementalState
	cur      []byte // key group and encoded current key
	curValid bool
	kbuf     []byte // scratch store key
	vbuf     []byte // scratch value
	// cache holds decoded values in front of the store; nil when off.
	cache *stateCache
	// timeMaps are the time map states, which read ahead and drop their
	// entries as the watermark advances.
	timeMaps []timeMapHandle
}

// flushCache writes back the cache's changes: the store then holds every
// change.
func (p *pebbleStore[K]) flushCache() error {
	if p.cache == nil {
		return nil
	}
	return p.cache.flush()
}

// dropCache writes back the cache's changes and empties it.
func (p *pebbleStore[K]) dropCache() error {
	if p.cache == nil {
		return nil
	}
	return p.cache.drop()
}

type pMeta struct {
	id   uint32
	kind kind
	// byTime is set for a map state in the time-ordered layout of time
	// maps (timemap.go): store keys (id, time, key group, key).
	byTime bool
}

const idLen, kgLen = 4, 2

func (p *pebbleStore[K]) metaFor(name string, k kind) (*pMeta, error) {
	if m, ok := p.meta[name]; ok {
		if m.kind != k {
			return nil, fmt.Errorf("state %q holds %v state, used as %v state", name, m.kind, k)
		}
		return m, nil
	}
	m := &pMeta{id: p.nextID, kind: k}
	p.nextID++
	p.meta[name] = m
	return m, nil
}

func (p *pebbleStore[K]) handle(b *Backend[K], name string, k kind) pHandle[K] {
	m, err := p.metaFor(name, k)
	if err != nil {
		panic(err)
	}
	return pHandle[K]{b: b, p: p, m: m, name: name}
}

func (p *pebbleStore[K]) group(key K) int {
	if p.keyGroup == nil {
		return 0
	}
	kg := p.keyGroup(key)
	if kg < 0 || kg >= p.maxPar {
		panic(fmt.Errorf("state: key group %d of key %v out of [0, %d)", kg, key, p.maxPar))
	}
	return kg
}

func appendPrefix(dst []byte, id uint32, kg int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, id)
	return binary.BigEndian.AppendUint16(dst, uint16(kg))
}

// prefixEnd returns the smallest key after every key with prefix p, or nil
// if there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func idBounds(id uint32) (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint32(nil, id)
	return lo, prefixEnd(lo)
}

func (p *pebbleStore[K]) close() error {
	p.closed = true
	err := p.db.Close()
	p.opts.Cache.Unref()
	if rerr := os.RemoveAll(p.dir); err == nil {
		err = rerr
	}
	_ = os.RemoveAll(p.dir + checkpointsSuffix)
	if p.cache != nil {
		for _, s := range p.cache.spills {
			_ = s.closeSpill()
		}
	}
	_ = os.RemoveAll(p.dir + spillSuffix)
	return err
}

// pHandle is what Pebble state handles share.
type pHandle[K comparable] struct {
	b *Backend[K]
	p *pebbleStore[K]
	// m is shared with the store, so that a restore that replaces the
	// store's files can renumber the states of existing handles.
	m    *pMeta
	name string
}

// key returns the store key of the current key in p.kbuf, valid until the
// next call of any handle.
func (h *pHandle[K]) key() []byte {
	p := h.p
	if !p.curValid {
		kg := p.group(h.b.current)
		p.cur = binary.BigEndian.AppendUint16(p.cur[:0], uint16(kg))
		p.cur = p.kc.Append(p.cur, h.b.current)
		p.curValid = true
	}
	p.kbuf = binary.BigEndian.AppendUint32(p.kbuf[:0], h.m.id)
	p.kbuf = append(p.kbuf, p.cur...)
	return p.kbuf
}

func (h *pHandle[K]) fail(err error) {
	if prefix := fmt.Sprintf("state %q: ", h.name); !strings.HasPrefix(err.Error(), prefix) {
		err = fmt.Errorf("%s%w", prefix, err)
	}
	panic(err)
}

// getRaw calls fn with the stored value of key, if any, and reports
// whether there was one.
func (h *pHandle[K]) getRaw(key []byte, fn func([]byte) error) bool {
	v, closer, err := h.p.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false
	}
	if err != nil {
		h.fail(err)
	}
	if fn != nil {
		err = fn(v)
	}
	closer.Close()
	if err != nil {
		h.fail(err)
	}
	return true
}

func pGet[K comparable, T any](h *pHandle[K], c codec.Codec[T], key []byte) (T, bool) {
	var out T
	ok := h.getRaw(key, func(v []byte) error {
		var err error
		out, err = decodeAll(c, v)
		return err
	})
	return out, ok
}

func pPut[K comparable, T any](h *pHandle[K], c codec.Codec[T], key []byte, v T) {
	h.p.vbuf = c.Append(h.p.vbuf[:0], v)
	if err := h.p.db.Set(key, h.p.vbuf, pebble.NoSync); err != nil {
		h.fail(err)
	}
}

func (h *pHandle[K]) del(key []byte) {
	if err := h.p.db.Delete(key, pebble.NoSync); err != nil {
		h.fail(err)
	}
}

// newValueCache returns the cache index of a state of single values, or
// nil when the store has no cache.
func newValueCache[K comparable, T any](p *pebbleStore[K], c codec.Codec[T]) *cached[T] {
	if p.cache == nil {
		return nil
	}
	var buf []byte
	return &cached[T]{cache: p.cache, m: make(map[string]*cachedValue[T]), encode: func(batch *pebble.Batch, key []byte, v T, ok bool) (int, error) {
		if !ok {
			return 0, batch.Delete(key, nil)
		}
		buf = c.Append(buf[:0], v)
		return len(buf), batch.Set(key, buf, nil)
	}}
}

// newMapCache returns the cache index of a map state's entries, or nil.
func newMapCache[K comparable, MV any](p *pebbleStore[K], c codec.Codec[MV]) *cached[MV] {
	return newValueCache(p, c)
}

// newListCache returns the cache index of a list state, or nil.
func newListCache[K comparable, T any](p *pebbleStore[K], c codec.Codec[T]) *cached[[]T] {
	if p.cache == nil {
		return nil
	}
	var buf []byte
	return &cached[[]T]{cache: p.cache, m: make(map[string]*cachedValue[[]T]), encode: func(batch *pebble.Batch, key []byte, v []T, ok bool) (int, error) {
		if !ok || len(v) == 0 {
			return 0, batch.Delete(key, nil)
		}
		buf = appendList(buf[:0], c, v)
		return len(buf), batch.Set(key, buf, nil)
	}}
}

// loadCached returns the cache entry of the current key, reading and
// decoding it from the store on a miss.
func loadCached[K comparable, T any](h *pHandle[K], c *cached[T], decode func([]byte) (T, error)) *cachedValue[T] {
	return loadCachedAt(h, c, h.key(), decode)
}

// loadCachedAt is loadCached of store key key.
func loadCachedAt[K comparable, T any](h *pHandle[K], c *cached[T], key []byte, decode func([]byte) (T, error)) *cachedValue[T] {
	if e := c.lookup(key); e != nil {
		return e
	}
	return loadMissAt(h, c, key, decode)
}

// loadMissAt is loadCachedAt of a key the cache does not hold.
func loadMissAt[K comparable, T any](h *pHandle[K], c *cached[T], key []byte, decode func([]byte) (T, error)) *cachedValue[T] {
	if !c.cache.stored.mayHold(key) {
		// Never stored: absent, and not worth an entry, which would only
		// push others out (q19 looks up a time's other bids once, and
		// there are none).
		return &c.absent
	}
	var v T
	size := 0
	c.cache.stats.misses++
	ok := h.getRaw(key, func(raw []byte) error {
		size = len(raw)
		var err error
		v, err = decode(raw)
		return err
	})
	e, err := c.insert(key, v, ok, size, false)
	if err != nil {
		h.fail(err)
	}
	return e
}

// setCached sets the current key's value (ok) or its absence in the cache,
// without reading the store. A new entry's size is measured by encoding
// its value (size); an entry's later changes are measured when it is
// written back.
func setCached[K comparable, T any](h *pHandle[K], c *cached[T], v T, ok bool, size func(T) int) {
	setCachedAt(h, c, h.key, v, ok, size)
}

// setCachedAt is setCached of the store key that key returns, which it
// may call twice: size uses the scratch buffers.
//
// Removing a key the store never held needs no tombstone, nor an entry
// of its absence: the filters of stored keys answer a later read without
// the store. So a value that is set and removed between two write-backs
// (q19's bids waiting for their timer) never reaches Pebble at all.
func setCachedAt[K comparable, T any](h *pHandle[K], c *cached[T], key func() []byte, v T, ok bool, size func(T) int) {
	if !ok {
		if kb := key(); !c.cache.stored.mayHold(kb) {
			if e := c.find(kb); e != nil {
				c.cache.remove(&e.cacheEntry)
			}
			return
		}
	}
	if e := c.lookup(key()); e != nil {
		was := e.ok
		e.v, e.ok = v, ok
		c.cache.markDirty(&e.cacheEntry)
		switch {
		case ok && !was:
			// A key read as absent gets a value: measure it.
			if err := c.cache.resize(&e.cacheEntry, int64(size(v))); err != nil {
				h.fail(err)
			}
		case !ok && was && c.dropsLater != nil:
			c.cache.shrink(&e.cacheEntry)
		case !ok && was:
			// A removed key is a deletion to write back, which needs
			// no more room than its key; and a removed key is rarely
			// read again (q19's bids, once their timer fired), so it
			// goes first, with the next eviction.
			c.cache.retire(&e.cacheEntry)
		}
		return
	}
	n := 0
	if ok {
		n = size(v)
	}
	if _, err := c.insert(key(), v, ok, n, true); err != nil {
		h.fail(err)
	}
}

// storeCached stores v in entry e, which the caller read before calling
// user code; if that code evicted e, or e was absent, v goes in as
// setCached puts it.
func storeCached[K comparable, T any](h *pHandle[K], c *cached[T], e *cachedValue[T], v T, size func(T) int) {
	if e.prev == nil || !e.ok {
		setCached(h, c, v, true, size)
		return
	}
	e.v = v
	c.cache.markDirty(&e.cacheEntry)
}

// encodedSize is v's encoded size, measured in the store's scratch value.
func encodedSize[K comparable, T any](p *pebbleStore[K], c codec.Codec[T], v T) int {
	p.vbuf = c.Append(p.vbuf[:0], v)
	return len(p.vbuf)
}

// clearValue removes the current key's single value: cached as absent,
// or deleted from the store when there is no cache.
func clearValue[K comparable, T any](h *pHandle[K], c *cached[T]) {
	if c != nil {
		var zero T
		setCached(h, c, zero, false, nil)
		return
	}
	h.del(h.key())
}

type pValue[K comparable, T any] struct {
	pHandle[K]
	c     codec.Codec[T]
	def   T
	cache *cached[T]
}

func (s *pValue[K, T]) decode(raw []byte) (T, error) { return decodeAll(s.c, raw) }
func (s *pValue[K, T]) size(v T) int                 { return encodedSize(s.p, s.c, v) }

func (s *pValue[K, T]) Value() (T, bool) {
	if s.cache != nil {
		if e := loadCached(&s.pHandle, s.cache, s.decode); e.ok {
			return e.v, true
		}
		return s.def, false
	}
	v, ok := pGet(&s.pHandle, s.c, s.key())
	if !ok {
		return s.def, false
	}
	return v, true
}

func (s *pValue[K, T]) Update(v T) {
	if s.cache != nil {
		setCached(&s.pHandle, s.cache, v, true, s.size)
		return
	}
	pPut(&s.pHandle, s.c, s.key(), v)
}

func (s *pValue[K, T]) Clear() { clearValue(&s.pHandle, s.cache) }

type pList[K comparable, T any] struct {
	pHandle[K]
	c     codec.Codec[T]
	cache *cached[[]T]
}

func (s *pList[K, T]) decode(raw []byte) ([]T, error) { return decodeList(s.c, raw) }

func (s *pList[K, T]) size(vs []T) int {
	s.p.vbuf = appendList(s.p.vbuf[:0], s.c, vs)
	return len(s.p.vbuf)
}

func (s *pList[K, T]) Get() []T {
	if s.cache != nil {
		return loadCached(&s.pHandle, s.cache, s.decode).v
	}
	var out []T
	s.getRaw(s.key(), func(v []byte) error {
		var err error
		out, err = decodeList(s.c, v)
		return err
	})
	return out
}

// Add appends with a merge (Pebble's default merger concatenates), without
// reading the list.
func (s *pList[K, T]) Add(v T) {
	if s.cache != nil {
		key := s.key()
		if e := s.cache.lookup(key); e != nil {
			e.v, e.ok = append(e.v, v), true
			s.cache.cache.markDirty(&e.cacheEntry)
			if err := s.cache.cache.resize(&e.cacheEntry, int64(encodedSize(s.p, s.c, v))); err != nil {
				s.fail(err)
			}
			return
		}
		if !s.cache.cache.stored.mayHold(key) {
			// A new list: it starts in the cache.
			setCached(&s.pHandle, s.cache, []T{v}, true, s.size)
			return
		}
		s.cache.cache.stored.add(key)
	}
	s.p.vbuf = s.c.Append(s.p.vbuf[:0], v)
	if err := s.p.db.Merge(s.key(), s.p.vbuf, pebble.NoSync); err != nil {
		s.fail(err)
	}
}

func (s *pList[K, T]) Update(vs []T) {
	if len(vs) == 0 {
		s.Clear()
		return
	}
	if s.cache != nil {
		if e := s.cache.lookup(s.key()); e == nil || !sameArray(e.v, vs) {
			// A list that Get returned and the caller changed in place
			// is the state's own already.
			vs = slices.Clone(vs)
		}
		setCached(&s.pHandle, s.cache, vs, true, s.size)
		return
	}
	s.p.vbuf = appendList(s.p.vbuf[:0], s.c, vs)
	if err := s.p.db.Set(s.key(), s.p.vbuf, pebble.NoSync); err != nil {
		s.fail(err)
	}
}

func (s *pList[K, T]) Clear() {
	if s.cache != nil {
		setCached(&s.pHandle, s.cache, nil, false, nil)
		return
	}
	s.del(s.key())
}

type pMap[K, MK comparable, MV any] struct {
	pHandle[K]
	kc codec.Codec[MK]
	vc codec.Codec[MV]
	// cache holds map entries one by one, by their store keys.
	cache *cached[MV]
	// from, for a time map, is the earliest time whose entries the store
	// may still hold in full: those before it were dropped as the
	// watermark passed them, but for what the timers left.
	from int64
	// window is the watermark whose timers run, math.MinInt64 between
	// watermarks: misses on the times from from to window read ahead
	// (timemap.go).
	window int64
	// readTo is the last store key a read-ahead read.
	readTo []byte
	// gone holds the store keys of removed entries that left the cache
	// without a tombstone while the timers ran (dropsLater).
	gone map[string]struct{}
	// spill, for a time map with a cache, holds evicted entries of times
	// to come (spill.go).
	spill *timeSpill
}

func (s *pMap[K, MK, MV]) entryKey(k MK) []byte {
	if s.m.byTime {
		return s.timeKey(any(k).(int64))
	}
	key := s.key()
	s.p.kbuf = s.kc.Append(key, k)
	return s.p.kbuf
}

func (s *pMap[K, MK, MV]) decode(raw []byte) (MV, error) { return decodeAll(s.vc, raw) }
func (s *pMap[K, MK, MV]) size(v MV) int                 { return encodedSize(s.p, s.vc, v) }

// entry returns map key k's cache entry, read from the store on a miss.
func (s *pMap[K, MK, MV]) entry(k MK) *cachedValue[MV] {
	if s.m.byTime {
		return s.timeEntry(any(k).(int64))
	}
	return loadCachedAt(&s.pHandle, s.cache, s.entryKey(k), s.decode)
}

// setEntry caches map key k's value (ok) or absence, without a read.
func (s *pMap[K, MK, MV]) setEntry(k MK, v MV, ok bool) {
	setCachedAt(&s.pHandle, s.cache, func() []byte { return s.entryKey(k) }, v, ok, s.size)
}

func (s *pMap[K, MK, MV]) Get(k MK) (MV, bool) {
	if s.cache != nil {
		e := s.entry(k)
		return e.v, e.ok
	}
	return pGet(&s.pHandle, s.vc, s.entryKey(k))
}

func (s *pMap[K, MK, MV]) Put(k MK, v MV) {
	if len(s.gone) > 0 {
		delete(s.gone, string(s.entryKey(k)))
	}
	if s.cache != nil {
		if s.m.byTime {
			s.overwrite(any(k).(int64))
		}
		s.setEntry(k, v, true)
		return
	}
	pPut(&s.pHandle, s.vc, s.entryKey(k), v)
}

func (s *pMap[K, MK, MV]) Remove(k MK) {
	if s.cache != nil {
		if s.m.byTime {
			s.overwrite(any(k).(int64))
		}
		var zero MV
		s.setEntry(k, zero, false)
		return
	}
	s.del(s.entryKey(k))
}

func (s *pMap[K, MK, MV]) Contains(k MK) bool {
	if s.cache != nil {
		return s.entry(k).ok
	}
	return s.getRaw(s.entryKey(k), nil)
}

// Clear removes the current key's entries: with the cache, it writes back
// the cache's changes, forgets the key's cached entries (found in the
// store, which then holds them all) and removes the range.
func (s *pMap[K, MK, MV]) Clear() {
	lo := bytes.Clone(s.key())
	if s.cache != nil {
		if err := s.p.flushCache(); err != nil {
			s.fail(err)
		}
		if len(s.cache.m) > 0 {
			s.eachStored(lo, func(key, _ []byte) bool {
				if e := s.cache.m[string(key)]; e != nil {
					s.cache.cache.remove(&e.cacheEntry)
				}
				return true
			})
		}
	}
	if err := s.p.db.DeleteRange(lo, prefixEnd(lo), pebble.NoSync); err != nil {
		s.fail(err)
	}
}

// eachStored calls fn with the store key and value of each stored entry
// under prefix lo, in order, until fn returns false.
func (s *pMap[K, MK, MV]) eachStored(lo []byte, fn func(key, val []byte) bool) {
	it, err := s.p.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		s.fail(err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		raw, err := it.ValueAndErr()
		if err != nil {
			s.fail(err)
		}
		if !fn(it.Key(), raw) {
			return
		}
	}
	if err := it.Error(); err != nil {
		s.fail(err)
	}
}

// All materializes the current key's map.
func (s *pMap[K, MK, MV]) All() map[MK]MV {
	var m map[MK]MV
	s.Range(func(k MK, v MV) bool {
		if m == nil {
			m = make(map[MK]MV)
		}
		m[k] = v
		return true
	})
	return m
}

// Range iterates the store, which holds every change once the cache
// wrote its changes back; a cached entry is passed as cached, so that a
// value a caller changed in place reads the same as through Get.
func (s *pMap[K, MK, MV]) Range(fn func(MK, MV) bool) {
	if err := s.p.flushCache(); err != nil {
		s.fail(err)
	}
	lo := bytes.Clone(s.key())
	s.eachStored(lo, func(key, raw []byte) bool {
		mk, err := decodeAll(s.kc, key[len(lo):])
		if err != nil {
			s.fail(err)
		}
		if s.cache != nil {
			if e := s.cache.m[string(key)]; e != nil {
				return fn(mk, e.v)
			}
		}
		mv, err := decodeAll(s.vc, raw)
		if err != nil {
			s.fail(err)
		}
		return fn(mk, mv)
	})
}

type pReducing[K comparable, T any] struct {
	pHandle[K]
	c      codec.Codec[T]
	reduce func(a, b T) T
	cache  *cached[T]
}

func (s *pReducing[K, T]) decode(raw []byte) (T, error) { return decodeAll(s.c, raw) }
func (s *pReducing[K, T]) size(v T) int                 { return encodedSize(s.p, s.c, v) }

func (s *pReducing[K, T]) Get() (T, bool) {
	if s.cache != nil {
		e := loadCached(&s.pHandle, s.cache, s.decode)
		return e.v, e.ok
	}
	return pGet(&s.pHandle, s.c, s.key())
}

func (s *pReducing[K, T]) Add(v T) {
	if s.cache != nil {
		e := loadCached(&s.pHandle, s.cache, s.decode)
		if e.ok {
			v = s.reduce(e.v, v)
		}
		storeCached(&s.pHandle, s.cache, e, v, s.size)
		return
	}
	key := s.key()
	if old, ok := pGet(&s.pHandle, s.c, key); ok {
		v = s.reduce(old, v)
		key = s.key() // reduce may have used other state
	}
	pPut(&s.pHandle, s.c, key, v)
}

func (s *pReducing[K, T]) Clear() { clearValue(&s.pHandle, s.cache) }

type pAggregating[K comparable, IN, ACC, OUT any] struct {
	pHandle[K]
	c      codec.Codec[ACC]
	add    func(ACC, IN) ACC
	result func(ACC) OUT
	zero   func() ACC
	cache  *cached[ACC]
}

func (s *pAggregating[K, IN, ACC, OUT]) decode(raw []byte) (ACC, error) { return decodeAll(s.c, raw) }
func (s *pAggregating[K, IN, ACC, OUT]) size(v ACC) int                 { return encodedSize(s.p, s.c, v) }

func (s *pAggregating[K, IN, ACC, OUT]) Get() (OUT, bool) {
	if s.cache != nil {
		e := loadCached(&s.pHandle, s.cache, s.decode)
		if !e.ok {
			var zero OUT
			return zero, false
		}
		return s.result(e.v), true
	}
	acc, ok := pGet(&s.pHandle, s.c, s.key())
	if !ok {
		var zero OUT
		return zero, false
	}
	return s.result(acc), true
}

func (s *pAggregating[K, IN, ACC, OUT]) Add(v IN) {
	if s.cache != nil {
		e := loadCached(&s.pHandle, s.cache, s.decode)
		acc := e.v
		if !e.ok {
			acc = s.zero()
		}
		storeCached(&s.pHandle, s.cache, e, s.add(acc, v), s.size)
		return
	}
	acc, ok := pGet(&s.pHandle, s.c, s.key())
	if !ok {
		acc = s.zero()
	}
	acc = s.add(acc, v)
	pPut(&s.pHandle, s.c, s.key(), acc)
}

func (s *pAggregating[K, IN, ACC, OUT]) Clear() { clearValue(&s.pHandle, s.cache) }

// sortedMeta returns the known states by name.
func (p *pebbleStore[K]) sortedMeta() []string {
	names := make([]string, 0, len(p.meta))
	for name := range p.meta {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// scan calls fn for each key (encoded, without id and key group) of state
// m with its raw entries: one for value and list states; for map states
// the map key suffix and value of each entry, in order. The slices are
// valid only during the call.
func (p *pebbleStore[K]) scan(m *pMeta, fn func(kb []byte, pairs [][2][]byte) error) error {
	if err := p.flushCache(); err != nil {
		return err
	}
	if m.byTime {
		return p.scanByTime(m, fn)
	}
	lo, hi := idBounds(m.id)
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	var (
		curK  []byte
		pairs [][2][]byte
	)
	flush := func() error {
		if curK == nil {
			return nil
		}
		err := fn(curK, pairs)
		curK, pairs = nil, pairs[:0]
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()[idLen+kgLen:]
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if m.kind != kindMap {
			if err := fn(key, [][2][]byte{{nil, v}}); err != nil {
				return err
			}
			continue
		}
		_, n, err := p.kc.Decode(key)
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if curK != nil && !bytes.Equal(curK, key[:n]) {
			if err := flush(); err != nil {
				return err
			}
		}
		if curK == nil {
			curK = bytes.Clone(key[:n])
		}
		pairs = append(pairs, [2][]byte{bytes.Clone(key[n:]), bytes.Clone(v)})
	}
	if err := it.Error(); err != nil {
		return err
	}
	return flush()
}

func (p *pebbleStore[K]) snapshot() ([]byte, error) {
	names := p.sortedMeta()
	out := binary.AppendUvarint([]byte(snapshotMagic), uint64(len(names)))
	var w stateWriter
	for _, name := range names {
		m := p.meta[name]
		w.buf, w.n = w.buf[:0], 0
		err := p.scan(m, func(kb []byte, pairs [][2][]byte) error {
			if m.kind != kindMap {
				w.entry(kb, pairs[0][1])
				return nil
			}
			w.vb = binary.AppendUvarint(w.vb[:0], uint64(len(pairs)))
			for _, kv := range pairs {
				w.vb = appendLenPrefixed(w.vb, kv[0])
				w.vb = appendLenPrefixed(w.vb, kv[1])
			}
			w.entry(kb, w.vb)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("state %q: %w", name, err)
		}
		out = appendState(out, name, m.kind, &w)
	}
	return out, nil
}

func (p *pebbleStore[K]) len(b *Backend[K]) int {
	n := 0
	for name := range b.states {
		err := p.scan(p.meta[name], func([]byte, [][2][]byte) error { n++; return nil })
		if err != nil {
			panic(fmt.Errorf("state %q: %w", name, err))
		}
	}
	return n
}

// restoreState writes a snapshot's entries into the store; an entry
// replaces the key's state.
func (p *pebbleStore[K]) restoreState(st snapState, keep func(K) bool) error {
	m, err := p.metaFor(st.name, st.kind)
	if err != nil {
		return err
	}
	if err := p.dropCache(); err != nil {
		return err
	}
	p.rewindTimeMaps()
	batch := p.db.NewBatch()
	defer func() { batch.Close() }()
	var key, tk []byte
	for _, e := range st.entries {
		k, err := decodeAll(p.kc, e.k)
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if keep != nil && !keep(k) {
			continue
		}
		key = appendPrefix(key[:0], m.id, p.group(k))
		key = append(key, e.k...)
		if p.cache != nil && m.kind != kindMap {
			p.cache.stored.add(key)
		}
		switch {
		case m.byTime:
			// Entries of one key are spread by time: a restored entry
			// replaces only the entry at its time.
			err := mapPairs(e.v, func(mk, mv []byte) error {
				ts, err := decodeAll(mapKeyCodec, mk)
				if err != nil {
					return fmt.Errorf("time: %w", err)
				}
				tk = appendTime(binary.BigEndian.AppendUint32(tk[:0], m.id), ts)
				tk = append(tk, key[idLen:]...)
				if p.cache != nil {
					p.cache.stored.add(tk)
				}
				return batch.Set(tk, mv, nil)
			})
			if err != nil {
				return err
			}
		case m.kind == kindMap:
			if err := batch.DeleteRange(key, prefixEnd(key), nil); err != nil {
				return err
			}
			n := len(key)
			err := mapPairs(e.v, func(mk, mv []byte) error {
				key = append(key[:n], mk...)
				if p.cache != nil {
					p.cache.stored.add(key)
				}
				return batch.Set(key, mv, nil)
			})
			if err != nil {
				return err
			}
		case m.kind == kindList:
			if len(e.v) == 0 {
				err = batch.Delete(key, nil)
			} else {
				err = batch.Set(key, e.v, nil)
			}
		default:
			err = batch.Set(key, e.v, nil)
		}
		if err != nil {
			return err
		}
		if err := p.commitLarge(&batch); err != nil {
			return err
		}
	}
	return batch.Commit(pebble.NoSync)
}

// rewindTimeMaps makes the time maps read from their earliest entries
// again: a restore may bring entries of any time.
func (p *pebbleStore[K]) rewindTimeMaps() {
	for _, t := range p.timeMaps {
		t.rewind()
	}
}

// commitLarge commits a batch of restored or moved entries once it holds
// 16 MiB, and starts the next, so that a restore does not build the
// whole state in one batch.
func (p *pebbleStore[K]) commitLarge(batch **pebble.Batch) error {
	if (*batch).Len() <= 16<<20 {
		return nil
	}
	if err := (*batch).Commit(pebble.NoSync); err != nil {
		return err
	}
	(*batch).Close()
	*batch = p.db.NewBatch()
	return nil
}
