//go:build !unix

package cluster

import (
	"errors"
	"os/exec"
	"time"
)

var errNotUnix = errors.New("weir cluster start and stop need a Unix system; start weir jobmanager and weir taskmanager yourself")

func detach(*exec.Cmd) error { return errNotUnix }

func isClusterProcess(int) bool { return false }

func terminate(int, time.Duration) error { return errNotUnix }
