package runtime

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestGateCountsNoMoreThanItsCredits runs a producer that always waits for
// a credit against a consumer that recycles at once: the records the gate
// counts in flight never exceed its credits times the buffer size, even in
// the instant the consumer hands a credit back.
func TestGateCountsNoMoreThanItsCredits(t *testing.T) {
	const size, perChannel, floating = 8, 2, 2
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool := &sync.Pool{New: func() any { return new(Buffer[int]) }}
	gate := newInputGate[int](1, GateConfig{BuffersPerChannel: perChannel, FloatingBuffers: floating}, pool)
	ch := &localChannel[int]{gate: gate}
	const buffers = 200_000
	sent := make(chan error, 1)
	go func() {
		for i := 0; i < buffers; i++ {
			b := pool.Get().(*Buffer[int])
			for j := 0; j < size; j++ {
				b.Records = append(b.Records, j)
			}
			if err := ch.Send(ctx, b); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for i := 0; i < buffers; i++ {
		select {
		case b := <-gate.queue:
			gate.Recycle(b)
		case <-ctx.Done():
			t.Fatalf("stalled after %d buffers", i)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if bound := int64((perChannel + floating) * size); gate.MaxBuffered() > bound {
		t.Fatalf("the gate counted %d records in flight, its credits allow %d", gate.MaxBuffered(), bound)
	}
	if gate.Buffered() != 0 {
		t.Fatalf("%d records still counted after all were recycled", gate.Buffered())
	}
}
