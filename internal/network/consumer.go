package network

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
)

// GateConfig sizes a remote input gate like the runtime's in-process one:
// every channel owns BuffersPerChannel exclusive buffers, and the gate
// lends its FloatingBuffers to channels whose producers are blocked.
type GateConfig struct {
	// Channels is the number of input channels (producer subpartitions).
	Channels int
	// BuffersPerChannel: exclusive credits per channel; at least 1
	// (Flink's default is 2).
	BuffersPerChannel int
	// FloatingBuffers: credits shared by the gate (Flink's default is 8).
	FloatingBuffers int
	// BufferSize: bytes per buffer; default the Manager's BufferSize.
	BufferSize int
	// EventsPerChannel: room the gate queue keeps per channel for events,
	// which need no credit; default 16. Beyond it the producer waits on
	// the stream's window.
	EventsPerChannel int
}

// DefaultGateConfig returns Flink's defaults for a gate of n channels.
func DefaultGateConfig(n int) GateConfig {
	return GateConfig{Channels: n, BuffersPerChannel: 2, FloatingBuffers: 8}
}

// Buffer is what a Gate delivers: a data buffer (Event.Kind is zero) or an
// event. Data is valid until the buffer is recycled.
type Buffer struct {
	// Channel is the input channel index given to Connect.
	Channel int
	Data    []byte
	Event   Event

	mem      []byte
	floating bool
	ch       *inputChannel
	err      error
}

// IsEvent reports whether the buffer carries an event rather than data.
func (b *Buffer) IsEvent() bool { return b.Event.Kind != 0 }

// Gate is the consumer's end of a set of remote channels. Memory is
// bounded: a producer sends a data buffer only for a credit, and a credit
// is a free buffer of this gate, so at most Channels×BuffersPerChannel +
// FloatingBuffers data buffers are in flight or queued; Recycle returns a
// buffer's credit to its producer. Next is meant for one goroutine.
type Gate struct {
	m      *Manager
	cfg    GateConfig
	queue  chan *Buffer
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	channels     []*inputChannel
	freeFloating []*Buffer
	floatingMade int
	waiting      []*inputChannel // blocked producers waiting for a floating buffer
	closed       bool

	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	ended       int
}

type inputChannel struct {
	g      *Gate
	index  int
	id     ChannelID
	addr   string
	st     *yamux.Stream
	notify chan struct{}
	// Guarded by g.mu.
	reserved []*Buffer // announced (or about to be) as credit, not yet filled
	pending  int       // credits not yet announced
	waiting  bool
	done     bool
}

// NewGate creates a consumer gate whose channels use this manager's
// connections.
func (m *Manager) NewGate(cfg GateConfig) (*Gate, error) {
	if cfg.Channels < 1 {
		return nil, fmt.Errorf("network: gate needs at least one channel, got %d", cfg.Channels)
	}
	if cfg.BuffersPerChannel < 1 {
		cfg.BuffersPerChannel = 1
	}
	if cfg.FloatingBuffers < 0 {
		cfg.FloatingBuffers = 0
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = m.cfg.BufferSize
	}
	if cfg.EventsPerChannel <= 0 {
		cfg.EventsPerChannel = 16
	}
	// Room for every credit, the events, and one error per channel: a
	// data frame that arrives for a credit never waits for the consumer.
	capacity := cfg.Channels*(cfg.BuffersPerChannel+cfg.EventsPerChannel+1) + cfg.FloatingBuffers
	g := &Gate{m: m, cfg: cfg, queue: make(chan *Buffer, capacity), channels: make([]*inputChannel, cfg.Channels)}
	g.ctx, g.cancel = context.WithCancel(m.ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("network: manager %w", ErrClosed)
	}
	m.gates[g] = struct{}{}
	return g, nil
}

// InFlight returns the data buffers received and not yet recycled.
func (g *Gate) InFlight() int64 { return g.inFlight.Load() }

// MaxInFlight returns the most data buffers ever received and not
// recycled at once; it never exceeds the gate's credits.
func (g *Gate) MaxInFlight() int64 { return g.maxInFlight.Load() }

// Credits returns the most data buffers the gate can hold.
func (g *Gate) Credits() int {
	return g.cfg.Channels*g.cfg.BuffersPerChannel + g.cfg.FloatingBuffers
}

