package window_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// firedBeforeTheEnd counts firings that saw a watermark below the
// maximum.
var firedBeforeTheEnd atomic.Int64

// windowSums emits "key [start,end) sum count" per firing.
var windowSums = window.ProcessWindowFunc[int32, ev, string](func(key int32, ctx *window.ProcessContext, elements []ev, out stream.Collector[string]) error {
	if ctx.CurrentWatermark() != math.MaxInt64 {
		firedBeforeTheEnd.Add(1)
	}
	var sum int64
	for _, e := range elements {
		sum += e.Val
	}
	out.Collect(fmt.Sprintf("%d [%d,%d) %d %d", key, ctx.Window().Start, ctx.Window().End, sum, len(elements)))
	return nil
})

// referenceWindows computes the tumbling (size > 0) or session (gap > 0)
// windows of complete input per key, as windowSums formats them.
func referenceWindows(input []elem, size, gap int64) []string {
	byKey := make(map[int32][]elem)
	for _, e := range input {
		byKey[e.key] = append(byKey[e.key], e)
	}
	var out []string
	for key, es := range byKey {
		slices.SortFunc(es, func(a, b elem) int { return int(a.ts - b.ts) })
		type win struct{ start, end, sum, n int64 }
		var ws []win
		for _, e := range es {
			if size > 0 {
				start := e.ts - ((e.ts%size)+size)%size
				i := slices.IndexFunc(ws, func(w win) bool { return w.start == start })
				if i < 0 {
					ws = append(ws, win{start: start, end: start + size})
					i = len(ws) - 1
				}
				ws[i].sum += e.val
				ws[i].n++
				continue
			}
			if n := len(ws); n > 0 && e.ts <= ws[n-1].end { // windows that touch merge, as Flink's intersect
				ws[n-1].end = max(ws[n-1].end, e.ts+gap)
				ws[n-1].sum += e.val
				ws[n-1].n++
				continue
			}
			ws = append(ws, win{start: e.ts, end: e.ts + gap, sum: e.val, n: 1})
		}
		for _, w := range ws {
			out = append(out, fmt.Sprintf("%d [%d,%d) %d %d", key, w.start, w.end, w.sum, w.n))
		}
	}
	slices.Sort(out)
	return out
}

// TestBatchWindowsKeyByKey runs tumbling and session windows over
// out-of-order input of several keys, never later than the watermark's
// bound, in streaming and in batch mode at parallelism 1, 2 and 4: both
// equal the reference over the complete input. In batch mode the window
// operator gathers its input, spilling sorted runs under a 1 MiB budget,
// and fires each key's windows at the key's end.
func TestBatchWindowsKeyByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const bound = 40
	input := make([]elem, 30000)
	base := int64(-500)
	for i := range input {
		base += rng.Int64N(4)
		input[i] = elem{seq: i, key: int32(rng.IntN(50)), ts: base - rng.Int64N(bound+1), val: rng.Int64N(100)}
	}
	for _, c := range []struct {
		name      string
		assigner  window.AnyAssigner
		size, gap int64
	}{
		{"tumbling", window.TumblingEventTime(50 * time.Millisecond), 50, 0},
		{"session", window.EventTimeSession(30 * time.Millisecond), 0, 30},
	} {
		want := referenceWindows(input, c.size, c.gap)
		for _, mode := range []string{"STREAMING", "BATCH"} {
			for _, p := range []int{1, 2, 4} {
				env := newEnv(t, p, "execution.runtime-mode", mode, "taskmanager.memory.managed.size", "1m", "io.tmp.dirs", t.TempDir())
				w := window.Of(stream.KeyBy(source(env, input, bound), func(e ev) int32 { return e.Key }), c.assigner)
				got := stream.Collect(window.Process(w, windowSums))
				firedBeforeTheEnd.Store(0)
				if err := execute(t, env); err != nil {
					t.Fatal(err)
				}
				g := got.Values()
				slices.Sort(g)
				if !slices.Equal(g, want) {
					t.Fatalf("%s %s p=%d: %d windows, want %d; first %q, want %q", c.name, mode, p, len(g), len(want), g[:min(1, len(g))], want[:1])
				}
				// In batch mode a key's windows fire at its end, at the
				// maximum watermark; in streaming as the watermark passes.
				if early := firedBeforeTheEnd.Load(); (mode == "BATCH") != (early == 0) {
					t.Fatalf("%s %s p=%d: %d windows fired before the end of time", c.name, mode, p, early)
				}
			}
		}
	}
}
