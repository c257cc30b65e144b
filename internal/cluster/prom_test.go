package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scrape GETs url with client, the bearer token when token is set and the
// Host header when host is, and returns the status code and body; code 0
// means the request failed, and body is then the error.
func scrape(t *testing.T, client *http.Client, url, token, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestPrometheusEndpointsNeedTheToken: with security.token set, the
// Prometheus endpoints (metrics.reporter.prom.port) of the JobManager and
// of a TaskManager refuse a scrape without the token, or with another,
// as the REST API does, and answer one with it; a request under a host
// name that is not the server's gets 421, as from the REST API.
func TestPrometheusEndpointsNeedTheToken(t *testing.T) {
	const token = "prom-s3cret-0123456789"
	jm := startJM(t, func(o *JobManagerOptions) {
		o.Security.Token = token
		o.PrometheusPort = "0"
	})
	tm, _ := runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) {
		o.Security.Token = token
		o.PrometheusPort = "0"
	})
	waitTotals(t, jm, [3]int{1, 2, 2})
	client := &http.Client{}
	defer client.CloseIdleConnections()
	for _, ep := range []struct{ who, url, metric string }{
		{"jobmanager", jm.PrometheusURL(), "weir_jobmanager_numRegisteredTaskManagers 1"},
		{"taskmanager", tm.PrometheusURL(), "weir_taskmanager_Status_TaskSlots"},
	} {
		if !strings.HasPrefix(ep.url, "http://127.0.0.1:") {
			t.Fatalf("%s: Prometheus URL %q", ep.who, ep.url)
		}
		for _, wrong := range []string{"", "wrong"} {
			code, body := scrape(t, client, ep.url, wrong, "")
			if code != http.StatusUnauthorized || strings.Contains(body, "weir_") {
				t.Errorf("%s: scrape with token %q: %d %.200s; want 401 without metrics", ep.who, wrong, code, body)
			}
		}
		if code, body := scrape(t, client, ep.url, token, ""); code != http.StatusOK || !strings.Contains(body, ep.metric) {
			t.Errorf("%s: scrape with the token: %d, want 200 with %s:\n%.500s", ep.who, code, ep.metric, body)
		}
		if code, body := scrape(t, client, ep.url, token, "rebound.example:9249"); code != http.StatusMisdirectedRequest {
			t.Errorf("%s: scrape under another host name: %d %.200s, want 421", ep.who, code, body)
		}
	}
}

// TestPrometheusEndpointsServeTLS: with security.ssl.enabled the
// Prometheus endpoints serve TLS only, with the RPC servers' certificate;
// with security.ssl.mutual they also want a client certificate signed by
// the CA. The token is still wanted inside TLS.
func TestPrometheusEndpointsServeTLS(t *testing.T) {
	cert, key := writeSelfSigned(t)
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	const token = "tls-token-0123456789"
	for _, mutual := range []bool{false, true} {
		sec := Security{Token: token, TLS: TLSFiles{Enabled: true, Mutual: mutual, Cert: cert, Key: key, CA: cert}}
		jm := startJM(t, func(o *JobManagerOptions) {
			o.Security = sec
			o.PrometheusPort = "0"
		})
		tm, _ := runTM(t, jm.RPCAddr(), 1, func(o *TaskManagerOptions) {
			o.Security = sec
			o.PrometheusPort = "0"
		})
		waitTotals(t, jm, [3]int{1, 1, 1})
		plain := &http.Client{}
		trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		member := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
		for _, ep := range []struct{ who, url string }{{"jobmanager", jm.PrometheusURL()}, {"taskmanager", tm.PrometheusURL()}} {
			if !strings.HasPrefix(ep.url, "https://127.0.0.1:") {
				t.Fatalf("mutual %v: %s: Prometheus URL %q, want https", mutual, ep.who, ep.url)
			}
			insecure := "http://" + strings.TrimPrefix(ep.url, "https://")
			if code, body := scrape(t, plain, insecure, token, ""); code == http.StatusOK || strings.Contains(body, "weir_") {
				t.Errorf("mutual %v: %s: plain HTTP with the token: %d %.200s; want a refusal", mutual, ep.who, code, body)
			}
			code, body := scrape(t, trusting, ep.url, token, "")
			switch {
			case mutual && code != 0:
				t.Errorf("mutual %v: %s: TLS without a client certificate: %d %.200s; want the handshake refused", mutual, ep.who, code, body)
			case !mutual && (code != http.StatusOK || !strings.Contains(body, "weir_")):
				t.Errorf("mutual %v: %s: TLS with the token: %d %.200s; want 200 with metrics", mutual, ep.who, code, body)
			}
			if code, body := scrape(t, member, ep.url, "", ""); code != http.StatusUnauthorized {
				t.Errorf("mutual %v: %s: TLS with a client certificate but no token: %d %.200s; want 401", mutual, ep.who, code, body)
			}
			if code, body := scrape(t, member, ep.url, token, ""); code != http.StatusOK || !strings.Contains(body, "weir_") {
				t.Errorf("mutual %v: %s: TLS with a client certificate and the token: %d %.200s; want 200 with metrics", mutual, ep.who, code, body)
			}
		}
		for _, c := range []*http.Client{plain, trusting, member} {
			c.CloseIdleConnections()
		}
	}
}

