package cluster

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestBrowserGuard(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := browserGuard(newHostGuard([]string{"jm.example.org"}, "127.0.0.1", ""), newRefusalLog(log).warn, ok)
	for _, c := range []struct {
		name, method, host string
		header             map[string]string
		want               int
	}{
		{"CLI without browser headers", "POST", "127.0.0.1:8081", nil, 204},
		{"curl with an IPv6 literal", "POST", "[::1]:8081", nil, 204},
		{"the dashboard, same origin", "POST", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8081"}, 204},
		{"an address typed into the browser", "GET", "localhost:8081", map[string]string{"Sec-Fetch-Site": "none"}, 204},
		{"a page of another origin posts", "POST", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://127.0.0.2:9999"}, 403},
		{"a page of another port posts", "PATCH", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"an old browser: Origin only", "DELETE", "127.0.0.1:8081", map[string]string{"Origin": "http://evil.example"}, 403},
		{"a sandboxed page: Origin null", "POST", "127.0.0.1:8081", map[string]string{"Origin": "null"}, 403},
		{"a page of another origin reads", "GET", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "cross-site"}, 204},
		{"rebinding: another name reads", "GET", "evil.example:8081", nil, 421},
		{"rebinding: another name posts, same origin", "POST", "evil.example:8081", map[string]string{"Sec-Fetch-Site": "same-origin"}, 421},
		{"a name of rest.allowed-hosts", "POST", "JM.example.org.:8081", nil, 204},
		{"*.localhost", "GET", "weir.localhost:8081", nil, 204},
	} {
		r := httptest.NewRequest(c.method, "/jars/upload", nil)
		r.Host = c.host
		for k, v := range c.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: %s %s with %v: %d %s, want %d", c.name, c.method, c.host, c.header, w.Code, w.Body, c.want)
		}
		if w.Code >= 400 && !strings.Contains(w.Body.String(), `"errors"`) {
			t.Errorf("%s: the refusal is not Flink's error JSON: %s", c.name, w.Body)
		}
	}
	if any := newHostGuard([]string{"*"}); !any.allows("whatever.example") {
		t.Error(`rest.allowed-hosts "*" does not allow every name`)
	}
}

// TestRefusalLogBounded: refused requests with long paths, many of them,
// add a bounded amount of log (once 20 requests with 900 KB paths added
// 17.5 MiB).
func TestRefusalLogBounded(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	h := requireToken("0123456789abcdef-token", newRefusalLog(log).warn, http.NotFoundHandler())
	long := "/" + strings.Repeat("$(touch_x)", 90_000)
	start := time.Now()
	for range 200 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", long, nil))
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("GET without the token: %d", w.Code)
		}
	}
	// A burst of 10 lines, then one a second.
	lines, bound := strings.Count(logged.String(), "\n"), 10+int(time.Since(start).Seconds())+1
	if lines > bound || logged.Len() > bound*1024 {
		t.Errorf("200 refused requests with 900 KB paths logged %d lines, %d bytes; want at most %d lines of at most 1 KiB", lines, logged.Len(), bound)
	}
	if lines == 0 || !strings.Contains(logged.String(), "(900001 bytes)") {
		t.Errorf("the log does not say how long the cut path was:\n%.2000s", logged.String())
	}
	r := httptest.NewRequest("GET", "/a%0Afake=line", nil)
	if p := loggedPath(r); strings.ContainsAny(p, "\n\r") {
		t.Errorf("a path with a newline is logged as %q", p)
	}
}
