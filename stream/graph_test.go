package stream_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/stream"
)

func vertexOps(jg *graph.JobGraph) [][]string {
	var out [][]string
	for _, v := range jg.Vertices {
		var ops []string
		for _, op := range v.Operators {
			ops = append(ops, op.Name)
		}
		out = append(out, ops)
	}
	return out
}

func sameChains(got [][]string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for i, g := range got {
		if strings.Join(g, ",") != want[i] {
			return false
		}
	}
	return true
}

func TestChaining(t *testing.T) {
	ident := func(x int64) int64 { return x }
	cases := []struct {
		name  string
		build func(env *stream.Environment)
		want  []string // the operators of each vertex
	}{
		{"forward edges with equal parallelism chain", func(env *stream.Environment) {
			s := stream.Map(stream.FromSlice(env, []int64{1}).Name("src"), ident).Name("a")
			stream.Print(s.Filter(func(int64) bool { return true }).Name("b")).Name("out")
		}, []string{"src,a,b,out"}},
		{"a hash edge breaks the chain", func(env *stream.Environment) {
			s := stream.Map(stream.FromSlice(env, []int64{1}).Name("src"), ident).Name("a")
			r := stream.KeyBy(s, ident).Reduce(func(a, b int64) int64 { return a + b }).Name("r")
			stream.Print(r).Name("out")
		}, []string{"src,a", "r,out"}},
		{"different parallelism breaks the chain", func(env *stream.Environment) {
			s := stream.Map(stream.FromSlice(env, []int64{1}).Name("src"), ident).Name("a").SetParallelism(3)
			stream.Print(s).Name("out").SetParallelism(3)
		}, []string{"src", "a,out"}},
		{"rebalance breaks the chain even at equal parallelism", func(env *stream.Environment) {
			s := stream.Map(stream.FromSlice(env, []int64{1}).Name("src").Rebalance(), ident).Name("a")
			stream.Print(s).Name("out")
		}, []string{"src", "a,out"}},
		{"DisableChaining isolates the operator", func(env *stream.Environment) {
			s := stream.Map(stream.FromSlice(env, []int64{1}).Name("src"), ident).Name("a").DisableChaining()
			stream.Print(s).Name("out")
		}, []string{"src", "a", "out"}},
		{"StartNewChain starts at the operator", func(env *stream.Environment) {
			s := stream.Map(stream.FromSlice(env, []int64{1}).Name("src"), ident).Name("a")
			b := stream.Map(s, ident).Name("b").StartNewChain()
			stream.Print(b).Name("out")
		}, []string{"src,a", "b,out"}},
		{"slot sharing groups break the chain and are inherited", func(env *stream.Environment) {
			s := stream.Map(stream.FromSlice(env, []int64{1}).Name("src"), ident).Name("a").SlotSharingGroup("heavy")
			stream.Print(stream.Map(s, ident).Name("b")).Name("out")
		}, []string{"src", "a,b,out"}},
		{"an operator with two inputs heads a chain", func(env *stream.Environment) {
			a := stream.FromSlice(env, []int64{1}).Name("src1")
			b := stream.FromSlice(env, []int64{2}).Name("src2")
			stream.Print(stream.Map(stream.Union(a, b), ident).Name("m")).Name("out")
		}, []string{"src1", "src2", "m,out"}},
		{"fan-out chains both consumers", func(env *stream.Environment) {
			s := stream.FromSlice(env, []int64{1}).Name("src")
			stream.Print(stream.Map(s, ident).Name("a")).Name("out1")
			stream.Print(stream.Map(s, ident).Name("b")).Name("out2")
		}, []string{"src,a,out1,b,out2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, 2)
			c.build(env)
			jg, err := env.JobGraph("chaining")
			if err != nil {
				t.Fatal(err)
			}
			if got := vertexOps(jg); !sameChains(got, c.want...) {
				t.Fatalf("chains = %v, want %v", got, c.want)
			}
		})
	}
}

func TestChainingCanBeDisabledForTheJob(t *testing.T) {
	env := newEnv(t, 2, "pipeline.operator-chaining", "false")
	stream.Print(stream.Map(stream.FromSlice(env, []int64{1}).Name("src"), func(x int64) int64 { return x }).Name("a")).Name("out")
	jg, err := env.JobGraph("j")
	if err != nil {
		t.Fatal(err)
	}
	if got := vertexOps(jg); !sameChains(got, "src", "a", "out") {
		t.Fatalf("chains = %v", got)
	}
}

