package stream

import (
	"errors"
	"time"

	"github.com/weirproject/weir/state"
)

// IntervalJoin joins every left record with every right record of the
// same key whose timestamp lies in [left + lower, left + upper] (both
// inclusive), in event time. Both inputs need timestamps and watermarks;
// records behind the watermark are dropped, and buffered records are
// removed once the watermark makes further matches impossible. A result
// carries the larger of the two timestamps.
func IntervalJoin[K comparable, A, B, U any](left *KeyedStream[K, A], right *KeyedStream[K, B], lower, upper time.Duration, join func(l A, r B, out Collector[U])) *Stream[U] {
	lo, hi := lower.Milliseconds(), upper.Milliseconds()
	if lo > hi {
		left.s.env.fail(errors.New("stream: IntervalJoin lower bound is above the upper bound"))
	}
	fn := &intervalJoin[K, A, B, U]{lower: lo, upper: hi, join: join}
	return keyedCoProcess(ConnectKeyed(left, right), "interval-join", "IntervalJoin", KeyedCoProcessFunction[K, A, B, U](fn))
}

type intervalJoin[K comparable, A, B, U any] struct {
	lower, upper int64
	join         func(A, B, Collector[U])
	left         state.MapState[int64, []A]
	right        state.MapState[int64, []B]
	out          timestampedCollector[U]
}

// timestampedCollector emits with an explicit timestamp.
type timestampedCollector[U any] struct {
	c  *collector[U]
	ts int64
}

func (t *timestampedCollector[U]) Collect(v U) {
	saved := t.c.ts
	t.c.ts = t.ts
	t.c.Collect(v)
	t.c.ts = saved
}

func (j *intervalJoin[K, A, B, U]) Open(ctx *KeyedContext[K]) error {
	j.left = state.Map[int64, []A](ctx.State(), "interval-join-left")
	j.right = state.Map[int64, []B](ctx.State(), "interval-join-right")
	return nil
}

var errNoTimestamp = errors.New("interval join needs event timestamps: assign them with AssignTimestampsAndWatermarks")

func (j *intervalJoin[K, A, B, U]) ProcessElement1(v A, ctx *KeyedContext[K], out Collector[U]) error {
	ts, ok := ctx.Timestamp()
	if !ok {
		return errNoTimestamp
	}
	if ts < ctx.CurrentWatermark() {
		return nil // late
	}
	l, _ := j.left.Get(ts)
	j.left.Put(ts, append(l, v))
	j.out.c = out.(*collector[U])
	for rts, rs := range j.right.All() {
		if rts >= ts+j.lower && rts <= ts+j.upper {
			j.out.ts = max(ts, rts)
			for _, r := range rs {
				j.join(v, r, &j.out)
			}
		}
	}
	// No right record at or below the watermark can arrive, so this one
	// is useless once the watermark passes ts + upper.
	ctx.RegisterEventTimeTimer(ts + max(j.upper, 0))
	return nil
}

func (j *intervalJoin[K, A, B, U]) ProcessElement2(v B, ctx *KeyedContext[K], out Collector[U]) error {
	ts, ok := ctx.Timestamp()
	if !ok {
		return errNoTimestamp
	}
	if ts < ctx.CurrentWatermark() {
		return nil
	}
	r, _ := j.right.Get(ts)
	j.right.Put(ts, append(r, v))
	j.out.c = out.(*collector[U])
	for lts, ls := range j.left.All() {
		if ts >= lts+j.lower && ts <= lts+j.upper {
			j.out.ts = max(ts, lts)
			for _, l := range ls {
				j.join(l, v, &j.out)
			}
		}
	}
	ctx.RegisterEventTimeTimer(ts - min(j.lower, 0))
	return nil
}

// OnTimer drops the buffered records that can no longer match.
func (j *intervalJoin[K, A, B, U]) OnTimer(ts int64, ctx *KeyedContext[K], _ Collector[U]) error {
	for lts := range j.left.All() {
		if lts+max(j.upper, 0) <= ts {
			j.left.Remove(lts)
		}
	}
	for rts := range j.right.All() {
		if rts-min(j.lower, 0) <= ts {
			j.right.Remove(rts)
		}
	}
	return nil
}
