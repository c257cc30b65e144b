//go:build !linux

package testmysql

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}
