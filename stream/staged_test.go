package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
)

type keyed struct {
	Key   int
	Value int64
}

// outOfOrder generates n records over keys keys in random order.
func outOfOrder(seed uint64, n, keys int) []keyed {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]keyed, n)
	for i := range out {
		out[i] = keyed{Key: rng.IntN(keys), Value: rng.Int64N(1000) - 100}
	}
	return out
}

// sumsOf is the reference: the sum per key, as "key=sum" lines, sorted.
func sumsOf(data []keyed) []string {
	sums := make(map[int]int64)
	for _, r := range data {
		sums[r.Key] += r.Value
	}
	var out []string
	for k, s := range sums {
		out = append(out, fmt.Sprintf("%d=%d", k, s))
	}
	slices.Sort(out)
	return out
}

func formatSums(rows []keyed) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%d=%d", r.Key, r.Value)
	}
	slices.Sort(out)
	return out
}

// TestBatchStagesTakeTurnsInOneSlot runs a batch job whose stages have
// parallelism p in a mini cluster with one slot: pipelined, it would need
// p slots; in stages over blocking exchanges its subtasks run one after
// another, and the result equals the reference.
func TestBatchStagesTakeTurnsInOneSlot(t *testing.T) {
	data := outOfOrder(1, 20000, 97)
	for _, p := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("p=", p), func(t *testing.T) {
			tmp := t.TempDir()
			env := newEnv(t, p, "execution.runtime-mode", "BATCH", "taskmanager.numberOfTaskSlots", "1", "io.tmp.dirs", tmp)
			var mu sync.Mutex
			spans := make(map[int][2]time.Time) // first and last record of each source subtask
			seen := stream.Process(stream.FromSlice(env, data), stream.ProcessFunc[keyed, keyed](func(v keyed, ctx *stream.Context, out stream.Collector[keyed]) error {
				now := time.Now()
				mu.Lock()
				s, ok := spans[ctx.Subtask()]
				if !ok {
					s[0] = now
				}
				s[1] = now
				spans[ctx.Subtask()] = s
				mu.Unlock()
				out.Collect(v)
				return nil
			}))
			sums := stream.Collect(stream.Sum(stream.KeyBy(seen, func(r keyed) int { return r.Key }), func(r *keyed) *int64 { return &r.Value }))
			if err := env.Execute(context.Background(), "staged"); err != nil {
				t.Fatal(err)
			}
			if got, want := formatSums(sums.Values()), sumsOf(data); !slices.Equal(got, want) {
				t.Fatalf("got %d sums, want %d; first %v, want %v", len(got), len(want), got[:min(3, len(got))], want[:3])
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Fatalf("the blocking partitions stayed after the job: %v", left)
			}
			if len(spans) != p {
				t.Fatalf("%d source subtasks saw records, want %d", len(spans), p)
			}
			for i := range p {
				for j := range p {
					a, b := spans[i], spans[j]
					if i != j && !a[1].Before(b[0]) && !b[1].Before(a[0]) {
						t.Fatalf("source subtasks %d (%v) and %d (%v) ran at the same time in one slot", i, a, j, b)
					}
				}
			}
		})
	}
}

