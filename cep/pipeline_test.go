package cep_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/cep"
	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newEnv(t testing.TB, parallelism int, kv ...string) *stream.Environment {
	t.Helper()
	cfg := config.New()
	config.Parallelism.Set(cfg, parallelism)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return stream.NewEnvironmentWithConfig(cfg)
}

// formatMatch prints a match as the model does: step=event in time order.
func formatMatch(k int, m cep.Match[cep.Ev]) string {
	type pair struct {
		name string
		e    cep.Ev
	}
	var ps []pair
	for name, es := range m {
		for _, e := range es {
			ps = append(ps, pair{name, e})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].e.Ts < ps[j].e.Ts })
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.name+"="+p.e.String())
	}
	return fmt.Sprintf("%d|%s", k, strings.Join(parts, " "))
}

// input draws n events over keys with distinct timestamps, in an arrival
// order up to disorder places off timestamp order.
func input(r *rand.Rand, n, keys, disorder int) []cep.Ev {
	evs := make([]cep.Ev, n)
	for i := range evs {
		evs[i] = cep.Ev{L: "abcd"[r.IntN(4)], K: r.IntN(keys), Ts: int64(10 + 2*i + r.IntN(2))}
	}
	shift := make([]int, n)
	for i := range shift {
		shift[i] = 2*i + r.IntN(2*disorder+1)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return shift[idx[a]] < shift[idx[b]] })
	out := make([]cep.Ev, n)
	for i, j := range idx {
		out[i] = evs[j]
		out[i].N = i
	}
	return out
}

// expected applies the operator's event-time rule (a record at or behind
// the watermark, max timestamp − bound − 1, is late) and the model to
// each key's on-time records.
func expected(s cep.Spec, arrival []cep.Ev, bound int64) (matches, late []string) {
	maxTs := int64(-1 << 62)
	perKey := map[int][]cep.Ev{}
	for _, e := range arrival {
		if e.Ts <= maxTs-bound-1 {
			late = append(late, e.String())
		} else {
			perKey[e.K] = append(perKey[e.K], e)
		}
		maxTs = max(maxTs, e.Ts)
	}
	for k, evs := range perKey {
		slices.SortFunc(evs, func(a, b cep.Ev) int { return int(a.Ts - b.Ts) })
		for _, m := range cep.ModelMatches(s, evs) {
			matches = append(matches, fmt.Sprintf("%d|%s", k, m))
		}
	}
	slices.Sort(matches)
	slices.Sort(late)
	return matches, late
}

type job struct {
	matches *stream.Collected[string]
	late    *stream.Collected[string]
}

// pipeline: one source subtask with a watermark after every record,
// keyed by K, the pattern, matches and late records collected.
func pipeline(env *stream.Environment, s cep.Spec, arrival []cep.Ev, bound int64, rate float64, fail func(string, *stream.Context) error) job {
	out, late := pipelineStreams(env, s, arrival, bound, rate, fail)
	return job{matches: stream.Collect(out), late: stream.Collect(late)}
}

func pipelineStreams(env *stream.Environment, s cep.Spec, arrival []cep.Ev, bound int64, rate float64, fail func(string, *stream.Context) error) (matches, late *stream.Stream[string]) {
	src := stream.FromSource[cep.Ev](env, &stream.Generator[cep.Ev]{
		Count:      int64(len(arrival)),
		Fn:         func(i int64) cep.Ev { return arrival[i] },
		Timestamps: func(i int64) int64 { return arrival[i].Ts },
		Rate:       rate,
	}, "events").SetParallelism(1).UID("events")
	wm := src.AssignTimestampsAndWatermarks(stream.ForBoundedOutOfOrderness[cep.Ev](time.Duration(bound) * time.Millisecond).WithWatermarkPerEvent()).SetParallelism(1).UID("wm")
	ks := stream.KeyBy(wm, func(e cep.Ev) int { return e.K })
	lateTag := stream.NewOutputTag[cep.Ev]("late")
	ps := cep.Stream(ks, s.Build()).SideOutputLateData(lateTag)
	out := cep.Process[int, cep.Ev, string](ps, cep.ProcessFunc[int, cep.Ev, string](func(m cep.Match[cep.Ev], ctx *cep.MatchContext[int], out stream.Collector[string]) error {
		out.Collect(formatMatch(ctx.CurrentKey(), m))
		return nil
	}))
	out.UID("cep")
	lateStrings := stream.Map(stream.GetSideOutput(out, lateTag), func(e cep.Ev) string { return e.String() })
	if fail != nil {
		out = stream.Process(out, stream.ProcessFunc[string, string](func(v string, ctx *stream.Context, o stream.Collector[string]) error {
			if err := fail(v, ctx); err != nil {
				return err
			}
			o.Collect(v)
			return nil
		})).UID("fail")
	}
	return out, lateStrings
}

