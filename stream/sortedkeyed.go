package stream

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/runtime"
)

// In batch mode a keyed process function sees its input key by key, as in
// Flink's batch execution of the DataStream API: the operator gathers its
// input sorted by key and, within a key, by timestamp (spilling sorted
// runs to io.tmp.dirs past its share of taskmanager.memory.managed.size),
// and when the input ends it processes one key after another, with state
// for that key only. Event time does not advance within a key: the
// watermark stays at its minimum, and at the end of each key every timer
// the key set fires, event-time timers first, then processing-time ones,
// each in timestamp order; then the key's state is dropped. Watermarks
// from upstream are not passed on; the maximum watermark follows the last
// key. Results equal those of streaming mode for every function whose
// output does not depend on the order in which keys interleave.

// stamped is a record with its timestamp, as a sorted run holds it.
type stamped[T any] struct {
	v  T
	ts int64
}

type stampedCodec[T any] struct{ c codec.Codec[T] }

func (s stampedCodec[T]) Append(dst []byte, v stamped[T]) []byte {
	return codec.Int64.Append(s.c.Append(dst, v.v), v.ts)
}

func (s stampedCodec[T]) Decode(src []byte) (stamped[T], int, error) {
	v, n, err := s.c.Decode(src)
	if err != nil {
		return stamped[T]{}, 0, err
	}
	ts, m, err := codec.Int64.Decode(src[n:])
	return stamped[T]{v, ts}, n + m, err
}

// keyTime is the sort key of a stamped record.
type keyTime[K any] struct {
	key K
	ts  int64
}

// keyTimeCodec encodes the key, then the timestamp in 8 big-endian bytes
// with the sign bit flipped: byte order is then key order (encodings are
// self-delimiting, so one key's encoding never prefixes another's) and,
// within a key, time order.
type keyTimeCodec[K any] struct{ c codec.Codec[K] }

func (k keyTimeCodec[K]) Append(dst []byte, v keyTime[K]) []byte {
	return binary.BigEndian.AppendUint64(k.c.Append(dst, v.key), uint64(v.ts)^(1<<63))
}

func (k keyTimeCodec[K]) Decode(src []byte) (keyTime[K], int, error) {
	key, n, err := k.c.Decode(src)
	if err != nil {
		return keyTime[K]{}, 0, err
	}
	if len(src) < n+8 {
		return keyTime[K]{}, 0, fmt.Errorf("sort key without its timestamp: %w", codec.ErrCorrupt)
	}
	return keyTime[K]{key, int64(binary.BigEndian.Uint64(src[n:]) ^ (1 << 63))}, n + 8, nil
}

// sortedKeyedInput gathers a keyed operator's input for batch execution.
type sortedKeyedInput[K comparable, T any] struct {
	in  *sortedInput[keyTime[K], stamped[T]]
	rec stampedCodec[T]
	key func(T) K
}

// newSortedKeyedInput returns nil outside batch mode, inside iterations
// (whose supersteps end without the input ending), and when K or T has no
// codec: the operator then processes records as they come.
func newSortedKeyedInput[K comparable, T any](oc *runtime.OperatorContext, key func(T) K) (*sortedKeyedInput[K, T], error) {
	if !oc.Batch || oc.Task.Iteration() != nil {
		return nil, nil
	}
	kc, err := codec.For[K]()
	if err != nil {
		return nil, nil
	}
	tc, err := codec.For[T]()
	if err != nil {
		return nil, nil
	}
	rec := stampedCodec[T]{tc}
	in := newSortedInputWith(oc, codec.Codec[keyTime[K]](keyTimeCodec[K]{kc}), codec.Codec[stamped[T]](rec),
		func(s stamped[T]) keyTime[K] { return keyTime[K]{key(s.v), s.ts} })
	return &sortedKeyedInput[K, T]{in: in, rec: rec, key: key}, nil
}

func (s *sortedKeyedInput[K, T]) add(v T, ts int64) { s.in.add(stamped[T]{v, ts}) }

// each calls fn for every record in key and time order, and end after
// the last record of each key.
func (s *sortedKeyedInput[K, T]) each(fn func(key K, v T, ts int64) error, end func(key K)) error {
	m, err := s.in.sorted()
	if err != nil {
		return err
	}
	var cur K
	started := false
	for {
		_, val, ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		r, _, err := s.rec.Decode(val)
		if err != nil {
			return fmt.Errorf("sorted input: %w", err)
		}
		k := s.key(r.v)
		if started && k != cur {
			end(cur)
		}
		cur, started = k, true
		if err := fn(k, r.v, r.ts); err != nil {
			return err
		}
	}
	if started {
		end(cur)
	}
	s.in.runs.remove()
	return nil
}

