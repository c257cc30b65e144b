package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/storage"
)

// MiniCluster runs a job in this process with the same graphs, slots and
// tasks as a real cluster: the embedded default.
type MiniCluster struct {
	Config *config.Configuration
	Logger *slog.Logger
	// Clock is the processing-time clock of every task; nil means the
	// wall clock. Tests use a ManualClock.
	Clock Clock
	// Restore, if set, is the checkpoint the job starts from.
	Restore *CompletedCheckpoint
	// Distribution, if set, runs only this worker's share of a job spread
	// over several processes.
	Distribution *Distribution
	// Authority, if set, must confirm every checkpoint and savepoint
	// before it counts and before any sink commits what it covers: in a
	// cluster, the JobManager. A failed confirmation ends the attempt.
	Authority CommitAuthority
	// JobID names the job's directory under state.checkpoints.dir: the
	// JobID the user sees, which every attempt of a cluster job shares.
	// Empty picks a random one (Distribution.Key when distributed).
	JobID string
	// FirstAttempt is the attempt number of every subtask's first
	// execution. A cluster's worker runs the cluster's attempt n of the
	// job, so that what an attempt names after itself (a sink's
	// in-progress files) never collides with an earlier attempt that may
	// still be running somewhere.
	FirstAttempt int
	// ClusterRestarts says that a cluster restarts a failed attempt
	// whole, by its own restart strategy: a pipelined job then fails at
	// its first failure rather than restarting here too. A staged batch
	// job still runs its failed subtasks again by the job's restart
	// strategy; only when that gives up does the attempt fail.
	ClusterRestarts bool
}

// CommitAuthority is the one authority that decides which attempt of a
// job may complete checkpoints, and so commit output.
type CommitAuthority interface {
	// ConfirmCheckpoint records a written checkpoint (or savepoint) as the
	// job's newest. An error means that it does not count and must not be
	// committed: the attempt is stale (another replaced it), or its
	// outcome is unknown.
	ConfirmCheckpoint(ctx context.Context, id int64, path string, savepoint bool) error
}

// Slot is a task slot of the mini cluster; with slot sharing, one slot
// runs one subtask of every vertex in its group.
type Slot struct {
	ID    graph.SlotID
	Group string
	Tasks []string
}

// Job is a running job.
type Job struct {
	Graph *graph.ExecutionGraph
	Slots []*Slot

	cancel context.CancelFunc
	done   chan struct{}
	err    error

	savepoints chan *savepointRequest
	stopped    atomic.Bool

	mu       sync.Mutex
	tasks    []*Task
	evs      []*graph.ExecutionVertex
	restarts int
	// completed counts completed checkpoints; failedCheckpoints those
	// that were declined, timed out or could not be written.
	completed         int
	failedCheckpoints int
	storage           *checkpointStorage
}

// CheckpointHistory returns the statistics of the latest completed
// checkpoints and savepoints (Savepoint set), oldest first.
func (j *Job) CheckpointHistory() []CheckpointStats { return j.storage.history() }

// FailedCheckpointHistory returns the statistics of the latest
// checkpoints and savepoints that failed, oldest first.
func (j *Job) FailedCheckpointHistory() []CheckpointStats { return j.storage.failures() }

// LatestCheckpoint returns where the latest completed checkpoint was
// written (a path or a URI), or "" when none was or checkpoints stay in
// memory.
func (j *Job) LatestCheckpoint() string {
	if cp := j.storage.latestCheckpoint(); cp != nil {
		return cp.Path
	}
	return ""
}

// TriggerSavepoint takes a savepoint of the running job into a new
// directory under dir and returns its path. With stop, the job ends after
// the savepoint (Wait returns nil); with drain, the sources first emit the
// maximum watermark, so that every event-time window and timer fires
// before the savepoint.
func (j *Job) TriggerSavepoint(ctx context.Context, dir string, stop, drain bool) (string, error) {
	req := &savepointRequest{dir: dir, stop: stop, drain: drain, reply: make(chan savepointResult, 1)}
	select {
	case j.savepoints <- req:
	case <-j.done:
		return "", fmt.Errorf("savepoint: the job has ended: %v", j.err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case r := <-req.reply:
		return r.path, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// stop ends the job after a stop-with-savepoint.
func (j *Job) stop() {
	j.stopped.Store(true)
	j.cancel()
}

// Restarts returns how many times the job restarted after a failure.
func (j *Job) Restarts() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.restarts
}

// CompletedCheckpoints returns how many checkpoints completed.
func (j *Job) CompletedCheckpoints() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.completed
}

// FailedCheckpoints returns how many checkpoints (and savepoints) were
// declined, timed out or could not be written.
func (j *Job) FailedCheckpoints() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failedCheckpoints
}

