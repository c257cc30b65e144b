package stream

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
)

// IterativeStream is a stream whose records may come back (Flink's
// DataStream iterate): what CloseWith's feedback stream carries re-enters
// at the head, record by record, without supersteps. The head passes on
// its input and the feedback; after its input ended it waits for
// feedback, and ends once none arrived for maxWait.
//
// Feedback records travel from the tail of subtask i to the head of
// subtask i in the same process, through a queue that never blocks the
// tail (a bounded queue could deadlock the loop under backpressure), so
// they are held in memory however many there are. They are not part of
// checkpoints: a job with an IterativeStream takes none (Execute refuses
// a checkpoint interval), and after a failure it starts over.
type IterativeStream[T any] struct {
	*Stream[T]
	id      string
	maxWait time.Duration
	closed  bool
}

// IterateStream starts a loop at input; feed records back with CloseWith.
func IterateStream[T any](input *Stream[T], maxWait time.Duration) *IterativeStream[T] {
	env := input.env
	env.iterations++
	id := fmt.Sprintf("iteration-%d", env.iterations)
	if maxWait <= 0 {
		env.fail(fmt.Errorf("stream: %s: maxWait %v, want > 0 (how long the head waits for feedback after its input ended)", id, maxWait))
	}
	head := addNode[T, T](input, "iteration-stream-head", "IterateStream", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[T]) (runtime.Output[T], error) {
		op := &streamHead[T]{oc: oc, out: out, q: feedbackQueueOf[T](oc, id), maxWait: maxWait}
		oc.Register(op)
		return op, nil
	}))
	head.node.Chaining = graph.ChainHead
	return &IterativeStream[T]{Stream: head, id: id, maxWait: maxWait}
}

// CloseWith feeds the records of feedback back into the head; it runs
// with the head's parallelism, each subtask feeding its own head.
func (it *IterativeStream[T]) CloseWith(feedback *Stream[T]) {
	if it.closed {
		it.env.fail(fmt.Errorf("stream: %s closed twice", it.id))
		return
	}
	it.closed = true
	id := it.id
	tail := addNode[T, struct{}](feedback, "iteration-stream-tail", "IterateStream feedback", oneInput(func(oc *runtime.OperatorContext, _ runtime.Output[struct{}]) (runtime.Output[T], error) {
		return &streamTail[T]{q: feedbackQueueOf[T](oc, id)}, nil
	}))
	tail.node.Parallelism, tail.node.MaxParallelism = it.node.Parallelism, it.node.MaxParallelism
	tail.node.SlotSharingGroup = it.node.SlotSharingGroup
}

// feedbackQueue is unbounded; signal (capacity 1) says it is not empty.
type feedbackQueue[T any] struct {
	mu     sync.Mutex
	vs     []T
	ts     []int64
	signal chan struct{}
}

func feedbackQueueOf[T any](oc *runtime.OperatorContext, id string) *feedbackQueue[T] {
	key := fmt.Sprintf("%s/stream-feedback/%d", id, oc.Task.Subtask())
	return oc.Task.Shared(key, func() any { return &feedbackQueue[T]{signal: make(chan struct{}, 1)} }).(*feedbackQueue[T])
}

// push adds a record; only the first record of an empty queue signals,
// so that the record path sends on no channel while the head has not
// drained yet.
func (q *feedbackQueue[T]) push(v T, ts int64) {
	q.mu.Lock()
	first := len(q.vs) == 0
	q.vs = append(q.vs, v)
	q.ts = append(q.ts, ts)
	q.mu.Unlock()
	if first {
		select {
		case q.signal <- struct{}{}:
		default:
		}
	}
}

func (q *feedbackQueue[T]) take() ([]T, []int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	vs, ts := q.vs, q.ts
	q.vs, q.ts = nil, nil
	return vs, ts
}

type streamTail[T any] struct{ q *feedbackQueue[T] }

func (t *streamTail[T]) Emit(v T, ts int64)  { t.q.push(v, ts) }
func (t *streamTail[T]) EmitWatermark(int64) {}

// streamHead passes on its input and the feedback. While the input runs,
// a goroutine of its own turns the queue's signal into a drain in the
// task's mailbox, so that feedback is emitted on the task's goroutine.
type streamHead[T any] struct {
	oc      *runtime.OperatorContext
	out     runtime.Output[T]
	q       *feedbackQueue[T]
	maxWait time.Duration
	stop    context.CancelFunc
	stopped chan struct{}
}

func (h *streamHead[T]) Emit(v T, ts int64) { h.out.Emit(v, ts) }

// EmitWatermark passes on the input's watermarks but the last: after the
// input ended, feedback may still come.
func (h *streamHead[T]) EmitWatermark(wm int64) {
	if wm != runtime.MaxWatermark {
		h.out.EmitWatermark(wm)
	}
}

func (h *streamHead[T]) Open() error {
	ctx, cancel := context.WithCancel(h.oc.Task.Context())
	h.stop, h.stopped = cancel, make(chan struct{})
	mailbox := h.oc.Task.Mailbox()
	go func() {
		defer close(h.stopped)
		for {
			select {
			case <-h.q.signal:
			case <-ctx.Done():
				return
			}
			select {
			case mailbox <- h.drain:
			case <-ctx.Done():
				return
			}
		}
	}()
	return nil
}

func (h *streamHead[T]) drain() {
	vs, ts := h.q.take()
	for i, v := range vs {
		h.out.Emit(v, ts[i])
	}
}

func (h *streamHead[T]) halt() {
	if h.stop != nil {
		h.stop()
		<-h.stopped
		h.stop = nil
	}
}

// Finish keeps passing on feedback until none came for maxWait.
func (h *streamHead[T]) Finish() error {
	h.halt()
	ctx := h.oc.Task.Context()
	timer := time.NewTimer(h.maxWait)
	defer timer.Stop()
	for {
		h.drain()
		h.oc.Task.FlushOutputs()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(h.maxWait)
		select {
		case <-h.q.signal:
		case <-timer.C:
			if vs, ts := h.q.take(); len(vs) > 0 {
				// Feedback that raced the timer: pass it on and wait again.
				for i, v := range vs {
					h.out.Emit(v, ts[i])
				}
				continue
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (h *streamHead[T]) Close() error {
	h.halt()
	return nil
}
