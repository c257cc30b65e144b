package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// rendezvousTimeout bounds how long the workers of an attempt that spans
// several TaskManagers take to learn each other's data addresses. A
// variable for tests.
var rendezvousTimeout = 60 * time.Second

// Intervals of the rendezvous: reading the status file until the worker
// has written its data address, and calling ReportWorker until every
// worker of the attempt has reported.
const (
	rendezvousPollInterval   = 50 * time.Millisecond
	rendezvousReportInterval = 100 * time.Millisecond
)

// Environment of a worker process; stream.Worker*Env name the same.
const (
	envWorkerStatus      = "WEIR_WORKER_STATUS"
	envWorkerJobID       = "WEIR_JOB_ID"
	envWorkerToken       = "WEIR_WORKER_TOKEN"
	envWorkerFingerprint = "WEIR_JOB_FINGERPRINT"
	envWorkerAttempt     = "WEIR_ATTEMPT"
	// Only for an attempt with several workers:
	envWorkerIndex     = "WEIR_WORKER_INDEX"     // this worker's index, 0 = the leader
	envWorkerPlacement = "WEIR_WORKER_PLACEMENT" // worker index of each job slot, comma-separated
	envWorkerPeers     = "WEIR_WORKER_PEERS"     // the peers file, written once all workers reported
	envDataToken       = "WEIR_DATA_TOKEN"       // secret of the attempt's data connections
	envDataHost        = "WEIR_DATA_HOST"        // host to listen on and advertise for data connections
	// With security.ssl.enabled, the data connections use TLS with these
	// PEM files: certificate, key, and the CA to trust (system roots when
	// unset).
	envDataTLSCert = "WEIR_DATA_TLS_CERT"
	envDataTLSKey  = "WEIR_DATA_TLS_KEY"
	envDataTLSCA   = "WEIR_DATA_TLS_CA"
	// With security.ssl.mutual, "true": every data connection's server
	// requires the client's certificate, signed by the CA.
	envDataTLSMutual = "WEIR_DATA_TLS_MUTUAL"
)

// peersFile is the file WEIR_WORKER_PEERS names, which the TaskManager
// writes (atomically) once every worker of the attempt has reported its
// data address: DataAddresses by worker index.
type peersFile struct {
	DataAddresses []string `json:"dataAddresses"`
}

// WorkerStatus is the content of a worker's status file: the worker
// (stream's worker mode) writes it, its TaskManager reads it.
type WorkerStatus struct {
	JobID   string `json:"jobId"`
	JobName string `json:"jobName"`
	// State is RUNNING, FINISHED, FAILED or CANCELED.
	State                string               `json:"state"`
	Vertices             []WorkerVertexStatus `json:"vertices"`
	CompletedCheckpoints int                  `json:"completedCheckpoints"`
	LatestCheckpoint     string               `json:"latestCheckpoint,omitempty"`
	// Process measures the worker process itself.
	Process *ProcessMetricsJSON `json:"process,omitempty"`
	// Checkpoints are the latest completed checkpoints this worker
	// coordinated, oldest first; FailedCheckpoints counts the failed ones.
	Checkpoints       []CheckpointStatsJSON `json:"checkpoints,omitempty"`
	FailedCheckpoints int                   `json:"failedCheckpoints"`
	Error             string                `json:"error,omitempty"`
	// Control is the host:port of the worker's control endpoint:
	// POST /savepoint with {"dir", "stop", "drain"} answers {"path"} or
	// {"error"}, and needs "Authorization: Bearer $WEIR_WORKER_TOKEN".
	Control string `json:"control,omitempty"`
	// DataAddress is the worker's data plane server in a job spread over
	// several workers.
	DataAddress string `json:"dataAddress,omitempty"`
	// Started is when the worker started its tasks, having met its
	// peers: what comes before is deployment (Unix milliseconds).
	Started int64 `json:"started,omitempty"`
	Updated int64 `json:"updated"` // Unix milliseconds
}

