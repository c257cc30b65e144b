package stream

import (
	"fmt"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
)

// DeltaIteration is the handle a delta iteration's step function gets.
type DeltaIteration[K comparable, S any] struct {
	*Iteration
	key func(S) K
}

// DeltaIterate runs a delta iteration: the solution set holds one record
// per key (solutionKey), kept in the state backend (state.backend.type:
// the heap, or Pebble when it may exceed memory); the workset is what the
// next superstep works on. step gets the workset and returns the delta,
// records that replace the solution set's records of their keys at the
// end of the superstep, and the next workset. The iteration ends when the
// workset is empty or after maxSupersteps; the result is the solution
// set. step reads the solution set with JoinWithSolutionSet, and the
// delta must come from that join's output: each subtask's solution set
// changes once every subtask finished reading it.
func DeltaIterate[K comparable, S, W any](solution *Stream[S], workset *Stream[W], solutionKey func(S) K, maxSupersteps int,
	step func(it *DeltaIteration[K, S], workset *Stream[W]) (delta *Stream[S], next *Stream[W])) *Stream[S] {
	env := solution.env
	it := &DeltaIteration[K, S]{Iteration: newIteration(env, maxSupersteps), key: solutionKey}
	it.worksetAgg = CountAggregator(it.Iteration, "workset").index
	id := it.spec.ID
	head := TransformTwoInput(Connect(KeyBy(solution, solutionKey).s, workset), "iteration-head", "DeltaIterate",
		func(oc *runtime.OperatorContext, out runtime.Output[W]) (runtime.TwoInput[S, W], error) {
			store, err := solutionSetOf[K, S](oc, id)
			if err != nil {
				return nil, err
			}
			op := &deltaHead[K, S, W]{oc: oc, loop: out, key: solutionKey, store: store, fb: feedbackOf[W](oc, id), worksetAgg: it.worksetAgg}
			op.result = SideOutputOf(oc, iterationResultTag[S](id))
			oc.Register(op)
			return op, nil
		})
	head.node.Ops.(*runtime.NodeOps).Iteration = it.spec
	head.node.Chaining = graph.ChainHead // the head heads its task
	it.head = head.node
	delta, next := step(it, head)
	if delta == nil || next == nil || delta.env != env || next.env != env {
		env.fail(fmt.Errorf("stream: %s: the step function returned no delta or no workset of this environment", id))
		return solution
	}
	update := addNode[S, struct{}](KeyBy(delta, solutionKey).s, "iteration-solution-update", "DeltaIterate solution set update",
		oneInput(func(oc *runtime.OperatorContext, _ runtime.Output[struct{}]) (runtime.Output[S], error) {
			store, err := solutionSetOf[K, S](oc, id)
			if err != nil {
				return nil, err
			}
			op := &solutionUpdateOp[K, S]{oc: oc, key: solutionKey, store: store}
			oc.Register(op)
			return op, nil
		}))
	worksetAgg := it.worksetAgg
	tail := addNode[W, struct{}](next, "iteration-tail", "DeltaIterate workset tail", oneInput(func(oc *runtime.OperatorContext, _ runtime.Output[struct{}]) (runtime.Output[W], error) {
		op := &tailOp[W]{fb: feedbackOf[W](oc, id)}
		op.count = func(n int) { *oc.Task.Iteration().Accumulator(worksetAgg).(*int64) += int64(n) }
		oc.Register(op)
		return op, nil
	}))
	it.close(update.node, tail.node)
	for _, n := range it.joins {
		n.Parallelism, n.MaxParallelism = it.head.Parallelism, it.head.MaxParallelism
	}
	return iterationResult(head, iterationResultTag[S](id))
}

// JoinWithSolutionSet looks up every workset record's key (key) in the
// solution set of a delta iteration and calls fn with the solution set's
// record of that key (found false: none).
func JoinWithSolutionSet[K comparable, S, W, O any](it *DeltaIteration[K, S], ws *Stream[W], key func(W) K,
	fn func(w W, s S, found bool, ctx *Context, out Collector[O]) error) *Stream[O] {
	id := it.spec.ID
	out := addNode[W, O](KeyBy(ws, key).s, "join-solution-set", "JoinWithSolutionSet", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[O]) (runtime.Output[W], error) {
		op := &solutionJoinOp[K, S, W, O]{oc: oc, id: id, key: key, fn: fn, ctx: Context{oc: oc, ts: runtime.NoTimestamp},
			col: collector[O]{oc: oc, out: out, ts: runtime.NoTimestamp}}
		return op, nil
	}))
	// It reads the solution set of its subtask: it must own the same key
	// groups as the head, which DeltaIterate makes sure of.
	it.joins = append(it.joins, out.node)
	return out
}