// Wait blocks until the job ends and returns its error.
func (j *Job) Wait() error {
	<-j.done
	return j.err
}

// Done is closed when the job has ended and all its goroutines returned.
func (j *Job) Done() <-chan struct{} { return j.done }

// Cancel stops the job; Wait returns context.Canceled.
func (j *Job) Cancel() { j.cancel() }

// InjectFailure makes one running task of this process, chosen by pick
// among the n that run, fail as faulty user code would: with a panic, or
// with an error. It returns the task's name, or "" when none runs. For
// fault-injection tests (execution.fault-injection.signals).
func (j *Job) InjectFailure(withPanic bool, pick func(n int) int) string {
	j.mu.Lock()
	var running []*Task
	for _, t := range j.tasks {
		if t != nil && !isDone(t) {
			running = append(running, t)
		}
	}
	j.mu.Unlock()
	if len(running) == 0 {
		return ""
	}
	t := running[pick(len(running))]
	fault := func() {
		if withPanic {
			panic(fmt.Sprintf("fault injected into %s: panic", t.Name()))
		}
		panic(userFailure{fmt.Errorf("fault injected into %s: error", t.Name())})
	}
	go func() {
		// Ends when the task takes the fault, or ends, or after a while.
		select {
		case t.mailbox <- fault:
		case <-t.done:
		case <-time.After(10 * time.Second):
		}
	}()
	return t.Name()
}

// Metrics returns a snapshot of every subtask's counters.
func (j *Job) Metrics() []TaskMetrics {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]TaskMetrics, len(j.tasks))
	now := monoNanos()
	for i, t := range j.tasks {
		out[i] = t.metrics(now)
		out[i].Vertex = j.evs[i].Vertex.JobVertex.ID
		out[i].State = j.evs[i].Current().State()
	}
	return out
}

// AllocateSlots assigns subtasks to slots with slot sharing: subtask i of
// every vertex of a sharing group runs in the group's slot i, so a job
// needs as many slots per group as the group's highest parallelism.
func AllocateSlots(eg *graph.ExecutionGraph, available int, taskManager string) ([]*Slot, error) {
	var groups []string
	width := make(map[string]int)
	for _, v := range eg.Vertices {
		g := v.JobVertex.SlotSharingGroup
		if _, ok := width[g]; !ok {
			groups = append(groups, g)
		}
		width[g] = max(width[g], v.JobVertex.Parallelism)
	}
	need := 0
	first := make(map[string]int)
	for _, g := range groups {
		first[g] = need
		need += width[g]
	}
	if available > 0 && need > available {
		return nil, fmt.Errorf("runtime: job needs %d task slots (%s) but the cluster has %d; raise taskmanager.numberOfTaskSlots or lower the parallelism",
			need, describeGroups(groups, width), available)
	}
	slots := make([]*Slot, need)
	for _, g := range groups {
		for i := 0; i < width[g]; i++ {
			idx := first[g] + i
			slots[idx] = &Slot{ID: graph.SlotID{TaskManager: taskManager, Index: idx}, Group: g}
		}
	}
	for _, v := range eg.Vertices {
		for _, ev := range v.TaskVertices {
			s := slots[first[v.JobVertex.SlotSharingGroup]+ev.SubtaskIndex]
			s.Tasks = append(s.Tasks, ev.TaskName())
			ex := ev.Current()
			ex.Slot = s.ID
			ex.Transition(graph.StateScheduled, nil)
		}
	}
	return slots, nil
}

func describeGroups(groups []string, width map[string]int) string {
	s := ""
	for i, g := range groups {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("group %q: %d", g, width[g])
	}
	return s
}

