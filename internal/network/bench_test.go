package network

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkThroughput moves 32 KiB buffers over loopback TCP between two
// managers with Flink's default credits, on 1 and 4 channels sharing the
// connection.
func BenchmarkThroughput(b *testing.B) {
	for _, channels := range []int{1, 4} {
		b.Run(fmt.Sprintf("channels=%d", channels), func(b *testing.B) {
			prod := newManager(b, Config{})
			cons := newManager(b, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			senders := make([]*Sender, channels)
			g := newGate(b, cons, DefaultGateConfig(channels))
			for c := range senders {
				senders[c], _ = prod.Produce(testID(c))
				if err := g.Connect(ctx, c, prod.Addr(), testID(c)); err != nil {
					b.Fatal(err)
				}
			}
			per := b.N/channels + 1
			b.SetBytes(DefaultBufferSize)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, s := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, DefaultBufferSize)
					for i := 0; i < per; i++ {
						if err := s.Send(ctx, buf); err != nil {
							b.Error(err)
							return
						}
					}
					s.SendEvent(ctx, Event{Kind: EventEndOfPartition})
				}()
			}
			received := 0
			for {
				buf, err := g.Next(ctx)
				if err != nil {
					break // io.EOF after every end of partition
				}
				if !buf.IsEvent() {
					received++
				}
				g.Recycle(buf)
			}
			elapsed := time.Since(start)
			wg.Wait()
			b.StopTimer()
			if received != per*channels {
				b.Fatalf("received %d of %d", received, per*channels)
			}
			b.ReportMetric(float64(received)/elapsed.Seconds(), "buffers/s")
		})
	}
}
