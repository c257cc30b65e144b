package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// A browser on the JobManager's machine is a client too, one that runs
// whatever page it is shown. Two things let such a page reach a REST API
// that has no token (the default, on loopback):
//
//   - Cross-origin requests that a browser sends without asking (a
//     "simple" POST: multipart or text/plain bodies, no custom headers).
//     The page cannot read the answer, but it does not need to: POST
//     /jars/upload and POST /jars/{id}/run are enough to run a program.
//     net/http's CrossOriginProtection refuses every unsafe method
//     whose Sec-Fetch-Site or Origin says it came from another origin;
//     clients that are not browsers (the weir CLI, curl, Flink's REST
//     clients) send neither header and pass.
//   - DNS rebinding: a name of the attacker's that first points at its
//     own server and then at 127.0.0.1. The page is then same-origin
//     with the API and may read and write it, but every request says
//     the attacker's name in Host. Refusing Host names that are not the
//     server's own closes that.
//
// Both checks come before the token's: with a token a page cannot
// authenticate (the dashboard keeps the token in its tab, and a browser
// adds no Authorization header by itself), so they matter most without
// one, but they cost nothing with one.

// hostGuard admits requests whose Host names this server.
type hostGuard struct {
	any   bool            // rest.allowed-hosts has "*": no check
	names map[string]bool // lower case, without port
}

// newHostGuard allows, besides IP literals, localhost and *.localhost
// (which browsers resolve to loopback themselves, never through DNS), the
// machine's host name, the server's bind and advertised hosts and
// rest.address, and the names listed in rest.allowed-hosts.
//
// IP literals are always allowed: rebinding needs a name, and a page
// whose URL holds the IP is at the server's own origin, where the only
// page is the dashboard.
func newHostGuard(extra []string, own ...string) *hostGuard {
	g := &hostGuard{names: make(map[string]bool)}
	add := func(h string) {
		h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
		if h == "" {
			return
		}
		if h == "*" {
			g.any = true
			return
		}
		g.names[h] = true
	}
	add("localhost")
	if h, err := os.Hostname(); err == nil {
		add(h)
	}
	for _, h := range own {
		add(h)
	}
	for _, h := range extra {
		add(h)
	}
	return g
}

// allows reports whether the Host header value host (with or without a
// port) names this server.
func (g *hostGuard) allows(host string) bool {
	if g.any || host == "" { // HTTP/1.0 without Host: not a browser
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if net.ParseIP(name) != nil || name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	return g.names[name]
}

// maxLoggedPath bounds the request path that a refusal's log line quotes:
// paths are the client's, and a few requests with megabyte paths should
// not add megabytes to the log.
const maxLoggedPath = 200

// loggedPath is a request's path as a log line may quote it: at most
// maxLoggedPath bytes, marked when cut, and never with control
// characters (the text handler quotes them, but a terminal tailing a
// plain log would not).
func loggedPath(r *http.Request) string {
	p := r.URL.EscapedPath() // percent-encoded: no control characters
	if len(p) > maxLoggedPath {
		return fmt.Sprintf("%s... (%d bytes)", p[:maxLoggedPath], len(p))
	}
	return p
}

// browserGuard wraps h with the Host check and cross-origin protection.
// Refusals are logged through logRefusal, which rate-limits them.
func browserGuard(hosts *hostGuard, logRefusal func(msg string, args ...any), h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logRefusal("refused a cross-origin browser request", "method", r.Method, "path", loggedPath(r),
			"origin", truncate(r.Header.Get("Origin"), maxLoggedPath), "peer", r.RemoteAddr)
		writeError(w, http.StatusForbidden, fmt.Sprintf("cross-origin request refused: %s %s came from a page of another origin (%s); "+
			"the REST API takes state-changing requests only from its own dashboard and from clients that are not browsers",
			r.Method, truncate(r.URL.Path, maxLoggedPath), originOf(r)))
	}))
	guarded := cop.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.allows(r.Host) {
			logRefusal("refused a request for another host name", "host", truncate(r.Host, maxLoggedPath), "path", loggedPath(r), "peer", r.RemoteAddr)
			writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not a name of this server: a page that reached it "+
				"under another name could act as the dashboard; add the name to rest.allowed-hosts if clients use it", truncate(r.Host, maxLoggedPath)))
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

func originOf(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		return "Origin " + truncate(o, maxLoggedPath)
	}
	return "Sec-Fetch-Site: " + truncate(r.Header.Get("Sec-Fetch-Site"), 40)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// refusalLog writes the warnings of refused requests at a bounded rate:
// anyone who can reach a port can send refused requests as fast as the
// server answers them, and each would otherwise be a log line. Lines over
// the rate are counted, and the next line written says how many were
// left out.
type refusalLog struct {
	log        *slog.Logger
	limit      *rate.Limiter
	suppressed atomic.Int64
}

// newRefusalLog allows bursts of 10 lines and 1 a second after that.
func newRefusalLog(log *slog.Logger) *refusalLog {
	return &refusalLog{log: log, limit: rate.NewLimiter(rate.Every(time.Second), 10)}
}

func (l *refusalLog) warn(msg string, args ...any) {
	if !l.limit.Allow() {
		l.suppressed.Add(1)
		return
	}
	if n := l.suppressed.Swap(0); n > 0 {
		args = append(args, "suppressed", n)
	}
	l.log.Warn(msg, args...)
}
