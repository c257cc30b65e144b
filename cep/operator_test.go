package cep_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/cep"
	"github.com/weirproject/weir/stream"
)

type reading struct {
	Sensor string
	Kind   string
	Value  int
	Ts     int64
}

func names(m cep.Match[reading], steps ...string) string {
	var parts []string
	for _, s := range steps {
		for _, r := range m[s] {
			parts = append(parts, fmt.Sprintf("%s:%s%d@%d", s, r.Kind, r.Value, r.Ts))
		}
	}
	return strings.Join(parts, " ")
}

func kind(k string) cep.Condition[reading] {
	return cep.Simple(func(r reading) bool { return r.Kind == k })
}

// TestTimeoutsToSideOutput: partial matches that Within ends go to the
// side output with the end of their window as timestamp; matches go to
// the main output with the timestamp of their last event.
func TestTimeoutsToSideOutput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := newEnv(t, 2)
	in := []reading{
		{"s1", "a", 1, 10}, {"s1", "x", 2, 12}, {"s2", "a", 3, 14}, {"s2", "b", 5, 18},
		{"s1", "a", 4, 30}, {"s1", "b", 6, 35}, {"s2", "a", 7, 40},
	}
	src := stream.FromSlice(env, in).SetParallelism(1).AssignTimestampsAndWatermarks(
		stream.ForBoundedOutOfOrderness[reading](5 * time.Millisecond).WithTimestampAssigner(func(r reading, _ int64) int64 { return r.Ts }).WithWatermarkPerEvent()).SetParallelism(1)
	ks := stream.KeyBy(src, func(r reading) string { return r.Sensor })
	p := cep.Begin[reading]("start").Where(kind("a")).FollowedBy("end").Where(kind("b")).Within(10 * time.Millisecond)
	timedOut := stream.NewOutputTag[string]("timed-out")
	matches := cep.SelectWithTimeout(cep.Stream(ks, p), timedOut,
		func(m cep.Match[reading], ts int64) string {
			return fmt.Sprintf("%s timeout@%d", names(m, "start"), ts)
		},
		func(m cep.Match[reading]) string { return names(m, "start", "end") })
	stamp := func(s *stream.Stream[string]) *stream.Collected[string] {
		return stream.Collect(stream.Process(s, stream.ProcessFunc[string, string](func(v string, c *stream.Context, out stream.Collector[string]) error {
			ts, _ := c.Timestamp()
			out.Collect(fmt.Sprintf("%s ts=%d", v, ts))
			return nil
		})))
	}
	got, gotTimedOut := stamp(matches), stamp(stream.GetSideOutput(matches, timedOut))
	if err := env.Execute(ctx, "timeouts"); err != nil {
		t.Fatal(err)
	}
	check := func(what string, c *stream.Collected[string], want ...string) {
		t.Helper()
		g := slices.Clone(c.Values())
		slices.Sort(g)
		slices.Sort(want)
		if !slices.Equal(g, want) {
			t.Fatalf("%s: got %q, want %q", what, g, want)
		}
	}
	check("matches", got, "start:a3@14 end:b5@18 ts=18", "start:a4@30 end:b6@35 ts=35")
	// a1@10 times out at 20; a7@40 at 50, when the input ends.
	check("timed out", gotTimedOut, "start:a1@10 timeout@20 ts=20", "start:a7@40 timeout@50 ts=50")
}

// TestProcessingTime: without timestamps, InProcessingTime matches the
// records in arrival order.
func TestProcessingTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := newEnv(t, 1)
	in := []reading{{"s", "a", 1, 0}, {"s", "b", 2, 0}, {"s", "a", 3, 0}, {"s", "c", 4, 0}, {"s", "b", 5, 0}}
	ks := stream.KeyBy(stream.FromSlice(env, in), func(r reading) string { return r.Sensor })
	p := cep.Begin[reading]("start").Where(kind("a")).Next("end").Where(kind("b"))
	got := stream.Collect(cep.Select(cep.Stream(ks, p).InProcessingTime(), func(m cep.Match[reading]) string { return names(m, "start", "end") }))
	if err := env.Execute(ctx, "processing-time"); err != nil {
		t.Fatal(err)
	}
	if g := got.Values(); !slices.Equal(g, []string{"start:a1@0 end:b2@0"}) {
		t.Fatalf("got %q", g)
	}
}