// Connect requests channel id from the producer's data server at addr
// (the address that process advertises) and makes it input channel index.
// While the producer has not registered the channel yet, it retries with
// the manager's request backoff.
func (g *Gate) Connect(ctx context.Context, index int, addr string, id ChannelID) error {
	g.mu.Lock()
	switch {
	case g.closed:
		g.mu.Unlock()
		return fmt.Errorf("network: gate %w", ErrClosed)
	case index < 0 || index >= len(g.channels):
		g.mu.Unlock()
		return fmt.Errorf("network: channel index %d out of range [0, %d)", index, len(g.channels))
	case g.channels[index] != nil:
		g.mu.Unlock()
		return fmt.Errorf("network: channel index %d is already connected", index)
	}
	// Hold the slot while connecting.
	ch := &inputChannel{g: g, index: index, id: id, addr: addr, notify: make(chan struct{}, 1)}
	g.channels[index] = ch
	g.mu.Unlock()

	// Closing the gate aborts a request in progress.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.ctx, cancel)()
	st, err := g.requestWithRetry(ctx, addr, id)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		if err == nil {
			st.Close()
		}
		err = fmt.Errorf("network: gate %w", ErrClosed)
	}
	if err != nil {
		g.channels[index] = nil
		return err
	}
	ch.st = st
	for range g.cfg.BuffersPerChannel {
		ch.reserved = append(ch.reserved, &Buffer{Channel: index, mem: make([]byte, g.cfg.BufferSize), ch: ch})
	}
	g.wg.Add(2)
	go ch.read()
	go ch.announce()
	return nil
}

func (g *Gate) requestWithRetry(ctx context.Context, addr string, id ChannelID) (*yamux.Stream, error) {
	backoff := g.m.cfg.RequestBackoffInitial
	for {
		st, err := g.request(ctx, addr, id)
		if err == nil || !errors.Is(err, ErrUnknownChannel) || g.m.cfg.RequestBackoffMax < 0 || backoff > g.m.cfg.RequestBackoffMax {
			return st, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-g.ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("network: gate %w", ErrClosed)
		}
		backoff *= 2
	}
}

