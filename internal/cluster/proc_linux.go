//go:build linux

package cluster

import (
	"os/exec"
	"syscall"
)

// bindToParent makes the kernel SIGKILL cmd's process when the thread that
// started it exits, so that a TaskManager killed with SIGKILL takes its
// job workers with it instead of leaving jobs that nobody reports on
// running next to their restarted attempts. The caller must start and
// wait for cmd on one locked OS thread: the signal follows the thread,
// not the process.
func bindToParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
