package cluster

import (
	"fmt"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
	"github.com/weirproject/weir/internal/runtime"
)

// The metric parts of Flink's monitoring API: a job's vertices with their
// subtasks, back pressure, watermarks and metrics, and its checkpoint
// statistics, from what the workers report with their TaskManagers'
// heartbeats (stream/worker.go samples the task counters; rates cover
// about the last second).

// aggregateSubtasksLocked collects the subtask metrics of the current
// attempt's workers and merges their checkpoint histories into the job's.
func (j *job) aggregateSubtasksLocked() {
	if j.subtaskMetrics == nil {
		j.subtaskMetrics = make(map[string][]SubtaskMetricsJSON, len(j.vertices))
		for _, v := range j.vertices {
			j.subtaskMetrics[v.ID] = make([]SubtaskMetricsJSON, v.Parallelism)
		}
	}
	failed := 0
	for _, w := range j.workers {
		for _, v := range w.status.GetVertices() {
			subtasks := j.subtaskMetrics[v.GetId()]
			for _, p := range v.GetSubtasks() {
				if i := int(p.GetSubtask()); i >= 0 && i < len(subtasks) {
					subtasks[i] = subtaskMetricsFromProto(p)
				}
			}
		}
		failed = max(failed, int(w.status.GetFailedCheckpoints()))
		for _, c := range w.status.GetCheckpoints() {
			j.addCheckpointLocked(checkpointStatsFromProto(c))
		}
	}
	j.ckFailedAttempt = failed
	for i := range j.vertices {
		v := &j.vertices[i]
		m := &v.Metrics
		m.ReadBytes, m.WriteBytes = 0, 0
		m.AccumulatedBackPressured, m.AccumulatedIdle, m.AccumulatedBusy = 0, 0, 0
		complete := true
		for _, s := range j.subtaskMetrics[v.ID] {
			m.ReadBytes += s.BytesIn
			m.WriteBytes += s.BytesOut
			m.AccumulatedBackPressured += s.AccumulatedBackPressuredMs
			m.AccumulatedIdle += s.AccumulatedIdleMs
			m.AccumulatedBusy += float64(s.AccumulatedBusyMs)
			complete = complete && s.State != ""
		}
		m.ReadBytesComplete, m.WriteBytesComplete = complete, complete
		m.ReadRecordsComplete, m.WriteRecordsComplete = complete, complete
	}
}

// newRestoredCheckpoint describes a restore from path: a checkpoint's
// chk-<n> directory, or a savepoint.
func newRestoredCheckpoint(p string, at time.Time) *restoredCheckpoint {
	r := &restoredCheckpoint{path: p, at: at, savepoint: true}
	base := path.Base(strings.TrimRight(p, "/"))
	if n, ok := strings.CutPrefix(base, "chk-"); ok {
		if id, err := strconv.ParseInt(n, 10, 64); err == nil {
			r.id, r.savepoint = id, false
		}
	}
	return r
}

// vertexLocked finds the job's vertex vid.
func (j *job) vertexLocked(vid string) (JobVertexJSON, int, bool) {
	for i, v := range j.vertices {
		if v.ID == vid {
			return v, i, true
		}
	}
	return JobVertexJSON{}, 0, false
}

// subtaskStatusLocked is the execution state of a subtask: what its
// worker reported, or what the job's state implies before that.
func (j *job) subtaskStatusLocked(m SubtaskMetricsJSON) string {
	if m.State != "" {
		return m.State
	}
	switch j.state {
	case JobFinished, JobFailed, JobCanceled:
		return j.state
	case JobCancelling:
		return "CANCELING"
	case JobRunning:
		return "DEPLOYING"
	}
	return "CREATED"
}

// SubtaskAttemptJSON is one subtask in GET /jobs/{id}/vertices/{vid}
// (Flink's SubtaskExecutionAttemptDetailsInfo).
type SubtaskAttemptJSON struct {
	Subtask       int           `json:"subtask"`
	Status        string        `json:"status"`
	Attempt       int           `json:"attempt"`
	Host          string        `json:"host"`
	StartTime     int64         `json:"start-time"`
	EndTime       int64         `json:"end-time"`
	Duration      int64         `json:"duration"`
	Metrics       IOMetricsJSON `json:"metrics"`
	TaskManagerID string        `json:"taskmanager-id"`
	// StartTimeCompat is Flink's deprecated duplicate of StartTime.
	StartTimeCompat int64 `json:"start_time"`
}

