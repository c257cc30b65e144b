package cluster

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Security holds what both ends of the control plane need to trust each
// other: a shared bearer token and, optionally, TLS. The same settings
// serve the RPC servers, the REST API and their clients.
type Security struct {
	// Token, when set, must accompany every RPC (gRPC metadata
	// "authorization: Bearer TOKEN") and every request to REST and to the
	// Prometheus endpoints (the Authorization header); clients send it.
	Token string
	// TLS turns on TLS for RPC, REST and Prometheus when Cert and Key are
	// set (servers) or Enabled is set (clients, which verify the server
	// against CA, or the system's roots when CA is empty).
	TLS TLSFiles
}

// TLSFiles names PEM files.
type TLSFiles struct {
	Enabled bool
	// Mutual makes servers require a client certificate signed by CA and
	// clients present Cert and Key; it needs Enabled and all three files.
	Mutual bool
	Cert   string // certificate chain of this process (its servers, and its clients with Mutual)
	Key    string // its private key
	CA     string // CA certificates that clients (and, with Mutual, servers) trust; empty = system roots
}

// check refuses settings with which a process could not take part in a
// cluster with mutual TLS, naming the keys that are missing, so that a
// process fails at its start rather than at its first connection.
func (f TLSFiles) check() error {
	if !f.Mutual {
		return nil
	}
	if !f.Enabled {
		return errors.New("security.ssl.mutual is true but security.ssl.enabled is not: mutual TLS is TLS; set security.ssl.enabled: true")
	}
	var missing []string
	for _, m := range []struct{ key, file string }{
		{"security.ssl.cert", f.Cert}, {"security.ssl.key", f.Key}, {"security.ssl.ca", f.CA},
	} {
		if m.file == "" {
			missing = append(missing, m.key)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("security.ssl.mutual is true but %s is not set: with mutual TLS every process, "+
			"the weir command line too, presents its certificate and key and verifies its peers' against the CA", missing[0])
	default:
		return fmt.Errorf("security.ssl.mutual is true but %s are not set: with mutual TLS every process, "+
			"the weir command line too, presents its certificate and key and verifies its peers' against the CA", strings.Join(missing, ", "))
	}
}

// MinTokenLength is the least number of non-space characters a server
// accepts in security.token.
const MinTokenLength = 16

// CheckToken refuses a security.token that a JobManager or TaskManager
// should not serve with, saying why: one that is set but short enough to
// guess, white space only, or with white space at either end. HTTP and
// gRPC drop white space around a header's value, so no client could
// present such a token, yet it would count as set and allow a bind
// beyond loopback. It also refuses characters that a gRPC header cannot
// carry (anything but printable ASCII). No token ("") is not refused
// here; checkBind decides where a server may run without one. Clients
// need not call it: they send what they were given and the server
// judges it. The message never shows the token.
func CheckToken(token string) error {
	if token == "" {
		return nil
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("security.token: "+format+" (--token and WEIR_TOKEN set it too; openssl rand -hex 32 makes a good one)", args...)
	}
	trimmed := strings.TrimSpace(token)
	switch {
	case trimmed == "":
		return refuse("%d characters, all white space; a token needs at least %d non-space characters", len(token), MinTokenLength)
	case trimmed != token:
		return refuse("white space at its start or end, which clients cannot send (HTTP and gRPC strip it from headers); remove it")
	}
	n := 0
	for _, r := range token {
		if r < ' ' || r > '~' {
			return refuse("a character that is not printable ASCII, which gRPC metadata cannot carry")
		}
		if r != ' ' {
			n++
		}
	}
	if n < MinTokenLength {
		what := "characters"
		if n != len(token) {
			what = "non-space characters"
		}
		return refuse("%d %s; a token needs at least %d non-space characters", n, what, MinTokenLength)
	}
	return nil
}

// checkBind refuses to serve an address other hosts can reach without a
// token: the control plane can run code on every TaskManager once job
// submission exists, so an open one is a remote-execution hole.
func (s Security) checkBind(role, host string) error {
	if s.Token != "" || isLoopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "all interfaces"
	}
	return fmt.Errorf("refusing to listen on %s: a %s reachable from other hosts needs a token; "+
		"set security.token (or --token, or the WEIR_TOKEN environment variable), "+
		"or bind to 127.0.0.1", shown, role)
}

// isLoopback reports whether host (an IP literal or a name) denotes the
// loopback interface only. Names other than "localhost" count as
// non-loopback: what they resolve to can change.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// warnPlaintextToken logs when a token will cross a network in clear text.
func (s Security) warnPlaintextToken(log *slog.Logger, role, host string) {
	if s.Token != "" && !s.TLS.Enabled && !isLoopback(host) {
		log.Warn("the token travels unencrypted; enable security.ssl.enabled to protect it", "role", role, "bind", host)
	}
}

