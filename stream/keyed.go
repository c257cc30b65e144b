package stream

import (
	"cmp"
	"context"
	"slices"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/state"
)

// KeyedStream is a stream partitioned by key: all records with the same
// key go to the same subtask, through the key's key group, and keyed
// operators keep their state per key.
type KeyedStream[K comparable, T any] struct {
	s      *Stream[T]
	key    func(T) K
	hasher runtime.KeyHasher[K]
}

// KeyBy partitions s by the key that key extracts. The key must hash the
// same in every process; built-in kinds do, and composite keys are hashed
// through their codec.
func KeyBy[T any, K comparable](s *Stream[T], key func(T) K) *KeyedStream[K, T] {
	hasher, err := runtime.NewKeyHasher[K]()
	if err != nil {
		s.env.fail(err)
	}
	out := s.withPartitioning(graph.PartitionHash)
	for i := range out.inputs {
		out.inputs[i].partitioner = func(target *graph.StreamNode) any {
			return runtime.PartitionerFactory[T](func(producer, channels int) runtime.Partitioner[T] {
				// The target's max parallelism is final once the job graph
				// is built, which happens before any partitioner exists.
				return &runtime.KeyGroupPartitioner[K, T]{Key: key, Hash: hasher, MaxParallelism: target.MaxParallelism, Channels: channels}
			})
		}
	}
	return &KeyedStream[K, T]{s: out, key: key, hasher: hasher}
}

// KeySelector returns the function that extracts the key.
func (ks *KeyedStream[K, T]) KeySelector() func(T) K { return ks.key }

// Stream returns the keyed stream as a plain stream, still hash
// partitioned for the next operator.
func (ks *KeyedStream[K, T]) Stream() *Stream[T] { return ks.s }

// Reduce combines each record with the previous result for its key. In
// streaming mode every new result is emitted; in batch mode only the final
// result per key, when the input ends.
func (ks *KeyedStream[K, T]) Reduce(fn func(acc, v T) T) *Stream[T] {
	return ks.reduceInPlace(func(acc, v *T) { *acc = fn(*acc, *v) })
}

// reduceInPlace is Reduce with an update that modifies the accumulator in
// place; the built-in aggregations use it so that nothing escapes to the
// heap per record.
func (ks *KeyedStream[K, T]) reduceInPlace(update func(acc, v *T)) *Stream[T] {
	in := *ks.s
	in.inputs = slices.Clone(in.inputs)
	for i := range in.inputs {
		in.inputs[i].combiner = runtime.CombinerFactory(func(out any) (any, runtime.Lifecycle) {
			c := &combiner[K, T]{key: ks.key, update: update, out: out.(runtime.Output[T]), index: make(map[K]int32)}
			return runtime.Output[T](c), c
		})
	}
	return addNode[T, T](&in, "reduce", "Reduce", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[T]) (runtime.Output[T], error) {
		if oc.Task.Iteration() != nil {
			// Inside an iteration's loop: the final result per key at the
			// end of each superstep, which starts afresh.
			op := &reduceOp[K, T]{oc: oc, key: ks.key, hash: ks.hasher, update: update, out: out, superstep: true, index: make(map[K]int32)}
			oc.Register(op)
			return op, nil
		}
		if !oc.Batch && config.StateBackend.Get(oc.Config) == config.StateBackendPebble {
			// State larger than memory: the running results live in the
			// Pebble store. Batch mode needs to list every key at the
			// end and stays on the heap (it takes no checkpoints).
			backend, err := newStateBackend(oc, ks.hasher)
			if err != nil {
				return nil, err
			}
			op := &backendReduceOp[K, T]{oc: oc, key: ks.key, hash: ks.hasher, update: update, out: out, backend: backend}
			op.results = state.Value[T](backend, reduceStateName, *new(T))
			oc.Register(op)
			return op, nil
		}
		if !oc.Batch {
			op := &streamReduceOp[K, T]{oc: oc, key: ks.key, hash: ks.hasher, update: update, out: out, index: make(map[K]int32)}
			oc.Register(op)
			oc.Gauge("stateEntries", func() int64 { return int64(len(op.index)) })
			return op, nil
		}
		op := &reduceOp[K, T]{oc: oc, key: ks.key, hash: ks.hasher, update: update, out: out, index: make(map[K]int32)}
		op.spill = newSpiller(oc, ks.key, update)
		oc.Register(op)
		oc.Gauge("stateEntries", func() int64 { return int64(len(op.index)) })
		return op, nil
	}))
}

