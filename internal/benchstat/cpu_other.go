//go:build !unix

package benchstat

import "time"

// ProcessCPU is not measured on this platform.
func ProcessCPU() time.Duration { return 0 }

// ChildrenCPU is not measured on this platform.
func ChildrenCPU() time.Duration { return 0 }
