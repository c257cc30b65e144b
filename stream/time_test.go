package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// probe passes records on as "v@ts" and reports every watermark it
// receives as "wm:N" (or "wm:max"), in order.
func probe[T any](s *stream.Stream[T]) *stream.Stream[string] {
	return stream.Transform(s, "probe", "probe", func(oc *runtime.OperatorContext, out runtime.Output[string]) (runtime.Output[T], error) {
		return &probeOp[T]{out: out}, nil
	})
}

type probeOp[T any] struct{ out runtime.Output[string] }

func (p *probeOp[T]) Emit(v T, ts int64) { p.out.Emit(fmt.Sprintf("%v@%d", v, ts), ts) }
func (p *probeOp[T]) EmitWatermark(wm int64) {
	if wm == runtime.MaxWatermark {
		p.out.Emit("wm:max", wm)
	} else {
		p.out.Emit(fmt.Sprintf("wm:%d", wm), wm)
	}
	p.out.EmitWatermark(wm)
}

type event struct {
	Key string
	TS  int64
}

func events(tss ...int64) []event {
	out := make([]event, len(tss))
	for i, ts := range tss {
		out[i] = event{"k", ts}
	}
	return out
}

func TestBoundedOutOfOrdernessPerEvent(t *testing.T) {
	env := newEnv(t, 1)
	src := stream.FromSlice(env, events(1000, 3000, 2000, 5000, 4000))
	ts := src.AssignTimestampsAndWatermarks(stream.ForBoundedOutOfOrderness[event](1500 * time.Millisecond).
		WithTimestampAssigner(func(e event, _ int64) int64 { return e.TS }).WithWatermarkPerEvent())
	got := stream.Collect(probe(ts))
	if err := env.Execute(context.Background(), "wm"); err != nil {
		t.Fatal(err)
	}
	// max seen − 1500 − 1 after each element; non-advancing ones are not
	// emitted; the end of input emits the maximum watermark.
	want := []string{"{k 1000}@1000", "wm:-501", "{k 3000}@3000", "wm:1499", "{k 2000}@2000", "{k 5000}@5000", "wm:3499", "{k 4000}@4000", "wm:max"}
	if g := got.Values(); !slices.Equal(g, want) {
		t.Fatalf("got %q\nwant %q", g, want)
	}
}

