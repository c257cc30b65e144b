package stream

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/network"
	"github.com/weirproject/weir/internal/runtime"
)

// Worker mode: a TaskManager runs a job program as a child process with
// these environment variables set. Execute then runs the job as usual and
// also reports on it through a status file that the TaskManager reads,
// serves savepoint requests on a loopback HTTP endpoint, and cancels the
// job on SIGTERM.
const (
	// WorkerStatusEnv names the status file (JSON, replaced atomically).
	WorkerStatusEnv = "WEIR_WORKER_STATUS"
	// WorkerJobIDEnv is the cluster's ID of the job.
	WorkerJobIDEnv = "WEIR_JOB_ID"
	// WorkerTokenEnv is the secret the control endpoint requires, so that
	// other local users cannot stop the job.
	WorkerTokenEnv = "WEIR_WORKER_TOKEN"
	// WorkerFingerprintEnv is the fingerprint of the job graph the client
	// submitted; a worker whose program builds a different graph fails.
	WorkerFingerprintEnv = "WEIR_JOB_FINGERPRINT"
	// WorkerAttemptEnv is the attempt number of the job.
	WorkerAttemptEnv = "WEIR_ATTEMPT"

	// A job spread over several TaskManagers runs one worker on each.
	// WorkerIndexEnv is this worker's index (0 coordinates the job's
	// checkpoints); WorkerPlacementEnv gives the worker of each of the
	// job's slots, comma-separated; WorkerPeersEnv names the file in which
	// the TaskManager puts every worker's data address (JSON
	// {"dataAddresses": [...]}) once all of them reported theirs in their
	// status files; WorkerDataTokenEnv is the data plane's shared secret
	// and WorkerDataHostEnv the host its server listens on.
	WorkerIndexEnv     = "WEIR_WORKER_INDEX"
	WorkerPlacementEnv = "WEIR_WORKER_PLACEMENT"
	WorkerPeersEnv     = "WEIR_WORKER_PEERS"
	WorkerDataTokenEnv = "WEIR_DATA_TOKEN"
	WorkerDataHostEnv  = "WEIR_DATA_HOST"
	// With TLS on in the cluster, the data connections use TLS with the
	// PEM files these name: certificate and key (presented as server and
	// as client) and the CA to trust (the system's roots when unset).
	WorkerDataTLSCertEnv = "WEIR_DATA_TLS_CERT"
	WorkerDataTLSKeyEnv  = "WEIR_DATA_TLS_KEY"
	WorkerDataTLSCAEnv   = "WEIR_DATA_TLS_CA"
	// WorkerDataTLSMutualEnv "true" (security.ssl.mutual) makes the data
	// server require a client certificate signed by the CA; the client
	// presents the same certificate.
	WorkerDataTLSMutualEnv = "WEIR_DATA_TLS_MUTUAL"
	// WorkerGatewayEnv is the host:port of the TaskManager's loopback
	// endpoint for its workers, through which the leader worker has the
	// JobManager confirm every checkpoint before anything commits.
	WorkerGatewayEnv = "WEIR_TM_GATEWAY"
)

// workerConfirmPath and workerConfirmRequest are the TaskManager gateway's
// checkpoint confirmation (internal/cluster, gateway.go).
const workerConfirmPath = "/v1/checkpoints/confirm"

type workerConfirmRequest struct {
	JobID        string `json:"jobId"`
	Attempt      int    `json:"attempt"`
	CheckpointID int64  `json:"checkpointId"`
	Path         string `json:"path"`
	Savepoint    bool   `json:"savepoint"`
	// RetainOnCancellation tells the JobManager, which removes a
	// cancelled job's checkpoints, what the program configured.
	RetainOnCancellation bool `json:"retainOnCancellation"`
}

// workerConfirmTimeout bounds a confirmation; the TaskManager gives up on
// the JobManager before (rpc.timeout).
const workerConfirmTimeout = 30 * time.Second

// gatewayAuthority is the commit authority of a worker: the JobManager,
// asked through the worker's TaskManager.
type gatewayAuthority struct {
	url   string
	token string
	req   workerConfirmRequest // job and attempt
	// cfg is the job's configuration, read at every confirmation: the
	// program may set the retention after the worker started.
	cfg *config.Configuration
}

