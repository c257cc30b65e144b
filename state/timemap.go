package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// TimeMapState holds, per key, values by event time: typically records
// that wait for the watermark to pass their time, read and removed by
// the event-time timer at that time (a sort by event time, a
// deduplication or a top-N that emits once a time is complete).
//
// It is a map from time to value with a layout made for that pattern.
// On the heap it is a MapState[int64, V]. In Pebble its entries are
// ordered by time, then key (a MapState orders them by key): the
// entries a watermark passes are one range of the store. While the
// timers of a watermark run (between WatermarkAdvancing and
// WatermarkAdvanced) a cache miss in that range reads the entries that
// follow into the cache in one pass; afterwards the removed entries go
// with one range deletion rather than a tombstone each. Flink keeps
// RocksDB's timers time-ordered for the same reason.
//
// Entries the timers leave behind stay, as in any map: the range
// deletion keeps them. There is no per-key iteration: a key's entries
// are spread over the store by time.
type TimeMapState[V any] interface {
	Get(ts int64) (V, bool)
	Put(ts int64, v V)
	Remove(ts int64)
	Contains(ts int64) bool
}

// TimeMap returns the time map state registered under name. Its
// snapshots are those of a MapState[int64, V]: either may restore the
// other's.
func TimeMap[V any, K comparable](b *Backend[K], name string) TimeMapState[V] {
	if s, ok := b.states[name]; ok {
		if b.p != nil && !b.p.meta[name].byTime {
			panic(fmt.Errorf("state %q is a map, asked for as a time map", name))
		}
		return s.(TimeMapState[V])
	}
	var s TimeMapState[V]
	if b.p != nil {
		vc := mustCodec[V]()
		h := b.p.handle(b, name, kindMap)
		if err := b.p.layOut(h.m, true); err != nil {
			panic(fmt.Errorf("state %q: %w", name, err))
		}
		m := &pMap[K, int64, V]{pHandle: h, kc: mustCodec[int64](), vc: vc, cache: newMapCache(b.p, vc), from: math.MinInt64, window: math.MinInt64}
		if m.cache != nil {
			m.cache.dropsLater = m.dropsLater
			m.spill = newTimeSpill(b.p.dir+spillSuffix, name)
			m.cache.spill = m.spillEntry
			b.p.cache.spills = append(b.p.cache.spills, m)
		}
		b.p.timeMaps = append(b.p.timeMaps, m)
		s = m
	} else {
		s = newMapState[K, int64, V](b)
	}
	b.register(name, kindMap, s)
	return s
}

// timeKeyLen is the length of a time map's store key prefix: state id,
// then the time, big-endian with the sign bit flipped so that the bytes
// order as the times do.
const timeKeyLen = idLen + 8

func appendTime(dst []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63))
}

