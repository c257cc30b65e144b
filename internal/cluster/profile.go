package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

// Profiles on demand: the JobManager asks a TaskManager, which asks the
// worker process of a job (its control endpoint, GET /profile/{kind}).
// GET /taskmanagers/{id}/profile returns pprof's format for go tool pprof;
// GET /jobs/{id}/vertices/{vid}/flamegraph is Flink's JobVertexFlameGraph,
// built from CPU profiles of the workers that run the vertex, keeping the
// samples whose goroutines carry the vertex's label.

// maxProfileBytes bounds a profile carried in one gRPC message (gRPC's
// default limit is 4 MiB).
const maxProfileBytes = 4<<20 - 1024

// maxProfileSeconds bounds a CPU profile taken through the REST API, whose
// server answers within 30 s.
const maxProfileSeconds = 20

func (s *tmService) Profile(ctx context.Context, req *rpcpb.ProfileRequest) (*rpcpb.ProfileResponse, error) {
	a, st, err := s.runningWorker(req.GetLeaderTerm(), req.GetJobId(), func(*workerAttempt) bool { return true })
	if err != nil {
		return nil, err
	}
	u := "http://" + st.Control + "/profile/" + url.PathEscape(req.GetKind())
	if req.GetKind() == "cpu" {
		u += "?seconds=" + strconv.Itoa(int(req.GetSeconds()))
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	hreq.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "worker control endpoint: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes+1))
	switch {
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "worker control endpoint: %v", err)
	case resp.StatusCode == http.StatusBadRequest:
		return nil, status.Errorf(codes.InvalidArgument, "%s", bytes.TrimSpace(data))
	case resp.StatusCode == http.StatusConflict:
		return nil, status.Errorf(codes.FailedPrecondition, "%s", bytes.TrimSpace(data))
	case resp.StatusCode != http.StatusOK:
		return nil, status.Errorf(codes.Internal, "worker control endpoint: %s: %s", resp.Status, bytes.TrimSpace(data))
	case len(data) > maxProfileBytes:
		return nil, status.Errorf(codes.ResourceExhausted, "the profile is larger than %d bytes", maxProfileBytes)
	}
	return &rpcpb.ProfileResponse{Data: data}, nil
}

// profileParams reads ?type= (default cpu) and ?seconds= (default 10 for
// cpu).
func profileParams(r *http.Request) (kind string, seconds int, err error) {
	kind = r.URL.Query().Get("type")
	if kind == "" {
		kind = "cpu"
	}
	if !slices.Contains([]string{"cpu", "heap", "allocs", "goroutine"}, kind) {
		return "", 0, fmt.Errorf("type %q: want cpu, heap, allocs or goroutine", kind)
	}
	seconds = 10
	if s := r.URL.Query().Get("seconds"); s != "" {
		if seconds, err = strconv.Atoi(s); err != nil || seconds < 1 || seconds > maxProfileSeconds {
			return "", 0, fmt.Errorf("seconds %q: want 1 to %d", s, maxProfileSeconds)
		}
	}
	return kind, seconds, nil
}

// profileOf asks TaskManager tmID for a profile of job's worker.
func (jm *JobManager) profileOf(ctx context.Context, tmID, job, kind string, seconds int) ([]byte, error) {
	client, _, ok := jm.taskManagerClient(tmID)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "taskmanager %s not found", tmID)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+jm.opts.RPCTimeout)
	defer cancel()
	resp, err := client.Profile(ctx, &rpcpb.ProfileRequest{JobId: job, Kind: kind, Seconds: int32(seconds), LeaderTerm: jm.leaderTerm()},
		grpc.MaxCallRecvMsgSize(maxProfileBytes+4096))
	if err != nil {
		return nil, err
	}
	return resp.GetData(), nil
}

// restCode maps a gRPC error of a profile request to an HTTP status.
func restCode(err error) int {
	switch status.Code(err) {
	case codes.NotFound:
		return http.StatusNotFound
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.FailedPrecondition:
		return http.StatusConflict
	}
	return http.StatusBadGateway
}

// handleTaskManagerProfile is GET /taskmanagers/{id}/profile?job=ID
// &type=cpu|heap|allocs|goroutine&seconds=N: a profile in pprof's format
// of the worker process that runs the job on the TaskManager (the job may
// be left out when the TaskManager runs only one).
func (jm *JobManager) handleTaskManagerProfile(w http.ResponseWriter, r *http.Request) {
	tmID := r.PathValue("id")
	kind, seconds, err := profileParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	job := r.URL.Query().Get("job")
	if job == "" {
		jobs := jm.dispatcher.jobsOn(tmID)
		if len(jobs) != 1 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("taskmanager %s runs %d jobs %v: name one with ?job=", tmID, len(jobs), jobs))
			return
		}
		job = jobs[0]
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(seconds)*time.Second + 30*time.Second))
	data, err := jm.profileOf(r.Context(), tmID, job, kind, seconds)
	if err != nil {
		writeError(w, restCode(err), "profile: "+status.Convert(err).Message())
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("%s-%s-%s.pb.gz", kind, job, tmID)))
	w.Write(data)
}

