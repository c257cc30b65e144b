package kmeans

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/stream"
)

// generate returns points around k centres and k starting centroids.
// Coordinates are multiples of 1/1024 below 2^20, so that sums are exact
// in any order and every parallelism computes the same means.
func generate(seed uint64, n, k int) ([]Point, []Centroid) {
	rng := rand.New(rand.NewPCG(seed, 7))
	grid := func(v float64) float64 { return float64(int64(v*1024)) / 1024 }
	var points []Point
	for i := range n {
		cx, cy := float64(i%k)*50, float64((i%k)*(i%k))*10
		points = append(points, Point{grid(cx + rng.NormFloat64()*8), grid(cy + rng.NormFloat64()*8)})
	}
	var cs []Centroid
	for i := range k {
		p := points[rng.IntN(len(points))]
		cs = append(cs, Centroid{ID: i + 1, X: p.X, Y: p.Y})
	}
	// A centroid far from every point: its cluster stays empty.
	cs = append(cs, Centroid{ID: k + 1, X: 1e5, Y: 1e5})
	return points, cs
}

func TestKMeansEqualsReference(t *testing.T) {
	points, cs := generate(3, 2000, 5)
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
