// Windowcount counts the elements of each key in event-time windows —
// tumbling, sliding or session windows — and prints every firing and
// every element dropped as late:
//
//	key window_start_ms window_end_ms count
//	late key timestamp_ms
//
// Usage:
//
//	go run ./examples/windowcount [--input FILE.csv] [--window 10s | --window 10s --slide 5s | --session-gap 30s]
//	    [--out-of-orderness 0] [--allowed-lateness 0] [--skip-malformed] [-p N]
//
// The input has one "key,timestamp_ms[,value]" line per element (the value
// is optional and not used); blank lines are ignored. Without --input an
// embedded sample is counted, in tumbling windows of 10s unless a window
// flag says otherwise.
//
// The file is read in order by one source subtask and parsed by one
// subtask, which numbers the lines: a malformed line fails the job with
// its line number, or, with --skip-malformed, is skipped and counted. The
// watermark trails the largest timestamp seen by --out-of-orderness (and
// 1 ms) and advances after every element, so which elements are late does
// not depend on timing; the windows are counted at the job's parallelism,
// and the output is the same at every parallelism. A window fires when the
// watermark passes its end; with --allowed-lateness it is kept that much
// longer and fires again for every element that arrives in that time.
// Elements later than that go to the late-data side output.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

//go:embed sample.csv
var sample string

func main() {
	var s settings
	s.register(flag.CommandLine)
	env := stream.NewEnvironment()
	if err := s.check(flag.CommandLine); err != nil {
		fmt.Fprintf(os.Stderr, "windowcount: %v\n", err)
		os.Exit(2)
	}
	// Late data and allowed lateness are streaming notions: keep the job
	// in streaming mode (unless the configuration says otherwise).
	env.SetRuntimeMode(stream.Streaming)

	var lines *stream.Stream[string]
	name := s.input
	if s.input != "" {
		lines = stream.FromSource(env, file.Lines(s.input), "lines").SetParallelism(1)
	} else {
		name = "sample.csv"
		lines = stream.FromSlice(env, strings.Split(sample, "\n")).Name("sample").SetParallelism(1)
	}
	Build(lines, name, &s)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "windowcount"); err != nil {
		fmt.Fprintln(os.Stderr, "windowcount:", err)
		os.Exit(1)
	}
}

// Build adds the dataflow that parses lines (which must come in input
// order from one subtask), counts them in windows and prints the result.
func Build(lines *stream.Stream[string], name string, s *settings) {
	// Parsing and watermarking run at parallelism 1, chained to the
	// source: the line numbers are right, and every window subtask sees
	// the same sequence of watermarks between the elements of its keys,
	// whatever the parallelism.
	events := stream.Process[string, Event](lines, &parser{input: name, skipMalformed: s.skipMalformed}).
		Name("parse").SetParallelism(1)
	timed := events.AssignTimestampsAndWatermarks(stream.ForBoundedOutOfOrderness[Event](s.outOfOrderness).
		WithTimestampAssigner(func(e Event, _ int64) int64 { return e.Timestamp }).
		WithWatermarkPerEvent()).SetParallelism(1)
	byKey := stream.KeyBy(timed, func(e Event) string { return e.Key })

	var assigner window.AssignerBase
	switch s.kind {
	case tumbling:
		assigner = window.TumblingEventTime(s.window)
	case sliding:
		assigner = window.SlidingEventTime(s.window, s.slide)
	case session:
		assigner = window.EventTimeSession(s.sessionGap)
	}
	lateTag := stream.NewOutputTag[Event]("late")
	windowed := window.Of(byKey, assigner).AllowedLateness(s.allowedLateness).SideOutputLateData(lateTag)
	counts := window.AggregateProcess(windowed, count{}, window.ProcessWindowFunc[string, int64, string](
		func(key string, ctx *window.ProcessContext, counts []int64, out stream.Collector[string]) error {
			w := ctx.Window()
			for _, n := range counts {
				out.Collect(fmt.Sprintf("%s %d %d %d", key, w.Start, w.End, n))
			}
			return nil
		})).Name("count").UID("count")
	late := stream.Map(stream.GetSideOutput(counts, lateTag), func(e Event) string {
		return fmt.Sprintf("late %s %d", e.Key, e.Timestamp)
	}).Name("late")
	stream.Print(stream.Union(counts, late))
}

// count counts elements.
type count struct{}

func (count) CreateAccumulator() int64   { return 0 }
func (count) Add(_ Event, n int64) int64 { return n + 1 }
func (count) GetResult(n int64) int64    { return n }
func (count) Merge(a, b int64) int64     { return a + b }
