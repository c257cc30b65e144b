//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// The cluster tests run the weir binary as real JobManager and TaskManager
// processes on 127.0.0.1.

// weirBinary is built at most once per test run, by the first test that
// needs it; TestMain removes it.
var weirBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if weirBinary.dir != "" {
		os.RemoveAll(weirBinary.dir)
	}
	os.Exit(code)
}

func buildWeir(t *testing.T) string {
	t.Helper()
	needGo(t)
	weirBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "weir-cluster-test-")
		if err != nil {
			weirBinary.err = err
			return
		}
		weirBinary.dir, weirBinary.path = dir, filepath.Join(dir, "weir")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", weirBinary.path, ".").CombinedOutput(); err != nil {
			weirBinary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if weirBinary.err != nil {
		t.Fatal(weirBinary.err)
	}
	return weirBinary.path
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type proc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
	err            error // after done
}

// startProc starts weir with args and the environment env (WEIR_TOKEN is
// never inherited from the test's environment). The process is killed, if
// still running, when the test ends.
func startProc(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(buildWeir(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "WEIR_TOKEN=") {
			p.cmd.Env = append(p.cmd.Env, e)
		}
	}
	// The process's temporary directories (a TaskManager's working
	// directory with the uploaded programs, a JobManager's) go under one
	// of the test's own: a process killed with SIGKILL cannot remove
	// them, and hundreds of them filled the disk.
	tmp, err := os.MkdirTemp("", "weir-test-"+strings.ReplaceAll(name, " ", "-")+"-")
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Env = append(p.cmd.Env, "TMPDIR="+tmp)
	p.cmd.Env = append(p.cmd.Env, env...)
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		// Best effort: a worker of a killed TaskManager may still be
		// exiting.
		os.RemoveAll(tmp)
		if t.Failed() {
			t.Logf("%s stderr:\n%s", p.name, p.stderr.String())
		}
	})
	return p
}

