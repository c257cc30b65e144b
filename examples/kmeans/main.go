// KMeans clusters points of the plane with a bulk iteration, on the local
// mini cluster or, with weir run, on a cluster.
//
//	go run ./examples/kmeans --points FILE --centroids FILE --output DIR [--iterations K] [-p N]
//
// Points are "x y" per line. The centroids file has one starting centroid
// per line, "x y" (its cluster ID is its line number, from 1) or "id x
// y". Each of exactly K iterations assigns every point to its nearest
// centroid (ties to the smallest ID) and moves each centroid to the mean
// of its points; a centroid without points stays. The output, part files
// under DIR (stdout without --output), has lines "x y cluster".
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/examples/kmeans/kmeans"
	"github.com/weirproject/weir/stream"
)

func main() {
	pointsPath := flag.String("points", "", "point `file` or directory: one \"x y\" per line (required)")
	centroidsPath := flag.String("centroids", "", "starting centroids `file`: \"x y\" or \"id x y\" per line (required)")
	output := flag.String("output", "", "write \"x y cluster\" lines to part files under `dir` (default: stdout)")
	iterations := flag.Int("iterations", 10, "run exactly `K` iterations")
	env := stream.NewEnvironment()
	if *pointsPath == "" || *centroidsPath == "" {
		fail(2, errors.New("--points and --centroids are required"))
	}
	if *iterations < 1 {
		fail(2, fmt.Errorf("invalid value %d for flag --iterations: want at least 1", *iterations))
	}
	// The centroids are few: read here, they keep their order.
	centroids, err := readCentroids(*centroidsPath)
	if err != nil {
		fail(2, err)
	}
	env.SetRuntimeMode(stream.Batch)
	lines := stream.FromSource(env, file.Lines(*pointsPath), "points")
	points := stream.Process(lines, stream.ProcessFunc[string, kmeans.Point](func(line string, _ *stream.Context, out stream.Collector[kmeans.Point]) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		p, err := kmeans.ParsePoint(line)
		if err != nil {
			return err
		}
		out.Collect(p)
		return nil
	})).Name("parse points")
	assigned := kmeans.Build(env, points, stream.FromSlice(env, centroids), *iterations)
	if err := graphs.Run(env, assigned, *output, "KMeans"); err != nil {
		fail(1, err)
	}
}

func readCentroids(path string) ([]kmeans.Centroid, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []kmeans.Centroid
	seen := make(map[int]bool)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		c := kmeans.Centroid{ID: len(out) + 1}
		fields := strings.Fields(line)
		if len(fields) == 3 {
			id, err := strconv.Atoi(fields[0])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: centroid ID: %w", path, n, err)
			}
			c.ID = id
			fields = fields[1:]
		}
		p, err := kmeans.ParsePoint(strings.Join(fields, " "))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("%s:%d: centroid ID %d twice", path, n, c.ID)
		}
		seen[c.ID] = true
		c.X, c.Y = p.X, p.Y
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no centroids", path)
	}
	return out, nil
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "kmeans:", err)
	os.Exit(code)
}
