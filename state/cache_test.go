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