// TestEventTimeNeedsTimestamps: an event-time pattern over records
// without timestamps fails the job with a message that says what to do.
func TestEventTimeNeedsTimestamps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := newEnv(t, 1)
	ks := stream.KeyBy(stream.FromSlice(env, []reading{{"s", "a", 1, 0}}), func(r reading) string { return r.Sensor })
	stream.Collect(cep.Select(cep.Stream(ks, cep.Begin[reading]("a").Where(kind("a"))), func(m cep.Match[reading]) string { return "" }))
	err := env.Execute(ctx, "no-timestamps")
	if err == nil || !strings.Contains(err.Error(), "without a timestamp") {
		t.Fatalf("err = %v", err)
	}
}

// TestIterativeCondition: a loop whose condition sees the events it took
// (Flink's documentation example: the sum of the values so far).
func TestIterativeCondition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := newEnv(t, 1)
	in := []reading{{"s", "a", 0, 1}, {"s", "m", 3, 2}, {"s", "m", 4, 3}, {"s", "m", 5, 4}, {"s", "e", 0, 5}}
	src := stream.FromSlice(env, in).AssignTimestampsAndWatermarks(
		stream.ForMonotonousTimestamps[reading]().WithTimestampAssigner(func(r reading, _ int64) int64 { return r.Ts }))
	ks := stream.KeyBy(src, func(r reading) string { return r.Sensor })
	p := cep.Begin[reading]("start").Where(kind("a")).
		FollowedBy("middle").Where(func(r reading, c *cep.Context[reading]) bool {
		if r.Kind != "m" {
			return false
		}
		sum := r.Value
		for _, prev := range c.EventsForPattern("middle") {
			sum += prev.Value
		}
		return sum < 10
	}).OneOrMore().
		FollowedBy("end").Where(kind("e"))
	got := stream.Collect(cep.Select(cep.Stream(ks, p), func(m cep.Match[reading]) string { return names(m, "start", "middle", "end") }))
	if err := env.Execute(ctx, "iterative"); err != nil {
		t.Fatal(err)
	}
	g := slices.Clone(got.Values())
	slices.Sort(g)
	// m5 would bring the sum to 12, so no run takes it; the runs that
	// left the loop after m3 and after m4 both end with e0. No run starts
	// its loop at m4: followedBy takes the first matching event, m3.
	want := []string{"start:a0@1 middle:m3@2 end:e0@5", "start:a0@1 middle:m3@2 middle:m4@3 end:e0@5"}
	if !slices.Equal(g, want) {
		t.Fatalf("got %q, want %q", g, want)
	}
}

// TestMalformedPatterns: misuses are errors that name the step.
func TestMalformedPatterns(t *testing.T) {
	cases := []struct {
		p    *cep.Pattern[reading]
		want string
	}{
		{cep.Begin[reading]("a").Where(kind("a")).Until(kind("b")), `pattern "a": the until condition is only applicable to looping steps`},
		{cep.Begin[reading]("a").OneOrMore().Times(2), `pattern "a": a quantifier was already applied`},
		{cep.Begin[reading]("a").FollowedBy("a"), `duplicate step name "a"`},
		{cep.Begin[reading]("a").NotFollowedBy("n"), `NotFollowedBy ("n") at the end of a pattern needs Within`},
		{cep.Begin[reading]("a").Optional().NotNext("n"), `an optional step before a NOT step is not supported`},
		{cep.BeginWithSkip[reading]("a", cep.SkipToFirst("zz")).FollowedBy("b"), `SKIP_TO_FIRST[zz] names no step`},
		{cep.Begin[reading]("a").Greedy(), `Greedy applies to looping and times steps only`},
		{cep.Begin[reading]("a").OneOrMore().Greedy().FollowedBy("b").Optional(), `an optional step cannot follow a greedy one`},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		env := newEnv(t, 1)
		ks := stream.KeyBy(stream.FromSlice(env, []reading{{"s", "a", 1, 1}}), func(r reading) string { return r.Sensor })
		stream.Collect(cep.Select(cep.Stream(ks, c.p), func(m cep.Match[reading]) string { return "" }))
		err := env.Execute(ctx, "malformed")
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to contain %q", err, c.want)
		}
	}
}