func (g *gatewayAuthority) ConfirmCheckpoint(ctx context.Context, id int64, path string, savepoint bool) error {
	req := g.req
	req.CheckpointID, req.Path, req.Savepoint = id, path, savepoint
	req.RetainOnCancellation = config.ExternalizedRetention.Get(g.cfg) == config.RetentionRetainOnCancellation
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, workerConfirmTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Authorization", "Bearer "+g.token)
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return fmt.Errorf("taskmanager unreachable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return fmt.Errorf("%s (HTTP %d)", strings.TrimSpace(string(msg)), resp.StatusCode)
}

// workerPeersTimeout bounds the wait for the other workers' addresses.
const workerPeersTimeout = 2 * time.Minute

// workerStatusInterval is how often a worker rewrites its status file.
const workerStatusInterval = 200 * time.Millisecond

// WorkerStatus is the content of a worker's status file, which its
// TaskManager reads (cluster.WorkerStatus).
type WorkerStatus = cluster.WorkerStatus

// WorkerVertexStatus is one vertex in it.
type WorkerVertexStatus = cluster.WorkerVertexStatus

// WorkerSavepointRequest is the body of POST /savepoint.
type WorkerSavepointRequest struct {
	Dir   string `json:"dir"`
	Stop  bool   `json:"stop"`
	Drain bool   `json:"drain"`
}

// WorkerSavepointResponse is its answer.
type WorkerSavepointResponse struct {
	Path  string `json:"path,omitempty"`
	Error string `json:"error,omitempty"`
}

// worker reports on the job of a program run in worker mode; nil outside
// worker mode, where its methods fall back to plain execution.
type worker struct {
	statusPath string
	jobID      string
	token      string

	jc      *JobClient
	ln      net.Listener
	server  *http.Server
	stopSig func()
	done    chan struct{} // closed when the final status is written

	// net is the data plane of a worker of a distributed job.
	net *network.Manager

	// faultSignals: SIGUSR1 and SIGUSR2 inject failures into the job's
	// tasks (execution.fault-injection.signals).
	faultSignals bool

	mu       sync.Mutex
	canceled bool // by SIGTERM

	// sampler turns the task counters into rates; used by write only.
	sampler cluster.TaskSampler
	// started is when start launched the job's tasks (Unix ms).
	started int64
}

// maxReportedCheckpoints is how many of the latest checkpoints a status
// carries (Flink's web.checkpoints.history is 10).
const maxReportedCheckpoints = 10

// detailedCheckpoints is how many of them carry their subtasks' parts.
const detailedCheckpoints = 3

// newWorker returns nil outside worker mode, and an error when the graph
// is not the one the client submitted: the code before Execute must build
// the same graph in the client and in every worker.
func newWorker(jg *graph.JobGraph) (*worker, error) {
	path := os.Getenv(WorkerStatusEnv)
	if path == "" {
		return nil, nil
	}
	if want := os.Getenv(WorkerFingerprintEnv); want != "" && want != jg.Fingerprint {
		return nil, fmt.Errorf("stream: worker mode: this program built a job graph with fingerprint %s, but the submitted job's is %s; "+
			"the code before Execute must build the same graph every time it runs (no randomness, clocks or host-specific input)",
			jg.Fingerprint, want)
	}
	return &worker{
		statusPath: path,
		jobID:      os.Getenv(WorkerJobIDEnv),
		token:      os.Getenv(WorkerTokenEnv),
		done:       make(chan struct{}),
	}, nil
}

// prepare fences the job's attempt (its checkpoints count only once the
// JobManager confirmed them) and, for a job spread over several workers,
// prepares this worker's share: it starts the data plane, reports its
// address in the status file and waits for the addresses of the others.
func (w *worker) prepare(ctx context.Context, env *Environment) error {
	if w == nil {
		return nil
	}
	attempt, err := strconv.Atoi(os.Getenv(WorkerAttemptEnv))
	if err != nil || attempt < 1 {
		return fmt.Errorf("stream: worker mode: %s=%q: want the cluster's attempt number (1, 2, ...)", WorkerAttemptEnv, os.Getenv(WorkerAttemptEnv))
	}
	// Cluster attempts count from 1, a job's executions from 0.
	env.firstAttempt = attempt - 1
	env.clusterRestarts = true
	// Checkpoints go to <dir>/<job-id>/, the JobID the user sees, for
	// every attempt: each claims the chk-<n> directories it writes, so
	// that no zombie of an earlier attempt writes into one of this
	// attempt's (see runtime's checkpointStorage).
	env.storageKey = w.jobID
	if gw := os.Getenv(WorkerGatewayEnv); gw != "" {
		env.authority = &gatewayAuthority{
			url:   "http://" + gw + workerConfirmPath,
			token: w.token,
			req:   workerConfirmRequest{JobID: w.jobID, Attempt: attempt},
			cfg:   env.cfg,
		}
	}
	w.faultSignals = config.FaultInjectionSignals.Get(env.cfg)
	if os.Getenv(WorkerIndexEnv) == "" {
		return nil
	}
	self, err := strconv.Atoi(os.Getenv(WorkerIndexEnv))
	if err != nil {
		return fmt.Errorf("stream: worker mode: %s=%q: %v", WorkerIndexEnv, os.Getenv(WorkerIndexEnv), err)
	}
	var placement []int
	for _, f := range strings.Split(os.Getenv(WorkerPlacementEnv), ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("stream: worker mode: %s=%q: %v", WorkerPlacementEnv, os.Getenv(WorkerPlacementEnv), err)
		}
		placement = append(placement, p)
	}
	host := os.Getenv(WorkerDataHostEnv)
	if host == "" {
		host = "127.0.0.1"
	}
	tlsCfg, err := workerDataTLS()
	if err != nil {
		return err
	}
	nm, err := network.Listen(network.Config{ListenAddr: net.JoinHostPort(host, "0"), Token: os.Getenv(WorkerDataTokenEnv), TLS: tlsCfg, Logger: env.logger,
		BufferSize: int(config.NetworkBufferSize.Get(env.cfg))})
	if err != nil {
		return fmt.Errorf("stream: worker mode: data plane: %w", err)
	}
	w.net = nm
	w.writeStatus(WorkerStatus{JobID: w.jobID, State: "RUNNING", DataAddress: nm.Addr(), Updated: time.Now().UnixMilli()})
	peers, err := waitPeers(ctx, os.Getenv(WorkerPeersEnv))
	if err != nil {
		return err
	}
	env.distribution = &runtime.Distribution{Self: self, Placement: placement, Net: nm, Peers: peers,
		Key: w.jobID + "-" + os.Getenv(WorkerAttemptEnv)}
	return nil
}

