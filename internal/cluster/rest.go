package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirproject/weir/config"
)

// The REST API's JSON follows Flink's where Flink has the same thing, so
// that tools written against Flink's API read it.

// Overview is the answer of GET /overview.
type Overview struct {
	TaskManagers   int `json:"taskmanagers"`
	SlotsTotal     int `json:"slots-total"`
	SlotsAvailable int `json:"slots-available"`
	JobsRunning    int `json:"jobs-running"`
	JobsFinished   int `json:"jobs-finished"`
	JobsCancelled  int `json:"jobs-cancelled"`
	JobsFailed     int `json:"jobs-failed"`
	// Leader says whether this JobManager leads the cluster (always true
	// without high availability); a standby counts nothing.
	Leader bool `json:"leader"`
	// LeaderREST is the REST URL of the leader, when a standby knows it.
	LeaderREST string `json:"leader-rest,omitempty"`
}

// TaskManagerJSON describes one TaskManager in GET /taskmanagers: Flink's
// TaskManagerInfo, with weir's own address, registered and lastHeartbeat.
type TaskManagerJSON struct {
	ID string `json:"id"`
	// Path is the TaskManager's RPC address (Flink's RPC endpoint path).
	Path string `json:"path"`
	// DataPort is the port of the data listener on the TaskManager: that
	// of a job worker there which exchanges records with workers on other
	// TaskManagers (weir's workers listen on ports of their own); -1, as
	// Flink reports a TaskManager without a network listener, when none.
	DataPort int `json:"dataPort"`
	// JMXPort is -1, Flink's answer for a TaskManager without JMX.
	JMXPort int `json:"jmxPort"`
	// TimeSinceLastHeartbeat is, as in Flink, the Unix time in
	// milliseconds of the last heartbeat.
	TimeSinceLastHeartbeat int64 `json:"timeSinceLastHeartbeat"`
	SlotsNumber            int   `json:"slotsNumber"`
	FreeSlots              int   `json:"freeSlots"`
	// TotalResource and FreeResource: weir's slots have no resource
	// profile (CPU and memory are not divided among them), which Flink
	// writes as its unknown profile.
	TotalResource ResourceProfileJSON `json:"totalResource"`
	FreeResource  ResourceProfileJSON `json:"freeResource"`
	Hardware      Hardware            `json:"hardware"`
	// MemoryConfiguration: a weir TaskManager configures no memory pools
	// (no JVM), so every size is null, as Flink writes an unset one.
	MemoryConfiguration MemoryConfigurationJSON `json:"memoryConfiguration"`
	// Blocked: weir has no blocklist.
	Blocked bool `json:"blocked"`
	// Address is the same RPC address; Registered and LastHeartbeat are
	// Unix times in milliseconds (weir's own fields).
	Address       string `json:"address"`
	Registered    int64  `json:"registered"`
	LastHeartbeat int64  `json:"lastHeartbeat"`
}

// ResourceProfileJSON is Flink's ResourceProfileInfo: CPU cores and
// memory in MiB.
type ResourceProfileJSON struct {
	CPUCores          float64            `json:"cpuCores"`
	TaskHeapMemory    int                `json:"taskHeapMemory"`
	TaskOffHeapMemory int                `json:"taskOffHeapMemory"`
	ManagedMemory     int                `json:"managedMemory"`
	NetworkMemory     int                `json:"networkMemory"`
	ExtendedResources map[string]float64 `json:"extendedResources"`
}

// unknownResourceProfile is how Flink's ResourceProfileInfo writes
// ResourceProfile.UNKNOWN: -1 everywhere, no extended resources.
func unknownResourceProfile() ResourceProfileJSON {
	return ResourceProfileJSON{CPUCores: -1, TaskHeapMemory: -1, TaskOffHeapMemory: -1, ManagedMemory: -1, NetworkMemory: -1,
		ExtendedResources: map[string]float64{}}
}

// MemoryConfigurationJSON is Flink's TaskExecutorMemoryConfiguration:
// sizes in bytes, null when not configured.
type MemoryConfigurationJSON struct {
	FrameworkHeap      *int64 `json:"frameworkHeap"`
	TaskHeap           *int64 `json:"taskHeap"`
	FrameworkOffHeap   *int64 `json:"frameworkOffHeap"`
	TaskOffHeap        *int64 `json:"taskOffHeap"`
	NetworkMemory      *int64 `json:"networkMemory"`
	ManagedMemory      *int64 `json:"managedMemory"`
	JVMMetaspace       *int64 `json:"jvmMetaspace"`
	JVMOverhead        *int64 `json:"jvmOverhead"`
	TotalFlinkMemory   *int64 `json:"totalFlinkMemory"`
	TotalProcessMemory *int64 `json:"totalProcessMemory"`
}

