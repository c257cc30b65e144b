package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
	"github.com/weirproject/weir/internal/ha"
)

// JobManagerOptions configure a JobManager; [JobManagerOptionsFrom] reads
// them from a configuration.
type JobManagerOptions struct {
	BindHost          string // interface of the RPC and REST servers
	RPCPort           int    // 0 picks a free port
	RESTPort          int    // 0 picks a free port
	HeartbeatInterval time.Duration
	HeartbeatTimeout  time.Duration
	RPCTimeout        time.Duration // deadline of RPCs other than heartbeats
	// SlotRequestTimeout is how long a job waits for enough free slots,
	// unless the job sets slot.request.timeout itself.
	SlotRequestTimeout time.Duration
	// EvenlySpreadOutSlots spreads every job's slots over the
	// TaskManagers, even one that a single TaskManager could hold, unless
	// the job sets cluster.evenly-spread-out-slots itself.
	EvenlySpreadOutSlots bool
	// DefaultParallelism is the parallelism of a submitted job that sets
	// none (weir run without -p): parallelism.default of the JobManager,
	// 1 when that is 0, as in Flink (a client's CPU count says nothing
	// about the cluster).
	DefaultParallelism int
	// WorkingDir keeps the uploaded artifacts; "" = a temporary directory
	// removed by Close.
	WorkingDir string
	Security   Security
	Logger     *slog.Logger // nil = slog.Default()
	// MaxContentLength is rest.server.max-content-length, the largest
	// request body the REST API reads (an uploaded program); 0 = its
	// default. Other bodies have smaller limits (restBodyLimits).
	MaxContentLength int64
	// HA, when set, makes the JobManager one candidate of a highly
	// available cluster (high-availability.type: etcd): it serves only
	// while it leads. The caller opens and closes the services.
	HA *ha.Services
	// AdvertisedHost is the host that the leader publishes for
	// TaskManagers and clients to reach it at (high availability): ""
	// = BindHost, or the host name when BindHost is a wildcard.
	AdvertisedHost string
	// Reactive sizes every job by the free slots (scheduler-mode:
	// reactive) and rescales it when TaskManagers join.
	Reactive bool
	// PrometheusPort is metrics.reporter.prom.port: a port or range on
	// which the JobManager serves its metrics too; "" = only on the REST
	// port.
	PrometheusPort string
	// AllowedHosts are names under which the REST API answers besides
	// its own (rest.address, rest.allowed-hosts; "*" = any): see
	// newHostGuard.
	AllowedHosts []string
}

func (o *JobManagerOptions) validate() error {
	switch {
	case o.HeartbeatInterval < time.Millisecond:
		return fmt.Errorf("heartbeat.interval must be at least 1 ms, got %v", o.HeartbeatInterval)
	case o.HeartbeatTimeout < o.HeartbeatInterval:
		return fmt.Errorf("heartbeat.timeout (%v) must not be shorter than heartbeat.interval (%v)", o.HeartbeatTimeout, o.HeartbeatInterval)
	case o.RPCTimeout <= 0:
		return fmt.Errorf("rpc.timeout must be positive, got %v", o.RPCTimeout)
	case o.SlotRequestTimeout < 0:
		return fmt.Errorf("slot.request.timeout must not be negative, got %v", o.SlotRequestTimeout)
	}
	if err := o.Security.TLS.check(); err != nil {
		return err
	}
	if err := CheckToken(o.Security.Token); err != nil {
		return err
	}
	return o.Security.checkBind("JobManager", o.BindHost)
}

// JobManager is the cluster's coordinator. This slice of it is the
// resource manager: TaskManagers register their slots, the JobManager
// heartbeats each of them and removes those that stop answering. It serves
// the control plane on gRPC and the REST API on HTTP.
type JobManager struct {
	opts    JobManagerOptions
	id      string
	log     *slog.Logger
	pool    *SlotPool
	metrics *jmMetrics

	workDir       string
	removeWorkDir bool
	artifacts     *artifactStore
	dispatcher    *dispatcher
	ha            *haState // nil without high availability

	rpcServer  *grpc.Server
	rpcLn      net.Listener
	restServer *http.Server
	restLn     net.Listener
	promURL    string // of the Prometheus endpoint, when it has one
	stopProm   func()
	dialOpts   []grpc.DialOption

	ctx    context.Context // cancelled by Close; parents the heartbeat loops
	cancel context.CancelFunc
	wg     sync.WaitGroup
	failed chan error // a server that stopped on its own

	mu       sync.Mutex
	monitors map[string]*monitor // by resource ID
	closed   bool

	closeOnce sync.Once
}