// jobsOn lists the running jobs with a worker on TaskManager tmID.
func (d *dispatcher) jobsOn(tmID string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, id := range d.order {
		j := d.jobs[id]
		if j.state == JobRunning && j.workerOf(tmID) != nil {
			out = append(out, id)
		}
	}
	return out
}

// FlameGraphJSON is Flink's JobVertexFlameGraph.
type FlameGraphJSON struct {
	EndTimestamp int64          `json:"endTimestamp"`
	Data         *FlameNodeJSON `json:"data"`
}

// FlameNodeJSON is a node of the flame graph: a function, the samples in
// it and its callees.
type FlameNodeJSON struct {
	Name     string           `json:"name"`
	Value    int64            `json:"value"`
	Children []*FlameNodeJSON `json:"children"`
}

func (n *FlameNodeJSON) child(name string) *FlameNodeJSON {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	c := &FlameNodeJSON{Name: name, Children: []*FlameNodeJSON{}}
	n.Children = append(n.Children, c)
	return c
}

// addSamples adds the samples of a CPU profile whose goroutines carry
// the vertex label vid to the tree under root, stacks from the root
// function down.
func addSamples(root *FlameNodeJSON, p *profile.Profile, vid string) {
	for _, s := range p.Sample {
		if !slices.Contains(s.Label["vertex"], vid) {
			continue
		}
		n := s.Value[0] // samples
		root.Value += n
		node := root
		for i := len(s.Location) - 1; i >= 0; i-- {
			lines := s.Location[i].Line
			// Inlined functions come first in a location's lines.
			for k := len(lines) - 1; k >= 0; k-- {
				name := "?"
				if lines[k].Function != nil {
					name = lines[k].Function.Name
				}
				node = node.child(name)
				node.Value += n
			}
		}
	}
}

// handleFlameGraph is Flink's GET /jobs/{id}/vertices/{vid}/flamegraph:
// CPU profiles (?seconds=, default 5) of every worker that runs a subtask
// of the vertex, reduced to the vertex's samples.
func (jm *JobManager) handleFlameGraph(w http.ResponseWriter, r *http.Request) {
	_, seconds, err := profileParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if r.URL.Query().Get("seconds") == "" {
		seconds = 5
	}
	var tms []string
	var state string
	jm.withVertexFunc(r, func(j *job, v JobVertexJSON) {
		state = j.state
		for _, s := range v.Subtasks {
			if !slices.Contains(tms, s.TaskManager) {
				tms = append(tms, s.TaskManager)
			}
		}
	})
	if tms == nil && state == "" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s or vertex %s not found", r.PathValue("id"), r.PathValue("vid")))
		return
	}
	if state != JobRunning {
		writeError(w, http.StatusConflict, fmt.Sprintf("job %s is %s: a flame graph needs it running", r.PathValue("id"), state))
		return
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(seconds)*time.Second + 30*time.Second))
	profiles := make([][]byte, len(tms))
	errs := make([]error, len(tms))
	var wg sync.WaitGroup
	for i, tm := range tms {
		wg.Go(func() { profiles[i], errs[i] = jm.profileOf(r.Context(), tm, r.PathValue("id"), "cpu", seconds) })
	}
	wg.Wait()
	root := &FlameNodeJSON{Name: "root", Children: []*FlameNodeJSON{}}
	for i, data := range profiles {
		if errs[i] != nil {
			writeError(w, restCode(errs[i]), fmt.Sprintf("profile of taskmanager %s: %s", tms[i], status.Convert(errs[i]).Message()))
			return
		}
		p, err := profile.ParseData(data)
		if err != nil {
			writeError(w, http.StatusBadGateway, fmt.Sprintf("profile of taskmanager %s: %v", tms[i], err))
			return
		}
		addSamples(root, p, r.PathValue("vid"))
	}
	writeJSON(w, http.StatusOK, FlameGraphJSON{EndTimestamp: time.Now().UnixMilli(), Data: root})
}

// withVertexFunc calls f with the request's job and vertex under the
// dispatcher's lock, if both exist.
func (jm *JobManager) withVertexFunc(r *http.Request, f func(j *job, v JobVertexJSON)) {
	d := jm.dispatcher
	d.mu.Lock()
	defer d.mu.Unlock()
	if j := d.jobs[r.PathValue("id")]; j != nil {
		if v, _, ok := j.vertexLocked(r.PathValue("vid")); ok {
			f(j, v)
		}
	}
}
