package stream_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
)

// growingKey is the key of record i of TestHeapReduceCheckpointsAreIncremental:
// key 0 for every even record, so that failures can be injected by
// counting its updates, and new keys for the odd ones, each updated by a
// few neighbouring records and never again, as new words are in a
// stream of text.
func growingKey(i int64) int64 {
	if i%2 == 0 {
		return 0
	}
	return 1 + i/10
}

// TestHeapReduceCheckpointsAreIncremental checks the heap Reduce's
// segmented snapshots: with file checkpoints, at parallelism 1 and 2 and
// with failures, the committed running sums equal a reference
// computation's, and later checkpoints reference segments that earlier
// ones wrote instead of writing every key again.
func TestHeapReduceCheckpointsAreIncremental(t *testing.T) {
	defer stream.SetReduceSegmentLen(256)()
	const n = 80_000
	sums := make(map[int64]int64)
	var want []string
	for i := int64(0); i < n; i++ {
		k := growingKey(i)
		sums[k] += i
		want = append(want, fmt.Sprintf("%d:%d", k, sums[k]))
	}
	slices.Sort(want)
	for _, p := range []int{1, 2} {
		for _, failures := range []int{0, 2} {
			name := fmt.Sprintf("p=%d failures=%d", p, failures)
			env := newEnv(t, p,
				"execution.checkpointing.interval", "10 ms",
				"state.checkpoints.dir", t.TempDir(),
				"state.backend.type", "hashmap",
				"restart-strategy.type", "fixed-delay",
				"restart-strategy.fixed-delay.attempts", "5",
				"restart-strategy.fixed-delay.delay", "10 ms",
				"taskmanager.network.buffer-records", "64")
			src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
				if i%500 == 0 {
					time.Sleep(time.Millisecond) // several checkpoints
				}
				return kv{K: growingKey(i), V: i}
			}}, "numbers").SetParallelism(1).UID("numbers")
			out := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("sums")
			// Failures come late, when most segments were written by
			// earlier checkpoints and restoring needs them.
			var seen [16]int
			got := stream.Collect(stream.Process(out, stream.ProcessFunc[kv, string](func(x kv, ctx *stream.Context, out stream.Collector[string]) error {
				if x.K == 0 {
					a := ctx.Attempt()
					if seen[a]++; a < failures && seen[a] == 12_000+2_000*a {
						return fmt.Errorf("injected failure in attempt %d", a)
					}
				}
				out.Collect(fmt.Sprintf("%d:%d", x.K, x.V))
				return nil
			})).UID("fail"))
			job := runExactlyOnce(t, name, env, got, want, failures)
			if job.CompletedCheckpoints() < 3 {
				t.Fatalf("%s: %d checkpoints", name, job.CompletedCheckpoints())
			}
			reused := 0
			for _, h := range job.CheckpointHistory() {
				if h.CheckpointedSize < h.FullSize {
					reused++
				}
			}
			if reused == 0 {
				t.Fatalf("%s: no checkpoint of %d reused a segment an earlier one wrote", name, len(job.CheckpointHistory()))
			}
			t.Logf("%s: %d checkpoints, %d of the last %d incremental", name, job.CompletedCheckpoints(), reused, len(job.CheckpointHistory()))
		}
	}
}
