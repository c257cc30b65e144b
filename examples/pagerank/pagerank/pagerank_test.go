package pagerank

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/stream"
)

func run(t *testing.T, edges []graphs.Edge, iterations, parallelism int) map[int64]float64 {
	t.Helper()
	env := stream.NewEnvironmentWithConfig(config.New()).SetParallelism(parallelism).SetRuntimeMode(stream.Batch)
	got := stream.Collect(Build(env, stream.FromSlice(env, edges), iterations))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "pagerank"); err != nil {
		t.Fatal(err)
	}
	res := make(map[int64]float64)
	for _, r := range got.Values() {
		if _, dup := res[r.Vertex]; dup {
			t.Fatalf("vertex %d twice in the result", r.Vertex)
		}
		res[r.Vertex] = r.Rank
	}
	return res
}

func TestPageRankEqualsReference(t *testing.T) {
	edges := graphs.Generate(1, 200, 800)
	for _, iterations := range []int{1, 5, 20} {
		want := Reference(edges, iterations)
		for _, p := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("iterations=%d/p=%d", iterations, p), func(t *testing.T) {
				got := run(t, edges, iterations, p)
				if len(got) != len(want) {
					t.Fatalf("%d vertices, want %d", len(got), len(want))
				}
				sum := 0.0
				for v, w := range want {
					g, ok := got[v]
					if !ok {
						t.Fatalf("vertex %d missing", v)
					}
					if math.Abs(g-w) > 1e-9*math.Abs(w) {
						t.Fatalf("vertex %d: rank %.17g, want %.17g (relative error %.3g)", v, g, w, math.Abs(g-w)/w)
					}
					sum += g
				}
				if math.Abs(sum-1) > 1e-9 {
					t.Errorf("ranks sum to %.17g, want 1", sum)
				}
			})
		}
	}
}