// IOMetricsJSON is Flink's IOMetricsInfo: a subtask's or vertex's
// records and network bytes.
type IOMetricsJSON struct {
	ReadBytes            int64 `json:"read-bytes"`
	ReadBytesComplete    bool  `json:"read-bytes-complete"`
	WriteBytes           int64 `json:"write-bytes"`
	WriteBytesComplete   bool  `json:"write-bytes-complete"`
	ReadRecords          int64 `json:"read-records"`
	ReadRecordsComplete  bool  `json:"read-records-complete"`
	WriteRecords         int64 `json:"write-records"`
	WriteRecordsComplete bool  `json:"write-records-complete"`
	// Milliseconds back pressured, idle and busy since the subtasks
	// started (later Flink, 1.16), summed over a vertex's subtasks.
	AccumulatedBackPressured int64   `json:"accumulated-backpressured-time"`
	AccumulatedIdle          int64   `json:"accumulated-idle-time"`
	AccumulatedBusy          float64 `json:"accumulated-busy-time"`
}

// JobVertexDetailsJSON is the answer of GET /jobs/{id}/vertices/{vid}.
type JobVertexDetailsJSON struct {
	ID             string               `json:"id"`
	Name           string               `json:"name"`
	Parallelism    int                  `json:"parallelism"`
	MaxParallelism int                  `json:"maxParallelism"`
	Now            int64                `json:"now"`
	Subtasks       []SubtaskAttemptJSON `json:"subtasks"`
}

func (j *job) vertexDetailsLocked(v JobVertexJSON, index int, now time.Time) JobVertexDetailsJSON {
	out := JobVertexDetailsJSON{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: j.plan.Vertices[index].MaxParallelism,
		Now: now.UnixMilli(), Subtasks: []SubtaskAttemptJSON{}}
	start, end := j.attemptStart, now
	if !j.end.IsZero() {
		end = j.end
	}
	for i := range v.Parallelism {
		var m SubtaskMetricsJSON
		if ms := j.subtaskMetrics[v.ID]; i < len(ms) {
			m = ms[i]
		}
		s := SubtaskAttemptJSON{Subtask: i, Status: j.subtaskStatusLocked(m), Attempt: max(0, j.attempt-1),
			StartTime: start.UnixMilli(), EndTime: -1, Duration: end.Sub(start).Milliseconds(),
			Metrics: IOMetricsJSON{ReadBytes: m.BytesIn, WriteBytes: m.BytesOut, ReadRecords: m.RecordsIn, WriteRecords: m.RecordsOut,
				ReadBytesComplete: m.State != "", WriteBytesComplete: m.State != "", ReadRecordsComplete: m.State != "", WriteRecordsComplete: m.State != "",
				AccumulatedBackPressured: m.AccumulatedBackPressuredMs, AccumulatedIdle: m.AccumulatedIdleMs, AccumulatedBusy: float64(m.AccumulatedBusyMs)}}
		if start.IsZero() {
			s.StartTime, s.Duration = -1, -1
		}
		if !j.end.IsZero() {
			s.EndTime = j.end.UnixMilli()
		}
		s.StartTimeCompat = s.StartTime
		if i < len(v.Subtasks) {
			s.Host, s.TaskManagerID = v.Subtasks[i].TaskManagerAddress, v.Subtasks[i].TaskManager
		}
		out.Subtasks = append(out.Subtasks, s)
	}
	return out
}

func (jm *JobManager) handleVertex(w http.ResponseWriter, r *http.Request) {
	jm.withVertex(w, r, func(j *job, v JobVertexJSON, index int) any {
		return j.vertexDetailsLocked(v, index, time.Now())
	})
}

// withVertex calls f with the job and vertex of the request under the
// dispatcher's lock, or answers 404.
func (jm *JobManager) withVertex(w http.ResponseWriter, r *http.Request, f func(j *job, v JobVertexJSON, index int) any) {
	jm.withJob(w, r, func(j *job) any {
		vid := r.PathValue("vid")
		v, i, ok := j.vertexLocked(vid)
		if !ok {
			return restError{http.StatusNotFound, fmt.Sprintf("vertex %s not found in job %s", vid, j.id)}
		}
		return f(j, v, i)
	})
}