type solutionJoinOp[K comparable, S, W, O any] struct {
	oc    *runtime.OperatorContext
	id    string
	key   func(W) K
	fn    func(W, S, bool, *Context, Collector[O]) error
	store solutionSet[K, S]
	ctx   Context
	col   collector[O]
}

func (j *solutionJoinOp[K, S, W, O]) Emit(w W, _ int64) {
	j.oc.Enter()
	if j.store == nil {
		// The head created it before the first superstep started.
		store, err := solutionSetOf[K, S](j.oc, j.id)
		if err != nil {
			j.oc.Fail(err)
		}
		j.store = store
	}
	s, found, err := j.store.get(j.key(w))
	if err != nil {
		j.oc.Fail(err)
	}
	if err := j.fn(w, s, found, &j.ctx, &j.col); err != nil {
		j.oc.Fail(err)
	}
}

func (j *solutionJoinOp[K, S, W, O]) EmitWatermark(int64) {}

// deltaHead loads its subtask's part of the solution set (input 1) and
// of the initial workset (input 2), then runs the supersteps from Finish.
type deltaHead[K comparable, S, W any] struct {
	oc         *runtime.OperatorContext
	loop       runtime.Output[W]
	result     runtime.Output[S]
	key        func(S) K
	store      solutionSet[K, S]
	fb         *feedback[W]
	worksetAgg int
	initial    []W
}

func (h *deltaHead[K, S, W]) Emit1(s S, _ int64) {
	if err := h.store.put(h.key(s), s); err != nil {
		h.oc.Fail(err)
	}
}

func (h *deltaHead[K, S, W]) Emit2(w W, _ int64)  { h.initial = append(h.initial, w) }
func (h *deltaHead[K, S, W]) EmitWatermark(int64) {}
func (h *deltaHead[K, S, W]) Open() error         { return nil }
func (h *deltaHead[K, S, W]) Close() error        { return nil }

func (h *deltaHead[K, S, W]) Finish() error {
	ti := h.oc.Task.Iteration()
	*ti.Accumulator(h.worksetAgg).(*int64) += int64(len(h.initial))
	d, err := ti.Ready()
	if err != nil {
		return err
	}
	ws := h.initial
	h.initial = nil
	for !d.Terminate {
		for _, w := range ws {
			h.loop.Emit(w, runtime.NoTimestamp)
		}
		k := ti.Superstep()
		if d, err = ti.EndSuperstep(); err != nil {
			return err
		}
		ws = h.fb.take(k)
	}
	if h.result == nil {
		return nil
	}
	return h.store.each(func(s S) { h.result.Emit(s, runtime.NoTimestamp) })
}

// solutionUpdateOp applies a superstep's delta to its subtask's solution
// set at the superstep's end.
type solutionUpdateOp[K comparable, S any] struct {
	oc    *runtime.OperatorContext
	key   func(S) K
	store solutionSet[K, S]
	delta []S
}

func (u *solutionUpdateOp[K, S]) Emit(s S, _ int64)   { u.delta = append(u.delta, s) }
func (u *solutionUpdateOp[K, S]) EmitWatermark(int64) {}
func (u *solutionUpdateOp[K, S]) Open() error         { return nil }
func (u *solutionUpdateOp[K, S]) Finish() error       { return nil }
func (u *solutionUpdateOp[K, S]) Close() error        { return nil }

func (u *solutionUpdateOp[K, S]) EndSuperstep(int64) error {
	for _, s := range u.delta {
		if err := u.store.put(u.key(s), s); err != nil {
			return err
		}
	}
	clear(u.delta)
	u.delta = u.delta[:0]
	return nil
}

// solutionSet is one subtask's part of a delta iteration's solution set.
// The head writes it before the first superstep, the join reads it during
// supersteps and the update writes it at their ends: different
// goroutines, never at the same time.
type solutionSet[K comparable, S any] interface {
	get(k K) (S, bool, error)
	put(k K, s S) error
	each(fn func(S)) error
}

