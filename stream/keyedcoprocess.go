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
		if err := op.init(oc, fn, out, kcs.a.hasher, false); err != nil {
			return nil, err
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
}

func (p *keyedCoProcessOp[K, A, B, U]) Emit1(v A, ts int64) {
	p.begin(p.key1(v), ts)
	if err := p.fn.ProcessElement1(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

func (p *keyedCoProcessOp[K, A, B, U]) Emit2(v B, ts int64) {
	p.begin(p.key2(v), ts)
	if err := p.fn.ProcessElement2(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}
