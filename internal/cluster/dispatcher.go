package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster/rpcpb"
	"github.com/weirproject/weir/internal/runtime"
)

// Job states, as Flink names them.
const (
	JobCreated    = "CREATED"
	JobRunning    = "RUNNING"
	JobFinished   = "FINISHED"
	JobFailed     = "FAILED"
	JobCancelling = "CANCELLING"
	JobCanceled   = "CANCELED"
	JobRestarting = "RESTARTING"
)

// IsTerminalJobState reports whether a job in state s has ended for good.
func IsTerminalJobState(s string) bool {
	return s == JobFinished || s == JobFailed || s == JobCanceled
}

// Attempt states a TaskManager reports.
const (
	attemptDeploying = "DEPLOYING"
	attemptRunning   = "RUNNING"
)

// JobSubmission is the body of POST /jobs.
type JobSubmission struct {
	// Artifact is the hex SHA-256 of an executable uploaded with
	// POST /artifacts.
	Artifact string   `json:"artifact"`
	Args     []string `json:"args"`
	// Parallelism is passed to the program as -p when positive.
	Parallelism int `json:"parallelism"`
	// SavepointPath, when set, is where the first attempt starts from.
	SavepointPath         string `json:"savepointPath,omitempty"`
	AllowNonRestoredState bool   `json:"allowNonRestoredState,omitempty"`
	// Options are key=value settings passed to the program as -D; the
	// JobManager reads restart-strategy.*, slot.request.timeout and
	// cluster.evenly-spread-out-slots from them (and from -D arguments in
	// Args).
	Options []string `json:"options,omitempty"`
	// Plan is the job graph the program printed with --plan=json.
	Plan json.RawMessage `json:"plan"`
}

// JobPlan is the part of a program's --plan=json that the cluster uses.
type JobPlan struct {
	JobName  string
	Vertices []struct {
		ID               string
		Name             string
		Parallelism      int
		MaxParallelism   int
		SlotSharingGroup string
		// Operators are the chained operators, head first; Inputs index
		// Edges (GET /jobs/{id}/plan reads both).
		Operators []struct {
			Name string
			Kind string
		}
		Inputs []int
	}
	Edges []struct {
		Source       string
		Partitioning string
	}
	Fingerprint string
	// Staged: a batch job whose stages take turns in the slots it gets,
	// so that it runs in fewer slots than SlotsNeeded.
	Staged bool
	// Configuration is the job's configuration as its program runs it:
	// its -D options and flags, then what its code set (checkpointing,
	// restart strategy, ...). Programs of older weir versions send none.
	Configuration map[string]string
}

// SlotsNeeded is the number of slots a job needs with slot sharing: in
// each slot sharing group one slot per subtask of the group's widest
// vertex, summed over the groups.
func (p *JobPlan) SlotsNeeded() int {
	widest := make(map[string]int)
	for _, v := range p.Vertices {
		widest[v.SlotSharingGroup] = max(widest[v.SlotSharingGroup], v.Parallelism)
	}
	n := 0
	for _, w := range widest {
		n += w
	}
	return n
}

// firstSlots returns the job slot number of the first slot of each slot
// sharing group. The job's slots are numbered as runtime.AllocateSlots
// numbers them: the groups in the order in which they first appear in
// Vertices, each taking as many consecutive numbers as its widest
// vertex's parallelism.
func (p *JobPlan) firstSlots() map[string]int {
	width := make(map[string]int)
	var groups []string
	for _, v := range p.Vertices {
		if _, ok := width[v.SlotSharingGroup]; !ok {
			groups = append(groups, v.SlotSharingGroup)
		}
		width[v.SlotSharingGroup] = max(width[v.SlotSharingGroup], v.Parallelism)
	}
	first := make(map[string]int, len(groups))
	n := 0
	for _, g := range groups {
		first[g] = n
		n += width[g]
	}
	return first
}

// SlotOf returns the job slot number, from 0 to SlotsNeeded()-1, in which
// subtask subtask of the vertex Vertices[vertex] runs: the first slot of
// the vertex's slot sharing group plus the subtask index.
func (p *JobPlan) SlotOf(vertex, subtask int) int {
	return p.firstSlots()[p.Vertices[vertex].SlotSharingGroup] + subtask
}

// placeWorkers turns the slots allocated to an attempt into its workers:
// job slot k is slots[k]; the workers are the distinct TaskManagers in the
// order in which their first slot appears, so that worker 0 (the leader)
// holds job slot 0; placement[k] is the worker index of job slot k.
func placeWorkers(slots []SlotID) (taskManagers []string, placement []int) {
	index := make(map[string]int)
	placement = make([]int, len(slots))
	for k, s := range slots {
		i, ok := index[s.ResourceID]
		if !ok {
			i = len(taskManagers)
			index[s.ResourceID] = i
			taskManagers = append(taskManagers, s.ResourceID)
		}
		placement[k] = i
	}
	return taskManagers, placement
}

// JobSubmitted is the answer of POST /jobs.
type JobSubmitted struct {
	JobID string `json:"jobid"`
}

// JobDetails is the answer of GET /jobs/{id}.
type JobDetails struct {
	ID    string `json:"jid"`
	Name  string `json:"name"`
	State string `json:"state"`
	// Flink's JobDetailsInfo fields: a job can be stopped with a
	// savepoint; the time of the answer; when the job entered each state
	// (0 for states it never was in); its subtasks by execution state.
	IsStoppable    bool             `json:"isStoppable"`
	MaxParallelism int              `json:"maxParallelism"`
	Now            int64            `json:"now"`
	Timestamps     map[string]int64 `json:"timestamps"`
	StatusCounts   map[string]int   `json:"status-counts"`
	// Plan is the job's plan, as GET /jobs/{id}/plan has it; JobType its
	// type, STREAMING or BATCH (later Flink's "job-type").
	Plan    PlanJSON `json:"plan"`
	JobType string   `json:"job-type"`
	// Attempt counts the deployments of the job, from 1; 0 before the
	// first.
	Attempt  int `json:"attempt"`
	Restarts int `json:"restarts"`
	// LeaderTerm is the leadership term of the JobManager that runs the
	// job (high availability; 0 without): a new leader numbers attempts
	// from 1 again, so (LeaderTerm, Attempt) orders the attempts.
	LeaderTerm int64 `json:"leaderTerm,omitempty"`
	// TaskManager runs the leader worker of the current attempt (worker 0,
	// which holds job slot 0 and coordinates checkpoints and savepoints).
	TaskManager        string `json:"taskmanager,omitempty"`
	TaskManagerAddress string `json:"taskmanagerAddress,omitempty"`
	SlotsNeeded        int    `json:"slotsNeeded"`
	// Workers are the worker processes of the current (or last) attempt,
	// one per TaskManager that holds slots of it.
	Workers []WorkerJSON `json:"workers,omitempty"`
	// Times are Unix milliseconds; EndTime is -1 while the job runs.
	StartTime   int64             `json:"start-time"`
	EndTime     int64             `json:"end-time"`
	Duration    int64             `json:"duration"`
	Vertices    []JobVertexJSON   `json:"vertices"`
	Checkpoints JobCheckpointJSON `json:"checkpoints"`
	// Waiting says why a CREATED or RESTARTING job does not run yet.
	Waiting string `json:"waiting,omitempty"`
	// Error is why the job failed, or why its last attempt did.
	Error string `json:"error,omitempty"`
}