func TestPeriodicWatermarksUnderAManualClock(t *testing.T) {
	clock := runtime.NewManualClock(0)
	env := newEnv(t, 1, "pipeline.auto-watermark-interval", "200 ms").SetClock(clock)
	// An endless source that emits timestamps 0, 10, 20, ... and then
	// nothing: watermarks only come from the periodic timer.
	src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: 100, Fn: func(i int64) int64 { return i * 10 }}, "ts")
	ts := src.AssignTimestampsAndWatermarks(stream.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v }))
	seen := make(chan string, 1000)
	stream.Collect(stream.Map(probe(ts), func(s string) string {
		if strings.HasPrefix(s, "wm:") {
			seen <- s
		}
		return s
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "periodic")
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	// The bounded source ended before the clock moved: only the final
	// watermark came.
	close(seen)
	var wms []string
	for s := range seen {
		wms = append(wms, s)
	}
	if !slices.Equal(wms, []string{"wm:max"}) {
		t.Fatalf("watermarks = %v", wms)
	}
}

// TestPeriodicEmission drives an unbounded stream and moves the manual
// clock: each interval emits max timestamp − 1.
func TestPeriodicEmission(t *testing.T) {
	clock := runtime.NewManualClock(0)
	env := newEnv(t, 1, "pipeline.auto-watermark-interval", "200 ms").SetClock(clock)
	src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 {
		if i < 50 {
			return i * 10
		}
		time.Sleep(time.Millisecond)
		return 0 // out-of-order stragglers, they do not lower the watermark
	}}, "ts")
	ts := src.AssignTimestampsAndWatermarks(stream.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v }))
	seen := make(chan string, 100)
	stream.Collect(stream.Map(probe(ts).Rebalance(), func(s string) string {
		if strings.HasPrefix(s, "wm:") {
			select {
			case seen <- s:
			default:
			}
		}
		return s
	}).Filter(func(string) bool { return false }))
	ctx, cancel := context.WithCancel(context.Background())
	job, err := env.ExecuteAsync(ctx, "periodic")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	deadline := time.After(5 * time.Second)
	for got != "wm:489" {
		clock.Advance(200 * time.Millisecond)
		select {
		case got = <-seen:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no watermark 489 after 5s; last %q", got)
		}
	}
	cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestWatermarkIsTheMinimumOverChannels(t *testing.T) {
	env := newEnv(t, 1)
	strategy := stream.ForMonotonousTimestamps[event]().WithTimestampAssigner(func(e event, _ int64) int64 { return e.TS }).WithWatermarkPerEvent()
	// a runs ahead to 2999; b stops at 199 and stays open: the union's
	// watermark must reach 199 and never pass it.
	a := stream.FromSlice(env, events(1000, 2000, 3000)).AssignTimestampsAndWatermarks(strategy)
	b := stream.FromSource[event](env, &stream.Generator[event]{Count: -1, Fn: func(i int64) event {
		if i < 2 {
			return event{"b", 100 * (i + 1)}
		}
		time.Sleep(time.Millisecond)
		return event{"b", 150}
	}}, "slow").AssignTimestampsAndWatermarks(strategy)
	seen := make(chan string, 1000)
	stream.Collect(stream.Map(probe(stream.Union(a, b)), func(s string) string {
		if strings.HasPrefix(s, "wm:") {
			seen <- s
		}
		return s
	}).Filter(func(string) bool { return false }))
	ctx, cancel := context.WithCancel(context.Background())
	job, err := env.ExecuteAsync(ctx, "union")
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	timeout := time.After(5 * time.Second)
	for last != "wm:199" {
		select {
		case last = <-seen:
			if last != "wm:99" && last != "wm:199" && last != "wm:-1" {
				t.Fatalf("watermark %s passed the slower channel's 199", last)
			}
		case <-timeout:
			t.Fatalf("the watermark did not reach 199; last %q", last)
		}
	}
	select {
	case s := <-seen:
		t.Fatalf("watermark %s after 199", s)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestTwoInputWatermarkIsTheMinimumOfTheInputs(t *testing.T) {
	env := newEnv(t, 1)
	// The second input stays open (endless, no watermark), so the first
	// input's watermarks must not pass the connect operator.
	a := stream.FromSlice(env, events(1000, 2000)).AssignTimestampsAndWatermarks(
		stream.ForMonotonousTimestamps[event]().WithTimestampAssigner(func(e event, _ int64) int64 { return e.TS }).WithWatermarkPerEvent())
	b := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 { time.Sleep(time.Millisecond); return i }}, "slow")
	m := stream.CoMap(stream.Connect(a, b), func(e event) string { return e.Key }, func(int64) string { return "b" })
	seen := make(chan string, 10)
	stream.Collect(stream.Map(probe(m), func(s string) string {
		if strings.HasPrefix(s, "wm:") {
			seen <- s
		}
		return s
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := env.Execute(ctx, "connect"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	close(seen)
	for s := range seen {
		t.Fatalf("a watermark passed while the second input held it back: %s", s)
	}
}

func TestIdleInputDoesNotHoldBackTheWatermark(t *testing.T) {
	clock := runtime.NewManualClock(0)
	// Two source subtasks; the second only generates odd numbers, which
	// the filter drops, so its watermark assigner never sees a record.
	// Without idleness the downstream watermark would wait for it forever.
	env2 := newEnv(t, 2, "pipeline.auto-watermark-interval", "100 ms").SetClock(clock)
	gen := stream.FromSource[int64](env2, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 {
		time.Sleep(time.Millisecond)
		return i
	}}, "gen")
	even := gen.Filter(func(v int64) bool { return v%2 == 0 })
	wm := even.AssignTimestampsAndWatermarks(stream.ForMonotonousTimestamps[int64]().
		WithTimestampAssigner(func(v, _ int64) int64 { return v }).WithIdleness(time.Second))
	seen := make(chan string, 100)
	stream.Collect(stream.Map(probe(wm).SetParallelism(1), func(s string) string {
		if strings.HasPrefix(s, "wm:") {
			select {
			case seen <- s:
			default:
			}
		}
		return s
	}).SetParallelism(1).Filter(func(string) bool { return false }).SetParallelism(1))
	ctx, cancel := context.WithCancel(context.Background())
	job, err := env2.ExecuteAsync(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	// A bound for a stuck job only; a loaded machine needs more than
	// the 200 ms of wall time the idleness takes here.
	deadline := time.After(30 * time.Second)
	got := ""
	for got == "" {
		clock.Advance(100 * time.Millisecond)
		select {
		case got = <-seen:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("the idle subtask held the watermark back")
		}
	}
	cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// sessionizer closes a key's session after gap of event time without
// activity and emits "key:count".
type sessionizer struct {
	gap   int64
	count state.ValueState[int64]
	end   state.ValueState[int64]
}

func (s *sessionizer) Open(ctx *stream.KeyedContext[string]) error {
	s.count = state.Value[int64](ctx.State(), "count", 0)
	s.end = state.Value[int64](ctx.State(), "end", math.MinInt64)
	return nil
}

func (s *sessionizer) ProcessElement(e event, ctx *stream.KeyedContext[string], out stream.Collector[string]) error {
	ts, _ := ctx.Timestamp()
	if end, ok := s.end.Value(); ok {
		ctx.DeleteEventTimeTimer(end)
		if ts >= end {
			// The watermark lags the element: close the expired session
			// before this element opens a new one.
			if err := s.OnTimer(end, ctx, out); err != nil {
				return err
			}
		}
	}
	n, _ := s.count.Value()
	s.count.Update(n + 1)
	s.end.Update(ts + s.gap)
	ctx.RegisterEventTimeTimer(ts + s.gap)
	return nil
}

func (s *sessionizer) OnTimer(ts int64, ctx *stream.KeyedContext[string], out stream.Collector[string]) error {
	n, _ := s.count.Value()
	out.Collect(fmt.Sprintf("%s:%d@%d", ctx.CurrentKey(), n, ts))
	s.count.Clear()
	s.end.Clear()
	return nil
}

func TestKeyedProcessEventTimeTimers(t *testing.T) {
	in := []event{{"a", 0}, {"b", 5}, {"a", 50}, {"a", 200}, {"b", 90}, {"a", 400}, {"c", 1000}}
	// gap 100, out-of-orderness 100: a's sessions {0,50} end at 150,
	// {200} at 300, {400} at 500; b {5,90} at 190; c {1000} at 1100.
	want := []string{"a:1@300", "a:1@500", "a:2@150", "b:2@190", "c:1@1100"}
	for _, p := range []int{1, 2, 4} {
		env := newEnv(t, p)
		src := stream.FromSlice(env, in).SetParallelism(1).AssignTimestampsAndWatermarks(
			stream.ForBoundedOutOfOrderness[event](100 * time.Millisecond).WithTimestampAssigner(func(e event, _ int64) int64 { return e.TS }).WithWatermarkPerEvent()).SetParallelism(1)
		ks := stream.KeyBy(src, func(e event) string { return e.Key })
		got := stream.Collect(stream.KeyedProcess[string, event, string](ks, &sessionizer{gap: 100}))
		if err := env.Execute(context.Background(), "sessions"); err != nil {
			t.Fatal(err)
		}
		if g := sorted(got.Values(), strings.Compare); !slices.Equal(g, want) {
			t.Fatalf("p=%d: got %v, want %v", p, g, want)
		}
	}
}

// reminder sets a processing-time timer 1 s after each key's first record.
type reminder struct{ set state.ValueState[bool] }

func (r *reminder) Open(ctx *stream.KeyedContext[string]) error {
	r.set = state.Value[bool](ctx.State(), "set", false)
	return nil
}

func (r *reminder) ProcessElement(e event, ctx *stream.KeyedContext[string], out stream.Collector[string]) error {
	if done, _ := r.set.Value(); !done {
		r.set.Update(true)
		ctx.RegisterProcessingTimeTimer(ctx.CurrentProcessingTime() + 1000)
		ctx.RegisterProcessingTimeTimer(ctx.CurrentProcessingTime() + 1000) // one timer per key and time
	}
	return nil
}

func (r *reminder) OnTimer(ts int64, ctx *stream.KeyedContext[string], out stream.Collector[string]) error {
	if ctx.TimeDomain() != stream.ProcessingTime {
		return errors.New("wrong time domain")
	}
	out.Collect(fmt.Sprintf("%s@%d", ctx.CurrentKey(), ts))
	return nil
}

func TestKeyedProcessProcessingTimeTimers(t *testing.T) {
	clock := runtime.NewManualClock(10_000)
	env := newEnv(t, 1).SetClock(clock)
	// An endless source so that the job is still running when the clock
	// moves: keys a and b once, then nothing.
	src := stream.FromSource[event](env, &stream.Generator[event]{Count: -1, Fn: func(i int64) event {
		if i < 2 {
			return event{string(rune('a' + i)), i}
		}
		time.Sleep(time.Millisecond)
		return event{"idle", 0}
	}}, "keys")
	ks := stream.KeyBy(src.Filter(func(e event) bool { return e.Key != "idle" }), func(e event) string { return e.Key })
	fired := make(chan string, 10)
	stream.Collect(stream.Map(stream.KeyedProcess[string, event, string](ks, &reminder{}), func(s string) string { fired <- s; return s }))
	ctx, cancel := context.WithCancel(context.Background())
	job, err := env.ExecuteAsync(ctx, "proc-timers")
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the keyed task processed both keys (and so registered
	// their timers), then move the clock just short of them: nothing
	// fires; then past them: both fire once.
	for processed := int64(0); processed < 2; {
		processed = 0
		for _, m := range job.Metrics() {
			if strings.HasPrefix(m.Task, "KeyedProcess") {
				processed += m.RecordsIn
			}
		}
		time.Sleep(time.Millisecond)
	}
	clock.Advance(999 * time.Millisecond)
	select {
	case s := <-fired:
		t.Fatalf("timer fired early: %s", s)
	case <-time.After(100 * time.Millisecond):
	}
	clock.Advance(time.Millisecond)
	var got []string
	for len(got) < 2 {
		select {
		case s := <-fired:
			got = append(got, s)
		case <-time.After(5 * time.Second):
			t.Fatalf("timers did not fire: %v", got)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a@11000", "b@11000"}) {
		t.Fatalf("fired %v", got)
	}
	select {
	case s := <-fired:
		t.Fatalf("a timer fired twice: %s", s)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// twoSplitSource has two splits of timestamps 0, 10, ..., read by one
// reader one after the other: split "fast" completely, then "slow".
type twoSplitSource struct{}

func (twoSplitSource) Boundedness() connector.Boundedness { return connector.Bounded }
func (twoSplitSource) Splits(context.Context, int) ([]connector.Split, error) {
	return []connector.Split{&stream.GeneratorSplit{ID: 0, Stride: 1, End: 100}, &stream.GeneratorSplit{ID: 1, Stride: 1, End: 100}}, nil
}
func (twoSplitSource) NewReader(context.Context, connector.SplitContext) (connector.SplitReader[int64], error) {
	return &twoSplitReader{}, nil
}

type twoSplitReader struct{ splits []*stream.GeneratorSplit }

func (r *twoSplitReader) AddSplits(s []connector.Split) error {
	for _, x := range s {
		r.splits = append(r.splits, x.(*stream.GeneratorSplit))
	}
	return nil
}

func (r *twoSplitReader) Poll(_ context.Context, out connector.Output[int64]) (connector.ReadStatus, error) {
	if len(r.splits) == 0 {
		return connector.EndOfInput, nil
	}
	s := r.splits[0]
	o := out
	if so, ok := out.(connector.SplitOutputs[int64]); ok {
		o = so.ForSplit(s.SplitID())
	}
	o.Collect(s.Next * 10)
	if s.Next++; s.Next == s.End {
		r.splits = r.splits[1:]
	}
	return connector.MoreAvailable, nil
}
func (r *twoSplitReader) Snapshot() ([]connector.Split, error) { return nil, nil }
func (r *twoSplitReader) Close() error                         { return nil }

// lateness counts records at or behind the watermark that preceded them.
func lateRecords(values []string) int {
	late, wm := 0, int64(math.MinInt64)
	for _, v := range values {
		if strings.HasPrefix(v, "wm:") {
			if v != "wm:max" {
				fmt.Sscanf(v, "wm:%d", &wm)
			}
			continue
		}
		var x, ts int64
		fmt.Sscanf(v, "%d@%d", &x, &ts)
		if ts <= wm {
			late++
		}
	}
	return late
}

func TestPerSplitWatermarksAtTheSource(t *testing.T) {
	strategy := stream.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v }).WithWatermarkPerEvent()

	// Per split: the slow split holds the watermark back until the fast
	// one is finished, so nothing is late.
	env := newEnv(t, 1)
	got := stream.Collect(probe(stream.FromSourceWithWatermarks[int64](env, twoSplitSource{}, "two", strategy)))
	if err := env.Execute(context.Background(), "per-split"); err != nil {
		t.Fatal(err)
	}
	if n := lateRecords(got.Values()); n != 0 {
		t.Fatalf("%d records behind the watermark with per-split watermarks", n)
	}
	wms := 0
	for _, v := range got.Values() {
		if strings.HasPrefix(v, "wm:") {
			wms++
		}
	}
	if wms < 50 {
		t.Fatalf("only %d watermarks", wms)
	}

	// After the source, one generator sees the fast split first: the
	// slow split's records fall behind the watermark.
	env = newEnv(t, 1)
	got = stream.Collect(probe(stream.FromSource[int64](env, twoSplitSource{}, "two").AssignTimestampsAndWatermarks(strategy)))
	if err := env.Execute(context.Background(), "per-subtask"); err != nil {
		t.Fatal(err)
	}
	if n := lateRecords(got.Values()); n < 90 {
		t.Fatalf("only %d late records without per-split watermarks; the test does not show the difference", n)
	}
}

// summer counts its input and emits the count when the input ends.
type summer struct{ n int }

func (s *summer) ProcessElement(int64, *stream.Context, stream.Collector[string]) error {
	s.n++
	return nil
}

func (s *summer) Finish(_ *stream.Context, out stream.Collector[string]) error {
	out.Collect(fmt.Sprintf("total=%d", s.n))
	return nil
}

// What a function emits in Finish goes downstream ahead of the final
// watermark: an event-time timer downstream that fires at the end of the
// input (a batch outer join padding its rows) must see it.
func TestFinishOutputPrecedesFinalWatermark(t *testing.T) {
	env := newEnv(t, 2)
	src := stream.FromSlice(env, []int64{1, 2, 3, 4, 5})
	total := stream.Process[int64, string](src, &summer{}).SetParallelism(1)
	got := stream.Collect(probe(total).SetParallelism(1))
	if err := env.Execute(context.Background(), "finish-order"); err != nil {
		t.Fatal(err)
	}
	vals := got.Values()
	i, j := slices.IndexFunc(vals, func(s string) bool { return strings.HasPrefix(s, "total=5@") }), slices.Index(vals, "wm:max")
	if i < 0 || j < 0 || i > j {
		t.Fatalf("Finish's output and the final watermark arrive as %q; want total=5 before wm:max", vals)
	}
}
