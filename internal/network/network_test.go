package network

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	goleak.VerifyTestMain(m)
}

// logBuffer collects a manager's log lines for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newManager(t testing.TB, cfg Config) *Manager {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newGate(t testing.TB, m *Manager, cfg GateConfig) *Gate {
	t.Helper()
	g, err := m.NewGate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func testID(n int) ChannelID {
	return ChannelID{Job: "job", Result: "ds-1", Partition: n, Attempt: "att", Subpartition: n % 3}
}

// payload returns buffer i of a stream: its sequence number, then a
// pattern, with a size that varies between 8 bytes and max.
func payload(dst []byte, i, max int) []byte {
	n := 8 + (i*7919)%(max-7)
	dst = binary.BigEndian.AppendUint64(dst[:0], uint64(i))
	for len(dst) < n {
		dst = append(dst, byte(i+len(dst)))
	}
	return dst
}

func checkPayload(b []byte, i, max int) error {
	want := payload(nil, i, max)
	if !bytes.Equal(b, want) {
		got := -1
		if len(b) >= 8 {
			got = int(binary.BigEndian.Uint64(b))
		}
		return fmt.Errorf("buffer %d: got %d bytes (seq %d), want %d bytes", i, len(b), got, len(want))
	}
	return nil
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// produceStream sends n buffers with a watermark after every 10th and a
// barrier after every 100th, then the end of partition.
func produceStream(ctx context.Context, s *Sender, n, max int) error {
	buf := make([]byte, 0, max)
	for i := 0; i < n; i++ {
		buf = payload(buf, i, max)
		if err := s.Send(ctx, buf); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		if i%10 == 9 {
			if err := s.SendEvent(ctx, Event{Kind: EventWatermark, Watermark: int64(i)}); err != nil {
				return err
			}
		}
		if i%100 == 99 {
			if err := s.SendEvent(ctx, Event{Kind: EventBarrier, Checkpoint: int64(i / 100)}); err != nil {
				return err
			}
		}
	}
	return s.SendEvent(ctx, Event{Kind: EventEndOfPartition})
}

// consumeStream checks what produceStream sent, on one channel of g.
func consumeStream(ctx context.Context, g *Gate, n, max int) error {
	i := 0
	for {
		b, err := g.Next(ctx)
		if err != nil {
			return fmt.Errorf("after %d buffers: %w", i, err)
		}
		switch b.Event.Kind {
		case 0:
			if err := checkPayload(b.Data, i, max); err != nil {
				return err
			}
			i++
			g.Recycle(b)
		case EventWatermark:
			if i%10 != 0 || b.Event.Watermark != int64(i-1) {
				return fmt.Errorf("watermark %d after buffer %d", b.Event.Watermark, i-1)
			}
		case EventBarrier:
			if i%100 != 0 || b.Event.Checkpoint != int64(i/100-1) {
				return fmt.Errorf("barrier %d after buffer %d", b.Event.Checkpoint, i-1)
			}
		case EventEndOfPartition:
			if i != n {
				return fmt.Errorf("end of partition after %d buffers, want %d", i, n)
			}
			return nil
		default:
			return fmt.Errorf("unexpected event %v", b.Event.Kind)
		}
	}
}

func TestRoundTripInOrder(t *testing.T) {
	prod := newManager(t, Config{Token: "secret"})
	cons := newManager(t, Config{Token: "secret"})
	s, err := prod.Produce(testID(0))
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t, cons, DefaultGateConfig(1))
	ctx := ctxTimeout(t, 10*time.Second)
	if err := g.Connect(ctx, 0, prod.Addr(), testID(0)); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	errc := make(chan error, 1)
	go func() { errc <- produceStream(ctx, s, n, DefaultBufferSize) }()
	if err := consumeStream(ctx, g, n, DefaultBufferSize); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, err := g.Next(ctx); err != io.EOF {
		t.Fatalf("Next after the end: %v, want io.EOF", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Released():
	case <-ctx.Done():
		t.Fatal("sender not released after the consumer read the end of partition")
	}
	if err := s.Err(); err != nil {
		t.Fatalf("sender ended with %v", err)
	}
	if m := g.MaxInFlight(); m > int64(g.Credits()) {
		t.Fatalf("%d buffers in flight, credits %d", m, g.Credits())
	}
	if err := s.Send(ctx, []byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after the end: %v, want ErrClosed", err)
	}
}

func TestManyChannelsOneConnection(t *testing.T) {
	prod := newManager(t, Config{})
	cons := newManager(t, Config{})
	const channels, n = 4, 300
	ctx := ctxTimeout(t, 10*time.Second)
	var wg sync.WaitGroup
	errc := make(chan error, 2*channels)
	for c := 0; c < channels; c++ {
		s, err := prod.Produce(testID(c))
		if err != nil {
			t.Fatal(err)
		}
		g := newGate(t, cons, GateConfig{Channels: 1, BuffersPerChannel: 2, FloatingBuffers: 2, BufferSize: 4096})
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := g.Connect(ctx, 0, prod.Addr(), testID(c)); err != nil {
				errc <- err
				return
			}
			errc <- consumeStream(ctx, g, n, 4096)
		}()
		go func() {
			defer wg.Done()
			errc <- produceStream(ctx, s, n, 4096)
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a, b := prod.NumConnections(), cons.NumConnections(); a != 1 || b != 1 {
		t.Fatalf("connections: producer %d, consumer %d; want 1 and 1", a, b)
	}
}

// sendUntilBlocked runs a producer that sends 32 KiB buffers as fast as it
// can and counts those sent.
func sendUntilBlocked(ctx context.Context, s *Sender, total int, sent *atomic.Int64) <-chan error {
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, DefaultBufferSize)
		for i := 0; i < total; i++ {
			binary.BigEndian.PutUint64(buf, uint64(i))
			if err := s.Send(ctx, buf); err != nil {
				errc <- err
				return
			}
			sent.Add(1)
		}
		errc <- s.SendEvent(ctx, Event{Kind: EventEndOfPartition})
	}()
	return errc
}

