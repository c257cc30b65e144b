//go:build !linux

package cluster

import "os/exec"

// bindToParent does nothing where the kernel cannot kill a child with its
// parent: there, workers of a TaskManager killed with SIGKILL keep running
// until they end on their own (see docs/cluster.md).
func bindToParent(*exec.Cmd) {}