// backendReduceOp keeps the running result per key in a state backend
// (Pebble): one read and one write per record.
type backendReduceOp[K comparable, T any] struct {
	oc      *runtime.OperatorContext
	key     func(T) K
	hash    runtime.KeyHasher[K]
	update  func(acc, v *T)
	out     runtime.Output[T]
	backend *state.Backend[K]
	results state.ValueState[T]
	scratch T
}

func (r *backendReduceOp[K, T]) Emit(v T, ts int64) {
	r.oc.Enter()
	r.backend.SetCurrentKey(r.key(v))
	acc, ok := r.results.Value()
	if ok {
		r.scratch = v
		r.update(&acc, &r.scratch)
		v = acc
	}
	r.results.Update(v)
	r.out.Emit(v, ts)
}

func (r *backendReduceOp[K, T]) EmitWatermark(wm int64) { r.out.EmitWatermark(wm) }
func (r *backendReduceOp[K, T]) EmitWatermarkStatus(idle bool) {
	runtime.EmitStatus(r.out, idle)
}
func (r *backendReduceOp[K, T]) Open() error   { return nil }
func (r *backendReduceOp[K, T]) Finish() error { return nil }
func (r *backendReduceOp[K, T]) Close() error  { return nil }

// SnapshotState encodes every key's result from the backend.
func (r *backendReduceOp[K, T]) SnapshotState(id int64) ([]byte, error) {
	return snapshotNow(r.SnapshotStateAsync, id)
}

// SnapshotStateAsync takes the backend's synchronous part; an incremental
// snapshot uploads its files in the returned function.
func (r *backendReduceOp[K, T]) SnapshotStateAsync(id int64) (func(context.Context) ([]byte, error), error) {
	return r.backend.SnapshotAsync(r.oc.SnapshotFiles(id))
}

// RestoreState loads results, keeping this subtask's key groups after a
// rescale.
func (r *backendReduceOp[K, T]) RestoreState(data []byte) error {
	r.backend.SetRestoreFiles(r.oc.RestoreFiles())
	keep := runtime.KeyFilter(r.oc, r.hash)
	return eachReducePiece(r.oc, data, func(piece []byte) error { return r.backend.Restore(piece, keep) })
}

// reduceStateName is the value state of Reduce's results, in either
// backend's snapshots.
const reduceStateName = "reduce"

// reduceOp keeps the result per key of a batch job (or of an iteration's
// superstep) on the heap: a map from the Go key itself to a slot in a
// dense slice of results, so that an update hashes once and results stay
// contiguous. It emits the results when its input ends.
type reduceOp[K comparable, T any] struct {
	oc     *runtime.OperatorContext
	key    func(T) K
	hash   runtime.KeyHasher[K]
	update func(acc, v *T)
	out    runtime.Output[T]
	// superstep: results are per superstep of an iteration.
	superstep bool
	// spill writes the results to sorted runs on disk
	// when they outgrow the operator's share of managed memory.
	spill   *spiller[K, T]
	index   map[K]int32
	results []T
	// scratch holds the incoming record, so that update can take its
	// address without the record escaping to the heap.
	scratch T
}

func (r *reduceOp[K, T]) Emit(v T, ts int64) {
	r.oc.Enter()
	k := r.key(v)
	i, ok := r.index[k]
	if ok {
		r.scratch = v
		r.update(&r.results[i], &r.scratch)
	} else {
		i = int32(len(r.results))
		r.results = append(r.results, v)
		r.index[k] = i
		if r.spill != nil && r.spill.added(&r.results[i]) {
			if err := r.spill.spill(r.results); err != nil {
				r.oc.Fail(err)
			}
			clear(r.index)
			clear(r.results)
			r.results = r.results[:0]
		}
	}
}

func (r *reduceOp[K, T]) EmitWatermark(wm int64)        { r.out.EmitWatermark(wm) }
func (r *reduceOp[K, T]) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(r.out, idle) }

func (r *reduceOp[K, T]) Open() error { return nil }

func (r *reduceOp[K, T]) Finish() error {
	if r.spill != nil && len(r.spill.runs.files) > 0 {
		rest := r.results
		r.results = nil
		clear(r.index)
		return r.spill.merge(rest, func(v T) { r.out.Emit(v, runtime.NoTimestamp) })
	}
	for _, v := range r.results {
		r.out.Emit(v, runtime.NoTimestamp)
	}
	return nil
}

func (r *reduceOp[K, T]) Close() error { return nil }

// EndSuperstep emits the superstep's result per key and forgets them.
func (r *reduceOp[K, T]) EndSuperstep(int64) error {
	if !r.superstep {
		return nil
	}
	for _, v := range r.results {
		r.out.Emit(v, runtime.NoTimestamp)
	}
	clear(r.index)
	clear(r.results)
	r.results = r.results[:0]
	return nil
}