// settle waits until v stops changing for a while and returns it.
func settle(t *testing.T, v func() int64) int64 {
	t.Helper()
	last, since := v(), time.Now()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		if now := v(); now != last {
			last, since = now, time.Now()
		} else if time.Since(since) > 150*time.Millisecond {
			return last
		}
	}
	t.Fatal("value did not settle")
	return 0
}

func TestSlowChannelDoesNotBlockFastOne(t *testing.T) {
	prod := newManager(t, Config{})
	cons := newManager(t, Config{})
	ctx := ctxTimeout(t, 10*time.Second)
	slowS, _ := prod.Produce(testID(1))
	fastS, _ := prod.Produce(testID(2))
	slow := newGate(t, cons, GateConfig{Channels: 1, BuffersPerChannel: 2, FloatingBuffers: 1})
	fast := newGate(t, cons, DefaultGateConfig(1))
	if err := slow.Connect(ctx, 0, prod.Addr(), testID(1)); err != nil {
		t.Fatal(err)
	}
	if err := fast.Connect(ctx, 0, prod.Addr(), testID(2)); err != nil {
		t.Fatal(err)
	}
	var slowSent atomic.Int64
	slowErr := sendUntilBlocked(ctx, slowS, 50, &slowSent)
	// The slow consumer reads nothing: its producer stops at its credits.
	if got := settle(t, slowSent.Load); got != int64(slow.Credits()) {
		t.Fatalf("slow producer sent %d buffers without a reader, want its %d credits", got, slow.Credits())
	}
	start := time.Now()
	const n = 2000
	fastErr := make(chan error, 1)
	go func() { fastErr <- produceStream(ctx, fastS, n, DefaultBufferSize) }()
	if err := consumeStream(ctx, fast, n, DefaultBufferSize); err != nil {
		t.Fatal(err)
	}
	if err := <-fastErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("fast channel: %d buffers in %v while the slow one is blocked", n, time.Since(start))
	if got := slowSent.Load(); got != int64(slow.Credits()) {
		t.Fatalf("slow producer moved to %d while its consumer read nothing", got)
	}
	if cons.NumConnections() != 1 {
		t.Fatalf("%d connections, want 1", cons.NumConnections())
	}
	// Now drain the slow one.
	for i := 0; ; i++ {
		b, err := slow.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Event.Kind == EventEndOfPartition {
			if i != 50 {
				t.Fatalf("slow channel ended after %d buffers", i)
			}
			break
		}
		if seq := binary.BigEndian.Uint64(b.Data); seq != uint64(i) {
			t.Fatalf("slow buffer %d has sequence %d", i, seq)
		}
		slow.Recycle(b)
	}
	if err := <-slowErr; err != nil {
		t.Fatal(err)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func TestBackpressureBoundsBuffersInFlight(t *testing.T) {
	prod := newManager(t, Config{})
	cons := newManager(t, Config{})
	ctx := ctxTimeout(t, 10*time.Second)
	s, _ := prod.Produce(testID(0))
	g := newGate(t, cons, GateConfig{Channels: 1, BuffersPerChannel: 2, FloatingBuffers: 3})
	if err := g.Connect(ctx, 0, prod.Addr(), testID(0)); err != nil {
		t.Fatal(err)
	}
	const total = 400 // 12.5 MiB, far more than the gate holds
	var sent atomic.Int64
	errc := sendUntilBlocked(ctx, s, total, &sent)
	blocked := settle(t, sent.Load)
	if blocked != int64(g.Credits()) || g.InFlight() != int64(g.Credits()) {
		t.Fatalf("producer sent %d, gate holds %d, before the consumer read anything; want both = credits %d", blocked, g.InFlight(), g.Credits())
	}
	h1 := heapInUse()
	time.Sleep(300 * time.Millisecond)
	h2 := heapInUse()
	if sent.Load() != blocked {
		t.Fatalf("producer went on to %d while blocked", sent.Load())
	}
	if h2 > h1+1<<20 {
		t.Fatalf("heap grew from %d to %d bytes while the producer was blocked", h1, h2)
	}
	// Resume with a slow consumer: the bound holds throughout.
	for i := 0; i < total; i++ {
		b, err := g.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.IsEvent() {
			t.Fatalf("event %v at %d", b.Event.Kind, i)
		}
		if seq := binary.BigEndian.Uint64(b.Data); seq != uint64(i) {
			t.Fatalf("buffer %d has sequence %d", i, seq)
		}
		if i%50 == 0 {
			time.Sleep(time.Millisecond)
		}
		g.Recycle(b)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if b, err := g.Next(ctx); err != nil || b.Event.Kind != EventEndOfPartition {
		t.Fatalf("last: %v %v", b, err)
	}
	if m := g.MaxInFlight(); m > int64(g.Credits()) {
		t.Fatalf("max in flight %d > credits %d", m, g.Credits())
	}
}

func TestWrongTokenRejected(t *testing.T) {
	var prodLog logBuffer
	prod := newManager(t, Config{Token: "right", Logger: slog.New(slog.NewTextHandler(&prodLog, nil))})
	s, _ := prod.Produce(testID(0))
	ctx := ctxTimeout(t, 5*time.Second)
	for _, token := range []string{"wrong", ""} {
		cons := newManager(t, Config{Token: token})
		g := newGate(t, cons, DefaultGateConfig(1))
		err := g.Connect(ctx, 0, prod.Addr(), testID(0))
		if !errors.Is(err, ErrWrongToken) || !strings.Contains(err.Error(), prod.Addr()) {
			t.Fatalf("token %q: Connect = %v, want ErrWrongToken naming %s", token, err, prod.Addr())
		}
		// The server side logs the rejection, naming the dialer.
		deadline := time.Now().Add(2 * time.Second)
		for !strings.Contains(prodLog.String(), cons.Addr()) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if l := prodLog.String(); !strings.Contains(l, "wrong secret token") || !strings.Contains(l, cons.Addr()) {
			t.Fatalf("producer log lacks the rejection of %s:\n%s", cons.Addr(), l)
		}
	}
	if prod.NumConnections() != 0 {
		t.Fatalf("%d connections after rejections", prod.NumConnections())
	}
	// The subpartition is still there for the right consumer.
	good := newManager(t, Config{Token: "right"})
	g := newGate(t, good, DefaultGateConfig(1))
	if err := g.Connect(ctx, 0, prod.Addr(), testID(0)); err != nil {
		t.Fatal(err)
	}
	go s.SendEvent(ctx, Event{Kind: EventEndOfPartition})
	if b, err := g.Next(ctx); err != nil || b.Event.Kind != EventEndOfPartition {
		t.Fatalf("%v %v", b, err)
	}
}

func TestDialClosedPortFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cons := newManager(t, Config{})
	g := newGate(t, cons, DefaultGateConfig(1))
	start := time.Now()
	err = g.Connect(ctxTimeout(t, 5*time.Second), 0, addr, testID(0))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Connect = %v, want ErrUnreachable naming %s", err, addr)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v to fail", d)
	}
	t.Log(err)
}

