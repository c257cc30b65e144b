package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
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
	if drain && t.drainSource != nil && !t.finished {
		t.drainSource()
	}
	t.checkpoint(id)
}

// AsyncSnapshotter is a Snapshotter whose snapshot has a short
// synchronous part, taken between two records, and a slower asynchronous
// part (uploading files) that runs off the record path.
type AsyncSnapshotter interface {
	Snapshotter
	// SnapshotStateAsync takes the synchronous part and returns the
	// function that completes the snapshot; it runs on another goroutine,
	// must not touch the operator's live state, and must return when ctx
	// is cancelled. The task calls finish exactly once, with a cancelled
	// ctx when the checkpoint was declined or given up meanwhile, so that
	// it may release what the synchronous part kept.
	SnapshotStateAsync(checkpointID int64) (finish func(ctx context.Context) ([]byte, error), err error)
}

// pendingCheckpoint is a checkpoint whose synchronous part the task took
// and whose acknowledgement waits for asynchronous snapshot parts or for
// the records in flight of an unaligned checkpoint.
type pendingCheckpoint struct {
	id       int64
	snap     *TaskSnapshot
	declined error
	finishes []asyncPart
	// inFlight delivers the channel state of an unaligned checkpoint (one
	// piece per input), or the error that gave it up; nil when there is
	// none to wait for.
	inFlight chan inFlightState
	// files counts what the snapshot's state files weigh.
	files *snapshotSizes
}

// snapshotSizes counts the bytes of the state files one subtask's
// snapshot uploaded and reused, for its checkpoint statistics.
type snapshotSizes struct {
	uploaded, reused atomic.Int64
}

type asyncPart struct {
	info   *OperatorInfo
	finish func(ctx context.Context) ([]byte, error)
}

type inFlightState struct {
	pieces [][]byte
	err    error
}

// runningAck is a pending checkpoint being completed on its goroutine.
type runningAck struct {
	id     int64
	cancel context.CancelFunc
	done   chan struct{}
}

// checkpoint snapshots the task's operators, sends the barrier downstream
// and acknowledges to the coordinator. The snapshot is taken in the task's
// goroutine, between two records, so no operator locks; an operator that
// cannot snapshot declines the checkpoint without failing the task.
func (t *Task) checkpoint(id int64) {
	// A finished task is triggered directly, and may be triggered again
	// for a checkpoint whose barriers reached it before it finished.
	if id <= t.lastCheckpoint {
		return
	}
	t.lastCheckpoint = id
	if t.finished && t.finalCheckpoint == 0 {
		t.finalCheckpoint = id
	}
	t.acknowledge(t.snapshot(id, t.isSavepoint(id)))
}

// isSavepoint reports whether the checkpoint being triggered at a source
// is a savepoint, which must be aligned: its state has to be
// self-contained and rescalable, without records in flight.
func (t *Task) isSavepoint(id int64) bool {
	if t.storage == nil || !t.unaligned || !t.isSource {
		return false
	}
	return t.storage.isSavepoint(id)
}

// snapshot takes the synchronous part of a checkpoint and sends its
// barrier downstream at once: the asynchronous parts and the records in
// flight of an unaligned checkpoint do not hold the stream back.
func (t *Task) snapshot(id int64, align bool) *pendingCheckpoint {
	start := time.Now()
	stats := &SubtaskCheckpointStats{BarrierAt: start}
	if !t.barrierAt.IsZero() {
		stats.BarrierAt, stats.Alignment = t.barrierAt, start.Sub(t.barrierAt)
		stats.ProcessedBytes = t.gateBytesIn() - t.barrierBytes
		t.barrierAt = time.Time{}
	}
	p := &pendingCheckpoint{id: id, files: &snapshotSizes{}, snap: &TaskSnapshot{Vertex: t.vertexID, Subtask: t.subtask, Parallelism: t.parallelism,
		Operators: make(map[string][]byte), MaxParallelism: make(map[string]int), UIDs: t.uids, Finished: t.finished, Stats: stats}}
	t.snapFiles = p.files
	defer func() {
		t.snapFiles = nil
		stats.Sync = time.Since(start)
	}()
	t.prepareBarrier(id)
	for _, ns := range t.snapshotters {
		t.current = ns.info
		if as, ok := ns.s.(AsyncSnapshotter); ok {
			finish, err := as.SnapshotStateAsync(id)
			if err != nil {
				p.declined = fmt.Errorf("%s (%d/%d): %w", ns.info, t.subtask+1, t.parallelism, err)
				break
			}
			p.finishes = append(p.finishes, asyncPart{info: ns.info, finish: finish})
			continue
		}
		data, err := ns.s.SnapshotState(id)
		if err != nil {
			p.declined = fmt.Errorf("%s (%d/%d): %w", ns.info, t.subtask+1, t.parallelism, err)
			break
		}
		if data != nil {
			p.snap.Operators[ns.info.UID] = data
			p.snap.MaxParallelism[ns.info.UID] = ns.info.MaxParallelism
		}
	}
	t.current = t.head
	if t.finished {
		// Its channels ended: no barrier follows an end of partition.
		return p
	}
	for _, w := range t.writers {
		if t.unaligned {
			w.PriorityBarrier(id, align)
		} else {
			w.Barrier(id)
		}
	}
	return p
}

