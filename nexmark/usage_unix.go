//go:build unix

package nexmark

import (
	"runtime"
	"syscall"
	"time"
)

// ProcessUsage returns the CPU time (user + system) the process has used
// and its peak resident set size in bytes (getrusage).
func ProcessUsage() (cpu time.Duration, maxRSS int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	maxRSS = int64(ru.Maxrss)
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		maxRSS *= 1024 // kilobytes elsewhere
	}
	return cpu, maxRSS
}