// TestBatchFailoverRerunsOnlyTheFailedSubtask fails one subtask of the
// second stage once, after it has emitted part of its output: only that
// subtask runs again (its attempt number is 1, every other is 0), from
// the first stage's stored output, and the sink holds each result once.
func TestBatchFailoverRerunsOnlyTheFailedSubtask(t *testing.T) {
	data := outOfOrder(2, 50000, 500)
	const p, victim = 4, 2
	env := newEnv(t, p, "execution.runtime-mode", "BATCH",
		"restart-strategy.type", "fixed-delay", "restart-strategy.fixed-delay.attempts", "2",
		"restart-strategy.fixed-delay.delay", "10 ms")
	sums := stream.Sum(stream.KeyBy(stream.FromSlice(env, data), func(r keyed) int { return r.Key }), func(r *keyed) *int64 { return &r.Value })
	emitted := 0
	failing := stream.Process(sums, stream.ProcessFunc[keyed, keyed](func(v keyed, ctx *stream.Context, out stream.Collector[keyed]) error {
		out.Collect(v)
		if ctx.Subtask() == victim && ctx.Attempt() == 0 {
			if emitted++; emitted == 20 {
				return errors.New("injected failure")
			}
		}
		return nil
	}))
	got := stream.Collect(failing)
	jc, err := env.ExecuteAsync(context.Background(), "failover")
	if err != nil {
		t.Fatal(err)
	}
	if err := jc.Wait(); err != nil {
		t.Fatal(err)
	}
	if g, w := formatSums(got.Values()), sumsOf(data); !slices.Equal(g, w) {
		t.Fatalf("got %d sums, want %d", len(g), len(w))
	}
	if jc.Restarts() != 1 {
		t.Fatalf("%d restarts, want 1", jc.Restarts())
	}
	eg := jc.ExecutionGraph()
	if len(eg.Vertices) != 2 {
		t.Fatalf("%d vertices, want 2 (source; sum, process and sink)", len(eg.Vertices))
	}
	for vi, v := range eg.Vertices {
		for _, ev := range v.TaskVertices {
			want := 0
			if vi == 1 && ev.SubtaskIndex == victim {
				want = 1
			}
			if n := ev.Current().AttemptNumber; n != want {
				t.Errorf("%s ran as attempt %d, want %d", ev.TaskName(), n, want)
			}
		}
	}
}

// TestBatchCombinesBeforeTheExchange checks that a batch Sum combines
// each key's records on the producer's side of the exchange: the source
// subtasks send a partial sum per key, not every record, and the sums
// stay right.
func TestBatchCombinesBeforeTheExchange(t *testing.T) {
	data := outOfOrder(5, 40000, 97)
	const p = 2
	env := newEnv(t, p, "execution.runtime-mode", "BATCH")
	sums := stream.Collect(stream.Sum(stream.KeyBy(stream.FromSlice(env, data), func(r keyed) int { return r.Key }), func(r *keyed) *int64 { return &r.Value }))
	jc, err := env.ExecuteAsync(context.Background(), "combine")
	if err != nil {
		t.Fatal(err)
	}
	if err := jc.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := formatSums(sums.Values()), sumsOf(data); !slices.Equal(got, want) {
		t.Fatalf("got %d sums, want %d", len(got), len(want))
	}
	var sent, received int64
	for _, m := range jc.Metrics() {
		if strings.HasPrefix(m.Task, "Source") {
			sent += m.RecordsOut
		} else {
			received += m.RecordsIn
		}
	}
	if sent == 0 || sent > p*97 || received != sent {
		t.Fatalf("the sources sent %d records and the sums received %d, want one partial sum per key and subtask (at most %d)", sent, received, p*97)
	}
}

// TestBatchFailureEndsTheJob fails a subtask of a batch job for good
// while its siblings still run: the job ends with the failure, promptly,
// and stops the others (TestMain checks that no goroutine is left).
func TestBatchFailureEndsTheJob(t *testing.T) {
	env := newEnv(t, 4, "execution.runtime-mode", "BATCH", "taskmanager.numberOfTaskSlots", "4")
	// A second of work per subtask, polled in batches.
	failing := stream.Process(stream.FromSlice(env, outOfOrder(6, 200_000, 10)), stream.ProcessFunc[keyed, keyed](func(v keyed, ctx *stream.Context, out stream.Collector[keyed]) error {
		if ctx.Subtask() == 1 {
			return errors.New("injected failure")
		}
		for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		} // the others are still running
		out.Collect(v)
		return nil
	}))
	stream.Collect(stream.Sum(stream.KeyBy(failing, func(r keyed) int { return r.Key }), func(r *keyed) *int64 { return &r.Value }))
	start := time.Now()
	err := env.Execute(context.Background(), "fails")
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Fatalf("the job took %v to fail; the running subtasks were not stopped", d)
	}
}