// WorkerJSON is one worker of a job attempt in GET /jobs/{id}.
type WorkerJSON struct {
	Index              int    `json:"index"`
	TaskManager        string `json:"taskmanager"`
	TaskManagerAddress string `json:"host"`
	// State is the worker's: DEPLOYING, RUNNING, FINISHED, FAILED,
	// CANCELED, or LOST when its TaskManager was lost.
	State string `json:"state"`
	// DataAddress is where the worker accepts data connections from the
	// other workers of its attempt, once it has reported it.
	DataAddress string `json:"dataAddress,omitempty"`
	// StartTime is when the worker started its tasks, having met its
	// peers (Unix milliseconds; 0 before): the time from the job's
	// RUNNING timestamp to the latest worker's is deployment (starting
	// the processes, their rendezvous).
	StartTime int64  `json:"start-time,omitempty"`
	Error     string `json:"error,omitempty"`
}

// JobVertexJSON is one vertex in GET /jobs/{id}.
type JobVertexJSON struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Parallelism      int    `json:"parallelism"`
	MaxParallelism   int    `json:"maxParallelism"`
	SlotSharingGroup string `json:"slotSharingGroup"`
	// Status, the times and Tasks (subtasks by execution state) are
	// Flink's JobDetailsInfo vertex fields.
	Status    string         `json:"status"`
	StartTime int64          `json:"start-time"`
	EndTime   int64          `json:"end-time"`
	Duration  int64          `json:"duration"`
	Tasks     map[string]int `json:"tasks"`
	// TaskManager runs subtask 0.
	TaskManager string            `json:"taskmanager,omitempty"`
	Metrics     VertexMetricsJSON `json:"metrics"`
	// Subtasks says where each subtask runs and in which attempt.
	Subtasks []SubtaskJSON `json:"subtasks,omitempty"`
}

// SubtaskJSON is one subtask of a vertex in GET /jobs/{id}.
type SubtaskJSON struct {
	Subtask            int    `json:"subtask"`
	Attempt            int    `json:"attempt"`
	TaskManager        string `json:"taskmanager"`
	TaskManagerAddress string `json:"host"`
}

// VertexMetricsJSON holds a vertex's counters, summed over its subtasks
// (Flink's IOMetricsInfo).
type VertexMetricsJSON = IOMetricsJSON

// JobCheckpointJSON counts a job's completed checkpoints over all its
// attempts, and names the latest.
type JobCheckpointJSON struct {
	Completed int    `json:"completed"`
	Latest    string `json:"latest,omitempty"`
}

// job is one submitted job. The dispatcher's mutex guards the fields
// below events.
type job struct {
	id   string
	name string
	sub  JobSubmission
	plan JobPlan
	// cfg is the job's configuration (jobConfig), read once at submission.
	cfg         *config.Configuration
	slots       int
	slotTimeout time.Duration
	spread      bool // cluster.evenly-spread-out-slots
	restart     runtime.RestartStrategy
	events      chan jobEvent // to the job's goroutine
	term        int64         // of the JobManager that runs it

	state         string
	attempt       int
	restarts      int
	tm, tmAddress string // of the leader worker
	workers       []*attemptWorker
	placement     []int // worker index by job slot
	dataToken     string
	live          bool // the attempt's workers may run; false once it was stopped
	waiting       string
	vertices      []JobVertexJSON
	baseChk       int // checkpoints completed by earlier attempts
	attemptChk    int
	// latest is where the job restarts from: the newest checkpoint that
	// the JobManager confirmed (confirmCheckpoint), never one a worker
	// merely reported, so that no restart replays output already
	// committed. confirmedID is the newest checkpoint the current attempt
	// had confirmed.
	latest      string
	confirmedID int64
	// chkRoot is the checkpoint storage the attempts write under, once
	// one confirmed a checkpoint; the JobManager empties it of the job's
	// directories when the job ends for good.
	chkRoot string
	// retainOnCancel is the retention the job's program configured, as
	// its latest confirmation reported it.
	retainOnCancel bool
	err            string
	created, end   time.Time
	cancel         bool // requested
	terminalSent   int  // attempt whose end was passed to the goroutine
	triggers       map[string]*savepointTrigger
	// failures are the latest failures of the job's attempts, oldest
	// first, at most maxFailureHistory (GET /jobs/{id}/exceptions).
	failures      []jobFailure
	failuresTotal int
	attemptStart  time.Time

	// Metrics of the current attempt's subtasks by vertex ID and subtask
	// index, as the workers last reported them (zero until they did).
	subtaskMetrics map[string][]SubtaskMetricsJSON
	// ckHistory holds the latest completed checkpoints of all attempts,
	// oldest first; ckFailed counts the failed checkpoints of earlier
	// attempts and ckFailedAttempt those of the current one.
	ckHistory                 []CheckpointStatsJSON
	ckFailed, ckFailedAttempt int
	// restored is the checkpoint or savepoint the current attempt
	// started from, if any.
	restored *restoredCheckpoint
}

// restoredCheckpoint is what an attempt restored.
type restoredCheckpoint struct {
	id        int64
	path      string
	at        time.Time
	savepoint bool
}

// maxCheckpointHistory is how many completed checkpoints a job keeps for
// GET /jobs/{id}/checkpoints (Flink's web.checkpoints.history).
const maxCheckpointHistory = 10

type jobEvent struct {
	kind    string // "ended", "lost", "cancel"
	attempt int
	state   string // of an ended attempt
	err     string
}

// attemptWorker is one worker process of a job attempt: the part of the
// attempt that runs in the slots of one TaskManager.
type attemptWorker struct {
	index       int
	tm, address string
	state       string           // DEPLOYING until the TaskManager reports it; LOST with its TaskManager
	status      *rpcpb.JobStatus // last reported
	dataAddress string
	cancelSent  bool
}

func (w *attemptWorker) ended() bool { return IsTerminalJobState(w.state) || w.state == workerLost }

// workerLost is the state of a worker whose TaskManager was lost.
const workerLost = "LOST"

// dispatcher accepts jobs and runs each of them on one or more
// TaskManagers.
type dispatcher struct {
	jm *JobManager

	mu    sync.Mutex
	jobs  map[string]*job
	order []string // submission order
}

func newDispatcher(jm *JobManager) *dispatcher {
	return &dispatcher{jm: jm, jobs: make(map[string]*job)}
}

// errNotFound is a job ID the dispatcher does not know.
var errNotFound = errors.New("not found")

// submit checks a submission and starts the job. With high
// availability, the submission is stored before it is acknowledged.
func (d *dispatcher) submit(sub JobSubmission) (string, error) {
	j, err := d.newJob(sub)
	if err != nil {
		return "", err
	}
	j.id = newID() + newID()
	if d.jm.ha != nil {
		if err := d.jm.persistJob(j); err != nil {
			return "", fmt.Errorf("%w: storing the job for high availability: %v", errUnavailable, err)
		}
	}
	d.start(j)
	d.jm.log.Info("job submitted", "job", j.id, "name", j.name, "slots", j.slots, "artifact", sub.Artifact)
	return j.id, nil
}

// errUnavailable marks a submission refused for a passing reason (no
// leadership, etcd unreachable): the client may retry.
var errUnavailable = errors.New("unavailable")

