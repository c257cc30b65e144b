package components

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/stream"
)

func run(t *testing.T, edges []graphs.Edge, parallelism int, backend string) map[int64]int64 {
	t.Helper()
	cfg := config.New()
	if err := cfg.Set(config.StateBackend.Key, backend); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set(config.TmpDirs.Key, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironmentWithConfig(cfg).SetParallelism(parallelism).SetRuntimeMode(stream.Batch)
	got := stream.Collect(Build(env, stream.FromSlice(env, edges), 1000))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "components"); err != nil {
		t.Fatal(err)
	}
	res := make(map[int64]int64)
	for _, c := range got.Values() {
		if _, dup := res[c.Vertex]; dup {
			t.Fatalf("vertex %d twice in the result", c.Vertex)
		}
		res[c.Vertex] = c.Component
	}
	return res
}

func TestComponentsEqualReference(t *testing.T) {
	edges := graphs.Generate(2, 300, 500)
	want := Reference(edges)
	comps := make(map[int64]bool)
	for _, c := range want {
		comps[c] = true
	}
	if len(comps) < 4 {
		t.Fatalf("the generated graph has %d components; the test wants several", len(comps))
	}
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/p=%d", backend, p), func(t *testing.T) {
				got := run(t, edges, p, backend)
				if len(got) != len(want) {
					t.Fatalf("%d vertices, want %d", len(got), len(want))
				}
				for v, w := range want {
					if got[v] != w {
						t.Fatalf("vertex %d in component %d, want %d", v, got[v], w)
					}
				}
			})
		}
	}
}
