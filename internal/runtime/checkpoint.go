package runtime

import (
	"slices"
	"time"

	"fmt"

	"github.com/weirproject/weir/internal/checksum"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/storage"
)

// Snapshotter is implemented by operators with state. SnapshotState runs
// in the task's goroutine when the checkpoint's barriers have arrived: it
// encodes the state as it is at that point in the stream. RestoreState
// runs before Open on recovery.
type Snapshotter interface {
	SnapshotState(checkpointID int64) ([]byte, error)
	RestoreState(data []byte) error
}

// CheckpointListener is implemented by operators that act when a
// checkpoint completed, such as sinks that commit in two phases.
type CheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
}

// CheckpointAbortListener is implemented by operators that act when a
// checkpoint was given up (declined or timed out).
type CheckpointAbortListener interface {
	NotifyCheckpointAborted(checkpointID int64) error
}

// FinalCommitter is implemented by operators with output prepared but not
// committed when their task finished; the job commits it once every task
// finished, since no restart can replay it any more.
type FinalCommitter interface {
	CommitFinal() error
}

// TaskSnapshot is one subtask's part of a checkpoint: the state of each of
// its operators by UID.
type TaskSnapshot struct {
	Vertex      string
	Subtask     int
	Parallelism int
	Operators   map[string][]byte
	// MaxParallelism is each operator's number of key groups, which a
	// restore must keep.
	MaxParallelism map[string]int
	// Files names, relative to the checkpoint's directory, the state
	// files of operators whose state is not inline in Operators: only in
	// _metadata, never in memory.
	Files map[string]string `json:",omitempty"`
	// Sums are the lengths and CRC32Cs of the state files in Files, from
	// checkpoint format 1 on: only in _metadata.
	Sums map[string]checksum.Sum `json:",omitempty"`
	// InFlight is the channel state of an unaligned checkpoint: the
	// records that were on their way into the subtask's head operator (by
	// its UID) when it took its snapshot, one piece per logical input,
	// encoded with the input's record codec. A restore replays them before
	// any new input.
	InFlight map[string][][]byte `json:",omitempty"`
	// UIDs are the task's operators; Finished says that their input had
	// ended and they had finished when the snapshot was taken.
	UIDs     []string `json:",omitempty"`
	Finished bool     `json:",omitempty"`
	// Stats is what the subtask measured of its part: it travels with the
	// acknowledgement into the checkpoint's statistics, not into the
	// checkpoint.
	Stats *SubtaskCheckpointStats `json:"-"`
}

// SubtaskCheckpointStats is one subtask's part in a checkpoint, as Flink's
// checkpoint details show it per subtask.
type SubtaskCheckpointStats struct {
	// BarrierAt is when the checkpoint reached the subtask: its first
	// barrier, or the trigger at a source; AckAt is when the subtask
	// acknowledged it.
	BarrierAt, AckAt time.Time
	// Sync is the synchronous part of the snapshot, taken between two
	// records; Async what completed it off the record path (uploads, and
	// the records in flight of an unaligned checkpoint).
	Sync, Async time.Duration
	// Alignment is the time from the first barrier to the snapshot,
	// during which ProcessedBytes arrived over the network and were
	// processed.
	Alignment      time.Duration
	ProcessedBytes int64
	// PersistedBytes are the records in flight an unaligned checkpoint
	// kept.
	PersistedBytes int64
	// StateSize is the subtask's state in the checkpoint: inline state
	// and the files it uploaded or reused; CheckpointedSize is what it
	// wrote for this checkpoint.
	StateSize, CheckpointedSize int64
	Unaligned                   bool
}

// restoredState is what one subtask restores: for each operator UID the
// snapshot pieces to load. At an unchanged parallelism that is the same
// subtask's piece; after a rescale every old subtask's piece, and keyed
// operators keep the keys of their key groups.
type restoredState struct {
	pieces   map[string][][]byte
	rescaled map[string]bool
	// files fetches the shared files that incremental snapshots
	// reference.
	files restoreFiles
	// inFlight holds the records in flight of an unaligned checkpoint by
	// the UID of the operator they were going to; inFlightErr says why
	// they cannot be restored.
	inFlight    map[string][][]byte
	inFlightErr error
	// finished: every operator of the subtask had finished in the
	// checkpoint (every old subtask, after a rescale).
	finished bool
}

