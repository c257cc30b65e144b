package stream_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
)

type halving struct {
	V     int64
	Steps int
}

// halve builds an iteration that halves every value per superstep and
// converges once every value is 0, counted by an aggregator over all
// subtasks.
func halve(env *stream.Environment, values []int64, max int, criterion bool) *stream.Collected[halving] {
	var in []halving
	for _, v := range values {
		in = append(in, halving{V: v})
	}
	out := stream.Iterate(stream.FromSlice(env, in), max, func(it *stream.Iteration, partial *stream.Stream[halving]) *stream.Stream[halving] {
		nonzero := stream.CountAggregator(it, "nonzero")
		next := stream.Process(partial, stream.ProcessFunc[halving, halving](func(h halving, ctx *stream.Context, out stream.Collector[halving]) error {
			if stream.Superstep(ctx) != h.Steps+1 {
				return nil // dropped: the test sees a missing record
			}
			h.V /= 2
			h.Steps++
			if h.V > 0 {
				nonzero.Add(ctx, 1)
			}
			out.Collect(h)
			return nil
		}))
		if criterion {
			stream.TerminationCriterion(it, next.Filter(func(h halving) bool { return h.V > 0 }))
		} else {
			stream.ConvergeWhen(nonzero, func(_ int, n int64) bool { return n == 0 })
		}
		return next
	})
	return stream.Collect(out)
}

func execute(t *testing.T, env *stream.Environment) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return env.Execute(ctx, t.Name())
}

func TestIterateConvergesOnAggregate(t *testing.T) {
	var values []int64
	for v := range int64(1000) {
		values = append(values, (v*7919)%1000+1)
	}
	// 1000 >> 10 == 0: the tenth superstep leaves no value above 0.
	for _, p := range []int{1, 3} {
		for _, criterion := range []bool{false, true} {
			for _, c := range []struct{ max, steps int }{{50, 10}, {4, 4}} {
				env := newEnv(t, p)
				got := halve(env, values, c.max, criterion)
				if err := execute(t, env); err != nil {
					t.Fatal(err)
				}
				var vs []int64
				for _, h := range got.Values() {
					if h.Steps != c.steps {
						t.Fatalf("p=%d criterion=%v max=%d: a record went through %d supersteps, want %d", p, criterion, c.max, h.Steps, c.steps)
					}
					vs = append(vs, h.V)
				}
				var want []int64
				for _, v := range values {
					want = append(want, v>>c.steps)
				}
				slices.Sort(vs)
				slices.Sort(want)
				if !slices.Equal(vs, want) {
					t.Fatalf("p=%d criterion=%v max=%d: values differ", p, criterion, c.max)
				}
			}
		}
	}
}

// TestDeltaIterateShortestHops computes hop distances from vertex 0 along
// a chain with shortcuts; the solution set lives in Pebble at p=3.
func TestDeltaIterateShortestHops(t *testing.T) {
	type dist struct{ V, D int64 }
	type edge struct{ From, To int64 }
	const n = 200
	var edges []edge
	for v := int64(0); v+1 < n; v++ {
		edges = append(edges, edge{v, v + 1})
		if v%10 == 0 && v+5 < n {
			edges = append(edges, edge{v, v + 5})
		}
	}
	want := make([]int64, n)
	for v := range want {
		want[v] = -1
	}
	want[0] = 0
	for changed := true; changed; {
		changed = false
		for _, e := range edges {
			if want[e.From] >= 0 && (want[e.To] < 0 || want[e.From]+1 < want[e.To]) {
				want[e.To] = want[e.From] + 1
				changed = true
			}
		}
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		env := newEnv(t, 3, "state.backend.type", backend, "io.tmp.dirs", t.TempDir())
		var initial []dist
		for v := int64(0); v < n; v++ {
			initial = append(initial, dist{v, 1 << 40})
		}
		solution := stream.FromSlice(env, initial)
		start := stream.FromSlice(env, []dist{{0, 0}})
		adj := stream.KeyBy(stream.FromSlice(env, edges), func(e edge) int64 { return e.From })
		key := func(d dist) int64 { return d.V }
		out := stream.Collect(stream.DeltaIterate(solution, start, key, 1000,
			func(it *stream.DeltaIteration[int64, dist], ws *stream.Stream[dist]) (*stream.Stream[dist], *stream.Stream[dist]) {
				better := stream.JoinWithSolutionSet(it, ws, key, func(w, s dist, found bool, _ *stream.Context, out stream.Collector[dist]) error {
					if !found {
						return nil
					}
					if w.D < s.D {
						out.Collect(w)
					}
					return nil
				})
				next := stream.JoinWithStatic(stream.KeyBy(better, key), adj, func(d dist, es []edge, _ *stream.Context, out stream.Collector[dist]) error {
					for _, e := range es {
						out.Collect(dist{e.To, d.D + 1})
					}
					return nil
				})
				return better, stream.Min(stream.KeyBy(next, key), func(d *dist) *int64 { return &d.D })
			}))
		if err := execute(t, env); err != nil {
			t.Fatal(err)
		}
		got := out.Values()
		if len(got) != n {
			t.Fatalf("%s: %d vertices, want %d", backend, len(got), n)
		}
		for _, d := range got {
			if d.D != want[d.V] {
				t.Fatalf("%s: vertex %d at %d hops, want %d", backend, d.V, d.D, want[d.V])
			}
		}
	}
}

