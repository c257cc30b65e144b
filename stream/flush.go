package stream

import "github.com/weirproject/weir/internal/runtime"

// KeyedFlusher is implemented by keyed functions that buffer records and
// emit them later, such as the mini-batches of SQL aggregations. Flush
// runs before a checkpoint barrier or a watermark passes the operator and
// when the input ends, so that nothing buffered crosses them: what Flush
// emits belongs to the checkpoint (exactly-once without checkpointing
// the buffer) and precedes the watermark. The function sets the current
// key itself (ctx.State().SetCurrentKey) for the keys it flushes.
type KeyedFlusher[K comparable, U any] interface {
	Flush(ctx *KeyedContext[K], out Collector[U]) error
}

// flush calls the function's Flush, if it has one.
func (c *keyedCore[K, U]) flush() {
	f, ok := c.userFn.(KeyedFlusher[K, U])
	if !ok {
		return
	}
	c.oc.Enter()
	c.ctx.ts, c.col.ts = runtime.NoTimestamp, runtime.NoTimestamp
	if err := f.Flush(&c.ctx, &c.col); err != nil {
		c.oc.Fail(err)
	}
}

// PrepareSnapshotPreBarrier flushes before the task snapshots and sends
// the checkpoint's barrier on.
func (c *keyedCore[K, U]) PrepareSnapshotPreBarrier(int64) { c.flush() }