// recover starts a job that an earlier leader accepted, under its ID,
// from restore (its latest recorded checkpoint; "" = as submitted).
func (d *dispatcher) recover(sj storedJob, restore string) error {
	j, err := d.newJob(sj.Submission)
	if err != nil {
		return err
	}
	j.id = sj.JobID
	j.latest = restore
	if root := checkpointRoot(restore, j.id); root != "" {
		j.chkRoot = root
	}
	d.start(j)
	return nil
}

// start registers a new job and runs it.
func (d *dispatcher) start(j *job) {
	j.term = d.jm.leaderTerm()
	d.mu.Lock()
	d.jobs[j.id] = j
	d.order = append(d.order, j.id)
	d.mu.Unlock()
	d.jm.wg.Add(1)
	go d.run(j)
}

// newJob checks a submission and makes a job of it, without an ID.
func (d *dispatcher) newJob(sub JobSubmission) (*job, error) {
	if !sha256Hex.MatchString(sub.Artifact) {
		return nil, fmt.Errorf("artifact %q is not a hex SHA-256", sub.Artifact)
	}
	if !d.jm.artifacts.has(sub.Artifact) {
		return nil, fmt.Errorf("artifact %s not found: upload it with POST /artifacts first", sub.Artifact)
	}
	if sub.Parallelism < 0 {
		return nil, fmt.Errorf("parallelism %d must not be negative", sub.Parallelism)
	}
	var plan JobPlan
	if err := json.Unmarshal(sub.Plan, &plan); err != nil {
		return nil, fmt.Errorf("plan: %v", err)
	}
	if len(plan.Vertices) == 0 {
		return nil, errors.New("plan: the job graph has no vertices")
	}
	for _, v := range plan.Vertices {
		if v.Parallelism < 1 {
			return nil, fmt.Errorf("plan: vertex %q has parallelism %d", v.Name, v.Parallelism)
		}
	}
	sub, dropped := withoutSecurityOptions(sub)
	if len(dropped) > 0 {
		d.jm.log.Info("dropped security options from the job's -D: workers need none, and their command lines are visible to local users",
			"keys", dropped)
	}
	cfg, err := jobConfig(sub, plan)
	if err != nil {
		return nil, err
	}
	slotTimeout := d.jm.opts.SlotRequestTimeout
	if cfg.IsSet(config.SlotRequestTimeout.Key) {
		slotTimeout = config.SlotRequestTimeout.Get(cfg)
	}
	spread := d.jm.opts.EvenlySpreadOutSlots
	if cfg.IsSet(config.ClusterEvenlySpreadOutSlots.Key) {
		spread = config.ClusterEvenlySpreadOutSlots.Get(cfg)
	}
	j := &job{
		name:        plan.JobName,
		sub:         sub,
		plan:        plan,
		cfg:         cfg,
		slots:       plan.SlotsNeeded(),
		slotTimeout: slotTimeout,
		spread:      spread,
		restart:     restartStrategyFrom(cfg),
		events:      make(chan jobEvent, 16),
		state:       JobCreated,
		created:     time.Now(),
		triggers:    make(map[string]*savepointTrigger),
	}
	for _, v := range plan.Vertices {
		j.vertices = append(j.vertices, JobVertexJSON{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism,
			SlotSharingGroup: v.SlotSharingGroup})
	}
	return j, nil
}

// jobConfig reads the configuration of a submission: its Options, then
// -D arguments of the program, which the program applies last, then the
// configuration the program's plan carries, which holds both and what the
// program's code set after them. A key of the plan's that this
// JobManager does not know (a program of another weir version) is left
// to the workers; a known key with a bad value is an error.
func jobConfig(sub JobSubmission, plan JobPlan) (*config.Configuration, error) {
	cfg := config.New()
	defs := slices.Clone(sub.Options)
	for i := 0; i < len(sub.Args); i++ {
		a := sub.Args[i]
		switch {
		case (a == "-D" || a == "--D") && i+1 < len(sub.Args):
			defs = append(defs, sub.Args[i+1])
			i++
		case strings.HasPrefix(a, "-D="), strings.HasPrefix(a, "--D="):
			_, v, _ := strings.Cut(a, "=")
			defs = append(defs, v)
		case a == "--":
			i = len(sub.Args)
		}
	}
	for _, def := range defs {
		k, v, err := config.ParseDefinition(def)
		if err != nil {
			return nil, fmt.Errorf("option %q: %v", def, err)
		}
		if err := cfg.SetFrom("-D", k, v); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(plan.Configuration)) {
		if strings.HasPrefix(k, "security.") || !knownOption(k) {
			continue
		}
		if err := cfg.SetFrom("the plan's configuration", k, plan.Configuration[k]); err != nil {
			return nil, fmt.Errorf("plan: %v", err)
		}
	}
	return cfg, nil
}

// knownOptions are the keys of weir's configuration catalog.
var knownOptions = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool)
	for _, o := range config.Options() {
		m[o.Key] = true
	}
	return m
})

func knownOption(key string) bool { return knownOptions()[key] }

// run drives one job through its attempts until it ends.
func (d *dispatcher) run(j *job) {
	defer d.jm.wg.Done()
	defer d.jm.pool.Release(j.id)
	restore, allowNonRestored := j.sub.SavepointPath, j.sub.AllowNonRestoredState
	if j.latest != "" {
		// Recovered from an earlier leader: its latest recorded checkpoint.
		restore = j.latest
	}
	for {
		alloc, err := d.waitForSlots(j)
		if err != nil {
			if !errors.Is(err, errCanceled) {
				d.recordFailure(j, j.attempt+1, err.Error())
			}
			d.end(j, err)
			return
		}
		attempt := d.startAttempt(j, alloc)
		started := time.Now()
		d.jm.log.Info("job attempt starting", "job", j.id, "attempt", attempt, "taskmanagers", alloc.taskManagerIDs(),
			"placement", alloc.placement, "restore", restore)
		ended := d.deploy(j, attempt, restore, allowNonRestored)
		if ended.kind == "" {
			ended = d.watch(j, attempt)
		}
		if ended.state != JobFinished {
			// Every worker of a failed or cancelled attempt stops before
			// its slots are given up: two attempts of a job must not
			// write output side by side.
			d.stopWorkers(j, attempt)
		}
		d.mu.Lock()
		j.live = false
		d.mu.Unlock()
		d.jm.pool.Release(j.id)
		switch {
		case ended.kind == "cancel" || ended.state == JobCanceled:
			d.end(j, errCanceled)
			return
		case ended.state == JobFinished:
			d.end(j, nil)
			return
		case ended.kind == "rescale":
			// Not a failure: the restart strategy is not asked.
			d.mu.Lock()
			j.state, j.tm, j.tmAddress = JobRestarting, "", ""
			j.baseChk += j.attemptChk
			j.attemptChk = 0
			if j.latest != "" {
				restore = j.latest
			}
			d.mu.Unlock()
			d.jm.log.Info("rescaling the job", "job", j.id, "attempt", attempt, "why", ended.err, "restore", restore)
			continue
		}
		reason := ended.err
		d.recordFailure(j, attempt, reason)
		delay, rerr := j.restart.OnFailure(time.Now(), time.Since(started))
		if rerr != nil {
			d.end(j, fmt.Errorf("attempt %d failed: %s; %v", attempt, reason, rerr))
			return
		}
		d.mu.Lock()
		j.state, j.err, j.tm, j.tmAddress = JobRestarting, fmt.Sprintf("attempt %d failed: %s", attempt, reason), "", ""
		j.restarts++
		j.baseChk += j.attemptChk
		j.attemptChk = 0
		if j.latest != "" {
			restore = j.latest
		}
		d.mu.Unlock()
		d.jm.log.Warn("job attempt failed; restarting", "job", j.id, "attempt", attempt, "error", reason, "delay", delay, "restore", restore)
		if !d.sleep(j, delay) {
			return
		}
	}
}

