package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// TestClusterPausedTaskManagerCommitsNothing pauses (SIGSTOP) the
// TaskManager of a running exactly-once job past the heartbeat timeout.
// Its worker goes on running — a zombie attempt — while the JobManager
// restarts the job on the other TaskManager. Before checkpoints were
// confirmed by the JobManager, the zombie kept completing checkpoints and
// its sink kept committing next to the new attempt, duplicating output.
// Now the zombie cannot get a checkpoint confirmed: once resumed it stops,
// and the committed output equals a failure-free run's.
func TestClusterPausedTaskManagerCommitsNothing(t *testing.T) {
	needGo(t)
	t.Parallel()
	const p = 2
	_, _, rest, tms := startCluster(t, nil, []int{p, p}, "heartbeat.interval=100ms", "heartbeat.timeout=1s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "the taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	wc := buildWordCount(t)

	dir := t.TempDir()
	input := filepath.Join(dir, "input")
	os.Mkdir(input, 0o755)
	for i := range p {
		if err := os.WriteFile(filepath.Join(input, fmt.Sprintf("part-%d.txt", i)), []byte(wordText(8000, i+5)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := func(out, chk string) []string {
		return []string{"--mode", "streaming", "--input", input, "--output", out,
			"--checkpoint-interval", "100ms", "--checkpoint-dir", "file://" + chk}
	}
	cleanOut := filepath.Join(dir, "clean")
	if out, err := exec.Command(wc, append(args(cleanOut, filepath.Join(dir, "clean-chk")), "-p", strconv.Itoa(p))...).CombinedOutput(); err != nil {
		t.Fatalf("failure-free local run: %v\n%s", err, out)
	}
	clean := committedLines(t, cleanOut)

	out := filepath.Join(dir, "out")
	stdout, stderr, code := weir(t, append([]string{"run", "-d", "--jobmanager", strings.TrimPrefix(rest, "http://"), "-p", strconv.Itoa(p),
		"-D", "restart-strategy.type=fixed-delay", "-D", "restart-strategy.fixed-delay.delay=100ms", wc},
		append(args(out, filepath.Join(dir, "chk")), "--rate", "2000")...)...)
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	d := waitJob(t, client, id, 30*time.Second, "3 completed checkpoints", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && d.Checkpoints.Completed >= 3
	})
	if len(d.Workers) != 1 {
		t.Fatalf("want the job in one worker on one taskmanager, got %+v", d.Workers)
	}
	if chks, _ := filepath.Glob(filepath.Join(dir, "chk", id, "chk-*", "_metadata")); len(chks) == 0 {
		entries, _ := os.ReadDir(filepath.Join(dir, "chk"))
		t.Fatalf("no checkpoint under <dir>/%s/, named by the JobID; the directory holds %v", id, entries)
	}
	var victim *proc
	for _, tm := range tms {
		if strings.Contains(tm.stderr.String(), d.TaskManager) {
			victim = tm
		}
	}
	if victim == nil {
		t.Fatalf("no taskmanager process logged the resource ID %s", d.TaskManager)
	}
	zombies := workerPIDs(id, 1)
	if len(zombies) != 1 {
		t.Fatalf("want one worker process of attempt 1, got %v", zombies)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			victim.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	before := d.Checkpoints.Completed
	d = waitJob(t, client, id, 30*time.Second, "attempt 2 running with a checkpoint", func(d cluster.JobDetails) bool {
		return d.Attempt == 2 && d.State == cluster.JobRunning && d.Checkpoints.Completed > before
	})
	// The zombie ran all along, next to attempt 2: the scenario is real.
	if len(workerPIDs(id, 1)) != 1 {
		t.Fatalf("the worker of attempt 1 is gone while its taskmanager is stopped; nothing was tested")
	}
	// Not synchronisation: a window in which the zombie, running next to
	// attempt 2, tries to complete checkpoints (before the fence it
	// committed in this window).
	time.Sleep(300 * time.Millisecond)
	resume()
	deadline := time.Now().Add(15 * time.Second)
	for len(workerPIDs(id, 1)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the worker of attempt 1 still runs 15 s after its taskmanager resumed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	d = waitJob(t, client, id, 60*time.Second, "FINISHED", func(d cluster.JobDetails) bool {
		if d.State == cluster.JobFailed {
			t.Fatalf("job failed: %s", d.Error)
		}
		return d.State == cluster.JobFinished
	})
	if diff := diffLines(committedLines(t, out), clean); diff != "" {
		t.Errorf("after a paused taskmanager resumed, the committed output differs from the failure-free run: %s", diff)
	}
	// The attempts wrote their checkpoints under <dir>/<job-id>; once the
	// job finished, the JobManager removes them (no worker may: the
	// zombie could not know whether a restart still needed its own).
	deadline = time.Now().Add(10 * time.Second)
	for {
		left, _ := filepath.Glob(filepath.Join(dir, "chk", id+"*"))
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint directories of the finished job remain: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("attempts %d, checkpoints %d; the resumed taskmanager said: %v", d.Attempt, d.Checkpoints.Completed,
		strings.Contains(victim.stderr.String(), "refused a checkpoint"))
}

// TestClusterCheckpointsUnderJobIDKeptWhenProgramRetains: a job's
// checkpoints lie under <dir>/<job-id>/ (the JobID weir run and weir list
// show), and a program that asks in its own code to retain them on
// cancellation (examples/wordcount --mode streaming does) keeps them when
// it is cancelled on a cluster, although its -D settings say nothing: the
// JobManager, which removes a cancelled job's checkpoints, learns the
// program's setting from its checkpoint confirmations.
func TestClusterCheckpointsUnderJobIDKeptWhenProgramRetains(t *testing.T) {
	needGo(t)
	t.Parallel()
	_, _, rest, _ := startCluster(t, nil, []int{1})
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	wc := buildWordCount(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(20000, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	chk := filepath.Join(dir, "chk")
	stdout, stderr, code := weir(t, "run", "-d", "--jobmanager", strings.TrimPrefix(rest, "http://"), wc,
		"--mode", "streaming", "--input", input, "--output", filepath.Join(dir, "out"), "--rate", "500",
		"--checkpoint-interval", "100ms", "--checkpoint-dir", "file://"+chk)
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	waitJob(t, client, id, 30*time.Second, "2 completed checkpoints", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && d.Checkpoints.Completed >= 2
	})
	entries, _ := os.ReadDir(chk)
	if len(entries) != 1 || entries[0].Name() != id {
		t.Fatalf("%s holds %v; want one directory named by the JobID %s", chk, entries, id)
	}
	if _, stderr, code := weir(t, "cancel", "--jobmanager", strings.TrimPrefix(rest, "http://"), id); code != exitOK {
		t.Fatalf("weir cancel: exit %d\n%s", code, stderr)
	}
	waitJob(t, client, id, 30*time.Second, "cancelled", func(d cluster.JobDetails) bool { return d.State == cluster.JobCanceled })
	// The JobManager removes checkpoints in the background: give it time
	// to do so wrongly.
	time.Sleep(time.Second)
	if chks, _ := filepath.Glob(filepath.Join(chk, id, "chk-*", "_metadata")); len(chks) == 0 {
		t.Fatalf("the cancelled job's checkpoints are gone from %s, though its program retains them on cancellation", filepath.Join(chk, id))
	}
}
