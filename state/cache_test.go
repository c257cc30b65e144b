package state

import (
	"fmt"
	"testing"
)

// TestStoredKeys: every key added reads as one the store may hold, across
// the filters' growth; about 1 % of keys never added do; past its bound
// the filter gives up and every key may be in the store.
func TestStoredKeys(t *testing.T) {
	s := storedKeys{maxBits: 64 << 20}
	const n = 300_000 // several filters
	for i := range n {
		s.add([]byte(fmt.Sprint("key-", i)))
	}
	if len(s.filters) < 2 {
		t.Fatalf("%d filters for %d keys, want it to have grown", len(s.filters), n)
	}
	for i := range n {
		if !s.mayHold([]byte(fmt.Sprint("key-", i))) {
			t.Fatalf("key %d was added but reads as never written", i)
		}
	}
	falsePositives := 0
	for i := range n {
		if s.mayHold([]byte(fmt.Sprint("other-", i))) {
			falsePositives++
		}
	}
	if rate := float64(falsePositives) / n; rate > 0.03 {
		t.Errorf("%.1f %% false positives, want about 1 %%", 100*rate)
	}
	small := storedKeys{maxBits: 1 << 20}
	for i := range 200_000 {
		small.add([]byte(fmt.Sprint("key-", i)))
	}
	if !small.off || !small.mayHold([]byte("never")) {
		t.Fatal("a filter past its bound did not give up")
	}
}

// TestRemovingANeverStoredKeyWritesNothing: a map entry and a value set
// and removed between two write-backs never reach the store, while the
// removal of one the store holds still writes its tombstone.
func TestRemovingANeverStoredKeyWritesNothing(t *testing.T) {
	b := newPebbleCache(t, 0)
	m := Map[int64, string](b, "waiting")
	v := Value[string](b, "v", "")
	before := b.p.cache.stats.writeBacks
	for i := range 1000 {
		b.SetCurrentKey(fmt.Sprint("key-", i%10))
		m.Put(int64(i), "bid")
		v.Update("x")
		m.Remove(int64(i))
		v.Clear()
		if _, ok := m.Get(int64(i)); ok {
			t.Fatal("a removed entry reads back")
		}
	}
	if err := b.p.flushCache(); err != nil {
		t.Fatal(err)
	}
	if n := b.p.cache.stats.writeBacks - before; n != 0 {
		t.Fatalf("%d entries written back for keys set and removed before any write-back", n)
	}

	b.SetCurrentKey("stored")
	m.Put(7, "kept")
	if err := b.p.flushCache(); err != nil {
		t.Fatal(err)
	}
	m.Remove(7)
	if err := b.p.flushCache(); err != nil {
		t.Fatal(err)
	}
	if n := b.p.cache.stats.writeBacks - before; n != 2 {
		t.Fatalf("%d entries written back, want the value and its tombstone", n)
	}
	if err := b.p.cache.drop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get(7); ok {
		t.Fatal("the store still holds a removed entry")
	}
}