// Submit builds the execution graph, deploys every subtask and starts the
// job. The job's goroutines stop when ctx is cancelled, the job fails for
// good, or it finishes. With checkpointing on, a failed attempt restarts
// from the latest completed checkpoint as the restart strategy allows.
func (mc *MiniCluster) Submit(ctx context.Context, jg *graph.JobGraph) (*Job, error) {
	cfg := mc.Config
	if cfg == nil {
		cfg = config.New()
	}
	logger := mc.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	eg, err := graph.BuildExecutionGraph(jg)
	if err != nil {
		return nil, err
	}
	d := &deployer{mc: mc, cfg: cfg, logger: logger, jg: jg, eg: eg, savepoints: make(chan *savepointRequest)}
	staged := d.staged()
	available := config.NumTaskSlots.Get(cfg)
	if mc.Distribution != nil || staged {
		// The cluster's scheduler placed the slots, or the job's stages
		// take turns in the slots there are.
		available = 0
	}
	slots, err := AllocateSlots(eg, available, "local")
	if err != nil {
		return nil, err
	}
	jobID := mc.JobID
	if jobID == "" {
		jobID = string(graph.NewAttemptID())
	}
	leader := true
	if dist := mc.Distribution; dist != nil {
		need := len(slots)
		if staged {
			// The stages take turns in the slots the cluster gave.
			need = len(dist.Placement)
		}
		if err := dist.check(need); err != nil {
			return nil, err
		}
		// Every worker writes its snapshots' files under the same job
		// directory; the leader writes the checkpoints.
		leader = dist.Self == 0
		if mc.JobID == "" {
			jobID = dist.Key
		}
	}
	storage, err := newCheckpointStorage(config.CheckpointsDir.Get(cfg), jobID)
	if err != nil {
		return nil, err
	}
	if mc.Authority != nil {
		// Attempts of a cluster job share its directory; each keeps
		// shared files of its own (see checkpointStorage).
		storage.shared = path.Join(jobID, "shared", fmt.Sprintf("attempt-%d", mc.FirstAttempt+1))
	}
	storage.retained = config.NumRetainedCheckpoints.Get(cfg)
	storage.threshold = int(config.StateFileThreshold.Get(cfg))
	storage.incremental = config.IncrementalCheckpoints.Get(cfg)
	jobCtx, cancel := context.WithCancel(ctx)
	job := &Job{Graph: eg, Slots: slots, cancel: cancel, done: make(chan struct{}), storage: storage}
	d.job, d.storage = job, storage
	job.savepoints = d.savepoints
	if err := d.enumerateSplits(jobCtx); err != nil {
		cancel()
		return nil, err
	}
	if mc.Restore != nil {
		storage.latest = mc.Restore
	}
	var first *attempt
	if !staged {
		first, err = d.deploy(jobCtx, 0, storage.latestCheckpoint())
		if err != nil {
			cancel()
			return nil, err
		}
	}
	go func() {
		// This goroutine owns the job: it runs attempts until one succeeds,
		// the job is cancelled, or the restart strategy gives up; each
		// attempt's goroutines end before the next starts.
		var err error
		if staged {
			err = d.runStaged(jobCtx)
		} else {
			err = d.run(jobCtx, first)
		}
		cancelled := jobCtx.Err() != nil && !job.stopped.Load()
		cancel()
		// Checkpoints stay after a failure, for --from-savepoint; after a
		// finished job, and after a cancellation unless retention was
		// asked for, they go.
		retain := cancelled && config.ExternalizedRetention.Get(cfg) == config.RetentionRetainOnCancellation
		// On a cluster the JobManager removes them once the whole job has
		// ended: a worker that finished, or was cancelled because another
		// failed, cannot know whether the job restarts from them.
		if (err == nil || cancelled) && !retain && leader && mc.Authority == nil {
			storage.discard()
		}
		if job.stopped.Load() {
			// Stopped with a savepoint: the job ends as intended.
			err = nil
		} else if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		job.err = err
		close(job.done)
	}()
	return job, nil
}

func isOperatorError(err error) bool {
	_, ok := err.(*OperatorError)
	return ok
}

// isBatch resolves execution.runtime-mode: AUTOMATIC means BATCH when every
// source is bounded.
func isBatch(cfg *config.Configuration, sg *graph.StreamGraph) bool {
	switch config.RuntimeMode.Get(cfg) {
	case "BATCH":
		return true
	case "AUTOMATIC":
		for _, n := range sg.Nodes {
			if n.Kind == "source" && !n.Bounded {
				return false
			}
		}
		return true
	}
	return false
}

// DiscardCheckpointDirs deletes job checkpoint directories (each with its
// chk-<n> and shared/ files) named relative to root, a path or URI of
// checkpoint storage: what a cluster's JobManager does once a job ended
// for good.
func DiscardCheckpointDirs(ctx context.Context, root string, names []string) error {
	loc, err := storage.Open(ctx, root)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := loc.Join(n).DeleteAll(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
