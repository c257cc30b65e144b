//go:build !unix

package nexmark

import "time"

// ProcessUsage is not available on this system: it returns zeros.
func ProcessUsage() (cpu time.Duration, maxRSS int64) { return 0, 0 }