// WorkerVertexStatus sums the counters of one job vertex's subtasks.
type WorkerVertexStatus struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	RecordsIn   int64  `json:"recordsIn"`
	RecordsOut  int64  `json:"recordsOut"`
	// Subtasks are this worker's subtasks of the vertex.
	Subtasks []SubtaskMetricsJSON `json:"subtasks,omitempty"`
}

// workerAttempt is one attempt of a job, run as a worker process.
type workerAttempt struct {
	jobID      string
	attempt    int
	term       int64 // of the JobManager that deployed it
	dir        string
	statusPath string
	token      string
	done       chan struct{} // closed when the attempt ended

	// An attempt with several workers (workers > 1) meets its peers
	// through the JobManager (rendezvous).
	workerIndex int
	workers     int
	placement   []int32
	dataToken   string
	peersPath   string

	mu       sync.Mutex
	state    string // DEPLOYING, RUNNING, FINISHED, FAILED, CANCELED
	err      string
	canceled bool
	failure  string // why the TaskManager stopped the worker; ends it FAILED
	proc     *os.Process
	status   WorkerStatus // last read
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
	if err := tm.checkTerm(req.GetLeaderTerm()); err != nil {
		return nil, err
	}
	tm.mu.Lock()
	regID := tm.regID
	tm.mu.Unlock()
	switch {
	case req.GetRegistrationId() != regID:
		return nil, status.Errorf(codes.FailedPrecondition, "taskmanager %s has no registration %s", tm.opts.ResourceID, req.GetRegistrationId())
	case req.GetJobId() == "" || req.GetAttempt() < 1:
		return nil, status.Error(codes.InvalidArgument, "a job submission needs a job ID and an attempt number")
	case !jobIDPattern.MatchString(req.GetJobId()):
		// It names the attempt's directory: no separators, no "..".
		return nil, status.Errorf(codes.InvalidArgument, "job ID %q: want letters, digits, '.', '_' and '-', starting with a letter or digit", req.GetJobId())
	case !sha256Hex.MatchString(req.GetArtifactSha256()):
		return nil, status.Errorf(codes.InvalidArgument, "artifact %q is not a hex SHA-256", req.GetArtifactSha256())
	}
	if n := req.GetWorkers(); n > 1 {
		if i := req.GetWorkerIndex(); i < 0 || i >= n {
			return nil, status.Errorf(codes.InvalidArgument, "worker index %d of %d workers", i, n)
		}
		if len(req.GetPlacement()) == 0 {
			return nil, status.Error(codes.InvalidArgument, "an attempt with several workers needs a placement")
		}
		for k, p := range req.GetPlacement() {
			if p < 0 || p >= n {
				return nil, status.Errorf(codes.InvalidArgument, "placement of job slot %d: worker %d of %d", k, p, n)
			}
		}
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
		term:    req.GetLeaderTerm(),
		token:   newID() + newID(),
		done:    make(chan struct{}),
		state:   attemptDeploying,

		workerIndex: int(req.GetWorkerIndex()),
		workers:     int(req.GetWorkers()),
		placement:   req.GetPlacement(),
		dataToken:   req.GetDataToken(),
	}
	a.dir = filepath.Join(tm.workDir, "jobs", fmt.Sprintf("%s-%d", a.jobID, a.attempt))
	if a.term != 0 {
		// A new leader numbers attempts afresh: the term keeps them apart.
		a.dir = filepath.Join(tm.workDir, "jobs", fmt.Sprintf("%s-t%d-%d", a.jobID, a.term, a.attempt))
	}
	a.statusPath = filepath.Join(a.dir, "status.json")
	a.peersPath = filepath.Join(a.dir, "peers.json")
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
	// strategy; the worker knows it runs in a cluster (envWorkerAttempt)
	// and does not restart the attempt itself, which would count each
	// failure twice. A batch job's stages still run a failed subtask
	// again inside the attempt.
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
	cmd.Env = append(programEnv(),
		envWorkerStatus+"="+a.statusPath,
		envWorkerJobID+"="+a.jobID,
		envWorkerToken+"="+a.token,
		envWorkerFingerprint+"="+req.GetFingerprint(),
		envWorkerAttempt+"="+strconv.Itoa(a.attempt),
		envTMGateway+"="+tm.gatewayLn.Addr().String(),
	)
	if a.workers > 1 {
		placement := make([]string, len(a.placement))
		for k, p := range a.placement {
			placement[k] = strconv.Itoa(int(p))
		}
		host, _, err := net.SplitHostPort(tm.addr)
		if err != nil {
			host = tm.addr
		}
		cmd.Env = append(cmd.Env,
			envWorkerIndex+"="+strconv.Itoa(a.workerIndex),
			envWorkerPlacement+"="+strings.Join(placement, ","),
			envWorkerPeers+"="+a.peersPath,
			envDataToken+"="+a.dataToken,
			envDataHost+"="+host,
		)
		if f := tm.opts.Security.TLS; f.Enabled && f.Cert != "" {
			// The workers' data connections use the TaskManager's
			// certificate, and trust what its RPC client trusts.
			for env, file := range map[string]string{envDataTLSCert: f.Cert, envDataTLSKey: f.Key, envDataTLSCA: f.CA} {
				if file != "" {
					if abs, err := filepath.Abs(file); err == nil {
						file = abs
					}
					cmd.Env = append(cmd.Env, env+"="+file)
				}
			}
			if f.Mutual {
				cmd.Env = append(cmd.Env, envDataTLSMutual+"=true")
			}
		}
	}
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
	if err := startRetryingBusy(cmd); err != nil {
		a.mu.Unlock()
		fail(fmt.Errorf("starting the worker: %w", err))
		return
	}
	a.proc, a.state = cmd.Process, attemptRunning
	a.mu.Unlock()
	tm.log.Info("job worker started", "job", a.jobID, "attempt", a.attempt, "pid", cmd.Process.Pid, "dir", a.dir,
		"worker", a.workerIndex, "workers", max(a.workers, 1))
	if a.workers > 1 {
		// Counted before deploy returns, so tm.wg cannot reach zero in
		// between.
		tm.wg.Add(1)
		go func() {
			defer tm.wg.Done()
			w.rendezvous(a)
		}()
	}
	werr := cmd.Wait()

	st, _ := readWorkerStatus(a.statusPath)
	a.mu.Lock()
	defer a.mu.Unlock()
	if st != nil {
		a.status = *st
	}
	switch {
	case a.failure != "":
		a.state, a.err = JobFailed, a.failure
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
	tm.requestHeartbeat()
}

// requestHeartbeat asks the JobManager for a heartbeat now, so that it
// learns of an ended worker at once; the next regular heartbeat carries
// the news if this fails.
func (tm *TaskManager) requestHeartbeat() {
	tm.mu.Lock()
	regID := tm.regID
	tm.mu.Unlock()
	if regID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tm.opts.RPCTimeout)
	defer cancel()
	if _, err := tm.jobManager().RequestHeartbeat(ctx, &rpcpb.RequestHeartbeatRequest{ResourceId: tm.opts.ResourceID, RegistrationId: regID}); err != nil {
		tm.log.Debug("requesting a heartbeat failed", "error", err)
	}
}

