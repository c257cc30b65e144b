package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproject/weir/codec"
)

// writePartition writes records p<i>-<n> in buffers of varying sizes, a
// watermark after every tenth buffer and the end of the partition.
func writePartition(t *testing.T, path string, producer, buffers int, pool *sync.Pool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := newBlockingChannel(f, codec.String, pool)
	n := 0
	send := func(b *Buffer[string]) {
		if err := w.Send(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	for b := range buffers {
		buf := pool.Get().(*Buffer[string])
		for range 1 + b%40 {
			buf.Records = append(buf.Records, fmt.Sprintf("p%d-%06d", producer, n))
			buf.Timestamps = append(buf.Timestamps, int64(n))
			n++
		}
		send(buf)
		if b%10 == 9 {
			ev := pool.Get().(*Buffer[string])
			ev.Event = Event{Kind: EventWatermark, Watermark: int64(n)}
			send(ev)
		}
	}
	end := pool.Get().(*Buffer[string])
	end.Event = Event{Kind: EventEndOfPartition}
	send(end)
}

// TestBlockingPartitions writes two producers' partitions to files and
// replays them into one gate: per channel, the records, their timestamps
// and the watermarks arrive in order, and each channel ends once.
func TestBlockingPartitions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	pool := &sync.Pool{New: func() any { return new(Buffer[string]) }}
	paths := []string{filepath.Join(dir, "p0"), filepath.Join(dir, "p1")}
	for i, p := range paths {
		writePartition(t, p, i, 300, pool)
	}
	gate := newInputGate[string](2, GateConfig{BuffersPerChannel: 2, FloatingBuffers: 2}, pool)
	replayed := make(chan error, 1)
	go func() { replayed <- replayBlocking(ctx, paths, gate, codec.String) }()
	next := [2]int{}
	ended := 0
	for ended < 2 {
		var b *Buffer[string]
		select {
		case b = <-gate.queue:
		case <-ctx.Done():
			t.Fatalf("stalled: next %v, ended %d", next, ended)
		}
		c := b.Channel
		switch b.Event.Kind {
		case eventNone:
			for j, r := range b.Records {
				if want := fmt.Sprintf("p%d-%06d", c, next[c]); r != want || b.Timestamps[j] != int64(next[c]) {
					t.Fatalf("channel %d: got %q at %d, want %q", c, r, b.Timestamps[j], want)
				}
				next[c]++
			}
		case EventWatermark:
			if b.Event.Watermark != int64(next[c]) {
				t.Fatalf("channel %d: watermark %d after %d records", c, b.Event.Watermark, next[c])
			}
		case EventEndOfPartition:
			ended++
		default:
			t.Fatalf("unexpected event %v", b.Event.Kind)
		}
		gate.Recycle(b)
	}
	if err := <-replayed; err != nil {
		t.Fatal(err)
	}
	if next[0] != next[1] || next[0] < 5000 {
		t.Fatalf("read %v records", next)
	}
}

// TestBlockingPartitionCutShort replays a partition file that lost its
// tail, as after a crash or a full disk: the consumer fails with the
// file's name instead of taking a short input for the whole.
func TestBlockingPartitionCutShort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool := &sync.Pool{New: func() any { return new(Buffer[string]) }}
	path := filepath.Join(t.TempDir(), "p0")
	writePartition(t, path, 0, 50, pool)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int64{1, 7, st.Size() / 2} {
		if err := os.Truncate(path, st.Size()-cut); err != nil {
			t.Fatal(err)
		}
		gate := newInputGate[string](1, GateConfig{BuffersPerChannel: 1000}, pool)
		err := replayBlocking(ctx, []string{path}, gate, codec.String)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "cut short") {
			t.Fatalf("cut %d bytes: err = %v", cut, err)
		}
		st, _ = os.Stat(path)
	}
}