// BackPressureJSON is the answer of GET /jobs/{id}/vertices/{vid}/backpressure
// (Flink's JobVertexBackPressureInfo). Flink since 1.13 derives it from
// backPressuredTimeMsPerSecond, as weir does: ratio is that time over a
// second.
type BackPressureJSON struct {
	Status       string                    `json:"status"`
	Level        string                    `json:"backpressure-level"`
	EndTimestamp int64                     `json:"end-timestamp"`
	Subtasks     []SubtaskBackPressureJSON `json:"subtasks"`
}

// SubtaskBackPressureJSON is one subtask of BackPressureJSON.
type SubtaskBackPressureJSON struct {
	Subtask   int     `json:"subtask"`
	Level     string  `json:"backpressure-level"`
	Ratio     float64 `json:"ratio"`
	IdleRatio float64 `json:"idleRatio"`
	BusyRatio float64 `json:"busyRatio"`
}

// backPressureLevel is Flink's classification of a back pressure ratio.
func backPressureLevel(ratio float64) string {
	switch {
	case ratio <= 0.10:
		return "ok"
	case ratio <= 0.5:
		return "low"
	}
	return "high"
}

func (jm *JobManager) handleBackPressure(w http.ResponseWriter, r *http.Request) {
	jm.withVertex(w, r, func(j *job, v JobVertexJSON, _ int) any {
		out := BackPressureJSON{Status: "ok", EndTimestamp: time.Now().UnixMilli(), Subtasks: []SubtaskBackPressureJSON{}}
		worst := 0.0
		for i, m := range j.subtaskMetrics[v.ID] {
			ratio := m.BackPressuredTimeMsPerSecond / 1000
			worst = max(worst, ratio)
			out.Subtasks = append(out.Subtasks, SubtaskBackPressureJSON{Subtask: i, Level: backPressureLevel(ratio), Ratio: ratio,
				IdleRatio: m.IdleTimeMsPerSecond / 1000, BusyRatio: m.BusyTimeMsPerSecond / 1000})
		}
		out.Level = backPressureLevel(worst)
		return out
	})
}

// MetricJSON is one metric of Flink's MetricCollectionResponseBody,
// which Flink writes as a bare JSON array of these. Value is absent when
// only the available metric names are listed.
type MetricJSON struct {
	ID    string  `json:"id"`
	Value *string `json:"value,omitempty"`
}

// subtaskMetricValues lists a subtask's metrics under Flink's names.
func subtaskMetricValues(m SubtaskMetricsJSON, now time.Time) []struct {
	name  string
	value string
} {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	out := []struct{ name, value string }{
		{"numRecordsIn", i(m.RecordsIn)},
		{"numRecordsOut", i(m.RecordsOut)},
		{"numBytesIn", i(m.BytesIn)},
		{"numBytesOut", i(m.BytesOut)},
		{"numRecordsInPerSecond", f(m.RecordsInPerSecond)},
		{"numRecordsOutPerSecond", f(m.RecordsOutPerSecond)},
		{"numBytesInPerSecond", f(m.BytesInPerSecond)},
		{"numBytesOutPerSecond", f(m.BytesOutPerSecond)},
		{"busyTimeMsPerSecond", f(m.BusyTimeMsPerSecond)},
		{"idleTimeMsPerSecond", f(m.IdleTimeMsPerSecond)},
		{"backPressuredTimeMsPerSecond", f(m.BackPressuredTimeMsPerSecond)},
		{"accumulateBusyTimeMs", i(m.AccumulatedBusyMs)},
		{"accumulateIdleTimeMs", i(m.AccumulatedIdleMs)},
		{"accumulateBackPressuredTimeMs", i(m.AccumulatedBackPressuredMs)},
		{"buffers.inPoolUsage", f(m.InPoolUsage)},
		{"buffers.outPoolUsage", f(m.OutPoolUsage)},
		{"buffers.inputQueueLength", i(m.BufferedIn)},
		{"currentInputWatermark", i(m.InputWatermark)},
		{"currentOutputWatermark", i(m.OutputWatermark)},
	}
	// Operator metrics, as Flink names them in a vertex's metrics:
	// "<subtask>.<operator name>.<metric>".
	for _, g := range m.Gauges {
		out = append(out, struct{ name, value string }{g.Operator + "." + g.Name, i(g.Value)})
	}
	if m.OutputWatermark != runtime.NoTimestamp && m.OutputWatermark != math.MaxInt64 {
		// How far event time is behind the wall clock at this subtask.
		out = append(out, struct{ name, value string }{"watermarkLag", i(now.UnixMilli() - m.OutputWatermark)})
	}
	return out
}

