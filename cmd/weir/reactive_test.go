package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// TestReactiveScaling (issue 15): with scheduler-mode reactive, the
// streaming exactly-once WordCount runs at the parallelism of the free
// slots (two 1-slot TaskManagers: 2); a third TaskManager raises it to 3,
// and killing one lowers it to 2, each time from the latest checkpoint;
// the committed output equals a failure-free run's.
func TestReactiveScaling(t *testing.T) {
	_, rpc, rest, tms := startCluster(t, nil, []int{1, 1},
		"scheduler-mode=reactive", "heartbeat.interval=100ms", "heartbeat.timeout=1s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	wc := buildWordCount(t)

	dir := t.TempDir()
	args, clean := wordCountInput(t, wc, dir, 6, 5000, 21)

	out := filepath.Join(dir, "out")
	stdout, stderr, code := weir(t, append([]string{"run", "-d", "--jobmanager", strings.TrimPrefix(rest, "http://"), wc},
		append(args(out, filepath.Join(dir, "chk")), "--rate", "1000")...)...)
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	parallelism := func(d cluster.JobDetails) int {
		if len(d.Vertices) == 0 {
			return 0
		}
		return d.Vertices[0].Parallelism
	}
	at := func(p, checkpoints int) func(cluster.JobDetails) bool {
		return func(d cluster.JobDetails) bool {
			if cluster.IsTerminalJobState(d.State) {
				t.Fatalf("job ended early: %+v", d)
			}
			return d.State == cluster.JobRunning && parallelism(d) == p && len(d.Workers) == p && d.Checkpoints.Completed >= checkpoints
		}
	}
	d := waitJob(t, client, id, 60*time.Second, "parallelism 2 and 2 checkpoints", at(2, 2))
	first := d.Attempt

	tms = append(tms, startProc(t, "taskmanager 3", nil, "taskmanager", "--jobmanager", rpc, "--slots", "1"))
	added := time.Now()
	d = waitJob(t, client, id, 60*time.Second, "parallelism 3", at(3, d.Checkpoints.Completed+1))
	t.Logf("rescaled to 3 and checkpointing %v after the third taskmanager started (attempt %d)", time.Since(added).Round(time.Millisecond), d.Attempt)
	if d.Attempt <= first {
		t.Fatalf("parallelism 3 without a new attempt: %+v", d)
	}
	if d.Restarts != 0 {
		t.Errorf("a rescale counted as a restart: %+v", d)
	}

	victim := taskManagerOf(t, tms, d.Workers[len(d.Workers)-1].TaskManager)
	victim.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	d = waitJob(t, client, id, 60*time.Second, "parallelism 2 again", at(2, d.Checkpoints.Completed+1))
	t.Logf("down to 2 and checkpointing %v after a taskmanager was killed (attempt %d)", time.Since(killed).Round(time.Millisecond), d.Attempt)

	d = waitJob(t, client, id, 2*time.Minute, "FINISHED", func(d cluster.JobDetails) bool {
		if d.State == cluster.JobFailed {
			t.Fatalf("job failed: %s", d.Error)
		}
		return d.State == cluster.JobFinished
	})
	if diff := diffLines(committedLines(t, out), clean); diff != "" {
		t.Errorf("after rescaling up and down, the committed output differs from the failure-free run: %s", diff)
	}
}
