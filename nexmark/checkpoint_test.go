package nexmark_test

import (
	"context"
	"errors"
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
	events := stream.Map(nexmark.Events(env, testConfig, n), func(e nexmark.Event) nexmark.Event {
		if e.Timestamp()%50 == 0 && e.Kind == nexmark.PersonKind {
			time.Sleep(time.Millisecond) // slow enough for checkpoints
		}
		return e
	}).Name("slow").UID("slow")
	results := nexmark.Q3(events)
	var seen [4]int
	failed := stream.Process(results, stream.ProcessFunc[nexmark.Q3Result, nexmark.Q3Result](func(r nexmark.Q3Result, ctx *stream.Context, out stream.Collector[nexmark.Q3Result]) error {
		seen[ctx.Attempt()]++ // one subtask: no lock needed
		if ctx.Attempt() == 0 && seen[0] == failAt {
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
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	if job.Restarts() != 1 {
		t.Errorf("%d restarts, want 1", job.Restarts())
	}
	t.Logf("%d results, %d checkpoints, failed after %d", len(want), job.CompletedCheckpoints(), failAt)
	same(t, got.Values(), want)
}
