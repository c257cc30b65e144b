package window

import (
	"fmt"
	"reflect"
	"time"

	"github.com/weirproject/weir/internal/runtime"
)

// Elements is a window's buffered elements as an evictor sees them, in the
// order they were added (for merged session windows: the merged windows'
// elements by window start, then the new element). Evict marks an element;
// the window drops the marked ones after the evictor returns. ValueAt
// reads a value.
type Elements interface {
	// Len returns the number of elements, evicted or not.
	Len() int
	// Timestamp returns element i's event timestamp (runtime.NoTimestamp
	// if it has none).
	Timestamp(i int) int64
	// Evict marks element i for eviction.
	Evict(i int)
	// Evicted reports whether element i is marked.
	Evicted(i int) bool
}

// ValueAt returns the value of element i; T must be the window's element
// type.
func ValueAt[T any](e Elements, i int) T {
	b, ok := e.(*buffer[T])
	if !ok {
		var zero T
		panic(fmt.Errorf("window: ValueAt[%T] on elements of another type (%T)", zero, e))
	}
	return b.vals[i]
}

// EvictorContext is what an evictor learns about time.
type EvictorContext interface {
	CurrentWatermark() int64
	CurrentProcessingTime() int64
}

// Evictor removes elements from a window when it fires: EvictBefore runs
// before the window function (which sees only the remaining elements),
// EvictAfter after it. With an evictor, a window buffers all its elements
// even for Reduce and Aggregate, which then run over the remaining ones at
// each firing. An evictor that evicts every element before the function
// suppresses the firing.
type Evictor interface {
	EvictBefore(e Elements, w TimeWindow, c EvictorContext)
	EvictAfter(e Elements, w TimeWindow, c EvictorContext)
}

// buffer implements Elements over a window's contents.
type buffer[T any] struct {
	vals    []T
	ts      []int64
	evicted []bool
	n       int // number marked
}

func (b *buffer[T]) Len() int              { return len(b.vals) }
func (b *buffer[T]) Timestamp(i int) int64 { return b.ts[i] }
func (b *buffer[T]) Evicted(i int) bool    { return i < len(b.evicted) && b.evicted[i] }

func (b *buffer[T]) Evict(i int) {
	if len(b.evicted) < len(b.vals) {
		b.evicted = append(b.evicted[:0], make([]bool, len(b.vals))...)
	}
	if !b.evicted[i] {
		b.evicted[i] = true
		b.n++
	}
}

// reset makes b a view of vals and ts with nothing marked.
func (b *buffer[T]) reset(vals []T, ts []int64) {
	b.vals, b.ts = vals, ts
	clear(b.evicted)
	b.n = 0
}

// compact drops the marked elements, keeping the order of the others.
func (b *buffer[T]) compact() {
	if b.n == 0 {
		return
	}
	j := 0
	for i := range b.vals {
		if !b.evicted[i] {
			b.vals[j], b.ts[j] = b.vals[i], b.ts[i]
			j++
		}
	}
	clear(b.vals[j:])
	b.vals, b.ts = b.vals[:j], b.ts[:j]
	clear(b.evicted)
	b.n = 0
}

// CountEvictor keeps the last n elements of a window (the most recently
// added), before the window function or, with doEvictAfter, after it.
func CountEvictor(n int64, doEvictAfter ...bool) Evictor {
	return &countEvictor{max: n, after: after(doEvictAfter)}
}

type countEvictor struct {
	max   int64
	after bool
}

func (c *countEvictor) validate() error {
	if c.max < 0 {
		return fmt.Errorf("window: CountEvictor(%d): the count must not be negative", c.max)
	}
	return nil
}

func (c *countEvictor) evict(e Elements) {
	n := int64(e.Len())
	for i := int64(0); i < n-c.max; i++ {
		e.Evict(int(i))
	}
}

func (c *countEvictor) EvictBefore(e Elements, _ TimeWindow, _ EvictorContext) {
	if !c.after {
		c.evict(e)
	}
}

func (c *countEvictor) EvictAfter(e Elements, _ TimeWindow, _ EvictorContext) {
	if c.after {
		c.evict(e)
	}
}

func (c *countEvictor) String() string { return fmt.Sprintf("CountEvictor(%d)", c.max) }

// TimeEvictor keeps the elements whose timestamps are within d of the
// window's newest timestamp: it evicts those at or below max - d. It does
// nothing when the first element has no timestamp.
func TimeEvictor(d time.Duration, doEvictAfter ...bool) Evictor {
	return &timeEvictor{size: millis(d), after: after(doEvictAfter)}
}

type timeEvictor struct {
	size  int64
	after bool
}

func (t *timeEvictor) validate() error {
	if t.size < 0 {
		return fmt.Errorf("window: TimeEvictor needs a duration >= 0")
	}
	return nil
}

func (t *timeEvictor) evict(e Elements) {
	if e.Len() == 0 || e.Timestamp(0) == runtime.NoTimestamp {
		return
	}
	maxTs := e.Timestamp(0)
	for i := 1; i < e.Len(); i++ {
		maxTs = max(maxTs, e.Timestamp(i))
	}
	cutoff := maxTs - t.size
	for i := 0; i < e.Len(); i++ {
		if e.Timestamp(i) <= cutoff {
			e.Evict(i)
		}
	}
}

func (t *timeEvictor) EvictBefore(e Elements, _ TimeWindow, _ EvictorContext) {
	if !t.after {
		t.evict(e)
	}
}

func (t *timeEvictor) EvictAfter(e Elements, _ TimeWindow, _ EvictorContext) {
	if t.after {
		t.evict(e)
	}
}

func (t *timeEvictor) String() string {
	return fmt.Sprintf("TimeEvictor(%v)", time.Duration(t.size)*time.Millisecond)
}

// DeltaEvictor evicts every element whose delta to the window's last
// element is at least threshold.
func DeltaEvictor[T any](threshold float64, delta func(a, b T) float64, doEvictAfter ...bool) Evictor {
	return &deltaEvictor[T]{threshold: threshold, delta: delta, after: after(doEvictAfter)}
}

type deltaEvictor[T any] struct {
	threshold float64
	delta     func(a, b T) float64
	after     bool
}

func (d *deltaEvictor[T]) elementType() reflect.Type { return reflect.TypeFor[T]() }

func (d *deltaEvictor[T]) evict(e Elements) {
	if e.Len() == 0 {
		return
	}
	last := ValueAt[T](e, e.Len()-1)
	for i := 0; i < e.Len(); i++ {
		if d.delta(ValueAt[T](e, i), last) >= d.threshold {
			e.Evict(i)
		}
	}
}

func (d *deltaEvictor[T]) EvictBefore(e Elements, _ TimeWindow, _ EvictorContext) {
	if !d.after {
		d.evict(e)
	}
}

func (d *deltaEvictor[T]) EvictAfter(e Elements, _ TimeWindow, _ EvictorContext) {
	if d.after {
		d.evict(e)
	}
}

func (d *deltaEvictor[T]) String() string { return fmt.Sprintf("DeltaEvictor(%v)", d.threshold) }

func after(doEvictAfter []bool) bool { return len(doEvictAfter) > 0 && doEvictAfter[0] }
