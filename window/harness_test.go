package window_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// newEnv returns an environment with the given parallelism and options as
// key/value pairs.
func newEnv(t testing.TB, parallelism int, kv ...string) *stream.Environment {
	t.Helper()
	cfg := config.New()
	config.Parallelism.Set(cfg, parallelism)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return stream.NewEnvironmentWithConfig(cfg)
}

// source emits input from one subtask with a watermark after every
// element: max timestamp - bound - 1.
func source(env *stream.Environment, input []elem, bound int64) *stream.Stream[ev] {
	src := stream.FromSource[ev](env, &stream.Generator[ev]{
		Count:      int64(len(input)),
		Fn:         func(i int64) ev { return input[i].ev() },
		Timestamps: func(i int64) int64 { return input[i].ts },
	}, "input").SetParallelism(1)
	return src.AssignTimestampsAndWatermarks(
		stream.ForBoundedOutOfOrderness[ev](time.Duration(bound) * time.Millisecond).WithWatermarkPerEvent(),
	).SetParallelism(1)
}

// observer records each result with its timestamp and the last watermark
// before it; it runs chained to the window operator, so it sees exactly
// what that operator emits, in order.
type observer struct {
	out runtime.Output[obs]
	wm  int64
}

func (o *observer) Emit(v ev, ts int64) { o.out.Emit(obs{ev: v, Ts: ts, Wm: o.wm}, ts) }

func (o *observer) EmitWatermark(wm int64) {
	if wm <= o.wm {
		panic(fmt.Sprintf("watermark went from %d back to %d", o.wm, wm))
	}
	o.wm = wm
	o.out.EmitWatermark(wm)
}

func observe(s *stream.Stream[ev], p int) *stream.Collected[obs] {
	o := stream.Transform[ev, obs](s, "observe", "Observe", func(_ *runtime.OperatorContext, out runtime.Output[obs]) (runtime.Output[ev], error) {
		return &observer{out: out, wm: math.MinInt64}, nil
	}).SetParallelism(p)
	c := stream.Collect(o)
	c.SetParallelism(p)
	return c
}

// aggregate is the tests' AggregateFunction: combine with an empty
// accumulator.
var aggregate = window.NewAggregate(
	func() ev { return ev{} },
	func(v ev, acc ev) ev { return mergeAcc(acc, v) },
	func(acc ev) ev { return acc },
	mergeAcc,
)

func mergeAcc(a, b ev) ev {
	switch {
	case a.Cnt == 0:
		return b
	case b.Cnt == 0:
		return a
	}
	return combine(a, b)
}

// procFn summarizes a window's elements (one pre-aggregated value for
// ReduceProcess and AggregateProcess) with the window's bounds and, unless
// the windows merge, the number of firings so far from WindowState.
type procFn[K comparable] struct {
	key      func(K) int32
	useState bool
}

func (f *procFn[K]) Process(key K, ctx *window.ProcessContext, elements []ev, out stream.Collector[ev]) error {
	if len(elements) == 0 {
		return fmt.Errorf("window %v fired without elements", ctx.Window())
	}
	s := elements[0]
	for _, e := range elements[1:] {
		s = combine(s, e)
	}
	if f.key != nil && s.Key != f.key(key) {
		return fmt.Errorf("window of key %v got elements of key %d", key, s.Key)
	}
	s.Start, s.End = ctx.Window().Start, ctx.Window().End
	if f.useState {
		s.Fires = ctx.WindowState().Add("fires", 1)
	}
	out.Collect(s)
	return nil
}

// modTrigger is a typed trigger: it fires and purges when an element's
// value is a multiple of 5.
type modTrigger struct{}

func (modTrigger) OnElement(v ev, _ int64, _ window.TimeWindow, _ window.TriggerContext) window.TriggerResult {
	if v.Val%5 == 0 {
		return window.FireAndPurge
	}
	return window.Continue
}
func (modTrigger) OnEventTime(int64, window.TimeWindow, window.TriggerContext) window.TriggerResult {
	return window.Continue
}
func (modTrigger) OnProcessingTime(int64, window.TimeWindow, window.TriggerContext) window.TriggerResult {
	return window.Continue
}
func (modTrigger) Clear(window.TimeWindow, window.TriggerContext)   {}
func (modTrigger) CanMerge() bool                                   { return false }
func (modTrigger) OnMerge(window.TimeWindow, window.TriggerContext) {}

// timerTrigger sets an event-time timer customTimerDelay after every
// element and fires when one fires: many timers per key and window.
type timerTrigger struct{}

func (timerTrigger) OnElement(ts int64, _ window.TimeWindow, c window.TriggerContext) window.TriggerResult {
	c.RegisterEventTimeTimer(ts + customTimerDelay)
	return window.Continue
}
func (timerTrigger) OnEventTime(int64, window.TimeWindow, window.TriggerContext) window.TriggerResult {
	return window.Fire
}
func (timerTrigger) OnProcessingTime(int64, window.TimeWindow, window.TriggerContext) window.TriggerResult {
	return window.Continue
}
func (timerTrigger) Clear(window.TimeWindow, window.TriggerContext)   {}
func (timerTrigger) CanMerge() bool                                   { return true }
func (timerTrigger) OnMerge(window.TimeWindow, window.TriggerContext) {}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func (c wcfg) assigner() window.AssignerBase {
	switch c.kind {
	case "tumbling":
		return window.TumblingEventTime(ms(c.size), ms(c.offset))
	case "sliding":
		return window.SlidingEventTime(ms(c.size), ms(c.slide), ms(c.offset))
	case "session":
		return window.EventTimeSession(ms(c.gap))
	case "dynamic":
		return window.DynamicEventTimeSession(func(v ev) time.Duration { return ms(dynamicGap(v.Val)) })
	}
	return window.Global()
}

