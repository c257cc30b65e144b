package window_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

func execute(t *testing.T, env *stream.Environment) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return env.Execute(ctx, t.Name())
}

// valuesFn emits "[start,end) v1,v2,...", values sorted.
var valuesFn = window.ProcessWindowFunc[int32, ev, string](func(_ int32, ctx *window.ProcessContext, elements []ev, out stream.Collector[string]) error {
	var vs []string
	for _, e := range elements {
		vs = append(vs, fmt.Sprint(e.MinTs))
	}
	slices.Sort(vs)
	out.Collect(fmt.Sprintf("[%d,%d) %s", ctx.Window().Start, ctx.Window().End, strings.Join(vs, ",")))
	return nil
})

// TestLatenessBoundaries walks through the exact boundaries of firing,
// allowed lateness, cleanup and late data with tumbling 10ms windows,
// 5ms allowed lateness and watermark = max timestamp - 1.
func TestLatenessBoundaries(t *testing.T) {
	steps := []int64{
		1,  // wm 0
		11, // wm 10: [0,10) fires with {1} (its max timestamp 9 <= 10)
		5,  // late but allowed (9+5 > 10): [0,10) fires again with {1,5}
		15, // wm 14: [0,10) is cleaned up (9+5 <= 14)
		9,  // its window is gone and 9+5 <= 14: late, to the side output
		10, // [10,20) is not late
		25, // wm 24: [10,20) fires with {10,11,15}
	} // the end fires [20,30) with {25}
	var input []elem
	for i, ts := range steps {
		input = append(input, elem{seq: i, key: 1, ts: ts, val: ts})
	}
	env := newEnv(t, 1)
	late := stream.NewOutputTag[ev]("late")
	w := window.Of(stream.KeyBy(source(env, input, 0), func(e ev) int32 { return e.Key }), window.TumblingEventTime(10*time.Millisecond)).
		AllowedLateness(5 * time.Millisecond).SideOutputLateData(late)
	res := window.Process(w, valuesFn)
	got := stream.Collect(stream.Map(res, func(s string) string { return s }))
	lateVals := stream.Collect(stream.Map(stream.GetSideOutput(res, late), func(e ev) int64 { return e.MinTs }))
	if err := execute(t, env); err != nil {
		t.Fatal(err)
	}
	want := []string{"[0,10) 1", "[0,10) 1,5", "[10,20) 10,11,15", "[20,30) 25"}
	if g := got.Values(); !slices.Equal(g, want) {
		t.Errorf("got %q, want %q", g, want)
	}
	if g := lateVals.Values(); !slices.Equal(g, []int64{9}) {
		t.Errorf("late %v, want [9]", g)
	}
}

// stateFn counts windows per key in GlobalState, the windows cleaned up
// in Clear, emits a side output per firing, and counts Open and Close.
type stateFn struct {
	opened, closed *atomic.Int32
	side           stream.OutputTag[string]
}

func (f *stateFn) Open(ctx *window.ProcessContext) error {
	if ctx.Parallelism() != 2 || ctx.Subtask() < 0 || ctx.Subtask() > 1 {
		return fmt.Errorf("subtask %d of %d", ctx.Subtask(), ctx.Parallelism())
	}
	f.opened.Add(1)
	return nil
}

func (f *stateFn) Close() error { f.closed.Add(1); return nil }

func (f *stateFn) Process(key int32, ctx *window.ProcessContext, elements []ev, out stream.Collector[string]) error {
	n := ctx.GlobalState().Add("windows", 1)
	cleared, _ := ctx.GlobalState().Get("cleared")
	fires := ctx.WindowState().Add("fires", 1)
	out.Collect(fmt.Sprintf("key %d window %d cleared %d fires %d", key, n, cleared, fires))
	window.SideOutput(ctx, f.side, fmt.Sprintf("key %d [%d,%d)", key, ctx.Window().Start, ctx.Window().End))
	return nil
}

func (f *stateFn) Clear(ctx *window.ProcessContext) error {
	if _, ok := ctx.WindowState().Get("fires"); !ok {
		return errors.New("window state gone before Clear")
	}
	ctx.GlobalState().Add("cleared", 1)
	return nil
}