// CompletedCheckpoint is a checkpoint every task acknowledged.
type CompletedCheckpoint struct {
	ID    int64
	JobID string
	Tasks []*TaskSnapshot
	// Format is how the checkpoint's files are written (checkpointFormat):
	// 0, absent, in checkpoints of versions before checksums.
	Format int `json:",omitempty"`
	// Path is where the checkpoint was written; empty in memory.
	Path string `json:"-"`
	// root is the storage directory that the handles of shared state
	// files are relative to.
	root *storage.Location
	// triggered is when the coordinator started the checkpoint.
	triggered time.Time
}

// stateFor collects the state of the given operators for one subtask,
// wherever they were chained when the checkpoint was taken: state belongs
// to operators (by UID), not to chains.
func (c *CompletedCheckpoint) stateFor(uids []string, subtask, parallelism int) *restoredState {
	if c == nil {
		return nil
	}
	out := &restoredState{pieces: make(map[string][][]byte), rescaled: make(map[string]bool), files: restoreFiles{root: c.root, format: c.Format}}
	for _, uid := range uids {
		var own []byte
		var all [][]byte
		oldParallelism := 0
		// Old subtasks in index order, so that every new subtask sees the
		// pieces in the same order.
		tasks := slices.Clone(c.Tasks)
		slices.SortFunc(tasks, func(a, b *TaskSnapshot) int { return a.Subtask - b.Subtask })
		for _, t := range tasks {
			data, ok := t.Operators[uid]
			if !ok {
				continue
			}
			oldParallelism = t.Parallelism
			all = append(all, data)
			if t.Subtask == subtask {
				own = data
			}
		}
		switch {
		case len(all) == 0:
		case oldParallelism == parallelism:
			if own != nil {
				out.pieces[uid] = [][]byte{own}
			}
		default:
			out.pieces[uid] = all
			out.rescaled[uid] = true
		}
	}
	out.finished = c.finishedFor(uids, subtask, parallelism)
	for _, t := range c.Tasks {
		for uid, pieces := range t.InFlight {
			if !slices.Contains(uids, uid) || !slices.ContainsFunc(pieces, func(p []byte) bool { return len(p) > 0 }) {
				continue
			}
			if t.Parallelism != parallelism {
				// Records in flight went to the subtask their key (or the
				// partitioner) chose at the old parallelism.
				out.inFlightErr = fmt.Errorf("restore: checkpoint %d is unaligned and holds records in flight into operator %q at parallelism %d, which cannot change to %d; rescale from a savepoint (always aligned) instead", c.ID, uid, t.Parallelism, parallelism)
				continue
			}
			if t.Subtask == subtask {
				if out.inFlight == nil {
					out.inFlight = make(map[string][][]byte)
				}
				out.inFlight[uid] = pieces
			}
		}
	}
	return out
}

