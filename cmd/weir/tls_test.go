//go:build unix

package main

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/testcert"
)

// TestClusterTLSAcrossTaskManagers runs a cluster with TLS everywhere
// (security.ssl.* in a --config file for every process) and a job spread
// over its two TaskManagers, whose workers exchange records and control
// messages over TLS with the TaskManagers' certificate.
func TestClusterTLSAcrossTaskManagers(t *testing.T) {
	needGo(t)
	t.Parallel()
	cert, key := testcert.Write(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "weir.yaml")
	yaml := fmt.Sprintf("security.ssl.enabled: true\nsecurity.ssl.cert: %s\nsecurity.ssl.key: %s\nsecurity.ssl.ca: %s\nheartbeat.interval: 100ms\n", cert, key, cert)
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rpc, rest := startJobManager(t, nil, "--config", conf)
	if !strings.HasPrefix(rest, "https://") {
		t.Fatalf("the REST API is at %s, want https", rest)
	}
	for i := range 2 {
		startProc(t, fmt.Sprintf("taskmanager %d", i+1), nil, "taskmanager", "--config", conf, "--jobmanager", rpc, "--slots", "1")
	}
	client, err := cluster.NewRESTClient(strings.TrimPrefix(rest, "https://"), cluster.Security{TLS: cluster.TLSFiles{Enabled: true, CA: cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })

	wc := buildWordCount(t)
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(2000, 7)), 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "local")
	if out, err := exec.Command(wc, "-p", "2", "--input", input, "--output", local).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	stdout, stderr, code := weir(t, "run", "--config", conf, "--jobmanager", strings.TrimPrefix(rest, "https://"), "-p", "2", wc, "--input", input, "--output", out)
	if code != exitOK {
		t.Fatalf("weir run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d := diffLines(committedLines(t, out), committedLines(t, local)); d != "" {
		t.Errorf("the run across TaskManagers with TLS differs from the local run: %s", d)
	}
	d, err := client.Job(t.Context(), jobID(t, stdout))
	if err != nil || len(d.Workers) != 2 || d.State != cluster.JobFinished {
		t.Fatalf("job %+v, %v", d, err)
	}

	// A running job's workers answer a TLS handshake on their data
	// addresses, with the certificate the CA vouches for.
	stdout, stderr, code = weir(t, "run", "-d", "--config", conf, "--jobmanager", strings.TrimPrefix(rest, "https://"), "-p", "2", wc,
		"--mode", "streaming", "--input", input, "--output", filepath.Join(dir, "streaming"), "--rate", "50")
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	d = waitJob(t, client, id, 20*time.Second, "two workers with data addresses", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && len(d.Workers) == 2 && d.Workers[0].DataAddress != "" && d.Workers[1].DataAddress != ""
	})
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(cert)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA: %v", err)
	}
	for _, w := range d.Workers {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", w.DataAddress, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Errorf("worker %d at %s: no TLS handshake: %v", w.Index, w.DataAddress, err)
			continue
		}
		conn.Close()
	}
	weir(t, "cancel", "--config", conf, "--jobmanager", strings.TrimPrefix(rest, "https://"), id)
}

