package cluster

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

// The worker gateway is a TaskManager's loopback HTTP endpoint for its own
// workers: what a worker must ask the JobManager goes through the
// TaskManager that started it, under the TaskManager's registration. A
// worker names it by WEIR_TM_GATEWAY (host:port) and authenticates with
// its attempt's WEIR_WORKER_TOKEN.
//
// It carries one call today, the confirmation of a completed checkpoint,
// and routing it through the TaskManager is part of the fence: a worker
// whose TaskManager is paused or cut off from the JobManager cannot get a
// checkpoint confirmed, so its sinks commit nothing.
const envTMGateway = "WEIR_TM_GATEWAY"

// confirmCheckpointPath is the gateway's path of a checkpoint
// confirmation; stream/worker.go posts to the same.
const confirmCheckpointPath = "/v1/checkpoints/confirm"

// gatewayConfirmRequest is the body of POST /v1/checkpoints/confirm; the
// stream package sends the same JSON.
type gatewayConfirmRequest struct {
	JobID        string `json:"jobId"`
	Attempt      int    `json:"attempt"`
	CheckpointID int64  `json:"checkpointId"`
	Path         string `json:"path"`
	Savepoint    bool   `json:"savepoint"`
	// RetainOnCancellation is the job's checkpoint retention as its
	// program configured it, which the JobManager cannot see otherwise.
	RetainOnCancellation bool `json:"retainOnCancellation"`
}

// listenGateway opens the gateway's loopback listener.
func listenGateway() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("worker gateway: %w", err)
	}
	return ln, nil
}

func (tm *TaskManager) gatewayHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+confirmCheckpointPath, tm.handleConfirmCheckpoint)
	return mux
}

func (tm *TaskManager) handleConfirmCheckpoint(rw http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		http.Error(rw, fmt.Sprintf(format, args...), code)
	}
	var req gatewayConfirmRequest
	if err := json.NewDecoder(http.MaxBytesReader(rw, r.Body, 64<<10)).Decode(&req); err != nil {
		fail(http.StatusBadRequest, "bad request: %v", err)
		return
	}
	tm.workers.mu.Lock()
	a := tm.workers.attempts[req.JobID]
	tm.workers.mu.Unlock()
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if a == nil || subtle.ConstantTimeCompare([]byte(token), []byte(a.token)) != 1 {
		fail(http.StatusUnauthorized, "no job %s with this worker token on taskmanager %s", req.JobID, tm.opts.ResourceID)
		return
	}
	if a.attempt != req.Attempt {
		fail(http.StatusConflict, "job %s attempt %d was replaced on taskmanager %s by attempt %d", req.JobID, req.Attempt, tm.opts.ResourceID, a.attempt)
		return
	}
	tm.mu.Lock()
	regID := tm.regID
	tm.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), tm.opts.RPCTimeout)
	defer cancel()
	_, err := tm.jobManager().ConfirmCheckpoint(ctx, &rpcpb.ConfirmCheckpointRequest{
		LeaderTerm: a.term,
		ResourceId: tm.opts.ResourceID, RegistrationId: regID, JobId: req.JobID, Attempt: int32(req.Attempt),
		WorkerIndex: int32(a.workerIndex), CheckpointId: req.CheckpointID, Path: req.Path, Savepoint: req.Savepoint,
		RetainOnCancellation: req.RetainOnCancellation,
	})
	switch status.Code(err) {
	case codes.OK:
		rw.WriteHeader(http.StatusNoContent)
	case codes.FailedPrecondition, codes.NotFound:
		tm.log.Warn("the jobmanager refused a checkpoint: the attempt is no longer current", "job", req.JobID, "attempt", req.Attempt,
			"checkpoint", req.CheckpointID, "error", grpcMessage(err))
		fail(http.StatusConflict, "jobmanager refused checkpoint %d: %s", req.CheckpointID, grpcMessage(err))
	default:
		fail(http.StatusServiceUnavailable, "jobmanager %s did not confirm checkpoint %d: %s", tm.jobManagerAddr(), req.CheckpointID, grpcMessage(err))
	}
}

// serveGateway serves the gateway until the TaskManager stops.
func (tm *TaskManager) serveGateway() (stop func()) {
	srv := &http.Server{Handler: tm.gatewayHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(tm.gatewayLn)
	}()
	return func() {
		srv.Close()
		<-done
	}
}
