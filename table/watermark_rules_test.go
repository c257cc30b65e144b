package table_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/internal/sql/lateness"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// Issue 32's must-show: window TVF aggregations (TUMBLE, HOP, CUMULATE,
// SESSION) over an out-of-order file with late records give the rows of a
// model of Flink's rule, at pipeline.auto-watermark-interval 0 and 200 ms,
// read fast and slowly, at parallelism 1, 2 and 4.
//
// Flink's rule has two parts. Which watermark a record meets at the window
// operator (the table's watermark assigner, WatermarkAssignerOperator):
// the watermark is the largest WATERMARK FOR value so far, starting at 0;
// it is emitted after the record that advanced it when it is more than the
// interval ahead of the last one emitted (eagerly), and on the periodic
// processing-time timer when it advanced at all. And which records that
// watermark drops: for TUMBLE, HOP and CUMULATE, a record counts in each of
// its windows whose end - 1 is above the watermark (Flink's slicing
// operators drop a record only when the last window of its slice has
// fired, and add a late slice's record to the windows not fired yet); for
// SESSION, the record's window [ts, ts + gap) is first merged with the open
// sessions of its key it intersects (touching counts), and the record is
// dropped only when the merged window's end - 1 is at or below the
// watermark (MergingWindowProcessFunction). The model is
// internal/sql/lateness, which bench/lateness also uses.
//
// The speeds, made deterministic:
//   - fast: the jobs run on a manual clock that never moves, so the
//     periodic timer never fires: only eager emissions count, as when the
//     whole file is read before the first timer (at interval 0, every
//     advance; at 200 ms, an advance of more than 200 ms of event time
//     since the last emission);
//   - slow: a Pacer lets the file's reader emit one record at a time, and
//     before each record the test moves the manual clock by the interval,
//     so that the periodic timer fires between every two records (the
//     reader emits a permitted record only in the Poll after the one that
//     got the permission, and the task serves its mailbox, where the timer
//     waits, in between). The watermark then follows every advance, at
//     200 ms as at 0.
//
// At parallelism 2 and 4 the file is one split, which one source subtask
// reads; the others have no split and end at once, with the maximum
// watermark. The reader starts only after they closed (the Pacer waits for
// it), so that their end is in every window subtask's input queue, which
// is one FIFO for all channels, before the reader's first record: from
// then on the only channel that holds the watermark back is the reader's,
// whose records and watermarks arrive in order, and each window subtask
// sees, for the keys it owns, the records and watermarks of parallelism 1.
func TestWindowTVFLateRowsFollowFlinksRule(t *testing.T) {
	const n, delay = 2000, 2000
	events := outOfOrderEvents(n)
	model := make([]lateness.Event, len(events))
	for i, e := range events {
		model[i] = lateness.Event{K: e.k, V: e.v, TS: e.ts}
	}
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%s,%d,%s\n", e.k, e.v, time.UnixMilli(e.ts).UTC().Format("2006-01-02 15:04:05.000"))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, q := range windowQueries {
		for _, interval := range []int64{0, 200} {
			for _, slow := range []bool{false, true} {
				wms := lateness.Watermarks(model, delay, interval, slow)
				want, late := q.model(model, wms)
				if late < n/20 {
					t.Fatalf("%s: only %d of %d records late by Flink's rule: not a test of lateness", q.name, late, n)
				}
				for _, p := range []int{1, 2, 4} {
					speed := "fast"
					if slow {
						speed = "slow"
					}
					name := fmt.Sprintf("%s/interval=%d/%s/p=%d", q.name, interval, speed, p)
					t.Run(name, func(t *testing.T) {
						got := runPaced(ctx, t, dir, q.sql, interval, slow, p)
						compareWindows(t, got, want, late, n)
					})
				}
			}
		}
	}
}

// windowQuery is a window TVF aggregation and the model of its rows.
type windowQuery struct {
	name, sql string
	model     func(events []lateness.Event, wms []int64) (map[lateness.Window]lateness.Agg, int)
}

func sliced(w lateness.Windows) func([]lateness.Event, []int64) (map[lateness.Window]lateness.Agg, int) {
	return func(ev []lateness.Event, wms []int64) (map[lateness.Window]lateness.Agg, int) {
		return lateness.Sliced(ev, wms, w)
	}
}

