package stream_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirproject/weir/stream"
)

func seq(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

func sorted[T any](vs []T, cmp func(a, b T) int) []T {
	slices.SortFunc(vs, cmp)
	return vs
}

func TestUnionMergesAllInputs(t *testing.T) {
	for _, p := range []int{1, 3} {
		env := newEnv(t, p)
		a := stream.FromSlice(env, seq(100))
		b := stream.Map(stream.FromSlice(env, seq(50)), func(x int64) int64 { return 1000 + x })
		c := stream.FromSlice(env, []int64{-1, -2}).SetParallelism(1)
		got := stream.Collect(stream.Map(stream.Union(a, b, c), func(x int64) int64 { return x * 2 }))
		if err := env.Execute(context.Background(), "union"); err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, x := range append(append(seq(100), -1, -2), func() []int64 {
			var out []int64
			for _, x := range seq(50) {
				out = append(out, 1000+x)
			}
			return out
		}()...) {
			want = append(want, 2*x)
		}
		if g, w := sorted(got.Values(), cmpInt), sorted(want, cmpInt); !slices.Equal(g, w) {
			t.Fatalf("p=%d: got %d records, want %d", p, len(g), len(w))
		}
	}
}

func cmpInt(a, b int64) int { return int(a - b) }

// joinByKey is a two-input function that keeps per-key state: names from
// the first input, amounts from the second, emitting "name:amount" once
// both arrived (an unbounded join in miniature).
type joinByKey struct {
	names   map[int64]string
	amounts map[int64][]int64
}

type named struct {
	ID   int64
	Name string
}

type amount struct {
	ID     int64
	Amount int64
}

func (j *joinByKey) ProcessElement1(v named, _ *stream.Context, out stream.Collector[string]) error {
	j.names[v.ID] = v.Name
	for _, a := range j.amounts[v.ID] {
		out.Collect(fmt.Sprintf("%s:%d", v.Name, a))
	}
	delete(j.amounts, v.ID)
	return nil
}

func (j *joinByKey) ProcessElement2(v amount, _ *stream.Context, out stream.Collector[string]) error {
	if name, ok := j.names[v.ID]; ok {
		out.Collect(fmt.Sprintf("%s:%d", name, v.Amount))
		return nil
	}
	j.amounts[v.ID] = append(j.amounts[v.ID], v.Amount)
	return nil
}

func TestConnectJoinsTwoTypedInputs(t *testing.T) {
	for _, p := range []int{1, 2, 4} {
		env := newEnv(t, p, "pipeline.force-serialization", "true")
		var people []named
		var amounts []amount
		var want []string
		for i := int64(0); i < 200; i++ {
			people = append(people, named{ID: i, Name: "n" + strconv.FormatInt(i, 10)})
			for k := int64(0); k < i%4; k++ {
				amounts = append(amounts, amount{ID: i, Amount: k})
				want = append(want, fmt.Sprintf("n%d:%d", i, k))
			}
		}
		// Both inputs are partitioned by ID so that each subtask sees all
		// records of its IDs.
		a := stream.KeyBy(stream.FromSlice(env, people), func(n named) int64 { return n.ID }).Stream()
		b := stream.KeyBy(stream.FromSlice(env, amounts), func(a amount) int64 { return a.ID }).Stream()
		joined := stream.CoProcess(stream.Connect(a, b), &joinByKeyFactory{})
		got := stream.Collect(joined)
		if err := env.Execute(context.Background(), "connect"); err != nil {
			t.Fatal(err)
		}
		if g, w := sorted(got.Values(), strings.Compare), sorted(want, strings.Compare); !slices.Equal(g, w) {
			t.Fatalf("p=%d: got %d results, want %d", p, len(g), len(w))
		}
	}
}

// joinByKeyFactory gives every subtask its own state through Open.
type joinByKeyFactory struct{ j joinByKey }

func (f *joinByKeyFactory) Open(*stream.Context) error {
	f.j = joinByKey{names: map[int64]string{}, amounts: map[int64][]int64{}}
	return nil
}

func (f *joinByKeyFactory) ProcessElement1(v named, ctx *stream.Context, out stream.Collector[string]) error {
	return f.j.ProcessElement1(v, ctx, out)
}

func (f *joinByKeyFactory) ProcessElement2(v amount, ctx *stream.Context, out stream.Collector[string]) error {
	return f.j.ProcessElement2(v, ctx, out)
}

func TestCoMapAndCoFlatMap(t *testing.T) {
	env := newEnv(t, 2)
	nums := stream.FromSlice(env, seq(10))
	words := stream.FromSlice(env, []string{"a b", "c"})
	m := stream.CoMap(stream.Connect(nums, words), func(n int64) string { return strconv.FormatInt(n, 10) }, strings.ToUpper)
	fm := stream.CoFlatMap(stream.Connect(nums, words),
		func(n int64, out stream.Collector[string]) {
			if n%2 == 0 {
				out.Collect("even")
			}
		},
		func(s string, out stream.Collector[string]) {
			for _, w := range strings.Fields(s) {
				out.Collect(w)
			}
		})
	gm, gfm := stream.Collect(m), stream.Collect(fm)
	if err := env.Execute(context.Background(), "co"); err != nil {
		t.Fatal(err)
	}
	want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A B", "C"}
	if g := sorted(gm.Values(), strings.Compare); !slices.Equal(g, want) {
		t.Fatalf("CoMap = %v", g)
	}
	want = []string{"a", "b", "c", "even", "even", "even", "even", "even"}
	if g := sorted(gfm.Values(), strings.Compare); !slices.Equal(g, want) {
		t.Fatalf("CoFlatMap = %v", g)
	}
}

func TestSideOutputs(t *testing.T) {
	for _, p := range []int{1, 3} {
		env := newEnv(t, p)
		odd := stream.NewOutputTag[string]("odd")
		big := stream.NewOutputTag[int64]("big")
		unused := stream.NewOutputTag[int64]("unused")
		main := stream.Process(stream.FromSlice(env, seq(1000)), stream.ProcessFunc[int64, int64](func(v int64, ctx *stream.Context, out stream.Collector[int64]) error {
			switch {
			case v >= 900:
				stream.SideOutput(ctx, big, v)
			case v%2 == 1:
				stream.SideOutput(ctx, odd, "odd-"+strconv.FormatInt(v, 10))
			default:
				out.Collect(v)
			}
			stream.SideOutput(ctx, unused, v)
			return nil
		})).Name("split")
		gotMain := stream.Collect(main)
		gotOdd := stream.Collect(stream.GetSideOutput(main, odd))
		// A side output may feed a different parallelism (a network edge).
		gotBig := stream.Collect(stream.Map(stream.GetSideOutput(main, big), func(v int64) int64 { return -v }).SetParallelism(1))
		if err := env.Execute(context.Background(), "side"); err != nil {
			t.Fatal(err)
		}
		if n := len(gotMain.Values()); n != 450 {
			t.Fatalf("main output has %d records, want 450", n)
		}
		for _, v := range gotMain.Values() {
			if v%2 != 0 || v >= 900 {
				t.Fatalf("main output has %d", v)
			}
		}
		if n := len(gotOdd.Values()); n != 450 {
			t.Fatalf("odd side output has %d records, want 450", n)
		}
		bigs := sorted(gotBig.Values(), cmpInt)
		if len(bigs) != 100 || bigs[0] != -999 || bigs[99] != -900 {
			t.Fatalf("big side output = %v", bigs)
		}
	}
}

func TestStreamingReduceEmitsEveryUpdateBatchOnlyTheFinal(t *testing.T) {
	type kv struct {
		K string
		V int64
	}
	input := []kv{{"a", 1}, {"b", 10}, {"a", 2}, {"a", 3}, {"b", 20}}
	run := func(mode stream.RuntimeMode) []kv {
		env := newEnv(t, 1).SetRuntimeMode(mode)
		ks := stream.KeyBy(stream.FromSlice(env, input), func(x kv) string { return x.K })
		got := stream.Collect(stream.Sum(ks, func(x *kv) *int64 { return &x.V }))
		if err := env.Execute(context.Background(), "reduce"); err != nil {
			t.Fatal(err)
		}
		return sorted(got.Values(), func(a, b kv) int {
			if c := strings.Compare(a.K, b.K); c != 0 {
				return c
			}
			return int(a.V - b.V)
		})
	}
	if got, want := run(stream.Streaming), []kv{{"a", 1}, {"a", 3}, {"a", 6}, {"b", 10}, {"b", 30}}; !slices.Equal(got, want) {
		t.Fatalf("streaming = %v, want %v", got, want)
	}
	if got, want := run(stream.Batch), []kv{{"a", 6}, {"b", 30}}; !slices.Equal(got, want) {
		t.Fatalf("batch = %v, want %v", got, want)
	}
}

func TestAggregations(t *testing.T) {
	type rec struct {
		K    string
		V    int64
		Note string
	}
	input := []rec{{"a", 5, "first"}, {"a", 2, "second"}, {"a", 9, "third"}, {"b", 1, "only"}}
	cases := []struct {
		name string
		agg  func(*stream.KeyedStream[string, rec]) *stream.Stream[rec]
		want []rec
	}{
		{"Min", func(ks *stream.KeyedStream[string, rec]) *stream.Stream[rec] {
			return stream.Min(ks, func(r *rec) *int64 { return &r.V })
		}, []rec{{"a", 2, "first"}, {"b", 1, "only"}}},
		{"Max", func(ks *stream.KeyedStream[string, rec]) *stream.Stream[rec] {
			return stream.Max(ks, func(r *rec) *int64 { return &r.V })
		}, []rec{{"a", 9, "first"}, {"b", 1, "only"}}},
		{"MinBy", func(ks *stream.KeyedStream[string, rec]) *stream.Stream[rec] {
			return stream.MinBy(ks, func(r *rec) *int64 { return &r.V })
		}, []rec{{"a", 2, "second"}, {"b", 1, "only"}}},
		{"MaxBy", func(ks *stream.KeyedStream[string, rec]) *stream.Stream[rec] {
			return stream.MaxBy(ks, func(r *rec) *int64 { return &r.V })
		}, []rec{{"a", 9, "third"}, {"b", 1, "only"}}},
		{"Sum", func(ks *stream.KeyedStream[string, rec]) *stream.Stream[rec] {
			return stream.Sum(ks, func(r *rec) *int64 { return &r.V })
		}, []rec{{"a", 16, "first"}, {"b", 1, "only"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, 2).SetRuntimeMode(stream.Batch)
			src := stream.FromSlice(env, input).SetParallelism(1) // keep input order
			got := stream.Collect(c.agg(stream.KeyBy(src, func(r rec) string { return r.K })))
			if err := env.Execute(context.Background(), "agg"); err != nil {
				t.Fatal(err)
			}
			g := sorted(got.Values(), func(a, b rec) int { return strings.Compare(a.K, b.K) })
			if !slices.Equal(g, c.want) {
				t.Fatalf("got %v, want %v", g, c.want)
			}
		})
	}
}
