// Package verify is weir's fault-injection harness (weir verify): it runs
// a job on a real local cluster of processes — a JobManager and
// TaskManagers started from the weir binary, on 127.0.0.1 — injects faults
// at random while the job runs, and compares what the job committed with
// what a failure-free run of the same program commits. Exactly-once means
// that, after any number of faults, the two are equal as multisets of
// lines: nothing lost, nothing duplicated.
package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/cluster"
)

// Fault kinds.
const (
	// KillTaskManager SIGKILLs a TaskManager (its workers die with it)
	// and starts a replacement.
	KillTaskManager = "kill-taskmanager"
	// KillWorker SIGKILLs one worker process of the job.
	KillWorker = "kill-worker"
	// StopTaskManager SIGSTOPs a TaskManager for longer than the heartbeat
	// timeout and then SIGCONTs it: its workers go on running while the
	// JobManager restarts the job elsewhere, and must not commit.
	StopTaskManager = "stop-taskmanager"
	// PanicTask and ErrorTask make a task of a worker fail as faulty user
	// code would, with a panic or an error (SIGUSR1 and SIGUSR2 to a
	// worker; the job runs with execution.fault-injection.signals).
	PanicTask = "panic-task"
	ErrorTask = "error-task"
	// CutConnections cuts the established TCP connections to one port of
	// the cluster (a worker's data plane, the JobManager's or a
	// TaskManager's RPC server) with ss -K.
	CutConnections = "cut-connections"
	// FillStorage fills the file system of the checkpoint directory (a
	// tmpfs the harness mounts) for a few seconds: checkpoints fail with
	// "no space left on device".
	FillStorage = "fill-storage"
	// KillJobManager SIGKILLs the leading JobManager and starts a new
	// standby. Asking for it runs the cluster highly available: an etcd
	// server (Debian's etcd) and two JobManagers.
	KillJobManager = "kill-jobmanager"
	// ClockJump would move a process's processing-time clock; it is
	// reported as not injected (see unsupported).
	ClockJump = "clock-jump"
)

// Kinds are the fault kinds a run can inject.
var Kinds = []string{KillTaskManager, KillWorker, StopTaskManager, PanicTask, ErrorTask, CutConnections, FillStorage, KillJobManager}

// unsupported are the kinds named in the issue that this harness cannot
// inject yet, with the reason, so that a report says so rather than
// silently leaving them out.
var unsupported = map[string]string{
	ClockJump: "weir's processes read the system clock, which a test must not move; no per-process clock offset exists yet",
}

// Options configure a verification run.
type Options struct {
	Weir    string   // the weir binary
	Program string   // the job's executable
	Args    []string // its arguments; {output}, {run} and {checkpoints} are replaced per round
	// Committed reads what the run named run ("reference", "round_1",
	// ...) committed, as lines, for a sink that is not a directory of
	// files (a database table named after {run}); nil reads the files
	// under {output}.
	Committed func(run string) ([]string, error)
	// Defines are -D options of the job (restart strategy, checkpointing).
	Defines      []string
	Parallelism  int
	TaskManagers int
	Slots        int
	Faults       []string // kinds to draw from
	// A run ends when Duration has passed or MaxFaults were injected
	// (0: no limit), after the round that is running; at least one round
	// runs.
	Duration  time.Duration
	MaxFaults int
	// Rounds, when positive, is the number of rounds to run, whatever
	// Duration says.
	Rounds int
	// MinInterval and MaxInterval bound the pause before each fault.
	MinInterval, MaxInterval time.Duration
	// Batch: the job runs in batch mode and takes no checkpoints, so
	// faults go to it once it runs rather than after its first
	// checkpoint; what it has to lose is its finished stages.
	Batch bool
	// StopFor is how long a stopped TaskManager stays stopped; it must
	// exceed the heartbeat timeout for the fault to matter.
	StopFor                             time.Duration
	HeartbeatInterval, HeartbeatTimeout time.Duration
	// RoundTimeout bounds one run of the job.
	RoundTimeout time.Duration
	// Spread places every job over as many TaskManagers as it can
	// (cluster.evenly-spread-out-slots), so that its workers exchange
	// data over TCP and coordinate over control links.
	Spread bool
	// StorageSize is the size of the tmpfs that holds the checkpoints
	// for fill-storage.
	StorageSize int64
	// FillFor is how long fill-storage keeps the storage full.
	FillFor time.Duration
	Dir     string // where rounds, logs and evidence go
	Seed    uint64
	Log     io.Writer
}