// solutionSetOf returns the solution set of the task's subtask, creating
// it in the backend state.backend.type names.
func solutionSetOf[K comparable, S any](oc *runtime.OperatorContext, id string) (solutionSet[K, S], error) {
	key := fmt.Sprintf("%s/solution/%d", id, oc.Task.Subtask())
	var err error
	v := oc.Task.Shared(key, func() any {
		if config.StateBackend.Get(oc.Config) != config.StateBackendPebble {
			return &heapSolutionSet[K, S]{m: make(map[K]S)}
		}
		var p *pebbleSolutionSet[K, S]
		p, err = newPebbleSolutionSet[K, S](config.TmpDirs.Get(oc.Config), config.PebbleBlockCacheSize.Get(oc.Config))
		if err != nil {
			return nil
		}
		oc.OnCleanup(p.close)
		return p
	})
	if err != nil {
		return nil, fmt.Errorf("%s: solution set in Pebble: %w", id, err)
	}
	if v == nil {
		return nil, fmt.Errorf("%s: the solution set of subtask %d could not be created", id, oc.Task.Subtask()+1)
	}
	return v.(solutionSet[K, S]), nil
}

type heapSolutionSet[K comparable, S any] struct {
	mu sync.RWMutex
	m  map[K]S
}

func (h *heapSolutionSet[K, S]) get(k K) (S, bool, error) {
	h.mu.RLock()
	s, ok := h.m[k]
	h.mu.RUnlock()
	return s, ok, nil
}

func (h *heapSolutionSet[K, S]) put(k K, s S) error {
	h.mu.Lock()
	h.m[k] = s
	h.mu.Unlock()
	return nil
}

func (h *heapSolutionSet[K, S]) each(fn func(S)) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, s := range h.m {
		fn(s)
	}
	return nil
}

// pebbleSolutionSet keeps the solution set in a Pebble store of its own,
// keys and records encoded with their codecs.
type pebbleSolutionSet[K comparable, S any] struct {
	dir string
	db  *pebble.DB
	kc  codec.Codec[K]
	sc  codec.Codec[S]
	// kbuf and vbuf are reused by put, which one goroutine at a time calls.
	kbuf, vbuf []byte
	mu         sync.Mutex
}

func newPebbleSolutionSet[K comparable, S any](tmp string, cacheSize int64) (*pebbleSolutionSet[K, S], error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, err
	}
	sc, err := codec.For[S]()
	if err != nil {
		return nil, err
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	dir, err := os.MkdirTemp(tmp, "weir-solution-")
	if err != nil {
		return nil, err
	}
	cache := pebble.NewCache(max(cacheSize, 8<<20))
	defer cache.Unref()
	db, err := pebble.Open(dir, &pebble.Options{Cache: cache, DisableWAL: true, Logger: quietPebble{}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &pebbleSolutionSet[K, S]{dir: dir, db: db, kc: kc, sc: sc}, nil
}

func (p *pebbleSolutionSet[K, S]) get(k K) (S, bool, error) {
	var zero S
	key := p.kc.Append(nil, k)
	v, closer, err := p.db.Get(key)
	if err == pebble.ErrNotFound {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, err
	}
	defer closer.Close()
	s, _, err := p.sc.Decode(v)
	if err != nil {
		return zero, false, fmt.Errorf("solution set: decode: %w", err)
	}
	return s, true, nil
}

func (p *pebbleSolutionSet[K, S]) put(k K, s S) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kbuf = p.kc.Append(p.kbuf[:0], k)
	p.vbuf = p.sc.Append(p.vbuf[:0], s)
	return p.db.Set(p.kbuf, p.vbuf, pebble.NoSync)
}

func (p *pebbleSolutionSet[K, S]) each(fn func(S)) error {
	iter, err := p.db.NewIter(nil)
	if err != nil {
		return err
	}
	for iter.First(); iter.Valid(); iter.Next() {
		s, _, err := p.sc.Decode(iter.Value())
		if err != nil {
			iter.Close()
			return fmt.Errorf("solution set: decode: %w", err)
		}
		fn(s)
	}
	return iter.Close()
}

func (p *pebbleSolutionSet[K, S]) close() {
	p.db.Close()
	os.RemoveAll(p.dir)
}

// quietPebble keeps Pebble's informational logging out of the job's
// output.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
