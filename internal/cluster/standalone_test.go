//go:build unix

package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeWeir writes an executable that stands in for the weir binary: it
// prints a line, which lands in the log file weir cluster start opened
// for it, and exits, which makes StartStandalone give up at once.
func fakeWeir(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "weir")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho written by the cluster\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return exe
}

// victim is a file of the cluster's user that another user would like it
// to overwrite; check asserts it is untouched.
type victim struct {
	path string
}

const victimText = "precious\n"

func newVictim(t *testing.T) victim {
	t.Helper()
	v := victim{filepath.Join(t.TempDir(), "victim")}
	if err := os.WriteFile(v.path, []byte(victimText), 0o600); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v victim) check(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(v.path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != victimText {
		t.Errorf("the victim %s was written: %q", v.path, b)
	}
}

func startFake(t *testing.T, dir string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return StartStandalone(ctx, StandaloneOptions{Exe: fakeWeir(t), Dir: dir, TaskManagers: 1, Slots: 1,
		RESTAddress: "127.0.0.1:1", Wait: 10 * time.Second})
}

// TestStandaloneRefusesLinks plants links where weir cluster start writes
// its log and pid files, in a directory of the cluster's user: the log
// link is refused, the stale pid link removed, and neither victim
// touched.
func TestStandaloneRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	logVictim, pidVictim := newVictim(t), newVictim(t)
	if err := os.Symlink(logVictim.path, filepath.Join(dir, "jobmanager.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(pidVictim.path, filepath.Join(dir, "jobmanager.pid")); err != nil {
		t.Fatal(err)
	}
	err := startFake(t, dir)
	if err == nil || !strings.Contains(err.Error(), "jobmanager.log is a symbolic link") {
		t.Errorf("StartStandalone = %v, want a refusal of the linked log file", err)
	}
	logVictim.check(t)
	pidVictim.check(t)
}

// TestStandaloneRefusesUnsafeDirs has weir cluster start refuse
// directories that another user could write: one of another user's, one
// that everybody may write, and one inside a directory everybody may
// write without the sticky bit. Each holds a planted link to a victim,
// which stays untouched.
func TestStandaloneRefusesUnsafeDirs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string
		want  string
	}{
		{"another user's", func(t *testing.T) string {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			dir := filepath.Join(t.TempDir(), "cluster")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chown(dir, 0, 0) })
			return dir
		}, "belongs to uid 65534 (mode 0755), not to uid 0"},
		{"world-writable", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "cluster")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "is writable by group or others (mode 0777)"},
		{"inside a world-writable one", func(t *testing.T) string {
			parent := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(parent, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(parent, 0o777); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(parent, "cluster")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "which is writable by group or others without the sticky bit (mode 0777)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			v := newVictim(t)
			if err := os.Symlink(v.path, filepath.Join(dir, "jobmanager.log")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(v.path, filepath.Join(dir, "jobmanager.pid")); err != nil {
				t.Fatal(err)
			}
			if tc.name == "another user's" {
				if err := os.Chown(dir, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
			err := startFake(t, dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "--dir") {
				t.Errorf("StartStandalone(%s) = %v, want a refusal naming the directory and %q", dir, err, tc.want)
			}
			v.check(t)
			if _, err := StopStandalone(dir, time.Second); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("StopStandalone(%s) = %v, want the same refusal", dir, err)
			}
		})
	}
}

// TestStandaloneMakesPrivateDir: a directory weir cluster start creates,
// parents included, has mode 0700.
func TestStandaloneMakesPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "weir", "cluster")
	err := startFake(t, dir)
	if err == nil || !strings.Contains(err.Error(), " exited (") {
		t.Fatalf("StartStandalone = %v, want a fake process's exit", err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %04o, want 0700", d, fi.Mode().Perm())
		}
	}
	// StartStandalone returns when the first fake exits, which need not
	// be the JobManager: check the log of the one that did, complete
	// since its process is gone.
	var exited string
	for _, name := range []string{"jobmanager.log", "taskmanager-1.log"} {
		if strings.Contains(err.Error(), filepath.Join(dir, name)) {
			exited = filepath.Join(dir, name)
		}
	}
	if exited == "" {
		t.Fatalf("the error names no log file in %s: %v", dir, err)
	}
	if b, err := os.ReadFile(exited); err != nil || !strings.Contains(string(b), "written by the cluster") {
		t.Errorf("%s: %q, %v", exited, b, err)
	}
}

func TestDefaultStandaloneDir(t *testing.T) {
	home, state, run := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct {
		name       string
		run, state string
		runMode    os.FileMode
		want       string
	}{
		{"runtime dir", run, state, 0o700, filepath.Join(run, "weir", "cluster")},
		{"runtime dir others can write", run, state, 0o777, filepath.Join(state, "weir", "cluster")},
		{"relative runtime dir", "run", state, 0o700, filepath.Join(state, "weir", "cluster")},
		{"state dir", "", state, 0o700, filepath.Join(state, "weir", "cluster")},
		{"home", "", "", 0o700, filepath.Join(home, ".local", "state", "weir", "cluster")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chmod(run, tc.runMode); err != nil {
				t.Fatal(err)
			}
			t.Setenv("XDG_RUNTIME_DIR", tc.run)
			t.Setenv("XDG_STATE_HOME", tc.state)
			if got, err := DefaultStandaloneDir(); err != nil || got != tc.want {
				t.Errorf("DefaultStandaloneDir() = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}
