package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/stream"
)

type countingOutput struct{ n int }

func (c *countingOutput) Collect(int64)                     { c.n++ }
func (c *countingOutput) CollectWithTimestamp(int64, int64) { c.n++ }

// A paced generator must never block in Poll (a blocked source holds up
// checkpoint barriers), and over time it must emit at its rate.
func TestGeneratorRateYieldsInsteadOfSleeping(t *testing.T) {
	const rate = 200.0 // records a second across both subtasks
	g := &stream.Generator[int64]{Count: -1, Rate: rate, Fn: func(i int64) int64 { return i }}
	splits, err := g.Splits(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.NewReader(context.Background(), connector.SplitContext{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddSplits(splits[:1]); err != nil {
		t.Fatal(err)
	}
	// Split 0 holds every other index, so it is due rate/2 records a
	// second: 100 records take a second. Waiting for the records rather
	// than for a second keeps a loaded machine, which polls less often,
	// from failing the test; it can only make the records later.
	const want = 100
	out := &countingOutput{}
	start := time.Now()
	var yields int
	for out.n < want && time.Since(start) < 30*time.Second {
		t0 := time.Now()
		st, err := r.Poll(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d > 20*time.Millisecond {
			t.Fatalf("Poll blocked for %v", d)
		}
		if st == connector.NothingAvailable {
			yields++
			time.Sleep(time.Millisecond)
		}
	}
	took := time.Since(start)
	if out.n < want {
		t.Fatalf("emitted %d records in %v from one of 2 splits at %v/s; want %d in about 1 s", out.n, took, rate, want)
	}
	// Not ahead of the rate: the 100th record is due after 0.995 s.
	if took < 900*time.Millisecond {
		t.Fatalf("emitted %d records in %v from one of 2 splits at %v/s: faster than the rate", out.n, took, rate)
	}
	if yields == 0 {
		t.Fatal("a paced reader ahead of its schedule never yielded")
	}
}