// TestClusterMutualTLS makes certificates with weir cluster certs, runs a
// cluster with mutual TLS (security.ssl.mutual) and a token, and jobs
// across its two TaskManagers: a client without a certificate is refused
// by the JobManager's RPC and REST and by the workers' data ports. Then it
// looks for the secrets (the cluster's token, the attempt's data token,
// the workers' tokens) in the processes' logs and command lines, the
// workers' files and the REST answers: there must be none.
func TestClusterMutualTLS(t *testing.T) {
	needGo(t)
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	certs := filepath.Join(dir, "tls")
	stdout, stderr, code := weir(t, "cluster", "certs", "--dir", certs, "--hosts", "127.0.0.1,localhost")
	if code != exitOK {
		t.Fatalf("weir cluster certs: exit %d\n%s", code, stderr)
	}
	for _, name := range []string{"ca-key.pem", "key.pem"} {
		if fi, err := os.Stat(filepath.Join(certs, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, fi.Mode().Perm())
		}
	}
	// The lines it prints are the configuration.
	var yaml strings.Builder
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "security.ssl.") {
			yaml.WriteString(line + "\n")
		}
	}
	if !strings.Contains(yaml.String(), "security.ssl.mutual: true") {
		t.Fatalf("weir cluster certs printed no mutual TLS configuration:\n%s", stdout)
	}
	yaml.WriteString("heartbeat.interval: 100ms\n")
	conf := filepath.Join(dir, "weir.yaml")
	if err := os.WriteFile(conf, []byte(yaml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, caFile := filepath.Join(certs, "cert.pem"), filepath.Join(certs, "key.pem"), filepath.Join(certs, "ca.pem")

	token := randomHex(t, "token-")
	env := []string{"WEIR_TOKEN=" + token}
	jm, rpc, rest := startJobManager(t, env, "--config", conf)
	restAddr := strings.TrimPrefix(rest, "https://")
	tms := make([]*proc, 2)
	for i := range tms {
		tms[i] = startProc(t, fmt.Sprintf("taskmanager %d", i+1), env, "taskmanager", "--config", conf, "--jobmanager", rpc, "--slots", "1",
			"-D", "process.working-dir="+filepath.Join(dir, "tm"+strconv.Itoa(i+1)))
	}
	sec := cluster.Security{Token: token, TLS: cluster.TLSFiles{Enabled: true, Mutual: true, Cert: certFile, Key: keyFile, CA: caFile}}
	client, err := cluster.NewRESTClient(restAddr, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	phase("cluster up")

	// A bounded job across both TaskManagers. weir run presents the
	// certificate; its token comes by -D, the way that used to put it on
	// the workers' command lines.
	wc := buildWordCount(t)
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(1000, 11)), 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "local")
	if out, err := exec.Command(wc, "-p", "2", "--input", input, "--output", local).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	phase("wordcount built, local run")
	out := filepath.Join(dir, "out")
	runOut, runErr, code := weir(t, "run", "--config", conf, "-D", "security.token="+token, "--jobmanager", restAddr, "-p", "2", wc, "--input", input, "--output", out)
	if code != exitOK {
		t.Fatalf("weir run: exit %d\nstdout:\n%s\nstderr:\n%s", code, runOut, runErr)
	}
	if d := diffLines(committedLines(t, out), committedLines(t, local)); d != "" {
		t.Errorf("the run with mutual TLS differs from the local run: %s", d)
	}
	if d, err := client.Job(t.Context(), jobID(t, runOut)); err != nil || len(d.Workers) != 2 || d.State != cluster.JobFinished {
		t.Fatalf("job %+v, %v", d, err)
	}

	phase("bounded job")
	// A streaming job, for the workers' data ports.
	stdout, stderr, code = weir(t, "run", "-d", "--config", conf, "-D", "security.token="+token, "--jobmanager", restAddr, "-p", "2", wc,
		"--mode", "streaming", "--input", input, "--output", filepath.Join(dir, "streaming"), "--rate", "50")
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	runOut += stdout
	runErr += stderr
	id := jobID(t, stdout)
	d := waitJob(t, client, id, 20*time.Second, "two workers with data addresses", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && len(d.Workers) == 2 && d.Workers[0].DataAddress != "" && d.Workers[1].DataAddress != ""
	})

	// Without a client certificate every server refuses the handshake;
	// with one it accepts it.
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(caFile); err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA: %v", err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]string{"the jobmanager's RPC": rpc, "the jobmanager's REST API": restAddr}
	for _, w := range d.Workers {
		servers[fmt.Sprintf("worker %d's data port", w.Index)] = w.DataAddress
	}
	for name, addr := range servers {
		if err := tlsVerdict(addr, &tls.Config{RootCAs: pool}); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s at %s accepted a client without a certificate (%v)", name, addr, err)
		}
		if err := tlsVerdict(addr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}); err != nil {
			t.Errorf("%s at %s refused a client with the certificate: %v", name, addr, err)
		}
	}
	anonymous, err := cluster.NewRESTClient(restAddr, cluster.Security{Token: token, TLS: cluster.TLSFiles{Enabled: true, CA: caFile}})
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	if _, err := anonymous.Overview(t.Context()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("GET /overview without a client certificate: err = %v, want a certificate error", err)
	}
	// A client configured for mutual TLS without its key fails before it
	// dials, naming the key.
	_, stderr, code = weir(t, "list", "-D", "security.ssl.enabled=true", "-D", "security.ssl.mutual=true", "-D", "security.ssl.cert="+certFile,
		"-D", "security.ssl.ca="+caFile, "--jobmanager", restAddr)
	if code == exitOK || !strings.Contains(stderr, "security.ssl.key is not set") {
		t.Errorf("weir list with mutual TLS but no key: exit %d, stderr %q; want an error naming security.ssl.key", code, stderr)
	}

	phase("refusals")
	// The secrets, and where they must not appear.
	secrets := map[string]string{"the cluster token": token}
	texts := map[string]string{}
	pids := workerPIDs(id, 1)
	if len(pids) != 2 {
		t.Fatalf("found %d worker processes of job %s, want 2", len(pids), id)
	}
	procs := map[string]int{"jobmanager": jm.cmd.Process.Pid}
	for _, p := range tms {
		procs[p.name] = p.cmd.Process.Pid
	}
	for i, pid := range pids {
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range strings.Split(string(environ), "\x00") {
			for _, name := range []string{"WEIR_DATA_TOKEN", "WEIR_WORKER_TOKEN"} {
				if v, ok := strings.CutPrefix(kv, name+"="); ok {
					secrets[fmt.Sprintf("%s of worker process %d", name, i)] = v
				}
			}
			if strings.HasPrefix(kv, "WEIR_TOKEN=") {
				t.Errorf("worker process %d has the cluster token in its environment", pid)
			}
		}
		procs[fmt.Sprintf("worker process %d", i)] = pid
	}
	if len(secrets) != 5 {
		t.Fatalf("found %d secrets, want the token and two per worker: %v", len(secrets), secrets)
	}
	for name, pid := range procs {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			t.Fatal(err)
		}
		texts["the command line of "+name] = string(cmdline)
	}
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
	defer httpc.CloseIdleConnections()
	for _, path := range []string{"/overview", "/taskmanagers", "/jobs", "/jobs/" + id, "/jobs/" + id + "/checkpoints", "/metrics", "/no-such-path"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, rest+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		texts["GET "+path] = string(body)
	}
	weir(t, "cancel", "--config", conf, "-D", "security.token="+token, "--jobmanager", restAddr, id)
	waitJob(t, client, id, 20*time.Second, "the cancelled job", func(d cluster.JobDetails) bool { return d.State == cluster.JobCanceled })
	texts["GET /jobs/"+id+" when cancelled"] = fmt.Sprintf("%+v", d)
	texts["the output of weir run"] = runOut + runErr
	texts["the jobmanager's log"] = jm.stdout.String() + jm.stderr.String()
	for _, p := range tms {
		texts[p.name+"'s log"] = p.stdout.String() + p.stderr.String()
	}
	for i := range tms {
		// The workers' logs, status and peers files (artifacts are the
		// job's executable).
		root := filepath.Join(dir, "tm"+strconv.Itoa(i+1))
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() && e.Name() == "artifacts" {
				return err
			}
			if e.Type().IsRegular() {
				data, err := os.ReadFile(path)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				texts[path] = string(data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	workerLogs := 0
	for where := range texts {
		if filepath.Base(where) == "worker.log" {
			workerLogs++
		}
	}
	if workerLogs < 4 {
		t.Errorf("found %d worker.log files under the TaskManagers' working directories, want 4 (two jobs, two workers each)", workerLogs)
	}
	phase("secrets gathered")
	for what, secret := range secrets {
		for where, text := range texts {
			if strings.Contains(text, secret) {
				t.Errorf("%s appears in %s", what, where)
			}
		}
	}
}

// tlsVerdict dials addr with TLS and returns the server's verdict on the
// client: nil when it accepted the handshake, else the error. With TLS 1.3
// the server checks the client's certificate after the client finished
// its side of the handshake, and its refusal arrives as an alert on the
// first read; a server that accepted waits for the client to speak.
// The client offers HTTP/2 by ALPN, which gRPC servers require.
func tlsVerdict(addr string, cfg *tls.Config) error {
	cfg.MinVersion = tls.VersionTLS12
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, err = conn.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return nil
	}
	if err == nil {
		return nil // the server spoke first
	}
	return err
}

func randomHex(t *testing.T, prefix string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}
