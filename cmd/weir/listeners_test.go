//go:build linux

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/cluster/rpcpb"
	"github.com/weirproject/weir/internal/testcert"
)

// listenerRow is a row of the table "Every listener and its guard" in
// docs/security.md.
type listenerRow struct {
	process, listener, protocol string
	tls                         bool
}

func (r listenerRow) String() string { return r.process + " " + r.listener }

// listenerTable reads the table "Every listener and its guard" of
// docs/security.md.
func listenerTable(t *testing.T) map[string]listenerRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Every listener and its guard\n")
	if !ok {
		t.Fatal(`docs/security.md has no section "Every listener and its guard"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var columns map[string]int
	rows := map[string]listenerRow{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case columns == nil:
			columns = map[string]int{}
			for i, c := range cells {
				columns[c] = i
			}
			for _, c := range []string{"process", "listener", "protocol", "TLS"} {
				if _, ok := columns[c]; !ok {
					t.Fatalf("docs/security.md: the listener table has no column %q: %q", c, line)
				}
			}
			continue
		case strings.HasPrefix(cells[0], "---"):
			continue
		case len(cells) != len(columns):
			t.Fatalf("docs/security.md: a row of the listener table has %d cells, want %d: %q", len(cells), len(columns), line)
		}
		r := listenerRow{process: cells[columns["process"]], listener: cells[columns["listener"]], protocol: cells[columns["protocol"]]}
		switch cells[columns["TLS"]] {
		case "yes":
			r.tls = true
		case "no":
		default:
			t.Fatalf("docs/security.md: the TLS column of %s says %q, want yes or no", r, cells[columns["TLS"]])
		}
		rows[r.String()] = r
	}
	if len(rows) == 0 {
		t.Fatal("docs/security.md: the listener table has no rows")
	}
	return rows
}

// listeningPorts returns the TCP ports on which process pid listens: the
// sockets among its file descriptors that its /proc/<pid>/net/tcp and
// tcp6 list in state LISTEN.
func listeningPorts(t *testing.T, pid int) []int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	sockets := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			sockets[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if os.IsNotExist(err) && table == "tcp6" {
			continue // no IPv6
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !sockets[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			if err != nil {
				t.Fatalf("/proc/%d/net/%s: %q: %v", pid, table, line, err)
			}
			ports = append(ports, int(port))
		}
	}
	return ports
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return atoi(t, p)
}

// dataHello is the handshake with which a worker dials another's data
// plane (internal/network's writeHello): "WEIR", version 1, the length of
// the rest, then the token and the dialer's address, each
// uvarint-length-prefixed.
func dataHello(token, addr string) []byte {
	payload := binary.AppendUvarint(nil, uint64(len(token)))
	payload = append(payload, token...)
	payload = binary.AppendUvarint(payload, uint64(len(addr)))
	payload = append(payload, addr...)
	b := binary.BigEndian.AppendUint32([]byte("WEIR\x01"), uint32(len(payload)))
	return append(b, payload...)
}

// dataReply sends a hello with a token that is not the attempt's over
// conn and returns the status byte of the data server's answer (0 ok, 1
// wrong token, ...).
func dataReply(conn net.Conn) (byte, error) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(dataHello("not-the-data-token", "127.0.0.1:1")); err != nil {
		return 0, err
	}
	var hdr [3]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return 0, err
	}
	return hdr[0], nil
}

// TestEveryListenerIsGuarded walks the table "Every listener and its
// guard" of docs/security.md. It runs a cluster with a token, mutual TLS
// and Prometheus endpoints and a job across its two TaskManagers, reads
// every TCP port its processes listen on from /proc, and wants each to be
// a listener of the table, and each row of the table to be found. Then
// every port refuses a client without the token, and every port the
// table says has TLS refuses a client without TLS and a client without a
// certificate.
func TestEveryListenerIsGuarded(t *testing.T) {
	needGo(t)
	t.Parallel()
	rows := listenerTable(t)
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	buildWeir(t)
	wc := buildWordCount(t)
	phase("weir and wordcount built")
	cert, key := testcert.Write(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "weir.yaml")
	yaml := fmt.Sprintf("security.ssl.enabled: true\nsecurity.ssl.mutual: true\nsecurity.ssl.cert: %s\nsecurity.ssl.key: %s\nsecurity.ssl.ca: %s\nheartbeat.interval: 100ms\n",
		cert, key, cert)
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	token := randomHex(t, "token-")
	env := []string{"WEIR_TOKEN=" + token}
	jmProm := freePort(t)
	jm, rpc, rest := startJobManager(t, env, "--config", conf, "-D", "metrics.reporter.prom.port="+jmProm)
	tmProm := []string{freePort(t), freePort(t)}
	tms := make([]*proc, 2)
	for i := range tms {
		tms[i] = startProc(t, fmt.Sprintf("taskmanager %d", i+1), env, "taskmanager", "--config", conf, "--jobmanager", rpc, "--slots", "1",
			"-D", "metrics.reporter.prom.port="+tmProm[i])
	}
	restAddr := strings.TrimPrefix(rest, "https://")
	client, err := cluster.NewRESTClient(restAddr, cluster.Security{Token: token, TLS: cluster.TLSFiles{Enabled: true, Mutual: true, Cert: cert, Key: key, CA: cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	phase("cluster up")

	// A streaming job across both TaskManagers, for the workers' control
	// endpoints and data planes.
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(2000, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := weir(t, "run", "-d", "--config", conf, "-D", "security.token="+token, "--jobmanager", restAddr, "-p", "2", wc,
		"--mode", "streaming", "--input", input, "--output", filepath.Join(dir, "out"), "--rate", "20")
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	d := waitJob(t, client, id, 20*time.Second, "two started workers with data addresses", func(d cluster.JobDetails) bool {
		if d.State != cluster.JobRunning || len(d.Workers) != 2 {
			return false
		}
		for _, w := range d.Workers {
			if w.DataAddress == "" || w.StartTime == 0 {
				return false
			}
		}
		return true
	})
	phase("job running")

	// Which listener each port is, as the processes report them.
	is := map[int]string{
		portOf(t, rpc):  "JobManager RPC",
		portOf(t, rest): "JobManager REST API and dashboard",
		atoi(t, jmProm): "JobManager Prometheus",
	}
	for _, p := range tmProm {
		is[atoi(t, p)] = "TaskManager Prometheus"
	}
	tmInfo, err := client.TaskManagers(t.Context())
	if err != nil || len(tmInfo) != 2 {
		t.Fatalf("TaskManagers = %+v, %v", tmInfo, err)
	}
	for _, tm := range tmInfo {
		is[portOf(t, tm.Address)] = "TaskManager RPC"
	}
	for _, w := range d.Workers {
		is[portOf(t, w.DataAddress)] = "worker data plane"
	}
	pids := workerPIDs(id, d.Attempt)
	if len(pids) != 2 {
		t.Fatalf("found %d worker processes of job %s attempt %d, want 2", len(pids), id, d.Attempt)
	}
	for _, pid := range pids {
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		var statusFile string
		for _, kv := range strings.Split(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, "WEIR_TM_GATEWAY="); ok {
				is[portOf(t, v)] = "TaskManager worker gateway"
			}
			if v, ok := strings.CutPrefix(kv, "WEIR_WORKER_STATUS="); ok {
				statusFile = v
			}
		}
		// The status that told the JobManager the worker started names
		// its control endpoint.
		data, err := os.ReadFile(statusFile)
		var st cluster.WorkerStatus
		if err != nil || json.Unmarshal(data, &st) != nil || st.Control == "" {
			t.Fatalf("worker %d: status file %s: %v, %s; want its control endpoint", pid, statusFile, err, data)
		}
		is[portOf(t, st.Control)] = "worker control endpoint"
	}

	// Every port of every process is a listener of the table, of that
	// process; every row is found.
	processes := []struct {
		process string
		pid     int
	}{{"JobManager", jm.cmd.Process.Pid}, {"TaskManager", tms[0].cmd.Process.Pid}, {"TaskManager", tms[1].cmd.Process.Pid}}
	for _, pid := range pids {
		processes = append(processes, struct {
			process string
			pid     int
		}{"worker", pid})
	}
	found := map[string][]int{}
	for _, p := range processes {
		for _, port := range listeningPorts(t, p.pid) {
			name, ok := is[port]
			switch {
			case !ok:
				t.Errorf("a %s (pid %d) listens on port %d, which is none of the listeners of docs/security.md's table \"Every listener and its guard\"",
					p.process, p.pid, port)
				continue
			case rows[name] == (listenerRow{}):
				t.Errorf("a %s (pid %d) listens on port %d for its %s, which docs/security.md's table \"Every listener and its guard\" lacks",
					p.process, p.pid, port, name)
				continue
			case rows[name].process != p.process:
				t.Errorf("a %s (pid %d) listens on port %d, the %s's", p.process, p.pid, port, name)
				continue
			}
			found[name] = append(found[name], port)
		}
	}
	for name := range rows {
		if len(found[name]) == 0 {
			t.Errorf("docs/security.md lists the %s, but no process of the cluster listens for it", name)
		}
	}

	phase("listeners found")

	// The probes: a request, an RPC or a handshake without the token.
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(cert)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA: %v", err)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	member := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	httpProbes := map[string]struct{ method, path, body string }{
		"JobManager REST API and dashboard": {"GET", "/overview", ""},
		"JobManager Prometheus":             {"GET", "/metrics", ""},
		"TaskManager Prometheus":            {"GET", "/metrics", ""},
		"TaskManager worker gateway":        {"POST", "/v1/checkpoints/confirm", fmt.Sprintf(`{"jobId":%q,"attempt":%d,"checkpointId":1}`, id, d.Attempt)},
		"worker control endpoint":           {"GET", "/profile/heap", ""},
	}
	rpcProbes := map[string]func(context.Context, *grpc.ClientConn) error{
		"JobManager RPC": func(ctx context.Context, c *grpc.ClientConn) error {
			_, err := rpcpb.NewJobManagerClient(c).RegisterTaskManager(ctx, &rpcpb.RegisterTaskManagerRequest{})
			return err
		},
		"TaskManager RPC": func(ctx context.Context, c *grpc.ClientConn) error {
			_, err := rpcpb.NewTaskManagerClient(c).Heartbeat(ctx, &rpcpb.HeartbeatRequest{})
			return err
		},
	}
	httpStatus := func(probe struct{ method, path, body string }, addr string, cfg *tls.Config) (int, error) {
		scheme, transport := "http", &http.Transport{}
		if cfg != nil {
			scheme, transport.TLSClientConfig = "https", cfg
		}
		defer transport.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, probe.method, scheme+"://"+addr+probe.path, strings.NewReader(probe.body))
		if err != nil {
			return 0, err
		}
		resp, err := (&http.Client{Transport: transport}).Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	rpcCode := func(probe func(context.Context, *grpc.ClientConn) error, addr string, creds credentials.TransportCredentials) codes.Code {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		return status.Code(probe(ctx, conn))
	}
	for name, ports := range found {
		row := rows[name]
		for _, port := range ports {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			if row.tls {
				// TLS 1.3 sends the refusal of a client without a
				// certificate after the handshake (tlsVerdict).
				if err := tlsVerdict(addr, &tls.Config{RootCAs: pool}); err == nil || !strings.Contains(err.Error(), "certificate") {
					t.Errorf("the %s at %s accepted a TLS client without a certificate (%v)", name, addr, err)
				}
			}
			var cfg *tls.Config
			if row.tls {
				cfg = member.Clone()
			}
			switch row.protocol {
			case "HTTP":
				probe, ok := httpProbes[name]
				if !ok {
					t.Errorf("no HTTP probe for the %s: add one to TestEveryListenerIsGuarded", name)
					continue
				}
				if row.tls {
					// Go's TLS server answers plain HTTP with 400.
					if code, err := httpStatus(probe, addr, nil); err == nil && code != http.StatusBadRequest {
						t.Errorf("the %s at %s answered %s %s in plain HTTP with %d, want 400 (an HTTP request to an HTTPS server)",
							name, addr, probe.method, probe.path, code)
					}
				}
				if code, err := httpStatus(probe, addr, cfg); code != http.StatusUnauthorized {
					t.Errorf("the %s at %s answered %s %s without the token with %d (%v), want 401", name, addr, probe.method, probe.path, code, err)
				}
			case "gRPC":
				probe, ok := rpcProbes[name]
				if !ok {
					t.Errorf("no RPC probe for the %s: add one to TestEveryListenerIsGuarded", name)
					continue
				}
				if row.tls {
					if c := rpcCode(probe, addr, insecure.NewCredentials()); c != codes.Unavailable {
						t.Errorf("the %s at %s answered an RPC without TLS with %v, want Unavailable", name, addr, c)
					}
				}
				creds := insecure.NewCredentials()
				if row.tls {
					creds = credentials.NewTLS(cfg)
				}
				if c := rpcCode(probe, addr, creds); c != codes.Unauthenticated {
					t.Errorf("the %s at %s answered an RPC without the token with %v, want Unauthenticated", name, addr, c)
				}
			case "weir data":
				if row.tls {
					conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					if st, err := dataReply(conn); err == nil && st <= 1 {
						t.Errorf("the %s at %s answered a handshake without TLS with status %d, want no answer", name, addr, st)
					}
				}
				var conn net.Conn
				if row.tls {
					conn, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
				} else {
					conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
				}
				if err != nil {
					t.Errorf("the %s at %s: %v", name, addr, err)
					continue
				}
				if st, err := dataReply(conn); err != nil || st != 1 {
					t.Errorf("the %s at %s answered a handshake with another token with status %d (%v), want 1 (wrong token)", name, addr, st, err)
				}
			default:
				t.Errorf("docs/security.md: the %s speaks %q, which TestEveryListenerIsGuarded cannot probe", name, row.protocol)
			}
		}
	}
	phase("listeners probed")
	if t.Failed() {
		t.Logf("the listeners: %v", found)
	}
}
