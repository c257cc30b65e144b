package cluster

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/config"
)

// Flink's monitoring API: the GET endpoints that Flink's dashboard, its
// Java REST client, the Kubernetes operator and scripts call, answered
// with the JSON that Flink sends there (field names and JSON types as in
// Flink's rest_v1_dispatcher.yml, or as Flink's custom serializers write
// them where that description differs), from what the JobManager knows.

// maxFailureHistory bounds the failures a job keeps for
// GET /jobs/{id}/exceptions (Flink's web.exception-history-size is 16).
const maxFailureHistory = 16

// jobFailure is one failed attempt of a job.
type jobFailure struct {
	attempt int
	at      time.Time
	reason  string
}

// recordFailure adds why an attempt of j failed to its history.
func (d *dispatcher) recordFailure(j *job, attempt int, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j.failuresTotal++
	j.failures = append(j.failures, jobFailure{attempt: attempt, at: time.Now(), reason: reason})
	if n := len(j.failures) - maxFailureHistory; n > 0 {
		j.failures = slices.Clone(j.failures[n:])
	}
}

// withJob calls f with the job of the request's {id} under the
// dispatcher's lock, or answers 404.
func (jm *JobManager) withJob(w http.ResponseWriter, r *http.Request, f func(j *job) any) {
	id := r.PathValue("id")
	d := jm.dispatcher
	d.mu.Lock()
	j := d.jobs[id]
	var out any
	if j != nil {
		out = f(j)
	}
	d.mu.Unlock()
	if j == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s not found", id))
		return
	}
	if e, ok := out.(restError); ok {
		writeError(w, e.code, e.msg)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

type restError struct {
	code int
	msg  string
}

// DashboardConfigJSON is the answer of GET /config (Flink's
// DashboardConfiguration).
type DashboardConfigJSON struct {
	RefreshInterval int64  `json:"refresh-interval"` // ms
	TimezoneName    string `json:"timezone-name"`
	TimezoneOffset  int    `json:"timezone-offset"` // ms east of UTC
	FlinkVersion    string `json:"flink-version"`   // weir's version
	FlinkRevision   string `json:"flink-revision"`  // weir's VCS revision
	Features        struct {
		WebSubmit  bool `json:"web-submit"`
		WebCancel  bool `json:"web-cancel"`
		WebRescale bool `json:"web-rescale"`
		WebHistory bool `json:"web-history"`
	} `json:"features"`
}

// dashboardRefresh is Flink's web.refresh-interval default.
const dashboardRefresh = 3 * time.Second

func (jm *JobManager) handleDashboardConfig(w http.ResponseWriter, r *http.Request) {
	var out DashboardConfigJSON
	out.RefreshInterval = dashboardRefresh.Milliseconds()
	name, offset := time.Now().Zone()
	out.TimezoneName, out.TimezoneOffset = name, offset*1000
	out.FlinkVersion, out.FlinkRevision = buildVersion()
	// Jobs are cancelled with PATCH /jobs/{id} and submitted with the
	// jar endpoints (jars.go); weir has no page to rescale or browse the
	// history from.
	out.Features.WebCancel = true
	out.Features.WebSubmit = true
	writeJSON(w, http.StatusOK, out)
}

// buildVersion returns weir's module version and VCS revision as the
// binary recorded them ("dev" and "unknown" when it did not).
func buildVersion() (version, revision string) {
	version, revision = "dev", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	var rev, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		}
	}
	if rev != "" {
		revision = rev
		if at != "" {
			revision += " @ " + at // Flink's "<commit> @ <date>"
		}
	}
	return
}

// JobOverviewJSON is one job in GET /jobs/overview, as Flink's
// JobDetails.JobDetailsSerializer writes it (the published OpenAPI
// description of this class names its Java fields instead).
type JobOverviewJSON struct {
	JID              string `json:"jid"`
	Name             string `json:"name"`
	State            string `json:"state"`
	StartTime        int64  `json:"start-time"`
	EndTime          int64  `json:"end-time"` // -1 while the job runs
	Duration         int64  `json:"duration"`
	LastModification int64  `json:"last-modification"`
	// Tasks counts the job's subtasks by execution state (Flink's
	// ExecutionState names, lower case) and in all.
	Tasks map[string]int `json:"tasks"`
}

// JobsOverviewJSON is the answer of GET /jobs/overview.
type JobsOverviewJSON struct {
	Jobs []JobOverviewJSON `json:"jobs"`
}

// executionStates are Flink's ExecutionState values in its order.
var executionStates = []string{"created", "scheduled", "deploying", "running", "finished",
	"canceling", "canceled", "failed", "reconciling", "initializing"}

