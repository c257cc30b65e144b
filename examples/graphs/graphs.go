// Package graphs holds what the iteration examples (pagerank,
// components, kmeans) share: the edge format, reading edge files into a
// stream, generated graphs for their tests and benchmarks, and running a
// job that writes its results.
package graphs

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
)

// Edge is a directed edge between two vertices.
type Edge struct {
	Src, Dst int64
}

// ParseEdge parses "src dst": two integer vertex IDs separated by spaces
// or tabs.
func ParseEdge(line string) (Edge, error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return Edge{}, fmt.Errorf("edge %q: want two vertex IDs separated by a space or a tab", line)
	}
	src, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Edge{}, fmt.Errorf("edge %q: source vertex: %w", line, err)
	}
	dst, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Edge{}, fmt.Errorf("edge %q: target vertex: %w", line, err)
	}
	return Edge{src, dst}, nil
}

// ReadEdges adds a source of the edges in the files or directories at
// paths; empty lines are skipped, a malformed line fails the job with the
// line in the message.
func ReadEdges(env *stream.Environment, paths ...string) *stream.Stream[Edge] {
	lines := stream.FromSource(env, file.Lines(paths...), "edges")
	return stream.Process(lines, stream.ProcessFunc[string, Edge](func(line string, _ *stream.Context, out stream.Collector[Edge]) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		e, err := ParseEdge(line)
		if err != nil {
			return err
		}
		out.Collect(e)
		return nil
	})).Name("parse edges")
}

// Generate returns a random multigraph over vertices 0..n-1 with m edges,
// and with the shapes the examples must handle: several components,
// isolated pairs, self-loops, duplicate edges and vertices without
// out-edges.
func Generate(seed uint64, n, m int) []Edge {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var edges []Edge
	// Two large parts that no edge joins, so that there are at least
	// two big components.
	half := int64(n / 2)
	for range m {
		part := int64(0)
		size := half
		if rng.IntN(2) == 1 {
			part, size = half, int64(n)-half
		}
		src, dst := part+rng.Int64N(size), part+rng.Int64N(size)
		edges = append(edges, Edge{src, dst})
		switch rng.IntN(20) {
		case 0:
			edges = append(edges, Edge{src, dst}) // duplicate
		case 1:
			edges = append(edges, Edge{src, src}) // self-loop
		}
	}
	// Isolated pairs, one with an edge each way, and a self-loop alone.
	base := int64(n)
	edges = append(edges, Edge{base + 10, base + 11}, Edge{base + 20, base + 21}, Edge{base + 21, base + 20}, Edge{base + 30, base + 30})
	// A dangling vertex: only in-edges.
	edges = append(edges, Edge{0, base + 40})
	rng.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
	return edges
}

// WriteEdges writes edges to path, one "src dst" per line, alternating
// spaces and tabs.
func WriteEdges(path string, edges []Edge) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i, e := range edges {
		sep := " "
		if i%2 == 1 {
			sep = "\t"
		}
		fmt.Fprintf(w, "%d%s%d\n", e.Src, sep, e.Dst)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Run writes results to part files under output (to stdout when output
// is empty) and executes the job until it ends or Ctrl-C: the end of the
// iteration examples' programs.
func Run[T any](env *stream.Environment, results *stream.Stream[T], output, jobName string) error {
	if output != "" {
		stream.SinkTo(results, file.Text[T](output, nil), "files")
	} else {
		stream.Print(results)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return env.Execute(ctx, jobName)
}