func (g *Gate) request(ctx context.Context, addr string, id ChannelID) (*yamux.Stream, error) {
	sess, err := g.m.session(ctx, addr)
	if err != nil {
		return nil, err
	}
	st, err := sess.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("network: open stream to %s: %w: %w", addr, ErrPeerClosed, err)
	}
	req := appendRequest(nil, id, g.cfg.BuffersPerChannel, g.cfg.BufferSize)
	st.SetDeadline(time.Now().Add(g.m.cfg.HandshakeTimeout))
	stop := context.AfterFunc(ctx, func() { st.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) (*yamux.Stream, error) {
		st.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := writeFrame(st, frameRequest, req); err != nil {
		return fail(fmt.Errorf("network: request channel %s from %s: %w: %w", id, addr, ErrPeerClosed, err))
	}
	var hdr [frameHeaderSize]byte
	typ, n, err := readHeader(st, hdr[:], maxControlFrame)
	if err == nil && typ != frameResponse {
		err = fmt.Errorf("%w: frame type %d instead of a response", ErrProtocol, typ)
	}
	var status byte
	var msg string
	if err == nil {
		resp := make([]byte, n)
		if _, err = io.ReadFull(st, resp); err == nil {
			status, msg, err = decodeResponse(resp)
		}
	}
	if err != nil {
		return fail(fmt.Errorf("network: request channel %s from %s: no answer: %w", id, addr, err))
	}
	switch status {
	case statusOK:
	case statusUnknownChannel:
		return fail(fmt.Errorf("network: request channel %s from %s: %w: %s", id, addr, ErrUnknownChannel, msg))
	case statusAlreadyConsumed:
		return fail(fmt.Errorf("network: request channel %s from %s: %w: %s", id, addr, ErrAlreadyConsumed, msg))
	default:
		return fail(fmt.Errorf("network: request channel %s from %s: %w: status %d", id, addr, ErrProtocol, status))
	}
	if !stop() {
		// ctx fired after the answer: the channel is fine but the caller
		// gave up.
		return fail(ctx.Err())
	}
	st.SetDeadline(time.Time{})
	return st, nil
}

// Next returns the next buffer or event of any channel, in order per
// channel. After every channel delivered its end of partition it returns
// io.EOF; a failed channel's error is returned in its place in the
// stream.
func (g *Gate) Next(ctx context.Context) (*Buffer, error) {
	if g.ctx.Err() != nil {
		return nil, fmt.Errorf("network: gate %w", ErrClosed)
	}
	if g.ended == len(g.channels) && len(g.queue) == 0 {
		return nil, io.EOF
	}
	select {
	case b := <-g.queue:
		if b.err != nil {
			return nil, b.err
		}
		if b.Event.Kind == EventEndOfPartition {
			g.ended++
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.ctx.Done():
		return nil, fmt.Errorf("network: gate %w", ErrClosed)
	}
}

// Recycle hands a data buffer back, exactly once: its credit goes to its channel's
// producer (exclusive buffer) or to a blocked producer of any channel
// (floating buffer). Recycling an event is a no-op.
func (g *Gate) Recycle(b *Buffer) {
	if b == nil || b.mem == nil {
		return
	}
	b.Data = nil
	g.inFlight.Add(-1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if b.floating {
		g.returnFloating(b)
		return
	}
	if !b.ch.done {
		b.ch.give(b)
	}
}

// give reserves b for ch and announces a credit; g.mu must be held.
func (ch *inputChannel) give(b *Buffer) {
	b.ch, b.Channel = ch, ch.index
	ch.reserved = append(ch.reserved, b)
	ch.pending++
	select {
	case ch.notify <- struct{}{}:
	default:
	}
}

// returnFloating lends b to the longest-waiting blocked channel or puts
// it back in the pool; g.mu must be held.
func (g *Gate) returnFloating(b *Buffer) {
	for len(g.waiting) > 0 {
		ch := g.waiting[0]
		g.waiting = g.waiting[1:]
		ch.waiting = false
		if !ch.done {
			ch.give(b)
			return
		}
	}
	b.ch = nil
	g.freeFloating = append(g.freeFloating, b)
}

// lendFloating answers a blocked producer's backlog; g.mu must be held.
// Our producers cannot tell how much they have queued (Send is
// synchronous), so instead of Flink's backlog-many buffers the channel gets
// half of what is free: a busy channel ramps up in a few round trips and
// still leaves buffers for the others.
func (g *Gate) lendFloating(ch *inputChannel) {
	if ch.done || ch.waiting {
		return
	}
	free := len(g.freeFloating) + g.cfg.FloatingBuffers - g.floatingMade
	for range max(1, free/2) {
		g.lendOne(ch)
	}
}

func (g *Gate) lendOne(ch *inputChannel) {
	var b *Buffer
	if n := len(g.freeFloating); n > 0 {
		b = g.freeFloating[n-1]
		g.freeFloating = g.freeFloating[:n-1]
	} else if g.floatingMade < g.cfg.FloatingBuffers {
		g.floatingMade++
		b = &Buffer{mem: make([]byte, g.cfg.BufferSize), floating: true}
	}
	if b == nil {
		ch.waiting = true
		g.waiting = append(g.waiting, ch)
		return
	}
	ch.give(b)
}

// finish stops credit announcements of ch and returns its unused floating
// buffers to the pool; g.mu must be held.
func (ch *inputChannel) finish() {
	if ch.done {
		return
	}
	ch.done = true
	for _, b := range ch.reserved {
		if b.floating {
			ch.g.returnFloating(b)
		}
	}
	ch.reserved = nil
	select {
	case ch.notify <- struct{}{}:
	default:
	}
}

func (g *Gate) push(b *Buffer) bool {
	select {
	case g.queue <- b:
		return true
	case <-g.ctx.Done():
		return false
	}
}

// read moves the frames of one channel into the gate queue.
func (ch *inputChannel) read() {
	g := ch.g
	defer g.wg.Done()
	defer func() {
		g.mu.Lock()
		ch.finish()
		g.mu.Unlock()
		ch.st.Close()
	}()
	var hdr [frameHeaderSize]byte
	small := make([]byte, 64)
	limit := max(g.cfg.BufferSize, maxControlFrame)
	for {
		typ, n, err := readHeader(ch.st, hdr[:], limit)
		if err != nil {
			ch.fail(err)
			return
		}
		switch typ {
		case frameData:
			if n > g.cfg.BufferSize {
				ch.fail(fmt.Errorf("%w: data frame of %d bytes exceeds the buffer size %d", ErrProtocol, n, g.cfg.BufferSize))
				return
			}
			g.mu.Lock()
			var b *Buffer
			if k := len(ch.reserved); k > 0 {
				b = ch.reserved[k-1]
				ch.reserved = ch.reserved[:k-1]
			}
			g.mu.Unlock()
			if b == nil {
				ch.fail(fmt.Errorf("%w: data frame without credit", ErrProtocol))
				return
			}
			if _, err := io.ReadFull(ch.st, b.mem[:n]); err != nil {
				ch.fail(err)
				return
			}
			b.Data = b.mem[:n]
			now := g.inFlight.Add(1)
			for {
				high := g.maxInFlight.Load()
				if now <= high || g.maxInFlight.CompareAndSwap(high, now) {
					break
				}
			}
			if !g.push(b) {
				return
			}
		case frameEvent, frameBacklog:
			if n > len(small) {
				ch.fail(fmt.Errorf("%w: control frame type %d of %d bytes", ErrProtocol, typ, n))
				return
			}
			if _, err := io.ReadFull(ch.st, small[:n]); err != nil {
				ch.fail(err)
				return
			}
			if typ == frameBacklog {
				g.mu.Lock()
				g.lendFloating(ch)
				g.mu.Unlock()
				continue
			}
			e, err := decodeEvent(small[:n])
			if err != nil {
				ch.fail(err)
				return
			}
			if !g.push(&Buffer{Channel: ch.index, Event: e}) {
				return
			}
			if e.Kind == EventEndOfPartition {
				// The producer sends nothing after it; our close
				// releases its subpartition.
				return
			}
		case frameError:
			msg := make([]byte, n)
			if _, err := io.ReadFull(ch.st, msg); err != nil {
				ch.fail(err)
				return
			}
			g.push(&Buffer{Channel: ch.index, err: fmt.Errorf("network: channel %s from %s: %w: %s", ch.id, ch.addr, ErrProducerFailed, msg)})
			return
		default:
			ch.fail(fmt.Errorf("%w: unexpected frame type %d", ErrProtocol, typ))
			return
		}
	}
}

// fail queues the channel's error behind the data that preceded it,
// unless the gate itself is closing.
func (ch *inputChannel) fail(err error) {
	g := ch.g
	if g.ctx.Err() != nil {
		return
	}
	if !errors.Is(err, ErrProtocol) {
		err = fmt.Errorf("%w: %w", ErrPeerClosed, err)
	}
	g.push(&Buffer{Channel: ch.index, err: fmt.Errorf("network: channel %s from %s: %w", ch.id, ch.addr, err)})
}

// announce sends the credits of recycled buffers, coalescing those that
// pile up while a write is in progress; it keeps network writes off the
// consumer's goroutine.
func (ch *inputChannel) announce() {
	g := ch.g
	defer g.wg.Done()
	frame := make([]byte, frameHeaderSize, frameHeaderSize+binary.MaxVarintLen64)
	for {
		select {
		case <-ch.notify:
		case <-g.ctx.Done():
			return
		}
		g.mu.Lock()
		n, done := ch.pending, ch.done
		ch.pending = 0
		g.mu.Unlock()
		if done {
			return
		}
		if n == 0 {
			continue
		}
		f := appendCredit(frame[:frameHeaderSize], n)
		putHeader(f, frameCredit, len(f)-frameHeaderSize)
		if _, err := ch.st.Write(f); err != nil {
			// The reader sees the same failure and reports it.
			return
		}
	}
}

// Close releases every channel (their producers see the consumer go) and
// waits for the gate's goroutines.
func (g *Gate) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	chans := append([]*inputChannel(nil), g.channels...)
	g.mu.Unlock()
	g.cancel()
	for _, ch := range chans {
		if ch != nil && ch.st != nil {
			// yamux has no reset; a past deadline unblocks the reader.
			ch.st.SetReadDeadline(time.Unix(1, 0))
			ch.st.Close()
		}
	}
	g.wg.Wait()
	g.m.mu.Lock()
	delete(g.m.gates, g)
	g.m.mu.Unlock()
	return nil
}
