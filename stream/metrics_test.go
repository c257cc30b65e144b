package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// TestTaskTimeMetrics runs a fast source into a slow sink and a second,
// trickling source into a fast sink, and checks the time accounting that
// the dashboard and the REST API show, over one second of the running job:
// the fast source waits for credits most of the time (back pressured),
// the slow sink is busy, and the fed-by-a-trickle sink is idle. Watermarks
// and records move too.
func TestTaskTimeMetrics(t *testing.T) {
	defer goleak.VerifyNone(t)
	env := newEnv(t, 1, "taskmanager.network.buffer-records", "64")
	fast := stream.Map(unbounded(env), func(v int64) int64 { return v }).Name("fast-map")
	slow := stream.Map(fast.Rebalance(), func(v int64) int64 {
		deadline := time.Now().Add(20 * time.Microsecond)
		for time.Now().Before(deadline) {
		}
		return v
	}).Name("slow-sink")
	stream.Collect(slow.Filter(func(int64) bool { return false }))

	trickle := stream.Map(stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }}, "trickle"),
		func(v int64) int64 { time.Sleep(20 * time.Millisecond); return v })
	quiet := stream.Map(trickle.Rebalance(), func(v int64) int64 { return v }).Name("quiet-sink")
	stream.Collect(quiet.Filter(func(int64) bool { return false }))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	byName := func() map[string]runtime.TaskMetrics {
		out := map[string]runtime.TaskMetrics{}
		for _, m := range job.Metrics() {
			out[m.Task[:strings.LastIndex(m.Task, " (")]] = m
		}
		return out
	}
	time.Sleep(500 * time.Millisecond)
	before := byName()
	time.Sleep(time.Second)
	after := byName()
	job.Cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// Tasks are named by their chains: find each by its head.
	task := func(ms map[string]runtime.TaskMetrics, head string) runtime.TaskMetrics {
		for name, m := range ms {
			if strings.Contains(name, head) {
				return m
			}
		}
		t.Fatalf("no task %q among %v", head, ms)
		return runtime.TaskMetrics{}
	}
	perSecond := func(name string, f func(runtime.TaskMetrics) int64) float64 {
		b, a := task(before, name), task(after, name)
		return float64(f(a)-f(b)) / float64(a.ElapsedNanos-b.ElapsedNanos) * 1000
	}
	idle := func(m runtime.TaskMetrics) int64 { return m.IdleNanos }
	bp := func(m runtime.TaskMetrics) int64 { return m.BackPressuredNanos }
	busy := func(m runtime.TaskMetrics) int64 { return m.BusyNanos() }
	const source = "endless"
	t.Logf("per second: %s back pressured %.0f ms, busy %.0f ms; slow-sink busy %.0f ms, back pressured %.0f ms; quiet-sink idle %.0f ms",
		source, perSecond(source, bp), perSecond(source, busy), perSecond("slow-sink", busy), perSecond("slow-sink", bp), perSecond("quiet-sink", idle))
	if got := perSecond(source, bp); got < 500 {
		t.Errorf("%s: backPressuredTimeMsPerSecond = %.0f, want > 500", source, got)
	}
	if got := perSecond("slow-sink", busy); got < 500 {
		t.Errorf("slow-sink: busyTimeMsPerSecond = %.0f, want > 500", got)
	}
	if got := perSecond("slow-sink", bp); got > 100 {
		t.Errorf("slow-sink: backPressuredTimeMsPerSecond = %.0f, want < 100", got)
	}
	if got := perSecond("quiet-sink", idle); got < 800 {
		t.Errorf("quiet-sink: idleTimeMsPerSecond = %.0f, want > 800", got)
	}
	if b, m := task(before, "slow-sink"), task(after, "slow-sink"); m.RecordsIn <= b.RecordsIn || m.InPoolUsage < 0.5 {
		t.Errorf("slow-sink: records in %d -> %d, input pool usage %.2f (want > 0.5: its gate is full)",
			b.RecordsIn, m.RecordsIn, m.InPoolUsage)
	}
	if m := task(after, source); m.OutPoolUsage < 0.5 {
		t.Errorf("%s: output pool usage %.2f, want > 0.5", source, m.OutPoolUsage)
	}
}

// TestStateSizeGauges: a keyed operator reports the size of its state as
// operator gauges, read on its task's goroutine while records flow: the
// number of entries with the heap backend, Pebble's bytes with Pebble.
func TestStateSizeGauges(t *testing.T) {
	defer goleak.VerifyNone(t)
	const keys = 1000
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			env := newEnv(t, 1, "state.backend.type", backend)
			src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i % keys }}, "numbers")
			sums := stream.KeyBy(src, func(v int64) int64 { return v }).Reduce(func(a, b int64) int64 { return a + b }).Name("sums")
			stream.Collect(sums.Filter(func(int64) bool { return false }))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			job, err := env.ExecuteAsync(ctx, "state-gauges")
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				job.Cancel()
				_ = job.Wait()
			}()
			gauge := func(name string) (int64, string) {
				for _, m := range job.Metrics() {
					for _, g := range m.Gauges {
						if g.Name == name {
							return g.Value, g.Operator
						}
					}
				}
				return -1, ""
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				var ok bool
				var got string
				if backend == "hashmap" {
					n, op := gauge("stateEntries")
					ok, got = n == keys, fmt.Sprintf("stateEntries of %q = %d, want %d", op, n, keys)
				} else {
					mem, op := gauge("stateMemTableBytes")
					disk, _ := gauge("stateDiskBytes")
					ok, got = mem > 0 && disk >= 0, fmt.Sprintf("%q: memtables %d bytes, disk %d", op, mem, disk)
				}
				if ok {
					t.Log(got)
					break
				}
				if time.Now().After(deadline) {
					t.Fatal(got)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
