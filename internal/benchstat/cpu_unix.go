//go:build unix

package benchstat

import (
	"syscall"
	"time"
)

// ProcessCPU is the user plus system CPU time this process has used.
func ProcessCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// ChildrenCPU is the user plus system CPU time of the child processes
// this process has waited for.
func ChildrenCPU() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
