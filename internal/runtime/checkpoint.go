package runtime

import (
	"encoding/json"

	"errors"
	"fmt"
	"github.com/weirproject/weir/internal/graph"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
}

// CompletedCheckpoint is a checkpoint every task acknowledged.
type CompletedCheckpoint struct {
	ID    int64
	JobID string
	Tasks []*TaskSnapshot
	// Path is where the checkpoint was written; empty in memory.
	Path string `json:"-"`
}

// stateFor collects the state of the given operators at one subtask
// index, wherever they were chained when the checkpoint was taken: state
// belongs to operators (by UID), not to chains.
func (c *CompletedCheckpoint) stateFor(uids []string, subtask int) *TaskSnapshot {
	if c == nil {
		return nil
	}
	out := &TaskSnapshot{Subtask: subtask, Operators: make(map[string][]byte)}
	for _, t := range c.Tasks {
		if t.Subtask != subtask {
			continue
		}
		for _, uid := range uids {
			if data, ok := t.Operators[uid]; ok {
				out.Operators[uid] = data
			}
		}
	}
	return out
}

// checkpointStorage keeps completed checkpoints: in memory, and in a
// directory when state.checkpoints.dir is set.
type checkpointStorage struct {
	dir    string
	jobID  string
	mu     sync.Mutex
	latest *CompletedCheckpoint
}

func newCheckpointStorage(dirOrURI, jobID string) (*checkpointStorage, error) {
	dir := dirOrURI
	if strings.Contains(dirOrURI, "://") {
		u, err := url.Parse(dirOrURI)
		if err != nil {
			return nil, fmt.Errorf("state.checkpoints.dir %q: %w", dirOrURI, err)
		}
		if u.Scheme != "file" {
			return nil, fmt.Errorf("state.checkpoints.dir %q: scheme %q is not supported yet; use a path or a file:// URI", dirOrURI, u.Scheme)
		}
		dir = u.Path
	}
	return &checkpointStorage{dir: dir, jobID: jobID}, nil
}

// store records a completed checkpoint, durably first when a directory is
// configured: a checkpoint only counts once its metadata is written.
func (s *checkpointStorage) store(c *CompletedCheckpoint) error {
	if s.dir != "" {
		dir := filepath.Join(s.dir, s.jobID, fmt.Sprintf("chk-%d", c.ID))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("checkpoint %d: %w", c.ID, err)
		}
		data, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("checkpoint %d: encode metadata: %w", c.ID, err)
		}
		tmp := filepath.Join(dir, "_metadata.inprogress")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return fmt.Errorf("checkpoint %d: %w", c.ID, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "_metadata")); err != nil {
			return fmt.Errorf("checkpoint %d: %w", c.ID, err)
		}
		c.Path = dir
	}
	s.mu.Lock()
	prev := s.latest
	s.latest = c
	s.mu.Unlock()
	// Only the latest checkpoint is retained.
	if prev != nil && prev.Path != "" {
		_ = os.RemoveAll(prev.Path)
	}
	return nil
}

func (s *checkpointStorage) latestCheckpoint() *CompletedCheckpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// LoadCheckpoint reads a checkpoint written to a directory: the chk-<n>
// directory or its _metadata file.
func LoadCheckpoint(path string) (*CompletedCheckpoint, error) {
	meta := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		meta = filepath.Join(path, "_metadata")
	}
	data, err := os.ReadFile(meta)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	var c CompletedCheckpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("load checkpoint %s: %w", meta, err)
	}
	c.Path = filepath.Dir(meta)
	return &c, nil
}

// CheckRestore verifies that a checkpoint fits a job: all of its state
// must belong to operators of the job, matched by UID (unless
// allowNonRestored), and each such operator must run at the parallelism
// it had, since rescaling keyed state is not implemented yet.
func CheckRestore(cp *CompletedCheckpoint, jg *graph.JobGraph, allowNonRestored bool) error {
	vertexOf := make(map[string]*graph.JobVertex)
	for _, v := range jg.Vertices {
		for _, op := range v.Operators {
			vertexOf[op.UID] = v
		}
	}
	for _, t := range cp.Tasks {
		for uid := range t.Operators {
			v, ok := vertexOf[uid]
			if !ok {
				if allowNonRestored {
					continue
				}
				return fmt.Errorf("restore %s: it holds state of operator %q, which the job does not have; give the operator that UID or use --allow-non-restored-state", cp.Path, uid)
			}
			if t.Parallelism != 0 && t.Parallelism != v.Parallelism {
				return fmt.Errorf("restore %s: operator %q ran at parallelism %d and now at %d; rescaling from a checkpoint is not supported yet", cp.Path, uid, t.Parallelism, v.Parallelism)
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

// errCheckpointDeclined marks a snapshot failure that aborts the
// checkpoint without failing the job.
var errCheckpointDeclined = errors.New("checkpoint declined")