// monitor is the heartbeat loop of one TaskManager registration.
type monitor struct {
	regID  string
	cancel context.CancelFunc
	client rpcpb.TaskManagerClient
	// poke makes the heartbeat loop heartbeat at once.
	poke chan struct{}
	// process is what the latest heartbeat answer said of the
	// TaskManager's processes (GET /taskmanagers/{id}/metrics).
	process *rpcpb.ProcessMetrics
}

// StartJobManager listens on the RPC and REST ports and serves them until
// Close. It refuses a non-loopback BindHost without a token, and a token
// that CheckToken refuses.
func StartJobManager(opts JobManagerOptions) (*JobManager, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	opts.Security.warnPlaintextToken(log, "JobManager", opts.BindHost)
	serverOpts, err := opts.Security.serverOptions(log)
	if err != nil {
		return nil, err
	}
	dialOpts, err := opts.Security.dialOptions()
	if err != nil {
		return nil, err
	}
	// REST and Prometheus serve TLS as the RPC server does.
	httpTLS, err := opts.Security.httpTLS()
	if err != nil {
		return nil, err
	}

	jm := &JobManager{
		opts:     opts,
		id:       newID(),
		log:      log.With("component", "jobmanager"),
		pool:     NewSlotPool(),
		dialOpts: append(dialOpts, grpc.WithConnectParams(fastReconnect)),
		failed:   make(chan error, 2),
		monitors: make(map[string]*monitor),
	}
	if opts.HA != nil {
		jm.ha = &haState{services: opts.HA}
		serverOpts = append(serverOpts, jm.standbyInterceptors()...)
	}
	jm.ctx, jm.cancel = context.WithCancel(context.Background())
	jm.dispatcher = newDispatcher(jm)
	jm.metrics = newJMMetrics(jm.pool, jm.dispatcher)
	if jm.workDir = opts.WorkingDir; jm.workDir == "" {
		if jm.workDir, err = os.MkdirTemp("", "weir-jobmanager-"); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		jm.removeWorkDir = true
	}
	if jm.artifacts, err = newArtifactStore(filepath.Join(jm.workDir, "artifacts")); err != nil {
		jm.removeTempDir()
		return nil, err
	}
	jm.removeJarTemps()

	jm.rpcLn, err = net.Listen("tcp", net.JoinHostPort(opts.BindHost, strconv.Itoa(opts.RPCPort)))
	if err != nil {
		jm.removeTempDir()
		return nil, fmt.Errorf("RPC server: %w", err)
	}
	jm.restLn, err = net.Listen("tcp", net.JoinHostPort(opts.BindHost, strconv.Itoa(opts.RESTPort)))
	if err != nil {
		jm.rpcLn.Close()
		jm.removeTempDir()
		return nil, fmt.Errorf("REST server: %w", err)
	}
	if opts.PrometheusPort != "" {
		ln, err := listenPrometheus(opts.BindHost, opts.PrometheusPort)
		if err != nil {
			jm.rpcLn.Close()
			jm.restLn.Close()
			jm.removeTempDir()
			return nil, err
		}
		jm.promURL = prometheusURL(ln, httpTLS)
		jm.stopProm = servePrometheus(ln, jm.metrics.registry, opts.Security.Token, jm.hostGuard(), httpTLS, jm.log)
		jm.log.Info("prometheus metrics", "url", jm.promURL)
	}
	jm.rpcServer = grpc.NewServer(serverOpts...)
	rpcpb.RegisterJobManagerServer(jm.rpcServer, &jmService{jm: jm})
	jm.restServer = &http.Server{
		Handler:           jm.restHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(jm.log.Handler(), slog.LevelWarn),
		TLSConfig:         httpTLS.Clone(), // not shared: the server changes its own
	}

	jm.wg.Add(2)
	go func() {
		defer jm.wg.Done()
		if err := jm.rpcServer.Serve(jm.rpcLn); err != nil {
			jm.failed <- fmt.Errorf("jobmanager RPC server: %w", err)
		}
	}()
	go func() {
		defer jm.wg.Done()
		if err := serveHTTP(jm.restServer, jm.restLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			jm.failed <- fmt.Errorf("jobmanager REST server: %w", err)
		}
	}()
	if jm.ha != nil {
		jm.wg.Add(1)
		go jm.campaign()
	}
	jm.log.Info("jobmanager started", "id", jm.id, "high-availability", jm.ha != nil, "rpc", jm.RPCAddr(), "rest", jm.RESTURL(),
		"heartbeat.interval", opts.HeartbeatInterval, "heartbeat.timeout", opts.HeartbeatTimeout,
		"token", opts.Security.Token != "", "tls", opts.Security.TLS.Enabled, "mutual-tls", opts.Security.TLS.Mutual)
	return jm, nil
}

