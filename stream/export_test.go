package stream

import "github.com/weirproject/weir/internal/runtime"

// SetDistribution makes env run only its share of a job spread over
// several workers, as worker mode does; tests run the workers in one
// process.
func SetDistribution(env *Environment, d *runtime.Distribution) { env.distribution = d }

// SpilledRuns counts the run files batch reduces wrote in this process.
func SpilledRuns() int64 { return spilledRuns.Load() }

func Repartitioned() int64 { return repartitioned.Load() }

// SetReduceSegmentLen makes the heap Reduce's incremental snapshots put
// segments of n slots, so that small tests have several; it returns the
// function that puts the default back.
func SetReduceSegmentLen(n int) func() {
	old := reduceSegmentLen
	reduceSegmentLen = n
	return func() { reduceSegmentLen = old }
}
