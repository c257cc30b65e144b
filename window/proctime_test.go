package window_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// chanSource emits what the test sends on its channel (one split) and
// ends when the channel is closed.
type chanSource struct{ ch chan ev }

func (s *chanSource) Boundedness() connector.Boundedness { return connector.Unbounded }
func (s *chanSource) Splits(context.Context, int) ([]connector.Split, error) {
	return []connector.Split{chanSplit{}}, nil
}
func (s *chanSource) NewReader(context.Context, connector.SplitContext) (connector.SplitReader[ev], error) {
	return &chanReader{ch: s.ch}, nil
}

type chanSplit struct{}

func (chanSplit) SplitID() string { return "chan" }

type chanReader struct{ ch chan ev }

func (r *chanReader) AddSplits([]connector.Split) error    { return nil }
func (r *chanReader) Snapshot() ([]connector.Split, error) { return nil, nil }
func (r *chanReader) Close() error                         { return nil }
func (r *chanReader) Poll(_ context.Context, out connector.Output[ev]) (connector.ReadStatus, error) {
	select {
	case v, ok := <-r.ch:
		if !ok {
			return connector.EndOfInput, nil
		}
		out.Collect(v)
		return connector.MoreAvailable, nil
	default:
		return connector.NothingAvailable, nil
	}
}

// testClock is a manual clock that also fires a callback registered for a
// time that has already passed (as the wall clock does), so that a test
// that moves the clock cannot race with a timer being registered.
type testClock struct{ *runtime.ManualClock }

func (c testClock) AfterFunc(at int64, f func()) func() bool {
	stop := c.ManualClock.AfterFunc(at, f)
	if now := c.NowMillis(); at <= now {
		go c.Set(now)
	}
	return stop
}

// ackAssigner tells the test when the window operator took an element
// (assigned its windows at the current processing time).
type ackAssigner struct {
	window.AnyAssigner
	ack chan struct{}
}

func (a *ackAssigner) AssignWindows(ts, pt int64) []window.TimeWindow {
	defer func() { a.ack <- struct{}{} }()
	return a.AnyAssigner.AssignWindows(ts, pt)
}

type ackMergingAssigner struct{ *ackAssigner }

func (a ackMergingAssigner) MergeWindows(ws []window.TimeWindow, merge func([]window.TimeWindow, window.TimeWindow)) {
	a.AnyAssigner.(window.Merger).MergeWindows(ws, merge)
}

// fired is a result with the processing time at which it was emitted.
type fired struct {
	ev
	ts, at int64
}

// procHarness runs a processing-time windowing under a test clock.
type procHarness struct {
	t     *testing.T
	clock testClock
	in    chan ev
	ack   chan struct{}
	out   chan fired
	job   *stream.JobClient
	stop  context.CancelFunc
	once  sync.Once
}