// fastReconnect replaces gRPC's default reconnection backoff, which grows
// to two minutes: a peer that comes back (a restarted JobManager, a
// TaskManager after a network blip) should be reached within seconds.
var fastReconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// RPCAddr returns the host:port of the RPC server.
func (jm *JobManager) RPCAddr() string { return jm.rpcLn.Addr().String() }

// RESTURL returns the base URL of the REST API.
func (jm *JobManager) RESTURL() string {
	scheme := "http"
	if jm.opts.Security.TLS.Enabled {
		scheme = "https"
	}
	return scheme + "://" + jm.restLn.Addr().String()
}

// PrometheusURL returns the URL of the Prometheus endpoint
// (metrics.reporter.prom.port), "" when it has none.
func (jm *JobManager) PrometheusURL() string { return jm.promURL }

// Pool returns the JobManager's slot pool.
func (jm *JobManager) Pool() *SlotPool { return jm.pool }

// Wait blocks until ctx is done or a server fails, and returns the
// failure. It does not stop the JobManager; call Close.
func (jm *JobManager) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-jm.failed:
		return err
	}
}

// Close stops the servers and the heartbeat loops and waits for them.
// RPCs in flight get a moment to finish.
func (jm *JobManager) Close() error {
	jm.closeOnce.Do(func() {
		jm.mu.Lock()
		jm.closed = true
		jm.mu.Unlock()
		jm.cancel()
		stopped := make(chan struct{})
		go func() {
			jm.rpcServer.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(2 * time.Second):
			jm.rpcServer.Stop()
			<-stopped
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := jm.restServer.Shutdown(ctx); err != nil {
			jm.restServer.Close()
		}
		cancel()
		if jm.stopProm != nil {
			jm.stopProm()
		}
		jm.wg.Wait()
		jm.resign()
		jm.removeTempDir()
		jm.log.Info("jobmanager stopped")
	})
	return nil
}

func (jm *JobManager) removeTempDir() {
	if jm.removeWorkDir {
		os.RemoveAll(jm.workDir)
	}
}

// taskManagerClient returns the RPC client of a registered TaskManager and
// its current registration ID.
func (jm *JobManager) taskManagerClient(id string) (rpcpb.TaskManagerClient, string, bool) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	m, ok := jm.monitors[id]
	if !ok {
		return nil, "", false
	}
	return m.client, m.regID, true
}

// heartbeatDeadline bounds one heartbeat RPC: an answer later than the
// next heartbeat is as good as none.
func (jm *JobManager) heartbeatDeadline() time.Duration {
	return min(jm.opts.HeartbeatInterval, jm.opts.HeartbeatTimeout)
}

// register admits a TaskManager whose first heartbeat has been answered
// over conn, and starts heartbeating it. conn is closed when the
// registration ends.
func (jm *JobManager) register(reg Registration, conn *grpc.ClientConn) error {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if jm.closed {
		return status.Error(codes.Unavailable, "the jobmanager is shutting down")
	}
	if old, ok := jm.monitors[reg.ResourceID]; ok {
		old.cancel()
	}
	replaced, lost := jm.pool.Register(reg, time.Now())
	if replaced != nil {
		jm.log.Info("taskmanager registered again; its earlier registration is dropped",
			"taskmanager", reg.ResourceID, "address", reg.Address, "earlier_address", replaced.Address, "jobs_lost_slots", lost)
		jm.dispatcher.taskManagerLost(reg.ResourceID, "it registered again")
	}
	ctx, cancel := context.WithCancel(jm.ctx)
	m := &monitor{regID: reg.RegistrationID, cancel: cancel, client: rpcpb.NewTaskManagerClient(conn), poke: make(chan struct{}, 1)}
	jm.monitors[reg.ResourceID] = m
	jm.wg.Add(1)
	go jm.heartbeatLoop(ctx, reg, conn, m.poke)
	jm.log.Info("taskmanager registered", "taskmanager", reg.ResourceID, "address", reg.Address,
		"slots", reg.Slots, "cpu_cores", reg.Hardware.CPUCores, "memory", reg.Hardware.PhysicalMemory)
	return nil
}

