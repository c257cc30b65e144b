package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/network"
)

// TestRemoteChannels sends two typed channels through the TCP data plane
// into one InputGate: records (some buffers split into several frames),
// watermarks, barriers and the ends of partition arrive per channel in
// order, and the bridge ends when both producers finished.
func TestRemoteChannels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	producer, err := network.Listen(network.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	consumer, err := network.Listen(network.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	pool := &sync.Pool{New: func() any { return new(Buffer[string]) }}
	gate := newInputGate[string](2, GateConfig{BuffersPerChannel: 2, FloatingBuffers: 2}, pool)
	netGate, err := consumer.NewGate(network.DefaultGateConfig(2))
	if err != nil {
		t.Fatal(err)
	}
	defer netGate.Close()
	var writers [2]*remoteChannel[string]
	for i := range writers {
		id := network.ChannelID{Job: "job", Result: "words", Partition: i, Subpartition: 0}
		s, err := producer.Produce(id)
		if err != nil {
			t.Fatal(err)
		}
		// A small frame limit, so that buffers of many records split.
		writers[i] = newRemoteChannel(s, codec.String, pool, 256)
		if err := netGate.Connect(ctx, i, producer.Addr(), id); err != nil {
			t.Fatal(err)
		}
	}
	bridged := make(chan error, 1)
	go func() { bridged <- bridgeRemote(ctx, netGate, gate, func(i int) int { return 1 - i }, codec.String) }()

	const buffers = 50
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for b := range buffers {
				buf := pool.Get().(*Buffer[string])
				for range 1 + b%40 {
					buf.Records = append(buf.Records, fmt.Sprintf("p%d-%06d", i, n))
					buf.Timestamps = append(buf.Timestamps, int64(n))
					n++
				}
				if err := w.Send(ctx, buf); err != nil {
					t.Error(err)
					return
				}
				if b%10 == 9 {
					ev := pool.Get().(*Buffer[string])
					ev.Event = Event{Kind: EventWatermark, Watermark: int64(n)}
					if err := w.Send(ctx, ev); err != nil {
						t.Error(err)
					}
					ev = pool.Get().(*Buffer[string])
					ev.Event = Event{Kind: EventBarrier, Checkpoint: int64(b / 10)}
					if err := w.Send(ctx, ev); err != nil {
						t.Error(err)
					}
				}
			}
			end := pool.Get().(*Buffer[string])
			end.Event = Event{Kind: EventEndOfPartition}
			if err := w.Send(ctx, end); err != nil {
				t.Error(err)
			}
		}()
	}

	// The consumer task: per gate channel (1 - producer), records in
	// order, events after the records they followed.
	next := [2]int{}
	lastWM := [2]int64{-1, -1}
	ended := 0
	for ended < 2 {
		var b *Buffer[string]
		select {
		case b = <-gate.queue:
		case <-ctx.Done():
			t.Fatalf("stalled: next %v, ended %d", next, ended)
		}
		p := 1 - b.Channel
		switch b.Event.Kind {
		case eventNone:
			for j, r := range b.Records {
				if want := fmt.Sprintf("p%d-%06d", p, next[p]); r != want || b.Timestamps[j] != int64(next[p]) {
					t.Fatalf("channel %d: got %q at %d, want %q", b.Channel, r, b.Timestamps[j], want)
				}
				next[p]++
			}
		case EventWatermark:
			if b.Event.Watermark != int64(next[p]) || b.Event.Watermark <= lastWM[p] {
				t.Fatalf("producer %d: watermark %d after %d records", p, b.Event.Watermark, next[p])
			}
			lastWM[p] = b.Event.Watermark
		case EventBarrier:
		case EventEndOfPartition:
			ended++
		}
		gate.Recycle(b)
	}
	wg.Wait()
	if err := <-bridged; err != nil {
		t.Fatalf("bridge: %v", err)
	}
	want := 0
	for b := range buffers {
		want += 1 + b%40
	}
	// 50 record buffers and 10 watermarks and barriers each; the larger
	// buffers did not fit one 256-byte frame.
	if f := writers[0].frames; f <= buffers+10 {
		t.Fatalf("producer 0 sent %d frames: no buffer was split", f)
	}
	if next[0] != want || next[1] != want {
		t.Fatalf("received %v records, want %d from each producer", next, want)
	}
}

// TestBufferTimestampsRoundTrip: the delta encoding of timestamps gives
// back every timestamp, including none (math.MinInt64) next to real ones
// and jumps that overflow a difference, and rejects truncated input.
func TestBufferTimestampsRoundTrip(t *testing.T) {
	for _, ts := range [][]int64{
		{},
		{math.MinInt64, math.MinInt64},
		{1000, 1001, 999, 5000},
		{math.MinInt64, math.MaxInt64, 0, -7, math.MinInt64},
	} {
		b := &Buffer[string]{Timestamps: ts}
		for range ts {
			b.Records = append(b.Records, "x")
		}
		frame, err := encodeBuffer(codec.String, nil, b)
		if err != nil {
			t.Fatal(err)
		}
		var out Buffer[string]
		if err := decodeBuffer(codec.String, frame, &out); err != nil {
			t.Fatalf("%v: %v", ts, err)
		}
		if !slices.Equal(out.Timestamps, ts) || len(out.Records) != len(ts) {
			t.Fatalf("timestamps %v came back as %v", ts, out.Timestamps)
		}
		if want := 1 + len(codec.AppendSlice(codec.String, nil, b.Records)) + 1; slices.Equal(ts, []int64{math.MinInt64, math.MinInt64}) && len(frame) != want {
			t.Errorf("a buffer without timestamps took %d bytes, want %d", len(frame), want)
		}
		if len(ts) > 2 {
			var bad Buffer[string]
			if err := decodeBuffer(codec.String, frame[:len(frame)-1], &bad); !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("truncated frame of %v: %v", ts, err)
			}
		}
	}
}
