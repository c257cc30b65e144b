package benchstat

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// WriteAllocProfile writes the process's allocation profile to path
// (go tool pprof -sample_index=alloc_space). It collects garbage first:
// the profile holds the allocations up to the last collection.
func WriteAllocProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
