package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

// workerCancelGrace is how long a cancelled worker has to cancel its job
// after SIGTERM before it is killed.
const workerCancelGrace = 10 * time.Second

// workerShutdownGrace is how long the workers of a TaskManager that shuts
// down have to cancel their jobs.
const workerShutdownGrace = 5 * time.Second

// endedAttemptRetention is how long a TaskManager keeps reporting an
// attempt that ended: long enough for the JobManager to see it in a few
// heartbeats.
const endedAttemptRetention = time.Minute

// Environment of a worker process; stream.Worker*Env name the same.
const (
	envWorkerStatus      = "WEIR_WORKER_STATUS"
	envWorkerJobID       = "WEIR_JOB_ID"
	envWorkerToken       = "WEIR_WORKER_TOKEN"
	envWorkerFingerprint = "WEIR_JOB_FINGERPRINT"
)

// workerStatus is a worker's status file (stream.WorkerStatus).
type workerStatus struct {
	State    string `json:"state"`
	Vertices []struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Parallelism int    `json:"parallelism"`
		RecordsIn   int64  `json:"recordsIn"`
		RecordsOut  int64  `json:"recordsOut"`
	} `json:"vertices"`
	CompletedCheckpoints int    `json:"completedCheckpoints"`
	LatestCheckpoint     string `json:"latestCheckpoint"`
	Error                string `json:"error"`
	Control              string `json:"control"`
}

// workerAttempt is one attempt of a job, run as a worker process.
type workerAttempt struct {
	jobID      string
	attempt    int
	dir        string
	statusPath string
	token      string
	done       chan struct{} // closed when the attempt ended

	mu       sync.Mutex
	state    string // DEPLOYING, RUNNING, FINISHED, FAILED, CANCELED
	err      string
	canceled bool
	proc     *os.Process
	status   workerStatus // last read
	ended    time.Time
}

// workers are a TaskManager's job attempts.
type workers struct {
	tm *TaskManager

	mu       sync.Mutex
	attempts map[string]*workerAttempt // by job ID
}

func (s *tmService) SubmitJob(ctx context.Context, req *rpcpb.SubmitJobRequest) (*rpcpb.SubmitJobResponse, error) {
	tm := s.tm
	tm.mu.Lock()
	regID := tm.regID
	tm.mu.Unlock()
	switch {
	case req.GetRegistrationId() != regID:
		return nil, status.Errorf(codes.FailedPrecondition, "taskmanager %s has no registration %s", tm.opts.ResourceID, req.GetRegistrationId())
	case req.GetJobId() == "" || req.GetAttempt() < 1:
		return nil, status.Error(codes.InvalidArgument, "a job submission needs a job ID and an attempt number")
	case !sha256Hex.MatchString(req.GetArtifactSha256()):
		return nil, status.Errorf(codes.InvalidArgument, "artifact %q is not a hex SHA-256", req.GetArtifactSha256())
	}
	w := tm.workers
	w.mu.Lock()
	if old := w.attempts[req.GetJobId()]; old != nil {
		// An earlier attempt that still runs here has been given up by
		// the JobManager: two attempts must not write the same output.
		old.cancel(0)
	}
	a := &workerAttempt{
		jobID:   req.GetJobId(),
		attempt: int(req.GetAttempt()),
		token:   newID() + newID(),
		done:    make(chan struct{}),
		state:   attemptDeploying,
	}
	a.dir = filepath.Join(tm.workDir, "jobs", fmt.Sprintf("%s-%d", a.jobID, a.attempt))
	a.statusPath = filepath.Join(a.dir, "status.json")
	w.attempts[a.jobID] = a
	w.mu.Unlock()
	tm.log.Info("job attempt submitted", "job", a.jobID, "attempt", a.attempt, "artifact", req.GetArtifactSha256(), "restore", req.GetRestorePath())
	tm.wg.Add(1)
	go func() {
		defer tm.wg.Done()
		w.deploy(a, req)
	}()
	return &rpcpb.SubmitJobResponse{}, nil
}

