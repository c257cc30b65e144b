package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
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
	const token = "prom-s3cret"
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
	const token = "t"
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
