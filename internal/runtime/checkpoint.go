package runtime

import (
	"slices"

	"fmt"

	"github.com/weirproject/weir/internal/graph"
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
}

// restoredState is what one subtask restores: for each operator UID the
// snapshot pieces to load. At an unchanged parallelism that is the same
// subtask's piece; after a rescale every old subtask's piece, and keyed
// operators keep the keys of their key groups.
type restoredState struct {
	pieces   map[string][][]byte
	rescaled map[string]bool
}

// CompletedCheckpoint is a checkpoint every task acknowledged.
type CompletedCheckpoint struct {
	ID    int64
	JobID string
	Tasks []*TaskSnapshot
	// Path is where the checkpoint was written; empty in memory.
	Path string `json:"-"`
}

// stateFor collects the state of the given operators for one subtask,
// wherever they were chained when the checkpoint was taken: state belongs
// to operators (by UID), not to chains.
func (c *CompletedCheckpoint) stateFor(uids []string, subtask, parallelism int) *restoredState {
	if c == nil {
		return nil
	}
	out := &restoredState{pieces: make(map[string][][]byte), rescaled: make(map[string]bool)}
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