// sleep waits out a restart delay. It returns false when the job has
// ended meanwhile (cancelled) or the JobManager is shutting down.
func (d *dispatcher) sleep(j *job, delay time.Duration) bool {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case ev := <-j.events:
			if ev.kind == "cancel" {
				d.end(j, errCanceled)
				return false
			}
			// about the attempt that ended
		case <-timer.C:
			return true
		case <-d.jm.ctx.Done():
			return false
		}
	}
}

var errCanceled = errors.New("canceled")

// end puts the job in its final state: FINISHED (err nil), CANCELED or
// FAILED.
func (d *dispatcher) end(j *job, err error) {
	d.mu.Lock()
	d.endLocked(j, err)
	d.mu.Unlock()
	// The store forgets the job before its checkpoints go: a leader
	// that took over in between must not restore from deleted ones.
	d.jm.forgetJob(j.id)
	if !d.jm.leading() || d.jm.ha != nil && d.jm.ctx.Err() != nil {
		return
	}
	d.mu.Lock()
	d.discardCheckpointsLocked(j)
	d.mu.Unlock()
}

func (d *dispatcher) endLocked(j *job, err error) {
	j.end = time.Now()
	j.waiting = ""
	j.baseChk += j.attemptChk
	j.attemptChk = 0
	switch {
	case err == nil:
		j.state = JobFinished // j.err keeps why an earlier attempt failed
	case errors.Is(err, errCanceled):
		j.state = JobCanceled
	default:
		j.state, j.err = JobFailed, err.Error()
	}
	d.jm.log.Info("job ended", "job", j.id, "state", j.state, "attempts", j.attempt, "error", j.err)
}

// discardCheckpointsLocked removes the checkpoints of a job that ended
// for good: finished, or cancelled without RETAIN_ON_CANCELLATION (a
// failed job keeps them, for --from-savepoint). The workers leave them:
// only the JobManager knows that no attempt will restore them. Every
// attempt wrote under <root>/<job-id>/, root being where the
// confirmed checkpoints lie; savepoints are the user's and stay.
func (d *dispatcher) discardCheckpointsLocked(j *job) {
	if j.chkRoot == "" {
		return
	}
	switch j.state {
	case JobFinished:
	case JobCanceled:
		// The program may set the retention in its code, which only its
		// workers see; -D settings count too.
		if j.retainOnCancel {
			return
		}
		if config.ExternalizedRetention.Get(j.cfg) == config.RetentionRetainOnCancellation {
			return
		}
	default:
		return
	}
	root, names := j.chkRoot, []string{j.id}
	d.jm.wg.Add(1)
	go func() {
		defer d.jm.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := runtime.DiscardCheckpointDirs(ctx, root, names); err != nil {
			d.jm.log.Warn("removing the checkpoints of an ended job failed", "job", j.id, "root", root, "error", err)
		}
	}()
}

// checkpointRoot is the storage directory (path or URI) of a checkpoint
// <root>/<job-id>/chk-<n>[?query], or "" if it is not shaped so.
func checkpointRoot(chk, jobID string) string {
	base, query, _ := strings.Cut(chk, "?")
	i := strings.LastIndex(base, "/")
	if i < 0 || !strings.HasPrefix(base[i+1:], "chk-") {
		return ""
	}
	dir := base[:i]
	k := strings.LastIndex(dir, "/")
	if k < 0 || dir[k+1:] != jobID {
		return ""
	}
	if query != "" {
		return dir[:k] + "?" + query
	}
	return dir[:k]
}

// allocation is the slots of one attempt: its workers' TaskManagers, the
// leader first, and the worker index of each job slot.
type allocation struct {
	workers   []TaskManagerInfo
	placement []int
}

func (a allocation) taskManagerIDs() []string {
	ids := make([]string, len(a.workers))
	for i, w := range a.workers {
		ids[i] = w.ResourceID
	}
	return ids
}

// startAttempt makes the next attempt of j the current one, with its
// workers on the allocated TaskManagers, and returns its number.
func (d *dispatcher) startAttempt(j *job, alloc allocation) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	j.attempt++
	j.attemptStart = time.Now()
	j.workers = make([]*attemptWorker, len(alloc.workers))
	for i, tm := range alloc.workers {
		j.workers[i] = &attemptWorker{index: i, tm: tm.ResourceID, address: tm.Address, state: attemptDeploying}
	}
	j.placement = alloc.placement
	j.dataToken = newID() + newID()
	j.live = true
	j.tm, j.tmAddress, j.waiting = j.workers[0].tm, j.workers[0].address, ""
	j.attemptChk, j.confirmedID = 0, 0
	j.ckFailed += j.ckFailedAttempt
	j.ckFailedAttempt = 0
	j.subtaskMetrics = nil
	first := j.plan.firstSlots()
	for i := range j.vertices {
		v := &j.vertices[i]
		v.Metrics = VertexMetricsJSON{}
		// A new slice: readers may hold the previous one.
		subtasks := make([]SubtaskJSON, 0, v.Parallelism)
		for s := range v.Parallelism {
			w := j.workers[0]
			if k := first[v.SlotSharingGroup] + s; k < len(j.placement) {
				w = j.workers[j.placement[k]]
			}
			subtasks = append(subtasks, SubtaskJSON{Subtask: s, Attempt: j.attempt, TaskManager: w.tm, TaskManagerAddress: w.address})
		}
		v.Subtasks = subtasks
		v.TaskManager = subtasks[0].TaskManager
	}
	return j.attempt
}

// waitForSlots allocates the job's slots, waiting until the cluster has
// enough free ones up to the job's slot request timeout. A job that one
// TaskManager can hold runs there, unless cluster.evenly-spread-out-slots
// is set; otherwise its slots are spread over the TaskManagers.
func (d *dispatcher) waitForSlots(j *job) (allocation, error) {
	deadline := time.Now().Add(j.slotTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if d.jm.opts.Reactive {
			if err := d.resize(j); err != nil {
				return allocation{}, err
			}
		}
		if alloc, ok := d.allocate(j); ok {
			return alloc, nil
		}
		tms, total, free := d.jm.pool.Totals()
		reason := fmt.Sprintf("needs %d slots, %d of %d are free on %d TaskManagers", j.slots, free, total, tms)
		if tms == 0 {
			reason += " (no TaskManager is registered)"
		}
		d.mu.Lock()
		j.waiting = reason
		d.mu.Unlock()
		if time.Now().After(deadline) {
			return allocation{}, fmt.Errorf("no slots within slot.request.timeout (%v): the job %s", j.slotTimeout, reason)
		}
		select {
		case ev := <-j.events:
			if ev.kind == "cancel" {
				return allocation{}, errCanceled
			}
		case <-tick.C:
		case <-d.jm.ctx.Done():
			return allocation{}, errors.New("the jobmanager is shutting down")
		}
	}
}