// workerDataTLS returns the TLS configuration of the data plane, or nil
// when the cluster runs without TLS. The same configuration serves and
// dials: the certificate is presented on both ends, and with mutual TLS
// the server requires the dialer's.
func workerDataTLS() (*tls.Config, error) {
	certFile, keyFile, caFile := os.Getenv(WorkerDataTLSCertEnv), os.Getenv(WorkerDataTLSKeyEnv), os.Getenv(WorkerDataTLSCAEnv)
	mutual := os.Getenv(WorkerDataTLSMutualEnv) == "true"
	if certFile == "" {
		if mutual {
			return nil, fmt.Errorf("stream: worker mode: %s is set but %s is not", WorkerDataTLSMutualEnv, WorkerDataTLSCertEnv)
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("stream: worker mode: data plane TLS: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("stream: worker mode: data plane TLS: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("stream: worker mode: data plane TLS: no certificate in %s", caFile)
		}
	}
	if mutual {
		if cfg.RootCAs == nil {
			return nil, fmt.Errorf("stream: worker mode: %s is set but %s is not: mutual TLS needs the CA", WorkerDataTLSMutualEnv, WorkerDataTLSCAEnv)
		}
		cfg.ClientCAs = cfg.RootCAs
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// waitPeers polls the peers file until the TaskManager wrote it.
func waitPeers(ctx context.Context, path string) ([]string, error) {
	if path == "" {
		return nil, fmt.Errorf("stream: worker mode: %s is not set", WorkerPeersEnv)
	}
	deadline := time.Now().Add(workerPeersTimeout)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			var peers struct {
				DataAddresses []string `json:"dataAddresses"`
			}
			if err := json.Unmarshal(data, &peers); err != nil {
				return nil, fmt.Errorf("stream: worker mode: peers file %s: %v", path, err)
			}
			return peers.DataAddresses, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("stream: worker mode: %v", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stream: worker mode: the addresses of the other workers did not arrive within %v", workerPeersTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// close releases the data plane once the job ended.
func (w *worker) close() {
	if w != nil && w.net != nil {
		w.net.Close()
	}
}

// start begins reporting on jc. The job keeps running when reporting
// fails to set up; the TaskManager then judges it by its exit status.
func (w *worker) start(jc *JobClient) {
	if w == nil {
		return
	}
	w.jc = jc
	w.started = time.Now().UnixMilli()
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		w.ln = ln
		mux := http.NewServeMux()
		mux.HandleFunc("POST /savepoint", w.handleSavepoint)
		mux.HandleFunc("GET /profile/{kind}", w.handleProfile)
		w.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go w.server.Serve(ln)
	} else {
		fmt.Fprintf(os.Stderr, "weir worker: no control endpoint, savepoints are unavailable: %v\n", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	if w.faultSignals {
		signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	}
	quit := make(chan struct{})
	w.stopSig = func() { signal.Stop(sigs); close(quit) }
	go func() {
		for {
			select {
			case sig := <-sigs:
				if sig != syscall.SIGTERM {
					task := jc.job.InjectFailure(sig == syscall.SIGUSR1, rand.IntN)
					fmt.Fprintf(os.Stderr, "weir worker: %v: injected a failure into %q\n", sig, task)
					continue
				}
				w.mu.Lock()
				w.canceled = true
				w.mu.Unlock()
				jc.Cancel()
				return
			case <-quit:
				return
			}
		}
	}()
	go w.report()
}

// report rewrites the status file until the job ends, then writes the
// final status.
func (w *worker) report() {
	defer close(w.done)
	tick := time.NewTicker(workerStatusInterval)
	defer tick.Stop()
	w.write("RUNNING", nil)
	for {
		select {
		case <-w.jc.Done():
			err := w.jc.job.Wait()
			w.stopSig()
			if w.server != nil {
				// Shutdown, not Close: the answer to a stop-with-savepoint
				// may still be on its way when the job ends.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				w.server.Shutdown(ctx)
				cancel()
			}
			w.mu.Lock()
			canceled := w.canceled
			w.mu.Unlock()
			state := "FINISHED"
			switch {
			case canceled:
				state = "CANCELED"
			case err != nil:
				state = "FAILED"
			}
			w.write(state, err)
			return
		case <-tick.C:
			w.write("RUNNING", nil)
		}
	}
}

// wait waits for the job and its final status; outside worker mode it is
// jc.Wait.
func (w *worker) wait(jc *JobClient) error {
	err := jc.job.Wait()
	if w != nil {
		<-w.done
	}
	return err
}

func (w *worker) write(state string, jobErr error) {
	st := WorkerStatus{
		JobID:                w.jobID,
		JobName:              w.jc.Graph.JobName,
		State:                state,
		CompletedCheckpoints: w.jc.CompletedCheckpoints(),
		LatestCheckpoint:     w.jc.LatestCheckpoint(),
		Started:              w.started,
		Updated:              time.Now().UnixMilli(),
	}
	if jobErr != nil {
		st.Error = jobErr.Error()
	}
	if w.ln != nil && state == "RUNNING" {
		st.Control = w.ln.Addr().String()
	}
	if w.net != nil {
		st.DataAddress = w.net.Addr()
	}
	byVertex := make(map[graph.JobVertexID]*WorkerVertexStatus)
	for _, v := range w.jc.Graph.Vertices {
		vs := &WorkerVertexStatus{ID: string(v.ID), Name: v.Name, Parallelism: v.Parallelism}
		byVertex[v.ID] = vs
	}
	metrics := w.jc.Metrics()
	for _, m := range metrics {
		if vs := byVertex[m.Vertex]; vs != nil {
			vs.RecordsIn += m.RecordsIn
			vs.RecordsOut += m.RecordsOut
		}
	}
	for id, subtasks := range w.sampler.Sample(metrics, time.Now()) {
		if vs := byVertex[graph.JobVertexID(id)]; vs != nil {
			vs.Subtasks = subtasks
		}
	}
	st.FailedCheckpoints = w.jc.job.FailedCheckpoints()
	process := cluster.ReadProcessMetrics()
	st.Process = &process
	// The subtasks' parts of the latest few: the JobManager keeps what it
	// saw of a checkpoint first, when it was among the latest.
	if h := w.jc.CheckpointHistory(); len(h) > 0 {
		st.Checkpoints = cluster.CheckpointStatsOf(h[max(0, len(h)-maxReportedCheckpoints):], detailedCheckpoints)
	}
	if h := w.jc.FailedCheckpointHistory(); len(h) > 0 {
		st.Checkpoints = append(st.Checkpoints, cluster.CheckpointStatsOf(h[max(0, len(h)-maxReportedCheckpoints):], detailedCheckpoints)...)
	}
	for _, v := range w.jc.Graph.Vertices {
		st.Vertices = append(st.Vertices, *byVertex[v.ID])
	}
	w.writeStatus(st)
}

// writeStatus replaces the status file.
func (w *worker) writeStatus(st WorkerStatus) {
	data, err := json.Marshal(st)
	if err != nil {
		return
	}
	// Write and rename, so that the TaskManager never reads half a file.
	tmp, err := os.CreateTemp(filepath.Dir(w.statusPath), ".status-*")
	if err != nil {
		fmt.Fprintf(os.Stderr, "weir worker: status file: %v\n", err)
		return
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), w.statusPath)
	}
	if err != nil {
		os.Remove(tmp.Name())
		fmt.Fprintf(os.Stderr, "weir worker: status file: %v\n", err)
	}
}

// handleProfile writes a pprof profile of this process: GET
// /profile/cpu?seconds=N samples for N seconds (1 to 60), /profile/heap,
// /profile/allocs and /profile/goroutine take a snapshot. Task goroutines
// carry the labels "task" and "vertex".
func (w *worker) handleProfile(rw http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+w.token)) != 1 {
		http.Error(rw, "wrong or missing worker token", http.StatusUnauthorized)
		return
	}
	kind := r.PathValue("kind")
	if kind != "cpu" {
		p := pprof.Lookup(kind)
		if p == nil || !slices.Contains([]string{"heap", "allocs", "goroutine"}, kind) {
			http.Error(rw, fmt.Sprintf("unknown profile %q: cpu, heap, allocs or goroutine", kind), http.StatusBadRequest)
			return
		}
		rw.Header().Set("Content-Type", "application/octet-stream")
		p.WriteTo(rw, 0)
		return
	}
	seconds, err := strconv.Atoi(r.URL.Query().Get("seconds"))
	if err != nil || seconds < 1 || seconds > 60 {
		http.Error(rw, "seconds: want 1 to 60", http.StatusBadRequest)
		return
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		// Another CPU profile is running: only one at a time.
		http.Error(rw, "cpu profile: "+err.Error(), http.StatusConflict)
		return
	}
	select {
	case <-time.After(time.Duration(seconds) * time.Second):
	case <-r.Context().Done():
	}
	pprof.StopCPUProfile()
	rw.Header().Set("Content-Type", "application/octet-stream")
	rw.Write(buf.Bytes())
}

func (w *worker) handleSavepoint(rw http.ResponseWriter, r *http.Request) {
	reply := func(code int, resp WorkerSavepointResponse) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(code)
		json.NewEncoder(rw).Encode(resp)
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+w.token)) != 1 {
		reply(http.StatusUnauthorized, WorkerSavepointResponse{Error: "wrong or missing worker token"})
		return
	}
	var req WorkerSavepointRequest
	if err := json.NewDecoder(http.MaxBytesReader(rw, r.Body, 1<<20)).Decode(&req); err != nil {
		reply(http.StatusBadRequest, WorkerSavepointResponse{Error: "bad request: " + err.Error()})
		return
	}
	if req.Dir == "" {
		reply(http.StatusBadRequest, WorkerSavepointResponse{Error: "no savepoint directory"})
		return
	}
	var path string
	var err error
	if req.Stop {
		path, err = w.jc.StopWithSavepoint(r.Context(), req.Dir, req.Drain)
	} else {
		path, err = w.jc.TriggerSavepoint(r.Context(), req.Dir)
	}
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			code = http.StatusGatewayTimeout
		}
		reply(code, WorkerSavepointResponse{Error: err.Error()})
		return
	}
	reply(http.StatusOK, WorkerSavepointResponse{Path: path})
}
