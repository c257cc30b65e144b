package nexmark_test

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

// TestQ3ExactlyOnceAfterFailure fails Q3's job once, after checkpoints:
// the restored source splits and the join's keyed state must give every
// result exactly once.
func TestQ3ExactlyOnceAfterFailure(t *testing.T) {
	slow := func(e nexmark.Event) bool { return e.Timestamp()%50 == 0 && e.Kind == nexmark.PersonKind }
	exactlyOnceAfterFailure(t, 40_000, nexmark.Q3, nexmark.LoopQ3, slow, nil)
}

// TestQ19OnPebbleExactlyOnceAfterFailure is the same for Q19 on Pebble
// with a cache far smaller than its waiting bids: they are evicted to
// their time map's spill, incremental checkpoints (in a checkpoint
// directory) take the spill's files as they are, full ones (in the
// JobManager's memory) write the spill into the store, and either
// restore must bring back exactly the bids that waited. (Whether the
// checkpoint restored holds spill files depends on timing here;
// TestTimeMapMatchesAMap in the state package asserts it.)
func TestQ19OnPebbleExactlyOnceAfterFailure(t *testing.T) {
	for _, storage := range []string{"directory", "jobmanager"} {
		t.Run(storage, func(t *testing.T) {
			settings := map[string]string{
				"state.backend.type":              "pebble",
				"state.backend.pebble.cache-size": "64 KiB",
			}
			if storage == "directory" {
				settings["state.checkpoints.dir"] = t.TempDir()
				exactlyOnceAfterFailure(t, 60_000, nexmark.Q19, nexmark.LoopQ19, q19Slow, settings)
				return
			}
			q19ExactlyOnceAfterFailure(t, settings)
		})
	}
}

// q19Slow pauses the source a millisecond every 40 events: checkpoints
// come while bids wait, not only once the source is done.
func q19Slow(e nexmark.Event) bool { return e.Timestamp()%40 == 0 }

func q19ExactlyOnceAfterFailure(t *testing.T, settings map[string]string) {
	job := exactlyOnceAfterFailure(t, 60_000, nexmark.Q19, nexmark.LoopQ19, q19Slow, settings)
	var spilled, read int64
	for _, m := range job.Metrics() {
		for _, g := range m.Gauges {
			switch g.Name {
			case "stateCacheSpilled":
				spilled += g.Value
			case "stateCacheSpillReads":
				read += g.Value
			}
		}
	}
	t.Logf("restarted attempt: %d entries spilled, %d read back", spilled, read)
	if spilled == 0 || read == 0 {
		t.Fatalf("%d entries spilled, %d read back: the spill was not exercised", spilled, read)
	}
}

// exactlyOnceAfterFailure runs query q over n generated events at
// parallelism 2 with checkpoints every 5 ms, the source pausing a
// millisecond at each event slow picks, and fails the job once, at the
// first result after a third of them once a checkpoint completed; the
// results must be loop's, each once.
func exactlyOnceAfterFailure[R any](t *testing.T, n int64, q func(*stream.Stream[nexmark.Event]) *stream.Stream[R], loop func(iter.Seq[nexmark.Event], func(R)), slow func(nexmark.Event) bool, settings map[string]string) *stream.JobClient {
	all := nexmark.Generate(testConfig, n)
	var want []R
	loop(nexmark.Slice(all), func(r R) { want = append(want, r) })
	failAt := len(want) / 3

	cfg := config.New()
	config.Parallelism.Set(cfg, 2)
	kvs := [][2]string{
		{"execution.checkpointing.interval", "5 ms"},
		{"restart-strategy.type", "fixed-delay"},
		{"restart-strategy.fixed-delay.attempts", "3"},
		{"restart-strategy.fixed-delay.delay", "10 ms"},
	}
	for k, v := range settings {
		kvs = append(kvs, [2]string{k, v})
	}
	for _, kv := range kvs {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	env := stream.NewEnvironmentWithConfig(cfg)
	// read counts the events each attempt's sources emitted: after the
	// restore, the sources must go on from their checkpointed splits, not
	// read all n events again.
	var read [4]atomic.Int64
	events := stream.Process(nexmark.Events(env, testConfig, n), stream.ProcessFunc[nexmark.Event, nexmark.Event](func(e nexmark.Event, ctx *stream.Context, out stream.Collector[nexmark.Event]) error {
		read[ctx.Attempt()].Add(1)
		if slow(e) {
			time.Sleep(time.Millisecond) // slow enough for checkpoints
		}
		out.Collect(e)
		return nil
	})).Name("slow").UID("slow")
	results := q(events)
	// The failure comes at the first result after a third of them once a
	// checkpoint completed, so that the restart restores one.
	var checkpoints, checkpointsAtFailure atomic.Int64
	var seen [4]int
	failed := stream.Process(results, stream.ProcessFunc[R, R](func(r R, ctx *stream.Context, out stream.Collector[R]) error {
		seen[ctx.Attempt()]++ // one subtask: no lock needed
		if ctx.Attempt() == 0 && seen[0] >= failAt && checkpoints.Load() > 0 {
			checkpointsAtFailure.Store(checkpoints.Load())
			return errors.New("injected failure")
		}
		out.Collect(r)
		return nil
	})).SetParallelism(1).UID("fail")
	got := stream.Collect(failed)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "failure")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// Owned by the job: ends with it.
		for {
			checkpoints.Store(int64(job.CompletedCheckpoints()))
			select {
			case <-job.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	if job.Restarts() != 1 {
		t.Errorf("%d restarts, want 1", job.Restarts())
	}
	if checkpointsAtFailure.Load() == 0 {
		t.Error("the failure came before any checkpoint completed: the restart restored nothing")
	}
	// None, when a checkpoint completed after the sources had finished.
	if r := read[1].Load(); r >= n || r == 0 && read[0].Load() < n {
		t.Errorf("the restarted sources emitted %d of %d events: want fewer than all, from their checkpointed splits", r, n)
	}
	t.Logf("%d results, %d checkpoints (%d before the failure after %d results), events read %d then %d",
		len(want), job.CompletedCheckpoints(), checkpointsAtFailure.Load(), seen[0], read[0].Load(), read[1].Load())
	same(t, got.Values(), want)
	return job
}
