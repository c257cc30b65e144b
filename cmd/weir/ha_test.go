package main

import (
	"context"
	"fmt"
	"net"
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

// Issue 15's must-show tests of JobManager high availability: etcd
// (Debian's etcd-server), JobManagers, TaskManagers and the client as
// separate processes on 127.0.0.1, killed and paused with signals.

// startEtcd starts an etcd server on free loopback ports for the test and
// returns its client endpoint.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_SYSTEMS") == "1" {
			t.Fatalf("etcd not found: install Debian's etcd-server (./test.sh does): %v", err)
		}
		t.Skipf("etcd not found (Debian: apt-get install etcd-server): %v", err)
	}
	client, peer := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--name", "weir-test", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "weir-test=http://"+peer)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", client, time.Second); err == nil {
			c.Close()
			return client
		}
		select {
		case <-done:
			t.Fatalf("etcd exited:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd does not listen on %s within 15 s:\n%s", client, out.String())
		}
	}
}

// haCluster is a highly available cluster of processes sharing one
// configuration file.
type haCluster struct {
	t      *testing.T
	config string
	jms    []*haJobManager
}

type haJobManager struct {
	p         *proc
	rpc, rest string
	client    *cluster.RESTClient
}

func newHACluster(t *testing.T) *haCluster {
	endpoint := startEtcd(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "ha.yaml")
	yaml := fmt.Sprintf(`high-availability.type: etcd
high-availability.etcd.endpoints: %s
high-availability.cluster-id: /weir-test
high-availability.storageDir: file://%s
high-availability.etcd.lease-ttl: 2 s
heartbeat.interval: 100 ms
heartbeat.timeout: 2 s
`, endpoint, filepath.Join(dir, "ha"))
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return &haCluster{t: t, config: conf}
}

// startJobManager starts one more JobManager candidate.
func (c *haCluster) startJobManager() *haJobManager {
	c.t.Helper()
	p, rpc, rest := startJobManager(c.t, nil, "--config", c.config)
	p.name = fmt.Sprintf("jobmanager %d", len(c.jms)+1)
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(client.Close)
	jm := &haJobManager{p: p, rpc: rpc, rest: rest, client: client}
	c.jms = append(c.jms, jm)
	return jm
}

// start starts a leader, then a standby and n TaskManagers of 2 slots.
func (c *haCluster) start(n int) (leader, standby *haJobManager, tms []*proc) {
	t := c.t
	t.Helper()
	leader = c.startJobManager()
	if c.leader(20*time.Second, nil) != leader {
		t.Fatal("the first JobManager does not lead")
	}
	standby = c.startJobManager()
	for i := range n {
		tms = append(tms, startProc(t, fmt.Sprintf("taskmanager %d", i+1), nil, "taskmanager", "--config", c.config, "--slots", "2"))
	}
	waitOverview(t, leader.client, 20*time.Second, fmt.Sprintf("%d taskmanagers", n), func(o cluster.Overview) bool { return o.TaskManagers == n })
	return leader, standby, tms
}

