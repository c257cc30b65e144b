package cluster

import (
	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/runtime"
)

// restartStrategyFrom reads a job's restart-strategy.* options. The
// cluster restarts a job whole, from its latest checkpoint, when its
// worker fails or its TaskManager is lost. A job that sets no
// restart-strategy.type gets fixed-delay (with the
// restart-strategy.fixed-delay.* options), as Flink gives checkpointed
// jobs: a lost TaskManager should cost a restart, not the job.
func restartStrategyFrom(cfg *config.Configuration) runtime.RestartStrategy {
	return runtime.NewRestartStrategy(cfg, config.RestartStrategyFixedDelay)
}