func TestIterateRejectsCheckpoints(t *testing.T) {
	env := newEnv(t, 1, "execution.checkpointing.interval", "1s")
	halve(env, []int64{1, 2}, 3, false)
	err := execute(t, env)
	if err == nil || !strings.Contains(err.Error(), "iterations take no checkpoints") {
		t.Fatalf("err = %v", err)
	}
}

func TestAggregatorOutsideItsLoop(t *testing.T) {
	env := newEnv(t, 1)
	var agg *stream.Aggregator[int64]
	res := stream.Iterate(stream.FromSlice(env, []int64{1}), 2, func(it *stream.Iteration, p *stream.Stream[int64]) *stream.Stream[int64] {
		agg = stream.CountAggregator(it, "n")
		return p
	})
	stream.Collect(stream.Process(res, stream.ProcessFunc[int64, int64](func(v int64, ctx *stream.Context, out stream.Collector[int64]) error {
		agg.Add(ctx, 1)
		return nil
	})))
	err := execute(t, env)
	if err == nil || !strings.Contains(err.Error(), `aggregator "n" of iteration-1 used outside its loop`) {
		t.Fatalf("err = %v", err)
	}
}

// TestIterateStreamCollatz feeds numbers back until they reach 1 and
// counts the steps of each: a record goes round the loop many times.
func TestIterateStreamCollatz(t *testing.T) {
	type num struct{ Start, V, Steps int64 }
	steps := func(v int64) int64 {
		n := int64(0)
		for v != 1 {
			if v%2 == 0 {
				v /= 2
			} else {
				v = 3*v + 1
			}
			n++
		}
		return n
	}
	for _, p := range []int{1, 2} {
		env := newEnv(t, p)
		var in []num
		for v := int64(1); v <= 300; v++ {
			in = append(in, num{v, v, 0})
		}
		it := stream.IterateStream(stream.FromSlice(env, in), 200*time.Millisecond)
		next := stream.Map(it.Stream, func(n num) num {
			if n.V == 1 {
				return n
			}
			if n.V%2 == 0 {
				n.V /= 2
			} else {
				n.V = 3*n.V + 1
			}
			n.Steps++
			return n
		}).Rebalance()
		done := next.Filter(func(n num) bool { return n.V == 1 })
		it.CloseWith(next.Filter(func(n num) bool { return n.V != 1 }))
		got := stream.Collect(done)
		if err := execute(t, env); err != nil {
			t.Fatal(err)
		}
		vs := got.Values()
		if len(vs) != len(in) {
			t.Fatalf("p=%d: %d results, want %d", p, len(vs), len(in))
		}
		for _, n := range vs {
			if n.Steps != steps(n.Start) {
				t.Fatalf("p=%d: %d took %d steps, want %d", p, n.Start, n.Steps, steps(n.Start))
			}
		}
	}
	env := newEnv(t, 1, "execution.checkpointing.interval", "1s")
	it := stream.IterateStream(stream.FromSlice(env, []int64{1}), time.Second)
	it.CloseWith(it.Filter(func(int64) bool { return false }))
	if err := execute(t, env); err == nil || !strings.Contains(err.Error(), "iterations take no checkpoints") {
		t.Fatalf("checkpoints with a streaming iteration: err = %v", err)
	}
}

// TestIterateRestartsAfterFailure fails a loop task in the third
// superstep of the first attempt: the job restarts from the beginning
// (iterations take no checkpoints) and the result is the failure-free
// one.
func TestIterateRestartsAfterFailure(t *testing.T) {
	env := newEnv(t, 2, "restart-strategy.type", "fixed-delay",
		"restart-strategy.fixed-delay.attempts", "2", "restart-strategy.fixed-delay.delay", "10ms")
	var in []int64
	for v := range int64(500) {
		in = append(in, v)
	}
	out := stream.Collect(stream.Iterate(stream.FromSlice(env, in), 5, func(_ *stream.Iteration, p *stream.Stream[int64]) *stream.Stream[int64] {
		return stream.Process(p, stream.ProcessFunc[int64, int64](func(v int64, ctx *stream.Context, out stream.Collector[int64]) error {
			if ctx.Attempt() == 0 && stream.Superstep(ctx) == 3 && ctx.Subtask() == 1 {
				return errors.New("injected failure")
			}
			out.Collect(v + 1)
			return nil
		}))
	}))
	client, err := env.ExecuteAsync(context.Background(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Wait(); err != nil {
		t.Fatal(err)
	}
	if client.Restarts() != 1 {
		t.Errorf("%d restarts, want 1", client.Restarts())
	}
	got := out.Values()
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i)+5 {
			t.Fatalf("result %d is %d, want %d (%d results)", i, v, i+5, len(got))
		}
	}
	if len(got) != len(in) {
		t.Fatalf("%d results, want %d", len(got), len(in))
	}
}
