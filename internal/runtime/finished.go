package runtime

// Checkpoints with finished tasks (Flink's FLIP-147). A task whose input
// ended does not exit at once when the job checkpoints: it stays, takes
// part in the next checkpoint with its final state (a sink prepares its
// last transaction in it), and exits once that checkpoint completed and
// its operators committed. Later checkpoints record it as finished, and a
// restore from one of them deploys it finished: it restores its state so
// that sinks commit what they had prepared, but processes nothing and
// calls no Finish again, which would emit its final results twice.

// awaitFinalCheckpoint keeps a finished task until a checkpoint taken
// after it finished completed, or the coordinator released it.
func (t *Task) awaitFinalCheckpoint() {
	if !t.waitFinal {
		return
	}
	t.finished = true
	select {
	case t.waiting <- t.index:
	case <-t.ctx.Done():
		t.abort(t.ctx.Err())
	}
	for !t.released && (t.finalCheckpoint == 0 || t.committed < t.finalCheckpoint) {
		select {
		case f := <-t.mailbox:
			f()
		case <-t.ctx.Done():
			t.abort(t.ctx.Err())
		}
	}
}

// endRestoredFinished runs a task restored as finished: its operators were
// restored and opened; downstream learns at once that its input ended.
func (t *Task) endRestoredFinished() {
	t.current = t.head
	for _, w := range t.writers {
		w.EndOfPartition()
	}
	t.awaitFinalCheckpoint()
}

// releaseFinal lets a finished task exit without a final checkpoint: the
// coordinator gave up checkpointing, and the job's final commit takes
// over.
func (t *Task) releaseFinal() { t.released = true }
