package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/weirproject/weir/state"
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
	last := s.freeze()
	defer last.release()
	if last.n != len(ref) {
		t.Fatalf("%d slots, want %d", last.n, len(ref))
	}
	last.each(0, last.n, func(k, v *int) bool {
		if *v != ref[*k] {
			t.Fatalf("slot %d = %d, want %d", *k, *v, ref[*k])
		}
		return true
	})
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

// memBlobs keeps put segments in memory.
type memBlobs struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (b *memBlobs) Put(_ context.Context, name string, data []byte) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files[name] = data
	return name, nil
}

func (b *memBlobs) Reuse(handle string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.files[handle]
	return ok
}

// TestSegmentsOfOverlappingSnapshots: when the snapshot of a later
// checkpoint finishes first, the earlier one must not reference its
// segment files, which hold writes made after the earlier freeze; and a
// segment nobody wrote to is referenced, not put again.
func TestSegmentsOfOverlappingSnapshots(t *testing.T) {
	defer func(n int) { reduceSegmentLen = n }(reduceSegmentLen)
	reduceSegmentLen = cowChunkLen
	var s cowSlots[int64, int64]
	for i := range 3 * cowChunkLen {
		s.add(int64(i), 1)
	}
	var table segmentTable[int64, int64]
	blobs := &memBlobs{files: map[string][]byte{}}
	list := func(data []byte) []string {
		var hs []string
		if err := json.Unmarshal(bytes.TrimPrefix(data, []byte(reduceSegmentsMagic)), &hs); err != nil {
			t.Fatal(err)
		}
		return hs
	}
	first := s.freeze()
	m0, err := table.snapshot(context.Background(), first, blobs)
	first.release()
	if err != nil {
		t.Fatal(err)
	}
	a := s.freeze() // checkpoint n
	*s.set(0) = 2   // after n's barrier
	b := s.freeze() // checkpoint n+1
	mb, err := table.snapshot(context.Background(), b, blobs)
	if err != nil {
		t.Fatal(err)
	}
	ma, err := table.snapshot(context.Background(), a, blobs)
	if err != nil {
		t.Fatal(err)
	}
	a.release()
	b.release()
	h0, ha, hb := list(m0), list(ma), list(mb)
	if ha[0] == hb[0] {
		t.Fatal("the earlier snapshot references the later one's segment, which holds a later write")
	}
	for i := 1; i < 3; i++ {
		if ha[i] != h0[i] || hb[i] != h0[i] {
			t.Fatalf("segment %d, unchanged, was put again: %v %v %v", i, h0, ha, hb)
		}
	}
	vals := map[string]int64{}
	for name, h := range map[string]string{"a": ha[0], "b": hb[0]} {
		if err := state.RestoreValues(blobs.files[h], reduceStateName, nil, nil, func(k, v int64) {
			if k == 0 {
				vals[name] = v
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	if vals["a"] != 1 || vals["b"] != 2 {
		t.Fatalf("key 0 is %d in checkpoint n and %d in n+1, want 1 and 2", vals["a"], vals["b"])
	}
}
