package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
)

// Sink is the handle of a sink operator, for its settings.
type Sink struct {
	env  *Environment
	node *graph.StreamNode
}

// Name sets the sink's name.
func (s *Sink) Name(name string) *Sink { s.node.Name = name; return s }

// UID sets the sink's stable ID.
func (s *Sink) UID(uid string) *Sink { s.node.UID = uid; return s }

// SetParallelism sets the sink's number of parallel subtasks.
func (s *Sink) SetParallelism(n int) *Sink { setParallelism(s.env, s.node, n); return s }

// SlotSharingGroup puts the sink in a slot sharing group.
func (s *Sink) SlotSharingGroup(group string) *Sink { s.node.SlotSharingGroup = group; return s }

// DisableChaining keeps the sink out of any chain.
func (s *Sink) DisableChaining() *Sink { s.node.Chaining = graph.ChainNever; return s }

// StartNewChain starts a new chain at the sink.
func (s *Sink) StartNewChain() *Sink { s.node.Chaining = graph.ChainHead; return s }

// SinkTo writes the stream to a sink.
func SinkTo[T any](s *Stream[T], sink connector.Sink[T], name string) *Sink {
	n := s.env.graph.AddNode(&graph.StreamNode{Kind: "sink", Name: name, Inputs: 1})
	n.Ops = oneInput(func(oc *runtime.OperatorContext, _ runtime.Output[struct{}]) (runtime.Output[T], error) {
		op := &sinkOp[T]{oc: oc, sink: sink}
		oc.Register(op)
		return op, nil
	})
	connectInput(s, n, 1)
	return &Sink{env: s.env, node: n}
}

// sinkOp drives a sink writer. A writer that implements
// connector.Committer gets exactly-once output: at every checkpoint it
// prepares what it wrote, the prepared transactions are part of the
// checkpoint, and they are committed when the checkpoint completes (or,
// after a failure, on recovery), or when the whole job finished.
type sinkOp[T any] struct {
	oc        *runtime.OperatorContext
	sink      connector.Sink[T]
	writer    connector.SinkWriter[T]
	committer connector.Committer
	pending   []pendingCommit
	restored  [][]byte
}

// pendingCommit is a prepared transaction waiting for its checkpoint.
type pendingCommit struct {
	Checkpoint  int64
	Committable []byte
}

func (s *sinkOp[T]) Emit(v T, ts int64) {
	s.oc.Enter()
	if err := s.writer.Write(v, ts); err != nil {
		s.oc.Fail(err)
	}
}

func (s *sinkOp[T]) EmitWatermark(int64) {}

func (s *sinkOp[T]) Open() error {
	s.oc.Enter()
	t := s.oc.Task
	w, err := s.sink.NewWriter(t.Context(), connector.SinkContext{Subtask: t.Subtask(), Parallelism: t.Parallelism(), AttemptNumber: t.Attempt()})
	if err != nil {
		return err
	}
	s.writer = w
	s.committer, _ = w.(connector.Committer)
	if len(s.restored) > 0 {
		if s.committer == nil {
			return fmt.Errorf("restored transactions for a sink whose writer %T cannot commit", w)
		}
		// Transactions of the restored checkpoint may not have been
		// committed before the failure; Commit is idempotent.
		if err := s.committer.Commit(s.restored); err != nil {
			return fmt.Errorf("commit restored transactions: %w", err)
		}
		s.restored = nil
	}
	return nil
}

// SnapshotState prepares the transaction of the records since the last
// checkpoint; a writer without transactions only flushes (at least once).
func (s *sinkOp[T]) SnapshotState(id int64) ([]byte, error) {
	s.oc.Enter()
	if s.committer == nil {
		return nil, s.writer.Flush()
	}
	c, err := s.committer.PrepareCommit(id)
	if err != nil {
		return nil, err
	}
	s.pending = append(s.pending, pendingCommit{Checkpoint: id, Committable: c})
	return json.Marshal(s.pending)
}

func (s *sinkOp[T]) RestoreState(data []byte) error {
	var pending []pendingCommit
	if err := json.Unmarshal(data, &pending); err != nil {
		return fmt.Errorf("decode sink transactions: %w", err)
	}
	for _, p := range pending {
		s.restored = append(s.restored, p.Committable)
	}
	return nil
}

// NotifyCheckpointComplete commits the transactions the checkpoint covers.
func (s *sinkOp[T]) NotifyCheckpointComplete(id int64) error {
	var commit [][]byte
	keep := s.pending[:0]
	for _, p := range s.pending {
		if p.Checkpoint <= id {
			commit = append(commit, p.Committable)
		} else {
			keep = append(keep, p)
		}
	}
	s.pending = keep
	if len(commit) == 0 {
		return nil
	}
	s.oc.Enter()
	return s.committer.Commit(commit)
}

func (s *sinkOp[T]) Finish() error {
	s.oc.Enter()
	if s.committer == nil {
		return s.writer.Flush()
	}
	c, err := s.committer.PrepareCommit(math.MaxInt64)
	if err != nil {
		return err
	}
	s.pending = append(s.pending, pendingCommit{Checkpoint: math.MaxInt64, Committable: c})
	return nil
}