// allocate takes the job's slots if the cluster has enough free ones. A
// job that runs in stages (and restores no savepoint, which it would
// restore pipelined) takes as many as are free, from one up.
func (d *dispatcher) allocate(j *job) (allocation, bool) {
	n := j.slots
	if j.plan.Staged && j.sub.SavepointPath == "" {
		if _, _, free := d.jm.pool.Totals(); free >= 1 && free < n {
			n = free
		}
	}
	if !j.spread {
		if tm, _, ok := d.jm.pool.AllocateOnOne(j.id, n); ok {
			return allocation{workers: []TaskManagerInfo{tm}, placement: make([]int, n)}, true
		}
	}
	slots, err := d.jm.pool.Allocate(j.id, n)
	if err != nil {
		return allocation{}, false
	}
	ids, placement := placeWorkers(slots)
	alloc := allocation{placement: placement}
	for _, id := range ids {
		// A TaskManager removed since the allocation keeps its ID and no
		// address; deploying to it fails as a lost TaskManager.
		info, _ := d.jm.pool.TaskManager(id)
		info.ResourceID = id
		alloc.workers = append(alloc.workers, info)
	}
	return alloc, true
}

// deploy submits an attempt to the TaskManagers of its workers. It
// returns an event when the attempt ended before it ran.
func (d *dispatcher) deploy(j *job, attempt int, restore string, allowNonRestored bool) jobEvent {
	d.mu.Lock()
	j.state = JobRunning
	if j.cancel {
		j.state = JobCancelling
	}
	workers := slices.Clone(j.workers)
	var placement []int32
	if len(workers) > 1 {
		for _, p := range j.placement {
			placement = append(placement, int32(p))
		}
	}
	options := j.sub.Options
	if len(workers) == 1 && len(j.placement) < j.slots {
		// A staged job in fewer slots than it needs pipelined, in one
		// worker: the worker learns them from its slot count.
		options = append(slices.Clone(options), fmt.Sprintf("%s=%d", config.NumTaskSlots.Key, len(j.placement)))
	}
	token := j.dataToken
	j.restored = nil
	if restore != "" {
		j.restored = newRestoredCheckpoint(restore, time.Now())
	}
	d.mu.Unlock()
	errs := make([]jobEvent, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			client, regID, ok := d.jm.taskManagerClient(w.tm)
			if !ok {
				errs[i] = jobEvent{kind: "lost", attempt: attempt,
					err: fmt.Sprintf("taskmanager %s (worker %d) was lost: gone before the job was deployed", w.tm, w.index)}
				return
			}
			ctx, cancel := context.WithTimeout(d.jm.ctx, d.jm.opts.RPCTimeout)
			defer cancel()
			_, err := client.SubmitJob(ctx, &rpcpb.SubmitJobRequest{
				RegistrationId:        regID,
				JobId:                 j.id,
				Attempt:               int32(attempt),
				ArtifactSha256:        j.sub.Artifact,
				Args:                  j.sub.Args,
				Parallelism:           int32(j.sub.Parallelism),
				Options:               options,
				RestorePath:           restore,
				AllowNonRestoredState: allowNonRestored,
				Fingerprint:           j.plan.Fingerprint,
				WorkerIndex:           int32(w.index),
				Workers:               int32(len(workers)),
				Placement:             placement,
				DataToken:             token,
				LeaderTerm:            d.jm.leaderTerm(),
			})
			if err != nil {
				errs[i] = jobEvent{kind: "ended", attempt: attempt, state: JobFailed,
					err: fmt.Sprintf("deploying worker %d to taskmanager %s: %v", w.index, w.tm, err)}
			}
		})
	}
	wg.Wait()
	var failed *jobEvent
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, ev := range errs {
		if ev.kind == "" {
			continue
		}
		// A worker that was never deployed has nothing to stop.
		if w := workers[i]; j.attempt == attempt && w.state == attemptDeploying {
			w.state = JobFailed
			if ev.kind == "lost" {
				w.state = workerLost
			}
		}
		if failed == nil {
			failed = &errs[i]
		}
	}
	if failed != nil {
		// The attempt's end is decided; reports must not send another.
		j.terminalSent = attempt
		return *failed
	}
	return jobEvent{}
}

// watch waits for the running attempt to end, cancelling it when asked.
func (d *dispatcher) watch(j *job, attempt int) jobEvent {
	var cancelled <-chan time.Time
	var rescale <-chan time.Time
	if d.jm.opts.Reactive {
		t := time.NewTicker(reactiveCheckInterval)
		defer t.Stop()
		rescale = t.C
	}
	grown := 0
	for {
		select {
		case <-rescale:
			if to, ok := d.canGrow(j, attempt); ok {
				// Slots that stay free for two checks: TaskManagers
				// that join one after the other make one rescale.
				if grown++; grown >= 2 {
					return jobEvent{kind: "rescale", attempt: attempt, err: fmt.Sprintf("%d slots are free: rescaling to parallelism %d", to-j.sub.Parallelism, to)}
				}
			} else {
				grown = 0
			}
		case ev := <-j.events:
			switch {
			case ev.kind == "cancel":
				d.mu.Lock()
				j.state = JobCancelling
				d.mu.Unlock()
				d.cancelWorkers(j, attempt)
				// A worker that ignores SIGTERM is killed after the
				// grace period; give up waiting some time after that.
				cancelled = time.After(workerCancelGrace + 2*d.jm.opts.HeartbeatTimeout)
			case ev.attempt != attempt:
				// about an earlier attempt
			case ev.kind == "lost":
				return ev
			case ev.kind == "ended":
				d.mu.Lock()
				canceling := j.cancel
				d.mu.Unlock()
				if canceling && ev.state != JobFinished {
					ev.state = JobCanceled
				}
				return ev
			}
		case <-cancelled:
			return jobEvent{kind: "cancel"}
		case <-d.jm.ctx.Done():
			return jobEvent{kind: "lost", err: "the jobmanager is shutting down"}
		}
	}
}

// cancelWorkers asks the TaskManagers of an attempt's workers that have
// not ended to stop them, once each.
func (d *dispatcher) cancelWorkers(j *job, attempt int) {
	d.mu.Lock()
	var tms []string
	if j.attempt == attempt {
		for _, w := range j.workers {
			if !w.ended() && !w.cancelSent {
				w.cancelSent = true
				tms = append(tms, w.tm)
			}
		}
	}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, tm := range tms {
		wg.Go(func() { d.cancelAttempt(tm, j.id, attempt, j.term) })
	}
	wg.Wait()
}

// stopWorkers cancels the workers of an attempt that has failed or was
// cancelled and waits until each has ended or its TaskManager is gone: a
// worker that ignores SIGTERM is killed after the grace period, so the
// wait is bounded by that and a few heartbeats.
func (d *dispatcher) stopWorkers(j *job, attempt int) {
	deadline := time.NewTimer(workerCancelGrace + 2*d.jm.opts.HeartbeatTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		// Again each time: a worker whose deployment seemed to fail may
		// turn up running after all.
		d.cancelWorkers(j, attempt)
		d.mu.Lock()
		var running []string
		for _, w := range j.workers {
			if !w.ended() {
				running = append(running, fmt.Sprintf("%d on %s", w.index, w.tm))
			}
		}
		d.mu.Unlock()
		if len(running) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			d.jm.log.Warn("workers of a stopped job attempt did not report their end; giving up their slots",
				"job", j.id, "attempt", attempt, "workers", running)
			return
		case <-d.jm.ctx.Done():
			return
		}
	}
}