// Report is what a run found; it is printed and written as JSON.
type Report struct {
	Program     string            `json:"program"`
	Args        []string          `json:"args"`
	Parallelism int               `json:"parallelism"`
	Seed        uint64            `json:"seed"`
	Rounds      []Round           `json:"rounds"`
	Faults      map[string]int    `json:"faults"`
	NotInjected map[string]string `json:"notInjected,omitempty"`
	Restarts    int               `json:"restarts"`
	// Recovery is the time from a fault that restarted the job until the
	// job ran again (a later attempt RUNNING, or the job FINISHED).
	RecoveryMedianMs int64  `json:"recoveryMedianMs"`
	RecoveryMaxMs    int64  `json:"recoveryMaxMs"`
	Checkpoints      int    `json:"checkpointsCompleted"`
	Expected         int    `json:"expectedLines"`
	Lost             int    `json:"lost"`
	Duplicated       int    `json:"duplicated"`
	Elapsed          string `json:"elapsed"`
	OK               bool   `json:"ok"`
}

// Round is one run of the job under faults.
type Round struct {
	Number      int            `json:"round"`
	JobID       string         `json:"jobId"`
	State       string         `json:"state"`
	Faults      map[string]int `json:"faults"`
	Restarts    int            `json:"restarts"`
	Checkpoints int            `json:"checkpointsCompleted"`
	Committed   int            `json:"committedLines"`
	Lost        int            `json:"lost"`
	Duplicated  int            `json:"duplicated"`
	Error       string         `json:"error,omitempty"`
	Evidence    string         `json:"evidence,omitempty"`
	recoveries  []time.Duration
}

// Run verifies the program and returns the report; err is for a run that
// could not be carried out at all (a cluster that does not start, a
// reference run that fails). A report with OK false is a violation.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	rep := &Report{Program: o.Program, Args: o.Args, Parallelism: o.Parallelism, Seed: o.Seed,
		Faults: map[string]int{}, NotInjected: map[string]string{}}
	for _, k := range o.Faults {
		if why, ok := unsupported[k]; ok {
			rep.NotInjected[k] = why
		}
	}
	started := time.Now()
	o.logf("reference: a failure-free run of %s at parallelism %d", filepath.Base(o.Program), o.Parallelism)
	want, err := o.reference(ctx)
	if err != nil {
		return nil, err
	}
	rep.Expected = len(want)
	o.logf("reference: %d committed lines", len(want))

	c, err := startCluster(ctx, o)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	maps.Copy(rep.NotInjected, c.unavailable)
	for k, why := range c.unavailable {
		o.logf("%s cannot be injected here: %s", k, why)
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	var recoveries []time.Duration
	total := 0
	for n := 1; ; n++ {
		r := o.round(ctx, c, rng, n, want)
		rep.Rounds = append(rep.Rounds, r)
		for k, v := range r.Faults {
			rep.Faults[k] += v
			total += v
		}
		rep.Restarts += r.Restarts
		rep.Checkpoints += r.Checkpoints
		rep.Lost += r.Lost
		rep.Duplicated += r.Duplicated
		recoveries = append(recoveries, r.recoveries...)
		o.logf("round %d: %s, faults %v, restarts %d, checkpoints %d, %d lines committed, %d lost, %d duplicated %s",
			n, r.State, r.Faults, r.Restarts, r.Checkpoints, r.Committed, r.Lost, r.Duplicated, r.Error)
		if o.Rounds > 0 {
			if n >= o.Rounds || ctx.Err() != nil {
				break
			}
			continue
		}
		if ctx.Err() != nil || time.Since(started) >= o.Duration || (o.MaxFaults > 0 && total >= o.MaxFaults) {
			break
		}
	}
	if len(recoveries) > 0 {
		slices.Sort(recoveries)
		rep.RecoveryMedianMs = recoveries[len(recoveries)/2].Milliseconds()
		rep.RecoveryMaxMs = recoveries[len(recoveries)-1].Milliseconds()
	}
	rep.Elapsed = time.Since(started).Round(time.Second).String()
	rep.OK = rep.judge()
	return rep, ctx.Err()
}

