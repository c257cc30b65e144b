package runtime

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValveIsTheMinimumOverActiveChannels(t *testing.T) {
	v := newValve(3)
	steps := []struct {
		op      string
		channel int
		wm      int64
		want    int64 // 0: no new watermark
	}{
		{"wm", 0, 10, 0},
		{"wm", 1, 20, 0},
		{"wm", 2, 5, 5},
		{"wm", 2, 30, 10},
		{"idle", 0, 0, 20},  // channel 0 no longer holds it back
		{"wm", 1, 25, 25},   // min(25, 30)
		{"active", 0, 0, 0}, // back, but behind: the watermark does not go back
		{"wm", 0, 40, 0},    // min(40, 25, 30) = 25, already there
		{"end", 1, 0, 30},   // an ended channel counts as +inf
		{"wm", 0, 50, 0},    // min(50, 30)
		{"end", 2, 0, 50},
	}
	for i, s := range steps {
		var got int64
		var ok bool
		switch s.op {
		case "wm":
			got, ok = v.update(s.channel, s.wm)
		case "idle", "active":
			_, got, ok = v.setIdle(s.channel, s.op == "idle")
		case "end":
			got, ok = v.end(s.channel)
		}
		if !ok {
			got = 0
		}
		if got != s.want {
			t.Fatalf("step %d %+v: got %d, want %d", i, s, got, s.want)
		}
	}
}

func TestValveAllIdle(t *testing.T) {
	v := newValve(2)
	if changed, _, _ := v.setIdle(0, true); changed {
		t.Fatal("one idle channel made the task idle")
	}
	if changed, _, _ := v.setIdle(1, true); !changed || !v.isIdle {
		t.Fatal("all channels idle, the task is not")
	}
	if changed, _, _ := v.setIdle(1, false); !changed || v.isIdle {
		t.Fatal("an active channel did not make the task active")
	}
}

func TestBarrierAlignment(t *testing.T) {
	b := newBarrierTracker(true, 2, 1) // input 0 with 2 channels, input 1 with 1
	if id := b.barrier(0, 0, 1); id != 0 || !b.blocked(0, 0) || b.blocked(0, 1) {
		t.Fatalf("after the first barrier: id %d, blocked %v %v", id, b.blocked(0, 0), b.blocked(0, 1))
	}
	if id := b.barrier(1, 0, 1); id != 0 {
		t.Fatal("completed with a channel missing")
	}
	if id := b.barrier(0, 1, 1); id != 1 {
		t.Fatalf("the last barrier did not complete checkpoint 1: %d", id)
	}
	if b.blocked(0, 0) || b.blocked(1, 0) {
		t.Fatal("channels stay blocked after the checkpoint")
	}
	// A channel that ends completes an alignment it was missing from.
	b.barrier(0, 0, 2)
	b.barrier(1, 0, 2)
	if id := b.end(0, 1); id != 2 {
		t.Fatalf("end of the last channel did not complete checkpoint 2: %d", id)
	}
	// A newer barrier overtakes an unfinished alignment.
	if id := b.barrier(0, 0, 3); id != 0 {
		t.Fatal("completed early")
	}
	if id := b.barrier(1, 0, 4); id != 0 || b.blocked(0, 0) {
		t.Fatal("checkpoint 3's blocking survived checkpoint 4")
	}
	if id := b.barrier(0, 0, 4); id != 4 {
		t.Fatalf("checkpoint 4 did not complete: %d", id)
	}
	// Stale barriers are ignored.
	if id := b.barrier(0, 0, 3); id != 0 || b.blocked(0, 0) {
		t.Fatal("a stale barrier started an alignment")
	}
}

func TestAtLeastOnceNeverBlocks(t *testing.T) {
	b := newBarrierTracker(false, 2)
	b.barrier(0, 0, 1)
	if b.blocked(0, 0) {
		t.Fatal("at-least-once blocked a channel")
	}
	if id := b.barrier(0, 1, 1); id != 1 {
		t.Fatal("at-least-once did not complete")
	}
}

func TestTimerHeapOrderAndDeduplication(t *testing.T) {
	// Few keys over many times keeps buckets small (searched by scanning);
	// many keys over few times makes them large (with a set of live keys).
	for _, shape := range []struct{ keys, times int }{{20, 300}, {200, 4}, {12, 30}} {
		t.Run(fmt.Sprintf("%dkeys-%dtimes", shape.keys, shape.times), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(shape.keys)))
			heap := newTimerHeap[int]()
			h := &heap
			want := map[[2]int64]bool{}
			last := int64(-1) // the time of the last timer popped
			for i := 0; i < 4000; i++ {
				// Times at or after the last one fired, as a watermark
				// would allow, so that popping interleaves with adding.
				k, ts := rng.IntN(shape.keys), max(last, 0)+int64(rng.IntN(shape.times))
				added := h.add(k, ts)
				if added == want[[2]int64{int64(k), ts}] {
					t.Fatalf("add(%d, %d) = %v with the timer already set = %v", k, ts, added, want[[2]int64{int64(k), ts}])
				}
				want[[2]int64{int64(k), ts}] = true
				if rng.IntN(4) == 0 {
					dk, dts := rng.IntN(shape.keys), max(last, 0)+int64(rng.IntN(shape.times))
					if h.remove(dk, dts) != want[[2]int64{int64(dk), dts}] {
						t.Fatalf("remove(%d, %d) disagrees with the set", dk, dts)
					}
					delete(want, [2]int64{int64(dk), dts})
				}
				if rng.IntN(8) == 0 {
					last = popChecked(t, h, want, last)
				}
				if h.len() != len(want) {
					t.Fatalf("%d timers pending, want %d", h.len(), len(want))
				}
			}
			if len(h.pending()) != len(want) {
				t.Fatalf("%d timers listed, want %d", len(h.pending()), len(want))
			}
			for h.len() > 0 {
				last = popChecked(t, h, want, last)
			}
			if _, ok := h.head(); ok || len(want) != 0 {
				t.Fatalf("%d timers left, head found one: %v", len(want), ok)
			}
		})
	}
}

