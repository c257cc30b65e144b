package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
	"github.com/weirproject/weir/internal/testcert"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startJM starts a JobManager on loopback with free ports and fast
// heartbeats; modify adjusts the options first.
func startJM(t *testing.T, modify func(*JobManagerOptions)) *JobManager {
	t.Helper()
	opts := JobManagerOptions{
		BindHost:          "127.0.0.1",
		HeartbeatInterval: 50 * time.Millisecond,
		HeartbeatTimeout:  300 * time.Millisecond,
		RPCTimeout:        2 * time.Second,
		Logger:            testLogger(t),
	}
	if modify != nil {
		modify(&opts)
	}
	jm, err := StartJobManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jm.Close() })
	return jm
}

// runTM runs a TaskManager until the test ends; its Run error arrives on
// the returned channel.
func runTM(t *testing.T, jm string, slots int, modify func(*TaskManagerOptions)) (*TaskManager, <-chan error) {
	t.Helper()
	opts := TaskManagerOptions{
		JobManagerAddress:   jm,
		Slots:               slots,
		BindHost:            "127.0.0.1",
		RegistrationTimeout: 5 * time.Second,
		RPCTimeout:          2 * time.Second,
		Hardware:            &Hardware{CPUCores: 4, PhysicalMemory: 1 << 30},
		Logger:              testLogger(t),
	}
	if modify != nil {
		modify(&opts)
	}
	tm, err := NewTaskManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		done <- tm.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("taskmanager did not stop")
		}
	})
	return tm, done
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitTotals(t *testing.T, jm *JobManager, want [3]int) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("taskmanagers, slots, free = %v (now %v)", want, totals(jm.Pool())),
		func() bool { return totals(jm.Pool()) == want })
}

// fakeTM serves the TaskManager RPC service with a fixed registration ID
// and can be killed without unregistering, as a crashed process would be.
type fakeTM struct {
	rpcpb.UnimplementedTaskManagerServer
	regID  string
	server *grpc.Server
	addr   string
}

func (f *fakeTM) Heartbeat(ctx context.Context, req *rpcpb.HeartbeatRequest) (*rpcpb.HeartbeatResponse, error) {
	if req.GetRegistrationId() != f.regID {
		return nil, status.Error(codes.FailedPrecondition, "unknown registration")
	}
	return &rpcpb.HeartbeatResponse{}, nil
}

func startFakeTM(t *testing.T, regID string) *fakeTM {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTM{regID: regID, server: grpc.NewServer(), addr: ln.Addr().String()}
	rpcpb.RegisterTaskManagerServer(f.server, f)
	served := make(chan struct{})
	go func() { defer close(served); f.server.Serve(ln) }()
	t.Cleanup(func() { f.server.Stop(); <-served })
	return f
}

func jmClient(t *testing.T, addr string, sec Security) rpcpb.JobManagerClient {
	t.Helper()
	opts, err := sec.dialOptions()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rpcpb.NewJobManagerClient(conn)
}

