package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type runner struct {
	root, tmp, logs string
	session         string // RUNDOCS_SESSION of every process a block starts
	self            string // this executable, for "rundocs wait" inside blocks
	timeout         time.Duration
	clusterDir      string
	verbose         bool
}

func newRunner(root, tmp string, timeout time.Duration) (*runner, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if tmp == "" {
		if tmp, err = os.MkdirTemp("", "rundocs-"); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	r := &runner{root: root, tmp: tmp, logs: filepath.Join(tmp, ".rundocs"), session: hex.EncodeToString(id), self: self, timeout: timeout}
	if err := os.MkdirAll(r.logs, 0o700); err != nil {
		return nil, err
	}
	if run := os.Getenv("XDG_RUNTIME_DIR"); run != "" {
		r.clusterDir = filepath.Join(run, "weir", "cluster")
	}
	return r, nil
}

// runAll runs the blocks in order and stops at the first that fails.
func (r *runner) runAll(ctx context.Context, blocks []*block, only string) int {
	// The docs' commands use weir's default ports; a cluster someone else
	// runs on them would answer in the docs' place.
	for _, addr := range []string{"127.0.0.1:8081", "127.0.0.1:6123"} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			fmt.Fprintf(os.Stderr, "rundocs: something already listens on %s (another weir cluster?); the docs' commands use that default port, stop it first\n", addr)
			return 1
		}
	}
	start := time.Now()
	ran := 0
	skipped := map[string]int{}
	for _, b := range blocks {
		if only != "" && only != b.File && only != fmt.Sprintf("%s:%d", b.File, b.Line) {
			continue
		}
		if b.Skip != "" {
			cat, _, _ := strings.Cut(b.Skip, ":")
			skipped[cat]++
			fmt.Printf("skip %s:%d (%s)\n", b.File, b.Line, b.Skip)
			continue
		}
		t0 := time.Now()
		out, err := r.run(ctx, b)
		ran++
		if err != nil {
			fmt.Printf("FAIL %s:%d after %s: %v\n", b.File, b.Line, time.Since(t0).Round(100*time.Millisecond), err)
			fmt.Printf("--- script\n%s--- output (last 80 lines)\n%s\n---\n", r.script(b), tail(out, 80))
			fmt.Println(summary(ran, skipped, time.Since(start)))
			return 1
		}
		fmt.Printf("ok   %s:%d (%s)\n", b.File, b.Line, time.Since(t0).Round(100*time.Millisecond))
		if r.verbose {
			fmt.Printf("--- script\n%s--- output (last 80 lines)\n%s\n---\n", r.script(b), tail(out, 80))
		}
		if ctx.Err() != nil {
			return 1
		}
	}
	fmt.Println(summary(ran, skipped, time.Since(start)))
	return 0
}

// script is the bash program a block runs as: its commands, with the
// placeholders a reader fills in filled in, /tmp/ moved to the runner's
// directory, the background and wait markers applied.
func (r *runner) script(b *block) string {
	var s strings.Builder
	s.WriteString("set -eo pipefail\n")
	for _, c := range b.Before {
		s.WriteString(r.subst(b, c) + "\n")
	}
	cmds := b.commands()
	for i, c := range cmds {
		n := i + 1
		text := strings.Join(c.Lines, "\n")
		left := false
		for _, o := range b.Omit {
			if strings.Contains(text, o.Substring) {
				left = true
			}
		}
		if left {
			continue
		}
		lines := append([]string(nil), c.Lines...)
		if b.Background[n] {
			last := lines[len(lines)-1]
			code := strings.TrimRight(stripComment(last), " \t")
			if !strings.HasSuffix(code, "&") {
				lines[len(lines)-1] = code + " &" + last[len(code):]
			}
		}
		s.WriteString(r.subst(b, strings.Join(lines, "\n")) + "\n")
		for _, w := range b.Waits {
			if w.After == n {
				fmt.Fprintf(&s, "%q wait %q %q\n", r.self, w.Target, w.Text)
			}
		}
	}
	for _, c := range b.After {
		s.WriteString(r.subst(b, c) + "\n")
	}
	return s.String()
}

func (r *runner) subst(b *block, text string) string {
	for _, k := range b.WithOrder {
		text = strings.ReplaceAll(text, k, b.With[k])
	}
	return strings.ReplaceAll(text, "/tmp/", r.tmp+"/")
}

func (r *runner) env() []string {
	return append(os.Environ(), "RUNDOCS_SESSION="+r.session, "TMPDIR="+r.tmp)
}