// TestPrometheusScrapesWithTheToken runs Prometheus itself against a
// JobManager's endpoint with a token and mutual TLS, configured as
// docs/metrics.md says: the token from a bearer credentials_file, the CA,
// certificate and key in tls_config. That scrape job's target is up; a
// second one without the token is down with 401.
func TestPrometheusScrapesWithTheToken(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_SYSTEMS") == "1" {
			t.Fatal("prometheus (Debian's prometheus) is not installed; WEIR_REQUIRE_SYSTEMS=1 requires it")
		}
		t.Skip("prometheus (Debian's prometheus) is not installed")
	}
	cert, key := writeSelfSigned(t)
	const token = "scrape-s3cret-0123456789"
	jm := startJM(t, func(o *JobManagerOptions) {
		o.Security = Security{Token: token, TLS: TLSFiles{Enabled: true, Mutual: true, Cert: cert, Key: key, CA: cert}}
		o.PrometheusPort = "0"
	})
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(jm.PrometheusURL(), "https://"), "/metrics")
	config := fmt.Sprintf(`global: {scrape_interval: 500ms, scrape_timeout: 500ms}
scrape_configs:
  - job_name: weir
    scheme: https
    authorization: {type: Bearer, credentials_file: %[1]q}
    tls_config: {ca_file: %[2]q, cert_file: %[2]q, key_file: %[3]q}
    static_configs: [{targets: [%[4]q]}]
  - job_name: without-token
    scheme: https
    tls_config: {ca_file: %[2]q, cert_file: %[2]q, key_file: %[3]q}
    static_configs: [{targets: [%[4]q]}]
`, tokenFile, cert, key, addr)
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := ln.Addr().String()
	ln.Close()
	var logs strings.Builder
	cmd := exec.Command(bin, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+web)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("prometheus:\n%s", logs.String())
		}
	})

	// Prometheus's view of its targets, until both were scraped.
	type target struct {
		Labels     map[string]string `json:"labels"`
		Health     string            `json:"health"`
		LastError  string            `json:"lastError"`
		LastScrape time.Time         `json:"lastScrape"`
	}
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	var health map[string]target
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for len(health) < 2 {
		select {
		case <-tick.C:
		case <-exited:
			t.Fatal("prometheus exited")
		case <-deadline:
			t.Fatalf("prometheus did not scrape both jobs within 20s: %+v", health)
		}
		resp, err := client.Get("http://" + web + "/api/v1/targets")
		if err != nil {
			continue // not listening yet
		}
		if resp.StatusCode != http.StatusOK { // 503 until its storage is open
			resp.Body.Close()
			continue
		}
		var answer struct {
			Data struct {
				ActiveTargets []target `json:"activeTargets"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET /api/v1/targets: %v", err)
		}
		health = map[string]target{}
		for _, tg := range answer.Data.ActiveTargets {
			if !tg.LastScrape.IsZero() && tg.Health != "unknown" {
				health[tg.Labels["job"]] = tg
			}
		}
	}
	if tg := health["weir"]; tg.Health != "up" {
		t.Errorf("the scrape with the token: %s (%s), want up", tg.Health, tg.LastError)
	}
	if tg := health["without-token"]; tg.Health != "down" || !strings.Contains(tg.LastError, "401") {
		t.Errorf("the scrape without the token: %s (%s), want down with 401", tg.Health, tg.LastError)
	}
}
