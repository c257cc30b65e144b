package stream_test

import (
	"context"
	"testing"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// routed is a record and where it went: the producer subtask is v mod the
// source parallelism (the generator interleaves), the consumer is the
// subtask that saw it.
type routed struct {
	V        int64
	Consumer int
}

// route runs a generator of n records at parallelism p into a process
// operator at parallelism q through the given partitioning and returns
// where each record went.
func route(t *testing.T, p, q int, n int64, partition func(*stream.Stream[int64]) *stream.Stream[int64]) []routed {
	t.Helper()
	env := newEnv(t, p)
	src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: n, Fn: func(i int64) int64 { return i }}, "gen")
	seen := stream.Process(partition(src), stream.ProcessFunc[int64, routed](func(v int64, ctx *stream.Context, out stream.Collector[routed]) error {
		out.Collect(routed{V: v, Consumer: ctx.Subtask()})
		return nil
	})).Name("observe").SetParallelism(q)
	got := stream.Collect(seen)
	if err := env.Execute(context.Background(), "route"); err != nil {
		t.Fatal(err)
	}
	return got.Values()
}

func counts(rs []routed, q int) []int {
	c := make([]int, q)
	for _, r := range rs {
		c[r.Consumer]++
	}
	return c
}

func TestForwardPartitioning(t *testing.T) {
	rs := route(t, 3, 3, 3000, (*stream.Stream[int64]).Forward)
	for _, r := range rs {
		if int(r.V%3) != r.Consumer {
			t.Fatalf("record %d from producer %d went to consumer %d", r.V, r.V%3, r.Consumer)
		}
	}
	if len(rs) != 3000 {
		t.Fatalf("got %d records", len(rs))
	}
}

func TestRebalanceIsRoundRobin(t *testing.T) {
	rs := route(t, 2, 3, 6000, (*stream.Stream[int64]).Rebalance)
	for c, n := range counts(rs, 3) {
		if n != 2000 {
			t.Fatalf("consumer %d got %d records, want exactly 2000 (%v)", c, n, counts(rs, 3))
		}
	}
}

func TestRescaleIsLocalRoundRobin(t *testing.T) {
	// 2 producers, 4 consumers: producer 0 feeds consumers 0 and 1,
	// producer 1 feeds 2 and 3.
	rs := route(t, 2, 4, 4000, (*stream.Stream[int64]).Rescale)
	for _, r := range rs {
		if producer := int(r.V % 2); r.Consumer/2 != producer {
			t.Fatalf("record from producer %d went to consumer %d", producer, r.Consumer)
		}
	}
	for c, n := range counts(rs, 4) {
		if n != 1000 {
			t.Fatalf("consumer %d got %d, want 1000", c, n)
		}
	}
	// 4 producers, 2 consumers: consumer 0 reads producers 0 and 1.
	rs = route(t, 4, 2, 4000, (*stream.Stream[int64]).Rescale)
	for _, r := range rs {
		if producer := int(r.V % 4); producer/2 != r.Consumer {
			t.Fatalf("record from producer %d went to consumer %d", producer, r.Consumer)
		}
	}
}

func TestShuffleSpreadsUniformly(t *testing.T) {
	const n, q = 40000, 4
	rs := route(t, 2, q, n, (*stream.Stream[int64]).Shuffle)
	for c, k := range counts(rs, q) {
		// Binomial(n, 1/4): sd ≈ 87; 6 sd is far beyond chance.
		if k < n/q-520 || k > n/q+520 {
			t.Fatalf("consumer %d got %d of %d records: %v", c, k, n, counts(rs, q))
		}
	}
}

func TestBroadcastReachesEveryConsumer(t *testing.T) {
	rs := route(t, 2, 3, 1000, (*stream.Stream[int64]).Broadcast)
	seen := make(map[routed]int)
	for _, r := range rs {
		seen[r]++
	}
	if len(rs) != 3000 || len(seen) != 3000 {
		t.Fatalf("got %d records, %d distinct; want 3000 each", len(rs), len(seen))
	}
}

func TestGlobalSendsEverythingToTheFirstSubtask(t *testing.T) {
	rs := route(t, 3, 3, 900, (*stream.Stream[int64]).Global)
	if c := counts(rs, 3); c[0] != 900 {
		t.Fatalf("counts = %v", c)
	}
}

func TestCustomPartitioner(t *testing.T) {
	rs := route(t, 2, 3, 900, func(s *stream.Stream[int64]) *stream.Stream[int64] {
		return stream.PartitionCustom(s, func(k int64, n int) int { return int(k % int64(n)) }, func(v int64) int64 { return v / 10 })
	})
	for _, r := range rs {
		if want := int((r.V / 10) % 3); r.Consumer != want {
			t.Fatalf("record %d went to %d, want %d", r.V, r.Consumer, want)
		}
	}
}

func TestHashPartitioningFollowsKeyGroups(t *testing.T) {
	const q = 3
	rs := route(t, 2, q, 3000, func(s *stream.Stream[int64]) *stream.Stream[int64] {
		return stream.KeyBy(s, func(v int64) int64 { return v % 97 }).Stream()
	})
	hash, err := runtime.NewKeyHasher[int64]()
	if err != nil {
		t.Fatal(err)
	}
	owner := make(map[int64]int)
	for _, r := range rs {
		k := r.V % 97
		want := runtime.OperatorIndexForKeyGroup(runtime.KeyGroupFor(hash(k), 128), 128, q)
		if r.Consumer != want {
			t.Fatalf("key %d went to subtask %d, its key group belongs to %d", k, r.Consumer, want)
		}
		if o, ok := owner[k]; ok && o != r.Consumer {
			t.Fatalf("key %d went to subtasks %d and %d", k, o, r.Consumer)
		}
		owner[k] = r.Consumer
	}
	// 97 keys should not all land in one subtask.
	for c, n := range counts(rs, q) {
		if n == 0 {
			t.Fatalf("subtask %d got no keys: %v", c, counts(rs, q))
		}
	}
}

func TestKeyGroupRangesCoverAllGroups(t *testing.T) {
	for _, maxP := range []int{1, 7, 128, 1000} {
		for p := 1; p <= maxP && p <= 40; p++ {
			next := 0
			for i := 0; i < p; i++ {
				r := runtime.KeyGroupRangeForSubtask(maxP, p, i)
				if r.Start != next {
					t.Fatalf("maxP %d p %d subtask %d starts at %d, want %d", maxP, p, i, r.Start, next)
				}
				for kg := r.Start; kg <= r.End; kg++ {
					if got := runtime.OperatorIndexForKeyGroup(kg, maxP, p); got != i {
						t.Fatalf("maxP %d p %d: key group %d maps to %d, range says %d", maxP, p, kg, got, i)
					}
				}
				next = r.End + 1
			}
			if next != maxP {
				t.Fatalf("maxP %d p %d: ranges end at %d", maxP, p, next)
			}
		}
	}
}