// deploy fetches the artifact and runs the worker until it exits.
func (w *workers) deploy(a *workerAttempt, req *rpcpb.SubmitJobRequest) {
	tm := w.tm
	fail := func(err error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.state, a.err = JobFailed, err.Error()
		if a.canceled {
			a.state = JobCanceled
		}
		a.ended = time.Now()
		close(a.done)
		tm.log.Warn("job attempt failed to deploy", "job", a.jobID, "attempt", a.attempt, "error", err)
	}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		fail(err)
		return
	}
	exe, err := w.fetch(req.GetArtifactSha256())
	if err != nil {
		fail(fmt.Errorf("fetching the artifact: %w", err))
		return
	}
	args := []string{}
	if p := req.GetParallelism(); p > 0 {
		args = append(args, "-p", strconv.Itoa(int(p)))
	}
	for _, o := range req.GetOptions() {
		args = append(args, "-D", o)
	}
	// The JobManager restarts a failed job whole, by its restart
	// strategy; restarting inside the worker as well would count each
	// failure twice.
	args = append(args, "-D", "restart-strategy.type=none")
	if p := req.GetRestorePath(); p != "" {
		args = append(args, "--from-savepoint", p)
		if req.GetAllowNonRestoredState() {
			args = append(args, "--allow-non-restored-state")
		}
	}
	args = append(args, req.GetArgs()...)
	logFile, err := os.Create(filepath.Join(a.dir, "worker.log"))
	if err != nil {
		fail(err)
		return
	}
	defer logFile.Close()
	tail := &tailBuffer{max: 8 << 10}
	cmd := exec.Command(exe, args...)
	cmd.Dir = a.dir
	cmd.Stdout = logFile
	cmd.Stderr = io.MultiWriter(logFile, tail)
	for _, e := range os.Environ() {
		// The worker needs no cluster credentials.
		if !strings.HasPrefix(e, "WEIR_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env,
		envWorkerStatus+"="+a.statusPath,
		envWorkerJobID+"="+a.jobID,
		envWorkerToken+"="+a.token,
		envWorkerFingerprint+"="+req.GetFingerprint(),
	)
	bindToParent(cmd)

	// Start and Wait on one locked thread: with bindToParent the kernel
	// kills the worker when the thread that started it exits.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a.mu.Lock()
	if a.canceled {
		a.mu.Unlock()
		fail(errors.New("cancelled before it started"))
		return
	}
	if err := cmd.Start(); err != nil {
		a.mu.Unlock()
		fail(fmt.Errorf("starting the worker: %w", err))
		return
	}
	a.proc, a.state = cmd.Process, attemptRunning
	a.mu.Unlock()
	tm.log.Info("job worker started", "job", a.jobID, "attempt", a.attempt, "pid", cmd.Process.Pid, "dir", a.dir)
	werr := cmd.Wait()

	st, _ := readWorkerStatus(a.statusPath)
	a.mu.Lock()
	defer a.mu.Unlock()
	if st != nil {
		a.status = *st
	}
	switch {
	case werr == nil:
		a.state = JobFinished
	case a.canceled:
		a.state = JobCanceled
	default:
		a.state = JobFailed
		msg := fmt.Sprintf("worker %v", werr)
		if ee, ok := werr.(*exec.ExitError); ok && ee.Exited() {
			msg = fmt.Sprintf("worker exited with status %d", ee.ExitCode())
		}
		if st != nil && st.Error != "" {
			msg += ": " + st.Error
		}
		if t := tail.lastLines(10); t != "" {
			msg += "; its last output:\n" + t
		}
		a.err = msg
	}
	a.ended = time.Now()
	close(a.done)
	tm.log.Info("job worker ended", "job", a.jobID, "attempt", a.attempt, "state", a.state, "error", a.err)
}

// fetch returns the cached executable of an artifact, fetching it from
// the JobManager first when it is not cached.
func (w *workers) fetch(sum string) (string, error) {
	tm := w.tm
	if tm.cache.has(sum) {
		return tm.cache.path(sum), nil
	}
	ctx, cancel := context.WithTimeout(tm.ctx, 10*time.Minute)
	defer cancel()
	stream, err := tm.jm.FetchArtifact(ctx, &rpcpb.FetchArtifactRequest{Sha256: sum})
	if err != nil {
		return "", errors.New(grpcMessage(err))
	}
	if _, err := tm.cache.put(&chunkReader{stream: stream}, sum); err != nil {
		if s, ok := status.FromError(err); ok {
			return "", errors.New(s.Message())
		}
		return "", err
	}
	return tm.cache.path(sum), nil
}