// cancelAttempt asks a TaskManager to stop an attempt; failing is
// harmless, since a lost TaskManager's workers die with it.
func (d *dispatcher) cancelAttempt(tmID, jobID string, attempt int, attemptTerm int64) {
	client, _, ok := d.jm.taskManagerClient(tmID)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(d.jm.ctx, d.jm.opts.RPCTimeout)
	defer cancel()
	if _, err := client.CancelJob(ctx, &rpcpb.CancelJobRequest{JobId: jobID, Attempt: int32(attempt), LeaderTerm: d.jm.leaderTerm(), AttemptTerm: attemptTerm}); err != nil {
		d.jm.log.Warn("cancelling a job attempt failed", "job", jobID, "attempt", attempt, "taskmanager", tmID, "error", err)
	}
}

// workerOf returns the worker of j's current attempt that runs on
// TaskManager tmID, or nil.
func (j *job) workerOf(tmID string) *attemptWorker {
	for _, w := range j.workers {
		if w.tm == tmID {
			return w
		}
	}
	return nil
}

// report takes the job statuses of a TaskManager's heartbeat answer.
// Each is matched to a worker by job, attempt and TaskManager. Attempts
// the dispatcher does not expect there (an attempt that was restarted
// elsewhere while the TaskManager was cut off, or one whose other workers
// were stopped) are cancelled on that TaskManager only.
func (d *dispatcher) report(tmID string, statuses []*rpcpb.JobStatus) {
	var stale []*rpcpb.JobStatus
	d.mu.Lock()
	for _, st := range statuses {
		j := d.jobs[st.GetJobId()]
		terminal := IsTerminalJobState(st.GetState())
		var w *attemptWorker
		// An attempt of another leader's term is not this leader's, even
		// with the same number.
		if j != nil && j.attempt == int(st.GetAttempt()) && st.GetLeaderTerm() == d.jm.leaderTerm() && j.live && !IsTerminalJobState(j.state) {
			w = j.workerOf(tmID)
		}
		if w == nil {
			if !terminal {
				stale = append(stale, st)
			}
			continue
		}
		if w.state != workerLost {
			w.state = st.GetState()
		}
		w.status = st
		j.aggregateLocked()
		if ev, ok := j.outcomeLocked(); ok && j.terminalSent != j.attempt {
			j.terminalSent = j.attempt
			j.events <- ev
		}
	}
	d.mu.Unlock()
	for _, st := range stale {
		d.jm.log.Warn("cancelling a job attempt the jobmanager does not expect on this taskmanager",
			"job", st.GetJobId(), "attempt", st.GetAttempt(), "taskmanager", tmID)
		go d.cancelAttempt(tmID, st.GetJobId(), int(st.GetAttempt()), st.GetLeaderTerm())
	}
}

// aggregateLocked sums the workers' metrics per vertex (each worker counts
// its own subtasks). Checkpoints are counted as they are confirmed.
func (j *job) aggregateLocked() {
	sums := make(map[string]VertexMetricsJSON, len(j.vertices))
	for _, w := range j.workers {
		for _, v := range w.status.GetVertices() {
			m := sums[v.GetId()]
			m.ReadRecords += v.GetRecordsIn()
			m.WriteRecords += v.GetRecordsOut()
			sums[v.GetId()] = m
		}
	}
	for i := range j.vertices {
		if m, ok := sums[j.vertices[i].ID]; ok {
			j.vertices[i].Metrics = m
		}
	}
	j.aggregateSubtasksLocked()
}

// outcomeLocked says whether the current attempt has ended by its
// workers' states: FINISHED when every worker finished; FAILED (or
// CANCELED) as soon as one worker failed or was cancelled.
func (j *job) outcomeLocked() (jobEvent, bool) {
	finished := 0
	for _, w := range j.workers {
		switch w.state {
		case JobFinished:
			finished++
		case JobFailed:
			return jobEvent{kind: "ended", attempt: j.attempt, state: JobFailed, err: j.workerError(w, w.status.GetError())}, true
		case JobCanceled:
			if j.cancel {
				return jobEvent{kind: "ended", attempt: j.attempt, state: JobCanceled}, true
			}
			// Not cancelled by the JobManager: its TaskManager is
			// shutting down.
			return jobEvent{kind: "ended", attempt: j.attempt, state: JobFailed,
				err: j.workerError(w, "cancelled by its taskmanager")}, true
		}
	}
	if finished == len(j.workers) && finished > 0 {
		return jobEvent{kind: "ended", attempt: j.attempt, state: JobFinished}, true
	}
	return jobEvent{}, false
}

// workerError names the worker in an error of a job that has several.
func (j *job) workerError(w *attemptWorker, msg string) string {
	if len(j.workers) <= 1 {
		return msg
	}
	return fmt.Sprintf("worker %d on taskmanager %s: %s", w.index, w.tm, msg)
}

// taskManagerLost tells the jobs with a worker on a TaskManager that it is
// gone.
func (d *dispatcher) taskManagerLost(tmID, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.jobs {
		if !j.live || IsTerminalJobState(j.state) {
			continue
		}
		w := j.workerOf(tmID)
		if w == nil || w.ended() {
			continue
		}
		w.state = workerLost
		if j.terminalSent != j.attempt {
			j.terminalSent = j.attempt
			err := fmt.Sprintf("taskmanager %s was lost: %s", tmID, why)
			if len(j.workers) > 1 {
				err = fmt.Sprintf("taskmanager %s of worker %d was lost: %s", tmID, w.index, why)
			}
			j.events <- jobEvent{kind: "lost", attempt: j.attempt, err: err}
		}
	}
}