// heartbeatLoop heartbeats one registration until it ends (the context is
// cancelled) or the TaskManager answers none for the heartbeat timeout.
func (jm *JobManager) heartbeatLoop(ctx context.Context, reg Registration, conn *grpc.ClientConn, poke <-chan struct{}) {
	defer jm.wg.Done()
	defer conn.Close()
	client := rpcpb.NewTaskManagerClient(conn)
	req := &rpcpb.HeartbeatRequest{JobmanagerId: jm.id, RegistrationId: reg.RegistrationID, LeaderTerm: jm.leaderTerm()}
	ticker := time.NewTicker(jm.opts.HeartbeatInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-poke:
		}
		hctx, cancel := context.WithTimeout(ctx, jm.heartbeatDeadline())
		resp, err := client.Heartbeat(hctx, req)
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		if err == nil {
			jm.metrics.heartbeatsReceived.Inc()
			jm.mu.Lock()
			if m := jm.monitors[reg.ResourceID]; m != nil && m.regID == reg.RegistrationID {
				m.process = resp.GetProcess()
			}
			jm.mu.Unlock()
			if jm.pool.HeartbeatReceived(reg.ResourceID, reg.RegistrationID, now) {
				jm.dispatcher.report(reg.ResourceID, resp.GetJobs())
			}
		} else {
			jm.metrics.heartbeatsMissed.Inc()
			lastErr = err
			jm.log.Debug("heartbeat missed", "taskmanager", reg.ResourceID, "error", err)
		}
		if jm.pool.Expired(reg.ResourceID, reg.RegistrationID, now, jm.opts.HeartbeatTimeout) {
			jm.lose(reg, lastErr)
			return
		}
	}
}

// lose removes a registration whose heartbeats timed out.
func (jm *JobManager) lose(reg Registration, lastErr error) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.dropMonitorLocked(reg)
	info, lost, ok := jm.pool.Remove(reg.ResourceID, reg.RegistrationID)
	if !ok {
		return
	}
	jm.metrics.taskManagersLost.Inc()
	jm.dispatcher.taskManagerLost(info.ResourceID, fmt.Sprintf("no heartbeat answered within heartbeat.timeout (%v)", jm.opts.HeartbeatTimeout))
	jm.log.Warn("taskmanager lost: no heartbeat answered within heartbeat.timeout; its slots are removed",
		"taskmanager", info.ResourceID, "address", info.Address, "slots", info.Slots,
		"last_heartbeat", info.LastHeartbeat.Format(time.RFC3339Nano), "heartbeat.timeout", jm.opts.HeartbeatTimeout,
		"last_error", errString(lastErr), "jobs_lost_slots", lost)
}

// unregister removes a registration at the TaskManager's request.
func (jm *JobManager) unregister(id, regID string) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	info, lost, ok := jm.pool.Remove(id, regID)
	if !ok {
		return
	}
	jm.dropMonitorLocked(info.Registration)
	jm.dispatcher.taskManagerLost(id, "it shut down")
	jm.log.Info("taskmanager unregistered", "taskmanager", id, "address", info.Address, "slots", info.Slots, "jobs_lost_slots", lost)
}

func (jm *JobManager) dropMonitorLocked(reg Registration) {
	if m, ok := jm.monitors[reg.ResourceID]; ok && m.regID == reg.RegistrationID {
		m.cancel()
		delete(jm.monitors, reg.ResourceID)
	}
}

// jmService implements the JobManager RPC service.
type jmService struct {
	rpcpb.UnimplementedJobManagerServer
	jm *JobManager
}