// rendezvous lets the worker of an attempt with several workers meet the
// others: it waits for the worker to write its data address into its
// status file, reports it to the JobManager (ReportWorker) until every
// worker of the attempt has reported, and writes their addresses into the
// peers file. It gives up when the attempt ends, and fails the attempt
// when the workers have not met within rendezvousTimeout or the
// JobManager refuses the report.
func (w *workers) rendezvous(a *workerAttempt) {
	tm := w.tm
	deadline := time.Now().Add(rendezvousTimeout)
	ctx, cancel := context.WithDeadline(tm.ctx, deadline)
	defer cancel()
	go func() {
		select {
		case <-a.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	poll := time.NewTicker(rendezvousPollInterval)
	defer poll.Stop()
	var (
		dataAddr   string
		reported   []string // data addresses as of the JobManager's last answer
		lastErr    string
		nextReport time.Time
	)
	for {
		select {
		case <-ctx.Done():
			if tm.ctx.Err() != nil || isDone(a.done) {
				return
			}
			a.fail(rendezvousFailure(a, dataAddr, reported, lastErr))
			return
		case <-poll.C:
		}
		if dataAddr == "" {
			st, err := readWorkerStatus(a.statusPath)
			if err != nil || st.DataAddress == "" {
				continue
			}
			dataAddr = st.DataAddress
			tm.log.Info("job worker listens for data", "job", a.jobID, "attempt", a.attempt, "worker", a.workerIndex, "data", dataAddr)
		}
		if time.Now().Before(nextReport) {
			continue
		}
		nextReport = time.Now().Add(rendezvousReportInterval)
		tm.mu.Lock()
		regID := tm.regID
		tm.mu.Unlock()
		rctx, rcancel := context.WithTimeout(ctx, tm.opts.RPCTimeout)
		resp, err := tm.jobManager().ReportWorker(rctx, &rpcpb.ReportWorkerRequest{
			LeaderTerm:     a.term,
			ResourceId:     tm.opts.ResourceID,
			RegistrationId: regID,
			JobId:          a.jobID,
			Attempt:        int32(a.attempt),
			WorkerIndex:    int32(a.workerIndex),
			DataAddress:    dataAddr,
		})
		rcancel()
		if err != nil {
			st := status.Convert(err)
			switch st.Code() {
			case codes.FailedPrecondition, codes.NotFound, codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied:
				a.fail(fmt.Sprintf("worker %d: the jobmanager refused its data address: %s", a.workerIndex, st.Message()))
				return
			}
			if time.Now().Before(deadline) {
				lastErr = st.Message() // not the rendezvous's own deadline
			}
			continue
		}
		reported = resp.GetDataAddresses()
		if !resp.GetComplete() {
			continue
		}
		if err := writePeersFile(a.peersPath, reported); err != nil {
			a.fail(fmt.Sprintf("worker %d: writing the peers file: %v", a.workerIndex, err))
			return
		}
		tm.log.Info("job workers met", "job", a.jobID, "attempt", a.attempt, "worker", a.workerIndex, "peers", reported)
		return
	}
}

// rendezvousFailure says why the workers of an attempt did not meet in
// time, naming those that never reported.
func rendezvousFailure(a *workerAttempt, dataAddr string, reported []string, lastErr string) string {
	var msg string
	if dataAddr == "" {
		msg = fmt.Sprintf("worker %d did not write its data address into its status file within %v", a.workerIndex, rendezvousTimeout)
	} else {
		var missing []string
		for i := range a.workers {
			if i >= len(reported) || reported[i] == "" {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		if len(missing) == 0 && lastErr != "" {
			msg = fmt.Sprintf("worker %d could not report its data address to the jobmanager within %v", a.workerIndex, rendezvousTimeout)
		} else {
			msg = fmt.Sprintf("the %d workers of attempt %d did not meet within %v: worker(s) %s never reported a data address",
				a.workers, a.attempt, rendezvousTimeout, strings.Join(missing, ", "))
		}
	}
	if lastErr != "" {
		msg += "; last error: " + lastErr
	}
	return msg
}

// writePeersFile writes the peers file atomically: a temporary file
// renamed into place.
func writePeersFile(path string, addrs []string) error {
	data, err := json.Marshal(peersFile{DataAddresses: addrs})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".peers-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// fail stops the worker because the TaskManager gave up on it; the
// attempt then ends FAILED with msg.
func (a *workerAttempt) fail(msg string) {
	a.mu.Lock()
	if a.failure == "" {
		a.failure = msg
	}
	a.mu.Unlock()
	a.cancel(workerCancelGrace)
}

// jobIDPattern is what a TaskManager accepts as a job ID, which becomes
// part of a directory name; the JobManager's IDs are hex.
var jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// fetch returns the cached executable of an artifact, fetching it from
// the JobManager first when it is not cached.
func (w *workers) fetch(sum string) (string, error) {
	tm := w.tm
	if tm.cache.has(sum) {
		return tm.cache.path(sum), nil
	}
	ctx, cancel := context.WithTimeout(tm.ctx, 10*time.Minute)
	defer cancel()
	stream, err := tm.jobManager().FetchArtifact(ctx, &rpcpb.FetchArtifactRequest{Sha256: sum})
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
	if err := s.tm.checkTerm(req.GetLeaderTerm()); err != nil {
		return nil, err
	}
	w := s.tm.workers
	w.mu.Lock()
	a := w.attempts[req.GetJobId()]
	w.mu.Unlock()
	if a != nil && (req.GetAttempt() == 0 || int(req.GetAttempt()) == a.attempt && req.GetAttemptTerm() == a.term) {
		s.tm.log.Info("cancelling job attempt", "job", a.jobID, "attempt", a.attempt)
		a.cancel(workerCancelGrace)
	}
	return &rpcpb.CancelJobResponse{}, nil
}

func (s *tmService) TriggerSavepoint(ctx context.Context, req *rpcpb.TriggerSavepointRequest) (*rpcpb.TriggerSavepointResponse, error) {
	a, st, err := s.runningWorker(req.GetLeaderTerm(), req.GetJobId(), func(a *workerAttempt) bool {
		return int(req.GetAttempt()) == a.attempt && req.GetLeaderTerm() == a.term
	})
	if err != nil {
		return nil, err
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

// runningWorker finds the attempt of job that match accepts, running,
// with its latest status: the worker whose control endpoint a request
// of the JobManager of term goes to.
func (s *tmService) runningWorker(term int64, job string, match func(*workerAttempt) bool) (*workerAttempt, *WorkerStatus, error) {
	if err := s.tm.checkTerm(term); err != nil {
		return nil, nil, err
	}
	w := s.tm.workers
	w.mu.Lock()
	a := w.attempts[job]
	w.mu.Unlock()
	if a == nil || !match(a) {
		return nil, nil, status.Errorf(codes.NotFound, "job %s does not run on taskmanager %s (or not that attempt)", job, s.tm.opts.ResourceID)
	}
	a.mu.Lock()
	state := a.state
	a.mu.Unlock()
	st, err := readWorkerStatus(a.statusPath)
	if state != attemptRunning || err != nil || st.Control == "" {
		return nil, nil, status.Errorf(codes.FailedPrecondition, "job %s: its worker on taskmanager %s is %s, not running", job, s.tm.opts.ResourceID, state)
	}
	return a, st, nil
}

// snapshot lists the attempts.
func (w *workers) snapshot() []*workerAttempt {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*workerAttempt, 0, len(w.attempts))
	for _, a := range w.attempts {
		out = append(out, a)
	}
	return out
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
			LeaderTerm:           a.term,
			State:                a.state,
			CompletedCheckpoints: int64(a.status.CompletedCheckpoints),
			LatestCheckpoint:     a.status.LatestCheckpoint,
			Error:                a.err,
			FailedCheckpoints:    int64(a.status.FailedCheckpoints),
			Started:              a.status.Started,
		}
		for _, v := range a.status.Vertices {
			vs := &rpcpb.VertexStatus{
				Id: v.ID, Name: v.Name, Parallelism: int32(v.Parallelism), RecordsIn: v.RecordsIn, RecordsOut: v.RecordsOut,
			}
			for _, m := range v.Subtasks {
				vs.Subtasks = append(vs.Subtasks, subtaskMetricsProto(m))
			}
			js.Vertices = append(js.Vertices, vs)
		}
		for _, c := range a.status.Checkpoints {
			js.Checkpoints = append(js.Checkpoints, checkpointStatsProto(c))
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

func readWorkerStatus(path string) (*WorkerStatus, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st WorkerStatus
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

// startRetryingBusy starts cmd, retrying while exec fails with "text file
// busy": a process forked elsewhere in this process at the moment the
// artifact was being written holds a copy of its descriptor until it
// execs (golang.org/issue/22315).
func startRetryingBusy(cmd *exec.Cmd) error {
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		err := cmd.Start()
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || wait > time.Second {
			return err
		}
		time.Sleep(wait)
		// A Cmd cannot be started twice.
		retry := exec.Command(cmd.Path, cmd.Args[1:]...)
		retry.Dir, retry.Env, retry.Stdout, retry.Stderr, retry.SysProcAttr = cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr
		*cmd = *retry
	}
}