// confirmCheckpoint makes a checkpoint of a job's current attempt count:
// from now on the job restarts from it, and the attempt's sinks may commit
// what it covers. It refuses every attempt but the current one, and the
// current one too once its end has been decided (a worker failed or
// ended, or its TaskManager was lost): from that moment the restore
// point is fixed, and whatever the attempt still does must stay
// uncommitted. This is the fence that keeps a paused or partitioned
// attempt from committing beside the one that replaced it.
func (d *dispatcher) confirmCheckpoint(req *rpcpb.ConfirmCheckpointRequest) error {
	if t := d.jm.leaderTerm(); req.GetLeaderTerm() != t {
		return status.Errorf(codes.FailedPrecondition, "job %s attempt %d was deployed by the JobManager of leadership term %d, not by this one (term %d); its checkpoint %d does not count",
			req.GetJobId(), req.GetAttempt(), req.GetLeaderTerm(), t, req.GetCheckpointId())
	}
	d.mu.Lock()
	_, err := d.confirmableLocked(req)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if d.jm.ha != nil {
		// Recorded before it is confirmed: the workers commit what it
		// covers once confirmed, and a new leader must restore from it.
		// A deposed leader's write fails, fenced by its term.
		if err := d.jm.recordCheckpoint(req.GetJobId(), req.GetCheckpointId(), req.GetPath()); err != nil {
			return status.Errorf(codes.Unavailable, "job %s checkpoint %d could not be recorded for high availability: %v",
				req.GetJobId(), req.GetCheckpointId(), err)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j, err := d.confirmableLocked(req)
	if err != nil {
		if d.jm.ha != nil && j != nil && req.GetPath() != "" {
			// The attempt ended while etcd recorded the checkpoint: it
			// stays uncommitted here, but a restart restores from it, as
			// a new leader would.
			j.latest = req.GetPath()
		}
		return err
	}
	j.confirmedID = req.GetCheckpointId()
	j.attemptChk++
	j.retainOnCancel = req.GetRetainOnCancellation()
	if p := req.GetPath(); p != "" {
		j.latest = p
		if root := checkpointRoot(p, j.id); root != "" && !req.GetSavepoint() {
			j.chkRoot = root
		}
	}
	d.jm.log.Debug("checkpoint confirmed", "job", j.id, "attempt", j.attempt, "checkpoint", req.GetCheckpointId(),
		"savepoint", req.GetSavepoint(), "path", req.GetPath())
	return nil
}

// confirmableLocked returns the job of a confirmation, and an error if
// the checkpoint may not count.
func (d *dispatcher) confirmableLocked(req *rpcpb.ConfirmCheckpointRequest) (*job, error) {
	j := d.jobs[req.GetJobId()]
	if j == nil {
		return nil, status.Errorf(codes.NotFound, "job %s not found", req.GetJobId())
	}
	attempt := int(req.GetAttempt())
	switch {
	case attempt != j.attempt || !j.live:
		return j, status.Errorf(codes.FailedPrecondition, "job %s attempt %d is not the running attempt (the current attempt is %d, %s)",
			j.id, attempt, j.attempt, j.state)
	case IsTerminalJobState(j.state):
		return j, status.Errorf(codes.FailedPrecondition, "job %s has ended (%s)", j.id, j.state)
	case j.terminalSent == attempt:
		return j, status.Errorf(codes.FailedPrecondition, "job %s attempt %d has ended or failed; its checkpoint %d does not count",
			j.id, attempt, req.GetCheckpointId())
	case req.GetWorkerIndex() != 0 || len(j.workers) == 0 || j.workers[0].tm != req.GetResourceId():
		return j, status.Errorf(codes.FailedPrecondition, "only the leader worker of job %s attempt %d confirms checkpoints, not worker %d on taskmanager %s",
			j.id, attempt, req.GetWorkerIndex(), req.GetResourceId())
	case req.GetCheckpointId() <= j.confirmedID:
		return j, status.Errorf(codes.FailedPrecondition, "job %s attempt %d: checkpoint %d is not newer than checkpoint %d, confirmed before",
			j.id, attempt, req.GetCheckpointId(), j.confirmedID)
	}
	return j, nil
}

// reportWorker records the data address of a worker of a job's current
// attempt, and returns every worker's address once all have reported.
// Before that, addrs holds those reported so far ("" for the others).
func (d *dispatcher) reportWorker(req *rpcpb.ReportWorkerRequest) (complete bool, addrs []string, err error) {
	if _, _, err := net.SplitHostPort(req.GetDataAddress()); err != nil {
		return false, nil, status.Errorf(codes.InvalidArgument, "data address %q of worker %d of job %s: want host:port",
			req.GetDataAddress(), req.GetWorkerIndex(), req.GetJobId())
	}
	if t := d.jm.leaderTerm(); req.GetLeaderTerm() != t {
		return false, nil, status.Errorf(codes.FailedPrecondition, "job %s attempt %d was deployed by the JobManager of leadership term %d, not by this one (term %d)",
			req.GetJobId(), req.GetAttempt(), req.GetLeaderTerm(), t)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[req.GetJobId()]
	if j == nil {
		return false, nil, status.Errorf(codes.NotFound, "job %s not found", req.GetJobId())
	}
	attempt := int(req.GetAttempt())
	switch {
	case attempt != j.attempt || !j.live:
		return false, nil, status.Errorf(codes.FailedPrecondition, "job %s attempt %d is not the running attempt (the current attempt is %d, %s)",
			j.id, attempt, j.attempt, j.state)
	case IsTerminalJobState(j.state):
		return false, nil, status.Errorf(codes.FailedPrecondition, "job %s has ended (%s)", j.id, j.state)
	case req.GetWorkerIndex() < 0 || int(req.GetWorkerIndex()) >= len(j.workers):
		return false, nil, status.Errorf(codes.NotFound, "job %s attempt %d has no worker %d (it has %d)",
			j.id, attempt, req.GetWorkerIndex(), len(j.workers))
	}
	w := j.workers[req.GetWorkerIndex()]
	if w.tm != req.GetResourceId() {
		return false, nil, status.Errorf(codes.FailedPrecondition, "worker %d of job %s attempt %d runs on taskmanager %s, not on %s",
			w.index, j.id, attempt, w.tm, req.GetResourceId())
	}
	if w.dataAddress != req.GetDataAddress() {
		d.jm.log.Info("job worker ready", "job", j.id, "attempt", attempt, "worker", w.index, "taskmanager", w.tm, "data", req.GetDataAddress())
	}
	w.dataAddress = req.GetDataAddress()
	addrs = make([]string, len(j.workers))
	complete = true
	for i, o := range j.workers {
		addrs[i] = o.dataAddress
		complete = complete && o.dataAddress != ""
	}
	return complete, addrs, nil
}

// cancelJob asks a job to stop; a job that has ended stays as it is.
func (d *dispatcher) cancelJob(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[id]
	if j == nil {
		return errNotFound
	}
	if IsTerminalJobState(j.state) || j.cancel {
		return nil
	}
	j.cancel = true
	select {
	case j.events <- jobEvent{kind: "cancel"}:
	default:
	}
	return nil
}

// details returns GET /jobs/{id}.
func (d *dispatcher) details(id string) (JobDetails, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[id]
	if j == nil {
		return JobDetails{}, false
	}
	return j.detailsLocked(), true
}

func (j *job) detailsLocked() JobDetails {
	out := JobDetails{
		LeaderTerm: j.term,
		ID:         j.id, Name: j.name, State: j.state, Attempt: j.attempt, Restarts: j.restarts,
		TaskManager: j.tm, TaskManagerAddress: j.tmAddress, SlotsNeeded: j.slots,
		StartTime: j.created.UnixMilli(), EndTime: -1,
		Vertices:    slices.Clone(j.vertices),
		Checkpoints: JobCheckpointJSON{Completed: j.baseChk + j.attemptChk, Latest: j.latest},
		Waiting:     j.waiting, Error: j.err,
		Plan: j.planJSON().Plan,
	}
	out.JobType = out.Plan.Type
	for _, w := range j.workers {
		wj := WorkerJSON{Index: w.index, TaskManager: w.tm, TaskManagerAddress: w.address, State: w.state, DataAddress: w.dataAddress,
			StartTime: w.status.GetStarted()}
		if w.state == JobFailed {
			wj.Error = w.status.GetError()
		}
		out.Workers = append(out.Workers, wj)
	}
	now := time.Now()
	end := now
	if !j.end.IsZero() {
		end = j.end
		out.EndTime = j.end.UnixMilli()
	}
	out.Duration = end.Sub(j.created).Milliseconds()
	out.Now = now.UnixMilli()
	out.MaxParallelism = -1 // Flink's value when the job sets none
	out.IsStoppable = j.state == JobRunning
	out.Timestamps = map[string]int64{}
	for _, s := range []string{"INITIALIZING", JobCreated, JobRunning, "FAILING", JobFailed, JobCancelling, JobCanceled,
		JobFinished, JobRestarting, "SUSPENDED", "RECONCILING"} {
		out.Timestamps[s] = 0
	}
	out.Timestamps[JobCreated] = j.created.UnixMilli()
	if !j.attemptStart.IsZero() {
		out.Timestamps[JobRunning] = j.attemptStart.UnixMilli()
	}
	if !j.end.IsZero() {
		out.Timestamps[j.state] = j.end.UnixMilli()
	}
	out.StatusCounts = executionStateCounts()
	for i := range out.Vertices {
		v := &out.Vertices[i]
		v.Tasks = executionStateCounts()
		for s := range v.Parallelism {
			var m SubtaskMetricsJSON
			if ms := j.subtaskMetrics[v.ID]; s < len(ms) {
				m = ms[s]
			}
			st := j.subtaskStatusLocked(m)
			v.Tasks[st]++
			out.StatusCounts[st]++
		}
		v.Status = vertexStatus(v.Tasks, v.Parallelism)
		v.StartTime, v.EndTime, v.Duration = -1, -1, -1
		if !j.attemptStart.IsZero() {
			v.StartTime = j.attemptStart.UnixMilli()
			v.Duration = end.Sub(j.attemptStart).Milliseconds()
		}
		if !j.end.IsZero() {
			v.EndTime = j.end.UnixMilli()
		}
	}
	return out
}

// executionStateCounts is a count of 0 for every execution state, as
// Flink lists them.
func executionStateCounts() map[string]int {
	m := map[string]int{}
	for _, s := range []string{"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED",
		"RECONCILING", "INITIALIZING"} {
		m[s] = 0
	}
	return m
}

// vertexStatus is a vertex's execution state from its subtasks', as
// Flink aggregates them: any failure fails it, all finished finish it,
// otherwise the least advanced running state.
func vertexStatus(tasks map[string]int, parallelism int) string {
	switch {
	case tasks["FAILED"] > 0:
		return "FAILED"
	case tasks["CANCELING"] > 0:
		return "CANCELING"
	case tasks["CANCELED"] > 0:
		return "CANCELED"
	case tasks["FINISHED"] == parallelism:
		return "FINISHED"
	}
	for _, s := range []string{"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING"} {
		if tasks[s] > 0 {
			return s
		}
	}
	return "RUNNING"
}

// list returns the jobs in submission order.
func (d *dispatcher) list() []JobIDStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]JobIDStatus, 0, len(d.order))
	for _, id := range d.order {
		j := d.jobs[id]
		out = append(out, JobIDStatus{ID: j.id, Status: j.state, Name: j.name})
	}
	return out
}