func (s *jmService) RegisterTaskManager(ctx context.Context, req *rpcpb.RegisterTaskManagerRequest) (*rpcpb.RegisterTaskManagerResponse, error) {
	jm := s.jm
	switch {
	case req.GetResourceId() == "" || req.GetRegistrationId() == "":
		return nil, status.Error(codes.InvalidArgument, "registration needs a resource ID and a registration ID")
	case req.GetSlots() < 1:
		return nil, status.Errorf(codes.InvalidArgument, "taskmanager %s offers %d slots; it needs at least 1", req.GetResourceId(), req.GetSlots())
	}
	if _, _, err := net.SplitHostPort(req.GetAddress()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "taskmanager %s: address %q is not host:port", req.GetResourceId(), req.GetAddress())
	}
	conn, err := grpc.NewClient(req.GetAddress(), jm.dialOpts...)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "taskmanager %s: address %q: %v", req.GetResourceId(), req.GetAddress(), err)
	}
	// The first heartbeat proves that the JobManager can reach the address
	// the TaskManager advertised, before any slot of it is counted.
	hctx, cancel := context.WithTimeout(ctx, jm.heartbeatDeadline())
	_, err = rpcpb.NewTaskManagerClient(conn).Heartbeat(hctx, &rpcpb.HeartbeatRequest{
		JobmanagerId: jm.id, RegistrationId: req.GetRegistrationId(), LeaderTerm: jm.leaderTerm(),
	})
	cancel()
	if err != nil {
		conn.Close()
		jm.log.Warn("refused a taskmanager the jobmanager cannot reach", "taskmanager", req.GetResourceId(), "address", req.GetAddress(), "error", err)
		return nil, status.Errorf(codes.FailedPrecondition,
			"the jobmanager cannot reach taskmanager %s at %s: %v (set taskmanager.host to an address the jobmanager can reach)",
			req.GetResourceId(), req.GetAddress(), status.Convert(err).Message())
	}
	reg := Registration{
		ResourceID:     req.GetResourceId(),
		RegistrationID: req.GetRegistrationId(),
		Address:        req.GetAddress(),
		Slots:          int(req.GetSlots()),
		Hardware: Hardware{
			CPUCores:       int(req.GetHardware().GetCpuCores()),
			PhysicalMemory: req.GetHardware().GetPhysicalMemoryBytes(),
		},
	}
	if err := jm.register(reg, conn); err != nil {
		conn.Close()
		return nil, err
	}
	return &rpcpb.RegisterTaskManagerResponse{
		JobmanagerId:        jm.id,
		HeartbeatIntervalMs: jm.opts.HeartbeatInterval.Milliseconds(),
		HeartbeatTimeoutMs:  jm.opts.HeartbeatTimeout.Milliseconds(),
		LeaderTerm:          jm.leaderTerm(),
	}, nil
}

func (s *jmService) ReportWorker(ctx context.Context, req *rpcpb.ReportWorkerRequest) (*rpcpb.ReportWorkerResponse, error) {
	// Only the TaskManager that runs the worker, under its current
	// registration, may report it (the token, when set, was checked
	// before).
	if _, regID, ok := s.jm.taskManagerClient(req.GetResourceId()); !ok || regID != req.GetRegistrationId() {
		return nil, status.Errorf(codes.FailedPrecondition, "taskmanager %s has no registration %s with this jobmanager",
			req.GetResourceId(), req.GetRegistrationId())
	}
	complete, addrs, err := s.jm.dispatcher.reportWorker(req)
	if err != nil {
		return nil, err
	}
	return &rpcpb.ReportWorkerResponse{Complete: complete, DataAddresses: addrs}, nil
}

func (s *jmService) ConfirmCheckpoint(ctx context.Context, req *rpcpb.ConfirmCheckpointRequest) (*rpcpb.ConfirmCheckpointResponse, error) {
	if _, regID, ok := s.jm.taskManagerClient(req.GetResourceId()); !ok || regID != req.GetRegistrationId() {
		return nil, status.Errorf(codes.FailedPrecondition, "taskmanager %s has no registration %s with this jobmanager",
			req.GetResourceId(), req.GetRegistrationId())
	}
	if err := s.jm.dispatcher.confirmCheckpoint(req); err != nil {
		return nil, err
	}
	return &rpcpb.ConfirmCheckpointResponse{}, nil
}

func (s *jmService) RequestHeartbeat(ctx context.Context, req *rpcpb.RequestHeartbeatRequest) (*rpcpb.RequestHeartbeatResponse, error) {
	s.jm.mu.Lock()
	m, ok := s.jm.monitors[req.GetResourceId()]
	s.jm.mu.Unlock()
	if !ok || m.regID != req.GetRegistrationId() {
		return nil, status.Errorf(codes.FailedPrecondition, "taskmanager %s has no registration %s with this jobmanager",
			req.GetResourceId(), req.GetRegistrationId())
	}
	select {
	case m.poke <- struct{}{}:
	default: // one is pending already
	}
	return &rpcpb.RequestHeartbeatResponse{}, nil
}

func (s *jmService) UnregisterTaskManager(ctx context.Context, req *rpcpb.UnregisterTaskManagerRequest) (*rpcpb.UnregisterTaskManagerResponse, error) {
	s.jm.unregister(req.GetResourceId(), req.GetRegistrationId())
	return &rpcpb.UnregisterTaskManagerResponse{}, nil
}

// newID returns 16 random hex digits.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
