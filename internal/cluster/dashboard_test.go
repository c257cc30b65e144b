package cluster

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The dashboard's files load without the token (the page asks for it);
// the API still requires it, and unknown paths still answer JSON 404s.
func TestDashboardServedBesideTheAPI(t *testing.T) {
	const token = "dash-token-0123456789"
	jm := startJM(t, func(o *JobManagerOptions) { o.Security.Token = token })
	base := jm.RESTURL()
	defer http.DefaultClient.CloseIdleConnections()
	get := func(path string, auth bool) (int, string, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for _, tt := range []struct {
		path       string
		auth       bool
		code       int
		ctype, has string
	}{
		{"/", false, 200, "text/html", `<script src="/web/app.js">`},
		{"/web/app.js", false, 200, "javascript", "function route()"},
		{"/web/style.css", false, 200, "text/css", ".dag-vertex"},
		{"/web/missing.js", false, 401, "application/json", "bearer token"},
		{"/web/missing.js", true, 404, "application/json", "not found: /web/missing.js"},
		{"/web/", true, 404, "application/json", "not found"},
		{"/overview", false, 401, "application/json", "bearer token"},
		{"/overview", true, 200, "application/json", `"taskmanagers"`},
		{"/no/such/api", true, 404, "application/json", "not found: /no/such/api"},
	} {
		code, ctype, body := get(tt.path, tt.auth)
		if code != tt.code || !strings.Contains(ctype, tt.ctype) || !strings.Contains(body, tt.has) {
			t.Errorf("GET %s (token %v) = %d %s %.80q; want %d %s with %q", tt.path, tt.auth, code, ctype, body, tt.code, tt.ctype, tt.has)
		}
	}
}
