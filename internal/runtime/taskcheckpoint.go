package runtime

import (
	"fmt"
)

// send delivers an action to the task's mailbox unless the task has
// already ended.
func (t *Task) send(f func()) {
	select {
	case t.mailbox <- f:
	case <-t.done:
	case <-t.ctx.Done():
	}
}

// triggerCheckpoint starts a checkpoint at a source task, between two
// polls: its barrier goes out after everything emitted so far. With drain
// (stop-with-savepoint) the maximum watermark goes first, so that event
// time ends before the savepoint.
func (t *Task) triggerCheckpoint(id int64, drain bool) {
	if drain && t.drainSource != nil {
		t.drainSource()
	}
	t.checkpoint(id)
}

// checkpoint snapshots the task's operators, sends the barrier downstream
// and acknowledges to the coordinator. The snapshot is taken in the task's
// goroutine, between two records, so no operator locks; an operator that
// cannot snapshot declines the checkpoint without failing the task.
func (t *Task) checkpoint(id int64) {
	snap := &TaskSnapshot{Vertex: t.vertexID, Subtask: t.subtask, Parallelism: t.parallelism,
		Operators: make(map[string][]byte), MaxParallelism: make(map[string]int)}
	var declined error
	for _, ns := range t.snapshotters {
		t.current = ns.info
		data, err := ns.s.SnapshotState(id)
		if err != nil {
			declined = fmt.Errorf("%s (%d/%d): %w", ns.info, t.subtask+1, t.parallelism, err)
			break
		}
		if data != nil {
			snap.Operators[ns.info.UID] = data
			snap.MaxParallelism[ns.info.UID] = ns.info.MaxParallelism
		}
	}
	t.current = t.head
	for _, w := range t.writers {
		w.Barrier(id)
	}
	select {
	case t.acks <- checkpointAck{task: t.index, id: id, snap: snap, err: declined}:
	case <-t.ctx.Done():
		t.abort(t.ctx.Err())
	}
}

// notifyCheckpointComplete tells the task's operators that a checkpoint
// completed, so that two-phase-commit sinks publish.
func (t *Task) notifyCheckpointComplete(id int64) {
	for _, l := range t.listeners {
		if err := l.NotifyCheckpointComplete(id); err != nil {
			panic(userFailure{fmt.Errorf("commit checkpoint %d: %w", id, err)})
		}
	}
}

// notifyCheckpointAborted tells the task's operators that a checkpoint
// was given up.
func (t *Task) notifyCheckpointAborted(id int64) {
	for _, l := range t.aborters {
		if err := l.NotifyCheckpointAborted(id); err != nil {
			panic(userFailure{fmt.Errorf("abort checkpoint %d: %w", id, err)})
		}
	}
}