// EmitWatermark: in batch mode event time does not advance while the
// input is gathered.
func (p *keyedProcessOp[K, T, U]) EmitWatermark(wm int64) {
	if p.sorted == nil {
		p.keyedCore.EmitWatermark(wm)
	}
}

// Finish processes the gathered input key by key, then passes on the
// maximum watermark.
func (p *keyedProcessOp[K, T, U]) Finish() error {
	if p.sorted != nil {
		err := p.sorted.each(func(key K, v T, ts int64) error {
			p.begin(key, ts)
			return p.fn.ProcessElement(v, &p.ctx, &p.col)
		}, p.endKey)
		if err != nil {
			return err
		}
		p.afterLastKey()
	}
	return p.keyedCore.Finish()
}

// afterLastKey passes on the maximum watermark, which batch execution
// held back while it gathered the input.
func (c *keyedCore[K, U]) afterLastKey() {
	c.col.out.EmitWatermark(runtime.MaxWatermark)
	c.oc.ForwardToSideOutputs(runtime.MaxWatermark)
}

// endKey fires the key's timers and drops its state.
func (c *keyedCore[K, U]) endKey(key K) {
	c.ctx.timers.EndKey()
	c.ctx.backend.SetCurrentKey(key)
	c.ctx.backend.ClearCurrentKey()
}

// eachSortedPair merges two sorted inputs by key and timestamp: fn1 and
// fn2 get the records of the first and second input, a key's records of
// both in timestamp order (the first input's first at equal times), and
// end follows each key's last record.
func eachSortedPair[K comparable, A, B any](a *sortedKeyedInput[K, A], b *sortedKeyedInput[K, B],
	fn1 func(K, A, int64) error, fn2 func(K, B, int64) error, end func(K)) error {
	ma, err := a.in.sorted()
	if err != nil {
		return err
	}
	mb, err := b.in.sorted()
	if err != nil {
		return err
	}
	ka, va, oka, err := ma.next()
	if err != nil {
		return err
	}
	kb, vb, okb, err := mb.next()
	if err != nil {
		return err
	}
	var cur K
	started := false
	enter := func(k K) {
		if started && k != cur {
			end(cur)
		}
		cur, started = k, true
	}
	for oka || okb {
		if oka && (!okb || bytes.Compare(ka, kb) <= 0) {
			r, _, err := a.rec.Decode(va)
			if err != nil {
				return fmt.Errorf("sorted input 1: %w", err)
			}
			k := a.key(r.v)
			enter(k)
			if err := fn1(k, r.v, r.ts); err != nil {
				return err
			}
			if ka, va, oka, err = ma.next(); err != nil {
				return err
			}
			continue
		}
		r, _, err := b.rec.Decode(vb)
		if err != nil {
			return fmt.Errorf("sorted input 2: %w", err)
		}
		k := b.key(r.v)
		enter(k)
		if err := fn2(k, r.v, r.ts); err != nil {
			return err
		}
		if kb, vb, okb, err = mb.next(); err != nil {
			return err
		}
	}
	if started {
		end(cur)
	}
	a.in.runs.remove()
	b.in.runs.remove()
	return nil
}

// BatchKeyedInput gathers a keyed operator's input in batch mode, to
// process it key by key when the input ends, as KeyedProcess does; keyed
// operators built outside this package (windows) use it.
type BatchKeyedInput[K comparable, T any] struct{ in *sortedKeyedInput[K, T] }

// NewBatchKeyedInput returns nil when the operator processes its records
// as they come: outside batch mode, inside an iteration, or when K or T
// has no codec.
func NewBatchKeyedInput[K comparable, T any](oc *runtime.OperatorContext, key func(T) K) (*BatchKeyedInput[K, T], error) {
	in, err := newSortedKeyedInput[K, T](oc, key)
	if in == nil || err != nil {
		return nil, err
	}
	return &BatchKeyedInput[K, T]{in}, nil
}

// Add gathers a record.
func (b *BatchKeyedInput[K, T]) Add(v T, ts int64) { b.in.add(v, ts) }

// Each calls fn for every record in key and time order, and end after
// each key's last record.
func (b *BatchKeyedInput[K, T]) Each(fn func(key K, v T, ts int64) error, end func(key K)) error {
	return b.in.each(fn, end)
}
