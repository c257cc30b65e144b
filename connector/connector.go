// Package connector defines how data enters and leaves a weir job: sources
// that are split into independently readable, checkpointable pieces, and
// sinks that receive the records of one parallel subtask.
//
// The shapes follow Flink's FLIP-27 source model: a source enumerates
// splits, the runtime assigns them to the parallel reader subtasks, and a
// reader polls records from its splits in small steps so that the task can
// interleave control work (checkpoint barriers, timers, cancellation)
// between two polls.
package connector

import (
	"context"
	"errors"
)

// Boundedness says whether a source ends.
type Boundedness int

const (
	// Bounded sources end; a job whose sources are all bounded finishes.
	Bounded Boundedness = iota
	// Unbounded sources run until the job is cancelled.
	Unbounded
)

func (b Boundedness) String() string {
	if b == Bounded {
		return "bounded"
	}
	return "unbounded"
}

// Split is one independently readable piece of a source: a byte range of a
// file, a Kafka partition, a slice of a generator's sequence. A split value
// carries its own position, so the split returned by SplitReader.Snapshot
// is exactly what a restarted reader needs to resume.
type Split interface {
	// SplitID names the split uniquely within its source and stays the same
	// as its position advances.
	SplitID() string
}

// SplitContext is what a source learns about the reader subtask it runs in.
type SplitContext struct {
	Subtask     int // 0-based index of the reader subtask
	Parallelism int // number of reader subtasks
	// Gauge, when not nil, registers a metric of the source operator
	// under name (letters, digits and _; Flink's source metrics are
	// "pendingRecords", records behind the end of the input, and
	// "pendingBytes"). value runs on the reader's goroutine between two
	// polls, about as often as metrics are reported; it must be cheap.
	Gauge func(name string, value func() int64)
}

// Source produces records of type T.
type Source[T any] interface {
	// Boundedness reports whether the source ends.
	Boundedness() Boundedness
	// Splits enumerates the splits for a job whose source runs at the given
	// parallelism. It is called once per job run, before any reader starts;
	// the runtime assigns split i to reader subtask i mod parallelism.
	Splits(ctx context.Context, parallelism int) ([]Split, error)
	// NewReader creates the reader for one subtask. The runtime adds the
	// subtask's splits with AddSplits before it starts polling.
	NewReader(ctx context.Context, sc SplitContext) (SplitReader[T], error)
}

// ReadStatus is the result of one SplitReader.Poll.
type ReadStatus int

const (
	// MoreAvailable: poll again soon.
	MoreAvailable ReadStatus = iota
	// NothingAvailable: the reader has no data right now (an unbounded
	// source waiting for input); the runtime polls again after a short
	// pause, serving its mailbox in between.
	NothingAvailable
	// EndOfInput: every split of this reader is finished.
	EndOfInput
)

// Output receives the records a reader polls.
type Output[T any] interface {
	// Collect emits a record without an event timestamp.
	Collect(v T)
	// CollectWithTimestamp emits a record with its event timestamp in
	// milliseconds since the Unix epoch.
	CollectWithTimestamp(v T, timestampMillis int64)
}

// SplitOutputs is implemented by the Output a reader gets when the job
// applies a watermark strategy at the source: a reader that reads several
// splits emits each split's records through ForSplit, so that every split
// has its own watermark generator and an exhausted or idle split does not
// hold the others back (Kafka partitions read by one subtask, for
// example). Readers that do not use it get one generator per subtask.
type SplitOutputs[T any] interface {
	// ForSplit returns the output for one split's records.
	ForSplit(splitID string) Output[T]
	// SplitFinished says that a split has no more records.
	SplitFinished(splitID string)
}

// SplitReader reads the splits assigned to one source subtask. Its methods
// are called from a single goroutine (the task's), never concurrently.
type SplitReader[T any] interface {
	// AddSplits hands splits to the reader, either fresh from Splits or
	// restored from a checkpoint.
	AddSplits(splits []Split) error
	// Poll emits a bounded amount of records (a line, a batch from a
	// broker) and returns promptly. It must not block for long: a reader
	// waiting for data returns NothingAvailable.
	Poll(ctx context.Context, out Output[T]) (ReadStatus, error)
	// Snapshot returns the reader's unfinished splits with their current
	// positions, for a checkpoint taken between two polls.
	Snapshot() ([]Split, error)
	// Close releases the reader's resources.
	Close() error
}

// CheckpointListener is implemented by split readers that act when a
// checkpoint completes, such as the Kafka source, which commits the
// checkpointed offsets back to its consumer group for monitoring. For such
// a reader the runtime calls SnapshotCheckpoint instead of Snapshot, so
// that the reader knows which checkpoint a position belongs to. Both
// methods run on the task's goroutine, like the others.
type CheckpointListener interface {
	// SnapshotCheckpoint is Snapshot for the checkpoint checkpointID.
	SnapshotCheckpoint(checkpointID int64) ([]Split, error)
	// NotifyCheckpointComplete says that the checkpoint completed. An
	// error fails the task.
	NotifyCheckpointComplete(checkpointID int64) error
}

// SinkContext is what a sink learns about the subtask it runs in.
type SinkContext struct {
	Subtask       int // 0-based index of the sink subtask
	Parallelism   int // number of sink subtasks
	AttemptNumber int // 0 on the first run, +1 on every restart
}

// Sink consumes records of type T.
type Sink[T any] interface {
	// NewWriter creates the writer of one sink subtask.
	NewWriter(ctx context.Context, sc SinkContext) (SinkWriter[T], error)
}

// SinkWriter writes the records of one sink subtask. Its methods are called
// from a single goroutine, never concurrently.
type SinkWriter[T any] interface {
	// Write takes one record and its timestamp (math.MinInt64 when the
	// record has none).
	Write(v T, timestampMillis int64) error
	// Flush makes everything written so far durable or visible; it is
	// called when the input ends and, later, on every checkpoint.
	Flush() error
	// Close releases resources. After a successful Flush at the end of
	// the input it completes the output (for example by renaming files
	// from in-progress to final); after a failure it only cleans up.
	Close() error
}

// ErrUnsupportedSplit is returned by a reader given a split of a kind it
// does not know, for example after restoring a checkpoint of another job.
var ErrUnsupportedSplit = errors.New("connector: unsupported split type")

// SplitSerializer is implemented by sources whose reader positions can be
// checkpointed: splits are encoded into the checkpoint and decoded on
// recovery, possibly in another process.
type SplitSerializer interface {
	EncodeSplits(splits []Split) ([]byte, error)
	DecodeSplits(data []byte) ([]Split, error)
}

// Committer is implemented by sink writers that commit in two phases with
// checkpoints, for exactly-once output: what they write between two
// checkpoints becomes visible only when the second completes.
type Committer interface {
	// PrepareCommit runs at a checkpoint barrier (and at the end of a
	// bounded input): it makes what was written since the last one durable
	// but not visible, and describes it.
	PrepareCommit(checkpointID int64) (committable []byte, err error)
	// Commit makes prepared output visible. It runs when the checkpoint
	// completed, at the successful end of the job, and on recovery for the
	// committables of the restored checkpoint, so it must be idempotent.
	Commit(committables [][]byte) error
}