// leader waits until one of the running JobManagers says it leads.
func (c *haCluster) leader(d time.Duration, except *haJobManager) *haJobManager {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, jm := range c.jms {
			if jm == except || isClosed(jm.p.done) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			o, err := jm.client.Overview(ctx)
			cancel()
			if err == nil && o.Leader {
				return jm
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no JobManager leads within %v", d)
	return nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// haJob runs the exactly-once streaming WordCount attached (weir run
// --config, no address) and returns the run process, the output dir and
// the output of a failure-free run.
func (c *haCluster) runWordCount(lines, rate int) (run *proc, out string, clean []string) {
	t := c.t
	wc := buildWordCount(t)
	dir := t.TempDir()
	args, clean := wordCountInput(t, wc, dir, 2, lines/2, 11)
	out = filepath.Join(dir, "out")
	run = startProc(t, "weir run", nil, append([]string{"run", "--config", c.config, "--poll", "100ms", "-p", "2", wc},
		append(args(out, filepath.Join(dir, "chk")), "--rate", strconv.Itoa(rate))...)...)
	return run, out, clean
}

// wordCountInput writes files of generated text into dir/input, checks
// a failure-free local run of the streaming WordCount (parallelism 2)
// against the reference, and returns the program's arguments for an
// output and checkpoint directory, and the failure-free output.
func wordCountInput(t *testing.T, wc, dir string, files, lines, seed int) (args func(out, chk string) []string, clean []string) {
	t.Helper()
	input := filepath.Join(dir, "input")
	os.Mkdir(input, 0o755)
	var text string
	for i := range files {
		part := wordText(lines, i+seed)
		text += part
		if err := os.WriteFile(filepath.Join(input, fmt.Sprintf("part-%d.txt", i)), []byte(part), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args = func(out, chk string) []string {
		return []string{"--mode", "streaming", "--input", input, "--output", out,
			"--checkpoint-interval", "200ms", "--checkpoint-dir", "file://" + chk}
	}
	cleanOut := filepath.Join(dir, "clean")
	if b, err := exec.Command(wc, append(args(cleanOut, filepath.Join(dir, "clean-chk")), "-p", "2")...).CombinedOutput(); err != nil {
		t.Fatalf("failure-free local run: %v\n%s", err, b)
	}
	clean = committedLines(t, cleanOut)
	if d := diffLines(clean, runningCounts(text)); d != "" {
		t.Fatalf("the failure-free run differs from the reference: %s", d)
	}
	return args, clean
}

// job waits for the job's details on the leader to satisfy cond.
func (c *haCluster) job(jm *haJobManager, id string, d time.Duration, what string, cond func(cluster.JobDetails) bool) cluster.JobDetails {
	return waitJob(c.t, jm.client, id, d, what, cond)
}

func runningWithCheckpoints(n int) func(cluster.JobDetails) bool {
	return func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && d.Checkpoints.Completed >= n
	}
}

// waitRunID waits for weir run to print the job's ID.
func waitRunID(t *testing.T, run *proc) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := submittedID.FindStringSubmatch(run.stdout.String()); m != nil {
			return m[1]
		}
		if isClosed(run.done) {
			t.Fatalf("weir run exited: %v\n%s\n%s", run.err, run.stdout.String(), run.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("weir run printed no job ID within 60 s:\n%s", run.stderr.String())
	return ""
}

// taskManagerOf returns the TaskManager process whose log names id.
func taskManagerOf(t *testing.T, tms []*proc, id string) *proc {
	t.Helper()
	for _, tm := range tms {
		if strings.Contains(tm.stderr.String(), id) {
			return tm
		}
	}
	t.Fatalf("no taskmanager process logged the resource ID %s", id)
	return nil
}

// TestHAJobManagerKilled: a streaming exactly-once WordCount runs on two
// TaskManagers under two JobManagers; the leader is SIGKILLed (together
// with the TaskManager of the job's leader worker), the standby takes
// over and recovers the job from its latest checkpoint, a third
// JobManager joins, and the new leader is killed again. The attached weir
// run follows the job through both changes of leader, and the committed
// output equals a failure-free run's.
func TestHAJobManagerKilled(t *testing.T) {
	c := newHACluster(t)
	jm1, jm2, tms := c.start(3)
	if o, err := jm2.client.Overview(context.Background()); err != nil || o.Leader || o.LeaderREST != jm1.rest {
		t.Fatalf("standby overview: %+v, %v; want leader false and the leader's REST URL %s", o, err, jm1.rest)
	}

	run, out, clean := c.runWordCount(30000, 1500)
	id := waitRunID(t, run)
	d := c.job(jm1, id, 60*time.Second, "3 checkpoints", runningWithCheckpoints(3))

	// Kill the leader and, at the same moment, the TaskManager of the
	// job's leader worker.
	victimTM := taskManagerOf(t, tms, d.TaskManager)
	jm1.p.cmd.Process.Signal(syscall.SIGKILL)
	victimTM.cmd.Process.Signal(syscall.SIGKILL)
	killedAt := time.Now()
	if l := c.leader(30*time.Second, jm1); l != jm2 {
		t.Fatal("the standby did not take over")
	}
	t.Logf("standby leads %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	d = c.job(jm2, id, 60*time.Second, "recovered and checkpointing", runningWithCheckpoints(2))
	t.Logf("job recovered and checkpointing %v after the kill: attempt %d on %s", time.Since(killedAt).Round(time.Millisecond), d.Attempt, d.TaskManager)
	partial := committedLines(t, out)
	if len(partial) >= len(clean) {
		t.Fatalf("the job committed everything before the second kill (%d lines); make it run longer", len(partial))
	}

	jm3 := c.startJobManager()
	jm2.p.cmd.Process.Signal(syscall.SIGKILL)
	killedAt = time.Now()
	if l := c.leader(30*time.Second, jm2); l != jm3 {
		t.Fatal("the third JobManager did not take over")
	}
	c.job(jm3, id, 60*time.Second, "recovered again", runningWithCheckpoints(1))
	t.Logf("job recovered again %v after the second kill", time.Since(killedAt).Round(time.Millisecond))

	if code := run.waitExit(t, 3*time.Minute); code != 0 {
		t.Fatalf("weir run exit %d\n%s\n%s", code, run.stdout.String(), run.stderr.String())
	}
	if !strings.Contains(run.stdout.String(), "FINISHED") {
		t.Errorf("weir run did not report the end of the job:\n%s", run.stdout.String())
	}
	if diff := diffLines(committedLines(t, out), clean); diff != "" {
		t.Errorf("after two changes of leader, the committed output differs from the failure-free run: %s", diff)
	}
	// The job ended: a later leader must not run it again.
	jm4 := c.startJobManager()
	jm3.p.cmd.Process.Signal(syscall.SIGKILL)
	// A JobManager says it leads once it recovered the stored jobs.
	if c.leader(30*time.Second, jm3) != jm4 {
		t.Fatal("the fourth JobManager did not take over")
	}
	if jobs, err := jm4.client.Jobs(context.Background()); err != nil || len(jobs) != 0 {
		t.Errorf("a new leader after the job finished runs %v (%v); want no job", jobs, err)
	}
}

// TestHADeposedLeaderChangesNothing: the leader is SIGSTOPped until its
// lease expires and the standby leads and runs the job; resumed with
// SIGCONT, the old leader steps down (exits) without touching the job,
// which is not restarted again and commits exactly the failure-free
// output.
func TestHADeposedLeaderChangesNothing(t *testing.T) {
	c := newHACluster(t)
	jm1, jm2, tms := c.start(2)
	run, out, clean := c.runWordCount(24000, 1500)
	id := waitRunID(t, run)
	c.job(jm1, id, 60*time.Second, "3 checkpoints", runningWithCheckpoints(3))

	jm1.p.cmd.Process.Signal(syscall.SIGSTOP)
	stoppedAt := time.Now()
	if l := c.leader(30*time.Second, jm1); l != jm2 {
		t.Fatal("the standby did not take over from the paused leader")
	}
	d := c.job(jm2, id, 60*time.Second, "recovered and checkpointing", runningWithCheckpoints(2))
	t.Logf("job recovered under the new leader %v after SIGSTOP: attempt %d, restarts %d", time.Since(stoppedAt).Round(time.Millisecond), d.Attempt, d.Restarts)
	attempt, restarts := d.Attempt, d.Restarts
	if restarts != 0 {
		// Its first attempt failed: the old leader's attempt of the same
		// number was once taken for the new one (a status without its
		// term) and "cancelled" it.
		t.Errorf("the job restarted under the new leader before the old one woke up: %+v", d)
	}

	// The paused leader wakes up with its heartbeats long overdue: it
	// must neither restart the job nor commit anything, and step down.
	jm1.p.cmd.Process.Signal(syscall.SIGCONT)
	if code := jm1.p.waitExit(t, 30*time.Second); code == 0 {
		t.Errorf("the deposed leader exited with status 0; want an error saying it lost leadership")
	}
	if !strings.Contains(jm1.p.stderr.String(), "leadership lost") {
		t.Errorf("the deposed leader did not say that it lost leadership:\n%s", jm1.p.stderr.String())
	}
	if code := run.waitExit(t, 3*time.Minute); code != 0 {
		t.Fatalf("weir run exit %d\n%s\n%s", code, run.stdout.String(), run.stderr.String())
	}
	d = c.job(jm2, id, 10*time.Second, "FINISHED", func(d cluster.JobDetails) bool { return d.State == cluster.JobFinished })
	if d.Attempt != attempt || d.Restarts != restarts {
		t.Errorf("the job was restarted after the deposed leader woke up: attempt %d, restarts %d (before: attempt %d, restarts %d)", d.Attempt, d.Restarts, attempt, restarts)
	}
	if diff := diffLines(committedLines(t, out), clean); diff != "" {
		t.Errorf("the committed output differs from the failure-free run: %s", diff)
	}
	refused := 0
	for _, tm := range tms {
		refused += strings.Count(tm.stderr.String(), "refuses an order")
	}
	t.Logf("the TaskManagers refused %d orders of the deposed leader", refused)
}
