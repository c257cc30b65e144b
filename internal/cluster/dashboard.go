package cluster

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// The web dashboard: static HTML, CSS and JavaScript under web/, embedded
// in the binary, that reads the REST API from the browser. docs/dashboard.md
// describes its pages.

//go:embed web
var webFiles embed.FS

// WithDashboard serves the dashboard's page at "/" and its files under
// /web/ and passes every other request to api: the JobManager's REST
// server wraps its API so, and tests serve the page so beside an API of
// their own. The files hold no data and
// are served without the token, so that the page can load and ask for it;
// every API request the page makes sends the token and goes through
// api's check.
func WithDashboard(api http.Handler) http.Handler {
	files, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree always has web/
	}
	static := http.StripPrefix("/web/", http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			name, asset := strings.CutPrefix(r.URL.Path, "/web/")
			if r.URL.Path == "/" {
				name, asset = "index.html", true
			}
			if fi, err := fs.Stat(files, name); asset && name != "" && err == nil && !fi.IsDir() {
				w.Header().Set("Cache-Control", "no-cache")
				w.Header().Set("X-Content-Type-Options", "nosniff")
				w.Header().Set("X-Frame-Options", "DENY")
				if r.URL.Path == "/" {
					http.ServeFileFS(w, r, files, "index.html")
					return
				}
				static.ServeHTTP(w, r)
				return
			}
		}
		api.ServeHTTP(w, r)
	})
}