var windowQueries = []windowQuery{
	{"TUMBLE", `SELECT window_start, window_end, k, COUNT(*), SUM(v), MAX(v)
		FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k`,
		sliced(lateness.Tumble(1000))},
	{"legacy TUMBLE", `SELECT TUMBLE_START(ts, INTERVAL '1' SECOND), TUMBLE_END(ts, INTERVAL '1' SECOND), k, COUNT(*), SUM(v), MAX(v)
		FROM ev GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k`,
		sliced(lateness.Tumble(1000))},
	{"HOP", `SELECT window_start, window_end, k, COUNT(*), SUM(v), MAX(v)
		FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '0.5' SECOND, INTERVAL '1.5' SECOND)) GROUP BY window_start, window_end, k`,
		sliced(lateness.Hop(500, 1500))},
	{"CUMULATE", `SELECT window_start, window_end, k, COUNT(*), SUM(v), MAX(v)
		FROM TABLE(CUMULATE(TABLE ev, DESCRIPTOR(ts), INTERVAL '0.5' SECOND, INTERVAL '2' SECOND)) GROUP BY window_start, window_end, k`,
		sliced(lateness.Cumulate(500, 2000))},
	{"SESSION", `SELECT window_start, window_end, k, COUNT(*), SUM(v), MAX(v)
		FROM TABLE(SESSION(TABLE ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL '0.3' SECOND)) GROUP BY window_start, window_end, k`,
		func(ev []lateness.Event, wms []int64) (map[lateness.Window]lateness.Agg, int) {
			return lateness.Session(ev, wms, 300)
		}},
}

func compareWindows(t *testing.T, got, want map[lateness.Window]lateness.Agg, late, n int) {
	t.Helper()
	var gotN, wantN int64
	for _, a := range got {
		gotN += a.N
	}
	for _, a := range want {
		wantN += a.N
	}
	if gotN != wantN || len(got) != len(want) {
		t.Errorf("%d rows counting %d records, want %d rows counting %d (%d of %d records late by Flink's rule)",
			len(got), gotN, len(want), wantN, late, n)
	}
	bad := 0
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("window %v: got %+v (present %v), want %+v", k, g, ok, w)
			if bad++; bad == 5 {
				return
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("window %v: got %+v, not in the model", k, g)
			if bad++; bad == 5 {
				return
			}
		}
	}
}

// runPaced runs one query over the file in dir on a manual clock.
func runPaced(ctx context.Context, t *testing.T, dir, query string, interval int64, slow bool, p int) map[lateness.Window]lateness.Agg {
	t.Helper()
	clock := runtime.NewManualClock(0)
	pacer := newStepPacer(p - 1)
	opts := []table.Option{table.WithClock(clock)}
	if slow || p > 1 {
		opts = append(opts, table.WithFilePacer(dir, pacer))
	}
	tenv := table.NewEnvironment(opts...)
	for _, s := range []string{
		fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
		fmt.Sprintf("SET 'pipeline.auto-watermark-interval' = '%d ms'", interval),
		"SET 'table.local-time-zone' = 'UTC'",
		fmt.Sprintf(`CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3),
			WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
			WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')`, dir),
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if slow || p > 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var step time.Duration
			if slow {
				step = time.Duration(interval) * time.Millisecond
			}
			pacer.drive(ctx, done, clock, step)
		}()
	}
	res, err := tenv.ExecuteSQL(ctx, query)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	got := map[lateness.Window]lateness.Agg{}
	for _, r := range res.Rows {
		if r.Kind != types.Insert {
			t.Fatalf("a window aggregation emitted %s", r)
		}
		k := lateness.Window{Start: millisOf(r.Row[0]), End: millisOf(r.Row[1]), K: r.Row[2].(string)}
		if _, dup := got[k]; dup {
			t.Fatalf("window %v emitted twice", k)
		}
		got[k] = lateness.Agg{N: r.Row[3].(int64), Sum: r.Row[4].(int64), Max: r.Row[5].(int64)}
	}
	return got
}

// stepPacer is the test's file.Pacer: the reader may start once the
// subtasks without a split closed, and then reads one record per
// permission that drive gives.
type stepPacer struct {
	others  int
	mu      sync.Mutex
	closed  int
	gate    chan struct{} // closed once others readers closed
	permit  chan struct{}
	emitted chan struct{}
}

func newStepPacer(others int) *stepPacer {
	p := &stepPacer{others: others, gate: make(chan struct{}), permit: make(chan struct{}), emitted: make(chan struct{}, 1)}
	if others == 0 {
		close(p.gate)
	}
	return p
}

func (p *stepPacer) Next(ctx context.Context, _ int) bool {
	t := time.NewTimer(2 * time.Millisecond)
	defer t.Stop()
	select {
	case <-p.permit:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (p *stepPacer) Emitted(int) { p.emitted <- struct{}{} }

func (p *stepPacer) Closed(int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed++; p.closed == p.others {
		close(p.gate)
	}
}

// drive waits for the gate, then permits one record at a time; with a
// step, it first moves the clock by step (the periodic timer's callback is
// in the task's mailbox when Advance returns), and permits the next record
// only after the previous one was emitted.
func (p *stepPacer) drive(ctx context.Context, done <-chan struct{}, clock *runtime.ManualClock, step time.Duration) {
	select {
	case <-p.gate:
	case <-done:
		return
	case <-ctx.Done():
		return
	}
	for first := true; ; first = false {
		if step > 0 && !first {
			clock.Advance(step)
		}
		select {
		case p.permit <- struct{}{}:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
		select {
		case <-p.emitted:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
	}
}
