package window_test

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// TestFastPathSelection checks which configurations of the property tests
// run on the fast path (aligned event-time windows, the default trigger,
// no evictor, an incremental function) and which on the general operator.
func TestFastPathSelection(t *testing.T) {
	env := stream.NewEnvironmentWithConfig(nil)
	src := stream.FromSlice(env, []ev{})
	ks := stream.KeyBy(src, func(e ev) int32 { return e.Key })
	late := stream.NewOutputTag[ev]("late")
	fast := 0
	for _, c := range configs {
		var w *window.Windowed[int32, ev]
		switch c.helper {
		case "count":
			w = window.CountWindow(ks, c.n)
		case "count-sliding":
			w = window.CountWindowSliding(ks, c.evictN, c.n)
		default:
			w = window.Of(ks, c.assigner())
		}
		ds, _ := drivers(t, c, configure(c, w, late), func(k int32) int32 { return k })
		for _, kind := range kinds {
			want := (c.kind == "tumbling" || c.kind == "sliding") && c.trig == "" && c.evict == "" && kind != "process"
			got := ds[kind].(interface{ FastPath() bool }).FastPath()
			if got != want {
				t.Errorf("%s %s: fast path %v, want %v", c.name, kind, got, want)
			}
			if got {
				fast++
			}
		}
	}
	if fast == 0 {
		t.Error("no configuration runs on the fast path")
	}
	for _, c := range []struct {
		name string
		w    *window.Windowed[int32, ev]
		want bool
	}{
		{"explicit EventTimeTrigger", window.Of(ks, window.TumblingEventTime(time.Second)).Trigger(window.EventTimeTrigger()), true},
		{"sliding with lateness", window.Of(ks, window.SlidingEventTime(time.Second, time.Millisecond)).AllowedLateness(time.Hour), true},
		{"processing time", window.Of(ks, window.TumblingProcessingTime(time.Second)), false},
		{"session", window.Of(ks, window.EventTimeSession(time.Second)), false},
		{"purging", window.Of(ks, window.TumblingEventTime(time.Second)).Trigger(window.Purging(window.EventTimeTrigger())), false},
		{"evictor", window.Of(ks, window.TumblingEventTime(time.Second)).Evictor(window.CountEvictor(2)), false},
	} {
		d, err := window.NewReduceDriver(c.w, combine)
		if err != nil {
			t.Fatal(err)
		}
		if d.FastPath() != c.want {
			t.Errorf("%s: fast path %v, want %v", c.name, d.FastPath(), c.want)
		}
	}
}

// TestFastPathSnapshotsItsState: the fast path's state (open panes,
// per-key state) is snapshotted and restored, and an operator without
// state snapshots to nothing.
func TestFastPathSnapshotsItsState(t *testing.T) {
	env := stream.NewEnvironmentWithConfig(nil)
	ks := stream.KeyBy(stream.FromSlice(env, []ev{}), func(e ev) int32 { return e.Key })
	w := window.Of(ks, window.TumblingEventTime(10*time.Millisecond)).AllowedLateness(5 * time.Millisecond)
	d, err := window.NewReduceDriver(w, combine)
	if err != nil {
		t.Fatal(err)
	}
	if !d.FastPath() {
		t.Fatal("not on the fast path")
	}
	if b, err := d.SnapshotBytes(); err != nil || len(b) != 0 {
		t.Fatalf("empty operator: %d bytes, %v", len(b), err)
	}
	d.Emit(ev{Key: 1, Cnt: 1, MinTs: 3, MaxTs: 3}, 3)
	d.Watermark(10) // fires [0,10), keeps it until 14
	b, err := d.SnapshotBytes()
	if err != nil || len(b) == 0 || len(d.Out) != 1 {
		t.Fatalf("after firing: %d bytes, error %v, %d results", len(b), err, len(d.Out))
	}
	r, err := d.Restore(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Keys() != 1 {
		t.Fatalf("restored %d keys, want 1", r.Keys())
	}
	// A late element within the lateness fires the restored window at
	// once, with the restored contents; the restored watermark does not
	// fire it again.
	for _, x := range []*window.Driver[ev, ev]{d, r} {
		x.Emit(ev{Key: 1, Cnt: 1, MinTs: 5, MaxTs: 5}, 5)
		x.Watermark(14)
		if err := x.Check(); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.Out) != 1 || r.Out[0] != d.Out[1] || r.Out[0].V.Cnt != 2 || r.Keys() != 0 {
		t.Fatalf("restored: %+v (keys %d), original %+v", r.Out, r.Keys(), d.Out)
	}
	// Per-key state alone is snapshotted too.
	fn := window.ProcessWindowFunc[int32, ev, ev](func(_ int32, ctx *window.ProcessContext, e []ev, out stream.Collector[ev]) error {
		ctx.GlobalState().Add("n", 1)
		out.Collect(e[0])
		return nil
	})
	d, err = window.NewReduceProcessDriver(w, combine, fn)
	if err != nil {
		t.Fatal(err)
	}
	d.Emit(ev{Key: 1, Cnt: 1}, 3)
	d.Watermark(math.MaxInt64)
	b, err = d.SnapshotBytes()
	if err != nil || d.Keys() != 1 {
		t.Fatalf("with per-key state: snapshot error %v, %d keys", err, d.Keys())
	}
	if r, err = d.Restore(b); err != nil || r.Keys() != 1 {
		t.Fatalf("restored per-key state: %v, %d keys", err, r.Keys())
	}
}

// TestFastPathProcessContext runs TestProcessContextStateClearAndSideOutputs'
// function (GlobalState, WindowState, Clear, side outputs, Open and Close)
// with pre-aggregation, on the fast path.
func TestFastPathProcessContext(t *testing.T) {
	for _, kind := range []string{"reduce-process", "aggregate-process"} {
		t.Run(kind, func(t *testing.T) {
			var input []elem
			for i := range 40 {
				input = append(input, elem{seq: i, key: int32(i % 2), ts: int64(i * 5)})
			}
			env := newEnv(t, 2)
			side := stream.NewOutputTag[string]("side")
			var opened, closed atomic.Int32
			w := window.Of(stream.KeyBy(source(env, input, 0), func(e ev) int32 { return e.Key }), window.TumblingEventTime(20*time.Millisecond))
			fn := &stateFn{opened: &opened, closed: &closed, side: side}
			var res *stream.Stream[string]
			if kind == "reduce-process" {
				res = window.ReduceProcess(w, combine, fn)
			} else {
				res = window.AggregateProcess(w, aggregate, fn)
			}
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
				t.Errorf("opened %d, closed %d times, want 2", opened.Load(), closed.Load())
			}
		})
	}
}

