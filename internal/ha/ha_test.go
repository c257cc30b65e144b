package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/storage"
)

// The embedded etcd server and the etcd client leave goroutines that
// outlive Close: gRPC's and zap's background loops and etcd's own
// schedulers, which have no stop hook. They are ignored by top function;
// every goroutine of this package is still checked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/schedule.(*fifo).run"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).linearizableReadLoop"),
		goleak.IgnoreAnyFunction("gocloud.dev/blob/fileblob"),
	)
}

const ttl = 2 * time.Second

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEtcd runs an embedded single-member etcd on free loopback ports and
// returns its client endpoint (host:port).
func startEtcd(t *testing.T) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop()) // its shutdown errors are harmless
	client, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		t.Fatal("embedded etcd not ready within 20 s")
	}
	return client.Host
}

func testConfig(t *testing.T, endpoint, dir string) Config {
	return Config{
		Endpoints: []string{endpoint}, ClusterID: "/test-cluster", StorageDir: dir, LeaseTTL: ttl,
		// Reconnect quickly once a cut connection heals.
		dialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.2, MaxDelay: 300 * time.Millisecond},
		})},
	}
}

func open(t *testing.T, cfg Config) *Services {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func bg(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type result struct {
	l   *Leadership
	err error
	who int
}

// campaign starts a campaign in the background; the result arrives on ch.
func campaign(ctx context.Context, s *Services, who int, ch chan<- result) {
	go func() {
		l, err := s.Campaign(ctx, fmt.Sprintf("jm-%d:6123", who))
		ch <- result{l, err, who}
	}()
}

func waitLeader(t *testing.T, ch <-chan result, within time.Duration) result {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("campaign of jm-%d: %v", r.who, r.err)
		}
		return r
	case <-time.After(within):
		t.Fatalf("no leader within %v", within)
	}
	panic("unreachable")
}

func noLeader(t *testing.T, ch <-chan result, d time.Duration) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("jm-%d leads too (err %v)", r.who, r.err)
	case <-time.After(d):
	}
}

func TestCrashedLeaderIsReplacedWithHigherTerm(t *testing.T) {
	ep := startEtcd(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var svcs []*Services
	ch := make(chan result, 3)
	for i := 0; i < 3; i++ {
		s := open(t, testConfig(t, ep, dir))
		svcs = append(svcs, s)
		campaign(ctx, s, i, ch)
	}
	obs := open(t, testConfig(t, ep, dir))
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	seen := obs.ObserveLeader(octx)

	first := waitLeader(t, ch, 10*time.Second)
	noLeader(t, ch, 500*time.Millisecond) // exactly one leads
	got, err := obs.LeaderAddress(ctx)
	if err != nil || got != (Leader{first.l.Address(), first.l.Term()}) {
		t.Fatalf("LeaderAddress = %+v, %v; want jm-%d term %d", got, err, first.who, first.l.Term())
	}
	if l := <-seen; l.Address != first.l.Address() || l.Term != first.l.Term() {
		t.Fatalf("observer saw %+v, want %s term %d", l, first.l.Address(), first.l.Term())
	}

	// Crash: the client goes away without resigning; the lease must
	// expire before anyone else leads.
	crashed := time.Now()
	svcs[first.who].Close()
	second := waitLeader(t, ch, 3*ttl+2*time.Second)
	took := time.Since(crashed)
	t.Logf("takeover by jm-%d after %v (TTL %v), term %d -> %d", second.who, took, ttl, first.l.Term(), second.l.Term())
	if second.l.Term() <= first.l.Term() {
		t.Fatalf("new term %d not above the crashed leader's %d", second.l.Term(), first.l.Term())
	}
	noLeader(t, ch, 500*time.Millisecond)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case l := <-seen:
			if l.Address == second.l.Address() && l.Term == second.l.Term() {
				goto observed
			}
		case <-deadline:
			t.Fatalf("observer did not see jm-%d lead", second.who)
		}
	}