// waitStderr reports whether the process writes want to stderr within d.
func (p *proc) waitStderr(want string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !strings.Contains(p.stderr.String(), want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// waitExit waits up to d for the process to exit and returns its status.
func (p *proc) waitExit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s still running after %v; stderr:\n%s", p.name, d, p.stderr.String())
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return -1
}

var jmAddrs = regexp.MustCompile(`jobmanager rpc=(\S+) rest=(\S+)`)

// startJobManager starts a JobManager on free ports and returns it with
// its RPC address and REST URL.
func startJobManager(t *testing.T, env []string, args ...string) (p *proc, rpc, rest string) {
	t.Helper()
	p = startProc(t, "jobmanager", env, append([]string{"jobmanager", "--rpc-port", "0", "--rest-port", "0"}, args...)...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := jmAddrs.FindStringSubmatch(p.stdout.String()); m != nil {
			return p, m[1], m[2]
		}
		select {
		case <-p.done:
			t.Fatalf("jobmanager exited: %v\n%s", p.err, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobmanager printed no addresses within 10s; stderr:\n%s", p.stderr.String())
		}
	}
}

// waitOverview polls GET /overview until want holds or d passes, and
// returns how long it took.
func waitOverview(t *testing.T, client *cluster.RESTClient, d time.Duration, what string, want func(cluster.Overview) bool) time.Duration {
	t.Helper()
	start := time.Now()
	var last cluster.Overview
	var lastErr error
	for time.Since(start) < d {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		last, lastErr = client.Overview(ctx)
		cancel()
		if lastErr == nil && want(last) {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s within %v; last overview %+v, error %v", what, d, last, lastErr)
	return 0
}

// deadAddress returns a loopback address where nothing listens.
func deadAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestClusterProcesses(t *testing.T) {
	t.Parallel()
	const token = "test-token-0123456789"
	env := []string{"WEIR_TOKEN=" + token}
	const heartbeatTimeout = time.Second
	jm, rpc, rest := startJobManager(t, env, "-D", "heartbeat.interval=100ms", "-D", "heartbeat.timeout=1s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	tm1 := startProc(t, "taskmanager 1", env, "taskmanager", "--jobmanager", rpc, "--slots", "3")
	startProc(t, "taskmanager 2", env, "taskmanager", "--jobmanager", rpc, "--slots", "3")
	// Meanwhile, TaskManagers that must fail: one with a JobManager address
	// where nothing listens, one with the wrong token.
	dead := hangUpAddress(t)
	lost := startProc(t, "taskmanager without jobmanager", env,
		"taskmanager", "--jobmanager", dead, "-D", "taskmanager.registration.timeout=1s")
	wrongToken := startProc(t, "taskmanager with wrong token", []string{"WEIR_TOKEN=wrong-token-0123456789"},
		"taskmanager", "--jobmanager", rpc)

	waitOverview(t, client, 10*time.Second, "2 taskmanagers with 6 slots", func(o cluster.Overview) bool {
		return o.TaskManagers == 2 && o.SlotsTotal == 6 && o.SlotsAvailable == 6
	})

	if code := lost.waitExit(t, 10*time.Second); code == 0 || !strings.Contains(lost.stderr.String(),
		"cannot register with the jobmanager at "+dead+" within 1s") {
		t.Errorf("taskmanager without jobmanager: exit %d, stderr:\n%s", code, lost.stderr.String())
	}
	if code := wrongToken.waitExit(t, 10*time.Second); code == 0 || !strings.Contains(wrongToken.stderr.String(), "Unauthenticated") {
		t.Errorf("taskmanager with wrong token: exit %d, stderr:\n%s", code, wrongToken.stderr.String())
	}

	// The JobManager kept running through the refusals, and refuses a REST
	// client with the wrong token too.
	_, stderr, code := weir(t, "list", "--jobmanager", rest, "--token", "wrong")
	if code != exitError || !strings.Contains(stderr, "401") {
		t.Errorf("weir list with a wrong token: exit %d, stderr %q", code, stderr)
	}
	stdout, stderr, code := weir(t, "list", "--jobmanager", rest, "--token", token)
	if code != exitOK || strings.TrimSpace(stdout) != "No running jobs." {
		t.Errorf("weir list: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// A TaskManager that dies without a word is removed with its slots
	// within the heartbeat timeout (plus an interval and some slack for
	// a loaded machine).
	if err := tm1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	took := waitOverview(t, client, 5*heartbeatTimeout, "drop to 1 taskmanager with 3 slots", func(o cluster.Overview) bool {
		return o.TaskManagers == 1 && o.SlotsTotal == 3
	})
	if took > heartbeatTimeout+2*time.Second {
		t.Errorf("the killed taskmanager was removed after %v; heartbeat.timeout is %v", took, heartbeatTimeout)
	}
	// The overview may show the removal a moment before the log line is
	// written, so the log gets a short grace period of its own.
	if !jm.waitStderr("taskmanager lost", 3*time.Second) {
		t.Errorf("the jobmanager did not log the lost taskmanager:\n%s", jm.stderr.String())
	}
	select {
	case <-jm.done:
		t.Fatalf("jobmanager exited: %v", jm.err)
	default:
	}

	// SIGTERM stops the JobManager cleanly.
	jm.cmd.Process.Signal(syscall.SIGTERM)
	if code := jm.waitExit(t, 10*time.Second); code != 0 {
		t.Errorf("jobmanager exited with %d after SIGTERM", code)
	}
}

func TestClusterJobManagerRefusesOpenBindWithoutToken(t *testing.T) {
	t.Parallel()
	p := startProc(t, "jobmanager on 0.0.0.0", nil, "jobmanager", "--bind", "0.0.0.0", "--rpc-port", "0", "--rest-port", "0")
	if code := p.waitExit(t, 10*time.Second); code != exitError {
		t.Errorf("exit status %d, want %d", code, exitError)
	}
	if stderr := p.stderr.String(); !strings.Contains(stderr, "refusing to listen on 0.0.0.0") || !strings.Contains(stderr, "security.token") {
		t.Errorf("stderr does not explain the refusal:\n%s", stderr)
	}
}

// TestClusterCommandsRefuseWeakTokens: the servers refuse a token that is
// short or white space, whichever flag or option set it, and say why.
func TestClusterCommandsRefuseWeakTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobmanager", "--rpc-port", "0", "--rest-port", "0", "--token", "s3cret"}, "security.token: 6 characters; a token needs at least 16 non-space characters"},
		{[]string{"jobmanager", "--rpc-port", "0", "--rest-port", "0", "--token", "    "}, "security.token: 4 characters, all white space"},
		{[]string{"taskmanager", "--jobmanager", "127.0.0.1:1", "--rpc-port", "0", "-D", "security.token=0123456789"}, "security.token: 10 characters"},
	} {
		_, stderr, code := weir(t, tc.args...)
		if code != exitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("weir %q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitError, tc.want)
		}
	}
}

func TestClusterStartStop(t *testing.T) {
	t.Parallel()
	exe := buildWeir(t)
	dir := t.TempDir()
	var restPort string
	var defines []string
	t.Cleanup(func() {
		// Whatever happened, leave no process behind.
		cluster.StopStandalone(dir, time.Second)
	})
	run := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, args...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	// Stale pid files of a cluster that is gone (killed, or the machine
	// rebooted) do not stop a start, which replaces them; a stale link is
	// removed, not followed.
	if err := os.WriteFile(filepath.Join(dir, "jobmanager.pid"), []byte("2147483646\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "taskmanager-1.pid")); err != nil {
		t.Fatal(err)
	}
	var out string
	var code int
	// The ports are free when chosen but may be taken before the cluster
	// binds them (by a parallel test); then choose again.
	for range 3 {
		var rpcPort string
		rpcPort, restPort = freePort(t), freePort(t)
		defines = []string{
			"-D", "jobmanager.rpc.port=" + rpcPort, "-D", "rest.port=" + restPort,
			"-D", "heartbeat.interval=100ms", "-D", "heartbeat.timeout=1s",
		}
		out, code = run(append([]string{"cluster", "start", "--dir", dir, "--taskmanagers", "2", "--slots", "2", "--wait", "20s"}, defines...)...)
		if !strings.Contains(out, "address already in use") {
			break
		}
	}
	if code != 0 {
		t.Fatalf("weir cluster start: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
		t.Errorf("the file a stale pid link pointed to: %q, %v; want it untouched", b, err)
	}
	var pids []int
	for _, name := range []string{"jobmanager", "taskmanager-1", "taskmanager-2"} {
		if fi, err := os.Lstat(filepath.Join(dir, name+".pid")); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s.pid: %v, %v; want a regular file", name, fi, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	client, err := cluster.NewRESTClient("127.0.0.1:"+restPort, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 5*time.Second, "2 taskmanagers with 4 slots", func(o cluster.Overview) bool {
		return o.TaskManagers == 2 && o.SlotsTotal == 4
	})

	// A second start from the same directory refuses while the first runs.
	if out, code := run(append([]string{"cluster", "start", "--dir", dir}, defines...)...); code == 0 || !strings.Contains(out, "still running") {
		t.Errorf("second weir cluster start: exit %d\n%s", code, out)
	}

	out, code = run("cluster", "stop", "--dir", dir, "--grace", "5s")
	if code != 0 {
		t.Fatalf("weir cluster stop: exit %d\n%s", code, out)
	}
	for _, name := range []string{"jobmanager", "taskmanager-1", "taskmanager-2"} {
		if !strings.Contains(out, "Stopped "+name) {
			t.Errorf("weir cluster stop did not report stopping %s:\n%s", name, out)
		}
		if _, err := os.Stat(filepath.Join(dir, name+".pid")); !os.IsNotExist(err) {
			t.Errorf("%s.pid still exists after stop (%v)", name, err)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil && !isZombie(pid) {
			t.Errorf("process %d still runs after weir cluster stop", pid)
		}
	}
	if out, _ := run("cluster", "stop", "--dir", dir); !strings.Contains(out, "No cluster processes running") {
		t.Errorf("second weir cluster stop:\n%s", out)
	}
}

// hangUpAddress returns a loopback address that accepts connections and
// closes them at once, so that no JobManager answers there. Unlike a
// closed port, it cannot be taken by a JobManager of a parallel test.
func hangUpAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func freePort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(deadAddress(t))
	return port
}

// isZombie reports whether pid has exited but not been reaped, which
// happens to orphans where no init process reaps them.
func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// TestClusterStartRefusesUnsafeDir: weir cluster start refuses a
// directory that others can write, before it starts anything, and says
// which directory, its mode and what to do.
func TestClusterStartRefusesUnsafeDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := weir(t, "cluster", "start", "--dir", dir, "--wait", "1s")
	if code != exitError || !strings.Contains(stderr, dir+" is writable by group or others (mode 0777)") || !strings.Contains(stderr, "chmod go-w") {
		t.Errorf("weir cluster start --dir %s: exit %d, stderr %q", dir, code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("weir cluster start wrote into the refused directory: %v", entries)
	}
}

// TestClusterDefaultDir: start and stop default to the same directory
// under XDG_RUNTIME_DIR, not to a name in the shared temporary directory.
func TestClusterDefaultDir(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	want := filepath.Join(run, "weir", "cluster")
	stdout, stderr, code := weir(t, "cluster", "stop")
	if code != exitOK || !strings.Contains(stdout, "No cluster processes running from "+want) {
		t.Errorf("weir cluster stop: exit %d, stdout %q, stderr %q; want %s as its directory", code, stdout, stderr, want)
	}
	for _, c := range []string{"start", "stop"} {
		stdout, _, _ := weir(t, "cluster", c, "--help")
		if !strings.Contains(stdout, want) {
			t.Errorf("weir cluster %s --help does not show the default --dir %s:\n%s", c, want, stdout)
		}
	}
}
