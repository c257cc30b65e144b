package stream

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

type sinkOp[T any] struct {
	oc     *runtime.OperatorContext
	sink   connector.Sink[T]
	writer connector.SinkWriter[T]
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
	return nil
}

func (s *sinkOp[T]) Finish() error {
	s.oc.Enter()
	return s.writer.Flush()
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

// Collected holds what a Collect sink received, for tests and small jobs
// run in this process.
type Collected[T any] struct {
	// Sink is the collect sink's handle, for its settings.
	*Sink
	mu    sync.Mutex
	parts [][]T
}

// Collect adds a sink that keeps every record in memory; read them with
// Values after the job ends.
func Collect[T any](s *Stream[T]) *Collected[T] {
	c := &Collected[T]{}
	c.Sink = SinkTo[T](s, &collectSink[T]{c: c}, "Collect")
	return c
}

// Values returns the records received, subtask by subtask, each in arrival
// order.
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
}

type collectSink[T any] struct{ c *Collected[T] }

func (s *collectSink[T]) NewWriter(_ context.Context, sc connector.SinkContext) (connector.SinkWriter[T], error) {
	return &collectWriter[T]{c: s.c}, nil
}

type collectWriter[T any] struct {
	c    *Collected[T]
	vals []T
}

func (w *collectWriter[T]) Write(v T, _ int64) error {
	w.vals = append(w.vals, v)
	return nil
}

func (w *collectWriter[T]) Flush() error {
	w.c.mu.Lock()
	w.c.parts = append(w.c.parts, w.vals)
	w.c.mu.Unlock()
	w.vals = nil
	return nil
}

func (w *collectWriter[T]) Close() error { return nil }