// TaskManagersJSON is the answer of GET /taskmanagers.
type TaskManagersJSON struct {
	TaskManagers []TaskManagerJSON `json:"taskmanagers"`
}

// JobIDStatus is one job in GET /jobs.
type JobIDStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Name   string `json:"name,omitempty"`
}

// JobsJSON is the answer of GET /jobs.
type JobsJSON struct {
	Jobs []JobIDStatus `json:"jobs"`
}

// ErrorJSON is the body of every error answer, as in Flink.
type ErrorJSON struct {
	Errors []string `json:"errors"`
}

func (jm *JobManager) restHandler() http.Handler {
	mux := http.NewServeMux()
	// route answers a method the pattern does not serve with a JSON 405,
	// which the mux's own method patterns would answer in plain text.
	route := func(pattern string, handlers map[string]http.HandlerFunc) {
		if h, ok := handlers[http.MethodGet]; ok {
			handlers[http.MethodHead] = h
		}
		allowed := slices.Sorted(maps.Keys(handlers))
		limit := jm.bodyLimit(pattern)
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			h, ok := handlers[r.Method]
			if !ok {
				w.Header().Set("Allow", strings.Join(allowed, ", "))
				writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
				return
			}
			if r, ok = limitBody(w, r, limit); ok {
				h(w, r)
			}
		})
	}
	get := func(h http.HandlerFunc) map[string]http.HandlerFunc {
		return map[string]http.HandlerFunc{http.MethodGet: h}
	}
	route("/overview", get(jm.handleOverview))
	route("/config", get(jm.handleDashboardConfig))
	route("/jobs/overview", get(jm.handleJobsOverview))
	route("/jobs/{id}/plan", get(jm.handleJobPlan))
	route("/jobs/{id}/config", get(jm.handleJobConfig))
	route("/jobs/{id}/checkpoints/config", get(jm.handleCheckpointConfig))
	route("/jobs/{id}/exceptions", get(jm.handleJobExceptions))
	route("/jobmanager/config", get(jm.handleConfig))
	route("/taskmanagers", get(jm.handleTaskManagers))
	route("/taskmanagers/{id}", get(jm.handleTaskManagerDetails))
	route("/artifacts", map[string]http.HandlerFunc{http.MethodPost: jm.handleUpload})
	route("/jobs", map[string]http.HandlerFunc{http.MethodGet: jm.handleJobs, http.MethodPost: jm.handleSubmit})
	route("/jobs/{id}", map[string]http.HandlerFunc{http.MethodGet: jm.handleJob, http.MethodPatch: jm.handleCancel})
	route("/jobs/{id}/checkpoints", get(jm.handleCheckpointing))
	route("/jobs/{id}/checkpoints/details/{cid}", get(jm.handleCheckpointDetails))
	route("/jobs/{id}/checkpoints/details/{cid}/subtasks/{vid}", get(jm.handleCheckpointSubtasks))
	route("/jobs/{id}/vertices/{vid}", get(jm.handleVertex))
	route("/jobs/{id}/vertices/{vid}/backpressure", get(jm.handleBackPressure))
	route("/jobs/{id}/vertices/{vid}/watermarks", get(jm.handleWatermarks))
	route("/jobs/{id}/vertices/{vid}/metrics", get(jm.handleVertexMetrics))
	route("/jobs/{id}/vertices/{vid}/flamegraph", get(jm.handleFlameGraph))
	route("/taskmanagers/{id}/profile", get(jm.handleTaskManagerProfile))
	route("/taskmanagers/{id}/metrics", get(jm.handleTaskManagerMetrics))
	route("/jobs/{id}/savepoints", map[string]http.HandlerFunc{http.MethodPost: jm.handleSavepoint})
	route("/jobs/{id}/savepoints/{triggerid}", get(jm.handleSavepointStatus))
	route("/jobs/{id}/stop", map[string]http.HandlerFunc{http.MethodPost: jm.handleStop})
	route("/jars", get(jm.handleJars))
	route("/jars/upload", map[string]http.HandlerFunc{http.MethodPost: jm.handleJarUpload})
	route("/jars/{jarid}", map[string]http.HandlerFunc{http.MethodDelete: jm.handleJarDelete})
	route("/jars/{jarid}/run", map[string]http.HandlerFunc{http.MethodPost: jm.handleJarRun})
	route("/metrics", get(promhttp.HandlerFor(jm.metrics.registry, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("not found: %s", r.URL.Path))
	})
	var api http.Handler = mux
	if jm.ha != nil {
		api = jm.standbyREST(mux)
	}
	// The browser checks come first: they guard the dashboard's files
	// too, and they matter most without a token (browserguard.go).
	refusals := newRefusalLog(jm.log.With("endpoint", "rest"))
	return browserGuard(jm.hostGuard(), refusals.warn, WithDashboard(requireToken(jm.opts.Security.Token, refusals.warn, api)))
}