// vertexMetricsLocked lists "<subtask>.<name>" metrics of a vertex that
// keep says to keep.
func (j *job) vertexMetricsLocked(v JobVertexJSON, keep func(name string) bool) []MetricJSON {
	out := []MetricJSON{}
	now := time.Now()
	for s, m := range j.subtaskMetrics[v.ID] {
		if m.State == "" {
			continue // not reported yet
		}
		for _, mv := range subtaskMetricValues(m, now) {
			if keep(mv.name) {
				value := mv.value
				out = append(out, MetricJSON{ID: fmt.Sprintf("%d.%s", s, mv.name), Value: &value})
			}
		}
	}
	return out
}

func (jm *JobManager) handleWatermarks(w http.ResponseWriter, r *http.Request) {
	jm.withVertex(w, r, func(j *job, v JobVertexJSON, _ int) any {
		return j.vertexMetricsLocked(v, func(name string) bool { return name == "currentInputWatermark" })
	})
}

// handleVertexMetrics is Flink's GET /jobs/{id}/vertices/{vid}/metrics:
// without ?get the names of the available metrics, with
// ?get=a,b,... their values.
func (jm *JobManager) handleVertexMetrics(w http.ResponseWriter, r *http.Request) {
	jm.withVertex(w, r, func(j *job, v JobVertexJSON, _ int) any {
		return selectMetrics(j.vertexMetricsLocked(v, func(string) bool { return true }), r.URL.Query().Get("get"))
	})
}

// handleTaskManagerMetrics is Flink's GET /taskmanagers/{id}/metrics:
// the TaskManager's process and its running workers together, as its
// latest heartbeat answer reported them, under Flink's names where the
// meaning is the same (the Go heap for the JVM's) and weir's own
// otherwise; ?get= selects values as for a vertex.
func (jm *JobManager) handleTaskManagerMetrics(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	jm.mu.Lock()
	m := jm.monitors[id]
	var p *rpcpb.ProcessMetrics
	if m != nil {
		p = m.process
	}
	jm.mu.Unlock()
	if m == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("taskmanager %s not found", id))
		return
	}
	var all []MetricJSON
	if p != nil {
		i := func(v int64) string { return strconv.FormatInt(v, 10) }
		for _, kv := range [][2]string{
			{"Status.JVM.Memory.Heap.Used", i(p.GetHeapBytes())},
			{"Status.JVM.CPU.Time", i(int64(p.GetCpuSeconds() * 1e9))},
			{"Status.JVM.GarbageCollector.Go.Count", i(p.GetGcCount())},
			{"Status.JVM.GarbageCollector.Go.Time", i(p.GetGcPauseNs() / 1e6)},
			{"Status.Process.Goroutines", i(p.GetGoroutines())},
			{"Status.Process.RSS", i(p.GetRssBytes())},
			{"Status.Process.OpenFiles", i(p.GetOpenFiles())},
			{"Status.Process.Count", i(int64(p.GetProcesses()))},
		} {
			value := kv[1]
			all = append(all, MetricJSON{ID: kv[0], Value: &value})
		}
	}
	writeJSON(w, http.StatusOK, selectMetrics(all, r.URL.Query().Get("get")))
}

// selectMetrics answers a metrics request: without get the available
// ids, with get=a,b,... the values of those.
func selectMetrics(all []MetricJSON, get string) []MetricJSON {
	out := []MetricJSON{}
	if get == "" {
		for _, m := range all {
			out = append(out, MetricJSON{ID: m.ID})
		}
		return out
	}
	wanted := map[string]bool{}
	for _, g := range strings.Split(get, ",") {
		wanted[strings.TrimSpace(g)] = true
	}
	for _, m := range all {
		if wanted[m.ID] {
			out = append(out, m)
		}
	}
	return out
}