// TestRemovedStoredEntryGoesFirst: removing an entry the store holds
// leaves a tombstone that takes only its key's room and is the next to be
// evicted, ahead of entries used longer ago; the eviction writes the
// deletion, so the entry reads as absent from the store afterwards.
func TestRemovedStoredEntryGoesFirst(t *testing.T) {
	b := newPebbleCache(t, 64<<10)
	m := Map[int64, string](b, "waiting")
	b.SetCurrentKey("k")
	big := string(make([]byte, 2000))
	m.Put(1, big)
	if err := b.p.flushCache(); err != nil { // the store holds key 1
		t.Fatal(err)
	}
	for i := int64(2); i <= 10; i++ {
		m.Put(i, "older")
	}
	c := b.p.cache
	before := c.bytes
	m.Remove(1)
	e := c.head.prev
	if e.key != string(m.(*pMap[string, int64, string]).entryKey(1)) {
		t.Fatal("the removed entry is not the least recently used")
	}
	if got, want := before-c.bytes, int64(2000); got < want {
		t.Fatalf("removing a 2000-byte entry freed %d bytes of the cache, want at least %d", got, want)
	}
	// One more entry past the capacity evicts an eighth of it, from the
	// least recently used end.
	c.capacity = c.bytes
	m.Put(11, "new")
	pm := m.(*pMap[string, int64, string])
	if _, cached := pm.cache.m[e.key]; cached {
		t.Fatal("the tombstone was not evicted first")
	}
	if _, cached := pm.cache.m[string(pm.entryKey(10))]; !cached {
		t.Fatal("the most recently used older entry was evicted")
	}
	if _, ok := m.Get(1); ok {
		t.Fatal("the removed entry reads back after its eviction")
	}
	for i := int64(2); i <= 10; i++ {
		if v, ok := m.Get(i); !ok || v != "older" {
			t.Fatalf("entry %d = %q, %v after the eviction", i, v, ok)
		}
	}
}

// TestLookupMemoNeverOutlivesItsEntry: the entry a state looked up last is
// found again without probing its index, but never once it left the
// cache (evicted, removed, or the cache emptied): a change to it would
// then be lost.
func TestLookupMemoNeverOutlivesItsEntry(t *testing.T) {
	b := newPebbleCache(t, 4<<10)
	v := Value[string](b, "v", "")
	m := Map[int, string](b, "m")
	b.SetCurrentKey("k")
	v.Update("first")
	if got, _ := v.Value(); got != "first" {
		t.Fatalf("value %q", got)
	}
	// Other keys push k's entry out: it is written back and forgotten.
	for i := range 200 {
		b.SetCurrentKey(fmt.Sprint("other-", i))
		v.Update(fmt.Sprint(i))
	}
	b.SetCurrentKey("k")
	v.Update("second") // a new entry, not the evicted one
	if err := b.p.cache.drop(); err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Value(); got != "second" {
		t.Fatalf("after the cache was emptied, value %q, want second", got)
	}
	m.Put(1, "x")
	m.Remove(1)
	m.Put(1, "y")
	if got, ok := m.Get(1); !ok || got != "y" {
		t.Fatalf("map entry %q, %v after put, remove, put", got, ok)
	}
	if err := b.p.cache.drop(); err != nil {
		t.Fatal(err)
	}
	if got, ok := m.Get(1); !ok || got != "y" {
		t.Fatalf("map entry %q, %v from the store", got, ok)
	}
}

// TestCacheMetrics: the backend's metrics count the cache's hits, its
// reads from the store and its write-backs, exactly.
func TestCacheMetrics(t *testing.T) {
	b := newPebbleCache(t, 1<<20)
	v := Value[string](b, "v", "")
	keys := testKeys(100)
	for _, k := range keys {
		b.SetCurrentKey(k)
		v.Update("x") // a blind write: no read
	}
	read := func() {
		for _, k := range keys {
			b.SetCurrentKey(k)
			if got, ok := v.Value(); !ok || got != "x" {
				t.Fatalf("%s = %q, %v", k, got, ok)
			}
		}
	}
	read()
	b.SetCurrentKey("never written")
	if _, ok := v.Value(); ok {
		t.Fatal("a key never written has a value")
	}
	if _, err := b.Snapshot(); err != nil { // writes every entry back
		t.Fatal(err)
	}
	if err := b.p.dropCache(); err != nil {
		t.Fatal(err)
	}
	read() // from the store
	read() // from the cache
	m := b.Metrics()
	if m.CacheHits != 200 || m.CacheMisses != 100 || m.CacheWriteBacks != 100 || m.CacheReadAhead != 0 {
		t.Fatalf("hits %d, misses %d, write-backs %d, read ahead %d; want 200, 100, 100, 0", m.CacheHits, m.CacheMisses, m.CacheWriteBacks, m.CacheReadAhead)
	}
}