observed:
	// A graceful handover: the last candidate takes over at once.
	if err := second.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.l.Done():
	default:
		t.Fatal("Done not closed after Resign")
	}
	third := waitLeader(t, ch, 2*time.Second)
	if third.l.Term() <= second.l.Term() {
		t.Fatalf("third term %d not above %d", third.l.Term(), second.l.Term())
	}
	if err := third.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.LeaderAddress(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("LeaderAddress with nobody campaigning = %v, want ErrNoLeader", err)
	}
	ocancel()
	for range seen { // the observer's goroutine ends with its context
	}
}

// stale is a copy of l as a paused leader sees it: it has not noticed the
// loss yet, so only etcd's fence can stop its writes. via is the (working)
// connection it writes through.
func stale(l *Leadership, via *Services) *Leadership {
	return &Leadership{s: via, key: l.key, term: l.term, done: make(chan struct{})}
}

// snapshot is everything of the cluster in etcd.
func snapshot(t *testing.T, s *Services) map[string]string {
	t.Helper()
	resp, err := s.client.Get(bg(t, 5*time.Second), s.prefix+"jobs/", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range resp.Kvs {
		if strings.HasPrefix(string(kv.Key), s.prefix) && !strings.HasPrefix(string(kv.Key), s.electionPrefix()) {
			m[string(kv.Key)] = fmt.Sprintf("%s@%d", kv.Value, kv.ModRevision)
		}
	}
	return m
}

// deposedWritesFail checks that every store write of l fails with
// ErrNotLeader and changes nothing that s sees.
func deposedWritesFail(t *testing.T, l *Leadership, s *Services) {
	t.Helper()
	ctx := bg(t, 10*time.Second)
	before := snapshot(t, s)
	if _, err := l.Jobs().Put(ctx, "job-b", "late", []byte("graph")); !errors.Is(err, ErrNotLeader) {
		t.Errorf("deposed Put: %v, want ErrNotLeader", err)
	}
	if err := l.Jobs().Remove(ctx, "job-a"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("deposed Remove: %v, want ErrNotLeader", err)
	}
	if id, err := l.CheckpointIDs().Next(ctx, "job-a"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("deposed Next: %d, %v, want ErrNotLeader", id, err)
	}
	if _, err := l.CompletedCheckpoints(1).AddCompleted(ctx, "job-a", 99, "late"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("deposed AddCompleted: %v, want ErrNotLeader", err)
	}
	if after := snapshot(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("deposed writes changed etcd:\nbefore %v\nafter  %v", before, after)
	}
	// The deposed Put's graph blob was deleted again.
	blobs, err := os.ReadDir(filepath.Join(s.cfg.StorageDir, s.cfg.ClusterID, "jobs", "job-b"))
	if err == nil && len(blobs) > 0 {
		t.Errorf("deposed Put left blobs: %v", blobs)
	}
}

// proxy forwards TCP to target until cut; cut closes every connection and
// refuses new ones until heal.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cutOff bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cutOff {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(up, c); up.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, up); c.Close() }()
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *proxy) heal() {
	p.mu.Lock()
	p.cutOff = false
	p.mu.Unlock()
}

