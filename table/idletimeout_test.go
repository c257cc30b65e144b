package table_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// TestSourceIdleTimeout: table.exec.source.idle-timeout, as in Flink,
// marks a source subtask that had no rows for that long idle, so that it
// stops holding back the watermark downstream. The table is a monitored
// directory (an unbounded source) read at parallelism 2: one subtask reads
// the one file, the other has nothing to read and never ends. Without the
// option its watermark (none) holds every window back for ever; with it,
// once the manual clock passes the timeout, the windows that the reading
// subtask's watermark closed fire. The test moves the clock until they
// have; it would run into its deadline if the idle subtask still held the
// watermark back.
func TestSourceIdleTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	var b strings.Builder
	for i := range 100 {
		ts := evBase + int64(i)*100
		fmt.Fprintf(&b, "a,%d,%s\n", i, time.UnixMilli(ts).UTC().Format("2006-01-02 15:04:05.000"))
	}
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := runtime.NewManualClock(0)
	tenv := table.NewEnvironment(table.WithClock(clock))
	for _, s := range []string{
		"SET 'parallelism.default' = '2'",
		"SET 'pipeline.auto-watermark-interval' = '0'",
		"SET 'table.exec.source.idle-timeout' = '1 s'",
		"SET 'table.local-time-zone' = 'UTC'",
		fmt.Sprintf(`CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3),
			WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
			WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'source.monitor-interval' = '1 h')`, dir),
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	st, err := parser.ParseStatement(`SELECT window_start, COUNT(*), SUM(v)
		FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tenv.Query(ctx, st.(*parser.QueryStatement))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		res.Job.Cancel()
		for range res.Stream {
		}
		_ = res.Job.Wait()
	}()
	// The last row is at 9.9 s, so the watermark reaches 7.9 s: the
	// windows ending at 1 s ... 7 s fire, ten rows each.
	got := map[int64][2]int64{}
	for len(got) < 7 {
		select {
		case r, ok := <-res.Stream:
			if !ok {
				t.Fatalf("the query ended after %d windows: %v", len(got), res.Job.Wait())
			}
			if r.Kind != types.Insert {
				t.Fatalf("a window emitted %s", r)
			}
			got[millisOf(r.Row[0])-evBase] = [2]int64{r.Row[1].(int64), r.Row[2].(int64)}
		case <-ctx.Done():
			t.Fatalf("%d windows fired: the idle subtask held the watermark back", len(got))
		default:
			// Processing time moves only here: the watermark timers
			// (every half timeout) see the empty subtask idle.
			clock.Advance(250 * time.Millisecond)
		}
	}
	for w := range int64(7) {
		var sum int64
		for i := w * 10; i < w*10+10; i++ {
			sum += i
		}
		if g := got[w*1000]; g != [2]int64{10, sum} {
			t.Errorf("window at %d ms: count and sum %v, want [10 %d]", w*1000, g, sum)
		}
	}
}
