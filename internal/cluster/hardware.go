package cluster

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// detectHardware describes this host for the JobManager's view of its
// TaskManagers.
func detectHardware() Hardware {
	return Hardware{CPUCores: runtime.NumCPU(), PhysicalMemory: physicalMemory()}
}

// physicalMemory reads MemTotal from /proc/meminfo; it returns 0 where
// that file does not exist, which the REST API shows as unknown.
func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
