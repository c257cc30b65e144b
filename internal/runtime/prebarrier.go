package runtime

// BarrierPreparer is implemented by operators that hold records back,
// such as the mini-batches of SQL aggregations: PrepareSnapshotPreBarrier
// runs when the task takes a checkpoint, before any of its operators
// snapshots and before the barrier goes downstream, so that what it emits
// then belongs to the checkpoint's part of the stream, as Flink's
// prepareSnapshotPreBarrier. It may emit; it reports errors with
// OperatorContext.Fail.
type BarrierPreparer interface {
	PrepareSnapshotPreBarrier(checkpointID int64)
}

// prepareBarrier calls the chain's BarrierPreparers head first, so that
// what one emits reaches the next before that one flushes in turn.
// Lifecycles are registered tail first.
func (t *Task) prepareBarrier(id int64) {
	for i := len(t.lifecycles) - 1; i >= 0; i-- {
		if bp, ok := t.lifecycles[i].(BarrierPreparer); ok {
			bp.PrepareSnapshotPreBarrier(id)
		}
	}
}
