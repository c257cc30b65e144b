package stream

import "github.com/weirproject/weir/internal/runtime"

// SetDistribution makes env run only its share of a job spread over
// several workers, as worker mode does; tests run the workers in one
// process.
func SetDistribution(env *Environment, d *runtime.Distribution) { env.distribution = d }

// SpilledRuns counts the run files batch reduces wrote in this process.
func SpilledRuns() int64 { return spilledRuns.Load() }

func Repartitioned() int64 { return repartitioned.Load() }
