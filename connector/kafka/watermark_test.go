package kafka

import (
	"context"
	"errors"
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
	// Partition 0 gets a record every few milliseconds, 100 ms of event
	// time apart, for as long as the test reads; partition 1 none.
	next := int64(1000)
	feed := func(n int) {
		for range n {
			produce(t, cl, &kgo.Record{Topic: "ev", Partition: 0, Value: []byte("x"), Timestamp: time.UnixMilli(next)})
			next += 100
		}
	}
	feed(10)

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

	// Windows [1 s, 2 s), [2 s, 3 s), ... hold 10 records each.
	want := 3
	deadline := time.Now().Add(20 * time.Second)
	var got []string
	for len(got) < want {
		if time.Now().After(deadline) {
			t.Fatalf("with idleness, %d windows fired in 20 s, want %d", len(got), want)
		}
		select {
		case err := <-idle:
			t.Fatalf("the job ended: %v", err)
		case err := <-held:
			t.Fatalf("the job ended: %v", err)
		default:
		}
		feed(2)
		time.Sleep(20 * time.Millisecond)
		got = values(readAll(t, brokers, "idle", false))
	}
	for _, g := range got {
		if g != "10" {
			t.Fatalf("with idleness, the windows gave %v; every 1 s window holds 10 records", got)
		}
	}
	if got := readAll(t, brokers, "held", false); len(got) != 0 {
		t.Fatalf("without idleness, the empty partition did not hold the watermark back: %d windows fired", len(got))
	}
	stop()
}
