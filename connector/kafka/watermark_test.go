package kafka

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// TestIdlePartitionDoesNotHoldBackWatermark runs a job that counts
// records in event-time windows of 1 s, reading a topic of 2 partitions
// of which one stays empty. Per-partition watermarks with idleness let
// the windows fire; without idleness the empty partition holds the
// watermark back and none fires, which shows the per-partition
// watermarks are what is measured.
func TestIdlePartitionDoesNotHoldBackWatermark(t *testing.T) {
	_, brokers := newCluster(t, 2, "ev", "idle", "held")
	cl := manual(t, brokers)
	var rs []*kgo.Record
	for ts := int64(1000); ts <= 5000; ts += 100 {
		rs = append(rs, &kgo.Record{Topic: "ev", Partition: 0, Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
	}
	produce(t, cl, rs...)

	run := func(ctx context.Context, out string, strategy stream.WatermarkStrategy[int64]) chan error {
		cfg := config.New()
		config.CheckpointInterval.Set(cfg, 100*time.Millisecond)
		env := stream.NewEnvironmentWithConfig(cfg).SetParallelism(1)
		src := must(NewSource(SourceOptions{Brokers: brokers, Topics: []string{"ev"}}, func(*Record) (int64, error) { return 1, nil }))
		ones := stream.FromSourceWithWatermarks[int64](env, src, "kafka", strategy)
		counts := window.Reduce(window.All(ones, window.TumblingEventTime(time.Second)), func(a, b int64) int64 { return a + b })
		sink := must(NewSink(SinkOptions{Brokers: brokers, Topic: out, Delivery: AtLeastOnce}, func(n int64, r *Record) error {
			r.Value = strconv.AppendInt(nil, n, 10)
			return nil
		}))
		stream.SinkTo(counts, sink, "kafka")
		done := make(chan error, 1)
		go func() { done <- env.Execute(ctx, "idleness") }()
		return done
	}
	ctx, cancel := context.WithCancel(context.Background())
	idle := run(ctx, "idle", stream.ForMonotonousTimestamps[int64]().WithIdleness(200*time.Millisecond))
	held := run(ctx, "held", stream.ForMonotonousTimestamps[int64]())
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			for _, d := range []chan error{idle, held} {
				if err := <-d; err != nil && !errors.Is(err, context.Canceled) {
					t.Error(err)
				}
			}
		}
	}
	defer stop()

	want := []string{"10", "10", "10", "10"} // [1 s, 2 s) ... [4 s, 5 s); 5 s is alone in its window
	deadline := time.Now().Add(20 * time.Second)
	var got []string
	for {
		got = values(readAll(t, brokers, "idle", false))
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	got = values(readAll(t, brokers, "idle", false))
	if !slices.Equal(got, want) {
		t.Fatalf("with idleness, the windows gave %v, want %v", got, want)
	}
	if got := readAll(t, brokers, "held", false); len(got) != 0 {
		t.Fatalf("without idleness, the empty partition did not hold the watermark back: %d windows fired", len(got))
	}
	stop()
}