// cancel stops the attempt: SIGTERM, then SIGKILL after grace (at once
// when grace is 0). It does not wait.
func (a *workerAttempt) cancel(grace time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.done:
		return
	default:
	}
	a.canceled = true
	if a.proc == nil {
		return // deploy sees canceled before it starts the process
	}
	p := a.proc
	if grace == 0 {
		p.Kill()
		return
	}
	p.Signal(syscall.SIGTERM)
	go func() {
		select {
		case <-a.done:
		case <-time.After(grace):
			p.Kill()
		}
	}()
}

func (s *tmService) CancelJob(ctx context.Context, req *rpcpb.CancelJobRequest) (*rpcpb.CancelJobResponse, error) {
	w := s.tm.workers
	w.mu.Lock()
	a := w.attempts[req.GetJobId()]
	w.mu.Unlock()
	if a != nil && (req.GetAttempt() == 0 || int(req.GetAttempt()) == a.attempt) {
		s.tm.log.Info("cancelling job attempt", "job", a.jobID, "attempt", a.attempt)
		a.cancel(workerCancelGrace)
	}
	return &rpcpb.CancelJobResponse{}, nil
}

func (s *tmService) TriggerSavepoint(ctx context.Context, req *rpcpb.TriggerSavepointRequest) (*rpcpb.TriggerSavepointResponse, error) {
	w := s.tm.workers
	w.mu.Lock()
	a := w.attempts[req.GetJobId()]
	w.mu.Unlock()
	if a == nil || int(req.GetAttempt()) != a.attempt {
		return nil, status.Errorf(codes.NotFound, "job %s attempt %d does not run on taskmanager %s", req.GetJobId(), req.GetAttempt(), s.tm.opts.ResourceID)
	}
	a.mu.Lock()
	state := a.state
	a.mu.Unlock()
	st, err := readWorkerStatus(a.statusPath)
	if state != attemptRunning || err != nil || st.Control == "" {
		return nil, status.Errorf(codes.FailedPrecondition, "job %s attempt %d cannot take a savepoint now (worker %s)", req.GetJobId(), req.GetAttempt(), state)
	}
	body, _ := json.Marshal(map[string]any{"dir": req.GetTargetDirectory(), "stop": req.GetStop(), "drain": req.GetDrain()})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+st.Control+"/savepoint", bytes.NewReader(body))
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	hreq.Header.Set("Authorization", "Bearer "+a.token)
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "worker control endpoint: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Path  string `json:"path"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return nil, status.Errorf(codes.Internal, "worker control endpoint: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, status.Errorf(codes.Aborted, "savepoint failed: %s", out.Error)
	}
	return &rpcpb.TriggerSavepointResponse{Path: out.Path}, nil
}

// statuses returns what the next heartbeat answer reports, and forgets
// attempts that ended long enough ago.
func (w *workers) statuses() []*rpcpb.JobStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*rpcpb.JobStatus
	for id, a := range w.attempts {
		a.mu.Lock()
		if a.state == attemptRunning {
			if st, err := readWorkerStatus(a.statusPath); err == nil {
				a.status = *st
			}
		}
		if !a.ended.IsZero() && time.Since(a.ended) > endedAttemptRetention {
			a.mu.Unlock()
			delete(w.attempts, id)
			continue
		}
		js := &rpcpb.JobStatus{
			JobId:                a.jobID,
			Attempt:              int32(a.attempt),
			State:                a.state,
			CompletedCheckpoints: int64(a.status.CompletedCheckpoints),
			LatestCheckpoint:     a.status.LatestCheckpoint,
			Error:                a.err,
		}
		for _, v := range a.status.Vertices {
			js.Vertices = append(js.Vertices, &rpcpb.VertexStatus{
				Id: v.ID, Name: v.Name, Parallelism: int32(v.Parallelism), RecordsIn: v.RecordsIn, RecordsOut: v.RecordsOut,
			})
		}
		a.mu.Unlock()
		out = append(out, js)
	}
	return out
}

// stopAll cancels every attempt and waits for them, killing what has not
// ended after grace.
func (w *workers) stopAll(grace time.Duration) {
	w.mu.Lock()
	var all []*workerAttempt
	for _, a := range w.attempts {
		all = append(all, a)
	}
	w.mu.Unlock()
	for _, a := range all {
		a.cancel(grace)
	}
	for _, a := range all {
		select {
		case <-a.done:
		case <-time.After(grace + 5*time.Second):
		}
	}
}

func readWorkerStatus(path string) (*workerStatus, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st workerStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// lastLines returns the last n lines, trimmed.
func (b *tailBuffer) lastLines(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(b.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
