package nexmark_test

import (
	"context"
	"errors"
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
	const n = 40_000
	all := nexmark.Generate(testConfig, n)
	var want []nexmark.Q3Result
	nexmark.LoopQ3(nexmark.Slice(all), func(r nexmark.Q3Result) { want = append(want, r) })
	failAt := len(want) / 3

	cfg := config.New()
	config.Parallelism.Set(cfg, 2)
	for _, kv := range [][2]string{
		{"execution.checkpointing.interval", "5 ms"},
		{"restart-strategy.type", "fixed-delay"},
		{"restart-strategy.fixed-delay.attempts", "3"},
		{"restart-strategy.fixed-delay.delay", "10 ms"},
	} {
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
		if e.Timestamp()%50 == 0 && e.Kind == nexmark.PersonKind {
			time.Sleep(time.Millisecond) // slow enough for checkpoints
		}
		out.Collect(e)
		return nil
	})).Name("slow").UID("slow")
	results := nexmark.Q3(events)
	// The failure comes at the first result after a third of them once a
	// checkpoint completed, so that the restart restores one.
	var checkpoints, checkpointsAtFailure atomic.Int64
	var seen [4]int
	failed := stream.Process(results, stream.ProcessFunc[nexmark.Q3Result, nexmark.Q3Result](func(r nexmark.Q3Result, ctx *stream.Context, out stream.Collector[nexmark.Q3Result]) error {
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
	job, err := env.ExecuteAsync(ctx, "q3-failure")
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
	if r := read[1].Load(); r == 0 || r >= n {
		t.Errorf("the restarted sources emitted %d of %d events: want fewer than all, from their checkpointed splits", r, n)
	}
	t.Logf("%d results, %d checkpoints (%d before the failure after %d results), events read %d then %d",
		len(want), job.CompletedCheckpoints(), checkpointsAtFailure.Load(), seen[0], read[0].Load(), read[1].Load())
	same(t, got.Values(), want)
}
