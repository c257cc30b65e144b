package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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
	// JobManager reads restart-strategy.* and slot.request.timeout from
	// them (and from -D arguments in Args).
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
		SlotSharingGroup string
	}
	Fingerprint string
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

// JobSubmitted is the answer of POST /jobs.
type JobSubmitted struct {
	JobID string `json:"jobid"`
}

// JobDetails is the answer of GET /jobs/{id}.
type JobDetails struct {
	ID    string `json:"jid"`
	Name  string `json:"name"`
	State string `json:"state"`
	// Attempt counts the starts of the job on a TaskManager, from 1; 0
	// before the first.
	Attempt  int `json:"attempt"`
	Restarts int `json:"restarts"`
	// TaskManager runs the current attempt; every subtask of the job runs
	// there.
	TaskManager        string `json:"taskmanager,omitempty"`
	TaskManagerAddress string `json:"taskmanagerAddress,omitempty"`
	SlotsNeeded        int    `json:"slotsNeeded"`
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

// JobVertexJSON is one vertex in GET /jobs/{id}.
type JobVertexJSON struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Parallelism      int               `json:"parallelism"`
	SlotSharingGroup string            `json:"slotSharingGroup"`
	TaskManager      string            `json:"taskmanager,omitempty"`
	Metrics          VertexMetricsJSON `json:"metrics"`
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
// (Flink's names).
type VertexMetricsJSON struct {
	ReadRecords  int64 `json:"read-records"`
	WriteRecords int64 `json:"write-records"`
}

// JobCheckpointJSON counts a job's completed checkpoints over all its
// attempts, and names the latest.
type JobCheckpointJSON struct {
	Completed int    `json:"completed"`
	Latest    string `json:"latest,omitempty"`
}

// job is one submitted job. The dispatcher's mutex guards the fields
// below events.
type job struct {
	id          string
	name        string
	sub         JobSubmission
	plan        JobPlan
	slots       int
	slotTimeout time.Duration
	restart     runtime.RestartStrategy
	events      chan jobEvent // to the job's goroutine

	state         string
	attempt       int
	restarts      int
	tm, tmAddress string
	waiting       string
	vertices      []JobVertexJSON
	baseChk       int // checkpoints completed by earlier attempts
	attemptChk    int
	latest        string
	err           string
	created, end  time.Time
	cancel        bool // requested
	terminalSent  int  // attempt whose end was passed to the goroutine
	triggers      map[string]*savepointTrigger
}

type jobEvent struct {
	kind    string // "ended", "lost", "cancel"
	attempt int
	state   string // of an ended attempt
	err     string
}

// dispatcher accepts jobs and runs each of them on one TaskManager.
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

// submit checks a submission and starts the job.
func (d *dispatcher) submit(sub JobSubmission) (string, error) {
	if !sha256Hex.MatchString(sub.Artifact) {
		return "", fmt.Errorf("artifact %q is not a hex SHA-256", sub.Artifact)
	}
	if !d.jm.artifacts.has(sub.Artifact) {
		return "", fmt.Errorf("artifact %s not found: upload it with POST /artifacts first", sub.Artifact)
	}
	if sub.Parallelism < 0 {
		return "", fmt.Errorf("parallelism %d must not be negative", sub.Parallelism)
	}
	var plan JobPlan
	if err := json.Unmarshal(sub.Plan, &plan); err != nil {
		return "", fmt.Errorf("plan: %v", err)
	}
	if len(plan.Vertices) == 0 {
		return "", errors.New("plan: the job graph has no vertices")
	}
	for _, v := range plan.Vertices {
		if v.Parallelism < 1 {
			return "", fmt.Errorf("plan: vertex %q has parallelism %d", v.Name, v.Parallelism)
		}
	}
	cfg, err := jobConfig(sub)
	if err != nil {
		return "", err
	}
	slotTimeout := d.jm.opts.SlotRequestTimeout
	if cfg.IsSet(config.SlotRequestTimeout.Key) {
		slotTimeout = config.SlotRequestTimeout.Get(cfg)
	}
	j := &job{
		id:          newID() + newID(),
		name:        plan.JobName,
		sub:         sub,
		plan:        plan,
		slots:       plan.SlotsNeeded(),
		slotTimeout: slotTimeout,
		restart:     restartStrategyFrom(cfg),
		events:      make(chan jobEvent, 16),
		state:       JobCreated,
		created:     time.Now(),
		triggers:    make(map[string]*savepointTrigger),
	}
	for _, v := range plan.Vertices {
		j.vertices = append(j.vertices, JobVertexJSON{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, SlotSharingGroup: v.SlotSharingGroup})
	}
	d.mu.Lock()
	d.jobs[j.id] = j
	d.order = append(d.order, j.id)
	d.mu.Unlock()
	d.jm.log.Info("job submitted", "job", j.id, "name", j.name, "slots", j.slots, "artifact", sub.Artifact)
	d.jm.wg.Add(1)
	go d.run(j)
	return j.id, nil
}

// jobConfig reads the options of a submission: its Options, then -D
// arguments of the program, which the program applies last.
func jobConfig(sub JobSubmission) (*config.Configuration, error) {
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
	return cfg, nil
}

// run drives one job through its attempts until it ends.
func (d *dispatcher) run(j *job) {
	defer d.jm.wg.Done()
	defer d.jm.pool.Release(j.id)
	restore, allowNonRestored := j.sub.SavepointPath, j.sub.AllowNonRestoredState
	for {
		tm, err := d.waitForSlots(j)
		if err != nil {
			d.end(j, err)
			return
		}
		d.mu.Lock()
		j.attempt++
		attempt := j.attempt
		j.tm, j.tmAddress, j.waiting = tm.ResourceID, tm.Address, ""
		j.attemptChk = 0
		for i := range j.vertices {
			v := &j.vertices[i]
			v.TaskManager = tm.ResourceID
			v.Metrics = VertexMetricsJSON{}
			// Every subtask of an attempt runs on its one TaskManager. A
			// new slice: readers may hold the previous one.
			subtasks := make([]SubtaskJSON, 0, v.Parallelism)
			for s := range v.Parallelism {
				subtasks = append(subtasks, SubtaskJSON{Subtask: s, Attempt: attempt, TaskManager: tm.ResourceID, TaskManagerAddress: tm.Address})
			}
			v.Subtasks = subtasks
		}
		d.mu.Unlock()
		started := time.Now()
		d.jm.log.Info("job attempt starting", "job", j.id, "attempt", attempt, "taskmanager", tm.ResourceID, "restore", restore)
		ended := d.deploy(j, tm, attempt, restore, allowNonRestored)
		if ended.kind == "" {
			ended = d.watch(j, attempt)
		}
		d.jm.pool.Release(j.id)
		switch {
		case ended.kind == "cancel" || ended.state == JobCanceled:
			d.end(j, errCanceled)
			return
		case ended.state == JobFinished:
			d.end(j, nil)
			return
		}
		reason := ended.err
		if ended.kind == "lost" {
			reason = fmt.Sprintf("taskmanager %s was lost: %s", tm.ResourceID, ended.err)
		}
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
		select {
		case ev := <-j.events:
			if ev.kind == "cancel" {
				d.end(j, errCanceled)
				return
			}
		case <-time.After(delay):
		case <-d.jm.ctx.Done():
			return
		}
	}
}

var errCanceled = errors.New("canceled")

// end puts the job in its final state: FINISHED (err nil), CANCELED or
// FAILED.
func (d *dispatcher) end(j *job, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
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

// waitForSlots allocates the job's slots on one TaskManager, waiting for
// one with enough free slots up to the job's slot request timeout.
func (d *dispatcher) waitForSlots(j *job) (TaskManagerInfo, error) {
	deadline := time.Now().Add(j.slotTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		tm, largest, ok := d.jm.pool.AllocateOnOne(j.id, j.slots)
		if ok {
			return tm, nil
		}
		reason := fmt.Sprintf("needs %d slots in one TaskManager, the largest free is %d", j.slots, largest)
		if n, _, _ := d.jm.pool.Totals(); n == 0 {
			reason += " (no TaskManager is registered)"
		}
		d.mu.Lock()
		j.waiting = reason
		d.mu.Unlock()
		if time.Now().After(deadline) {
			return TaskManagerInfo{}, fmt.Errorf("no slots within slot.request.timeout (%v): the job %s; "+
				"a job runs in one TaskManager for now", j.slotTimeout, reason)
		}
		select {
		case ev := <-j.events:
			if ev.kind == "cancel" {
				return TaskManagerInfo{}, errCanceled
			}
		case <-tick.C:
		case <-d.jm.ctx.Done():
			return TaskManagerInfo{}, errors.New("the jobmanager is shutting down")
		}
	}
}

// deploy submits an attempt to its TaskManager. It returns an event when
// the attempt ended before it ran.
func (d *dispatcher) deploy(j *job, tm TaskManagerInfo, attempt int, restore string, allowNonRestored bool) jobEvent {
	client, regID, ok := d.jm.taskManagerClient(tm.ResourceID)
	if !ok {
		return jobEvent{kind: "lost", err: "gone before the job was deployed"}
	}
	d.mu.Lock()
	j.state = JobRunning
	if j.cancel {
		j.state = JobCancelling
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(d.jm.ctx, d.jm.opts.RPCTimeout)
	defer cancel()
	_, err := client.SubmitJob(ctx, &rpcpb.SubmitJobRequest{
		RegistrationId:        regID,
		JobId:                 j.id,
		Attempt:               int32(attempt),
		ArtifactSha256:        j.sub.Artifact,
		Args:                  j.sub.Args,
		Parallelism:           int32(j.sub.Parallelism),
		Options:               j.sub.Options,
		RestorePath:           restore,
		AllowNonRestoredState: allowNonRestored,
		Fingerprint:           j.plan.Fingerprint,
	})
	if err != nil {
		return jobEvent{kind: "ended", state: JobFailed, err: fmt.Sprintf("deploying to taskmanager %s: %v", tm.ResourceID, err)}
	}
	return jobEvent{}
}

// watch waits for the running attempt to end, cancelling it when asked.
func (d *dispatcher) watch(j *job, attempt int) jobEvent {
	var cancelled <-chan time.Time
	for {
		select {
		case ev := <-j.events:
			switch {
			case ev.kind == "cancel":
				d.mu.Lock()
				j.state = JobCancelling
				tmID := j.tm
				d.mu.Unlock()
				d.cancelAttempt(tmID, j.id, attempt)
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

// cancelAttempt asks a TaskManager to stop an attempt; failing is
// harmless, since a lost TaskManager's workers die with it.
func (d *dispatcher) cancelAttempt(tmID, jobID string, attempt int) {
	client, _, ok := d.jm.taskManagerClient(tmID)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(d.jm.ctx, d.jm.opts.RPCTimeout)
	defer cancel()
	if _, err := client.CancelJob(ctx, &rpcpb.CancelJobRequest{JobId: jobID, Attempt: int32(attempt)}); err != nil {
		d.jm.log.Warn("cancelling a job attempt failed", "job", jobID, "attempt", attempt, "taskmanager", tmID, "error", err)
	}
}

// report takes the job statuses of a TaskManager's heartbeat answer.
// Attempts the dispatcher does not expect there (an attempt that was
// restarted elsewhere while the TaskManager was cut off) are cancelled.
func (d *dispatcher) report(tmID string, statuses []*rpcpb.JobStatus) {
	var stale []*rpcpb.JobStatus
	d.mu.Lock()
	for _, st := range statuses {
		j := d.jobs[st.GetJobId()]
		terminal := IsTerminalJobState(st.GetState())
		if j == nil || j.tm != tmID || j.attempt != int(st.GetAttempt()) || IsTerminalJobState(j.state) {
			if !terminal {
				stale = append(stale, st)
			}
			continue
		}
		byID := make(map[string]*rpcpb.VertexStatus, len(st.GetVertices()))
		for _, v := range st.GetVertices() {
			byID[v.GetId()] = v
		}
		for i := range j.vertices {
			if v := byID[j.vertices[i].ID]; v != nil {
				j.vertices[i].Metrics = VertexMetricsJSON{ReadRecords: v.GetRecordsIn(), WriteRecords: v.GetRecordsOut()}
			}
		}
		j.attemptChk = int(st.GetCompletedCheckpoints())
		if st.GetLatestCheckpoint() != "" {
			j.latest = st.GetLatestCheckpoint()
		}
		if terminal && j.terminalSent != j.attempt {
			j.terminalSent = j.attempt
			j.events <- jobEvent{kind: "ended", attempt: j.attempt, state: st.GetState(), err: st.GetError()}
		}
	}
	d.mu.Unlock()
	for _, st := range stale {
		d.jm.log.Warn("cancelling a job attempt the jobmanager does not expect on this taskmanager",
			"job", st.GetJobId(), "attempt", st.GetAttempt(), "taskmanager", tmID)
		go d.cancelAttempt(tmID, st.GetJobId(), int(st.GetAttempt()))
	}
}

// taskManagerLost tells the jobs running on a TaskManager that it is gone.
func (d *dispatcher) taskManagerLost(tmID, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.jobs {
		if j.tm == tmID && !IsTerminalJobState(j.state) && j.terminalSent != j.attempt {
			j.terminalSent = j.attempt
			j.events <- jobEvent{kind: "lost", attempt: j.attempt, err: why}
		}
	}
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
		ID: j.id, Name: j.name, State: j.state, Attempt: j.attempt, Restarts: j.restarts,
		TaskManager: j.tm, TaskManagerAddress: j.tmAddress, SlotsNeeded: j.slots,
		StartTime: j.created.UnixMilli(), EndTime: -1,
		Vertices:    slices.Clone(j.vertices),
		Checkpoints: JobCheckpointJSON{Completed: j.baseChk + j.attemptChk, Latest: j.latest},
		Waiting:     j.waiting, Error: j.err,
	}
	end := time.Now()
	if !j.end.IsZero() {
		end = j.end
		out.EndTime = j.end.UnixMilli()
	}
	out.Duration = end.Sub(j.created).Milliseconds()
	return out
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
				JobId: id, Attempt: int32(attempt), TargetDirectory: dir, Stop: stop, Drain: drain,
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
