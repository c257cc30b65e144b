package runtime

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/network"
)

// Blocking exchanges carry the data between the stages of a batch job.
// The producer writes each consumer's share of its output to a file of
// its own, and the consumer reads the files once every producer has
// finished: the stages need not run at the same time (a job runs in fewer
// slots than its parallelism), and a failed consumer reads its input
// again instead of making its producers run again. A file holds the
// buffers in the encoding of the network exchange, each after its length
// as a uvarint, and ends with the end-of-partition event, so that a file
// cut short by a crash or a full disk is an error and never a short
// input.

// blockingBufferSize is the write and read buffer of a partition file.
const blockingBufferSize = 64 << 10

// blockingChannel is a ChannelWriter that writes one consumer's partition
// to a file.
type blockingChannel[T any] struct {
	f        *os.File
	w        *bufio.Writer
	codec    codec.Codec[T]
	pool     *sync.Pool
	scratch  []byte
	bytesOut *atomic.Int64
}

func newBlockingChannel[T any](f *os.File, c codec.Codec[T], pool *sync.Pool) *blockingChannel[T] {
	return &blockingChannel[T]{f: f, w: bufio.NewWriterSize(f, blockingBufferSize), codec: c, pool: pool}
}

func (c *blockingChannel[T]) setCounters(w waitCounters) { c.bytesOut = w.bytesOut }

func (c *blockingChannel[T]) Send(ctx context.Context, b *Buffer[T]) error {
	if err := ctx.Err(); err != nil {
		// A file never blocks the producer, so this is where a task
		// whose job ended notices.
		b.reset()
		c.pool.Put(b)
		return err
	}
	end := b.Event.Kind == EventEndOfPartition
	frame, err := encodeBuffer(c.codec, c.scratch[:0], b)
	b.reset()
	c.pool.Put(b)
	if err != nil {
		return err
	}
	c.scratch = frame
	var n [binary.MaxVarintLen64]byte
	if _, err := c.w.Write(n[:binary.PutUvarint(n[:], uint64(len(frame)))]); err != nil {
		return c.fail(err)
	}
	if _, err := c.w.Write(frame); err != nil {
		return c.fail(err)
	}
	if c.bytesOut != nil {
		c.bytesOut.Add(int64(len(frame)))
	}
	if end {
		if err := c.w.Flush(); err != nil {
			return c.fail(err)
		}
		if err := c.f.Close(); err != nil {
			return c.fail(err)
		}
	}
	return nil
}

func (c *blockingChannel[T]) fail(err error) error {
	return fmt.Errorf("runtime: write blocking partition %s: %w", c.f.Name(), err)
}

// replayBlocking reads the partition files of a consumer's input into its
// gate, the file of gate channel i from paths[i], one after another; an
// empty path is a channel fed from elsewhere (another worker's file).
func replayBlocking[T any](ctx context.Context, paths []string, to *InputGate[T], c codec.Codec[T]) error {
	for idx, path := range paths {
		if path == "" {
			continue
		}
		lc := &localChannel[T]{gate: to, index: idx}
		err := readBlocking(ctx, path, to.pool, c, func(b *Buffer[T], size int) error {
			to.bytesIn.Add(int64(size))
			return lc.Send(ctx, b)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// serveBlocking sends a partition file to a consumer in another worker,
// through s, as a pipelined remote channel would have sent it.
func serveBlocking[T any](ctx context.Context, path string, s *network.Sender, pool *sync.Pool, c codec.Codec[T], maxFrame int) error {
	ch := newRemoteChannel(s, c, pool, maxFrame)
	return readBlocking(ctx, path, pool, c, func(b *Buffer[T], _ int) error { return ch.Send(ctx, b) })
}

// readBlocking decodes the buffers of a partition file, up to and
// including its end of partition, and hands each, with its encoded size,
// to send, which owns it from then on.
func readBlocking[T any](ctx context.Context, path string, pool *sync.Pool, c codec.Codec[T], send func(*Buffer[T], int) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("runtime: read blocking partition: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, blockingBufferSize)
	var frame []byte
	for {
		n, err := binary.ReadUvarint(r)
		if err == nil {
			err = ctx.Err()
		}
		if err == nil && n > 1<<31 {
			err = fmt.Errorf("a %d-byte buffer: %w", n, codec.ErrCorrupt)
		}
		if err == nil {
			if uint64(cap(frame)) < n {
				frame = make([]byte, n)
			}
			frame = frame[:n]
			_, err = io.ReadFull(r, frame)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("the file ends before the end of its partition; was it cut short?")
		}
		if err != nil {
			return fmt.Errorf("runtime: read blocking partition %s: %w", path, err)
		}
		out := pool.Get().(*Buffer[T])
		if err := decodeBuffer(c, frame, out); err != nil {
			return fmt.Errorf("runtime: read blocking partition %s: %w", path, err)
		}
		end := out.Event.Kind == EventEndOfPartition
		if err := send(out, len(frame)); err != nil {
			return err
		}
		if end {
			return nil
		}
	}
}
