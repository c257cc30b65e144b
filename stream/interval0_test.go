package stream_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
)

// pipeline.auto-watermark-interval = 0 in the DataStream API, as Flink
// defines it: no periodic emission at all (TimestampsAndWatermarksOperator
// registers no timer, ProgressiveTimestampsAndWatermarks starts no
// emitter), so a periodic generator such as bounded out-of-orderness
// emits nothing until the end of input, and only a generator that emits
// in OnEvent advances the watermark, right after the record.

// punctuated emits ts - 1 after every record.
type punctuated struct{}

func (punctuated) OnEvent(_ int64, ts int64, out stream.WatermarkOutput) { out.EmitWatermark(ts - 1) }
func (punctuated) OnPeriodicEmit(stream.WatermarkOutput)                 {}

func TestIntervalZeroEmitsNoPeriodicWatermarks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gen := func() *stream.Generator[int64] {
		return &stream.Generator[int64]{Count: 5, Fn: func(i int64) int64 { return i * 10 }}
	}
	periodic := stream.ForBoundedOutOfOrderness[int64](5 * time.Millisecond).WithTimestampAssigner(func(v, _ int64) int64 { return v })
	onEvent := stream.ForGenerator(func() stream.WatermarkGenerator[int64] { return punctuated{} }).WithTimestampAssigner(func(v, _ int64) int64 { return v })
	records := []string{"0@0", "10@10", "20@20", "30@30", "40@40", "wm:max"}
	perEvent := []string{"0@0", "wm:-1", "10@10", "wm:9", "20@20", "wm:19", "30@30", "wm:29", "40@40", "wm:39", "wm:max"}
	for _, c := range []struct {
		name  string
		build func(env *stream.Environment) *stream.Stream[int64]
		want  []string
	}{
		{"periodic after the source", func(env *stream.Environment) *stream.Stream[int64] {
			return stream.FromSource[int64](env, gen(), "ts").AssignTimestampsAndWatermarks(periodic)
		}, records},
		{"periodic in the source", func(env *stream.Environment) *stream.Stream[int64] {
			return stream.FromSourceWithWatermarks[int64](env, gen(), "ts", periodic)
		}, records},
		{"on events after the source", func(env *stream.Environment) *stream.Stream[int64] {
			return stream.FromSource[int64](env, gen(), "ts").AssignTimestampsAndWatermarks(onEvent)
		}, perEvent},
		{"on events in the source", func(env *stream.Environment) *stream.Stream[int64] {
			return stream.FromSourceWithWatermarks[int64](env, gen(), "ts", onEvent)
		}, perEvent},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, 1, "pipeline.auto-watermark-interval", "0")
			got := stream.Collect(probe(c.build(env)))
			if err := env.Execute(ctx, "interval-0"); err != nil {
				t.Fatal(err)
			}
			if g := got.Values(); !slices.Equal(g, c.want) {
				t.Fatalf("got %q\nwant %q", g, c.want)
			}
		})
	}
}