// CheckRestore verifies that a checkpoint fits a job: all of its state
// must belong to operators of the job, matched by UID (unless
// allowNonRestored), and each keyed operator must keep its max
// parallelism: its key groups are what rescaling redistributes.
func CheckRestore(cp *CompletedCheckpoint, jg *graph.JobGraph, allowNonRestored bool) error {
	vertexOf := make(map[string]*graph.JobVertex)
	nodeOf := make(map[string]*graph.StreamNode)
	for _, v := range jg.Vertices {
		for _, op := range v.Operators {
			vertexOf[op.UID] = v
			nodeOf[op.UID] = jg.Stream.Node(op.Node)
		}
	}
	for _, t := range cp.Tasks {
		for uid := range t.Operators {
			if _, ok := vertexOf[uid]; !ok {
				if allowNonRestored {
					continue
				}
				return fmt.Errorf("restore %s: it holds state of operator %q, which the job does not have; give the operator that UID or use --allow-non-restored-state", cp.Path, uid)
			}
			if mp := t.MaxParallelism[uid]; mp != 0 && mp != nodeOf[uid].MaxParallelism {
				return fmt.Errorf("restore %s: operator %q had max parallelism %d and now %d; the number of key groups cannot change", cp.Path, uid, mp, nodeOf[uid].MaxParallelism)
			}
		}
		for uid, pieces := range t.InFlight {
			if !slices.ContainsFunc(pieces, func(p []byte) bool { return len(p) > 0 }) {
				continue
			}
			v, ok := vertexOf[uid]
			switch {
			case !ok && allowNonRestored:
			case !ok:
				return fmt.Errorf("restore %s: it holds records in flight into operator %q, which the job does not have; give the operator that UID or use --allow-non-restored-state", cp.Path, uid)
			case v.Parallelism != t.Parallelism:
				return fmt.Errorf("restore %s: the checkpoint is unaligned and holds records in flight into operator %q at parallelism %d, which cannot change to %d; rescale from a savepoint (always aligned) instead", cp.Path, uid, t.Parallelism, v.Parallelism)
			}
		}
	}
	return nil
}

// barrierTracker decides, for one task, when a checkpoint's barriers have
// arrived on every open input channel and which channels are blocked
// meanwhile: in exactly-once mode a channel that delivered the barrier is
// blocked until the others do (alignment), so that no record after the
// barrier reaches the state before the snapshot.
type barrierTracker struct {
	exactlyOnce bool
	received    [][]bool
	open        [][]bool
	current     int64
	pending     int
	done        int64
}

func newBarrierTracker(exactlyOnce bool, channels ...int) *barrierTracker {
	b := &barrierTracker{exactlyOnce: exactlyOnce}
	for _, n := range channels {
		b.received = append(b.received, make([]bool, n))
		o := make([]bool, n)
		for i := range o {
			o[i] = true
		}
		b.open = append(b.open, o)
	}
	return b
}

// blocked reports whether buffers of the channel must wait.
func (b *barrierTracker) blocked(input, channel int) bool {
	return b.exactlyOnce && b.current != 0 && b.received[input][channel]
}

// barrier records a barrier; it returns the checkpoint to take when the
// last one arrived.
func (b *barrierTracker) barrier(input, channel int, id int64) (complete int64) {
	if id < b.current || (b.current == 0 && id <= b.lastDone()) {
		return 0 // a barrier of a checkpoint this task is done with
	}
	if id > b.current {
		// A newer checkpoint overtakes one still aligning: the older one
		// is abandoned (it will time out at the coordinator).
		b.current = id
		b.pending = 0
		for i := range b.received {
			for c := range b.received[i] {
				b.received[i][c] = false
				if b.open[i][c] {
					b.pending++
				}
			}
		}
	}
	if !b.received[input][channel] {
		b.received[input][channel] = true
		b.pending--
	}
	return b.finishIfAligned()
}

// end records a finished channel: it no longer takes part in alignment.
func (b *barrierTracker) end(input, channel int) (complete int64) {
	b.open[input][channel] = false
	if b.current != 0 && !b.received[input][channel] {
		b.pending--
		return b.finishIfAligned()
	}
	return 0
}

func (b *barrierTracker) finishIfAligned() int64 {
	if b.current == 0 || b.pending > 0 {
		return 0
	}
	id := b.current
	b.done = id
	b.current = 0
	for i := range b.received {
		clear(b.received[i])
	}
	return id
}

func (b *barrierTracker) lastDone() int64 { return b.done }