func (f TLSFiles) serverConfig() (*tls.Config, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("security.ssl.enabled is true but security.ssl.cert and security.ssl.key are not both set")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.Mutual {
		if cfg.ClientCAs, err = loadCA(f.CA); err != nil {
			return nil, err
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// httpTLS is the TLS configuration of the process's HTTP servers (the
// REST API, the Prometheus endpoints), nil without TLS: the RPC servers'
// serverConfig, so that with mutual TLS they too want a client
// certificate. Each http.Server needs its own Clone: serving changes it.
func (s Security) httpTLS() (*tls.Config, error) {
	if !s.TLS.Enabled {
		return nil, nil
	}
	return s.TLS.serverConfig()
}

// serveHTTP serves srv on ln, with TLS when srv.TLSConfig is set (from
// httpTLS), until srv is shut down.
func serveHTTP(srv *http.Server, ln net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(ln, "", "")
	}
	return srv.Serve(ln)
}

func (f TLSFiles) clientConfig() (*tls.Config, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pool, err := loadCA(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if f.Mutual {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func loadCA(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS CA: no PEM certificate in %s", file)
	}
	return pool, nil
}

// serverOptions returns the gRPC server options that enforce s.
func (s Security) serverOptions(log *slog.Logger) ([]grpc.ServerOption, error) {
	var opts []grpc.ServerOption
	if s.TLS.Enabled {
		cfg, err := s.TLS.serverConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	if s.Token != "" {
		check := func(ctx context.Context, method string) error {
			if validBearer(metadata.ValueFromIncomingContext(ctx, "authorization"), s.Token) {
				return nil
			}
			from := "unknown"
			if p, ok := peer.FromContext(ctx); ok {
				from = p.Addr.String()
			}
			log.Warn("rejected an RPC without a valid token", "method", method, "peer", from)
			return status.Error(codes.Unauthenticated, "missing or invalid token: set security.token to the cluster's token")
		}
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := check(ctx, info.FullMethod); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := check(ss.Context(), info.FullMethod); err != nil {
					return err
				}
				return h(srv, ss)
			}))
	}
	return opts, nil
}

// dialOptions returns the gRPC client options that satisfy s.
func (s Security) dialOptions() ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	if s.TLS.Enabled {
		cfg, err := s.TLS.clientConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if s.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(s.Token)))
	}
	return opts, nil
}

func validBearer(values []string, token string) bool {
	for _, v := range values {
		if t, ok := strings.CutPrefix(v, "Bearer "); ok && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return true
		}
	}
	return false
}

// bearer sends the token with every RPC. It does not insist on TLS: on a
// trusted network a token without TLS is the operator's choice, which
// warnPlaintextToken makes visible.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (b bearer) RequireTransportSecurity() bool { return false }

// requireToken wraps h so that requests without the token get 401.
// Refusals are logged through logRefusal, which rate-limits them
// (refusalLog).
func requireToken(token string, logRefusal func(msg string, args ...any), h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !validBearer(r.Header.Values("Authorization"), token) {
			logRefusal("rejected an HTTP request without a valid token", "path", loggedPath(r), "peer", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			writeError(w, http.StatusUnauthorized, "missing or invalid bearer token: send \"Authorization: Bearer TOKEN\" with the cluster's security.token")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// withoutSecurityOptions returns sub without the security.* options among
// its Options and the -D arguments of its Args, and the keys it dropped.
// They configure a client's connection to the cluster (weir run -D
// security.token=...); a worker needs none of them, and what the
// TaskManager passes on appears on the worker's command line, which every
// local user can read.
func withoutSecurityOptions(sub JobSubmission) (JobSubmission, []string) {
	var dropped []string
	secret := func(def string) bool {
		k, _, _ := strings.Cut(def, "=")
		if strings.HasPrefix(strings.TrimSpace(k), "security.") {
			dropped = append(dropped, strings.TrimSpace(k))
			return true
		}
		return false
	}
	var opts []string
	for _, o := range sub.Options {
		if !secret(o) {
			opts = append(opts, o)
		}
	}
	var args []string
	for i := 0; i < len(sub.Args); i++ {
		a := sub.Args[i]
		switch {
		case (a == "-D" || a == "--D") && i+1 < len(sub.Args):
			if !secret(sub.Args[i+1]) {
				args = append(args, a, sub.Args[i+1])
			}
			i++
			continue
		case strings.HasPrefix(a, "-D="), strings.HasPrefix(a, "--D="):
			if _, def, _ := strings.Cut(a, "="); secret(def) {
				continue
			}
		case a == "--":
			args = append(args, sub.Args[i:]...)
			i = len(sub.Args)
			continue
		}
		args = append(args, a)
	}
	if len(dropped) > 0 {
		sub.Options, sub.Args = opts, args
	}
	return sub, dropped
}
