//go:build unix

package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/examples/components/components"
	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/examples/kmeans/kmeans"
	"github.com/weirproject/weir/examples/pagerank/pagerank"
	"github.com/weirproject/weir/internal/cluster"
)

// TestClusterIterations runs the iteration examples at parallelism 4 on
// two TaskManagers of two slots each: the supersteps of every subtask are
// synchronised through the leader worker's control links, and the results
// equal the single-goroutine references.
func TestClusterIterations(t *testing.T) {
	needGo(t)
	t.Parallel()
	const token = "iterate-token-0123456789"
	env := []string{"WEIR_TOKEN=" + token}
	_, _, rest, _ := startCluster(t, env, []int{2, 2}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers with 4 slots", func(o cluster.Overview) bool {
		return o.TaskManagers == 2 && o.SlotsTotal == 4
	})
	dir := t.TempDir()
	edges := graphs.Generate(5, 400, 1200)
	input := filepath.Join(dir, "edges.txt")
	if err := graphs.WriteEdges(input, edges); err != nil {
		t.Fatal(err)
	}
	rest = strings.TrimPrefix(rest, "http://")
	submit := func(pkg string, args ...string) []string {
		t.Helper()
		out := filepath.Join(dir, filepath.Base(pkg))
		stdout, stderr, code := weir(t, append([]string{"run", "--jobmanager", rest, "--token", token, "-p", "4", pkg, "--output", out}, args...)...)
		if code != exitOK {
			t.Fatalf("weir run %s: exit %d\nstdout:\n%s\nstderr:\n%s", pkg, code, stdout, stderr)
		}
		d, err := client.Job(context.Background(), jobID(t, stdout))
		if err != nil {
			t.Fatal(err)
		}
		if d.State != cluster.JobFinished || len(d.Workers) != 2 {
			t.Fatalf("%s: job %+v, want FINISHED on 2 workers", pkg, d)
		}
		return committedLines(t, out)
	}
	run := func(pkg string, args ...string) map[int64]string {
		t.Helper()
		res := make(map[int64]string)
		for _, line := range submit(pkg, append([]string{"--input", input}, args...)...) {
			v, rest, _ := strings.Cut(line, " ")
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: output line %q", pkg, line)
			}
			if _, dup := res[id]; dup {
				t.Fatalf("%s: vertex %d twice", pkg, id)
			}
			res[id] = rest
		}
		return res
	}

	ranks := run("../../examples/pagerank", "--iterations", "15")
	want := pagerank.Reference(edges, 15)
	if len(ranks) != len(want) {
		t.Fatalf("pagerank: %d vertices, want %d", len(ranks), len(want))
	}
	for v, w := range want {
		g, err := strconv.ParseFloat(ranks[v], 64)
		if err != nil || math.Abs(g-w) > 1e-9*w {
			t.Fatalf("pagerank: vertex %d rank %q, want %.16g", v, ranks[v], w)
		}
	}

	comps := run("../../examples/components", "--state-backend", "pebble", "-D", "io.tmp.dirs="+dir)
	wantComps := components.Reference(edges)
	if len(comps) != len(wantComps) {
		t.Fatalf("components: %d vertices, want %d", len(comps), len(wantComps))
	}
	for v, w := range wantComps {
		if comps[v] != strconv.FormatInt(w, 10) {
			t.Fatalf("components: vertex %d in %q, want %d", v, comps[v], w)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 3 {
		t.Errorf("leftovers in io.tmp.dirs: %v", entries)
	}

	points, centroids := kmeans.Generate(9, 3000, 6)
	pointsFile, centroidsFile := filepath.Join(dir, "points.txt"), filepath.Join(dir, "centroids.txt")
	var pb, cb strings.Builder
	for _, p := range points {
		pb.WriteString(strconv.FormatFloat(p.X, 'g', -1, 64) + " " + strconv.FormatFloat(p.Y, 'g', -1, 64) + "\n")
	}
	for _, c := range centroids {
		cb.WriteString(strconv.Itoa(c.ID) + " " + strconv.FormatFloat(c.X, 'g', -1, 64) + "\t" + strconv.FormatFloat(c.Y, 'g', -1, 64) + "\n")
	}
	if err := os.WriteFile(pointsFile, []byte(pb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(centroidsFile, []byte(cb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	clusters, _ := kmeans.Reference(points, centroids, 8)
	var wantLines []string
	for i, p := range points {
		wantLines = append(wantLines, kmeans.Assigned{X: p.X, Y: p.Y, Cluster: clusters[i]}.String())
	}
	slices.Sort(wantLines)
	if d := diffLines(submit("../../examples/kmeans", "--points", pointsFile, "--centroids", centroidsFile, "--iterations", "8"), wantLines); d != "" {
		t.Errorf("kmeans differs from the reference: %s", d)
	}
}