func TestChainReasonExplainsEveryBreak(t *testing.T) {
	env := newEnv(t, 2)
	s := stream.FromSlice(env, []int64{1}).Name("src")
	a := stream.Map(s, func(x int64) int64 { return x }).Name("a").SetParallelism(3)
	stream.Print(a.Rebalance()).Name("out")
	jg, err := env.JobGraph("j")
	if err != nil {
		t.Fatal(err)
	}
	opts := graph.BuildOptions{DefaultParallelism: 2, ChainingEnabled: true}
	var reasons []string
	for _, e := range jg.Stream.Edges {
		reasons = append(reasons, graph.ChainReason(jg.Stream, e, opts))
	}
	want := []string{"the edge is REBALANCE, not FORWARD", "the edge is REBALANCE, not FORWARD"}
	if strings.Join(reasons, "|") != strings.Join(want, "|") {
		t.Fatalf("reasons = %q, want %q", reasons, want)
	}
}

func TestForwardNeedsEqualParallelism(t *testing.T) {
	env := newEnv(t, 2)
	s := stream.FromSlice(env, []int64{1}).Name("src").Forward()
	stream.Print(stream.Map(s, func(x int64) int64 { return x }).Name("a").SetParallelism(3))
	_, err := env.JobGraph("j")
	if err == nil || !strings.Contains(err.Error(), `forward partitioning from source "src" (parallelism 2) to map "a" (parallelism 3)`) {
		t.Fatalf("err = %v", err)
	}
}

func TestGraphIsDeterministic(t *testing.T) {
	build := func() (string, string) {
		env := newEnv(t, 3)
		words := stream.FlatMap(stream.FromSlice(env, []string{"a b"}), func(l string, out stream.Collector[string]) {
			for _, w := range strings.Fields(l) {
				out.Collect(w)
			}
		}).Name("split")
		counts := stream.KeyBy(words, func(w string) string { return w }).Reduce(func(a, b string) string { return a }).Name("first")
		stream.Print(counts)
		jg, err := env.JobGraph("det")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := jg.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		return jg.Fingerprint, buf.String()
	}
	f1, j1 := build()
	for i := 0; i < 5; i++ {
		f2, j2 := build()
		if f1 != f2 || j1 != j2 {
			t.Fatalf("graph changed between builds:\n%s\n%s", j1, j2)
		}
	}
}

func TestDuplicateUIDsAreRejected(t *testing.T) {
	env := newEnv(t, 1)
	s := stream.FromSlice(env, []int64{1}).UID("x")
	stream.Print(stream.Map(s, func(x int64) int64 { return x }).UID("x"))
	_, err := env.JobGraph("j")
	if err == nil || !strings.Contains(err.Error(), `UID "x" is used by both`) {
		t.Fatalf("err = %v", err)
	}
}

func TestJobWithoutSinkIsRejected(t *testing.T) {
	env := newEnv(t, 1)
	stream.Map(stream.FromSlice(env, []int64{1}), func(x int64) int64 { return x })
	if _, err := env.JobGraph("j"); err == nil || !strings.Contains(err.Error(), "no sink") {
		t.Fatalf("err = %v", err)
	}
}

func TestPlanText(t *testing.T) {
	env := newEnv(t, 2)
	s := stream.KeyBy(stream.FromSlice(env, []int64{1}).Name("src"), func(x int64) int64 { return x })
	stream.Print(s.Reduce(func(a, b int64) int64 { return a + b }).Name("sum").UID("sum-uid"))
	jg, err := env.JobGraph("plan")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := jg.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Vertex 1: Source: src\n",
		"Vertex 2: sum -> Sink: Print to Std. Out\n",
		"parallelism 2, max parallelism 128",
		`reduce "sum" uid "sum-uid"`,
		"Vertex 1 -> Vertex 2: HASH (ALL_TO_ALL)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestUnionParallelism: a union has no operator of its own; its
// Parallelism is the one its operators share, and 0 when they differ
// (issue 32: the SQL planner asked, and a union answered with a panic).
func TestUnionParallelism(t *testing.T) {
	env := newEnv(t, 2)
	a := stream.FromSlice(env, []int64{1}).SetParallelism(1)
	b := stream.FromSlice(env, []int64{2}).SetParallelism(1)
	c := stream.FromSlice(env, []int64{3})
	if got := stream.Union(a, b).Parallelism(); got != 1 {
		t.Errorf("union of two operators at 1: Parallelism() = %d, want 1", got)
	}
	if got := stream.Union(stream.Union(a, b), a).Parallelism(); got != 1 {
		t.Errorf("union of a union at 1: Parallelism() = %d, want 1", got)
	}
	if got := stream.Union(a, c).Parallelism(); got != 0 {
		t.Errorf("union of operators at 1 and the default: Parallelism() = %d, want 0", got)
	}
}
