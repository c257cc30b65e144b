package cep_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/cep"
	"github.com/weirproject/weir/stream"
)

// Cases from Flink's CEPITCase: the input (events, timestamps, watermarks
// of timestamp − 5 after every event) and the expected results are
// Flink's; a non-keyed Flink pattern stream is keyed by a constant here.

type fe struct {
	ID    int
	Name  string
	Price float64
	Ts    int64
}

func named(n string) cep.Condition[fe] { return cep.Simple(func(e fe) bool { return e.Name == n }) }

func startMiddleEnd() *cep.Pattern[fe] {
	return cep.Begin[fe]("start").Where(named("start")).
		FollowedByAny("middle").Where(named("middle")).
		FollowedByAny("end").Where(named("end"))
}

func ids(m cep.Match[fe]) string {
	return fmt.Sprintf("%d,%d,%d", m["start"][0].ID, m["middle"][0].ID, m["end"][0].ID)
}

// eventTimeSource: Flink's punctuated watermark of timestamp − 5 after
// every element is the bounded out-of-orderness of 4 ms (max − 4 − 1).
func eventTimeSource(env *stream.Environment, in []fe) *stream.Stream[fe] {
	return stream.FromSlice(env, in).SetParallelism(1).AssignTimestampsAndWatermarks(
		stream.ForBoundedOutOfOrderness[fe](4 * time.Millisecond).
			WithTimestampAssigner(func(e fe, _ int64) int64 { return e.Ts }).WithWatermarkPerEvent()).SetParallelism(1)
}

func run(t *testing.T, env *stream.Environment, c *stream.Collected[string], want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "cepitcase"); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(c.Values())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCEPITCaseSimplePatternEventTime(t *testing.T) {
	env := newEnv(t, 1)
	src := eventTimeSource(env, []fe{
		{1, "start", 1, 5}, {2, "middle", 2, 1}, {3, "end", 3, 3}, {4, "end", 4, 10}, {5, "middle", 5, 7}, {5, "middle", 5, 100},
	})
	ks := stream.KeyBy(src, func(fe) int { return 0 })
	run(t, env, stream.Collect(cep.Select(cep.Stream(ks, startMiddleEnd()), ids)), "1,5,4")
}

func TestCEPITCaseSimpleKeyedPatternEventTime(t *testing.T) {
	env := newEnv(t, 2)
	src := eventTimeSource(env, []fe{
		{1, "start", 1, 5}, {1, "middle", 2, 1}, {2, "middle", 2, 4}, {2, "start", 2, 3}, {1, "end", 3, 3},
		{3, "start", 4.1, 5}, {1, "end", 4, 10}, {2, "end", 2, 8}, {1, "middle", 5, 7}, {3, "middle", 6, 9}, {3, "end", 7, 7},
	})
	ks := stream.KeyBy(src, func(e fe) int { return e.ID })
	run(t, env, stream.Collect(cep.Select(cep.Stream(ks, startMiddleEnd()), ids)), "1,1,1", "2,2,2")
}

func TestCEPITCaseSimpleKeyedPatternCEP(t *testing.T) {
	env := newEnv(t, 2)
	// Flink's middle step also requires a SubEvent subtype; the events
	// named "middle" of the keys that match are all SubEvents there.
	src := stream.FromSlice(env, []fe{
		{1, "barfoo", 1, 0}, {2, "start", 2, 0}, {3, "start", 2.1, 0}, {3, "foobar", 3, 0}, {4, "foo", 4, 0},
		{3, "middle", 3.2, 0}, {42, "start", 3.1, 0}, {42, "middle", 3.3, 0}, {5, "middle", 5, 0}, {2, "middle", 6, 0},
		{7, "bar", 3, 0}, {42, "42", 42, 0}, {3, "end", 2, 0}, {2, "end", 1, 0}, {42, "end", 42, 0},
	}).SetParallelism(1)
	ks := stream.KeyBy(src, func(e fe) int { return e.ID })
	run(t, env, stream.Collect(cep.Select(cep.Stream(ks, startMiddleEnd()).InProcessingTime(), ids)), "2,2,2", "3,3,3", "42,42,42")
}

func TestCEPITCaseTimeoutHandlingWithinFirstAndLast(t *testing.T) {
	env := newEnv(t, 1)
	src := eventTimeSource(env, []fe{{1, "start", 1, 1}, {1, "middle", 2, 5}, {1, "start", 2, 4}, {1, "end", 2, 6}})
	ks := stream.KeyBy(src, func(fe) int { return 0 })
	timedOut := stream.NewOutputTag[string]("timeouts")
	out := cep.SelectWithTimeout(cep.Stream(ks, startMiddleEnd().Within(3*time.Millisecond)), timedOut,
		func(m cep.Match[fe], _ int64) string { return fmt.Sprintf("Left(%.1f)", m["start"][0].Price) },
		func(m cep.Match[fe]) string {
			return fmt.Sprintf("Right(%.1f,%.1f,%.1f)", m["start"][0].Price, m["middle"][0].Price, m["end"][0].Price)
		})
	all := stream.Collect(stream.Union(out, stream.GetSideOutput(out, timedOut)))
	run(t, env, all, "Left(1.0)", "Left(2.0)", "Left(2.0)", "Right(2.0,2.0,2.0)")
}

func TestCEPITCaseSimpleOrFilterPattern(t *testing.T) {
	env := newEnv(t, 1)
	src := stream.FromSlice(env, []fe{
		{1, "start", 1, 0}, {2, "middle", 2, 0}, {3, "end", 3, 0}, {4, "start", 4, 0}, {5, "middle", 5, 0}, {6, "end", 6, 0},
	})
	ks := stream.KeyBy(src, func(fe) int { return 0 })
	p := cep.Begin[fe]("start").Where(named("start")).
		FollowedByAny("middle").Where(cep.Simple(func(e fe) bool { return e.Price == 2 })).Or(cep.Simple(func(e fe) bool { return e.Price == 5 })).
		FollowedByAny("end").Where(named("end"))
	run(t, env, stream.Collect(cep.Select(cep.Stream(ks, p).InProcessingTime(), ids)), "1,5,6", "1,2,3", "4,5,6", "1,2,6")
}
