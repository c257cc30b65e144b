// Package pagerank is the PageRank job as a bulk iteration, shared by the
// example program, its tests and the benchmark, with the hand-written
// loop it is measured against.
package pagerank

import (
	"strconv"

	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/stream"
)

// Damping is the probability that the random surfer follows an edge.
const Damping = 0.85

// Rank is a vertex and its rank.
type Rank struct {
	Vertex int64
	Rank   float64
}

// String formats the record as the example writes it: "vertex rank", the
// rank with 16 significant digits.
func (r Rank) String() string {
	return strconv.FormatInt(r.Vertex, 10) + " " + strconv.FormatFloat(r.Rank, 'e', 15, 64)
}

// Build adds PageRank over edges to env and returns the ranks after
// exactly iterations iterations. The vertices are those of the edges;
// every vertex starts at 1/N; an iteration gives vertex v
//
//	(1 − d)/N + d × (Σ over edges u→v of rank(u)/outdegree(u) + D/N)
//
// where D is the total rank of the vertices without out-edges. Edges
// count with their multiplicity, self-loops included.
//
// Inside the loop ranks are scaled by N (R = N × rank), so that no
// superstep needs N before it has been counted: a superstep first
// completes the previous superstep's ranks with the dangling share the
// previous superstep aggregated, d × D / N, then counts the vertices and
// aggregates the dangling ranks for the next one. The result is completed
// and divided by N from the aggregates of the last superstep.
func Build(env *stream.Environment, edges *stream.Stream[graphs.Edge], iterations int) *stream.Stream[Rank] {
	vertices := stream.FlatMap(edges, func(e graphs.Edge, out stream.Collector[int64]) {
		out.Collect(e.Src)
		out.Collect(e.Dst)
	}).Name("vertices")
	distinct := stream.KeyBy(vertices, func(v int64) int64 { return v }).Reduce(func(a, _ int64) int64 { return a }).Name("distinct vertices")
	initial := stream.Map(distinct, func(v int64) Rank { return Rank{v, 1} }).Name("initial ranks")
	bySrc := stream.KeyBy(edges, func(e graphs.Edge) int64 { return e.Src })

	var dangling *stream.Aggregator[float64]
	var count *stream.Aggregator[int64]
	ranks := stream.Iterate(initial, iterations, func(it *stream.Iteration, partial *stream.Stream[Rank]) *stream.Stream[Rank] {
		dangling = stream.SumAggregator[float64](it, "dangling")
		count = stream.CountAggregator(it, "vertices")
		contributions := stream.JoinWithStatic(stream.KeyBy(partial, func(r Rank) int64 { return r.Vertex }), bySrc,
			func(r Rank, out []graphs.Edge, ctx *stream.Context, col stream.Collector[Rank]) error {
				rank := r.Rank + complete(dangling.Previous(ctx), count.Previous(ctx))
				count.Add(ctx, 1)
				// Every vertex gets a record, also those without in-edges.
				col.Collect(Rank{r.Vertex, 0})
				if len(out) == 0 {
					dangling.Add(ctx, rank)
					return nil
				}
				share := rank / float64(len(out))
				for _, e := range out {
					col.Collect(Rank{e.Dst, share})
				}
				return nil
			}).Name("contributions")
		sums := stream.Sum(stream.KeyBy(contributions, func(r Rank) int64 { return r.Vertex }), func(r *Rank) *float64 { return &r.Rank }).Name("sum contributions")
		return stream.Map(sums, func(r Rank) Rank { return Rank{r.Vertex, (1 - Damping) + Damping*r.Rank} }).Name("new ranks")
	})
	return stream.Process(ranks, stream.ProcessFunc[Rank, Rank](func(r Rank, ctx *stream.Context, out stream.Collector[Rank]) error {
		n := count.Final(ctx)
		out.Collect(Rank{r.Vertex, (r.Rank + complete(dangling.Final(ctx), n)) / float64(n)})
		return nil
	})).Name("normalize")
}

// complete is the dangling share of a scaled rank: d × D / N.
func complete(danglingTotal float64, n int64) float64 {
	if n == 0 {
		return 0
	}
	return Damping * danglingTotal / float64(n)
}

// Reference computes PageRank by the formula, in one goroutine, over the
// vertices of edges: the test's reference and the benchmark's loop.
func Reference(edges []graphs.Edge, iterations int) map[int64]float64 {
	index := make(map[int64]int32)
	var ids []int64
	id := func(v int64) int32 {
		i, ok := index[v]
		if !ok {
			i = int32(len(ids))
			index[v] = i
			ids = append(ids, v)
		}
		return i
	}
	src := make([]int32, len(edges))
	dst := make([]int32, len(edges))
	for i, e := range edges {
		src[i], dst[i] = id(e.Src), id(e.Dst)
	}
	n := len(ids)
	out := make([]int32, n)
	for _, s := range src {
		out[s]++
	}
	rank := make([]float64, n)
	next := make([]float64, n)
	for i := range rank {
		rank[i] = 1 / float64(n)
	}
	for range iterations {
		d := 0.0
		for v, o := range out {
			if o == 0 {
				d += rank[v]
			}
		}
		clear(next)
		for i, s := range src {
			next[dst[i]] += rank[s] / float64(out[s])
		}
		for v := range next {
			next[v] = (1-Damping)/float64(n) + Damping*(next[v]+d/float64(n))
		}
		rank, next = next, rank
	}
	res := make(map[int64]float64, n)
	for i, v := range ids {
		res[v] = rank[i]
	}
	return res
}