func sorted(c *stream.Collected[string]) []string {
	v := slices.Clone(c.Values())
	slices.Sort(v)
	return v
}

// TestPipelineAgainstModel: random patterns over several keys, out of
// order with late records, at parallelism 1 and 2, on the heap and in
// Pebble: the matches and the late records are the model's.
func TestPipelineAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	runs := 0
	total := 0
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 2} {
			for i := 0; i < 10; i++ {
				s := cep.RandSpec(r)
				arrival := input(r, 30+r.IntN(20), 1+r.IntN(4), r.IntN(4))
				bound := int64(r.IntN(6))
				wantM, wantL := expected(s, arrival, bound)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				env := newEnv(t, p, "state.backend.type", backend, "io.tmp.dirs", t.TempDir())
				j := pipeline(env, s, arrival, bound, 0, nil)
				if err := env.Execute(ctx, "cep"); err != nil {
					cancel()
					t.Fatalf("%s p=%d %s: %v", backend, p, s, err)
				}
				cancel()
				gotM, gotL := sorted(j.matches), sorted(j.late)
				if !slices.Equal(gotM, wantM) || !slices.Equal(gotL, wantL) {
					t.Fatalf("%s p=%d %s bound %d\narrival %v\n got %q late %q\nwant %q late %q", backend, p, s, bound, arrival, gotM, gotL, wantM, wantL)
				}
				runs++
				total += len(gotM)
			}
		}
	}
	t.Logf("%d jobs, %d matches", runs, total)
}

// TestRestoreAgainstModel: a failure downstream of the pattern, after a
// checkpoint taken while runs and buffered records were in the keyed
// state, restarts the job from the checkpoint; the committed matches are
// exactly the model's, on the heap and in Pebble, at parallelism 1 and 2.
func TestRestoreAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	// A windowed pattern keeps the brute force small on long sequences.
	s := cep.Spec{Window: 80, Skip: cep.SkipPastLastEvent()}.
		With("A", "a", "", 1, 1).
		With("B", "bc", "followedBy", 1, -1).
		With("C", "d", "followedBy", 1, 1)
	arrival := input(r, 3000, 5, 3)
	const bound = 4
	wantM, wantL := expected(s, arrival, bound)
	if len(wantM) < 100 || len(wantL) == 0 {
		t.Fatalf("the input gives %d matches and %d late records: not a test", len(wantM), len(wantL))
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 2} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			env := newEnv(t, p, "state.backend.type", backend, "io.tmp.dirs", t.TempDir(),
				"execution.checkpointing.interval", "10 ms",
				"restart-strategy.type", "fixed-delay",
				"restart-strategy.fixed-delay.attempts", "3",
				"restart-strategy.fixed-delay.delay", "10 ms")
			// The counter is shared by the parallel subtasks of "fail".
			var seen atomic.Int64
			j := pipeline(env, s, arrival, bound, 5000, func(v string, c *stream.Context) error {
				if c.Attempt() == 0 {
					if seen.Add(1) == int64(len(wantM)/2) {
						return errors.New("injected failure")
					}
				}
				return nil
			})
			client, err := env.ExecuteAsync(ctx, "cep-restore")
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			err = client.Wait()
			cancel()
			if err != nil {
				t.Fatalf("%s p=%d: %v", backend, p, err)
			}
			if client.Restarts() != 1 || client.CompletedCheckpoints() == 0 {
				t.Fatalf("%s p=%d: %d restarts, %d checkpoints", backend, p, client.Restarts(), client.CompletedCheckpoints())
			}
			var read int64
			for _, m := range client.Metrics() {
				if strings.HasPrefix(m.Task, "Source: events") {
					read += m.RecordsIn
				}
			}
			if read >= int64(len(arrival)) {
				t.Fatalf("%s p=%d: the restarted attempt read all %d records; it did not resume from a checkpoint", backend, p, read)
			}
			gotM, gotL := sorted(j.matches), sorted(j.late)
			if !slices.Equal(gotM, wantM) || !slices.Equal(gotL, wantL) {
				t.Fatalf("%s p=%d: committed %d matches and %d late records, want %d and %d", backend, p, len(gotM), len(gotL), len(wantM), len(wantL))
			}
			t.Logf("%s p=%d: %d matches, %d late, restored from checkpoint, second attempt read %d records", backend, p, len(gotM), len(gotL), read)
		}
	}
}