func TestJobManagerRemovesTaskManagerOnHeartbeatTimeout(t *testing.T) {
	jm := startJM(t, nil)
	tm := startFakeTM(t, "reg-1")
	client := jmClient(t, jm.RPCAddr(), Security{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := client.RegisterTaskManager(ctx, &rpcpb.RegisterTaskManagerRequest{
		ResourceId: "tm-1", RegistrationId: "reg-1", Address: tm.addr, Slots: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := totals(jm.Pool()), [3]int{1, 3, 3}; got != want {
		t.Fatalf("after registration: totals %v, want %v", got, want)
	}
	// Several heartbeats are answered while the TaskManager lives.
	waitFor(t, 5*time.Second, "answered heartbeats", func() bool {
		info, ok := jm.Pool().TaskManager("tm-1")
		return ok && info.LastHeartbeat.Sub(info.Registered) > 2*jm.opts.HeartbeatInterval
	})
	killed := time.Now()
	tm.server.Stop()
	waitTotals(t, jm, [3]int{0, 0, 0})
	// Lost no sooner than the timeout, and not much later than it plus
	// one heartbeat interval (generously, for a loaded machine).
	if took := time.Since(killed); took < jm.opts.HeartbeatTimeout-jm.opts.HeartbeatInterval || took > 3*time.Second {
		t.Errorf("taskmanager removed %v after it died; heartbeat.timeout is %v", took, jm.opts.HeartbeatTimeout)
	}
	if got := readCounter(t, jm, "weir_jobmanager_taskmanagers_lost_total"); got != 1 {
		t.Errorf("taskmanagers lost = %v, want 1", got)
	}
	if got := readCounter(t, jm, "weir_jobmanager_heartbeats_missed_total"); got < 1 {
		t.Errorf("heartbeats missed = %v, want at least 1", got)
	}
}

func readCounter(t *testing.T, jm *JobManager, name string) float64 {
	t.Helper()
	mfs, err := jm.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func TestJobManagerRefusesUnreachableTaskManager(t *testing.T) {
	jm := startJM(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = jmClient(t, jm.RPCAddr(), Security{}).RegisterTaskManager(ctx, &rpcpb.RegisterTaskManagerRequest{
		ResourceId: "tm-x", RegistrationId: "r", Address: dead, Slots: 1,
	})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), dead) {
		t.Fatalf("registering an unreachable address: err = %v, want FailedPrecondition naming %s", err, dead)
	}
	if got := totals(jm.Pool()); got != [3]int{} {
		t.Errorf("totals = %v, want none registered", got)
	}
}

func TestTaskManagerRegisters(t *testing.T) {
	jm := startJM(t, nil)
	tm1, _ := runTM(t, jm.RPCAddr(), 3, nil)
	_, _ = runTM(t, jm.RPCAddr(), 2, nil)
	waitTotals(t, jm, [3]int{2, 5, 5})
	info, ok := jm.Pool().TaskManager(tm1.ResourceID())
	if !ok || info.Address != tm1.Address() || info.Hardware.CPUCores != 4 || info.Hardware.PhysicalMemory != 1<<30 {
		t.Fatalf("registered TaskManager = %+v, %v", info, ok)
	}
}

func TestTaskManagerUnregistersOnShutdown(t *testing.T) {
	jm := startJM(t, func(o *JobManagerOptions) { o.HeartbeatTimeout = time.Minute })
	tm, err := NewTaskManager(TaskManagerOptions{
		JobManagerAddress: jm.RPCAddr(), Slots: 2, BindHost: "127.0.0.1",
		RegistrationTimeout: 5 * time.Second, RPCTimeout: 2 * time.Second, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tm.Run(ctx) }()
	waitTotals(t, jm, [3]int{1, 2, 2})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	// With a one-minute heartbeat timeout, only the unregistration can
	// have removed it this fast.
	waitTotals(t, jm, [3]int{0, 0, 0})
}

// TestTaskManagerReregistersWithNewJobManager covers the other direction
// of the heartbeats: the TaskManager notices that the JobManager's
// heartbeats stopped and registers again, here with a JobManager restarted
// on the same port.
func TestTaskManagerReregistersWithNewJobManager(t *testing.T) {
	jm1 := startJM(t, nil)
	addr := jm1.RPCAddr()
	_, port, _ := net.SplitHostPort(addr)
	_, done := runTM(t, addr, 2, nil)
	waitTotals(t, jm1, [3]int{1, 2, 2})
	jm1.Close()

	jm2 := startJM(t, func(o *JobManagerOptions) {
		o.RPCPort = atoi(t, port)
	})
	waitTotals(t, jm2, [3]int{1, 2, 2})
	select {
	case err := <-done:
		t.Fatalf("taskmanager stopped: %v", err)
	default:
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTaskManagerGivesUpAfterRegistrationTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, done := runTM(t, dead, 1, func(o *TaskManagerOptions) { o.RegistrationTimeout = 500 * time.Millisecond })
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), "taskmanager.registration.timeout") {
			t.Fatalf("Run = %v, want an error naming %s and the timeout", err, dead)
		}
		if took := time.Since(start); took < 500*time.Millisecond || took > 5*time.Second {
			t.Errorf("gave up after %v, want about 500ms", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("taskmanager did not give up")
	}
}

func TestJobManagerTokenRequired(t *testing.T) {
	const token = "s3cret-0123456789abcdef"
	jm := startJM(t, func(o *JobManagerOptions) { o.Security.Token = token })
	runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) { o.Security.Token = token })
	waitTotals(t, jm, [3]int{1, 2, 2})

	for _, wrong := range []string{"", "wrong-token-0123456789"} {
		start := time.Now()
		_, done := runTM(t, jm.RPCAddr(), 1, func(o *TaskManagerOptions) { o.Security.Token = wrong })
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
				t.Errorf("token %q: Run = %v, want Unauthenticated", wrong, err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("token %q: refused after %v; a wrong token must fail without retrying", wrong, took)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("token %q: taskmanager was not refused", wrong)
		}
	}
	if got := totals(jm.Pool()); got != [3]int{1, 2, 2} {
		t.Errorf("after refused registrations: totals %v, want the one good TaskManager", got)
	}

	get := func(auth string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, jm.RESTURL()+"/overview", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, auth := range []string{"", "Bearer wrong", token, "Basic " + token} {
		if resp := get(auth); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("REST with Authorization %q: %s, want 401", auth, resp.Status)
		}
	}
	if resp := get("Bearer " + token); resp.StatusCode != http.StatusOK {
		t.Errorf("REST with the token: %s, want 200", resp.Status)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestJobManagerNonLoopbackBindNeedsToken(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "", "::", "192.0.2.1", "example.com"} {
		_, err := StartJobManager(JobManagerOptions{
			BindHost: host, HeartbeatInterval: time.Second, HeartbeatTimeout: time.Second, RPCTimeout: time.Second,
		})
		if err == nil || !strings.Contains(err.Error(), "security.token") {
			t.Errorf("jobmanager on %q without a token: err = %v, want a refusal naming security.token", host, err)
		}
		_, err = NewTaskManager(TaskManagerOptions{
			JobManagerAddress: "127.0.0.1:6123", Slots: 1, BindHost: host,
			RegistrationTimeout: time.Second, RPCTimeout: time.Second,
		})
		if err == nil || !strings.Contains(err.Error(), "security.token") {
			t.Errorf("taskmanager on %q without a token: err = %v, want a refusal naming security.token", host, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1", "127.0.0.2"} {
		if !isLoopback(host) {
			t.Errorf("isLoopback(%q) = false", host)
		}
	}
}

func TestJobManagerRESTAPI(t *testing.T) {
	jm := startJM(t, nil)
	tm, _ := runTM(t, jm.RPCAddr(), 3, nil)
	waitTotals(t, jm, [3]int{1, 3, 3})
	client, err := NewRESTClient(strings.TrimPrefix(jm.RESTURL(), "http://"), Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	o, err := client.Overview(ctx)
	if err != nil || o != (Overview{TaskManagers: 1, SlotsTotal: 3, SlotsAvailable: 3, Leader: true}) {
		t.Errorf("Overview = %+v, %v", o, err)
	}
	tms, err := client.TaskManagers(ctx)
	if err != nil || len(tms) != 1 {
		t.Fatalf("TaskManagers = %+v, %v", tms, err)
	}
	if got := tms[0]; got.ID != tm.ResourceID() || got.Address != tm.Address() || got.SlotsNumber != 3 ||
		got.FreeSlots != 3 || got.Hardware.CPUCores != 4 || got.LastHeartbeat < got.Registered {
		t.Errorf("TaskManager = %+v", got)
	}
	jobs, err := client.Jobs(ctx)
	if err != nil || jobs == nil || len(jobs) != 0 {
		t.Errorf("Jobs = %#v, %v; want an empty list", jobs, err)
	}

	for _, tt := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/jobs/0123abcd", 404, `{"errors":["job 0123abcd not found"]}`},
		{"GET", "/taskmanagers/nope", 404, `{"errors":["taskmanager nope not found"]}`},
		{"GET", "/nothing", 404, `{"errors":["not found: /nothing"]}`},
		{"POST", "/overview", 405, `{"errors":["method POST not allowed on /overview"]}`},
		{"GET", "/taskmanagers/" + tm.ResourceID(), 200, ""},
	} {
		req, _ := http.NewRequest(tt.method, jm.RESTURL()+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || (tt.body != "" && strings.TrimSpace(string(body)) != tt.body) {
			t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.path, resp.StatusCode, body, tt.code, tt.body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", tt.method, tt.path, ct)
		}
	}

	resp, err := http.Get(jm.RESTURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"weir_jobmanager_numRegisteredTaskManagers 1",
		"weir_jobmanager_taskSlotsTotal 3",
		"weir_jobmanager_taskSlotsAvailable 3",
		"weir_jobmanager_heartbeats_received_total ",
		"weir_jobmanager_heartbeats_missed_total 0",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost, which also serves as its own CA.
func writeSelfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	return testcert.Write(t)
}

func TestJobManagerTLS(t *testing.T) {
	cert, key := writeSelfSigned(t)
	sec := Security{Token: testToken, TLS: TLSFiles{Enabled: true, Cert: cert, Key: key, CA: cert}}
	jm := startJM(t, func(o *JobManagerOptions) { o.Security = sec })
	if !strings.HasPrefix(jm.RESTURL(), "https://") {
		t.Fatalf("REST URL %s is not https", jm.RESTURL())
	}
	runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) { o.Security = sec })
	waitTotals(t, jm, [3]int{1, 2, 2})

	client, err := NewRESTClient(strings.TrimPrefix(jm.RESTURL(), "https://"), sec)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if o, err := client.Overview(context.Background()); err != nil || o.SlotsTotal != 2 {
		t.Errorf("Overview over TLS = %+v, %v", o, err)
	}

	// A client that does not trust the CA is refused by the handshake.
	untrusting, err := NewRESTClient(strings.TrimPrefix(jm.RESTURL(), "https://"), Security{Token: testToken, TLS: TLSFiles{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer untrusting.Close()
	if _, err := untrusting.Overview(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Overview without trusting the CA: err = %v, want a certificate error", err)
	}

	// A TaskManager speaking plaintext cannot register.
	_, done := runTM(t, jm.RPCAddr(), 1, func(o *TaskManagerOptions) {
		o.Security = Security{Token: testToken}
		o.RegistrationTimeout = 300 * time.Millisecond
	})
	select {
	case err := <-done:
		if err == nil {
			t.Error("a plaintext taskmanager registered with a TLS jobmanager")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("plaintext taskmanager did not give up")
	}
	if got := totals(jm.Pool()); got != [3]int{1, 2, 2} {
		t.Errorf("totals = %v, want only the TLS TaskManager", got)
	}
}

// TestJobManagerMutualTLS runs a JobManager and a TaskManager that
// require each other's certificates (security.ssl.mutual), and shows that
// clients without a certificate are refused by RPC and REST.
func TestJobManagerMutualTLS(t *testing.T) {
	cert, key := writeSelfSigned(t)
	sec := Security{TLS: TLSFiles{Enabled: true, Mutual: true, Cert: cert, Key: key, CA: cert}}
	jm := startJM(t, func(o *JobManagerOptions) { o.Security = sec })
	runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) { o.Security = sec })
	waitTotals(t, jm, [3]int{1, 2, 2})
	// The JobManager's heartbeats reach the TaskManager's RPC server,
	// which requires the JobManager's certificate too: the TaskManager
	// outlives several heartbeat timeouts.
	time.Sleep(time.Second)
	if got := totals(jm.Pool()); got != [3]int{1, 2, 2} {
		t.Fatalf("totals = %v after a second: the JobManager lost the TaskManager", got)
	}

	rest := strings.TrimPrefix(jm.RESTURL(), "https://")
	client, err := NewRESTClient(rest, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if o, err := client.Overview(context.Background()); err != nil || o.SlotsTotal != 2 {
		t.Errorf("Overview with a client certificate = %+v, %v", o, err)
	}
	// A client that trusts the server but has no certificate of its own.
	anonymous, err := NewRESTClient(rest, Security{TLS: TLSFiles{Enabled: true, CA: cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	if _, err := anonymous.Overview(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Overview without a client certificate: err = %v, want a certificate error", err)
	}

	// A TaskManager with TLS but without mutual TLS presents no client
	// certificate and cannot register.
	_, done := runTM(t, jm.RPCAddr(), 1, func(o *TaskManagerOptions) {
		o.Security = Security{TLS: TLSFiles{Enabled: true, Cert: cert, Key: key, CA: cert}}
		o.RegistrationTimeout = 300 * time.Millisecond
	})
	select {
	case err := <-done:
		if err == nil {
			t.Error("a taskmanager without a client certificate registered")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the taskmanager without a client certificate did not give up")
	}
	if got := totals(jm.Pool()); got != [3]int{1, 2, 2} {
		t.Errorf("totals = %v, want only the mutual-TLS TaskManager", got)
	}
}

// TestMutualTLSNeedsEveryFile: a process with mutual TLS on but a file
// missing fails at its start, naming the missing keys.
func TestMutualTLSNeedsEveryFile(t *testing.T) {
	cert, key := writeSelfSigned(t)
	for _, tc := range []struct {
		tls  TLSFiles
		want string
	}{
		{TLSFiles{Mutual: true, Cert: cert, Key: key, CA: cert}, "security.ssl.enabled is not"},
		{TLSFiles{Enabled: true, Mutual: true, Cert: cert, Key: key}, "security.ssl.ca is not set"},
		{TLSFiles{Enabled: true, Mutual: true, CA: cert}, "security.ssl.cert, security.ssl.key are not set"},
	} {
		sec := Security{TLS: tc.tls}
		_, err := StartJobManager(JobManagerOptions{BindHost: "127.0.0.1", HeartbeatInterval: time.Second, HeartbeatTimeout: time.Second,
			RPCTimeout: time.Second, Security: sec, Logger: testLogger(t)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("StartJobManager(%+v): err = %v, want %q", tc.tls, err, tc.want)
		}
		_, err = NewTaskManager(TaskManagerOptions{JobManagerAddress: "127.0.0.1:1", Slots: 1, BindHost: "127.0.0.1",
			RegistrationTimeout: time.Second, RPCTimeout: time.Second, Security: sec, Logger: testLogger(t)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewTaskManager(%+v): err = %v, want %q", tc.tls, err, tc.want)
		}
		if _, err := NewRESTClient("127.0.0.1:1", sec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRESTClient(%+v): err = %v, want %q", tc.tls, err, tc.want)
		}
	}
}