func (jm *JobManager) handleJobsOverview(w http.ResponseWriter, r *http.Request) {
	d := jm.dispatcher
	d.mu.Lock()
	out := JobsOverviewJSON{Jobs: make([]JobOverviewJSON, 0, len(d.order))}
	for _, id := range d.order {
		out.Jobs = append(out.Jobs, d.jobs[id].overviewLocked())
	}
	d.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (j *job) overviewLocked() JobOverviewJSON {
	det := j.detailsLocked()
	o := JobOverviewJSON{JID: j.id, Name: j.name, State: j.state,
		StartTime: det.StartTime, EndTime: det.EndTime, Duration: det.Duration, Tasks: make(map[string]int)}
	for _, s := range executionStates {
		o.Tasks[s] = 0
	}
	last := j.created
	for _, t := range []time.Time{j.attemptStart, j.end} {
		if t.After(last) {
			last = t
		}
	}
	if n := len(j.failures); n > 0 && j.failures[n-1].at.After(last) {
		last = j.failures[n-1].at
	}
	o.LastModification = last.UnixMilli()
	for _, v := range j.vertices {
		o.Tasks["total"] += v.Parallelism
		for s := range v.Parallelism {
			o.Tasks[j.subtaskStateLocked(v, s)]++
		}
	}
	return o
}

// subtaskStateLocked is the Flink execution state of subtask s of v: its
// worker's state while an attempt has workers, otherwise what the job's
// state implies.
func (j *job) subtaskStateLocked(v JobVertexJSON, s int) string {
	if s < len(v.Subtasks) && len(j.workers) > 0 {
		if w := j.workerOf(v.Subtasks[s].TaskManager); w != nil {
			switch w.state {
			case attemptDeploying:
				return "deploying"
			case attemptRunning:
				if j.cancel && !IsTerminalJobState(j.state) {
					return "canceling"
				}
				return "running"
			case JobFinished:
				return "finished"
			case JobCanceled:
				return "canceled"
			case JobFailed, workerLost:
				return "failed"
			}
		}
	}
	switch j.state {
	case JobFinished:
		return "finished"
	case JobCanceled, JobFailed:
		return "canceled"
	}
	return "created"
}

// JobPlanJSON is the answer of GET /jobs/{id}/plan (Flink's JobPlanInfo).
type JobPlanJSON struct {
	Plan PlanJSON `json:"plan"`
}

// PlanJSON is a job's plan as Flink's JsonPlanGenerator writes it, in
// GET /jobs/{id}/plan and as the "plan" of GET /jobs/{id} (Flink's
// JobDetailsInfo carries the same object).
type PlanJSON struct {
	JID   string         `json:"jid"`
	Name  string         `json:"name"`
	Type  string         `json:"type"`
	Nodes []PlanNodeJSON `json:"nodes"`
}

// PlanNodeJSON is one job vertex in the plan.
type PlanNodeJSON struct {
	ID               string `json:"id"`
	Parallelism      int    `json:"parallelism"`
	Operator         string `json:"operator"`
	OperatorStrategy string `json:"operator_strategy"`
	Description      string `json:"description"`
	// Inputs is empty for a source: Flink 1.x leaves it out there, Flink
	// 2's typed JobPlanInfo.Plan writes [], which both read.
	Inputs         []PlanInputJSON `json:"inputs"`
	OptimizerProps struct{}        `json:"optimizer_properties"`
}

// PlanInputJSON is one input edge of a plan node.
type PlanInputJSON struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

func (jm *JobManager) handleJobPlan(w http.ResponseWriter, r *http.Request) {
	jm.withJob(w, r, func(j *job) any { return j.planJSON() })
}

func (j *job) planJSON() JobPlanJSON {
	var out JobPlanJSON
	out.Plan.JID, out.Plan.Name = j.id, j.name
	out.Plan.Type = "STREAMING"
	if config.RuntimeMode.Get(j.cfg) == config.RuntimeModeBatch {
		out.Plan.Type = "BATCH"
	}
	out.Plan.Nodes = make([]PlanNodeJSON, 0, len(j.plan.Vertices))
	for _, v := range j.plan.Vertices {
		n := PlanNodeJSON{ID: v.ID, Parallelism: v.Parallelism, Operator: v.Name, Description: v.Name, Inputs: []PlanInputJSON{}}
		var kinds, names []string
		for _, op := range v.Operators {
			kinds = append(kinds, op.Kind)
			names = append(names, op.Name)
		}
		// Flink writes the description HTML-escaped, its line breaks
		// as <br/>: here one line per chained operator. The chain's
		// kinds say how it processes.
		if len(names) > 0 {
			n.Description = strings.Join(names, "\n")
		}
		n.Description = strings.ReplaceAll(html.EscapeString(n.Description), "\n", "<br/>")
		n.OperatorStrategy = strings.Join(kinds, " -> ")
		for k, e := range v.Inputs {
			if e < 0 || e >= len(j.plan.Edges) {
				continue
			}
			edge := j.plan.Edges[e]
			n.Inputs = append(n.Inputs, PlanInputJSON{Num: k, ID: edge.Source, ShipStrategy: edge.Partitioning,
				Exchange: "pipelined_bounded"})
		}
		out.Plan.Nodes = append(out.Plan.Nodes, n)
	}
	return out
}

// JobConfigJSON is the answer of GET /jobs/{id}/config, as Flink's
// JobConfigInfo serializer writes it.
type JobConfigJSON struct {
	JID             string `json:"jid"`
	Name            string `json:"name"`
	ExecutionConfig struct {
		ExecutionMode   string            `json:"execution-mode"`
		RestartStrategy string            `json:"restart-strategy"`
		JobParallelism  int               `json:"job-parallelism"`
		ObjectReuseMode bool              `json:"object-reuse-mode"`
		UserConfig      map[string]string `json:"user-config"`
	} `json:"execution-config"`
}

func (jm *JobManager) handleJobConfig(w http.ResponseWriter, r *http.Request) {
	jm.withJob(w, r, func(j *job) any {
		cfg := j.cfg
		var out JobConfigJSON
		out.JID, out.Name = j.id, j.name
		ec := &out.ExecutionConfig
		ec.ExecutionMode = "PIPELINED"
		if config.RuntimeMode.Get(cfg) == config.RuntimeModeBatch {
			ec.ExecutionMode = "BATCH"
		}
		ec.RestartStrategy = describeRestart(cfg)
		// Flink's ExecutionConfig.PARALLELISM_DEFAULT (-1) when the job
		// sets none.
		ec.JobParallelism = -1
		switch {
		case j.sub.Parallelism > 0:
			ec.JobParallelism = j.sub.Parallelism
		case cfg.IsSet(config.Parallelism.Key):
			ec.JobParallelism = config.Parallelism.Get(cfg)
		}
		// weir's operators never reuse record objects.
		ec.ObjectReuseMode = false
		// The job's configuration: its -D options and what its program
		// set (flags, code), security ones removed.
		ec.UserConfig = cfg.Map()
		return out
	})
}

// describeRestart says in words which restart strategy a job has, as
// Flink's RestartStrategyConfiguration descriptions do.
func describeRestart(cfg *config.Configuration) string {
	typ := config.RestartStrategyFixedDelay // the cluster's default
	if cfg.IsSet(config.RestartStrategy.Key) {
		typ = config.RestartStrategy.Get(cfg)
	}
	switch typ {
	case config.RestartStrategyFixedDelay:
		return fmt.Sprintf("Restart with fixed delay (%v). #%d restart attempts.",
			config.RestartDelay.Get(cfg), config.RestartAttempts.Get(cfg))
	case config.RestartStrategyFailureRate:
		return fmt.Sprintf("Failure rate restart with maximum of %d failures within interval %v and fixed delay %v.",
			config.FailureRateMaxFailures.Get(cfg), config.FailureRateInterval.Get(cfg), config.FailureRateDelay.Get(cfg))
	case config.RestartStrategyExponentialDelay:
		return fmt.Sprintf("Restart with exponential delay: starting at %v, increasing by %v, with maximum %v.",
			config.ExponentialInitialBackoff.Get(cfg), config.ExponentialMultiplier.Get(cfg), config.ExponentialMaxBackoff.Get(cfg))
	}
	return "Restart deactivated."
}

// CheckpointConfigJSON is the answer of GET /jobs/{id}/checkpoints/config
// (Flink's CheckpointConfigInfo). Durations are milliseconds. It describes
// the checkpointing the job runs with: its -D options and what its
// program set in code, which reach the JobManager with the job graph.
type CheckpointConfigJSON struct {
	Mode            string `json:"mode"` // exactly_once or at_least_once
	Interval        int64  `json:"interval"`
	Timeout         int64  `json:"timeout"`
	MinPause        int64  `json:"min_pause"`
	MaxConcurrent   int64  `json:"max_concurrent"`
	Externalization struct {
		Enabled              bool `json:"enabled"`
		DeleteOnCancellation bool `json:"delete_on_cancellation"`
	} `json:"externalization"`
	StateBackend               string `json:"state_backend"`
	CheckpointStorage          string `json:"checkpoint_storage"`
	UnalignedCheckpoints       bool   `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints int    `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout   int64  `json:"aligned_checkpoint_timeout"`
	// CheckpointsAfterTasksFinish: weir's streaming jobs keep taking
	// checkpoints when some of their tasks have finished (the finished
	// ones acknowledge with their end), as Flink does by default.
	CheckpointsAfterTasksFinish bool `json:"checkpoints_after_tasks_finish"`
	// weir has no changelog state backend: the three fields say so with
	// Flink's defaults (state.changelog.storage "memory",
	// state.backend.changelog.periodic-materialize.interval 10 min).
	StateChangelogEnabled             bool   `json:"state_changelog_enabled"`
	ChangelogPeriodicMaterialInterval int64  `json:"changelog_periodic_materialization_interval"`
	ChangelogStorage                  string `json:"changelog_storage"`
}

// flinkChangelogMaterializeInterval is Flink's default of
// state.backend.changelog.periodic-materialize.interval.
const flinkChangelogMaterializeInterval = 10 * time.Minute

func (jm *JobManager) handleCheckpointConfig(w http.ResponseWriter, r *http.Request) {
	jm.withJob(w, r, func(j *job) any {
		cfg := j.cfg
		interval := config.CheckpointInterval.Get(cfg)
		if interval <= 0 || config.RuntimeMode.Get(cfg) == config.RuntimeModeBatch {
			// Flink answers so for a job without checkpointing (a batch
			// job takes none).
			return restError{http.StatusNotFound, fmt.Sprintf("Checkpointing is not enabled for this job (%s).", j.id)}
		}
		return checkpointConfigOf(cfg)
	})
}

// checkpointConfigOf describes the checkpointing of a job with cfg.
func checkpointConfigOf(cfg *config.Configuration) CheckpointConfigJSON {
	var out CheckpointConfigJSON
	out.Mode = strings.ToLower(config.CheckpointMode.Get(cfg))
	out.Interval = config.CheckpointInterval.Get(cfg).Milliseconds()
	out.Timeout = config.CheckpointTimeout.Get(cfg).Milliseconds()
	out.MinPause = config.CheckpointMinPause.Get(cfg).Milliseconds()
	out.MaxConcurrent = int64(config.CheckpointMaxConcurrent.Get(cfg))
	dir := config.CheckpointsDir.Get(cfg)
	// Checkpoints outlive the job only in a checkpoint directory.
	out.Externalization.Enabled = dir != ""
	out.Externalization.DeleteOnCancellation = config.ExternalizedRetention.Get(cfg) == config.RetentionDeleteOnCancellation
	out.StateBackend = "HashMapStateBackend"
	if config.StateBackend.Get(cfg) == config.StateBackendPebble {
		out.StateBackend = "PebbleStateBackend"
	}
	out.CheckpointStorage = "JobManagerCheckpointStorage"
	if dir != "" {
		out.CheckpointStorage = "FileSystemCheckpointStorage"
	}
	out.UnalignedCheckpoints = config.UnalignedCheckpoints.Get(cfg)
	out.TolerableFailedCheckpoints = config.TolerableCheckpointFailures.Get(cfg)
	out.AlignedCheckpointTimeout = config.AlignedCheckpointTimeout.Get(cfg).Milliseconds()
	out.CheckpointsAfterTasksFinish = true
	out.ChangelogPeriodicMaterialInterval = flinkChangelogMaterializeInterval.Milliseconds()
	out.ChangelogStorage = "memory"
	return out
}

// JobExceptionsJSON is the answer of GET /jobs/{id}/exceptions (Flink's
// JobExceptionsInfoWithHistory). weir's failures are messages, not Java
// exceptions: exceptionName says what failed, stacktrace is the message.
// all-exceptions, deprecated in Flink, lists failed tasks, which weir's
// attempt failures do not name: it stays empty.
type JobExceptionsJSON struct {
	RootException    *string                  `json:"root-exception,omitempty"`
	Timestamp        *int64                   `json:"timestamp,omitempty"`
	AllExceptions    []ExecutionExceptionJSON `json:"all-exceptions"`
	Truncated        bool                     `json:"truncated"`
	ExceptionHistory struct {
		Entries   []RootExceptionJSON `json:"entries"`
		Truncated bool                `json:"truncated"`
	} `json:"exceptionHistory"`
}

// ExecutionExceptionJSON is one entry of all-exceptions.
type ExecutionExceptionJSON struct {
	Exception string `json:"exception"`
	Task      string `json:"task"`
	Location  string `json:"location"`
	Timestamp int64  `json:"timestamp"`
}

// RootExceptionJSON is one failure in the exception history.
type RootExceptionJSON struct {
	ExceptionName string `json:"exceptionName"`
	Stacktrace    string `json:"stacktrace"`
	Timestamp     int64  `json:"timestamp"`
	// TaskName and Location are left out: weir's attempts fail as a
	// whole, like Flink's global failures.
	TaskName             *string             `json:"taskName,omitempty"`
	Location             *string             `json:"location,omitempty"`
	ConcurrentExceptions []ExceptionInfoJSON `json:"concurrentExceptions"`
}

// ExceptionInfoJSON is a failure concurrent with a root one; weir's
// attempts fail for one reason, so the lists stay empty.
type ExceptionInfoJSON struct {
	ExceptionName string  `json:"exceptionName"`
	Stacktrace    string  `json:"stacktrace"`
	Timestamp     int64   `json:"timestamp"`
	TaskName      *string `json:"taskName,omitempty"`
	Location      *string `json:"location,omitempty"`
}

// failureName is the exceptionName of weir's attempt failures.
const failureName = "weir.JobAttemptFailure"

func (jm *JobManager) handleJobExceptions(w http.ResponseWriter, r *http.Request) {
	jm.withJob(w, r, func(j *job) any {
		var out JobExceptionsJSON
		out.AllExceptions = []ExecutionExceptionJSON{}
		out.ExceptionHistory.Entries = []RootExceptionJSON{}
		// Newest first, as Flink lists them.
		for i := len(j.failures) - 1; i >= 0; i-- {
			f := j.failures[i]
			out.ExceptionHistory.Entries = append(out.ExceptionHistory.Entries, RootExceptionJSON{
				ExceptionName: failureName, Stacktrace: fmt.Sprintf("attempt %d failed: %s", f.attempt, f.reason),
				Timestamp: f.at.UnixMilli(), ConcurrentExceptions: []ExceptionInfoJSON{},
			})
		}
		out.ExceptionHistory.Truncated = j.failuresTotal > len(j.failures)
		if j.err != "" {
			root := j.err
			out.RootException = &root
			ts := j.created.UnixMilli()
			if n := len(j.failures); n > 0 {
				ts = j.failures[n-1].at.UnixMilli()
			}
			out.Timestamp = &ts
		}
		return out
	})
}

// TaskManagerDetailsJSON is the answer of GET /taskmanagers/{id}: Flink's
// TaskManagerDetailsInfo, the TaskManager as GET /taskmanagers lists it
// with the slots its jobs hold. Left out: metrics (Flink's JVM memory and
// garbage collector figures; weir's are at /taskmanagers/{id}/metrics).
type TaskManagerDetailsJSON struct {
	TaskManagerJSON
	// AllocatedSlots has one entry per slot a job holds.
	AllocatedSlots []AllocatedSlotJSON `json:"allocatedSlots"`
}

// AllocatedSlotJSON is one slot held by a job (Flink's SlotInfo).
type AllocatedSlotJSON struct {
	JobID    string              `json:"jobId"`
	Resource ResourceProfileJSON `json:"resource"`
}

func (jm *JobManager) handleTaskManagerDetails(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	tm, ok := jm.pool.TaskManager(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("taskmanager %s not found", id))
		return
	}
	out := TaskManagerDetailsJSON{TaskManagerJSON: taskManagerJSON(tm, jm.dispatcher.dataPorts()), AllocatedSlots: []AllocatedSlotJSON{}}
	for _, job := range jm.pool.slotOwners(id) {
		if job != "" {
			out.AllocatedSlots = append(out.AllocatedSlots, AllocatedSlotJSON{JobID: job, Resource: unknownResourceProfile()})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// dataPorts returns, by TaskManager, the port of the data listener of a
// live job worker there: weir's TaskManagers have no data listener of
// their own, their workers do (those of jobs spread over several
// TaskManagers). Of several, the oldest job's.
func (d *dispatcher) dataPorts() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int)
	for _, id := range d.order {
		j := d.jobs[id]
		if IsTerminalJobState(j.state) {
			continue
		}
		for _, w := range j.workers {
			if _, seen := out[w.tm]; seen || w.dataAddress == "" || (w.state != attemptDeploying && w.state != attemptRunning) {
				continue
			}
			_, p, err := net.SplitHostPort(w.dataAddress)
			if err != nil {
				continue
			}
			if n, err := strconv.Atoi(p); err == nil {
				out[w.tm] = n
			}
		}
	}
	return out
}

// slotOwners returns the job holding each slot of TaskManager id ("" for
// a free slot).
func (p *SlotPool) slotOwners(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.tms[id]; ok {
		return slices.Clone(e.owner)
	}
	return nil
}