func newProcHarness(t *testing.T, a window.AnyAssigner, build func(w *window.Windowed[int32, ev]) *stream.Stream[ev]) *procHarness {
	h := &procHarness{t: t, clock: testClock{runtime.NewManualClock(1000)}, in: make(chan ev), ack: make(chan struct{}, 16), out: make(chan fired, 1000)}
	env := newEnv(t, 2).SetClock(h.clock)
	src := stream.FromSource[ev](env, &chanSource{ch: h.in}, "chan").SetParallelism(1)
	var assigner window.AssignerBase = &ackAssigner{AnyAssigner: a, ack: h.ack}
	if _, ok := a.(window.Merger); ok {
		assigner = ackMergingAssigner{&ackAssigner{AnyAssigner: a, ack: h.ack}}
	}
	w := window.Of(stream.KeyBy(src, func(e ev) int32 { return e.Key }), assigner)
	res := build(w)
	clock := h.clock
	out := h.out
	stream.Collect(stream.Transform[ev, ev](res, "probe", "Probe", func(_ *runtime.OperatorContext, o runtime.Output[ev]) (runtime.Output[ev], error) {
		return probe{out: o, f: func(v ev, ts int64) { out <- fired{ev: v, ts: ts, at: clock.NowMillis()} }}, nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	job, err := env.ExecuteAsync(ctx, t.Name())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	h.job, h.stop = job, cancel
	t.Cleanup(h.close)
	return h
}

type probe struct {
	out runtime.Output[ev]
	f   func(ev, int64)
}

func (p probe) Emit(v ev, ts int64)    { p.f(v, ts); p.out.Emit(v, ts) }
func (p probe) EmitWatermark(wm int64) { p.out.EmitWatermark(wm) }

// send emits an element and waits until the window operator assigned it.
func (h *procHarness) send(key int32, val int64) {
	h.t.Helper()
	h.in <- ev{Key: key, Cnt: 1, Val: val}
	select {
	case <-h.ack:
	case <-time.After(10 * time.Second):
		h.t.Fatal("the window operator did not take the element")
	}
}

// expect waits for n results and returns them sorted by key and window.
func (h *procHarness) expect(n int) []fired {
	h.t.Helper()
	var got []fired
	for len(got) < n {
		select {
		case f := <-h.out:
			got = append(got, f)
		case <-time.After(10 * time.Second):
			h.t.Fatalf("got %d results, want %d: %v", len(got), n, got)
		}
	}
	slices.SortFunc(got, func(a, b fired) int {
		if a.Key != b.Key {
			return int(a.Key - b.Key)
		}
		return int(a.Start - b.Start)
	})
	return got
}

// quiet checks that nothing fired (what is in flight would arrive within
// a few milliseconds; this only catches some mistakes).
func (h *procHarness) quiet() {
	h.t.Helper()
	select {
	case f := <-h.out:
		h.t.Fatalf("unexpected result %+v", f)
	case <-time.After(20 * time.Millisecond):
	}
}

func (h *procHarness) close() {
	h.once.Do(func() {
		close(h.in)
		if err := h.job.Wait(); err != nil {
			h.t.Errorf("job: %v", err)
		}
		h.stop()
	})
}

func summary(f fired) string {
	return fmt.Sprintf("key %d [%d,%d) cnt %d val %d ts %d", f.Key, f.Start, f.End, f.Cnt, f.Val, f.ts)
}

func summaries(fs []fired) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = summary(f)
	}
	return out
}

func processSum(key int32, ctx *window.ProcessContext, elements []ev, out stream.Collector[ev]) error {
	s := elements[0]
	for _, e := range elements[1:] {
		s.Cnt += e.Cnt
		s.Val += e.Val
	}
	s.Start, s.End = ctx.Window().Start, ctx.Window().End
	out.Collect(s)
	return nil
}

func TestTumblingProcessingTime(t *testing.T) {
	h := newProcHarness(t, window.TumblingProcessingTime(100*time.Millisecond), func(w *window.Windowed[int32, ev]) *stream.Stream[ev] {
		return window.Process(w, window.ProcessWindowFunc[int32, ev, ev](processSum))
	})
	h.send(1, 1)
	h.send(1, 2)
	h.send(2, 10)
	h.clock.Set(1050)
	h.send(2, 20)
	h.quiet()
	h.clock.Set(1099) // the windows [1000, 1100) end
	got := h.expect(2)
	want := []string{"key 1 [1000,1100) cnt 2 val 3 ts 1099", "key 2 [1000,1100) cnt 2 val 30 ts 1099"}
	if !slices.Equal(summaries(got), want) {
		t.Fatalf("got %v, want %v", summaries(got), want)
	}
	for _, f := range got {
		if f.at < 1099 {
			t.Errorf("%s fired at %d, before its end", summary(f), f.at)
		}
	}
	// An element at 1099 belongs to [1000, 1100), whose end is now: it
	// fires at once, in a fresh window.
	h.send(1, 5)
	if got := summaries(h.expect(1)); !slices.Equal(got, []string{"key 1 [1000,1100) cnt 1 val 5 ts 1099"}) {
		t.Fatalf("got %v", got)
	}
	h.clock.Set(1150)
	h.send(1, 7)
	h.clock.Set(1250) // passes 1199
	if got := summaries(h.expect(1)); !slices.Equal(got, []string{"key 1 [1100,1200) cnt 1 val 7 ts 1199"}) {
		t.Fatalf("got %v", got)
	}
	// A window still open when the input ends never fires.
	h.send(3, 1)
	h.close()
	h.quiet()
}

func TestSlidingProcessingTime(t *testing.T) {
	h := newProcHarness(t, window.SlidingProcessingTime(100*time.Millisecond, 50*time.Millisecond), func(w *window.Windowed[int32, ev]) *stream.Stream[ev] {
		return window.Reduce(w, func(a, b ev) ev { a.Cnt += b.Cnt; a.Val += b.Val; return a })
	})
	h.send(1, 1) // at 1000: [950, 1050) and [1000, 1100)
	h.clock.Set(1060)
	h.send(1, 2) // at 1060: [1000, 1100) and [1050, 1150)
	got := h.expect(1)
	if s := summaries(got); !slices.Equal(s, []string{"key 1 [0,0) cnt 1 val 1 ts 1049"}) {
		t.Fatalf("got %v", s)
	}
	h.clock.Set(1200)
	got = h.expect(2)
	slices.SortFunc(got, func(a, b fired) int { return int(a.ts - b.ts) })
	if s := summaries(got); !slices.Equal(s, []string{"key 1 [0,0) cnt 2 val 3 ts 1099", "key 1 [0,0) cnt 1 val 2 ts 1149"}) {
		t.Fatalf("got %v", s)
	}
}

func TestProcessingTimeSessions(t *testing.T) {
	h := newProcHarness(t, window.ProcessingTimeSession(50*time.Millisecond), func(w *window.Windowed[int32, ev]) *stream.Stream[ev] {
		return window.Process(w, window.ProcessWindowFunc[int32, ev, ev](processSum))
	})
	h.send(1, 1) // [1000, 1050)
	h.clock.Set(1030)
	h.send(1, 2) // [1030, 1080): merges into [1000, 1080)
	h.send(2, 5) // [1030, 1080)
	h.clock.Set(1060)
	h.quiet()
	h.send(1, 4) // [1060, 1110): merges into [1000, 1110)
	h.clock.Set(1079)
	got := h.expect(1)
	if s := summaries(got); !slices.Equal(s, []string{"key 2 [1030,1080) cnt 1 val 5 ts 1079"}) {
		t.Fatalf("got %v", s)
	}
	h.clock.Set(1109)
	got = h.expect(1)
	if s := summaries(got); !slices.Equal(s, []string{"key 1 [1000,1110) cnt 3 val 7 ts 1109"}) {
		t.Fatalf("got %v", s)
	}
}

func TestContinuousProcessingTimeTrigger(t *testing.T) {
	h := newProcHarness(t, window.TumblingProcessingTime(time.Second), func(w *window.Windowed[int32, ev]) *stream.Stream[ev] {
		w = w.Trigger(window.ContinuousProcessingTimeTrigger(300 * time.Millisecond))
		return window.Process(w, window.ProcessWindowFunc[int32, ev, ev](processSum))
	})
	h.send(1, 1) // at 1000: window [1000, 2000), first firing at 1200
	h.clock.Set(1150)
	h.send(1, 2)
	h.quiet()
	h.clock.Set(1200)
	if s := summaries(h.expect(1)); !slices.Equal(s, []string{"key 1 [1000,2000) cnt 2 val 3 ts 1999"}) {
		t.Fatalf("got %v", s)
	}
	h.send(1, 4)
	h.clock.Set(1500)
	if s := summaries(h.expect(1)); !slices.Equal(s, []string{"key 1 [1000,2000) cnt 3 val 7 ts 1999"}) {
		t.Fatalf("got %v", s)
	}
	// 1800, then the window's end (1999): the trigger fires there too
	// (min(2100, 1999)), and the window is cleaned up.
	h.clock.Set(2500)
	got := h.expect(2)
	if s := summaries(got); !slices.Equal(s, []string{"key 1 [1000,2000) cnt 3 val 7 ts 1999", "key 1 [1000,2000) cnt 3 val 7 ts 1999"}) {
		t.Fatalf("got %v", s)
	}
	h.clock.Set(3000)
	h.quiet()
}
