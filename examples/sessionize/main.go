// Sessionize groups each user's clicks into sessions that close after a
// gap of inactivity (in event time), using a KeyedProcessFunction with
// keyed state and event-time timers, and prints one line per session:
//
//	user session_start_ms session_end_ms clicks
//
// where session_end_ms is the last click's time plus the gap.
//
//	go run ./examples/sessionize [--input clicks.csv] [--gap 30m] [--out-of-orderness 10s] [-p N]
//
// Input lines are "user,timestamp_ms". Without --input an embedded sample
// is used.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

//go:embed sample.csv
var sample string

// Click is one user action.
type Click struct {
	User string
	TS   int64
}

// Session is a closed session.
type Session struct {
	User       string
	Start, End int64
	Clicks     int64
}

func (s Session) String() string {
	return fmt.Sprintf("%s %d %d %d", s.User, s.Start, s.End, s.Clicks)
}

// Sessionizer buffers each user's clicks in keyed map state (timestamp →
// clicks) and sets an event-time timer at every click's time + gap. When
// the watermark passes such a time, every session that ended by then is
// final: clicks arrive at most the out-of-orderness late, so none can
// still join it. Buffering instead of keeping one open session is what
// makes out-of-order clicks that bridge two sessions come out right.
type Sessionizer struct {
	Gap int64

	clicks state.MapState[int64, int64]
}

// Open creates the state handle; it is scoped to the current key.
func (s *Sessionizer) Open(ctx *stream.KeyedContext[string]) error {
	s.clicks = state.Map[int64, int64](ctx.State(), "clicks")
	return nil
}

// ProcessElement buffers a click.
func (s *Sessionizer) ProcessElement(c Click, ctx *stream.KeyedContext[string], _ stream.Collector[Session]) error {
	n, _ := s.clicks.Get(c.TS)
	s.clicks.Put(c.TS, n+1)
	ctx.RegisterEventTimeTimer(c.TS + s.Gap)
	return nil
}

// OnTimer emits and forgets the sessions that ended at or before now.
func (s *Sessionizer) OnTimer(now int64, ctx *stream.KeyedContext[string], out stream.Collector[Session]) error {
	times := make([]int64, 0, len(s.clicks.All()))
	for ts := range s.clicks.All() {
		times = append(times, ts)
	}
	slices.Sort(times)
	for len(times) > 0 {
		n, end := 0, times[0]+s.Gap
		for n < len(times) && times[n] < end {
			end = times[n] + s.Gap
			n++
		}
		if end > now {
			return nil // the first open session; later ones are open too
		}
		var clicks int64
		for _, ts := range times[:n] {
			c, _ := s.clicks.Get(ts)
			clicks += c
			s.clicks.Remove(ts)
		}
		out.Collect(Session{User: ctx.CurrentKey(), Start: times[0], End: end, Clicks: clicks})
		times = times[n:]
	}
	return nil
}

func parse(line string) (Click, error) {
	user, ts, ok := strings.Cut(strings.TrimSpace(line), ",")
	if !ok {
		return Click{}, fmt.Errorf("want user,timestamp_ms, got %q", line)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
	if err != nil {
		return Click{}, fmt.Errorf("bad timestamp in %q: %w", line, err)
	}
	return Click{User: strings.TrimSpace(user), TS: n}, nil
}

// Build adds the sessionization dataflow; the lines are read in order by
// one subtask, sessions are computed at the job's parallelism.
func Build(lines *stream.Stream[string], gap, outOfOrder time.Duration) *stream.Stream[Session] {
	clicks := stream.Process(lines, stream.ProcessFunc[string, Click](func(line string, _ *stream.Context, out stream.Collector[Click]) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		c, err := parse(line)
		if err != nil {
			return err
		}
		out.Collect(c)
		return nil
	})).Name("parse").SetParallelism(1)
	timed := clicks.AssignTimestampsAndWatermarks(stream.ForBoundedOutOfOrderness[Click](outOfOrder).
		WithTimestampAssigner(func(c Click, _ int64) int64 { return c.TS }).
		WithWatermarkPerEvent()).SetParallelism(1)
	byUser := stream.KeyBy(timed, func(c Click) string { return c.User })
	return stream.KeyedProcess[string, Click, Session](byUser, &Sessionizer{Gap: gap.Milliseconds()}).Name("sessionize").UID("sessionize")
}

func main() {
	input := flag.String("input", "", "CSV `file` of user,timestamp_ms lines (default: an embedded sample)")
	gap := flag.Duration("gap", 30*time.Minute, "inactivity that closes a session")
	outOfOrder := flag.Duration("out-of-orderness", 0, "how far out of order clicks may arrive")
	env := stream.NewEnvironment()

	var lines *stream.Stream[string]
	if *input != "" {
		lines = stream.FromSource(env, file.Lines(*input), "clicks").SetParallelism(1)
	} else {
		lines = stream.FromSlice(env, strings.Split(sample, "\n")).Name("sample").SetParallelism(1)
	}
	stream.Print(Build(lines, *gap, *outOfOrder))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "sessionize"); err != nil {
		fmt.Fprintln(os.Stderr, "sessionize:", err)
		os.Exit(1)
	}
}
