package datagen_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/datagen"
	"github.com/weirproject/weir/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type event struct {
	Seq   int64
	User  string
	Value float64
}

func gen(i int64, r *rand.Rand) event {
	return event{Seq: i, User: datagen.String(r, 8), Value: r.Float64()}
}

// reference computes record i the way a reader must: its random fields
// come from a generator seeded with the seed and i.
func reference(seed uint64, from, to int64) []event {
	var out []event
	for i := from; i < to; i++ {
		out = append(out, gen(i, rand.New(rand.NewPCG(seed, uint64(i)))))
	}
	return out
}

type collector struct{ vals []event }

func (c *collector) Collect(v event)                       { c.vals = append(c.vals, v) }
func (c *collector) CollectWithTimestamp(v event, _ int64) { c.vals = append(c.vals, v) }

func poll(t *testing.T, r connector.SplitReader[event], c *collector, polls int) connector.ReadStatus {
	t.Helper()
	var st connector.ReadStatus
	for range polls {
		var err error
		if st, err = r.Poll(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if st == connector.EndOfInput {
			break
		}
	}
	return st
}

// TestResumesExactlyAfterRestore: a reader restored from a snapshot taken
// between two polls goes on with exactly the records after it, random
// fields included.
func TestResumesExactlyAfterRestore(t *testing.T) {
	const n, seed = 5000, 42
	src := datagen.New(gen).Count(n).Seed(seed)
	splits, err := src.Splits(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := src.NewReader(context.Background(), connector.SplitContext{Parallelism: 1})
	if err := r.AddSplits(splits); err != nil {
		t.Fatal(err)
	}
	var c collector
	poll(t, r, &c, 2)
	snap, _ := r.Snapshot()
	data, err := src.EncodeSplits(snap)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, r, &c, 1) // lost with the failure
	before := len(c.vals) - 1024

	restored, err := src.DecodeSplits(data)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := src.NewReader(context.Background(), connector.SplitContext{Parallelism: 1})
	if err := r2.AddSplits(restored); err != nil {
		t.Fatal(err)
	}
	c2 := collector{vals: slices.Clone(c.vals[:before])}
	if st := poll(t, r2, &c2, 100); st != connector.EndOfInput {
		t.Fatalf("status %v, want the end", st)
	}
	if want := reference(seed, 0, n); !slices.Equal(c2.vals, want) {
		t.Fatalf("before and after the restore: %d records, want %d equal to the reference", len(c2.vals), len(want))
	}
	if reference(seed+1, 0, 1)[0] == reference(seed, 0, 1)[0] {
		t.Fatal("the seed does not change the records")
	}
}

func newEnv(t testing.TB, p int, kv ...string) *stream.Environment {
	cfg := config.New()
	config.Parallelism.Set(cfg, p)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return stream.NewEnvironmentWithConfig(cfg)
}

// TestJobResumesAfterFailure: a job that fails after checkpoints
// completed restarts from the last one; the exactly-once collect sink ends
// with every record once, and the restored sources read on from their
// checkpointed indices rather than from the start.
func TestJobResumesAfterFailure(t *testing.T) {
	const n = 40_000
	env := newEnv(t, 2,
		"execution.checkpointing.interval", "10 ms",
		"restart-strategy.type", "fixed-delay",
		"restart-strategy.fixed-delay.delay", "10 ms",
		"taskmanager.network.buffer-records", "64")
	src := stream.FromSource[event](env, datagen.New(func(i int64, r *rand.Rand) event {
		if i%500 == 0 {
			time.Sleep(time.Millisecond) // several checkpoints in a run
		}
		return gen(i, r)
	}).Count(n).Seed(7), "datagen").UID("datagen")
	var job atomic.Pointer[stream.JobClient]
	var seen atomic.Int64
	failed := stream.Process(src.Rebalance(), stream.ProcessFunc[event, event](func(e event, ctx *stream.Context, out stream.Collector[event]) error {
		if ctx.Attempt() == 0 && seen.Add(1) > n/4 {
			if j := job.Load(); j != nil && j.CompletedCheckpoints() > 2 {
				return fmt.Errorf("injected failure")
			}
		}
		out.Collect(e)
		return nil
	})).UID("fail")
	got := stream.Collect(failed)
	j, err := env.ExecuteAsync(context.Background(), "datagen")
	if err != nil {
		t.Fatal(err)
	}
	job.Store(j)
	if err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	vals := got.Values()
	slices.SortFunc(vals, func(a, b event) int { return int(a.Seq - b.Seq) })
	if want := reference(7, 0, n); !slices.Equal(vals, want) {
		t.Fatalf("committed %d records, want the %d of the reference once each (restarts %d)", len(vals), len(want), j.Restarts())
	}
	var read int64
	for _, m := range j.Metrics() {
		if strings.HasPrefix(m.Task, "Source: datagen") {
			read += m.RecordsIn
		}
	}
	if j.Restarts() != 1 || read == 0 || read >= n {
		t.Fatalf("%d restarts; the last attempt generated %d of %d records: it did not resume from a checkpoint", j.Restarts(), read, n)
	}
}

func TestRateLimit(t *testing.T) {
	const rate, n = 400.0, 200
	env := newEnv(t, 2)
	got := stream.Collect(stream.FromSource[event](env, datagen.New(gen).Count(n).RatePerSecond(rate), "slow"))
	start := time.Now()
	if err := env.Execute(context.Background(), "rate"); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	if len(got.Values()) != n {
		t.Fatalf("%d records, want %d", len(got.Values()), n)
	}
	// 200 records at 400 a second take half a second, less one record of
	// burst per subtask.
	if low := time.Duration(float64(n-2) / rate * float64(time.Second)); d < low || d > 10*low {
		t.Fatalf("%d records at %v/s took %v, want about %v", n, rate, d, low)
	}
}

func TestUnboundedAndErrors(t *testing.T) {
	if b := datagen.New(gen).Boundedness(); b != connector.Unbounded {
		t.Fatalf("without Count: %v", b)
	}
	src := datagen.New(gen)
	if _, err := src.DecodeSplits([]byte(`[{"ID":0,"Next":0,"Stride":0,"End":-1}]`)); err == nil || !strings.Contains(err.Error(), "invalid split 0") {
		t.Fatalf("zero stride: %v", err)
	}
	if _, err := datagen.New[event](nil).Splits(context.Background(), 1); err == nil {
		t.Fatal("no function: no error")
	}
}