// SnapshotState encodes every key's result.
func (r *reduceOp[K, T]) SnapshotState(int64) ([]byte, error) {
	return state.ValueSnapshot(reduceStateName, len(r.index), func(yield func(K, T) bool) {
		for k, i := range r.index {
			if !yield(k, r.results[i]) {
				return
			}
		}
	})
}

// RestoreState loads results written by either backend, keeping this
// subtask's key groups after a rescale.
func (r *reduceOp[K, T]) RestoreState(data []byte) error {
	return eachReducePiece(r.oc, data, func(piece []byte) error {
		return r.restorePiece(piece)
	})
}

func (r *reduceOp[K, T]) restorePiece(data []byte) error {
	return state.RestoreValues(data, reduceStateName, r.oc.RestoreFiles(), runtime.KeyFilter(r.oc, r.hash), func(k K, v T) {
		if i, ok := r.index[k]; ok {
			r.results[i] = v
			return
		}
		r.index[k] = int32(len(r.results))
		r.results = append(r.results, v)
	})
}

// Number is what Sum adds.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// Sum adds up the field that field points to, per key; the other fields
// keep the values of the key's first record.
func Sum[K comparable, T any, N Number](ks *KeyedStream[K, T], field func(*T) *N) *Stream[T] {
	return ks.reduceInPlace(func(acc, v *T) { *field(acc) += *field(v) }).Name("Sum")
}

// Min keeps the smallest value of the field per key; the other fields keep
// the values of the key's first record.
func Min[K comparable, T any, N cmp.Ordered](ks *KeyedStream[K, T], field func(*T) *N) *Stream[T] {
	return ks.reduceInPlace(func(acc, v *T) {
		if *field(v) < *field(acc) {
			*field(acc) = *field(v)
		}
	}).Name("Min")
}

// Max keeps the largest value of the field per key; the other fields keep
// the values of the key's first record.
func Max[K comparable, T any, N cmp.Ordered](ks *KeyedStream[K, T], field func(*T) *N) *Stream[T] {
	return ks.reduceInPlace(func(acc, v *T) {
		if *field(v) > *field(acc) {
			*field(acc) = *field(v)
		}
	}).Name("Max")
}

// MinBy keeps, per key, the whole record with the smallest field value (the
// first one on ties).
func MinBy[K comparable, T any, N cmp.Ordered](ks *KeyedStream[K, T], field func(*T) *N) *Stream[T] {
	return ks.reduceInPlace(func(acc, v *T) {
		if *field(v) < *field(acc) {
			*acc = *v
		}
	}).Name("MinBy")
}

// MaxBy keeps, per key, the whole record with the largest field value (the
// first one on ties).
func MaxBy[K comparable, T any, N cmp.Ordered](ks *KeyedStream[K, T], field func(*T) *N) *Stream[T] {
	return ks.reduceInPlace(func(acc, v *T) {
		if *field(v) > *field(acc) {
			*acc = *v
		}
	}).Name("MaxBy")
}

// combinerKeys bounds the keys a combiner holds: past it, it sends what it
// holds and starts afresh.
const combinerKeys = 1 << 15

// combiner combines the records of a key with the reduction's update
// before a batch job's exchange: the reduction downstream then receives a
// partial result per key and flush instead of every record. Partial
// results combine, as the spilling reduce already requires.
type combiner[K comparable, T any] struct {
	key     func(T) K
	update  func(acc, v *T)
	out     runtime.Output[T]
	index   map[K]int32
	held    []T
	scratch T
}

func (c *combiner[K, T]) Emit(v T, _ int64) {
	k := c.key(v)
	if i, ok := c.index[k]; ok {
		c.scratch = v
		c.update(&c.held[i], &c.scratch)
		return
	}
	if len(c.held) == combinerKeys {
		c.flush()
	}
	c.index[k] = int32(len(c.held))
	c.held = append(c.held, v)
}

func (c *combiner[K, T]) flush() {
	for _, v := range c.held {
		c.out.Emit(v, runtime.NoTimestamp)
	}
	clear(c.index)
	clear(c.held)
	c.held = c.held[:0]
}

// EmitWatermark sends what the combiner holds first: no record the
// watermark passed stays behind it.
func (c *combiner[K, T]) EmitWatermark(wm int64) {
	c.flush()
	c.out.EmitWatermark(wm)
}

func (c *combiner[K, T]) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(c.out, idle) }
func (c *combiner[K, T]) Open() error                   { return nil }
func (c *combiner[K, T]) Finish() error                 { c.flush(); return nil }
func (c *combiner[K, T]) Close() error                  { return nil }
