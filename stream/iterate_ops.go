package stream

import (
	"fmt"

	"github.com/weirproject/weir/internal/runtime"
)

// Operators for the loops of iterations: each reads a loop-invariant
// ("static") input once, keeps it for every superstep, and works on the
// loop's records of the running superstep. Outside iterations they run
// once over their whole input, as batch operators.

// JoinWithStatic joins the loop's records with a static input on their
// key: a hash join whose build side, the static input, is read once and
// kept in memory for every superstep. fn gets each loop record with the
// static records of its key (none: matches is empty).
func JoinWithStatic[K comparable, L, S, O any](loop *KeyedStream[K, L], static *KeyedStream[K, S], fn func(l L, matches []S, ctx *Context, out Collector[O]) error) *Stream[O] {
	return TransformTwoInput(Connect(loop.s, static.s), "join-static", "JoinWithStatic", func(oc *runtime.OperatorContext, out runtime.Output[O]) (runtime.TwoInput[L, S], error) {
		op := &joinStaticOp[K, L, S, O]{oc: oc, loopKey: loop.key, staticKey: static.key, fn: fn, build: make(map[K][]S),
			ctx: Context{oc: oc, ts: runtime.NoTimestamp}, col: collector[O]{oc: oc, out: out, ts: runtime.NoTimestamp}}
		oc.Register(op)
		return op, nil
	})
}

type joinStaticOp[K comparable, L, S, O any] struct {
	oc        *runtime.OperatorContext
	loopKey   func(L) K
	staticKey func(S) K
	fn        func(L, []S, *Context, Collector[O]) error
	build     map[K][]S
	// built: the static input ended (it has by the end of the first
	// superstep); until then loop records wait in pending.
	built   bool
	pending []L
	ctx     Context
	col     collector[O]
}

func (j *joinStaticOp[K, L, S, O]) Emit1(v L, _ int64) {
	if !j.built {
		j.pending = append(j.pending, v)
		return
	}
	j.probe(v)
}

func (j *joinStaticOp[K, L, S, O]) probe(v L) {
	j.oc.Enter()
	if err := j.fn(v, j.build[j.loopKey(v)], &j.ctx, &j.col); err != nil {
		j.oc.Fail(err)
	}
}

func (j *joinStaticOp[K, L, S, O]) Emit2(v S, _ int64) {
	k := j.staticKey(v)
	j.build[k] = append(j.build[k], v)
}

func (j *joinStaticOp[K, L, S, O]) EmitWatermark(int64) {}
func (j *joinStaticOp[K, L, S, O]) Open() error         { return openFunction(j.oc, j.fn, &j.ctx) }
func (j *joinStaticOp[K, L, S, O]) Close() error        { return closeFunction(j.oc, j.fn) }

// EndSuperstep: the static input has ended by now (a superstep ends only
// once every input from outside the loop did), so the waiting records can
// be joined.
func (j *joinStaticOp[K, L, S, O]) EndSuperstep(int64) error { return j.drain() }

// Finish joins what waited when the operator runs outside a loop.
func (j *joinStaticOp[K, L, S, O]) Finish() error { return j.drain() }

func (j *joinStaticOp[K, L, S, O]) drain() error {
	j.built = true
	for _, v := range j.pending {
		j.probe(v)
	}
	clear(j.pending)
	j.pending = nil
	return nil
}

// MapWithBroadcastSet calls fn for every record of the static input with
// all the records the loop stream set carried in the running superstep
// (Flink's broadcast set): set is broadcast to every subtask, the static
// input is read once and kept. fn runs at the end of each superstep.
func MapWithBroadcastSet[S, B, O any](static *Stream[S], set *Stream[B], fn func(v S, set []B, ctx *Context, out Collector[O]) error) *Stream[O] {
	return TransformTwoInput(Connect(static, set.Broadcast()), "map-broadcast-set", "MapWithBroadcastSet", func(oc *runtime.OperatorContext, out runtime.Output[O]) (runtime.TwoInput[S, B], error) {
		op := &broadcastSetOp[S, B, O]{oc: oc, fn: fn, ctx: Context{oc: oc, ts: runtime.NoTimestamp}, col: collector[O]{oc: oc, out: out, ts: runtime.NoTimestamp}}
		oc.Register(op)
		return op, nil
	})
}

type broadcastSetOp[S, B, O any] struct {
	oc     *runtime.OperatorContext
	fn     func(S, []B, *Context, Collector[O]) error
	static []S
	set    []B
	ctx    Context
	col    collector[O]
}

func (m *broadcastSetOp[S, B, O]) Emit1(v S, _ int64)  { m.static = append(m.static, v) }
func (m *broadcastSetOp[S, B, O]) Emit2(v B, _ int64)  { m.set = append(m.set, v) }
func (m *broadcastSetOp[S, B, O]) EmitWatermark(int64) {}
func (m *broadcastSetOp[S, B, O]) Open() error         { return openFunction(m.oc, m.fn, &m.ctx) }
func (m *broadcastSetOp[S, B, O]) Close() error        { return closeFunction(m.oc, m.fn) }

func (m *broadcastSetOp[S, B, O]) EndSuperstep(int64) error {
	m.apply()
	clear(m.set)
	m.set = m.set[:0]
	return nil
}

// Finish applies the set once when the operator runs outside a loop.
func (m *broadcastSetOp[S, B, O]) Finish() error {
	if m.oc.Task.Iteration() == nil {
		m.apply()
	}
	return nil
}

func (m *broadcastSetOp[S, B, O]) apply() {
	for _, v := range m.static {
		m.oc.Enter()
		if err := m.fn(v, m.set, &m.ctx, &m.col); err != nil {
			m.oc.Fail(fmt.Errorf("MapWithBroadcastSet: %w", err))
		}
	}
}
