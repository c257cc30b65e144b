package stream

import (
	"fmt"

	"github.com/weirproject/weir/internal/runtime"
)

// KeyedConnectedStreams pairs two keyed streams with the same key type:
// records of both inputs with the same key meet in the same subtask and
// share its keyed state and timers.
type KeyedConnectedStreams[K comparable, A, B any] struct {
	a *KeyedStream[K, A]
	b *KeyedStream[K, B]
}

// ConnectKeyed pairs two keyed streams.
func ConnectKeyed[K comparable, A, B any](a *KeyedStream[K, A], b *KeyedStream[K, B]) *KeyedConnectedStreams[K, A, B] {
	if a.s.env != b.s.env {
		a.s.env.fail(fmt.Errorf("stream: ConnectKeyed of streams from different environments"))
	}
	return &KeyedConnectedStreams[K, A, B]{a: a, b: b}
}

// KeyedCoProcessFunction processes two keyed inputs with keyed state and
// timers (implement KeyedTimerHandler and KeyedOpener as for
// KeyedProcess): the building block of unbounded joins.
type KeyedCoProcessFunction[K comparable, A, B, U any] interface {
	ProcessElement1(v A, ctx *KeyedContext[K], out Collector[U]) error
	ProcessElement2(v B, ctx *KeyedContext[K], out Collector[U]) error
}

// KeyedCoProcess applies a keyed co-process function.
func KeyedCoProcess[K comparable, A, B, U any](kcs *KeyedConnectedStreams[K, A, B], fn KeyedCoProcessFunction[K, A, B, U]) *Stream[U] {
	return keyedCoProcess(kcs, "keyed-co-process", "KeyedCoProcess", fn)
}

func keyedCoProcess[K comparable, A, B, U any](kcs *KeyedConnectedStreams[K, A, B], kind, name string, fn KeyedCoProcessFunction[K, A, B, U]) *Stream[U] {
	cs := &ConnectedStreams[A, B]{a: kcs.a.s, b: kcs.b.s}
	return TransformTwoInput(cs, kind, name, func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.TwoInput[A, B], error) {
		fn := Instance(fn)
		op := &keyedCoProcessOp[K, A, B, U]{fn: fn, key1: kcs.a.key, key2: kcs.b.key}
		sorted1, err := newSortedKeyedInput[K, A](oc, kcs.a.key)
		if err != nil {
			return nil, err
		}
		sorted2, err := newSortedKeyedInput[K, B](oc, kcs.b.key)
		if err != nil {
			return nil, err
		}
		oneKey := sorted1 != nil && sorted2 != nil
		if err := op.init(oc, fn, out, kcs.a.hasher, oneKey); err != nil {
			return nil, err
		}
		if oneKey {
			op.sorted1, op.sorted2 = sorted1, sorted2
		}
		oc.Register(op)
		return op, nil
	})
}

type keyedCoProcessOp[K comparable, A, B, U any] struct {
	keyedCore[K, U]
	fn   KeyedCoProcessFunction[K, A, B, U]
	key1 func(A) K
	key2 func(B) K
	// sorted1 and sorted2, in batch mode, gather the inputs to process
	// them key by key when both ended.
	sorted1 *sortedKeyedInput[K, A]
	sorted2 *sortedKeyedInput[K, B]
}

func (p *keyedCoProcessOp[K, A, B, U]) Emit1(v A, ts int64) {
	if p.sorted1 != nil {
		p.sorted1.add(v, ts)
		return
	}
	p.begin(p.key1(v), ts)
	if err := p.fn.ProcessElement1(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

func (p *keyedCoProcessOp[K, A, B, U]) Emit2(v B, ts int64) {
	if p.sorted2 != nil {
		p.sorted2.add(v, ts)
		return
	}
	p.begin(p.key2(v), ts)
	if err := p.fn.ProcessElement2(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

// EmitWatermark: in batch mode event time does not advance while the
// inputs are gathered.
func (p *keyedCoProcessOp[K, A, B, U]) EmitWatermark(wm int64) {
	if p.sorted1 == nil {
		p.keyedCore.EmitWatermark(wm)
	}
}

// Finish processes the gathered inputs key by key, each key's records of
// both inputs in timestamp order, then passes on the maximum watermark.
func (p *keyedCoProcessOp[K, A, B, U]) Finish() error {
	if p.sorted1 != nil {
		err := eachSortedPair(p.sorted1, p.sorted2, func(key K, v A, ts int64) error {
			p.begin(key, ts)
			return p.fn.ProcessElement1(v, &p.ctx, &p.col)
		}, func(key K, v B, ts int64) error {
			p.begin(key, ts)
			return p.fn.ProcessElement2(v, &p.ctx, &p.col)
		}, p.endKey)
		if err != nil {
			return err
		}
		p.afterLastKey()
	}
	return p.keyedCore.Finish()
}
