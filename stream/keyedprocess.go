package stream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/state"
)

// TimeDomain says which clock fired a timer.
type TimeDomain int

const (
	// EventTime timers fire when the watermark passes them.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire when the task's clock passes them.
	ProcessingTime
)

// KeyedContext is the context of a keyed process function: the current
// key, its keyed state and its timers.
type KeyedContext[K comparable] struct {
	Context
	backend *state.Backend[K]
	timers  *runtime.TimerService[K]
	domain  TimeDomain
}

// CurrentKey returns the key of the record or timer being processed.
func (c *KeyedContext[K]) CurrentKey() K { return c.backend.CurrentKey() }

// State returns the operator's keyed state backend, for state.Value,
// state.List and state.Map; handles may be created once in Open and used
// for every key.
func (c *KeyedContext[K]) State() *state.Backend[K] { return c.backend }

// TimeDomain returns the domain of the timer being handled in OnTimer.
func (c *KeyedContext[K]) TimeDomain() TimeDomain { return c.domain }

// CurrentWatermark returns the operator's event time.
func (c *KeyedContext[K]) CurrentWatermark() int64 { return c.timers.CurrentWatermark() }

// CurrentProcessingTime returns the operator's processing time.
func (c *KeyedContext[K]) CurrentProcessingTime() int64 { return c.timers.CurrentProcessingTime() }

// RegisterEventTimeTimer sets a timer for the current key; registering the
// same key and time twice sets one timer.
func (c *KeyedContext[K]) RegisterEventTimeTimer(ts int64) {
	c.timers.RegisterEventTimeTimer(c.backend.CurrentKey(), ts)
}

// DeleteEventTimeTimer removes the current key's timer at ts.
func (c *KeyedContext[K]) DeleteEventTimeTimer(ts int64) {
	c.timers.DeleteEventTimeTimer(c.backend.CurrentKey(), ts)
}

// RegisterProcessingTimeTimer sets a processing-time timer for the current
// key.
func (c *KeyedContext[K]) RegisterProcessingTimeTimer(ts int64) {
	c.timers.RegisterProcessingTimeTimer(c.backend.CurrentKey(), ts)
}

// DeleteProcessingTimeTimer removes the current key's processing-time
// timer at ts.
func (c *KeyedContext[K]) DeleteProcessingTimeTimer(ts int64) {
	c.timers.DeleteProcessingTimeTimer(c.backend.CurrentKey(), ts)
}

// KeyedProcessFunction processes a keyed stream with keyed state and
// timers. Implement KeyedTimerHandler to receive timers and KeyedOpener to
// create state handles.
type KeyedProcessFunction[K comparable, T, U any] interface {
	ProcessElement(v T, ctx *KeyedContext[K], out Collector[U]) error
}

// KeyedTimerHandler receives the timers a keyed process function set;
// ctx.CurrentKey is the timer's key.
type KeyedTimerHandler[K comparable, U any] interface {
	OnTimer(ts int64, ctx *KeyedContext[K], out Collector[U]) error
}

// KeyedOpener is implemented by keyed functions that set up state handles
// before the first record.
type KeyedOpener[K comparable] interface {
	Open(ctx *KeyedContext[K]) error
}

// KeyedProcess applies a keyed process function.
func KeyedProcess[K comparable, T, U any](ks *KeyedStream[K, T], fn KeyedProcessFunction[K, T, U]) *Stream[U] {
	return addNode[T, U](ks.s, "keyed-process", "KeyedProcess", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.Output[T], error) {
		fn := Instance(fn)
		op := &keyedProcessOp[K, T, U]{fn: fn, key: ks.key}
		sorted, err := newSortedKeyedInput[K, T](oc, ks.key)
		if err != nil {
			return nil, err
		}
		if err := op.init(oc, fn, out, ks.hasher, sorted != nil); err != nil {
			return nil, err
		}
		op.sorted = sorted
		oc.Register(op)
		return op, nil
	}))
}

type keyedProcessOp[K comparable, T, U any] struct {
	keyedCore[K, U]
	fn  KeyedProcessFunction[K, T, U]
	key func(T) K
	// sorted, in batch mode, gathers the input to process it key by key
	// when it ends.
	sorted *sortedKeyedInput[K, T]
}

