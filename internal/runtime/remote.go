package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/network"
)

// Remote channels carry a typed channel between processes over the data
// plane (internal/network), for jobs spread over TaskManagers. A buffer
// travels as one frame in the encoding of serializingChannel, records and
// events alike, in order and under the network's credits; on the consumer
// side a bridge decodes each frame and hands it to the task's InputGate
// under that gate's credits, so backpressure runs from the consumer's
// task through both credit systems to the producer. Barriers of unaligned
// checkpoints travel in band too: they cannot overtake the buffers already
// in the network, and the consumer registers them as priority barriers at
// the position where they arrive, which is correct and only less timely.

// remoteChannel is a ChannelWriter whose consumer is in another process.
type remoteChannel[T any] struct {
	sender  *network.Sender
	codec   codec.Codec[T]
	pool    *sync.Pool
	max     int // largest frame the data plane accepts
	scratch []byte
	frames  int // sent, for tests
	// bytesOut is the producing task's counter of bytes sent.
	bytesOut *atomic.Int64
}

func (c *remoteChannel[T]) setCounters(w waitCounters) {
	c.bytesOut = w.bytesOut
	if w.backPressured != nil {
		c.sender.ObserveWaits(w.backPressured.start, w.backPressured.stop)
	}
}

func (c *remoteChannel[T]) usage() float64 { return c.sender.Usage() }

func newRemoteChannel[T any](s *network.Sender, c codec.Codec[T], pool *sync.Pool, maxFrame int) *remoteChannel[T] {
	return &remoteChannel[T]{sender: s, codec: c, pool: pool, max: maxFrame}
}

// Send encodes the buffer and sends it; a buffer whose records encode
// larger than a frame goes as several buffers, each with whole records.
func (c *remoteChannel[T]) Send(ctx context.Context, b *Buffer[T]) error {
	end := b.Event.Kind == EventEndOfPartition
	var err error
	if end {
		// The data plane's own end of partition: the consumer reads
		// everything before it, then the channel ends cleanly.
		if err = c.sender.SendEvent(ctx, network.Event{Kind: network.EventEndOfPartition}); err == nil {
			err = c.sender.Close()
		}
		if err == nil {
			// The producing process may exit once its tasks ended: it
			// waits until the consumer has read everything.
			select {
			case <-c.sender.Released():
				err = c.sender.Err()
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
	} else {
		err = c.send(ctx, b)
	}
	b.reset()
	c.pool.Put(b)
	return err
}

// framePriorityBarrier marks a frame holding the barrier of an unaligned
// checkpoint: the checkpoint ID and whether it must still be aligned (a
// savepoint). It is above every EventKind.
const framePriorityBarrier = 0xF0

// SendPriority sends an unaligned checkpoint's barrier in band.
func (c *remoteChannel[T]) SendPriority(ctx context.Context, id int64, align bool) error {
	frame := append(c.scratch[:0], framePriorityBarrier)
	frame = codec.Int64.Append(frame, id)
	if align {
		frame = append(frame, 1)
	} else {
		frame = append(frame, 0)
	}
	c.scratch = frame
	return c.sender.Send(ctx, frame)
}

func (c *remoteChannel[T]) send(ctx context.Context, b *Buffer[T]) error {
	frame, err := encodeBuffer(c.codec, c.scratch[:0], b)
	if err != nil {
		return err
	}
	c.scratch = frame
	if len(frame) <= c.max {
		c.frames++
		if c.bytesOut != nil {
			c.bytesOut.Add(int64(len(frame)))
		}
		return c.sender.Send(ctx, frame)
	}
	if b.Event.Kind != eventNone || len(b.Records) < 2 {
		return fmt.Errorf("runtime: a buffer of %d bytes does not fit a %d-byte network frame", len(frame), c.max)
	}
	half := len(b.Records) / 2
	for _, part := range [2][2]int{{0, half}, {half, len(b.Records)}} {
		sub := &Buffer[T]{Records: b.Records[part[0]:part[1]]}
		if b.Timestamps != nil {
			sub.Timestamps = b.Timestamps[part[0]:part[1]]
		}
		if err := c.send(ctx, sub); err != nil {
			return err
		}
	}
	return nil
}

// bridgeRemote moves the buffers that arrive at a network gate into the
// task's InputGate, until every remote channel ended (nil), ctx ends or
// the network fails. channel maps a network channel index to the gate's.
func bridgeRemote[T any](ctx context.Context, from *network.Gate, to *InputGate[T], channel func(int) int, c codec.Codec[T]) error {
	locals := make(map[int]*localChannel[T])
	for {
		nb, err := from.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		idx := channel(nb.Channel)
		lc := locals[idx]
		if lc == nil {
			lc = &localChannel[T]{gate: to, index: idx}
			locals[idx] = lc
		}
		out := to.pool.Get().(*Buffer[T])
		switch {
		case nb.Event.Kind == network.EventEndOfPartition:
			out.Event = Event{Kind: EventEndOfPartition}
		case nb.Event.Kind != 0:
			err = fmt.Errorf("runtime: channel %d: unexpected %v event; events travel in frames", idx, nb.Event.Kind)
		case len(nb.Data) > 0 && nb.Data[0] == framePriorityBarrier:
			id, n, derr := codec.Int64.Decode(nb.Data[1:])
			if derr != nil || len(nb.Data) != 1+n+1 {
				err = fmt.Errorf("runtime: channel %d: malformed priority barrier: %w", idx, codec.ErrCorrupt)
				break
			}
			align := nb.Data[1+n] == 1
			from.Recycle(nb)
			to.pool.Put(out)
			if err := lc.SendPriority(ctx, id, align); err != nil {
				return err
			}
			continue
		default:
			to.bytesIn.Add(int64(len(nb.Data)))
			err = decodeBuffer(c, nb.Data, out)
		}
		from.Recycle(nb)
		if err != nil {
			return fmt.Errorf("runtime: channel %d: %w", idx, err)
		}
		if err := lc.Send(ctx, out); err != nil {
			return err
		}
	}
}