// unalignedTracker follows the barriers of a task whose producers send
// priority barriers (execution.checkpointing.unaligned.enabled). A barrier
// arrives ahead of the buffers queued before it and says how many of them
// precede it on its channel; the task numbers each channel's buffers as it
// takes them from the gate, so it knows which side of the barrier a buffer
// is on without seeing the barrier in the stream. Aligning then means
// processing every channel up to its barrier and holding back what
// follows; unaligned means snapshotting at the first barrier and keeping
// the buffers that precede the barriers but were not processed yet: the
// channel state.
type unalignedTracker struct {
	timeout time.Duration
	chans   [][]channelPos
	current int64
	done    int64
	// id is the checkpoint the last returned action is about.
	id int64
	// align: the current checkpoint aligns, until the timeout unless
	// forced (savepoints).
	align, forced bool
	started       time.Time
	// collecting: the snapshot is taken and the records in flight are
	// being collected.
	collecting bool
	// waiting counts the open channels not processed up to their barrier
	// (aligning), or whose barrier has not arrived (collecting).
	waiting int
	timer   *time.Timer
	armed   int64
}

type channelPos struct {
	open      bool
	taken     int64 // buffers taken from the gate
	processed int64 // position of the last buffer processed
	known     bool  // the current checkpoint's barrier arrived
	at        int64 // its position: buffers 1..at precede it
	reached   bool  // no longer waited for
}

// unalignedAction tells the task what a barrier, a processed buffer, an
// ended channel or the alignment timeout made necessary.
type unalignedAction uint8

const (
	// actAbandon: a newer checkpoint overtook the current one.
	actAbandon unalignedAction = 1 << iota
	// actTrim: a channel's barrier arrived while collecting; what was kept
	// of the channel beyond it is not in flight after all.
	actTrim
	actSnapshotAligned
	actSnapshotUnaligned
	// actInFlightComplete: every channel's records in flight are kept.
	actInFlightComplete
)

func newUnalignedTracker(timeout time.Duration, channels ...int) *unalignedTracker {
	u := &unalignedTracker{timeout: timeout}
	for _, n := range channels {
		cs := make([]channelPos, n)
		for i := range cs {
			cs[i].open = true
		}
		u.chans = append(u.chans, cs)
	}
	return u
}

// take numbers a buffer taken from the gate.
func (u *unalignedTracker) take(input, channel int) int64 {
	c := &u.chans[input][channel]
	c.taken++
	return c.taken
}

// capturing reports whether a buffer of the channel taken from the gate
// now is in flight for the checkpoint being collected, as far as is known:
// the channel's barrier, which would tell, has not arrived.
func (u *unalignedTracker) capturing(input, channel int) bool {
	c := &u.chans[input][channel]
	return u.collecting && c.open && !c.known
}

// inFlight reports whether an unprocessed buffer precedes its channel's
// barrier (or the barrier is still to come) when the snapshot is taken.
func (u *unalignedTracker) inFlight(input, channel int, seq int64) bool {
	c := &u.chans[input][channel]
	return c.open && (!c.known || seq <= c.at)
}

// blocked reports whether a buffer follows its channel's barrier while the
// task aligns.
func (u *unalignedTracker) blocked(input, channel int, seq int64) bool {
	if u.current == 0 || u.collecting {
		return false
	}
	c := &u.chans[input][channel]
	return c.known && seq > c.at
}

func (u *unalignedTracker) start(id int64, align bool, now time.Time) {
	u.current, u.forced, u.align, u.started, u.collecting = id, align, align || u.timeout > 0, now, false
	u.waiting = 0
	for i := range u.chans {
		for c := range u.chans[i] {
			p := &u.chans[i][c]
			p.known, p.at, p.reached = false, 0, !p.open
			if p.open {
				u.waiting++
			}
		}
	}
}

func (u *unalignedTracker) finish() {
	u.done, u.current, u.collecting = u.current, 0, false
}

// barrier records a priority barrier.
func (u *unalignedTracker) barrier(input, channel int, id, sent int64, align bool, now time.Time) (act unalignedAction) {
	if id < u.current || (u.current == 0 && id <= u.done) {
		return 0 // a barrier of a checkpoint this task is done with
	}
	if id > u.current {
		if u.current != 0 {
			// The coordinator gave the current one up (another task
			// declined it, or it timed out): a newer one is coming.
			act |= actAbandon
		}
		u.start(id, align, now)
	}
	u.id = u.current
	c := &u.chans[input][channel]
	if !c.open || c.known {
		return act
	}
	c.known, c.at = true, sent
	switch {
	case u.collecting:
		act |= actTrim
		u.reach(c)
		if u.waiting == 0 {
			act |= actInFlightComplete
			u.finish()
		}
	case !u.align:
		act |= u.toUnaligned()
	case c.processed >= c.at:
		u.reach(c)
		if u.waiting == 0 {
			act |= actSnapshotAligned
			u.finish()
		}
	}
	return act
}

