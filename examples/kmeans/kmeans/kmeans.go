// Package kmeans is k-means clustering as a bulk iteration, shared by the
// example program, its tests and the benchmark, with the hand-written loop
// it is measured against.
package kmeans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/weirproject/weir/stream"
)

// Point is a point of the plane.
type Point struct{ X, Y float64 }

// Centroid is a cluster's centre.
type Centroid struct {
	ID   int
	X, Y float64
}

// Assigned is a point and the ID of its cluster.
type Assigned struct {
	X, Y    float64
	Cluster int
}

// String formats the record as the example writes it: "x y cluster".
func (a Assigned) String() string {
	return strconv.FormatFloat(a.X, 'g', -1, 64) + " " + strconv.FormatFloat(a.Y, 'g', -1, 64) + " " + strconv.Itoa(a.Cluster)
}

// ParsePoint parses "x y".
func ParsePoint(line string) (Point, error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return Point{}, fmt.Errorf("point %q: want two numbers separated by a space or a tab", line)
	}
	x, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return Point{}, fmt.Errorf("point %q: x: %w", line, err)
	}
	y, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return Point{}, fmt.Errorf("point %q: y: %w", line, err)
	}
	return Point{x, y}, nil
}

// nearest returns the ID of the centroid closest to p; ties go to the
// smallest ID.
func nearest(p Point, centroids []Centroid) int {
	best, bestD := -1, math.Inf(1)
	for _, c := range centroids {
		dx, dy := p.X-c.X, p.Y-c.Y
		d := dx*dx + dy*dy
		if d < bestD || (d == bestD && c.ID < best) {
			best, bestD = c.ID, d
		}
	}
	return best
}

// sums gathers a cluster's points in a superstep; the cluster's current
// centroid contributes its position as Old, which a cluster without points
// keeps.
type sums struct {
	Cluster    int
	X, Y       float64
	N          int64
	OldX, OldY float64
}

// Build adds k-means to env: exactly iterations times, every point joins
// its nearest centroid and every centroid moves to the mean of its points
// (a centroid without points stays). It returns the points with the
// cluster of the final centroids.
func Build(env *stream.Environment, points *stream.Stream[Point], centroids *stream.Stream[Centroid], iterations int) *stream.Stream[Assigned] {
	final := stream.Iterate(centroids, iterations, func(_ *stream.Iteration, current *stream.Stream[Centroid]) *stream.Stream[Centroid] {
		assigned := stream.MapWithBroadcastSet(points, current, func(p Point, cs []Centroid, _ *stream.Context, out stream.Collector[sums]) error {
			out.Collect(sums{Cluster: nearest(p, cs), X: p.X, Y: p.Y, N: 1})
			return nil
		}).Name("nearest centroid")
		old := stream.Map(current, func(c Centroid) sums { return sums{Cluster: c.ID, OldX: c.X, OldY: c.Y} }).Name("current centroid")
		total := stream.KeyBy(stream.Union(assigned, old), func(s sums) int { return s.Cluster }).Reduce(func(a, b sums) sums {
			return sums{Cluster: a.Cluster, X: a.X + b.X, Y: a.Y + b.Y, N: a.N + b.N, OldX: a.OldX + b.OldX, OldY: a.OldY + b.OldY}
		}).Name("sum cluster")
		return stream.Map(total, func(s sums) Centroid {
			if s.N == 0 {
				return Centroid{s.Cluster, s.OldX, s.OldY}
			}
			return Centroid{s.Cluster, s.X / float64(s.N), s.Y / float64(s.N)}
		}).Name("move centroid")
	})
	return stream.MapWithBroadcastSet(points, final, func(p Point, cs []Centroid, _ *stream.Context, out stream.Collector[Assigned]) error {
		out.Collect(Assigned{p.X, p.Y, nearest(p, cs)})
		return nil
	}).Name("assign")
}

// Reference runs k-means by the same rules in one goroutine: the test's
// reference and the benchmark's loop. It returns each point's cluster, in
// the order of points, and the final centroids.
func Reference(points []Point, centroids []Centroid, iterations int) ([]int, []Centroid) {
	cs := append([]Centroid(nil), centroids...)
	type acc struct {
		x, y float64
		n    int64
	}
	index := make(map[int]int, len(cs))
	for i, c := range cs {
		index[c.ID] = i
	}
	accs := make([]acc, len(cs))
	for range iterations {
		clear(accs)
		for _, p := range points {
			a := &accs[index[nearest(p, cs)]]
			a.x += p.X
			a.y += p.Y
			a.n++
		}
		for i, a := range accs {
			if a.n > 0 {
				cs[i].X, cs[i].Y = a.x/float64(a.n), a.y/float64(a.n)
			}
		}
	}
	out := make([]int, len(points))
	for i, p := range points {
		out[i] = nearest(p, cs)
	}
	return out, cs
}

// Generate returns points around k centres and k starting centroids.
// Coordinates are multiples of 1/1024 below 2^20, so that sums are exact
// in any order and every parallelism computes the same means.
func Generate(seed uint64, n, k int) ([]Point, []Centroid) {
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