// counts returns the job counts of GET /overview.
func (d *dispatcher) counts() (running, finished, cancelled, failed int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.jobs {
		switch j.state {
		case JobFinished:
			finished++
		case JobCanceled:
			cancelled++
		case JobFailed:
			failed++
		default:
			running++
		}
	}
	return
}

// savepointTrigger is one savepoint requested through the REST API.
type savepointTrigger struct {
	state string // IN_PROGRESS or COMPLETED
	op    *SavepointOperation
}

// SavepointOperation is the result of a completed savepoint trigger.
type SavepointOperation struct {
	Location     string `json:"location,omitempty"`
	FailureCause string `json:"failure-cause,omitempty"`
}

// trigger starts a savepoint of a running job (with stop, a
// stop-with-savepoint) and returns the trigger's ID to poll.
func (d *dispatcher) trigger(id, dir string, stop, drain bool) (string, error) {
	d.mu.Lock()
	j := d.jobs[id]
	if j == nil {
		d.mu.Unlock()
		return "", errNotFound
	}
	if j.state != JobRunning {
		state := j.state
		d.mu.Unlock()
		return "", fmt.Errorf("job %s is %s; only a RUNNING job can take a savepoint", id, state)
	}
	// The leader worker (worker 0) coordinates the job's checkpoints and
	// takes its savepoints.
	tmID, attempt := j.tm, j.attempt
	tid := newID() + newID()
	st := &savepointTrigger{state: "IN_PROGRESS"}
	j.triggers[tid] = st
	d.mu.Unlock()
	d.jm.wg.Add(1)
	go func() {
		defer d.jm.wg.Done()
		var path string
		var err error
		client, _, ok := d.jm.taskManagerClient(tmID)
		if !ok {
			err = fmt.Errorf("taskmanager %s is gone", tmID)
		} else {
			// A savepoint takes as long as the job's state takes to write.
			ctx, cancel := context.WithTimeout(d.jm.ctx, savepointTimeout)
			var resp *rpcpb.TriggerSavepointResponse
			resp, err = client.TriggerSavepoint(ctx, &rpcpb.TriggerSavepointRequest{
				JobId: id, Attempt: int32(attempt), TargetDirectory: dir, Stop: stop, Drain: drain, LeaderTerm: d.jm.leaderTerm(),
			})
			cancel()
			path = resp.GetPath()
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		st.state = "COMPLETED"
		st.op = &SavepointOperation{Location: path}
		if err != nil {
			st.op = &SavepointOperation{FailureCause: grpcMessage(err)}
		}
		d.jm.log.Info("savepoint", "job", id, "stop", stop, "path", path, "error", errString(err))
	}()
	return tid, nil
}

// savepointTimeout bounds a savepoint triggered through the REST API.
const savepointTimeout = 10 * time.Minute

// triggerStatus returns the state of a savepoint trigger.
func (d *dispatcher) triggerStatus(id, tid string) (SavepointStatusJSON, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[id]
	if j == nil {
		return SavepointStatusJSON{}, errNotFound
	}
	st := j.triggers[tid]
	if st == nil {
		return SavepointStatusJSON{}, fmt.Errorf("savepoint trigger %s of job %s not found", tid, id)
	}
	out := SavepointStatusJSON{}
	out.Status.ID = st.state
	if st.op != nil {
		op := *st.op
		out.Operation = &op
	}
	return out, nil
}

// SavepointStatusJSON is the answer of GET
// /jobs/{id}/savepoints/{triggerid}: status.id is IN_PROGRESS or
// COMPLETED; a completed one has an operation with the location or the
// failure cause.
type SavepointStatusJSON struct {
	Status struct {
		ID string `json:"id"`
	} `json:"status"`
	Operation *SavepointOperation `json:"operation,omitempty"`
}

// grpcMessage is an RPC error's message without gRPC's "rpc error: code
// = ..." prefix.
func grpcMessage(err error) string { return status.Convert(err).Message() }

// SlotDemand is the number of slots that the jobs which have not ended
// need: those running, restarting or waiting for slots. A resource
// manager that starts TaskManagers on demand (native Kubernetes) compares
// it with the registered slots.
func (jm *JobManager) SlotDemand() int {
	d := jm.dispatcher
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, j := range d.jobs {
		if !IsTerminalJobState(j.state) {
			n += j.slots
		}
	}
	return n
}
