// Package testmysql starts a throwaway MariaDB server for tests: a fresh
// data directory under a temporary directory, a free loopback port, its own
// socket, no grant tables (any user, no password), stopped and removed at
// the end. It needs Debian's mariadb-server (mariadbd, mariadb-install-db).
//
// A package's TestMain starts one server for all its tests:
//
//	var server *testmysql.Server
//
//	func TestMain(m *testing.M) { os.Exit(testmysql.Run(m, &server)) }
//
// and each test calls testmysql.Need(t, server) and usually
// server.NewDatabase(t) for a database of its own.
package testmysql

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

// RequireEnv is the environment variable that turns a missing MariaDB into
// a failure instead of a skip; the project's test script sets it.
const RequireEnv = "WEIR_REQUIRE_SYSTEMS"

// Server is a running mariadbd.
type Server struct {
	Port   int
	Socket string
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	log    bytes.Buffer
	dbs    atomic.Int64
}

// missing is why Run could not start a server, for Need.
var missing string

// Binaries returns the paths of mariadbd and mariadb-install-db, or an
// error that says how to install them.
func Binaries() (mariadbd, installDB string, err error) {
	for _, name := range []string{"mariadbd", "mariadb-install-db"} {
		p, lerr := exec.LookPath(name)
		if lerr != nil {
			// Debian puts mariadbd in /usr/sbin, which is not always on
			// PATH for a non-root user.
			if _, serr := os.Stat(filepath.Join("/usr/sbin", name)); serr == nil {
				p, lerr = filepath.Join("/usr/sbin", name), nil
			}
		}
		if lerr != nil {
			return "", "", fmt.Errorf("testmysql: %s not found: install MariaDB (Debian: apt-get install --no-install-recommends mariadb-server)", name)
		}
		if name == "mariadbd" {
			mariadbd = p
		} else {
			installDB = p
		}
	}
	return mariadbd, installDB, nil
}

// Run starts a server, stores it in *server, runs the tests and stops the
// server; it returns the exit code for os.Exit. When MariaDB is missing it
// runs the tests with *server nil (Need skips them) unless
// WEIR_REQUIRE_SYSTEMS=1, which makes it fail at once. After the tests it
// also checks that no goroutine leaked, as goleak.VerifyTestMain would.
func Run(m *testing.M, server **Server) int {
	s, err := Start()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			fmt.Fprintf(os.Stderr, "%v (%s=1)\n", err, RequireEnv)
			return 1
		}
		missing = err.Error()
	}
	*server = s
	code := m.Run()
	if s != nil {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	return code
}

// Need skips the test when Run could not start a server.
func Need(t testing.TB, s *Server) {
	t.Helper()
	if s == nil {
		t.Skipf("no MariaDB server: %s", missing)
	}
}

// StartForTest starts a server for one test and stops it when the test
// ends; it skips the test (fails it with WEIR_REQUIRE_SYSTEMS=1) when
// MariaDB is missing. For packages where only a test or two need a
// server.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%v (%s=1)", err, RequireEnv)
		}
		t.Skipf("no MariaDB server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Start installs a fresh data directory and starts mariadbd on a free
// loopback port; it returns once the server accepts connections.
func Start() (*Server, error) {
	mariadbd, installDB, err := Binaries()
	if err != nil {
		return nil, err
	}
	// The socket path must stay under the ~100 bytes a Unix socket name
	// may have, so the directory comes from os.TempDir, not t.TempDir.
	dir, err := os.MkdirTemp("", "weir-mariadb-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	install := exec.Command(installDB, "--no-defaults", "--datadir="+data, "--user="+currentUser(), "--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testmysql: mariadb-install-db: %v\n%s", err, out)
	}
	// A port found free may be taken before mariadbd binds it; try again
	// with another one then.
	var lastErr error
	for range 5 {
		s, err := start(mariadbd, dir, data)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func start(mariadbd, dir, data string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Port: port, Socket: filepath.Join(dir, "mysqld.sock"), dir: dir, done: make(chan struct{})}
	s.cmd = exec.Command(mariadbd, "--no-defaults", "--datadir="+data, "--socket="+s.Socket,
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--user="+currentUser(),
		"--skip-grant-tables", "--skip-name-resolve", "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		// Small and quick: tests need neither a large buffer pool nor
		// the doublewrite buffer's protection against torn pages.
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M", "--innodb-doublewrite=0",
		"--max-connections=500", "--log-error="+filepath.Join(dir, "error.log"))
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	setParentDeathSignal(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("testmysql: start mariadbd: %w", err)
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		s.kill()
		return nil, err
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("testmysql: mariadbd exited: %v\n%s%s", s.cmd.ProcessState, s.log.String(), tail(errLog))
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("testmysql: mariadbd not ready after 30 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// Stop shuts the server down and removes its directory.
func (s *Server) Stop() error {
	// mariadbd shuts down cleanly on SIGTERM; it ignores SIGINT.
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.kill()
	}
	return os.RemoveAll(s.dir)
}

// DSN returns a go-sql-driver DSN for database db ("" for none) over TCP.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.Port, db)
}

// NewDatabase creates a database of its own for the test and returns its
// DSN.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", s.dbs.Add(1), sanitize(t.Name()))
	if len(name) > 64 {
		name = name[:64]
	}
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	return s.DSN(name)
}

// Open opens dsn and closes it when the test ends.
func Open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Config parses dsn, for tests that need its parts.
func Config(dsn string) *mysql.Config {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		panic(err)
	}
	return cfg
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Getuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Getuid())
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