// hostGuard admits the names of the JobManager's HTTP servers, REST and
// Prometheus.
func (jm *JobManager) hostGuard() *hostGuard {
	return newHostGuard(jm.opts.AllowedHosts, jm.opts.BindHost, jm.opts.AdvertisedHost)
}

func (jm *JobManager) overview() Overview {
	if !jm.leading() {
		o := Overview{}
		if li, ok := jm.currentLeader(); ok {
			o.LeaderREST = li.REST
		}
		return o
	}
	tms, slots, free := jm.pool.Totals()
	running, finished, cancelled, failed := jm.dispatcher.counts()
	return Overview{TaskManagers: tms, SlotsTotal: slots, SlotsAvailable: free,
		JobsRunning: running, JobsFinished: finished, JobsCancelled: cancelled, JobsFailed: failed, Leader: true}
}

func (jm *JobManager) handleOverview(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jm.overview())
}

// ConfigEntryJSON is one entry of GET /jobmanager/config, Flink's shape: a
// list of {"key", "value"}.
type ConfigEntryJSON struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// handleConfig lists the JobManager's settings that clients act on; no
// secret (security.token, key files) is among them.
func (jm *JobManager) handleConfig(w http.ResponseWriter, r *http.Request) {
	o := jm.opts
	o.DefaultParallelism = max(1, o.DefaultParallelism)
	writeJSON(w, http.StatusOK, []ConfigEntryJSON{
		{config.Parallelism.Key, strconv.Itoa(o.DefaultParallelism)},
		{config.HeartbeatInterval.Key, o.HeartbeatInterval.String()},
		{config.HeartbeatTimeout.Key, o.HeartbeatTimeout.String()},
		{config.RPCTimeout.Key, o.RPCTimeout.String()},
		{config.SlotRequestTimeout.Key, o.SlotRequestTimeout.String()},
		{config.ClusterEvenlySpreadOutSlots.Key, strconv.FormatBool(o.EvenlySpreadOutSlots)},
	})
}

// taskManagerJSON describes tm; dataPorts holds the data ports of the
// TaskManagers' workers (dispatcher.dataPorts).
func taskManagerJSON(tm TaskManagerInfo, dataPorts map[string]int) TaskManagerJSON {
	port, ok := dataPorts[tm.ResourceID]
	if !ok {
		port = -1
	}
	return TaskManagerJSON{
		ID:                     tm.ResourceID,
		Path:                   tm.Address,
		DataPort:               port,
		JMXPort:                -1,
		TimeSinceLastHeartbeat: tm.LastHeartbeat.UnixMilli(),
		SlotsNumber:            tm.Slots,
		FreeSlots:              tm.FreeSlots,
		TotalResource:          unknownResourceProfile(),
		FreeResource:           unknownResourceProfile(),
		Hardware:               tm.Hardware,
		Address:                tm.Address,
		Registered:             tm.Registered.UnixMilli(),
		LastHeartbeat:          tm.LastHeartbeat.UnixMilli(),
	}
}

func (jm *JobManager) handleTaskManagers(w http.ResponseWriter, r *http.Request) {
	out := TaskManagersJSON{TaskManagers: []TaskManagerJSON{}}
	ports := jm.dispatcher.dataPorts()
	for _, tm := range jm.pool.TaskManagers() {
		out.TaskManagers = append(out.TaskManagers, taskManagerJSON(tm, ports))
	}
	writeJSON(w, http.StatusOK, out)
}

func (jm *JobManager) handleJobs(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, JobsJSON{Jobs: jm.dispatcher.list()})
}