// configure applies the configuration's trigger, evictor, lateness and
// late side output.
func configure[K comparable](c wcfg, w *window.Windowed[K, ev], late stream.OutputTag[ev]) *window.Windowed[K, ev] {
	if c.helper == "" {
		switch c.trig {
		case "purging":
			w = w.Trigger(window.Purging(window.EventTimeTrigger()))
		case "count":
			w = w.Trigger(window.CountTrigger(c.n))
		case "purging-count":
			w = w.Trigger(window.Purging(window.CountTrigger(c.n)))
		case "continuous":
			w = w.Trigger(window.ContinuousEventTimeTrigger(ms(c.n)))
		case "custom-mod":
			w = w.Trigger(modTrigger{})
		case "purging-custom-mod":
			w = w.Trigger(window.Purging(fireOnMod{}))
		case "custom-timer":
			w = w.Trigger(timerTrigger{})
		}
		switch c.evict {
		case "count":
			w = w.Evictor(window.CountEvictor(c.evictN, c.evictAfter))
		case "time":
			w = w.Evictor(window.TimeEvictor(ms(c.evictN), c.evictAfter))
		case "delta":
			w = w.Evictor(window.DeltaEvictor(c.deltaTh, deltaOf, c.evictAfter))
		}
	}
	if c.lateness > 0 {
		w = w.AllowedLateness(ms(c.lateness))
	}
	if c.sideOutput {
		w = w.SideOutputLateData(late)
	}
	return w
}

var kinds = []string{"reduce", "aggregate", "process", "reduce-process", "aggregate-process"}

// results are the collected outputs of one engine run, per kind.
type results struct {
	main, late map[string]*stream.Collected[obs]
}

func apply[K comparable](c wcfg, w *window.Windowed[K, ev], key func(K) int32, p int, late stream.OutputTag[ev]) results {
	r := results{main: map[string]*stream.Collected[obs]{}, late: map[string]*stream.Collected[obs]{}}
	for _, kind := range kinds {
		fn := &procFn[K]{key: key, useState: !c.merging()}
		var s *stream.Stream[ev]
		switch kind {
		case "reduce":
			s = window.Reduce(w, combine)
		case "aggregate":
			s = window.Aggregate(w, aggregate)
		case "process":
			s = window.Process(w, fn)
		case "reduce-process":
			s = window.ReduceProcess(w, combine, fn)
		case "aggregate-process":
			s = window.AggregateProcess(w, aggregate, fn)
		}
		r.main[kind] = observe(s, p)
		if c.sideOutput {
			r.late[kind] = observe(stream.GetSideOutput(s, late), p)
		}
	}
	return r
}

// runEngine runs the configuration over input at parallelism p.
func runEngine(t *testing.T, c wcfg, input []elem, p int) results {
	t.Helper()
	env := newEnv(t, p)
	src := source(env, input, c.bound)
	late := stream.NewOutputTag[ev]("late")
	var r results
	if c.all {
		w := window.All(src, c.assigner())
		if c.helper == "count" {
			w = window.CountWindowAll(src, c.n)
		}
		r = apply(c, configure(c, w, late), nil, 1, late)
	} else {
		ks := stream.KeyBy(src, func(e ev) int32 { return e.Key })
		var w *window.Windowed[int32, ev]
		switch c.helper {
		case "count":
			w = window.CountWindow(ks, c.n)
		case "count-sliding":
			w = window.CountWindowSliding(ks, c.evictN, c.n)
		default:
			w = window.Of(ks, c.assigner())
		}
		w = configure(c, w, late)
		r = apply(c, w, func(k int32) int32 { return k }, p, late)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Execute(ctx, c.name); err != nil {
		t.Fatalf("%s p=%d: %v", c.name, p, err)
	}
	return r
}

// diff compares two multisets of records and describes the difference.
func diff(got, want []obs) string {
	count := map[obs]int{}
	for _, o := range want {
		count[o]++
	}
	for _, o := range got {
		count[o]--
	}
	var missing, extra []string
	for o, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, o.String())
		}
		for ; n < 0; n++ {
			extra = append(extra, o.String())
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	slices.Sort(missing)
	slices.Sort(extra)
	var b strings.Builder
	fmt.Fprintf(&b, "got %d records, want %d; %d missing, %d unexpected", len(got), len(want), len(missing), len(extra))
	for i, m := range missing {
		if i == 8 {
			fmt.Fprintf(&b, "\n  ...")
			break
		}
		fmt.Fprintf(&b, "\n  missing    %s", m)
	}
	for i, m := range extra {
		if i == 8 {
			fmt.Fprintf(&b, "\n  ...")
			break
		}
		fmt.Fprintf(&b, "\n  unexpected %s", m)
	}
	return b.String()
}