func timeOf(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// timeBound is the smallest store key of state id at time ts or later.
func timeBound(id uint32, ts int64) []byte {
	return appendTime(binary.BigEndian.AppendUint32(nil, id), ts)
}

// timeKey returns the store key of the current key's entry at ts: state
// id, time, key group and encoded key. It is valid until the next call
// of any handle.
func (h *pHandle[K]) timeKey(ts int64) []byte {
	h.key() // fills p.cur
	p := h.p
	p.kbuf = binary.BigEndian.AppendUint32(p.kbuf[:0], h.m.id)
	p.kbuf = appendTime(p.kbuf, ts)
	p.kbuf = append(p.kbuf, p.cur...)
	return p.kbuf
}

// timeMapHandle is what the backend calls on its time maps around the
// timers of a watermark.
type timeMapHandle interface {
	readAheadTo(wm int64)
	dropPassed(wm int64) error
	rewind()
}

func (s *pMap[K, MK, MV]) rewind() { s.from = math.MinInt64 }

// layOut gives map state m the time-ordered layout (byTime) or the
// key-ordered one. A state restored from a snapshot arrives in the layout
// its snapshot had, or key-ordered (full snapshots do not record it):
// its entries then move to the other layout under a new state id, once.
func (p *pebbleStore[K]) layOut(m *pMeta, byTime bool) error {
	if m.byTime == byTime {
		return nil
	}
	if err := p.dropCache(); err != nil {
		return err
	}
	lo, hi := idBounds(m.id)
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	if !it.First() {
		m.byTime = byTime // nothing to move
		return it.Error()
	}
	id := p.nextID
	p.nextID++
	batch := p.db.NewBatch()
	defer func() { batch.Close() }()
	var key []byte
	for valid := true; valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if key, err = p.moveKey(key[:0], it.Key(), id, byTime); err != nil {
			return err
		}
		if p.cache != nil {
			p.cache.stored.add(key)
		}
		if err := batch.Set(key, v, nil); err != nil {
			return err
		}
		if err := p.commitLarge(&batch); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if err := batch.DeleteRange(lo, hi, nil); err != nil {
		return err
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return err
	}
	m.id, m.byTime = id, byTime
	return nil
}

// moveKey appends to dst the store key, under state id, of map entry key
// in the other layout: to the time-ordered one when byTime.
func (p *pebbleStore[K]) moveKey(dst, key []byte, id uint32, byTime bool) ([]byte, error) {
	dst = binary.BigEndian.AppendUint32(dst, id)
	if !byTime {
		if len(key) < timeKeyLen+kgLen {
			return nil, fmt.Errorf("short time map key %x", key)
		}
		dst = append(dst, key[timeKeyLen:]...)
		return mapKeyCodec.Append(dst, timeOf(key[idLen:])), nil
	}
	kb := key[idLen:]
	if len(kb) < kgLen {
		return nil, fmt.Errorf("short map key %x", key)
	}
	_, n, err := p.kc.Decode(kb[kgLen:])
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	ts, err := decodeAll(mapKeyCodec, kb[kgLen+n:])
	if err != nil {
		return nil, fmt.Errorf("time: %w", err)
	}
	dst = appendTime(dst, ts)
	return append(dst, kb[:kgLen+n]...), nil
}

// mapKeyCodec encodes a time map's times as a MapState[int64, V]'s map
// keys, in snapshots.
var mapKeyCodec = mustCodec[int64]()

// scanByTime is scan for a time-ordered state: it gathers each key's
// entries, spread over the store by time, and passes the keys in the
// order a key-ordered state would (key group, then encoded key), each
// with its entries by time. A full snapshot of a time map so holds its
// entries in memory: they are what waits for the watermark.
func (p *pebbleStore[K]) scanByTime(m *pMeta, fn func(kb []byte, pairs [][2][]byte) error) error {
	lo, hi := idBounds(m.id)
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	byKey := make(map[string][][2][]byte)
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		if len(key) < timeKeyLen+kgLen {
			return fmt.Errorf("short time map key %x", key)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		k := string(key[timeKeyLen:]) // key group and key
		byKey[k] = append(byKey[k], [2][]byte{mapKeyCodec.Append(nil, timeOf(key[idLen:])), bytes.Clone(v)})
	}
	if err := it.Error(); err != nil {
		return err
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := fn([]byte(k[kgLen:]), byKey[k]); err != nil {
			return err
		}
	}
	return nil
}

// WatermarkAdvancing tells the backend that the timers of watermark wm
// are about to fire: until WatermarkAdvanced, a time map's cache miss
// on an entry the watermark passed reads a run of the store's following
// entries into the cache, in one pass, since the timers will ask for
// them next. A keyed operator calls it before it fires the timers, and
// WatermarkAdvanced after; both do nothing on the heap.
func (b *Backend[K]) WatermarkAdvancing(wm int64) {
	if b.p == nil || b.p.cache == nil {
		return
	}
	b.p.cache.watermarkAdvancing(wm)
	for _, t := range b.p.timeMaps {
		t.readAheadTo(wm)
	}
}

// WatermarkAdvanced tells the backend that the timers of watermark wm
// fired: the time maps drop the entries they removed up to wm with one
// range deletion.
func (b *Backend[K]) WatermarkAdvanced(wm int64) {
	if b.p == nil || b.p.cache == nil {
		return
	}
	for _, t := range b.p.timeMaps {
		if err := t.dropPassed(wm); err != nil {
			panic(fmt.Errorf("state: drop entries to watermark %d: %w", wm, err))
		}
	}
	b.p.cache.watermarkAdvanced(wm)
}

// readAheadShare bounds what one read-ahead puts in the cache: an eighth
// of it, so that the run read for the timers does not push out what
// they read first.
const readAheadShare = 8

func (s *pMap[K, MK, MV]) readAheadTo(wm int64) {
	s.window, s.readTo = wm, s.readTo[:0]
}

// timeEntry is entry for a time map: while the timers of a watermark
// run, a miss on a time the watermark passed reads ahead.
func (s *pMap[K, MK, MV]) timeEntry(ts int64) *cachedValue[MV] {
	key := s.timeKey(ts)
	c := s.cache
	if e := c.lookup(key); e != nil {
		return e
	}
	if s.spill.mayHold(key) {
		if e := s.fromSpill(key, ts >= s.from && ts <= s.window); e != nil {
			return e
		}
	}
	if ts < s.from || ts > s.window {
		return loadMissAt(&s.pHandle, s.cache, key, s.decode)
	}
	if _, ok := s.gone[string(key)]; ok || !c.cache.stored.mayHold(key) {
		return &c.absent
	}
	if bytes.Compare(key, s.readTo) <= 0 {
		// A run passed it: absent then, or evicted since; ask the
		// store alone rather than read the run again.
		return loadMissAt(&s.pHandle, s.cache, key, s.decode)
	}
	key = bytes.Clone(key)
	if err := s.readAhead(key); err != nil {
		s.fail(err)
	}
	if e := c.find(key); e != nil {
		return e // readAhead made it the most recent
	}
	return &c.absent // the run starts at key: the store does not hold it
}

// fromSpill returns the cache entry of key read from the spill, or nil
// when the spill does not hold it. In the timers' window it first reads
// the spill's next entries ahead, in order, as readAhead does the
// store's.
func (s *pMap[K, MK, MV]) fromSpill(key []byte, inWindow bool) *cachedValue[MV] {
	c := s.cache
	unread, err := s.spill.mayHoldUnread(key)
	if err != nil {
		s.fail(err)
	}
	if !unread {
		return nil
	}
	if inWindow {
		key = bytes.Clone(key)
		budget := c.cache.capacity / readAheadShare
		err := s.spill.readAhead(s.upTo(s.window), func(k, raw []byte) (bool, error) {
			if c.find(k) != nil {
				return true, nil
			}
			v, err := s.decode(raw)
			if err != nil {
				return false, err
			}
			c.cache.stats.spillReads++
			// Dirty: the spill no longer holds it.
			budget -= c.insertOnly(k, v, true, len(raw), true).size
			return budget > 0, nil
		})
		if err != nil {
			s.fail(err)
		}
		e := c.find(key)
		if e != nil {
			c.cache.touch(&e.cacheEntry)
		}
		if err := c.cache.evictOver(); err != nil {
			s.fail(err)
		}
		if e != nil {
			return e
		}
	}
	raw, ok, err := s.spill.take(key)
	if err != nil {
		s.fail(err)
	}
	if !ok {
		return nil
	}
	v, err := s.decode(raw)
	if err != nil {
		s.fail(err)
	}
	c.cache.stats.spillReads++
	e, err := c.insert(key, v, true, len(raw), true)
	if err != nil {
		s.fail(err)
	}
	return e
}

// spillEntry spills an evicted entry of a time to come that the store
// never held.
func (s *pMap[K, MK, MV]) spillEntry(key string, v MV) bool {
	if timeOf([]byte(key[idLen:timeKeyLen])) <= s.p.cache.wm || s.p.cache.stored.mayHold([]byte(key)) {
		return false
	}
	sp := s.spill
	start := len(sp.arena)
	sp.arena = s.vc.Append(sp.arena, v)
	sp.push(key, start)
	return true
}

// seal writes what the eviction spilled; when that is only a few
// entries, they go into the eviction's batch instead: a file for them
// would cost more than the store.
func (s *pMap[K, MK, MV]) seal(batch *pebble.Batch) error {
	sp := s.spill
	if n := len(sp.pending); n > 0 && n < s.p.cache.spillMin {
		stats := &s.p.cache.stats
		for _, r := range sp.pending {
			key := []byte(r.key)
			if err := batch.Set(key, r.val, nil); err != nil {
				return err
			}
			s.p.cache.stored.add(key)
		}
		stats.spilled -= int64(n)
		stats.writeBacks += int64(n)
		sp.clearPending()
		return nil
	}
	return sp.seal()
}

func (s *pMap[K, MK, MV]) closeSpill() error { return s.spill.closeAll() }

func (s *pMap[K, MK, MV]) linkSpill(dir string) (spillSnapshot, error) {
	return s.spill.link(dir)
}

// migrate writes what the spill holds into the store.
func (s *pMap[K, MK, MV]) migrate(batch *pebble.Batch) error {
	if s.spill.empty() {
		return nil
	}
	_, hi := idBounds(s.m.id)
	return s.spill.passTo(hi, batch, s.cached, &s.p.cache.stored)
}

func (s *pMap[K, MK, MV]) cached(key []byte) bool { return s.cache.find(key) != nil }

// overwrite makes the spill's copy of the entry at ts stale before a
// blind write of it.
func (s *pMap[K, MK, MV]) overwrite(ts int64) {
	if s.spill.empty() {
		return
	}
	if key := s.timeKey(ts); s.cache.find(key) == nil {
		s.spill.overwritten(key)
	}
}

// spillSuffix names the directory, next to a store, of its time maps'
// spills.
const spillSuffix = "-spill"

// readAhead caches the stored entries from key on, up to the watermark's
// time, that the cache does not hold, as read from the store, until they
// take their share of the cache; s.readTo is then the last key the run
// read. A fresh iterator sees every write back so far: what it returns
// that the cache does not hold is current.
func (s *pMap[K, MK, MV]) readAhead(key []byte) error {
	c := s.cache
	hi := s.upTo(s.window)
	it, err := s.p.db.NewIter(&pebble.IterOptions{LowerBound: key, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	budget := c.cache.capacity / readAheadShare
	s.readTo = append(s.readTo[:0], hi...) // the whole window, unless the budget ends the run
	for valid := it.First(); valid; valid = it.Next() {
		if budget <= 0 {
			it.Prev()
			s.readTo = append(s.readTo[:0], it.Key()...)
			break
		}
		if c.find(it.Key()) != nil {
			continue
		}
		if _, ok := s.gone[string(it.Key())]; ok {
			continue
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		v, err := s.decode(raw)
		if err != nil {
			return err
		}
		// No eviction while the iterator reads: the entries it evicted
		// would be written back past the iterator's view, which would
		// then return their older values.
		c.cache.stats.readAhead++
		budget -= c.insertOnly(it.Key(), v, true, len(raw), false).size
	}
	if err := it.Error(); err != nil {
		return err
	}
	if e := c.find(key); e != nil {
		// The entry asked for is the run's first: the eviction must
		// not take it, whatever it takes of the run.
		c.cache.touch(&e.cacheEntry)
	}
	return c.cache.evictOver()
}

// dropsLater records the eviction of a removed entry that the coming
// range deletion covers, instead of its tombstone: while the timers run,
// for the times they pass.
func (s *pMap[K, MK, MV]) dropsLater(key string) bool {
	if len(key) < timeKeyLen {
		return false
	}
	if ts := timeOf([]byte(key[idLen:timeKeyLen])); ts < s.from || ts > s.window {
		return false
	}
	if s.gone == nil {
		s.gone = make(map[string]struct{})
	}
	s.gone[key] = struct{}{}
	return true
}

// upTo is the store key bound past the entries of times up to wm.
func (s *pMap[K, MK, MV]) upTo(wm int64) []byte {
	if wm == math.MaxInt64 {
		_, hi := idBounds(s.m.id)
		return hi
	}
	return timeBound(s.m.id, wm+1)
}

// dropPassed deletes the store's range of times in [s.from, wm] at once.
// What the range holds that is still live is kept: a cached entry is
// written back after the deletion (marked dirty), an entry that is not
// cached is written again in the same batch, after the deletion. A
// removed entry, whether its absence is cached or its eviction recorded
// in s.gone, needs no more: the deletion covers it, and its tombstone is
// never written.
func (s *pMap[K, MK, MV]) dropPassed(wm int64) error {
	s.window = math.MinInt64
	if wm < s.from {
		return nil
	}
	c := s.cache
	lo, hi := timeBound(s.m.id, s.from), s.upTo(wm)
	it, err := s.p.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	batch := s.p.db.NewBatch()
	defer batch.Close()
	// Nothing stored: no range deletion either, which every read would
	// have to step over until compactions drop it.
	if it.First() {
		if err := batch.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
	}
	for valid := it.Valid(); valid; valid = it.Next() {
		e := c.find(it.Key())
		_, gone := s.gone[string(it.Key())]
		switch {
		case e == nil && gone:
		case e == nil:
			raw, err := it.ValueAndErr()
			if err != nil {
				return err
			}
			if err := batch.Set(it.Key(), raw, nil); err != nil {
				return err
			}
		case e.ok:
			c.cache.markDirty(&e.cacheEntry)
		default:
			c.cache.remove(&e.cacheEntry)
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	// What the spill holds of the passed times, the timers left: the
	// store keeps it, after the range deletion.
	if !s.spill.empty() {
		if err := s.spill.passTo(hi, batch, s.cached, &c.cache.stored); err != nil {
			return err
		}
	}
	if !batch.Empty() {
		if err := batch.Commit(pebble.NoSync); err != nil {
			return err
		}
	}
	s.passed(wm)
	return nil
}

// passed moves from past wm once its range is dropped.
func (s *pMap[K, MK, MV]) passed(wm int64) {
	clear(s.gone)
	if wm == math.MaxInt64 {
		s.from = wm
	} else {
		s.from = wm + 1
	}
}