func TestUnknownChannel(t *testing.T) {
	prod := newManager(t, Config{})
	ctx := ctxTimeout(t, 5*time.Second)

	noRetry := newManager(t, Config{RequestBackoffMax: -1})
	g := newGate(t, noRetry, DefaultGateConfig(1))
	err := g.Connect(ctx, 0, prod.Addr(), testID(7))
	if !errors.Is(err, ErrUnknownChannel) || !strings.Contains(err.Error(), testID(7).String()) {
		t.Fatalf("Connect = %v, want ErrUnknownChannel naming the channel", err)
	}

	// With retries, a producer that registers a little later is found.
	retry := newManager(t, Config{RequestBackoffInitial: 20 * time.Millisecond, RequestBackoffMax: time.Second})
	g2 := newGate(t, retry, DefaultGateConfig(1))
	time.AfterFunc(100*time.Millisecond, func() {
		s, err := prod.Produce(testID(7))
		if err == nil {
			s.SendEvent(ctx, Event{Kind: EventEndOfPartition})
		}
	})
	if err := g2.Connect(ctx, 0, prod.Addr(), testID(7)); err != nil {
		t.Fatal(err)
	}
	if b, err := g2.Next(ctx); err != nil || b.Event.Kind != EventEndOfPartition {
		t.Fatalf("%v %v", b, err)
	}
	// A subpartition is consumed once.
	g3 := newGate(t, noRetry, DefaultGateConfig(1))
	s8, _ := prod.Produce(testID(8))
	defer s8.Close()
	if err := g3.Connect(ctx, 0, prod.Addr(), testID(8)); err != nil {
		t.Fatal(err)
	}
	g4 := newGate(t, retry, DefaultGateConfig(1))
	if err := g4.Connect(ctx, 0, prod.Addr(), testID(8)); !errors.Is(err, ErrAlreadyConsumed) {
		t.Fatalf("second consumer: %v, want ErrAlreadyConsumed", err)
	}
}