// judge says whether a run proved exactly-once: every round's job
// finished, and no line was lost or duplicated.
func (r *Report) judge() bool {
	ok := r.Lost == 0 && r.Duplicated == 0
	for _, rd := range r.Rounds {
		ok = ok && rd.State == cluster.JobFinished
	}
	return ok
}

func (o *Options) check() error {
	switch {
	case o.Weir == "" || o.Program == "":
		return errors.New("verify: no weir binary or no program")
	case o.Parallelism < 1 || o.TaskManagers < 1 || o.Slots < 1:
		return fmt.Errorf("verify: parallelism %d, %d taskmanagers with %d slots: each must be at least 1", o.Parallelism, o.TaskManagers, o.Slots)
	case o.MinInterval <= 0 || o.MaxInterval < o.MinInterval:
		return fmt.Errorf("verify: fault interval %v to %v", o.MinInterval, o.MaxInterval)
	}
	if o.Committed == nil && !slices.Contains(o.Args, "{output}") {
		return errors.New("verify: the program's arguments must contain {output}, the directory its sink commits to, so that each run gets its own")
	}
	if o.Committed != nil && !slices.ContainsFunc(o.Args, func(a string) bool { return strings.Contains(a, "{run}") }) {
		return errors.New("verify: the program's arguments must contain {run}, to name the table each run commits to")
	}
	if len(o.Faults) == 0 {
		return errors.New("verify: no fault kinds")
	}
	for _, k := range o.Faults {
		if _, ok := unsupported[k]; !ok && !slices.Contains(Kinds, k) {
			return fmt.Errorf("verify: unknown fault kind %q (known: %s)", k, strings.Join(append(slices.Clone(Kinds), KillJobManager, ClockJump), ", "))
		}
	}
	if o.StopFor <= o.HeartbeatTimeout && slices.Contains(o.Faults, StopTaskManager) {
		return fmt.Errorf("verify: a TaskManager stopped for %v, no longer than heartbeat.timeout %v, is never declared lost", o.StopFor, o.HeartbeatTimeout)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return os.MkdirAll(o.Dir, 0o755)
}

func (o *Options) logf(format string, args ...any) {
	fmt.Fprintf(o.Log, "%s verify: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// args returns the program's arguments for a run into dir, with its
// checkpoints in chkDir.
func (o *Options) args(dir, chkDir string) []string {
	r := strings.NewReplacer("{output}", filepath.Join(dir, "output"), "{run}", runName(dir), "{checkpoints}", chkDir)
	out := make([]string, len(o.Args))
	for i, a := range o.Args {
		out[i] = r.Replace(a)
	}
	return out
}

// reference runs the program once, failure-free, on the embedded mini
// cluster of its own process.
func (o *Options) reference(ctx context.Context) ([]string, error) {
	dir := filepath.Join(o.Dir, "reference")
	os.RemoveAll(dir)
	args := []string{"-p", strconv.Itoa(o.Parallelism)}
	for _, d := range o.Defines {
		args = append(args, "-D", d)
	}
	args = append(args, o.args(dir, filepath.Join(dir, "checkpoints"))...)
	cmd := exec.CommandContext(ctx, o.Program, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("verify: the failure-free reference run failed: %v\n%s", err, tail(out, 2000))
	}
	return o.committed(dir)
}

// runName names the run in dir for {run}: a name a table may carry.
func runName(dir string) string { return strings.ReplaceAll(filepath.Base(dir), "-", "_") }

// committed returns, sorted, the lines the run in dir committed.
func (o *Options) committed(dir string) ([]string, error) {
	var lines []string
	var err error
	if o.Committed != nil {
		lines, err = o.Committed(runName(dir))
	} else {
		lines, err = file.ReadLines(filepath.Join(dir, "output"))
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(lines)
	return lines, nil
}

// compare counts the lines that got lacks (lost) and has too often
// (duplicated), as multisets; both sorted.
func compare(got, want []string) (lost, duplicated int, examples []string) {
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			duplicated++
			if len(examples) < 5 {
				examples = append(examples, "+"+got[i])
			}
			i++
		case i == len(got) || got[i] > want[j]:
			lost++
			if len(examples) < 5 {
				examples = append(examples, "-"+want[j])
			}
			j++
		default:
			i++
			j++
		}
	}
	return lost, duplicated, examples
}

// round runs the job once under faults.
func (o *Options) round(ctx context.Context, c *localCluster, rng *rand.Rand, n int, want []string) Round {
	r := Round{Number: n, Faults: map[string]int{}}
	dir := filepath.Join(o.Dir, fmt.Sprintf("round-%d", n))
	os.RemoveAll(dir)
	os.MkdirAll(dir, 0o755)
	id, err := c.submit(ctx, *o, dir)
	if err != nil {
		r.State, r.Error = cluster.JobFailed, err.Error()
		r.Evidence = dir
		return r
	}
	r.JobID = id
	deadline := time.Now().Add(o.RoundTimeout)
	var d cluster.JobDetails
	poll := func() bool {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got, err := c.rest.Job(pctx, id)
		if err == nil {
			d = got
		}
		return err == nil && cluster.IsTerminalJobState(d.State)
	}
	ended := false
	for !ended && time.Now().Before(deadline) && ctx.Err() == nil {
		pause := o.MinInterval + time.Duration(rng.Int64N(int64(o.MaxInterval-o.MinInterval)+1))
		until := time.Now().Add(pause)
		for !ended && time.Now().Before(until) {
			ended = poll()
			sleep(ctx, 50*time.Millisecond)
		}
		if ended || d.State != cluster.JobRunning || d.Checkpoints.Completed == 0 && !o.Batch {
			// Faults go to a running job that has something to lose.
			continue
		}
		kind := o.Faults[rng.IntN(len(o.Faults))]
		if _, no := unsupported[kind]; no {
			continue
		}
		if _, no := c.unavailable[kind]; no {
			continue
		}
		term, attempt := d.LeaderTerm, d.Attempt
		at := time.Now()
		what, err := c.inject(ctx, *o, rng, kind, d)
		if err != nil {
			o.logf("round %d: %s not injected: %v", n, kind, err)
			continue
		}
		r.Faults[kind]++
		o.logf("round %d: %s (%s) at attempt %d after %d checkpoints", n, kind, what, attempt, d.Checkpoints.Completed)
		// Recovery: until a later attempt runs, or the job ended. A fault
		// that did not touch the job (a worker that had just ended) does
		// not count.
		for time.Since(at) < o.RoundTimeout && ctx.Err() == nil {
			ended = poll()
			later := d.LeaderTerm > term || d.LeaderTerm == term && d.Attempt > attempt
			if ended || later && d.State == cluster.JobRunning {
				if later {
					r.recoveries = append(r.recoveries, time.Since(at))
				}
				break
			}
			sleep(ctx, 50*time.Millisecond)
		}
	}
	for !ended && time.Now().Before(deadline) && ctx.Err() == nil {
		ended = poll()
		sleep(ctx, 100*time.Millisecond)
	}
	r.State, r.Restarts, r.Checkpoints = d.State, d.Restarts, d.Checkpoints.Completed
	if !ended {
		r.State = "TIMEOUT"
		r.Error = fmt.Sprintf("the job did not end within %v (state %s)", o.RoundTimeout, d.State)
		c.rest.CancelJob(context.Background(), id)
	} else if d.State != cluster.JobFinished {
		r.Error = d.Error
	}
	got, err := o.committed(dir)
	if err != nil {
		r.Error = strings.TrimSpace(r.Error + "; reading the output: " + err.Error())
	}
	r.Committed = len(got)
	var examples []string
	r.Lost, r.Duplicated, examples = compare(got, want)
	if len(examples) > 0 {
		r.Error = strings.TrimSpace(fmt.Sprintf("%s; e.g. %q", r.Error, examples))
	}
	if r.Lost > 0 || r.Duplicated > 0 || r.State != cluster.JobFinished {
		r.Evidence = dir
		c.saveLogs(dir)
		if c.storage != "" {
			// Out of the tmpfs, which the end of the run unmounts.
			exec.Command("cp", "-a", c.checkpointDir(dir), filepath.Join(dir, "checkpoints")).Run()
		}
	} else {
		os.RemoveAll(dir)
	}
	if c.storage != "" {
		os.RemoveAll(c.checkpointDir(dir))
	}
	return r
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// localCluster is the JobManager and TaskManagers of a run.
type localCluster struct {
	dir      string
	weir     string
	rpc      string
	rest     *cluster.RESTClient
	restAddr string
	defines  []string
	jms      []*jobManager
	jmArgs   []string // of weir jobmanager
	jmSeq    int
	// ha is set when the cluster runs highly available (for
	// kill-jobmanager): etcd, haConfig for every process, and a REST
	// client that follows the leader.
	ha *haParts
	// quit ends the goroutines that resume stopped TaskManagers; wg
	// waits for them.
	quit chan struct{}
	wg   sync.WaitGroup

	// storage is the tmpfs mounted for the checkpoints, "" when none;
	// unavailable names the fault kinds this machine cannot inject, with
	// the reason.
	storage     string
	unavailable map[string]string

	mu  sync.Mutex
	tms []*taskManager
	seq int
}

// checkpointDir is where the round in dir keeps its checkpoints.
func (c *localCluster) checkpointDir(dir string) string {
	if c.storage != "" {
		return filepath.Join(c.storage, filepath.Base(dir))
	}
	return filepath.Join(dir, "checkpoints")
}

type taskManager struct {
	id   string // resource ID
	cmd  *exec.Cmd
	done chan struct{}
}

// What weir jobmanager and weir run print.
var (
	jmAddrs        = regexp.MustCompile(`jobmanager rpc=(\S+) rest=(\S+)`)
	submittedJobID = regexp.MustCompile(`submitted with JobID ([0-9a-f]+)`)
)

func startCluster(ctx context.Context, o Options) (*localCluster, error) {
	c := &localCluster{dir: filepath.Join(o.Dir, "cluster"), weir: o.Weir, quit: make(chan struct{}), defines: []string{
		"heartbeat.interval=" + o.HeartbeatInterval.String(),
		"heartbeat.timeout=" + o.HeartbeatTimeout.String(),
	}}
	os.RemoveAll(c.dir)
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	c.unavailable = map[string]string{}
	if slices.Contains(o.Faults, FillStorage) {
		dir := filepath.Join(o.Dir, "storage")
		os.MkdirAll(dir, 0o755)
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", o.StorageSize), "tmpfs", dir).CombinedOutput()
		if err != nil {
			c.unavailable[FillStorage] = fmt.Sprintf("cannot mount a tmpfs for the checkpoints: %v: %s", err, strings.TrimSpace(string(out)))
		} else {
			c.storage = dir
		}
	}
	if slices.Contains(o.Faults, CutConnections) {
		if _, err := exec.LookPath("ss"); err != nil {
			c.unavailable[CutConnections] = "no ss command (iproute2) to cut connections with"
		}
	}
	args := []string{"jobmanager", "--rpc-port", "0", "--rest-port", "0"}
	for _, d := range c.defines {
		args = append(args, "-D", d)
	}
	if o.Spread {
		args = append(args, "-D", "cluster.evenly-spread-out-slots=true")
	}
	if slices.Contains(o.Faults, KillJobManager) {
		if err := c.startHA(ctx); err != nil {
			c.unavailable[KillJobManager] = err.Error()
		} else {
			args = append(args, "--config", c.ha.config)
		}
	}
	c.jmArgs = args
	jm, err := c.startJobManager()
	if err != nil {
		c.stop()
		return nil, err
	}
	c.rpc, c.restAddr = jm.rpc, strings.TrimPrefix(jm.rest, "http://")
	if c.rest, err = cluster.NewRESTClient(c.restAddr, cluster.Security{}); err != nil {
		c.stop()
		return nil, err
	}
	if c.ha != nil {
		if err := c.followLeader(ctx, jm); err != nil {
			c.stop()
			return nil, err
		}
	}
	for range o.TaskManagers {
		if err := c.startTaskManager(o.Slots); err != nil {
			c.stop()
			return nil, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ov, err := c.rest.Overview(ctx)
		if err == nil && ov.TaskManagers == o.TaskManagers {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("verify: %d taskmanagers did not register within 30 s", o.TaskManagers)
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

func (c *localCluster) startTaskManager(slots int) error {
	c.mu.Lock()
	c.seq++
	id := fmt.Sprintf("tm-%d", c.seq)
	c.mu.Unlock()
	args := []string{"taskmanager", "--slots", strconv.Itoa(slots), "--rpc-port", "0",
		"-D", "taskmanager.resource-id=" + id}
	if c.ha != nil {
		args = append(args, "--config", c.ha.config)
	} else {
		args = append(args, "--jobmanager", c.rpc)
	}
	for _, d := range c.defines {
		args = append(args, "-D", d)
	}
	logFile, err := os.Create(filepath.Join(c.dir, id+".log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(c.weir, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("verify: starting taskmanager %s: %w", id, err)
	}
	tm := &taskManager{id: id, cmd: cmd, done: make(chan struct{})}
	go func() {
		// Owned by the process: ends when it exits.
		cmd.Wait()
		close(tm.done)
	}()
	c.mu.Lock()
	c.tms = append(c.tms, tm)
	c.mu.Unlock()
	return nil
}

// stop ends every process of the cluster, workers included (they die
// with their TaskManagers).
func (c *localCluster) stop() {
	close(c.quit)
	c.wg.Wait()
	c.mu.Lock()
	tms := c.tms
	c.mu.Unlock()
	for _, tm := range tms {
		tm.cmd.Process.Signal(syscall.SIGCONT)
		tm.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, tm := range tms {
		select {
		case <-tm.done:
		case <-time.After(15 * time.Second):
			tm.cmd.Process.Kill()
			<-tm.done
		}
	}
	c.mu.Lock()
	jms := c.jms
	c.mu.Unlock()
	for _, jm := range jms {
		jm.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-jm.done:
		case <-time.After(15 * time.Second):
			jm.cmd.Process.Kill()
			<-jm.done
		}
	}
	if c.rest != nil {
		c.rest.Close()
	}
	c.stopHA()
	if c.storage != "" {
		exec.Command("umount", c.storage).Run()
	}
}

// submit starts the job with weir run -d and returns its ID.
func (c *localCluster) submit(ctx context.Context, o Options, dir string) (string, error) {
	args := []string{"run", "-d", "-p", strconv.Itoa(o.Parallelism)}
	if c.ha != nil {
		args = append(args, "--config", c.ha.config)
	} else {
		args = append(args, "--jobmanager", c.restAddr)
	}
	for _, d := range o.Defines {
		args = append(args, "-D", d)
	}
	args = append(args, "-D", "execution.fault-injection.signals=true")
	args = append(append(args, o.Program), o.args(dir, c.checkpointDir(dir))...)
	out, err := exec.CommandContext(ctx, c.weir, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("weir run: %v\n%s", err, tail(out, 2000))
	}
	m := submittedJobID.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("weir run printed no JobID:\n%s", tail(out, 2000))
	}
	return string(m[1]), nil
}

// inject applies one fault of the given kind to the job's processes and
// says what it hit.
func (c *localCluster) inject(ctx context.Context, o Options, rng *rand.Rand, kind string, d cluster.JobDetails) (string, error) {
	switch kind {
	case KillTaskManager, StopTaskManager:
		tm := c.victim(rng, d)
		if tm == nil {
			return "", errors.New("no live taskmanager")
		}
		if kind == KillTaskManager {
			if err := tm.cmd.Process.Kill(); err != nil {
				return "", err
			}
			<-tm.done
			c.remove(tm)
			return tm.id, c.startTaskManager(o.Slots)
		}
		if err := tm.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return "", err
		}
		// Resumed in the background, so that the recovery is timed while
		// it is stopped.
		c.after(o.StopFor, func() { tm.cmd.Process.Signal(syscall.SIGCONT) })
		return tm.id + " for " + o.StopFor.String(), nil
	case KillWorker:
		pids := workerPIDs(d.ID, d.Attempt)
		if len(pids) == 0 {
			return "", fmt.Errorf("no worker process of attempt %d found", d.Attempt)
		}
		pid := pids[rng.IntN(len(pids))]
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return "", err
		}
		return "pid " + strconv.Itoa(pid), nil
	case PanicTask, ErrorTask:
		pids := workerPIDs(d.ID, d.Attempt)
		if len(pids) == 0 {
			return "", fmt.Errorf("no worker process of attempt %d found", d.Attempt)
		}
		pid := pids[rng.IntN(len(pids))]
		sig := syscall.SIGUSR1
		if kind == ErrorTask {
			sig = syscall.SIGUSR2
		}
		if err := syscall.Kill(pid, sig); err != nil {
			return "", err
		}
		return "worker pid " + strconv.Itoa(pid), nil
	case KillJobManager:
		return c.killLeader(ctx)
	case CutConnections:
		targets := map[string]string{}
		if _, port, err := net.SplitHostPort(c.leaderRPC(ctx)); err == nil {
			targets[port] = "the jobmanager's RPC"
		}
		for _, w := range d.Workers {
			if _, port, err := net.SplitHostPort(w.DataAddress); err == nil {
				targets[port] = fmt.Sprintf("worker %d's data plane", w.Index)
			}
		}
		ports := slices.Sorted(maps.Keys(targets))
		if len(ports) == 0 {
			return "", errors.New("no port to cut")
		}
		port := ports[rng.IntN(len(ports))]
		// Both ends are on this machine: the sockets that dialed the port
		// and those that accepted on it.
		out, err := exec.Command("ss", "-K", "-t", "-n", "( dport = :"+port+" or sport = :"+port+" )").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("ss -K: %v: %s", err, strings.TrimSpace(string(out)))
		}
		// ss prints a header, then a line per socket it closed.
		n := max(strings.Count(string(out), "\n")-1, 0)
		if n == 0 {
			return "", fmt.Errorf("no connection of %s (port %s) to cut", targets[port], port)
		}
		return fmt.Sprintf("%d sockets of %s (port %s)", n, targets[port], port), nil
	case FillStorage:
		if c.storage == "" {
			return "", errors.New(c.unavailable[FillStorage])
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(c.storage, &st); err != nil {
			return "", err
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		filler := filepath.Join(c.storage, "filler")
		f, err := os.Create(filler)
		if err != nil {
			return "", err
		}
		err = syscall.Fallocate(int(f.Fd()), 0, 0, free)
		f.Close()
		if err != nil {
			os.Remove(filler)
			return "", fmt.Errorf("fallocate: %w", err)
		}
		c.after(o.FillFor, func() { os.Remove(filler) })
		return fmt.Sprintf("%d MiB for %v", free>>20, o.FillFor), nil
	}
	return "", fmt.Errorf("unknown fault kind %q", kind)
}

// victim picks a TaskManager at random among those that run a worker of
// the job's current attempt, or among all when none is known.
func (c *localCluster) victim(rng *rand.Rand, d cluster.JobDetails) *taskManager {
	c.mu.Lock()
	defer c.mu.Unlock()
	var hosts, all []*taskManager
	for _, tm := range c.tms {
		if isClosed(tm.done) {
			continue
		}
		all = append(all, tm)
		for _, w := range d.Workers {
			if w.TaskManager == tm.id {
				hosts = append(hosts, tm)
				break
			}
		}
	}
	if len(hosts) > 0 {
		return hosts[rng.IntN(len(hosts))]
	}
	if len(all) > 0 {
		return all[rng.IntN(len(all))]
	}
	return nil
}

func (c *localCluster) remove(tm *taskManager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tms = slices.DeleteFunc(c.tms, func(t *taskManager) bool { return t == tm })
}

// after undoes a fault after d, or at once when the run stops.
func (c *localCluster) after(d time.Duration, undo func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-time.After(d):
		case <-c.quit:
		}
		undo()
	}()
}

// saveLogs copies the cluster's logs so far next to a failed round's
// output, as evidence.
func (c *localCluster) saveLogs(dir string) {
	entries, _ := os.ReadDir(c.dir)
	os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(c.dir, e.Name())); err == nil {
			os.WriteFile(filepath.Join(dir, "logs", e.Name()), data, 0o644)
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// workerPIDs returns the live processes whose environment makes them a
// worker of the job's attempt.
func workerPIDs(jobID string, attempt int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	wantJob, wantAttempt := "WEIR_JOB_ID="+jobID, "WEIR_ATTEMPT="+strconv.Itoa(attempt)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		vars := strings.Split(string(environ), "\x00")
		if slices.Contains(vars, wantJob) && slices.Contains(vars, wantAttempt) && !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z'
}

// WriteJSON writes the report.
func (r *Report) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Summary is the report for people.
func (r *Report) Summary() string {
	var b strings.Builder
	verdict := "OK: nothing lost, nothing duplicated"
	if !r.OK {
		verdict = "VIOLATION"
	}
	fmt.Fprintf(&b, "weir verify: %s\n", verdict)
	fmt.Fprintf(&b, "  rounds %d in %s, parallelism %d, seed %d\n", len(r.Rounds), r.Elapsed, r.Parallelism, r.Seed)
	kinds := make([]string, 0, len(r.Faults))
	total := 0
	for k, v := range r.Faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
		total += v
	}
	slices.Sort(kinds)
	fmt.Fprintf(&b, "  faults %d: %s\n", total, strings.Join(kinds, ", "))
	for k, why := range r.NotInjected {
		fmt.Fprintf(&b, "  not injected: %s (%s)\n", k, why)
	}
	fmt.Fprintf(&b, "  restarts %d, recovery median %d ms, max %d ms, checkpoints completed %d\n",
		r.Restarts, r.RecoveryMedianMs, r.RecoveryMaxMs, r.Checkpoints)
	fmt.Fprintf(&b, "  expected %d lines per round; lost %d, duplicated %d\n", r.Expected, r.Lost, r.Duplicated)
	for _, rd := range r.Rounds {
		if rd.Evidence != "" {
			fmt.Fprintf(&b, "  round %d (%s): %s; evidence in %s\n", rd.Number, rd.State, rd.Error, rd.Evidence)
		}
	}
	return b.String()
}