// popChecked pops the earliest timer and checks it was set and not
// earlier than the last popped.
func popChecked(t *testing.T, h *timerHeap[int], want map[[2]int64]bool, last int64) int64 {
	t.Helper()
	head, ok := h.head()
	if !ok {
		if len(want) != 0 {
			t.Fatalf("no head with %d timers set", len(want))
		}
		return last
	}
	key, ts := h.pop()
	if ts != head || ts < last || !want[[2]int64{int64(key), ts}] {
		t.Fatalf("popped %d at %d (head %d, last %d): set %v", key, ts, head, last, want[[2]int64{int64(key), ts}])
	}
	for id := range want {
		if id[1] < ts {
			t.Fatalf("popped a timer at %d while one at %d is set", ts, id[1])
		}
	}
	delete(want, [2]int64{int64(key), ts})
	return ts
}

func TestTimerHeapFiresTheKeysOfATimeInRegistrationOrder(t *testing.T) {
	for _, n := range []int{3, smallTimerBucket, 5 * smallTimerBucket} {
		h := newTimerHeap[int]()
		for i := range n {
			h.add(n-i, 7)
			h.add(n-i, 5)
		}
		h.remove(n, 5) // the first registered at 5
		for _, ts := range []int64{5, 7} {
			from := n
			if ts == 5 {
				from = n - 1
			}
			for k := from; k > 0; k-- {
				key, got := h.pop()
				if key != k || got != ts {
					t.Fatalf("%d keys: popped %d at %d, want %d at %d", n, key, got, k, ts)
				}
			}
		}
		if h.len() != 0 {
			t.Fatalf("%d keys: %d left", n, h.len())
		}
	}
}

func TestKeyHashIsStable(t *testing.T) {
	// The hash decides where keyed state lives: it must be the same in
	// every process and every release, or restored state lands in the
	// wrong subtask. These values are pinned.
	hs, _ := NewKeyHasher[string]()
	hi, _ := NewKeyHasher[int64]()
	type pair struct {
		A string
		B int32
	}
	hp, err := NewKeyHasher[pair]()
	if err != nil {
		t.Fatal(err)
	}
	got := []uint64{hs("weir"), hi(42), hp(pair{"x", 7})}
	want := []uint64{2723438343022078094, 9297814886316923340, 7897733003623731230}
	if !slices.Equal(got, want) {
		t.Fatalf("key hashes changed: got %v, want %v", got, want)
	}
}

func TestRestartStrategies(t *testing.T) {
	t0 := time.Unix(0, 0)
	fd := &fixedDelay{attempts: 2, delay: time.Second}
	for i := 0; i < 2; i++ {
		if d, err := fd.OnFailure(t0, 0); err != nil || d != time.Second {
			t.Fatalf("fixed-delay restart %d: %v %v", i, d, err)
		}
	}
	if _, err := fd.OnFailure(t0, 0); err == nil || !strings.Contains(err.Error(), "after 2 restarts") {
		t.Fatalf("fixed-delay third failure: %v", err)
	}

	fr := &failureRate{max: 2, interval: time.Minute, delay: time.Second}
	for _, at := range []time.Duration{0, 30 * time.Second, 70 * time.Second, 80 * time.Second} {
		// At 70 s the failure at 0 s has left the one-minute window (two
		// remain: 30, 70); at 80 s there are three within it: one too many.
		_, err := fr.OnFailure(t0.Add(at), 0)
		if want := at == 80*time.Second; (err != nil) != want {
			t.Fatalf("failure-rate at %v: %v", at, err)
		}
	}

	ed := &exponentialDelay{initial: time.Second, max: 5 * time.Second, multiplier: 2, reset: time.Hour, attempts: 100}
	var delays []time.Duration
	for i := 0; i < 5; i++ {
		d, err := ed.OnFailure(t0, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, d)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}; !slices.Equal(delays, want) {
		t.Fatalf("exponential delays %v, want %v", delays, want)
	}
	if d, _ := ed.OnFailure(t0, 2*time.Hour); d != time.Second {
		t.Fatalf("after a long healthy run the backoff did not reset: %v", d)
	}
}