func TestCloseMidTransfer(t *testing.T) {
	ctx := ctxTimeout(t, 10*time.Second)
	setup := func(t *testing.T) (*Manager, *Manager, *Sender, *Gate, *atomic.Int64, <-chan error) {
		prod := newManager(t, Config{})
		cons := newManager(t, Config{})
		s, _ := prod.Produce(testID(0))
		g := newGate(t, cons, DefaultGateConfig(1))
		if err := g.Connect(ctx, 0, prod.Addr(), testID(0)); err != nil {
			t.Fatal(err)
		}
		var sent atomic.Int64
		errc := sendUntilBlocked(ctx, s, 1000, &sent)
		settle(t, sent.Load)
		return prod, cons, s, g, &sent, errc
	}
	prompt := func(t *testing.T, errc <-chan error) error {
		t.Helper()
		select {
		case err := <-errc:
			return err
		case <-time.After(2 * time.Second):
			t.Fatal("blocked producer did not return")
			return nil
		}
	}

	t.Run("consumer closes gate", func(t *testing.T) {
		_, _, _, g, _, errc := setup(t)
		g.Close()
		if err := prompt(t, errc); !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("Send = %v, want ErrPeerClosed", err)
		}
	})
	t.Run("producer closes before end of partition", func(t *testing.T) {
		_, _, s, g, _, errc := setup(t)
		s.Close()
		if err := prompt(t, errc); !errors.Is(err, ErrClosed) {
			t.Fatalf("Send = %v, want ErrClosed", err)
		}
		var err error
		for err == nil {
			var b *Buffer
			if b, err = g.Next(ctx); err == nil {
				g.Recycle(b)
			}
		}
		if !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("Next = %v, want ErrPeerClosed", err)
		}
	})
	t.Run("producer fails", func(t *testing.T) {
		_, _, s, g, _, errc := setup(t)
		s.Fail(errors.New("operator exploded"))
		prompt(t, errc)
		var err error
		for err == nil {
			var b *Buffer
			if b, err = g.Next(ctx); err == nil {
				g.Recycle(b)
			}
		}
		if !errors.Is(err, ErrProducerFailed) || !strings.Contains(err.Error(), "operator exploded") {
			t.Fatalf("Next = %v, want ErrProducerFailed with the cause", err)
		}
	})
	t.Run("producer context cancelled", func(t *testing.T) {
		prod := newManager(t, Config{})
		cons := newManager(t, Config{})
		s, _ := prod.Produce(testID(0))
		g := newGate(t, cons, DefaultGateConfig(1))
		if err := g.Connect(ctx, 0, prod.Addr(), testID(0)); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		var sent atomic.Int64
		errc := sendUntilBlocked(cctx, s, 1000, &sent)
		settle(t, sent.Load)
		cancel()
		if err := prompt(t, errc); !errors.Is(err, context.Canceled) {
			t.Fatalf("Send = %v, want context.Canceled", err)
		}
	})
	t.Run("consumer process goes away", func(t *testing.T) {
		_, cons, _, g, _, errc := setup(t)
		cons.Close()
		if err := prompt(t, errc); !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("Send = %v, want ErrPeerClosed", err)
		}
		if _, err := g.Next(ctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("Next on a closed manager's gate = %v", err)
		}
	})
	t.Run("producer process goes away", func(t *testing.T) {
		prod, _, _, g, _, errc := setup(t)
		start := time.Now()
		prod.Close()
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Manager.Close took %v", d)
		}
		if err := prompt(t, errc); !errors.Is(err, ErrClosed) {
			t.Fatalf("Send = %v, want ErrClosed", err)
		}
		var err error
		for err == nil {
			var b *Buffer
			if b, err = g.Next(ctx); err == nil {
				g.Recycle(b)
			}
		}
		if !errors.Is(err, ErrPeerClosed) || !strings.Contains(err.Error(), prod.Addr()) {
			t.Fatalf("Next = %v, want ErrPeerClosed naming %s", err, prod.Addr())
		}
	})
	t.Run("consumer waits in Next", func(t *testing.T) {
		cons := newManager(t, Config{})
		g := newGate(t, cons, DefaultGateConfig(1))
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := g.Next(cctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Next = %v", err)
		}
	})
}

