package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
	"github.com/weirproject/weir/internal/ha"
)

// TaskManagerOptions configure a TaskManager; [TaskManagerOptionsFrom]
// reads them from a configuration.
type TaskManagerOptions struct {
	JobManagerAddress string // host:port of the JobManager's RPC server
	ResourceID        string // "" = derived from the address and a random suffix
	Slots             int
	BindHost          string // interface of the TaskManager's RPC server
	Host              string // address the JobManager dials; "" = BindHost, or the host name when BindHost is a wildcard
	RPCPort           int    // 0 picks a free port
	// RegistrationTimeout bounds how long the TaskManager keeps trying to
	// register, at start and after it lost the JobManager, before it gives
	// up with an error.
	RegistrationTimeout time.Duration
	RPCTimeout          time.Duration
	Security            Security
	// WorkingDir holds the artifact cache and a directory per job
	// attempt with the worker's log; "" = a temporary directory that Run
	// removes at its end.
	WorkingDir string
	Hardware   *Hardware    // nil = detect
	Logger     *slog.Logger // nil = slog.Default()
	// HA, when set, finds the JobManager through the leader election of a
	// highly available cluster instead of JobManagerAddress, and follows
	// a change of leader. The caller opens and closes the services.
	HA *ha.Services
	// PrometheusPort is metrics.reporter.prom.port: a port or range on
	// which the TaskManager serves its and its tasks' metrics; "" = none.
	PrometheusPort string
	// AllowedHosts are names under which the Prometheus endpoint answers
	// besides the TaskManager's own (rest.allowed-hosts; "*" = any), as
	// the JobManager's HTTP servers do: see newHostGuard.
	AllowedHosts []string
}

// TaskManager offers slots to a JobManager. This slice of it registers,
// answers heartbeats, and registers again when the JobManager's heartbeats
// stop.
type TaskManager struct {
	opts   TaskManagerOptions
	log    *slog.Logger
	addr   string // advertised host:port
	ln     net.Listener
	server *grpc.Server
	hw     Hardware
	// dialOpts dial the JobManager; conn, jmc and jmAddr (under mu) are
	// the connection to the current one.
	dialOpts []grpc.DialOption
	// gatewayLn is the loopback listener of the workers' gateway.
	gatewayLn net.Listener
	// promLn is the Prometheus endpoint's listener, nil without one;
	// httpTLS its TLS configuration, nil without TLS.
	promLn  net.Listener
	httpTLS *tls.Config

	workDir       string
	removeWorkDir bool
	cache         *artifactStore
	workers       *workers
	wg            sync.WaitGroup  // deployments
	ctx           context.Context // cancelled when Run ends
	stop          context.CancelFunc

	mu            sync.Mutex
	conn          *grpc.ClientConn
	jmc           rpcpb.JobManagerClient
	jmAddr        string
	leader        ha.Leader     // newest leader observed (high availability)
	leaderChanged chan struct{} // a newer leader was observed
	// term is the newest leadership term seen: orders of an older one
	// come from a deposed JobManager and are refused. regTerm is the term
	// of the JobManager this TaskManager registered with.
	term, regTerm int64
	regID         string    // current registration; heartbeats must carry it
	jmID          string    // JobManager that accepted it
	lastHeartbeat time.Time // from the JobManager
	hbInterval    time.Duration
	hbTimeout     time.Duration
}

