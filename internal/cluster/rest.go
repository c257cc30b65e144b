package cluster

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
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
}

// TaskManagerJSON describes one TaskManager in GET /taskmanagers.
type TaskManagerJSON struct {
	ID          string `json:"id"`
	Address     string `json:"address"`
	SlotsNumber int    `json:"slotsNumber"`
	FreeSlots   int    `json:"freeSlots"`
	// Registered and LastHeartbeat are Unix times in milliseconds. Flink
	// calls the latter, also a point in time, "timeSinceLastHeartbeat".
	Registered    int64    `json:"registered"`
	LastHeartbeat int64    `json:"lastHeartbeat"`
	Hardware      Hardware `json:"hardware"`
}

// TaskManagersJSON is the answer of GET /taskmanagers.
type TaskManagersJSON struct {
	TaskManagers []TaskManagerJSON `json:"taskmanagers"`
}

// JobIDStatus is one job in GET /jobs.
type JobIDStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
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
	get := func(pattern string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
				return
			}
			h(w, r)
		})
	}
	get("/overview", jm.handleOverview)
	get("/taskmanagers", jm.handleTaskManagers)
	get("/taskmanagers/{id}", jm.handleTaskManager)
	get("/jobs", jm.handleJobs)
	get("/jobs/{id}", jm.handleJob)
	get("/metrics", promhttp.HandlerFor(jm.metrics.registry, promhttp.HandlerOpts{}).ServeHTTP)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("not found: %s", r.URL.Path))
	})
	return requireToken(jm.opts.Security.Token, jm.log, mux)
}

func (jm *JobManager) overview() Overview {
	tms, slots, free := jm.pool.Totals()
	// No job can run on the cluster yet, so every job count is zero.
	return Overview{TaskManagers: tms, SlotsTotal: slots, SlotsAvailable: free}
}

func (jm *JobManager) handleOverview(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jm.overview())
}

func taskManagerJSON(tm TaskManagerInfo) TaskManagerJSON {
	return TaskManagerJSON{
		ID:            tm.ResourceID,
		Address:       tm.Address,
		SlotsNumber:   tm.Slots,
		FreeSlots:     tm.FreeSlots,
		Registered:    tm.Registered.UnixMilli(),
		LastHeartbeat: tm.LastHeartbeat.UnixMilli(),
		Hardware:      tm.Hardware,
	}
}

func (jm *JobManager) handleTaskManagers(w http.ResponseWriter, r *http.Request) {
	out := TaskManagersJSON{TaskManagers: []TaskManagerJSON{}}
	for _, tm := range jm.pool.TaskManagers() {
		out.TaskManagers = append(out.TaskManagers, taskManagerJSON(tm))
	}
	writeJSON(w, http.StatusOK, out)
}

func (jm *JobManager) handleTaskManager(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	tm, ok := jm.pool.TaskManager(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("taskmanager %s not found", id))
		return
	}
	writeJSON(w, http.StatusOK, taskManagerJSON(tm))
}

// handleJobs lists no job, for the same reason as handleJob.
func (jm *JobManager) handleJobs(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, JobsJSON{Jobs: []JobIDStatus{}})
}

// handleJob knows no job: none can be submitted to the cluster yet.
func (jm *JobManager) handleJob(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, fmt.Sprintf("job %s not found", r.PathValue("id")))
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