func (p *keyedProcessOp[K, T, U]) Emit(v T, ts int64) {
	if p.sorted != nil {
		p.sorted.add(v, ts)
		return
	}
	p.begin(p.key(v), ts)
	if err := p.fn.ProcessElement(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

// keyedCore is what keyed process operators share: the key context with
// state and timers, the collector, timer dispatch and the lifecycle of the
// user function.
type keyedCore[K comparable, U any] struct {
	oc      *runtime.OperatorContext
	hash    runtime.KeyHasher[K]
	userFn  any
	onTimer KeyedTimerHandler[K, U]
	ctx     KeyedContext[K]
	col     collector[U]
}

// init sets the operator up; the caller registers it. With oneKey (batch
// execution key by key) state lives on the heap, whatever the configured
// backend: it holds one key at a time.
func (c *keyedCore[K, U]) init(oc *runtime.OperatorContext, fn any, out runtime.Output[U], hash runtime.KeyHasher[K], oneKey bool) error {
	c.oc, c.userFn, c.hash = oc, fn, hash
	var backend *state.Backend[K]
	var err error
	if oneKey {
		backend = state.NewBackend[K]()
	} else if backend, err = newStateBackend(oc, hash); err != nil {
		return err
	}
	c.ctx = KeyedContext[K]{Context: Context{oc: oc, ts: runtime.NoTimestamp}, backend: backend}
	c.ctx.timers = runtime.NewTimerService(oc, c.onEventTime, c.onProcessingTime)
	c.col.oc, c.col.out = oc, out
	c.onTimer, _ = fn.(KeyedTimerHandler[K, U])
	return nil
}

// newStateBackend creates the keyed state backend state.backend.type
// names: the heap, or a Pebble store under io.tmp.dirs that the task
// removes when it ends.
func newStateBackend[K comparable](oc *runtime.OperatorContext, hash runtime.KeyHasher[K]) (*state.Backend[K], error) {
	if config.StateBackend.Get(oc.Config) != config.StateBackendPebble {
		b := state.NewBackend[K]()
		oc.Gauge("stateEntries", func() int64 { return b.Metrics().Entries })
		return b, nil
	}
	dir := tmpDir(oc.Config)
	maxP := oc.Info.MaxParallelism
	b, err := state.NewPebbleBackendWithOptions(state.PebbleOptions[K]{
		Dir:                   dir,
		MaxParallelism:        maxP,
		KeyGroup:              func(k K) int { return runtime.KeyGroupFor(hash(k), maxP) },
		CacheSize:             config.PebbleBlockCacheSize.Get(oc.Config),
		StateCacheSize:        stateCacheSize(oc.Config),
		L0CompactionThreshold: config.PebbleL0CompactionThreshold.Get(oc.Config),
	})
	if err != nil {
		return nil, fmt.Errorf("pebble state backend in %s: %w", dir, err)
	}
	oc.OnCleanup(func() { _ = b.Close() })
	oc.Gauge("stateDiskBytes", func() int64 { return b.Metrics().DiskBytes })
	oc.Gauge("stateMemTableBytes", func() int64 { return b.Metrics().MemTableBytes })
	oc.Gauge("stateBlockCacheBytes", func() int64 { return b.Metrics().BlockCacheBytes })
	oc.Gauge("stateCacheBytes", func() int64 { return b.Metrics().CacheBytes })
	oc.Gauge("stateCacheHits", func() int64 { return b.Metrics().CacheHits })
	oc.Gauge("stateCacheMisses", func() int64 { return b.Metrics().CacheMisses })
	oc.Gauge("stateCacheReadAhead", func() int64 { return b.Metrics().CacheReadAhead })
	oc.Gauge("stateCacheWriteBacks", func() int64 { return b.Metrics().CacheWriteBacks })
	oc.Gauge("stateCacheSpilled", func() int64 { return b.Metrics().CacheSpilled })
	oc.Gauge("stateCacheSpillReads", func() int64 { return b.Metrics().CacheSpillReads })
	return b, nil
}

// stateCacheSize is the Pebble backend's cache of decoded values, in
// PebbleOptions' terms: negative for none.
func stateCacheSize(cfg *config.Configuration) int64 {
	if n := config.PebbleStateCacheSize.Get(cfg); n > 0 {
		return n
	}
	return -1
}

// begin scopes state and timers to key for a record with timestamp ts.
func (c *keyedCore[K, U]) begin(key K, ts int64) {
	c.oc.Enter()
	c.ctx.backend.SetCurrentKey(key)
	c.ctx.ts, c.col.ts = ts, ts
}

// EmitWatermark fires the event-time timers the watermark passed, then
// forwards it: results of timers precede the watermark downstream. The
// state backend reads the time maps' entries of the passed times ahead
// of the timers and drops what they removed after them.
func (c *keyedCore[K, U]) EmitWatermark(wm int64) {
	c.flush()
	c.ctx.backend.WatermarkAdvancing(wm)
	c.ctx.timers.AdvanceWatermark(wm)
	c.ctx.backend.WatermarkAdvanced(wm)
	c.col.out.EmitWatermark(wm)
	c.oc.ForwardToSideOutputs(wm)
}

func (c *keyedCore[K, U]) EmitWatermarkStatus(idle bool) {
	runtime.EmitStatus(c.col.out, idle)
	c.oc.ForwardStatusToSideOutputs(idle)
}

func (c *keyedCore[K, U]) fire(key K, ts int64, domain TimeDomain) {
	if c.onTimer == nil {
		return
	}
	c.ctx.backend.SetCurrentKey(key)
	c.ctx.domain = domain
	c.ctx.ts, c.col.ts = ts, ts
	if domain == ProcessingTime {
		c.ctx.ts, c.col.ts = runtime.NoTimestamp, runtime.NoTimestamp
	}
	if err := c.onTimer.OnTimer(ts, &c.ctx, &c.col); err != nil {
		c.oc.Fail(err)
	}
	c.ctx.domain = EventTime
}

func (c *keyedCore[K, U]) onEventTime(key K, ts int64)      { c.fire(key, ts, EventTime) }
func (c *keyedCore[K, U]) onProcessingTime(key K, ts int64) { c.fire(key, ts, ProcessingTime) }

func (c *keyedCore[K, U]) Open() error {
	if o, ok := c.userFn.(KeyedOpener[K]); ok {
		c.oc.Enter()
		return o.Open(&c.ctx)
	}
	return openFunction(c.oc, c.userFn, &c.ctx.Context)
}

func (c *keyedCore[K, U]) Finish() error {
	c.flush()
	if f, ok := c.userFn.(Finisher[U]); ok {
		c.oc.Enter()
		return f.Finish(&c.ctx.Context, &c.col)
	}
	return nil
}

func (c *keyedCore[K, U]) Close() error { return closeFunction(c.oc, c.userFn) }

// keyedSnapshot is the checkpointed form of a keyed process operator.
type keyedSnapshot struct {
	State  []byte
	Timers []byte
}

// SnapshotState encodes the keyed state of every key and the pending
// timers.
func (c *keyedCore[K, U]) SnapshotState(id int64) ([]byte, error) {
	return snapshotNow(c.SnapshotStateAsync, id)
}

// SnapshotStateAsync copies the timers and takes the state backend's
// synchronous part; uploading an incremental snapshot's files happens in
// finish, off the record path.
func (c *keyedCore[K, U]) SnapshotStateAsync(id int64) (func(context.Context) ([]byte, error), error) {
	st, err := c.ctx.backend.SnapshotAsync(c.oc.SnapshotFiles(id))
	if err != nil {
		return nil, err
	}
	tm, err := c.ctx.timers.Snapshot()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]byte, error) {
		data, err := st(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(keyedSnapshot{State: data, Timers: tm})
	}, nil
}

// RestoreState loads keyed state and timers; state handles created in
// Open pick up their data.
func (c *keyedCore[K, U]) RestoreState(data []byte) error {
	var snap keyedSnapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("decode keyed snapshot: %w", err)
	}
	// After a rescale every old subtask's piece arrives; keep the keys of
	// this subtask's key groups.
	keep := runtime.KeyFilter(c.oc, c.hash)
	c.ctx.backend.SetRestoreFiles(c.oc.RestoreFiles())
	if err := c.ctx.backend.Restore(snap.State, keep); err != nil {
		return err
	}
	return c.ctx.timers.Restore(snap.Timers, keep)
}