// NewTaskManager listens on the TaskManager's RPC port, its workers'
// gateway and its Prometheus port (when it has one). Call Run to register
// and serve; Run releases what NewTaskManager acquired.
func NewTaskManager(opts TaskManagerOptions) (*TaskManager, error) {
	switch {
	case opts.JobManagerAddress == "" && opts.HA == nil:
		return nil, errors.New("no jobmanager address (--jobmanager or jobmanager.rpc.address)")
	case opts.Slots < 1:
		return nil, fmt.Errorf("%d slots; a taskmanager needs at least 1", opts.Slots)
	case opts.RegistrationTimeout <= 0 || opts.RPCTimeout <= 0:
		return nil, errors.New("taskmanager.registration.timeout and rpc.timeout must be positive")
	}
	if _, _, err := net.SplitHostPort(opts.JobManagerAddress); err != nil && opts.HA == nil {
		return nil, fmt.Errorf("jobmanager address %q: want HOST:PORT", opts.JobManagerAddress)
	}
	if err := opts.Security.TLS.check(); err != nil {
		return nil, err
	}
	if err := CheckToken(opts.Security.Token); err != nil {
		return nil, err
	}
	if err := opts.Security.checkBind("TaskManager", opts.BindHost); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	opts.Security.warnPlaintextToken(log, "TaskManager", opts.BindHost)
	serverOpts, err := opts.Security.serverOptions(log)
	if err != nil {
		return nil, err
	}
	dialOpts, err := opts.Security.dialOptions()
	if err != nil {
		return nil, err
	}
	httpTLS, err := opts.Security.httpTLS()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(opts.BindHost, strconv.Itoa(opts.RPCPort)))
	if err != nil {
		return nil, fmt.Errorf("RPC server: %w", err)
	}
	tm := &TaskManager{opts: opts, ln: ln, httpTLS: httpTLS, dialOpts: append(dialOpts, grpc.WithConnectParams(fastReconnect)), leaderChanged: make(chan struct{}, 1)}
	if opts.HA == nil {
		if err := tm.connect(opts.JobManagerAddress); err != nil {
			ln.Close()
			return nil, err
		}
	}
	conn := closerFunc(tm.closeConn)
	gatewayLn, err := listenGateway()
	if err != nil {
		ln.Close()
		conn.Close()
		return nil, err
	}
	tm.gatewayLn = gatewayLn
	tm.workers = &workers{tm: tm, attempts: make(map[string]*workerAttempt)}
	tm.ctx, tm.stop = context.WithCancel(context.Background())
	if tm.workDir = opts.WorkingDir; tm.workDir == "" {
		if tm.workDir, err = os.MkdirTemp("", "weir-taskmanager-"); err != nil {
			ln.Close()
			conn.Close()
			gatewayLn.Close()
			return nil, fmt.Errorf("working directory: %w", err)
		}
		tm.removeWorkDir = true
	}
	if tm.cache, err = newArtifactStore(filepath.Join(tm.workDir, "artifacts")); err != nil {
		ln.Close()
		conn.Close()
		gatewayLn.Close()
		return nil, err
	}
	if opts.PrometheusPort != "" {
		if tm.promLn, err = listenPrometheus(opts.BindHost, opts.PrometheusPort); err != nil {
			ln.Close()
			conn.Close()
			gatewayLn.Close()
			if tm.removeWorkDir {
				os.RemoveAll(tm.workDir)
			}
			return nil, err
		}
	}
	tm.addr = net.JoinHostPort(advertisedHost(opts), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	if tm.opts.ResourceID == "" {
		tm.opts.ResourceID = tm.addr + "-" + newID()[:6]
	}
	if opts.Hardware != nil {
		tm.hw = *opts.Hardware
	} else {
		tm.hw = detectHardware()
	}
	tm.log = log.With("component", "taskmanager", "taskmanager", tm.opts.ResourceID)
	tm.server = grpc.NewServer(serverOpts...)
	rpcpb.RegisterTaskManagerServer(tm.server, &tmService{tm: tm})
	return tm, nil
}

