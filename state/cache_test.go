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
	before := cacheWriteBacks.Load()
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
	if n := cacheWriteBacks.Load() - before; n != 0 {
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
	if n := cacheWriteBacks.Load() - before; n != 2 {
		t.Fatalf("%d entries written back, want the value and its tombstone", n)
	}
	if err := b.p.cache.drop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get(7); ok {
		t.Fatal("the store still holds a removed entry")
	}
}
