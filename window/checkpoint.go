package window

import "errors"

// errWindowStateNotCheckpointed declines a checkpoint while windows hold
// state: their snapshots are not written yet, and a checkpoint without
// them would lose them on recovery. Declining keeps a job's output
// exactly once: it recovers from an earlier checkpoint taken while the
// operator was empty, or from the start.
var errWindowStateNotCheckpointed = errors.New("window contents and timers are not checkpointed yet")

// SnapshotState declines while any key has windows, timers or per-key
// state (on the fast path: while any pane is open or any key has state).
func (op *operator[K, T, ACC, V, OUT]) SnapshotState(int64) ([]byte, error) {
	if op.fast != nil && (len(op.fast.panes) > 0 || len(op.fast.global) > 0) {
		return nil, errWindowStateNotCheckpointed
	}
	if len(op.keys) > 0 || op.timers.NumEventTimeTimers() > 0 || op.timers.NumProcessingTimeTimers() > 0 {
		return nil, errWindowStateNotCheckpointed
	}
	return nil, nil
}

// RestoreState has nothing to restore: snapshots are always empty.
func (op *operator[K, T, ACC, V, OUT]) RestoreState([]byte) error { return nil }