func advertisedHost(o TaskManagerOptions) string {
	if o.Host != "" {
		return o.Host
	}
	if ip := net.ParseIP(o.BindHost); o.BindHost != "" && (ip == nil || !ip.IsUnspecified()) {
		return o.BindHost
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "localhost"
}

// Address returns the host:port the TaskManager advertises to the
// JobManager.
func (tm *TaskManager) Address() string { return tm.addr }

// PrometheusURL returns the URL of the Prometheus endpoint
// (metrics.reporter.prom.port), "" when it has none.
func (tm *TaskManager) PrometheusURL() string {
	if tm.promLn == nil {
		return ""
	}
	return prometheusURL(tm.promLn, tm.httpTLS)
}

// ResourceID returns the TaskManager's identity.
func (tm *TaskManager) ResourceID() string { return tm.opts.ResourceID }

// Run registers with the JobManager and serves it until ctx is done, then
// unregisters and returns nil. It returns an error when the TaskManager
// cannot register within the registration timeout, at start or after it
// lost the JobManager, or when the JobManager refuses it for good (a wrong
// token). Run may be called once.
func (tm *TaskManager) Run(ctx context.Context) error {
	if tm.promLn != nil {
		hosts := newHostGuard(tm.opts.AllowedHosts, tm.opts.BindHost, tm.opts.Host)
		defer servePrometheus(tm.promLn, tm.registry(), tm.opts.Security.Token, hosts, tm.httpTLS, tm.log)()
		tm.log.Info("prometheus metrics", "url", tm.PrometheusURL())
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := tm.server.Serve(tm.ln); err != nil {
			tm.log.Error("taskmanager RPC server failed", "error", err)
		}
	}()
	stopGateway := tm.serveGateway()
	defer func() {
		// Workers end with their TaskManager; their jobs restart elsewhere.
		tm.stop()
		tm.workers.stopAll(workerShutdownGrace)
		stopGateway()
		tm.server.Stop()
		<-served
		tm.wg.Wait()
		tm.closeConn()
		if tm.removeWorkDir {
			os.RemoveAll(tm.workDir)
		}
	}()
	tm.log.Info("taskmanager started", "rpc", tm.addr, "slots", tm.opts.Slots, "jobmanager", tm.opts.JobManagerAddress, "high-availability", tm.opts.HA != nil)
	if tm.opts.HA != nil {
		tm.wg.Add(1)
		go func() {
			defer tm.wg.Done()
			tm.followLeader(tm.ctx)
		}()
	}

	if err := tm.register(ctx); err != nil {
		if ctx.Err() != nil {
			// Stopped while registering: the JobManager may have
			// registered it already (the reply lost to the cancel), so
			// take the registration back rather than leave it to the
			// heartbeat timeout.
			tm.unregister()
			return nil
		}
		return err
	}
	for {
		tm.mu.Lock()
		interval, timeout, last := tm.hbInterval, tm.hbTimeout, tm.lastHeartbeat
		tm.mu.Unlock()
		select {
		case <-ctx.Done():
			// Stop the workers before the JobManager hears of it and
			// restarts their jobs elsewhere: two attempts of a job must
			// not commit output at the same time.
			tm.stop()
			tm.workers.stopAll(workerShutdownGrace)
			tm.unregister()
			return nil
		case <-tm.leaderChanged:
			tm.mu.Lock()
			newer, l := tm.leader.Term > tm.regTerm, tm.leader
			tm.mu.Unlock()
			if !newer {
				continue
			}
			// The new leader restarts every job from its latest recorded
			// checkpoint: the attempts of the old one stop first.
			tm.log.Warn("a new jobmanager leads; stopping the old leader's job workers and registering with it",
				"term", l.Term, "leader", l.Address)
			tm.workers.stopAll(0)
			if err := tm.register(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			continue
		case <-time.After(interval):
		}
		since := time.Since(last)
		if since <= timeout {
			continue
		}
		tm.log.Warn("jobmanager lost: no heartbeat within heartbeat.timeout; killing the job workers and registering again",
			"jobmanager", tm.jobManagerAddr(), "since_last_heartbeat", since.Round(time.Millisecond), "heartbeat.timeout", timeout)
		// The JobManager, which lost this TaskManager at about the same
		// time, restarts the jobs elsewhere; the attempts here must not
		// keep committing output next to the new ones.
		tm.workers.stopAll(0)
		if err := tm.register(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// register registers under a fresh registration ID, retrying with backoff
// until it succeeds, the registration timeout passes, or the JobManager
// refuses for a reason that retrying cannot fix.
func (tm *TaskManager) register(ctx context.Context) error {
	regID := newID()
	tm.mu.Lock()
	tm.regID = regID
	tm.mu.Unlock()
	req := &rpcpb.RegisterTaskManagerRequest{
		ResourceId:     tm.opts.ResourceID,
		RegistrationId: regID,
		Address:        tm.addr,
		Slots:          int32(tm.opts.Slots),
		Hardware:       &rpcpb.Hardware{CpuCores: int32(tm.hw.CPUCores), PhysicalMemoryBytes: tm.hw.PhysicalMemory},
	}
	addr, limit := tm.opts.JobManagerAddress, tm.opts.RegistrationTimeout
	deadline := time.Now().Add(limit)
	delay := 100 * time.Millisecond
	var cause string // the most telling failure: a refused connection says more than a deadline
	for attempt := 1; ; attempt++ {
		var err error
		var resp *rpcpb.RegisterTaskManagerResponse
		if tm.opts.HA != nil {
			addr, err = tm.leaderRPC()
		}
		if err == nil {
			cctx, cancel := context.WithDeadline(ctx, minTime(deadline, time.Now().Add(tm.opts.RPCTimeout)))
			resp, err = tm.jobManager().RegisterTaskManager(cctx, req)
			cancel()
		}
		if err == nil && resp.GetLeaderTerm() < tm.newestTerm() {
			err = status.Errorf(codes.Unavailable, "the jobmanager at %s leads term %d, older than term %d", addr, resp.GetLeaderTerm(), tm.newestTerm())
		}
		if err == nil {
			tm.mu.Lock()
			tm.regTerm = resp.GetLeaderTerm()
			tm.term = max(tm.term, tm.regTerm)
			tm.jmID = resp.GetJobmanagerId()
			tm.hbInterval = max(time.Duration(resp.GetHeartbeatIntervalMs())*time.Millisecond, time.Millisecond)
			tm.hbTimeout = max(time.Duration(resp.GetHeartbeatTimeoutMs())*time.Millisecond, tm.hbInterval)
			tm.lastHeartbeat = time.Now()
			tm.mu.Unlock()
			tm.log.Info("registered with the jobmanager", "jobmanager", addr, "jobmanager_id", resp.GetJobmanagerId(),
				"attempts", attempt, "heartbeat.interval", tm.hbInterval, "heartbeat.timeout", tm.hbTimeout)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		st := status.Convert(err)
		switch st.Code() {
		case codes.Unauthenticated, codes.PermissionDenied, codes.InvalidArgument, codes.Unimplemented:
			return fmt.Errorf("the jobmanager at %s refused the registration: %s: %s", addr, st.Code(), st.Message())
		}
		if st.Code() != codes.DeadlineExceeded || cause == "" {
			cause = st.Message()
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("cannot register with the jobmanager at %s within %v (taskmanager.registration.timeout): %s",
				addr, limit, cause)
		}
		tm.log.Warn("registration with the jobmanager failed; retrying", "jobmanager", addr, "attempt", attempt,
			"error", st.Message(), "gives_up_in", left.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(delay, left)):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// unregister tells the JobManager that this TaskManager is going away.
// Failing is harmless: the JobManager then drops it on its heartbeat timeout.
func (tm *TaskManager) unregister() {
	tm.mu.Lock()
	regID := tm.regID
	tm.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), min(tm.opts.RPCTimeout, 2*time.Second))
	defer cancel()
	_, err := tm.jobManager().UnregisterTaskManager(ctx, &rpcpb.UnregisterTaskManagerRequest{
		ResourceId: tm.opts.ResourceID, RegistrationId: regID,
	})
	if err != nil {
		tm.log.Warn("could not unregister from the jobmanager", "jobmanager", tm.jobManagerAddr(), "error", err)
		return
	}
	tm.log.Info("unregistered from the jobmanager", "jobmanager", tm.jobManagerAddr())
}

// tmService implements the TaskManager RPC service.
type tmService struct {
	rpcpb.UnimplementedTaskManagerServer
	tm *TaskManager
}

func (s *tmService) Heartbeat(ctx context.Context, req *rpcpb.HeartbeatRequest) (*rpcpb.HeartbeatResponse, error) {
	tm := s.tm
	if err := tm.checkTerm(req.GetLeaderTerm()); err != nil {
		return nil, err
	}
	tm.mu.Lock()
	if req.GetRegistrationId() != tm.regID {
		tm.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "taskmanager %s has no registration %s", tm.opts.ResourceID, req.GetRegistrationId())
	}
	tm.lastHeartbeat = time.Now()
	tm.mu.Unlock()
	jobs := tm.workers.statuses()
	return &rpcpb.HeartbeatResponse{Jobs: jobs, Process: tm.workers.processMetrics()}, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// registry holds the TaskManager's metrics: its process, its slots and
// its workers' tasks.
func (tm *TaskManager) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "weir_taskmanager_Status_TaskSlots", Help: "Task slots the TaskManager offers.",
			ConstLabels: prometheus.Labels{"tm_id": tm.opts.ResourceID},
		}, func() float64 { return float64(tm.opts.Slots) }),
		taskCollector{tm},
	)
	return reg
}