// TestFastPathKeyChurn runs many keys that come and go through sliding
// windows with allowed lateness, so that the fast path frees and reuses
// key ids, and checks every firing against a direct count.
func TestFastPathKeyChurn(t *testing.T) {
	env := stream.NewEnvironmentWithConfig(nil)
	ks := stream.KeyBy(stream.FromSlice(env, []ev{}), func(e ev) int32 { return e.Key })
	w := window.Of(ks, window.SlidingEventTime(20*time.Millisecond, 10*time.Millisecond)).AllowedLateness(15 * time.Millisecond)
	fn := window.ProcessWindowFunc[int32, ev, ev](func(key int32, ctx *window.ProcessContext, e []ev, out stream.Collector[ev]) error {
		r := e[0]
		r.Start, r.Fires = ctx.Window().Start, ctx.WindowState().Add("fires", 1)
		if r.Key != key {
			return fmt.Errorf("key %d got key %d's elements", key, r.Key)
		}
		out.Collect(r)
		return nil
	})
	d, err := window.NewReduceProcessDriver(w, combine, fn)
	if err != nil {
		t.Fatal(err)
	}
	if !d.FastPath() {
		t.Fatal("not on the fast path")
	}
	type kw struct {
		key   int32
		start int64
	}
	counts := map[kw]int64{}
	n := 60000
	if raceEnabled {
		n = 15000
	}
	for i := range n {
		// Keys drift: each lives for about 40ms, then new ones come; a few
		// elements are late but allowed.
		ts := int64(i / 20)
		if i%7 == 0 {
			ts -= 12
		}
		key := int32(i%400) + int32(i/800)*100
		d.Emit(ev{Key: key, Cnt: 1}, ts)
		for s := window.WindowStart(ts, 0, 10); s > ts-20; s -= 10 {
			if s+19+15 > int64(i/20)-1-5 || i == 0 { // not late at the last watermark
				counts[kw{key, s}]++
			}
		}
		if i%20 == 19 {
			d.Watermark(int64(i/20) - 5)
			if err := d.Check(); err != nil {
				t.Fatalf("after element %d: %v", i, err)
			}
		}
	}
	d.Watermark(math.MaxInt64)
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if d.Keys() != 0 {
		t.Fatalf("%d keys keep state", d.Keys())
	}
	// The last firing of each window has its whole count.
	last := map[kw]ev{}
	for _, f := range d.Out {
		k := kw{f.V.Key, f.V.Start}
		if p, ok := last[k]; ok && f.V.Fires != p.Fires+1 {
			t.Fatalf("%v fired %d after %d", k, f.V.Fires, p.Fires)
		}
		last[k] = f.V
	}
	if len(last) != len(counts) {
		t.Fatalf("%d windows fired, want %d", len(last), len(counts))
	}
	for k, c := range counts {
		if last[k].Cnt != c {
			t.Fatalf("%v: count %d, want %d", k, last[k].Cnt, c)
		}
	}
}
