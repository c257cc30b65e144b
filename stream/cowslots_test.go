package stream

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestCowSlotsViewsStayFrozen writes, appends and freezes at random while
// earlier views are read on other goroutines, and requires every view to
// hold exactly the slots of the moment it was frozen (under -race, also
// that no write touches a chunk a view reads).
func TestCowSlotsViewsStayFrozen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s cowSlots[int, int]
	var ref []int
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for step := 0; step < 200_000; step++ {
		switch r := rng.IntN(1000); {
		case r < 3:
			view := s.freeze()
			want := append([]int(nil), ref...)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer view.release()
				if view.n != len(want) {
					errs <- "view length differs"
					return
				}
				view.each(0, view.n, func(k *int, v *int) bool {
					if *k < 0 || *k >= len(want) || *v != want[*k] {
						errs <- "view changed after freeze"
						return false
					}
					return true
				})
			}()
		case r < 400 || len(ref) == 0:
			i := s.add(len(ref), step)
			if int(i) != len(ref) {
				t.Fatalf("add returned slot %d, want %d", i, len(ref))
			}
			ref = append(ref, step)
		default:
			i := rng.IntN(len(ref))
			*s.set(int32(i)) = step
			ref[i] = step
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	for i, want := range ref {
		if got := *s.get(int32(i)); got != want {
			t.Fatalf("slot %d = %d, want %d", i, got, want)
		}
	}
}

// TestCowSlotsCopyOnlyWhileRead checks that a write copies a chunk only
// while a view reads it: without readers, chunks are adopted in place.
func TestCowSlotsCopyOnlyWhileRead(t *testing.T) {
	var s cowSlots[int, int]
	for i := range 3 * cowChunkLen {
		s.add(i, i)
	}
	first := s.chunks[0]
	v := s.freeze()
	*s.set(0) = -1
	if s.chunks[0] == first {
		t.Fatal("a write to a chunk a view reads changed it in place")
	}
	if v.chunks[0] != first || first.vals[0] != 0 {
		t.Fatal("the view's chunk changed")
	}
	if v.lastWrite(0, cowChunkLen) != 0 || v.lastWrite(cowChunkLen, 2*cowChunkLen) != 0 {
		t.Fatal("a frozen chunk's epoch changed")
	}
	v.release()
	second := s.chunks[1]
	s.freeze().release()
	*s.set(cowChunkLen) = -2
	if s.chunks[1] != second || second.epoch != s.epoch {
		t.Fatal("a chunk no view reads was copied, or not adopted")
	}
}