func TestProcessContextStateClearAndSideOutputs(t *testing.T) {
	var input []elem
	for i := range 40 {
		input = append(input, elem{seq: i, key: int32(i % 2), ts: int64(i * 5)})
	}
	env := newEnv(t, 2)
	side := stream.NewOutputTag[string]("side")
	var opened, closed atomic.Int32
	w := window.Of(stream.KeyBy(source(env, input, 0), func(e ev) int32 { return e.Key }), window.TumblingEventTime(20*time.Millisecond))
	res := window.Process(w, &stateFn{opened: &opened, closed: &closed, side: side})
	got := stream.Collect(res)
	sides := stream.Collect(stream.GetSideOutput(res, side))
	if err := execute(t, env); err != nil {
		t.Fatal(err)
	}
	var want, wantSide []string
	for k := range 2 {
		for n := 1; n <= 10; n++ {
			want = append(want, fmt.Sprintf("key %d window %d cleared %d fires 1", k, n, n-1))
			wantSide = append(wantSide, fmt.Sprintf("key %d [%d,%d)", k, (n-1)*20, n*20))
		}
	}
	if g := sorted(got.Values()); !slices.Equal(g, sorted(want)) {
		t.Errorf("got %q\nwant %q", g, sorted(want))
	}
	if g := sorted(sides.Values()); !slices.Equal(g, sorted(wantSide)) {
		t.Errorf("side output %q\nwant %q", g, sorted(wantSide))
	}
	if opened.Load() != 2 || closed.Load() != 2 {
		t.Errorf("opened %d, closed %d times, want 2 (one per subtask)", opened.Load(), closed.Load())
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestWindowStateWithMergingWindowsFails(t *testing.T) {
	env := newEnv(t, 1)
	input := []elem{{key: 1, ts: 1}, {seq: 1, key: 1, ts: 3}}
	w := window.Of(stream.KeyBy(source(env, input, 0), func(e ev) int32 { return e.Key }), window.EventTimeSession(10*time.Millisecond))
	stream.Collect(window.Process(w, window.ProcessWindowFunc[int32, ev, int64](func(_ int32, ctx *window.ProcessContext, _ []ev, out stream.Collector[int64]) error {
		ctx.WindowState().Set("x", 1)
		return nil
	})))
	err := execute(t, env)
	if !errors.Is(err, window.ErrMergingWindowState) {
		t.Fatalf("got %v, want ErrMergingWindowState", err)
	}
}

func TestProcessErrorNamesTheWindowOperator(t *testing.T) {
	env := newEnv(t, 2)
	input := []elem{{key: 1, ts: 1}}
	boom := errors.New("boom")
	w := window.Of(stream.KeyBy(source(env, input, 0), func(e ev) int32 { return e.Key }), window.TumblingEventTime(10*time.Millisecond))
	stream.Collect(window.Process(w, window.ProcessWindowFunc[int32, ev, int64](func(int32, *window.ProcessContext, []ev, stream.Collector[int64]) error {
		return boom
	})))
	err := execute(t, env)
	var oe *stream.OperatorError
	if !errors.As(err, &oe) || !errors.Is(err, boom) {
		t.Fatalf("got %v, want an OperatorError wrapping boom", err)
	}
	if want := `window "TumblingEventTimeWindows(10ms) Process"`; oe.Operator != want {
		t.Fatalf("operator %q, want %q", oe.Operator, want)
	}
}

func TestEventTimeWindowsNeedTimestamps(t *testing.T) {
	env := newEnv(t, 1)
	src := stream.FromSlice(env, []ev{{Key: 1}})
	w := window.Of(stream.KeyBy(src, func(e ev) int32 { return e.Key }), window.TumblingEventTime(time.Second))
	stream.Collect(window.Reduce(w, combine))
	if err := execute(t, env); err == nil || !strings.Contains(err.Error(), "no event timestamp") {
		t.Fatalf("got %v, want an error about the missing timestamp", err)
	}
}

// fireOnMod is a typed trigger that fires, without purging, on values
// that are multiples of 5; Purging(fireOnMod{}) is modTrigger.
type fireOnMod struct{ modTrigger }

func (fireOnMod) OnElement(v ev, ts int64, w window.TimeWindow, c window.TriggerContext) window.TriggerResult {
	if v.Val%5 == 0 {
		return window.Fire
	}
	return window.Continue
}

func TestInvalidConfigurationsFailTheJob(t *testing.T) {
	type intWindowed = *window.Windowed[int32, int64]
	for _, c := range []struct {
		name  string
		build func(w func(a window.AssignerBase) intWindowed)
		want  string
	}{
		{"zero size", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.TumblingEventTime(0)), sum))
		}, "size >= 1ms"},
		{"offset", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.TumblingEventTime(time.Second, time.Second)), sum))
		}, "|offset| < size"},
		{"zero slide", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.SlidingEventTime(time.Second, 0)), sum))
		}, "slide >= 1ms"},
		{"two offsets", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.SlidingEventTime(time.Second, time.Millisecond, 0, 0)), sum))
		}, "at most one offset"},
		{"zero gap", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.EventTimeSession(0)), sum))
		}, "gap >= 1ms"},
		{"count trigger", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.Global()).Trigger(window.CountTrigger(0)), sum))
		}, "must be positive"},
		{"negative lateness", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.TumblingEventTime(time.Second)).AllowedLateness(-time.Second), sum))
		}, "must not be negative"},
		{"trigger type", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.Global()).Trigger(modTrigger{}), sum))
		}, "is neither a Trigger[int64] nor an AnyTrigger"},
		{"purging trigger type", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.Global()).Trigger(window.Purging(fireOnMod{})), sum))
		}, "is neither a Trigger[int64] nor an AnyTrigger"},
		{"trigger cannot merge", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.EventTimeSession(time.Second)).Trigger(nonMerging{}), sum))
		}, "cannot merge windows"},
		{"evictor type", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.Global()).Evictor(window.DeltaEvictor(1, deltaOf)), sum))
		}, "is for elements of type"},
		{"assigner type", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(window.DynamicEventTimeSession(func(ev) time.Duration { return time.Second })), sum))
		}, "is neither an Assigner[int64] nor an AnyAssigner"},
		{"nil assigner", func(w func(window.AssignerBase) intWindowed) {
			stream.Collect(window.Reduce(w(nil), sum))
		}, "nil assigner"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, 1)
			ks := stream.KeyBy(stream.FromSlice(env, []int64{1}), func(v int64) int32 { return int32(v) })
			c.build(func(a window.AssignerBase) intWindowed { return window.Of(ks, a) })
			err := execute(t, env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func sum(a, b int64) int64 { return a + b }

// nonMerging is a trigger that cannot merge.
type nonMerging struct{ window.AnyTrigger }

func (nonMerging) CanMerge() bool { return false }
func (n nonMerging) OnElement(ts int64, w window.TimeWindow, c window.TriggerContext) window.TriggerResult {
	return window.Continue
}

func TestOperatorNamesAndWindowAllParallelism(t *testing.T) {
	env := newEnv(t, 4)
	src := stream.FromSlice(env, []int64{1})
	ks := stream.KeyBy(src, func(v int64) int64 { return v })
	window.Reduce(window.Of(ks, window.TumblingEventTime(10*time.Second)), sum)
	window.Aggregate(window.Of(ks, window.SlidingEventTime(time.Minute, 10*time.Second, 2*time.Second)),
		window.NewAggregate(func() int64 { return 0 }, func(v, acc int64) int64 { return v + acc }, func(acc int64) int64 { return acc }, sum))
	window.Process(window.Of(ks, window.EventTimeSession(5*time.Second)), window.ProcessWindowFunc[int64, int64, int64](func(int64, *window.ProcessContext, []int64, stream.Collector[int64]) error { return nil }))
	window.Reduce(window.CountWindowAll(src, 10), sum).SetParallelism(3)
	stream.Collect(window.Reduce(window.All(src, window.TumblingProcessingTime(time.Minute)), sum))
	jg, err := env.JobGraph("names")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range jg.Stream.Nodes {
		if n.Kind == "window" {
			names = append(names, fmt.Sprintf("%s p=%d", n.Name, n.Parallelism))
		}
	}
	want := []string{
		"TumblingEventTimeWindows(10s) Reduce p=4",
		"SlidingEventTimeWindows(1m0s, 10s, offset 2s) Aggregate p=4",
		"EventTimeSessionWindows(5s) Process p=4",
		"GlobalWindows All Reduce p=3",
		"TumblingProcessingTimeWindows(1m0s) All Reduce p=1",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("got %q\nwant %q", names, want)
	}
}

// TestWindowAllAtParallelismAboveOne: WindowAll routes everything to one
// subtask even if its parallelism is raised.
func TestWindowAllAtParallelismAboveOne(t *testing.T) {
	env := newEnv(t, 3)
	src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: 100, Fn: func(i int64) int64 { return i }}, "n")
	got := stream.Collect(window.Reduce(window.CountWindowAll(src, 10), sum).SetParallelism(3))
	if err := execute(t, env); err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, v := range got.Values() {
		total += v
	}
	if len(got.Values()) != 10 || total != 99*100/2 {
		t.Fatalf("got %v", got.Values())
	}
}