func (u *unalignedTracker) reach(c *channelPos) {
	if !c.reached {
		c.reached = true
		u.waiting--
	}
}

// toUnaligned takes the current checkpoint unaligned: from now on the
// task waits for the barriers that are missing, not for the channels to
// be processed up to them.
func (u *unalignedTracker) toUnaligned() unalignedAction {
	u.collecting = true
	u.waiting = 0
	for i := range u.chans {
		for c := range u.chans[i] {
			p := &u.chans[i][c]
			p.reached = !p.open || p.known
			if !p.reached {
				u.waiting++
			}
		}
	}
	if u.waiting == 0 {
		id := u.current
		u.finish()
		u.id = id
		return actSnapshotUnaligned | actInFlightComplete
	}
	return actSnapshotUnaligned
}

// processed records that a buffer was processed; the last buffer before a
// channel's barrier may complete the alignment.
func (u *unalignedTracker) processed(input, channel int, seq int64) unalignedAction {
	c := &u.chans[input][channel]
	c.processed = seq
	if u.current == 0 || u.collecting || !c.known || c.reached || seq < c.at {
		return 0
	}
	u.reach(c)
	if u.waiting > 0 {
		return 0
	}
	u.id = u.current
	u.finish()
	return actSnapshotAligned
}

// end records a finished channel: it is no longer waited for, and all it
// sent before it ended was taken from the gate.
func (u *unalignedTracker) end(input, channel int) unalignedAction {
	c := &u.chans[input][channel]
	c.open = false
	if u.current == 0 || c.reached {
		return 0
	}
	u.reach(c)
	if u.waiting > 0 {
		return 0
	}
	u.id = u.current
	collecting := u.collecting
	u.finish()
	if collecting {
		return actInFlightComplete
	}
	return actSnapshotAligned
}

// timerC returns a channel that fires when the current alignment times
// out, nil when no alignment can.
func (u *unalignedTracker) timerC() <-chan time.Time {
	if u.current == 0 || u.collecting || !u.align || u.forced || u.timeout <= 0 {
		return nil
	}
	if u.armed != u.current {
		d := max(u.timeout-time.Since(u.started), 0)
		if u.timer == nil {
			u.timer = time.NewTimer(d)
		} else {
			u.timer.Reset(d)
		}
		u.armed = u.current
	}
	return u.timer.C
}

// expired switches an alignment that took longer than the timeout to
// unaligned.
func (u *unalignedTracker) expired() unalignedAction {
	if u.current == 0 || u.collecting || !u.align || u.forced || u.timeout <= 0 || time.Since(u.started) < u.timeout {
		return 0
	}
	u.id = u.current
	return u.toUnaligned()
}

func (u *unalignedTracker) stop() {
	if u.timer != nil {
		u.timer.Stop()
	}
}

// finishedFor reports whether every one of the operators had finished in
// the checkpoint: in the same subtask at an unchanged parallelism, in every
// old subtask after a rescale. An operator the checkpoint does not know
// (new in the job) has not finished.
func (c *CompletedCheckpoint) finishedFor(uids []string, subtask, parallelism int) bool {
	if len(uids) == 0 {
		return false
	}
	for _, uid := range uids {
		seen := false
		for _, t := range c.Tasks {
			if !slices.Contains(t.UIDs, uid) {
				continue
			}
			if t.Parallelism == parallelism && t.Subtask != subtask {
				continue
			}
			if !t.Finished {
				return false
			}
			seen = true
		}
		if !seen {
			return false
		}
	}
	return true
}
