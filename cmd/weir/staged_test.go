//go:build unix

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

// TestClusterBatchStagesFailover runs a batch job at parallelism 3 on two
// TaskManagers of one slot each: pipelined it would need 3 slots, in
// stages the leader worker schedules its 6 subtasks into the 2 slots of
// both processes, whose partition files cross over TCP. The first
// execution of one subtask of the second stage fails; only that subtask
// runs again (attempt 1, seen in the mark files its executions leave),
// the cluster does not restart the job, and the committed output equals
// that of a failure-free local run.
func TestClusterBatchStagesFailover(t *testing.T) {
	needGo(t)
	t.Parallel()
	const token = "staged-token-0123456789"
	_, _, rest, _ := startCluster(t, []string{"WEIR_TOKEN=" + token}, []int{1, 1}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers with a slot each", func(o cluster.Overview) bool {
		return o.TaskManagers == 2 && o.SlotsTotal == 2
	})
	dir := t.TempDir()
	program := filepath.Join(dir, "stagedfail")
	if out, err := exec.Command("go", "build", "-o", program, "./testdata/stagedfail").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	local := filepath.Join(dir, "local")
	if out, err := exec.Command(program, "-p", "3", "-D", "execution.runtime-mode=BATCH", "--output", local).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	want := committedLines(t, local)
	if len(want) != 1000 {
		t.Fatalf("the local run committed %d sums, want 1000", len(want))
	}

	marks, out := filepath.Join(dir, "marks"), filepath.Join(dir, "out")
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := weir(t, "run", "--jobmanager", strings.TrimPrefix(rest, "http://"), "--token", token, "-p", "3",
		"-D", "execution.runtime-mode=BATCH", "-D", "restart-strategy.type=fixed-delay",
		"-D", "restart-strategy.fixed-delay.attempts=2", "-D", "restart-strategy.fixed-delay.delay=10ms",
		program, "--output", out, "--marks", marks, "--fail-subtask", "1")
	if code != exitOK {
		t.Fatalf("weir run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d := diffLines(committedLines(t, out), want); d != "" {
		t.Errorf("the cluster run differs from the failure-free local run: %s", d)
	}
	d, err := client.Job(context.Background(), jobID(t, stdout))
	if err != nil {
		t.Fatal(err)
	}
	if d.State != cluster.JobFinished || d.Attempt != 1 || len(d.Workers) != 2 {
		t.Errorf("job %+v, want FINISHED in its first attempt on 2 workers", d)
	}
	// Each worker says when it started its tasks, once it met its peer:
	// within the attempt, and the end of its deployment.
	for _, w := range d.Workers {
		if w.StartTime < d.Timestamps[cluster.JobRunning] || w.StartTime > d.EndTime {
			t.Errorf("worker %d started its tasks at %d, want within the attempt's %d..%d", w.Index, w.StartTime, d.Timestamps[cluster.JobRunning], d.EndTime)
		}
	}
	entries, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	wantMarks := []string{"source-0-0", "source-1-0", "source-2-0", "sums-0-0", "sums-1-0", "sums-1-1", "sums-2-0"}
	if !slices.Equal(got, wantMarks) {
		t.Errorf("executions %v, want %v", got, wantMarks)
	}
}
