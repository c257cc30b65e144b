package kmeans

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/stream"
)

func TestKMeansEqualsReference(t *testing.T) {
	points, cs := Generate(3, 2000, 5)
	for _, iterations := range []int{1, 10} {
		want, _ := Reference(points, cs, iterations)
		wantOf := make(map[Point]int)
		for i, p := range points {
			wantOf[p] = want[i]
		}
		for _, p := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("iterations=%d/p=%d", iterations, p), func(t *testing.T) {
				env := stream.NewEnvironmentWithConfig(config.New()).SetParallelism(p).SetRuntimeMode(stream.Batch)
				got := stream.Collect(Build(env, stream.FromSlice(env, points), stream.FromSlice(env, cs), iterations))
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := env.Execute(ctx, "kmeans"); err != nil {
					t.Fatal(err)
				}
				vs := got.Values()
				if len(vs) != len(points) {
					t.Fatalf("%d points in the result, want %d", len(vs), len(points))
				}
				for _, a := range vs {
					if w := wantOf[Point{a.X, a.Y}]; a.Cluster != w {
						t.Fatalf("point (%g, %g) in cluster %d, want %d", a.X, a.Y, a.Cluster, w)
					}
				}
			})
		}
	}
}
