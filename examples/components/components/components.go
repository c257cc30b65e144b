// Package components is the connected-components job as a delta
// iteration, shared by the example program, its tests and the benchmark,
// with the hand-written loop it is measured against.
package components

import (
	"strconv"

	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/stream"
)

// Component is a vertex and the smallest vertex ID of its connected
// component.
type Component struct {
	Vertex    int64
	Component int64
}

// String formats the record as the example writes it: "vertex component".
func (c Component) String() string {
	return strconv.FormatInt(c.Vertex, 10) + " " + strconv.FormatInt(c.Component, 10)
}

// Build adds connected components over the undirected edges to env. The
// solution set starts with every vertex in a component of its own; in
// each superstep the vertices whose component changed (the workset) offer
// it to their neighbours, and a neighbour takes the smallest offer below
// its own. The iteration ends when no component changes.
func Build(env *stream.Environment, edges *stream.Stream[graphs.Edge], maxSupersteps int) *stream.Stream[Component] {
	undirected := stream.FlatMap(edges, func(e graphs.Edge, out stream.Collector[graphs.Edge]) {
		out.Collect(e)
		if e.Src != e.Dst {
			out.Collect(graphs.Edge{Src: e.Dst, Dst: e.Src})
		}
	}).Name("undirected")
	vertices := stream.FlatMap(edges, func(e graphs.Edge, out stream.Collector[int64]) {
		out.Collect(e.Src)
		out.Collect(e.Dst)
	}).Name("vertices")
	distinct := stream.KeyBy(vertices, func(v int64) int64 { return v }).Reduce(func(a, _ int64) int64 { return a }).Name("distinct vertices")
	initial := stream.Map(distinct, func(v int64) Component { return Component{v, v} }).Name("own component")
	neighbours := stream.KeyBy(undirected, func(e graphs.Edge) int64 { return e.Src })
	vertex := func(c Component) int64 { return c.Vertex }

	return stream.DeltaIterate(initial, initial, vertex, maxSupersteps,
		func(it *stream.DeltaIteration[int64, Component], changed *stream.Stream[Component]) (*stream.Stream[Component], *stream.Stream[Component]) {
			offers := stream.JoinWithStatic(stream.KeyBy(changed, vertex), neighbours,
				func(c Component, out []graphs.Edge, _ *stream.Context, col stream.Collector[Component]) error {
					for _, e := range out {
						col.Collect(Component{e.Dst, c.Component})
					}
					return nil
				}).Name("offer component")
			smallest := stream.Min(stream.KeyBy(offers, vertex), func(c *Component) *int64 { return &c.Component }).Name("smallest offer")
			updates := stream.JoinWithSolutionSet(it, smallest, vertex,
				func(offer, current Component, found bool, _ *stream.Context, col stream.Collector[Component]) error {
					if !found || offer.Component < current.Component {
						col.Collect(offer)
					}
					return nil
				}).Name("take smaller")
			return updates, updates
		})
}

// Reference computes the components with a union-find, in one goroutine:
// the test's reference and the benchmark's loop.
func Reference(edges []graphs.Edge) map[int64]int64 {
	parent := make(map[int64]int64)
	var find func(v int64) int64
	find = func(v int64) int64 {
		p, ok := parent[v]
		if !ok {
			parent[v] = v
			return v
		}
		if p == v {
			return v
		}
		r := find(p)
		parent[v] = r
		return r
	}
	for _, e := range edges {
		a, b := find(e.Src), find(e.Dst)
		// The smaller ID becomes the root, so the root is the minimum.
		if a < b {
			parent[b] = a
		} else if b < a {
			parent[a] = b
		}
	}
	res := make(map[int64]int64, len(parent))
	for v := range parent {
		res[v] = find(v)
	}
	return res
}
