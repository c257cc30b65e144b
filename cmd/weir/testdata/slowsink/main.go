// Command slowsink is the job of the backpressure test: a source that
// emits 1 KiB records as fast as it can, in slot sharing group "source",
// and a sink that takes --rate records a second, in group "sink", so that
// on TaskManagers of one slot each they run in different processes.
// With --spin the sink waits for each record's turn by reading the clock
// in a loop instead of sleeping: as slow, but it burns a CPU in
// slowWriter.Write, for the dashboard's flame graph test. With --keys N a
// keyed reduce named "latest" keeps the latest record of N keys in front
// of the sink, for the state size metrics.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/stream"
)

var payload = strings.Repeat("x", 1000)

func main() {
	rate := flag.Int("rate", 1000, "records a second the sink takes")
	count := flag.Int64("count", 100_000_000, "records the source emits")
	spin := flag.Bool("spin", false, "wait for each record's turn on the CPU instead of sleeping")
	keys := flag.Int64("keys", 0, "keep the latest record of this many keys before the sink (0: none)")
	env := stream.NewEnvironment()
	records := stream.FromSource[string](env, &stream.Generator[string]{Count: *count, Fn: func(i int64) string {
		return fmt.Sprintf("%012d %s", i, payload)
	}}, "records").SlotSharingGroup("source")
	if *keys > 0 {
		n := *keys
		records = stream.KeyBy(records, func(r string) int64 {
			var i int64
			fmt.Sscanf(r[:12], "%d", &i)
			return i % n
		}).Reduce(func(_, r string) string { return r }).Name("latest").SlotSharingGroup("sink")
	}
	stream.SinkTo[string](records, slowSink{every: time.Second / time.Duration(*rate), spin: *spin}, "slow").SlotSharingGroup("sink")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "backpressure"); err != nil {
		fmt.Fprintln(os.Stderr, "slowsink:", err)
		os.Exit(1)
	}
}

type slowSink struct {
	every time.Duration
	spin  bool
}

func (s slowSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[string], error) {
	return &slowWriter{every: s.every, spin: s.spin, next: time.Now()}, nil
}

// slowWriter paces itself on a schedule rather than sleeping a fixed time
// per record, so that its rate does not depend on the sleep's overshoot.
type slowWriter struct {
	every time.Duration
	spin  bool
	next  time.Time
}

func (w *slowWriter) Write(string, int64) error {
	w.next = w.next.Add(w.every)
	if w.spin {
		for time.Now().Before(w.next) {
		}
		return nil
	}
	if d := time.Until(w.next); d > 0 {
		time.Sleep(d)
	}
	return nil
}

func (w *slowWriter) Flush() error { return nil }
func (w *slowWriter) Close() error { return nil }