func TestCutOffLeaderLosesLeadershipAndIsFenced(t *testing.T) {
	ep := startEtcd(t)
	dir := t.TempDir()
	ctx := bg(t, 60*time.Second)
	px := newProxy(t, ep)
	a := open(t, testConfig(t, px.ln.Addr().String(), dir))
	b := open(t, testConfig(t, ep, dir))

	la, err := a.Campaign(ctx, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := la.Jobs().Put(ctx, "job-a", "wordcount", []byte("graph-a")); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := 0; i < 3; i++ {
		id, err := la.CheckpointIDs().Next(ctx, "job-a")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if _, err := la.CompletedCheckpoints(2).AddCompleted(ctx, "job-a", id, fmt.Sprintf("file:///cp/chk-%d", id)); err != nil {
			t.Fatal(err)
		}
	}

	ch := make(chan result, 1)
	campaign(ctx, b, 2, ch)
	noLeader(t, ch, 500*time.Millisecond)
	cut := time.Now()
	px.cut() // a is paused: no keepalives reach etcd
	rb := waitLeader(t, ch, 3*ttl+2*time.Second)
	t.Logf("b leads %v after the cut, term %d -> %d", time.Since(cut), la.Term(), rb.l.Term())
	if rb.l.Term() <= la.Term() {
		t.Fatalf("term %d not above %d", rb.l.Term(), la.Term())
	}
	select {
	case <-la.Done():
		t.Logf("a noticed the loss %v after the cut", time.Since(cut))
	case <-time.After(3*ttl + 2*time.Second):
		t.Fatal("the cut-off leader's Done was not closed")
	}

	// a wakes up and the network is back: its writes must fail, both
	// through its own Done and, before it noticed, through etcd's fence.
	px.heal()
	deposedWritesFail(t, la, b)
	deposedWritesFail(t, stale(la, b), b)

	// The new leader continues the counter and sees a's state.
	for i := 0; i < 3; i++ {
		id, err := rb.l.CheckpointIDs().Next(ctx, "job-a")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("checkpoint IDs across leaders not strictly increasing: %v", ids)
		}
	}
	latest, ok, err := rb.l.CompletedCheckpoints(2).Latest(ctx, "job-a")
	if err != nil || !ok || latest.ID != ids[2] || latest.Pointer != fmt.Sprintf("file:///cp/chk-%d", ids[2]) {
		t.Fatalf("Latest = %+v %v %v, want checkpoint %d", latest, ok, err, ids[2])
	}
	if err := rb.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	storage.CloseBuckets()
}