// TestBatchModeAgainstModel: in batch execution the keyed input comes key
// by key in timestamp order and the pattern's timers fire at the end of
// each key; the matches are the model's (nothing is late: batch mode has
// no watermarks before the end).
func TestBatchModeAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	for i := 0; i < 10; i++ {
		s := cep.RandSpec(r)
		arrival := input(r, 40, 3, 3)
		wantM, _ := expected(s, arrival, 1<<40)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		env := newEnv(t, 2, "execution.runtime-mode", "BATCH")
		j := pipeline(env, s, arrival, 0, 0, nil)
		err := env.Execute(ctx, "cep-batch")
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := sorted(j.matches); !slices.Equal(got, wantM) {
			t.Fatalf("%s\narrival %v\n got %q\nwant %q", s, arrival, got, wantM)
		}
	}
}

// TestRescaleFromSavepointAgainstModel: a job at parallelism 2 is stopped
// with a savepoint once it has emitted matches, while runs and waiting
// records sit in the keyed state; resumed at parallelism 3 the state moves
// by key group, and the two runs together emit exactly the model's
// matches.
func TestRescaleFromSavepointAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 23))
	s := cep.Spec{Window: 60, Skip: cep.SkipToNext()}.
		With("A", "ab", "", 1, 1).
		With("B", "c", "followedByAny", 2, 3).
		With("C", "d", "followedBy", 1, 1)
	arrival := input(r, 3000, 6, 2)
	const bound = 3
	wantM, _ := expected(s, arrival, bound)
	for _, backend := range []string{"hashmap", "pebble"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		savepoints := t.TempDir()
		env := newEnv(t, 2, "state.backend.type", backend, "io.tmp.dirs", t.TempDir())
		enough := make(chan struct{})
		var once sync.Once
		var seen atomic.Int64
		out := t.TempDir()
		m, _ := pipelineStreams(env, s, arrival, bound, 2000, func(string, *stream.Context) error {
			if seen.Add(1) == int64(len(wantM)/3) {
				once.Do(func() { close(enough) })
			}
			return nil
		})
		stream.SinkTo(m, file.Text[string](out, nil), "files").UID("files")
		client, err := env.ExecuteAsync(ctx, "cep-first")
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		select {
		case <-enough:
		case <-ctx.Done():
			cancel()
			t.Fatal("no matches before the deadline")
		}
		sp, err := client.StopWithSavepoint(ctx, savepoints, false)
		if err != nil {
			cancel()
			t.Fatalf("%s: stop with savepoint: %v", backend, err)
		}
		if err := client.Wait(); err != nil {
			cancel()
			t.Fatal(err)
		}
		env = newEnv(t, 3, "state.backend.type", backend, "io.tmp.dirs", t.TempDir())
		m, _ = pipelineStreams(env, s, arrival, bound, 0, func(string, *stream.Context) error { return nil })
		stream.SinkTo(m, file.Text[string](out, nil), "files").UID("files")
		firstM, err := file.ReadLines(out)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		env.RestoreFrom(sp, false)
		if err := env.Execute(ctx, "cep-second"); err != nil {
			cancel()
			t.Fatalf("%s: resumed job: %v", backend, err)
		}
		cancel()
		got, err := file.ReadLines(out)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if len(firstM) == 0 || len(firstM) == len(wantM) {
			t.Fatalf("%s: the savepoint was not taken part way (%d of %d matches before it)", backend, len(firstM), len(wantM))
		}
		if !slices.Equal(got, wantM) {
			t.Fatalf("%s: %d + %d matches, want %d", backend, len(firstM), len(got)-len(firstM), len(wantM))
		}
		t.Logf("%s: %d matches before the savepoint, %d after, at parallelism 3", backend, len(firstM), len(got)-len(firstM))
	}
}