// run runs one block and checks it: exit status 0, every expected text
// in its output, no absent one. Whatever it left running is stopped
// before run returns.
func (r *runner) run(ctx context.Context, b *block) (string, error) {
	for _, n := range append(sortedKeys(b.Background), waitAfters(b)...) {
		if n > len(b.commands()) {
			return "", fmt.Errorf("a marker names command %d; the block has %d", n, len(b.commands()))
		}
	}
	logPath := filepath.Join(r.logs, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(b.File, "/", "_"), b.Line))
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	read := func() string {
		data, _ := os.ReadFile(logPath)
		return string(data)
	}
	defer r.stopLeftovers(logf)

	timeout := r.timeout
	if b.Timeout > 0 {
		timeout = b.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if b.Cluster {
		args := append([]string{"cluster", "start"}, b.ClusterArgs...)
		fmt.Fprintf(logf, "$ weir %s\n", strings.Join(args, " "))
		if err := r.command(ctx, logf, "weir", args...).Run(); err != nil {
			return read(), fmt.Errorf("weir cluster start (the block needs a cluster): %v", err)
		}
		// From here on, only the block's own output is checked.
		logf.Truncate(0)
		logf.Seek(0, io.SeekStart)
	}
	cmd := r.command(ctx, logf, "bash", "-c", r.script(b))
	err = cmd.Run()
	// The block's background jobs share its process group.
	killGroup(cmd)
	out := read()
	if ctx.Err() == context.DeadlineExceeded {
		return out, fmt.Errorf("did not finish within %s", timeout)
	}
	if err != nil {
		return out, fmt.Errorf("exit status: %v", err)
	}
	for _, e := range b.Expect {
		if !strings.Contains(out, e) {
			return out, fmt.Errorf("the output does not contain %q, as the text says it does", e)
		}
	}
	for _, a := range b.Absent {
		if strings.Contains(out, a) {
			return out, fmt.Errorf("the output contains %q", a)
		}
	}
	return out, nil
}

// command runs name in the root, in a process group of its own (so that
// the block and its background jobs can be stopped together), with its
// output in the block's log file (a file, not a pipe: a background job
// that keeps the output open must not keep Wait waiting).
func (r *runner) command(ctx context.Context, out *os.File, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.root
	cmd.Env = r.env()
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// killGroup stops what is left of a finished command's process group:
// SIGTERM, and SIGKILL after 5 s.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	pg := -cmd.Process.Pid
	if syscall.Kill(pg, syscall.SIGTERM) != nil {
		return // the group is gone
	}
	for i := 0; i < 50; i++ {
		if syscall.Kill(pg, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	syscall.Kill(pg, syscall.SIGKILL)
}

// stopLeftovers stops a cluster the block started and did not stop, and
// then every process that still carries the session (a daemon that left
// the block's process group).
func (r *runner) stopLeftovers(log io.Writer) {
	if r.clusterDir != "" {
		if pids, _ := filepath.Glob(filepath.Join(r.clusterDir, "*.pid")); len(pids) > 0 {
			cmd := exec.Command("weir", "cluster", "stop", "--dir", r.clusterDir)
			cmd.Env = r.env()
			cmd.Stdout, cmd.Stderr = log, log
			cmd.Run()
		}
	}
	sweep(r.session, log)
}

func (r *runner) cleanup() {
	r.stopLeftovers(io.Discard)
}

// sweep stops every process whose environment holds the session: SIGTERM,
// then SIGKILL for those left after 5 s.
func sweep(session string, log io.Writer) {
	find := func() []int {
		var pids []int
		dirs, _ := os.ReadDir("/proc")
		needle := []byte("RUNDOCS_SESSION=" + session + "\x00")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
			if err == nil && bytes.Contains(env, needle) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	pids := find()
	if len(pids) == 0 {
		return
	}
	fmt.Fprintf(log, "rundocs: stopping %d processes left running: %v\n", len(pids), pids)
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGTERM)
	}
	for i := 0; i < 50 && len(find()) > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range find() {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// waitMain is "rundocs wait ADDR [TEXT]", which the wait marker puts
// into a block: until ADDR (host:port) accepts a connection, or the URL
// answers 2xx with TEXT in its body.
func waitMain(args []string) int {
	fs := flag.NewFlagSet("wait", flag.ExitOnError)
	timeout := fs.Duration("timeout", 90*time.Second, "how long to wait")
	fs.Parse(args)
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(os.Stderr, "usage: rundocs wait [-timeout D] host:port|URL [TEXT]")
		return 2
	}
	target, text := fs.Arg(0), fs.Arg(1)
	deadline := time.Now().Add(*timeout)
	var last error
	client := &http.Client{Timeout: 5 * time.Second}
	for time.Now().Before(deadline) {
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			last = probeURL(client, target, text)
		} else {
			var c net.Conn
			if c, last = net.DialTimeout("tcp", target, time.Second); last == nil {
				c.Close()
			}
		}
		if last == nil {
			return 0
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "rundocs wait: %s not ready within %s: %v\n", target, *timeout, last)
	return 1
}

func probeURL(client *http.Client, url, text string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %s", resp.Status)
	}
	if text != "" && !strings.Contains(string(body), text) {
		return errors.New("the answer does not contain " + strconv.Quote(text) + " yet")
	}
	return nil
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

func waitAfters(b *block) []int {
	var out []int
	for _, w := range b.Waits {
		out = append(out, w.After)
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
