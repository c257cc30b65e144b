//go:build unix

package cluster

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// detach starts cmd in a session of its own, so that the terminal's
// Ctrl-C or hang-up does not reach the cluster it started.
func detach(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return nil
}

// alive reports whether pid runs. A zombie does not: where no init process
// reaps orphans (some containers), a stopped process stays one.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust kill
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// isClusterProcess reports whether pid runs and, where /proc tells, is a
// weir jobmanager or taskmanager: a pid file may outlive its process, and
// the pid be reused by an unrelated one.
func isClusterProcess(pid int) bool {
	if !alive(pid) {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return true
	}
	args := bytes.Split(cmdline, []byte{0})
	return slices.ContainsFunc(args, func(a []byte) bool {
		return string(a) == "jobmanager" || string(a) == "taskmanager"
	})
}

// terminate sends SIGTERM, then SIGKILL if pid still runs after grace.
func terminate(pid int, grace time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return nil
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return nil
		}
	}
	return errors.New("still running after SIGKILL")
}
