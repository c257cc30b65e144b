package state

import (
	"context"
	"fmt"
	"maps"
	"testing"
)

// TestHeapSnapshotIsTheStateAtItsSynchronousPart changes every kind of
// heap state while the asynchronous part of a snapshot runs on another
// goroutine (under -race, also that the two share nothing they write),
// and requires the snapshot to restore the state as it was when the
// synchronous part was taken.
func TestHeapSnapshotIsTheStateAtItsSynchronousPart(t *testing.T) {
	type acc struct {
		N   int64
		Tag string
	}
	b := NewBackend[string]()
	counts := Value[int64](b, "counts", 0)
	sums := Reducing[int64](b, "sums", func(a, b int64) int64 { return a + b })
	accs := Aggregating[int64, acc, int64](b, "accs", func(a acc, v int64) acc { a.N += v; a.Tag = fmt.Sprint("t", v); return a },
		func(a acc) int64 { return a.N }, func() acc { return acc{} })
	slices := Value[[]int64](b, "slices", nil) // not plain: encoded at once
	lists := List[int64](b, "lists")
	write := func(round int64) {
		for i := range 2000 {
			b.SetCurrentKey(fmt.Sprint("k", i))
			counts.Update(round*1000 + int64(i))
			sums.Add(round)
			accs.Add(round)
			if s, _ := slices.Value(); s != nil {
				s[0] = round // in place, as user code may
			} else {
				slices.Update([]int64{round})
			}
			lists.Add(round)
			if i%7 == 0 {
				counts.Clear()
			}
		}
	}
	dump := func(b *Backend[string]) map[string]string {
		out := make(map[string]string)
		c, s := Value[int64](b, "counts", 0), Reducing[int64](b, "sums", func(a, b int64) int64 { return a + b })
		a := Aggregating[int64, acc, int64](b, "accs", func(a acc, v int64) acc { a.N += v; return a }, func(a acc) int64 { return a.N }, func() acc { return acc{} })
		sl, l := Value[[]int64](b, "slices", nil), List[int64](b, "lists")
		for i := range 2000 {
			k := fmt.Sprint("k", i)
			b.SetCurrentKey(k)
			cv, cok := c.Value()
			sv, _ := s.Get()
			av, _ := a.Get()
			slv, _ := sl.Value()
			out[k] = fmt.Sprint(cv, cok, sv, av, slv, l.Get())
		}
		return out
	}
	write(1)
	write(2)
	want := dump(b)
	for name, cl := range map[string]any{"counts": counts, "sums": sums, "accs": accs, "slices": slices} {
		plain := cl.(heapCloner[string]).clone() != nil
		if plain != (name != "slices") {
			t.Fatalf("state %s: copied for later encoding = %v", name, plain)
		}
	}
	finish, err := b.SnapshotAsync(nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte)
	go func() {
		data, err := finish(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- data
	}()
	write(3)
	data := <-done
	r := NewBackend[string]()
	if err := r.RestoreAll(data); err != nil {
		t.Fatal(err)
	}
	if got := dump(r); !maps.Equal(got, want) {
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("key %s restored as %q, was %q at the snapshot", k, got[k], want[k])
			}
		}
	}
}

func TestEmptiedMapsAreReusedWithinABound(t *testing.T) {
	b := NewBackend[string]()
	small := Map[int, int](b, "small").(*mapState[string, int, int])
	big := Map[int, [1024]byte](b, "big").(*mapState[string, int, [1024]byte])
	if small.large != 1024 || big.large != spareMapBytes/(8+1024) {
		t.Fatalf("entries a spare map may have held: %d and %d", small.large, big.large)
	}
	for _, k := range []string{"a", "b", "c"} {
		b.SetCurrentKey(k)
		small.Put(1, 1)
		small.Remove(1)
	}
	if len(small.spare) != 1 {
		t.Fatalf("%d spare maps after three keys took and emptied one in turn, want 1", len(small.spare))
	}
	b.SetCurrentKey("b")
	small.Put(2, 2)
	if len(small.spare) != 0 || len(small.All()) != 1 || small.All()[2] != 2 {
		t.Fatalf("reused map: %v, %d spare", small.All(), len(small.spare))
	}
	// A map that grew past the bound is left to the collector, and the
	// state keeps no spares from then on.
	b.SetCurrentKey("a")
	for i := range big.large + 1 {
		big.Put(i, [1024]byte{})
	}
	big.Clear()
	b.SetCurrentKey("b")
	big.Put(1, [1024]byte{})
	big.Remove(1)
	if len(big.spare) != 0 || !big.sawLarge {
		t.Fatalf("%d spare maps after a map of %d entries of 1 KiB", len(big.spare), big.large+1)
	}
}
