// Components finds the connected components of an undirected graph with a
// delta iteration, on the local mini cluster or, with weir run, on a
// cluster.
//
//	go run ./examples/components --input EDGES --output DIR [-p N] [--state-backend pebble]
//
// EDGES is a file or directory of edges, one "src dst" per line (integer
// vertex IDs separated by a space or a tab; an edge joins both ways); the
// vertices are those that appear in an edge. The output, part files under
// DIR (stdout without --output), has lines "vertex component", the
// component being the smallest vertex ID in it. The solution set lives in
// the state backend: with --state-backend pebble it may exceed memory.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/weirproject/weir/examples/components/components"
	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/stream"
)

func main() {
	input := flag.String("input", "", "edge `file` or directory: one \"src dst\" per line (required)")
	output := flag.String("output", "", "write \"vertex component\" lines to part files under `dir` (default: stdout)")
	maxSupersteps := flag.Int("max-supersteps", 1<<20, "stop after `K` supersteps even if components still change")
	env := stream.NewEnvironment()
	if *input == "" {
		fail(2, errors.New("--input is required: the edge file or directory"))
	}
	if *maxSupersteps < 1 {
		fail(2, fmt.Errorf("invalid value %d for flag --max-supersteps: want at least 1", *maxSupersteps))
	}
	env.SetRuntimeMode(stream.Batch)
	comps := components.Build(env, graphs.ReadEdges(env, *input), *maxSupersteps)
	if err := graphs.Run(env, comps, *output, "ConnectedComponents"); err != nil {
		fail(1, err)
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "components:", err)
	os.Exit(code)
}