func TestRevokedLeaseDeposesLeader(t *testing.T) {
	ep := startEtcd(t)
	dir := t.TempDir()
	ctx := bg(t, 60*time.Second)
	a := open(t, testConfig(t, ep, dir))
	b := open(t, testConfig(t, ep, dir))
	admin := open(t, testConfig(t, ep, dir))
	la, err := a.Campaign(ctx, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := la.Jobs().Put(ctx, "job-a", "x", []byte("g")); err != nil {
		t.Fatal(err)
	}
	ch := make(chan result, 1)
	campaign(ctx, b, 2, ch)
	noLeader(t, ch, 300*time.Millisecond)
	if _, err := admin.client.Revoke(ctx, la.session.Lease()); err != nil {
		t.Fatal(err)
	}
	rb := waitLeader(t, ch, 2*time.Second) // no TTL wait: the key is gone at once
	select {
	case <-la.Done():
	case <-time.After(2 * ttl):
		t.Fatal("revoked leader's Done not closed")
	}
	deposedWritesFail(t, la, b)
	deposedWritesFail(t, stale(la, b), b)
	if err := la.Resign(ctx); err != nil { // resigning a lost leadership is harmless
		t.Fatalf("resign after loss: %v", err)
	}
	if err := rb.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	storage.CloseBuckets()
}

func TestJobStoreAndCompletedCheckpoints(t *testing.T) {
	ep := startEtcd(t)
	dir := t.TempDir()
	ctx := bg(t, 30*time.Second)
	s := open(t, testConfig(t, ep, dir))
	l, err := s.Campaign(ctx, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)
	jobs := l.Jobs()
	graphs := map[string][]byte{}
	for i, id := range []string{"job-2", "job-1", "job-3"} {
		g := bytes.Repeat([]byte{byte(i)}, 100_000+i) // large: only in storageDir
		graphs[id] = g
		rec, err := jobs.Put(ctx, id, "name-"+id, g)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Term != l.Term() || rec.JobID != id {
			t.Fatalf("record %+v", rec)
		}
	}
	list, err := jobs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].JobID != "job-1" || list[2].JobID != "job-3" {
		t.Fatalf("List = %+v", list)
	}
	for _, rec := range list {
		g, err := jobs.ReadGraph(ctx, rec)
		if err != nil || !bytes.Equal(g, graphs[rec.JobID]) || rec.Name != "name-"+rec.JobID {
			t.Fatalf("job %s: graph round trip failed (%v)", rec.JobID, err)
		}
	}
	// etcd holds only the small record.
	resp, err := s.client.Get(ctx, s.jobKey("job-1"))
	if err != nil || len(resp.Kvs) != 1 || len(resp.Kvs[0].Value) > 1024 {
		t.Fatalf("etcd record of job-1: %v %v", resp, err)
	}
	// Replacing a job's graph deletes the old blob.
	old, _ := jobs.Get(ctx, "job-1")
	if _, err := jobs.Put(ctx, "job-1", "v2", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "test-cluster", old.Graph)); !os.IsNotExist(err) {
		t.Fatalf("old graph blob still there: %v", err)
	}

	cps := l.CompletedCheckpoints(2)
	var dropped []CompletedCheckpoint
	for id := int64(1); id <= 4; id++ {
		if _, err := l.CheckpointIDs().Next(ctx, "job-1"); err != nil {
			t.Fatal(err)
		}
		d, err := cps.AddCompleted(ctx, "job-1", id, fmt.Sprintf("s3://b/cp/chk-%d", id))
		if err != nil {
			t.Fatal(err)
		}
		dropped = append(dropped, d...)
	}
	all, err := cps.All(ctx, "job-1")
	if err != nil || fmt.Sprint(all) != "[{3 s3://b/cp/chk-3} {4 s3://b/cp/chk-4}]" {
		t.Fatalf("All = %v %v", all, err)
	}
	if fmt.Sprint(dropped) != "[{1 s3://b/cp/chk-1} {2 s3://b/cp/chk-2}]" {
		t.Fatalf("dropped = %v", dropped)
	}
	if _, err := cps.AddCompleted(ctx, "job-1", 4, "again"); err == nil || !strings.Contains(err.Error(), "not newer") {
		t.Fatalf("re-adding checkpoint 4: %v", err)
	}
	if _, err := cps.AddCompleted(ctx, "job-1", 5, strings.Repeat("x", maxPointerBytes+1)); err == nil {
		t.Fatal("oversized pointer accepted")
	}
	if _, err := jobs.Put(ctx, "a/b", "", nil); err == nil {
		t.Fatal("job id with a slash accepted")
	}
	if err := l.CheckpointIDs().EnsureAbove(ctx, "job-1", 10); err != nil {
		t.Fatal(err)
	}
	if id, err := l.CheckpointIDs().Next(ctx, "job-1"); err != nil || id != 11 {
		t.Fatalf("Next after EnsureAbove(10) = %d, %v", id, err)
	}

	// Removing a job removes its record, counter, checkpoints and blob.
	rec, _ := jobs.Get(ctx, "job-1")
	if err := jobs.Remove(ctx, "job-1"); err != nil {
		t.Fatal(err)
	}
	if r, err := jobs.Get(ctx, "job-1"); r != nil || err != nil {
		t.Fatalf("Get after Remove = %+v, %v", r, err)
	}
	if _, ok, _ := cps.Latest(ctx, "job-1"); ok {
		t.Fatal("checkpoints of a removed job remain")
	}
	if cur, _ := l.CheckpointIDs().Current(ctx, "job-1"); cur != 0 {
		t.Fatalf("counter of a removed job = %d", cur)
	}
	if _, err := os.Stat(filepath.Join(dir, "test-cluster", rec.Graph)); !os.IsNotExist(err) {
		t.Fatalf("graph blob of a removed job still there: %v", err)
	}
	if list, _ := jobs.List(ctx); len(list) != 2 {
		t.Fatalf("List after Remove = %+v", list)
	}
	storage.CloseBuckets()
}