// TestBatchStagesUseTheSlotsTheJobNeeds: with taskmanager.numberOfTaskSlots
// at its default (0, as many as the job needs), a stage's subtasks run at
// once: each waits for all the others to start.
func TestBatchStagesUseTheSlotsTheJobNeeds(t *testing.T) {
	const p = 3
	env := newEnv(t, p, "execution.runtime-mode", "BATCH")
	var started atomic.Int32
	all := make(chan struct{})
	var once [p]sync.Once
	waited := stream.Process(stream.FromSlice(env, outOfOrder(7, 3000, 10)), stream.ProcessFunc[keyed, keyed](func(v keyed, ctx *stream.Context, out stream.Collector[keyed]) error {
		var err error
		once[ctx.Subtask()].Do(func() {
			if started.Add(1) == p {
				close(all)
			}
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				err = errors.New("the stage's subtasks did not run at the same time")
			}
		})
		out.Collect(v)
		return err
	}))
	stream.Collect(stream.Sum(stream.KeyBy(waited, func(r keyed) int { return r.Key }), func(r *keyed) *int64 { return &r.Value }))
	if err := env.Execute(context.Background(), "slots"); err != nil {
		t.Fatal(err)
	}
}

// TestBatchStagesAcrossWorkers runs a batch job at parallelism 3 on two
// workers with one slot each, exchanging partition files and control
// messages over TCP: the leader schedules every subtask into the two
// slots, consumers read their producers' files from either worker, one
// subtask of the second stage fails once and runs again alone (attempt
// 1), and the sinks of both workers together hold the reference result.
func TestBatchStagesAcrossWorkers(t *testing.T) {
	data := outOfOrder(3, 30000, 300)
	const p, victim = 3, 1
	var mu sync.Mutex
	ran := make(map[string]int) // "stage/subtask/attempt" -> records seen
	record := func(stage string) stream.ProcessFunc[keyed, keyed] {
		return func(v keyed, ctx *stream.Context, out stream.Collector[keyed]) error {
			mu.Lock()
			key := fmt.Sprintf("%s/%d/%d", stage, ctx.Subtask(), ctx.Attempt())
			ran[key]++
			n := ran[key]
			mu.Unlock()
			out.Collect(v)
			if stage == "sums" && ctx.Subtask() == victim && ctx.Attempt() == 0 && n == 10 {
				return errors.New("injected failure")
			}
			return nil
		}
	}
	var sinks []*stream.Collected[keyed]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobs := executeOn(t, ctx, []int{0, 1}, "staged-job", func() *stream.Environment {
		env := newEnv(t, p, "execution.runtime-mode", "BATCH", "io.tmp.dirs", t.TempDir(),
			"restart-strategy.type", "fixed-delay", "restart-strategy.fixed-delay.attempts", "2",
			"restart-strategy.fixed-delay.delay", "10 ms")
		src := stream.Process(stream.FromSlice(env, data), record("source"))
		sums := stream.Sum(stream.KeyBy(src, func(r keyed) int { return r.Key }), func(r *keyed) *int64 { return &r.Value })
		sinks = append(sinks, stream.Collect(stream.Process(sums, record("sums"))))
		return env
	})
	var got []keyed
	for w, jc := range jobs {
		if err := jc.Wait(); err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
		if len(jc.Metrics()) == 0 {
			t.Errorf("worker %d ran no subtask", w)
		}
		got = append(got, sinks[w].Values()...)
	}
	if g, w := formatSums(got), sumsOf(data); !slices.Equal(g, w) {
		t.Fatalf("got %d sums, want %d", len(g), len(w))
	}
	for i := range p {
		if ran[fmt.Sprintf("source/%d/0", i)] == 0 || ran[fmt.Sprintf("source/%d/1", i)] != 0 {
			t.Errorf("source subtask %d: %v, want attempt 0 only", i, ran)
		}
		attempts := 1
		if i == victim {
			attempts = 2
		}
		for a := range 3 {
			if ran[fmt.Sprintf("sums/%d/%d", i, a)] > 0 != (a < attempts) {
				t.Errorf("sums subtask %d attempt %d: %v, want attempts 0..%d", i, a, ran, attempts-1)
			}
		}
	}
	if jobs[0].Restarts() != 1 {
		t.Fatalf("%d restarts, want 1", jobs[0].Restarts())
	}
}