// acknowledge sends a checkpoint's acknowledgement (or its decline) to the
// coordinator: right away when the snapshot is complete and no earlier
// acknowledgement is still pending, otherwise from a goroutine owned by
// the task that completes the snapshot. Acknowledgements leave in
// checkpoint order.
func (t *Task) acknowledge(p *pendingCheckpoint) {
	prev := t.lastAck
	if prev != nil {
		select {
		case <-prev:
			prev, t.lastAck = nil, nil
		default:
		}
	}
	if len(p.finishes) == 0 && p.inFlight == nil && prev == nil {
		p.sized(time.Now())
		select {
		case t.acks <- checkpointAck{task: t.index, id: p.id, snap: p.snap, err: p.declined}:
		case <-t.ctx.Done():
			t.abort(t.ctx.Err())
		}
		return
	}
	if t.asyncStop == nil {
		t.asyncCtx, t.asyncStop = context.WithCancel(t.ctx)
	}
	ctx, cancel := context.WithCancel(t.asyncCtx)
	done := make(chan struct{})
	t.running = slices.DeleteFunc(t.running, func(r runningAck) bool {
		select {
		case <-r.done:
			return true
		default:
			return false
		}
	})
	t.running = append(t.running, runningAck{id: p.id, cancel: cancel, done: done})
	t.lastAck = done
	t.asyncWG.Add(1)
	go func() {
		defer t.asyncWG.Done()
		defer close(done)
		defer cancel()
		ack := t.complete(ctx, p)
		if ctx.Err() != nil {
			return // aborted, or the task ended: nobody waits for it
		}
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
				return
			}
		}
		select {
		case t.acks <- ack:
		case <-ctx.Done():
		}
	}()
}

// complete runs off the task's goroutine: it finishes the asynchronous
// snapshot parts and waits for the records in flight.
func (t *Task) complete(ctx context.Context, p *pendingCheckpoint) checkpointAck {
	start := time.Now()
	defer func() { p.stats().Async = time.Since(start) }()
	ack := checkpointAck{task: t.index, id: p.id, snap: p.snap, err: p.declined}
	for _, part := range p.finishes {
		fctx := ctx
		if ack.err != nil {
			// Declined: the part only releases what it holds.
			c, cancel := context.WithCancel(ctx)
			cancel()
			fctx = c
		}
		data, err := part.finish(fctx)
		if ack.err != nil {
			continue
		}
		if err != nil {
			ack.err = fmt.Errorf("%s (%d/%d): %w", part.info, t.subtask+1, t.parallelism, err)
			continue
		}
		if data != nil {
			p.snap.Operators[part.info.UID] = data
			p.snap.MaxParallelism[part.info.UID] = part.info.MaxParallelism
		}
	}
	if p.inFlight != nil {
		select {
		case st := <-p.inFlight:
			if st.err != nil && ack.err == nil {
				ack.err = st.err
			}
			if st.pieces != nil {
				p.snap.InFlight = map[string][][]byte{t.head.UID: st.pieces}
				for _, piece := range st.pieces {
					p.stats().PersistedBytes += int64(len(piece))
				}
			}
		case <-ctx.Done():
			if ack.err == nil {
				ack.err = ctx.Err()
			}
		}
	}
	p.sized(time.Now())
	return ack
}

// sized completes the snapshot's statistics when it is acknowledged.
func (p *pendingCheckpoint) sized(now time.Time) {
	st := p.stats()
	st.AckAt = now
	inline := st.PersistedBytes
	for _, data := range p.snap.Operators {
		inline += int64(len(data))
	}
	st.CheckpointedSize, st.StateSize = inline, inline
	if p.files != nil {
		st.CheckpointedSize += p.files.uploaded.Load()
		st.StateSize = st.CheckpointedSize + p.files.reused.Load()
	}
}

// stats returns the snapshot's statistics, which a snapshot taken by the
// task always has.
func (p *pendingCheckpoint) stats() *SubtaskCheckpointStats {
	if p.snap.Stats == nil {
		p.snap.Stats = &SubtaskCheckpointStats{}
	}
	return p.snap.Stats
}

// noteBarrier records that the first barrier of a checkpoint arrived, for
// its alignment statistics.
func (t *Task) noteBarrier() {
	t.barrierAt, t.barrierBytes = time.Now(), t.gateBytesIn()
}

// gateBytesIn is what the task's inputs received over the network.
func (t *Task) gateBytesIn() int64 {
	n := int64(0)
	for _, g := range t.gates {
		n += g.BytesIn()
	}
	return n
}

// stopAsync cancels the checkpoints still completing and waits for their
// goroutines, before the operators close: an asynchronous part may use
// what the operator releases on Close.
func (t *Task) stopAsync() {
	if t.asyncStop == nil {
		return
	}
	t.asyncStop()
	t.asyncWG.Wait()
}

// cancelAsync gives up the asynchronous completion of a checkpoint the
// coordinator aborted.
func (t *Task) cancelAsync(id int64) {
	for _, r := range t.running {
		if r.id == id {
			r.cancel()
		}
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
	t.committed = max(t.committed, id)
}

// notifyCheckpointAborted tells the task's operators that a checkpoint
// was given up.
func (t *Task) notifyCheckpointAborted(id int64) {
	t.cancelAsync(id)
	if id == t.finalCheckpoint {
		t.finalCheckpoint = 0 // the next checkpoint is the final one
	}
	for _, l := range t.aborters {
		if err := l.NotifyCheckpointAborted(id); err != nil {
			panic(userFailure{fmt.Errorf("abort checkpoint %d: %w", id, err)})
		}
	}
}
