package testmysql

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills mariadbd if the test binary dies without
// stopping it (a test timeout's panic, a SIGKILL).
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
