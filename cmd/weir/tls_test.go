//go:build unix

package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