// TestOneConnectionPerPair has two processes consume from each other,
// both dialing at the same moment: the tie-break must leave one connection.
func TestOneConnectionPerPair(t *testing.T) {
	var log logBuffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for round := 0; round < 20; round++ {
		a := newManager(t, Config{Token: "t", Logger: logger})
		b := newManager(t, Config{Token: "t", Logger: logger})
		ctx := ctxTimeout(t, 10*time.Second)
		sa, _ := a.Produce(testID(1))
		sb, _ := b.Produce(testID(2))
		ga := newGate(t, a, DefaultGateConfig(1))
		gb := newGate(t, b, DefaultGateConfig(1))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		if round == 0 {
			// One after the other: b reuses the connection a dialed.
			errs[0] = ga.Connect(ctx, 0, b.Addr(), testID(2))
			errs[1] = gb.Connect(ctx, 0, a.Addr(), testID(1))
		} else {
			wg.Add(2)
			go func() { defer wg.Done(); errs[0] = ga.Connect(ctx, 0, b.Addr(), testID(2)) }()
			go func() { defer wg.Done(); errs[1] = gb.Connect(ctx, 0, a.Addr(), testID(1)) }()
			wg.Wait()
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		go sa.SendEvent(ctx, Event{Kind: EventEndOfPartition})
		go sb.SendEvent(ctx, Event{Kind: EventEndOfPartition})
		for _, g := range []*Gate{ga, gb} {
			if e, err := g.Next(ctx); err != nil || e.Event.Kind != EventEndOfPartition {
				t.Fatalf("%v %v", e, err)
			}
		}
		if na, nb := a.NumConnections(), b.NumConnections(); na != 1 || nb != 1 {
			t.Fatalf("round %d: %d and %d connections, want 1 each", round, na, nb)
		}
		a.Close()
		b.Close()
	}
	t.Logf("%d of 19 concurrent rounds dialed both ways at once", strings.Count(log.String(), "dropped duplicate"))
}