func (jm *JobManager) handleJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, ok := jm.dispatcher.details(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s not found", id))
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// ArtifactJSON is the answer of POST /artifacts.
type ArtifactJSON struct {
	SHA256 string `json:"sha256"`
}

// handleUpload stores the request body as an artifact. With ?sha256= the
// content must have that hash: a client that names the hash it meant
// learns of a corrupted upload instead of running something else.
func (jm *JobManager) handleUpload(w http.ResponseWriter, r *http.Request) {
	want := strings.ToLower(r.URL.Query().Get("sha256"))
	if want != "" && !sha256Hex.MatchString(want) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("sha256 %q is not a hex SHA-256", want))
		return
	}
	// The server's read timeout is for requests, not for executables of
	// tens of megabytes over a slow link.
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(10 * time.Minute))
	if want != "" && jm.artifacts.has(want) {
		writeJSON(w, http.StatusOK, ArtifactJSON{SHA256: want})
		return
	}
	sum, err := jm.artifacts.put(r.Body, want)
	if bodyTooLarge(w, r, err) {
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "artifact upload: "+err.Error())
		return
	}
	jm.log.Info("artifact uploaded", "sha256", sum, "peer", r.RemoteAddr)
	writeJSON(w, http.StatusOK, ArtifactJSON{SHA256: sum})
}

func (jm *JobManager) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var sub JobSubmission
	if !readJSON(w, r, &sub) {
		return
	}
	id, err := jm.dispatcher.submit(sub)
	if errors.Is(err, errUnavailable) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "job submission: "+err.Error())
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "job submission: "+err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, JobSubmitted{JobID: id})
}

// handleCancel is Flink's PATCH /jobs/{id}?mode=cancel.
func (jm *JobManager) handleCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if mode := r.URL.Query().Get("mode"); mode != "" && mode != "cancel" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("mode %q: only mode=cancel is supported", mode))
		return
	}
	if err := jm.dispatcher.cancelJob(id); err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s not found", id))
		return
	}
	writeJSON(w, http.StatusAccepted, struct{}{})
}

// SavepointRequest is the body of POST /jobs/{id}/savepoints (Flink's
// names).
type SavepointRequest struct {
	TargetDirectory string `json:"target-directory"`
	CancelJob       bool   `json:"cancel-job"`
}

// StopRequest is the body of POST /jobs/{id}/stop (Flink's names).
type StopRequest struct {
	TargetDirectory string `json:"targetDirectory"`
	Drain           bool   `json:"drain"`
}

// TriggerJSON is the answer of a savepoint or stop request: the ID to poll
// at GET /jobs/{id}/savepoints/{triggerid}.
type TriggerJSON struct {
	RequestID string `json:"request-id"`
}

func (jm *JobManager) handleSavepoint(w http.ResponseWriter, r *http.Request) {
	var req SavepointRequest
	if !readJSON(w, r, &req) {
		return
	}
	jm.startTrigger(w, r.PathValue("id"), req.TargetDirectory, req.CancelJob, false)
}

func (jm *JobManager) handleStop(w http.ResponseWriter, r *http.Request) {
	var req StopRequest
	if !readJSON(w, r, &req) {
		return
	}
	jm.startTrigger(w, r.PathValue("id"), req.TargetDirectory, true, req.Drain)
}

func (jm *JobManager) startTrigger(w http.ResponseWriter, id, dir string, stop, drain bool) {
	if dir == "" {
		writeError(w, http.StatusBadRequest, "no target directory for the savepoint")
		return
	}
	tid, err := jm.dispatcher.trigger(id, dir, stop, drain)
	switch {
	case errors.Is(err, errNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s not found", id))
	case err != nil:
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeJSON(w, http.StatusAccepted, TriggerJSON{RequestID: tid})
	}
}

func (jm *JobManager) handleSavepointStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, err := jm.dispatcher.triggerStatus(id, r.PathValue("triggerid"))
	switch {
	case errors.Is(err, errNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s not found", id))
	case err != nil:
		writeError(w, http.StatusNotFound, err.Error())
	default:
		writeJSON(w, http.StatusOK, st)
	}
}

// readJSON decodes the request body into v, or answers 400 (413 for a
// body over the endpoint's limit) and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		if !bodyTooLarge(w, r, err) {
			writeError(w, http.StatusBadRequest, "request body: "+err.Error())
		}
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Debug("writing a REST answer failed", "error", err)
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorJSON{Errors: []string{msg}})
}
