// PageRank ranks the vertices of a directed graph with a bulk iteration,
// on the local mini cluster or, with weir run, on a cluster.
//
//	go run ./examples/pagerank --input EDGES --output DIR [--iterations K] [-p N]
//
// EDGES is a file or directory of edges, one "src dst" per line (integer
// vertex IDs separated by a space or a tab); the vertices are those that
// appear in an edge. Every vertex starts at 1/N; each of the exactly K
// iterations gives a vertex (1 − 0.85)/N + 0.85 × (the sum over its
// in-edges of rank(u)/outdegree(u) + the total rank of the vertices
// without out-edges / N). The output, part files under DIR (stdout
// without --output), has lines "vertex rank" with 16 significant digits.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/examples/pagerank/pagerank"
	"github.com/weirproject/weir/stream"
)

func main() {
	input := flag.String("input", "", "edge `file` or directory: one \"src dst\" per line (required)")
	output := flag.String("output", "", "write \"vertex rank\" lines to part files under `dir` (default: stdout)")
	iterations := flag.Int("iterations", 10, "run exactly `K` iterations")
	env := stream.NewEnvironment()
	if *input == "" {
		fail(2, errors.New("--input is required: the edge file or directory"))
	}
	if *iterations < 1 {
		fail(2, fmt.Errorf("invalid value %d for flag --iterations: want at least 1", *iterations))
	}
	env.SetRuntimeMode(stream.Batch)
	ranks := pagerank.Build(env, graphs.ReadEdges(env, *input), *iterations)
	if err := graphs.Run(env, ranks, *output, "PageRank"); err != nil {
		fail(1, err)
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "pagerank:", err)
	os.Exit(code)
}