// CommitFinal commits what the sink prepared after the last checkpoint,
// once the whole job finished.
func (s *sinkOp[T]) CommitFinal() error {
	if s.committer == nil || len(s.pending) == 0 {
		return nil
	}
	var commit [][]byte
	for _, p := range s.pending {
		commit = append(commit, p.Committable)
	}
	s.pending = nil
	return s.committer.Commit(commit)
}

func (s *sinkOp[T]) Close() error {
	if s.writer == nil {
		return nil
	}
	s.oc.Enter()
	if a, ok := s.writer.(interface{ Abort() error }); ok && s.oc.Task.Failed() {
		// A failed task must not publish what it wrote since the last
		// commit.
		return a.Abort()
	}
	return s.writer.Close()
}

// Print writes every record as a line to the environment's output
// (stdout by default): v.String() for a fmt.Stringer, fmt.Sprint(v)
// otherwise.
func Print[T any](s *Stream[T]) *Sink {
	return SinkTo[T](s, &printSink[T]{w: &lockedWriter{w: s.env.out}}, "Print to Std. Out")
}

// lockedWriter serializes the writes of the parallel print subtasks; each
// write holds whole lines, so lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type printSink[T any] struct{ w *lockedWriter }

func (p *printSink[T]) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[T], error) {
	return &printWriter[T]{w: p.w}, nil
}

type printWriter[T any] struct {
	w   *lockedWriter
	buf bytes.Buffer
}

func (p *printWriter[T]) Write(v T, _ int64) error {
	if s, ok := any(v).(fmt.Stringer); ok {
		p.buf.WriteString(s.String())
	} else {
		fmt.Fprint(&p.buf, v)
	}
	p.buf.WriteByte('\n')
	if p.buf.Len() >= 32<<10 {
		return p.Flush()
	}
	return nil
}

func (p *printWriter[T]) Flush() error {
	if p.buf.Len() == 0 {
		return nil
	}
	_, err := p.w.Write(p.buf.Bytes())
	p.buf.Reset()
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	return nil
}

func (p *printWriter[T]) Close() error { return nil }

// Collected holds what a Collect sink committed, for tests and small jobs
// run in this process. The sink is transactional: records become visible
// when the checkpoint after them completes or the job finishes, so after
// failures and restarts Values holds each record exactly once.
type Collected[T any] struct {
	// Sink is the collect sink's handle, for its settings.
	*Sink
	mu        sync.Mutex
	parts     [][]T
	committed map[string]bool
	// staged holds prepared transactions by ID: the sink lives in this
	// process, so a transaction needs only its ID in the checkpoint.
	staged map[string][]T
}

// Collect adds a sink that keeps every record in memory; read them with
// Values after the job ends.
func Collect[T any](s *Stream[T]) *Collected[T] {
	c := &Collected[T]{committed: make(map[string]bool), staged: make(map[string][]T)}
	c.Sink = SinkTo[T](s, &collectSink[T]{c: c}, "Collect")
	return c
}

// Values returns the committed records, transaction by transaction, each
// in arrival order.
func (c *Collected[T]) Values() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []T
	for _, p := range c.parts {
		out = append(out, p...)
	}
	return out
}

// Reset forgets the records received, to execute the job again.
func (c *Collected[T]) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parts = nil
	c.committed = make(map[string]bool)
	c.staged = make(map[string][]T)
}

type collectSink[T any] struct{ c *Collected[T] }

func (s *collectSink[T]) NewWriter(_ context.Context, sc connector.SinkContext) (connector.SinkWriter[T], error) {
	return &collectWriter[T]{c: s.c, sc: sc}, nil
}

type collectWriter[T any] struct {
	c    *Collected[T]
	sc   connector.SinkContext
	vals []T
}

func (w *collectWriter[T]) Write(v T, _ int64) error {
	w.vals = append(w.vals, v)
	return nil
}

// PrepareCommit stages the records since the last checkpoint as a
// transaction with an ID unique in the job.
func (w *collectWriter[T]) PrepareCommit(checkpointID int64) ([]byte, error) {
	txn := fmt.Sprintf("%d-%d-%d", w.sc.Subtask, w.sc.AttemptNumber, checkpointID)
	w.c.mu.Lock()
	w.c.staged[txn] = w.vals
	w.c.mu.Unlock()
	w.vals = nil
	return []byte(txn), nil
}

// Commit makes staged transactions visible, each once.
func (w *collectWriter[T]) Commit(committables [][]byte) error {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	for _, b := range committables {
		txn := string(b)
		if w.c.committed[txn] {
			continue
		}
		vals, ok := w.c.staged[txn]
		if !ok {
			return fmt.Errorf("collect: transaction %s is unknown: a collect sink can only be restored in the process that ran it", txn)
		}
		delete(w.c.staged, txn)
		w.c.committed[txn] = true
		w.c.parts = append(w.c.parts, vals)
	}
	return nil
}

func (w *collectWriter[T]) Flush() error { return nil }
func (w *collectWriter[T]) Close() error { return nil }