func TestConcurrentNextNeverRepeats(t *testing.T) {
	ep := startEtcd(t)
	ctx := bg(t, 30*time.Second)
	s := open(t, testConfig(t, ep, t.TempDir()))
	l, err := s.Campaign(ctx, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				id, err := l.CheckpointIDs().Next(ctx, "job")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 40 || !seen[1] || !seen[40] {
		t.Fatalf("ids %v", seen)
	}
}

func TestConfigurationErrors(t *testing.T) {
	set := func(kv ...string) *config.Configuration {
		c := config.New()
		for i := 0; i < len(kv); i += 2 {
			if err := c.Set(kv[i], kv[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	if _, on, err := FromConfiguration(set()); on || err != nil {
		t.Fatalf("default: on=%v err=%v", on, err)
	}
	for _, tc := range []struct {
		c    *config.Configuration
		want string
	}{
		{set("high-availability.type", "etcd", "high-availability.storageDir", "/x"), "high-availability.etcd.endpoints is not set"},
		{set("high-availability.type", "etcd", "high-availability.etcd.endpoints", "a:1"), "high-availability.storageDir is not set"},
		{set("high-availability.type", "etcd", "high-availability.etcd.endpoints", "a:1", "high-availability.storageDir", "/x",
			"high-availability.etcd.lease-ttl", "1500 ms"), "high-availability.etcd.lease-ttl"},
		{set("high-availability.type", "etcd", "high-availability.etcd.endpoints", "a:1", "high-availability.storageDir", "/x",
			"high-availability.etcd.lease-ttl", "0"), "high-availability.etcd.lease-ttl"},
	} {
		_, _, err := FromConfiguration(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.c.Map(), err, tc.want)
		}
	}
	cfg, on, err := FromConfiguration(set("high-availability.type", "ETCD", "high-availability.etcd.endpoints", "a:1,b:2",
		"high-availability.cluster-id", "/prod/one/", "high-availability.storageDir", "s3://bucket/ha"))
	if err != nil || !on || cfg.ClusterID != "prod/one" || len(cfg.Endpoints) != 2 || cfg.LeaseTTL != 10*time.Second {
		t.Fatalf("FromConfiguration = %+v %v %v", cfg, on, err)
	}
	// An endpoint nobody answers on is an error, not a hang.
	bad := Config{Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", freePort(t))}, ClusterID: "c", StorageDir: t.TempDir(),
		LeaseTTL: time.Second, DialTimeout: time.Second}
	start := time.Now()
	if _, err := Open(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "high-availability.etcd.endpoints") {
		t.Fatalf("Open with a dead endpoint: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open with a dead endpoint took %v", d)
	}
}

// TestDebianEtcdProcess runs the election against etcd as a separate
// process (Debian's etcd-server; test.sh installs it).
func TestDebianEtcdProcess(t *testing.T) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_SYSTEMS") == "1" {
			t.Fatal("etcd not installed (Debian package etcd-server) and WEIR_REQUIRE_SYSTEMS=1")
		}
		t.Skip("etcd not installed (Debian package etcd-server)")
	}
	cp, pp := freePort(t), freePort(t)
	curl, purl := fmt.Sprintf("http://127.0.0.1:%d", cp), fmt.Sprintf("http://127.0.0.1:%d", pp)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--name", "n", "--data-dir", t.TempDir(),
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl, "--initial-cluster", "n="+purl)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cmd.Process.Kill(); <-exited }()

	ep := fmt.Sprintf("127.0.0.1:%d", cp)
	dir := t.TempDir()
	var a *Services
	for deadline := time.Now().Add(15 * time.Second); ; {
		cfg := testConfig(t, ep, dir)
		cfg.DialTimeout = time.Second
		if a, err = Open(ctx, cfg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd process not healthy: %v\n%s", err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer a.Close()
	b := open(t, testConfig(t, ep, dir))
	la, err := a.Campaign(ctx, "a:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := la.Jobs().Put(ctx, "job-a", "x", []byte("g")); err != nil {
		t.Fatal(err)
	}
	id1, err := la.CheckpointIDs().Next(ctx, "job-a")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan result, 1)
	campaign(ctx, b, 2, ch)
	noLeader(t, ch, 300*time.Millisecond)
	a.Close() // crash
	rb := waitLeader(t, ch, 3*ttl+2*time.Second)
	if rb.l.Term() <= la.Term() {
		t.Fatalf("term %d not above %d", rb.l.Term(), la.Term())
	}
	deposedWritesFail(t, stale(la, b), b)
	id2, err := rb.l.CheckpointIDs().Next(ctx, "job-a")
	if err != nil || id2 <= id1 {
		t.Fatalf("Next on the new leader = %d, %v; want > %d", id2, err, id1)
	}
	if list, err := rb.l.Jobs().List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("new leader's jobs = %+v, %v", list, err)
	}

	// etcd dies: the leader loses leadership once its lease can no
	// longer be renewed.
	cmd.Process.Kill()
	<-exited
	select {
	case <-rb.l.Done():
	case <-time.After(3*ttl + 3*time.Second):
		t.Fatal("leader kept leadership with etcd gone")
	}
	storage.CloseBuckets()
}
