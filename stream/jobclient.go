package stream

import "github.com/weirproject/weir/internal/runtime"

// LatestCheckpoint returns where the job's latest completed checkpoint is
// (its chk-<n> directory, a path or a URI), for resuming with
// --from-savepoint; "" when none completed or checkpoints stay in memory.
func (c *JobClient) LatestCheckpoint() string { return c.job.LatestCheckpoint() }

// CheckpointHistory returns the duration and sizes of the job's latest
// completed checkpoints, oldest first.
func (c *JobClient) CheckpointHistory() []runtime.CheckpointStats { return c.job.CheckpointHistory() }

// FailedCheckpointHistory returns the statistics of the latest
// checkpoints and savepoints that failed, oldest first.
func (c *JobClient) FailedCheckpointHistory() []runtime.CheckpointStats {
	return c.job.FailedCheckpointHistory()
}
