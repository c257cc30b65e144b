package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// TestClusterDefaultParallelism is a new user's first cluster run: one
// TaskManager with one slot, and weir run without -p. The job runs at the
// cluster's parallelism.default (1), not at the client's CPU count, and
// commits what a local run commits. With -p 4 weir run says at once that
// the cluster has 1 slot and the job needs 4 (of a streaming job: a batch
// job runs in stages in the one slot).
func TestClusterDefaultParallelism(t *testing.T) {
	needGo(t)
	t.Parallel()
	_, _, rest, _ := startCluster(t, nil, []int{1}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "1 taskmanager", func(o cluster.Overview) bool { return o.TaskManagers == 1 })
	wc := buildWordCount(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(2000, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	localOut := filepath.Join(dir, "local")
	if out, err := exec.Command(wc, "--input", input, "--output", localOut).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	rest = strings.TrimPrefix(rest, "http://")
	out := filepath.Join(dir, "cluster")
	stdout, stderr, code := weir(t, "run", "--jobmanager", rest, wc, "--input", input, "--output", out)
	if code != exitOK || !strings.Contains(stdout, "1 slots") || strings.Contains(stderr, "needs") {
		t.Fatalf("weir run without -p: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got, want := committedLines(t, out), committedLines(t, localOut); !slices.Equal(got, want) {
		t.Errorf("cluster output differs from the local run's: %s", diffLines(got, want))
	}

	start := time.Now()
	stdout, stderr, code = weir(t, "run", "-d", "-p", "4", "--jobmanager", rest, wc, "--mode", "streaming", "--input", input, "--output", filepath.Join(dir, "p4"))
	took := time.Since(start)
	if code != exitOK || !strings.Contains(stderr, "the job needs 4 slots, but the cluster has 1") || !strings.Contains(stderr, "-p") {
		t.Fatalf("weir run -p 4 on 1 slot: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("weir run -p 4 returned in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(stderr))
	if err := client.CancelJob(context.Background(), jobID(t, stdout)); err != nil {
		t.Error(err)
	}
}
