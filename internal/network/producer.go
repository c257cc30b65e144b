package network

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Sender is the producer's end of one channel: the subpartition of
// ChannelID, served to the one consumer that requests it. Send and
// SendEvent are meant for one goroutine (the producing task); Close and
// Fail may be called from any.
type Sender struct {
	m        *Manager
	id       ChannelID
	attached chan struct{} // closed once a consumer requested the channel
	released chan struct{} // closed when the channel is over, for any reason
	wake     chan struct{} // credit arrived

	mu          sync.Mutex
	st          *yamux.Stream
	peer        string
	credit      int
	backlogSent bool
	maxData     int
	finished    bool // end of partition sent
	err         error
	releaseOnce sync.Once
	// initialCredit is what the consumer granted when it attached, the
	// measure of Usage.
	initialCredit int

	// waitStart and waitStop, when set, are told when Send starts and
	// stops waiting for a credit (the producing task's back pressure).
	waitStart, waitStop func()

	wmu  sync.Mutex
	wbuf []byte
}

// Produce registers the subpartition id on this process's data server, so
// that its consumer can request it. Data sent before the consumer arrives
// waits for it (the consumer's first credits).
func (m *Manager) Produce(id ChannelID) (*Sender, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("network: manager %w", ErrClosed)
	}
	if _, ok := m.senders[id]; ok {
		return nil, fmt.Errorf("network: channel %s is already registered", id)
	}
	s := &Sender{
		m:        m,
		id:       id,
		attached: make(chan struct{}),
		released: make(chan struct{}),
		wake:     make(chan struct{}, 1),
	}
	m.senders[id] = s
	return s, nil
}

func (m *Manager) unregister(s *Sender) {
	m.mu.Lock()
	if m.senders[s.id] == s {
		delete(m.senders, s.id)
	}
	m.mu.Unlock()
}

// ID returns the channel's ID.
func (s *Sender) ID() ChannelID { return s.id }

// Released is closed when the channel is over: the consumer released it
// after the end of partition, or it failed, or it was closed.
func (s *Sender) Released() <-chan struct{} { return s.released }

// Err returns why the channel ended, or nil if it ended normally or has
// not ended.
func (s *Sender) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished && errors.Is(s.err, errReleased) {
		return nil
	}
	return s.err
}

var errReleased = errors.New("released by the consumer")

// serveStream answers a consumer's channel request on a new stream.
func (m *Manager) serveStream(p *peer, st *yamux.Stream) {
	defer m.wg.Done()
	st.SetReadDeadline(time.Now().Add(m.cfg.HandshakeTimeout))
	var hdr [frameHeaderSize]byte
	typ, n, err := readHeader(st, hdr[:], maxControlFrame)
	if err != nil || typ != frameRequest {
		st.Close()
		return
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(st, payload); err != nil {
		st.Close()
		return
	}
	st.SetReadDeadline(time.Time{})
	id, credit, bufSize, err := decodeRequest(payload)
	if err != nil {
		writeFrame(st, frameResponse, append([]byte{statusUnknownChannel}, "malformed request: "+err.Error()...))
		st.Close()
		return
	}
	m.mu.Lock()
	s := m.senders[id]
	m.mu.Unlock()
	if s == nil {
		writeFrame(st, frameResponse, append([]byte{statusUnknownChannel}, fmt.Sprintf("no channel %s on %s", id, m.addr)...))
		st.Close()
		return
	}
	if err := s.attach(st, p.addr, credit, bufSize); err != nil {
		writeFrame(st, frameResponse, append([]byte{statusAlreadyConsumed}, err.Error()...))
		st.Close()
		return
	}
	s.readCredits(st)
}

func (s *Sender) attach(st *yamux.Stream, peer string, credit, bufSize int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil || s.err != nil {
		return fmt.Errorf("channel %s was already requested", s.id)
	}
	// The reply goes out before attached is closed, so no data frame can
	// precede it.
	if err := writeFrame(st, frameResponse, []byte{statusOK}); err != nil {
		return err
	}
	s.st, s.peer, s.credit, s.maxData = st, peer, credit, bufSize
	s.initialCredit = credit
	s.wbuf = make([]byte, frameHeaderSize+bufSize)
	close(s.attached)
	return nil
}

// readCredits reads the consumer's credit announcements until the
// consumer closes its side.
func (s *Sender) readCredits(st *yamux.Stream) {
	var hdr [frameHeaderSize]byte
	var buf [16]byte
	for {
		typ, n, err := readHeader(st, hdr[:], len(buf))
		if err == nil {
			_, err = io.ReadFull(st, buf[:n])
		}
		if err != nil {
			s.mu.Lock()
			clean := s.finished && errors.Is(err, io.EOF)
			s.mu.Unlock()
			if clean {
				s.release(errReleased)
			} else {
				s.release(fmt.Errorf("network: channel %s: consumer %s went away before the end of partition: %w", s.id, s.peer, ErrPeerClosed))
			}
			return
		}
		if typ != frameCredit {
			s.release(fmt.Errorf("network: channel %s: consumer %s sent frame type %d: %w", s.id, s.peer, typ, ErrProtocol))
			return
		}
		c, err := decodeCredit(buf[:n])
		if err != nil {
			s.release(fmt.Errorf("network: channel %s: consumer %s sent a bad credit: %w", s.id, s.peer, err))
			return
		}
		s.mu.Lock()
		s.credit += c
		s.backlogSent = false
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// release ends the channel with err (kept if one is set already) and
// closes the stream both ways.
func (s *Sender) release(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	st := s.st
	s.mu.Unlock()
	s.releaseOnce.Do(func() {
		s.m.unregister(s)
		if st != nil {
			// A local close unblocks a Send stuck in Write, and the close
			// sends our FIN after everything written before.
			st.Close()
		}
		close(s.released)
	})
}

func (s *Sender) error() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		return fmt.Errorf("network: channel %s: %w", s.id, ErrClosed)
	}
	if errors.Is(s.err, errReleased) {
		return fmt.Errorf("network: channel %s: %w after the end of partition", s.id, ErrClosed)
	}
	return s.err
}

func (s *Sender) waitAttached(ctx context.Context) (*yamux.Stream, error) {
	select {
	case <-s.attached:
	case <-s.released:
		return nil, s.error()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	failed := s.err != nil
	s.mu.Unlock()
	if failed {
		return nil, s.error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return nil, fmt.Errorf("network: channel %s: send after end of partition", s.id)
	}
	return s.st, nil
}

// Send sends one buffer (a serialized batch of records, at most the
// consumer's buffer size). It blocks until the consumer has a credit for
// it: that is where a slow consumer stops its producer. data may be
// reused when Send returns.
func (s *Sender) Send(ctx context.Context, data []byte) error {
	st, err := s.waitAttached(ctx)
	if err != nil {
		return err
	}
	if len(data) > s.maxData {
		return fmt.Errorf("network: channel %s: buffer of %d bytes exceeds the consumer's buffer size %d", s.id, len(data), s.maxData)
	}
	for {
		s.mu.Lock()
		if s.err != nil {
			s.mu.Unlock()
			return s.error()
		}
		if s.credit > 0 {
			s.credit--
			s.mu.Unlock()
			break
		}
		announce := !s.backlogSent
		s.backlogSent = true
		s.mu.Unlock()
		if announce {
			// Tell the consumer we are blocked, so it can lend us a
			// floating buffer (Flink sends the backlog with each buffer;
			// a blocked producer is the case that matters).
			if err := s.write(ctx, st, frameBacklog, binary.AppendUvarint(nil, 1)); err != nil {
				return err
			}
		}
		if s.waitStart != nil {
			s.waitStart()
		}
		select {
		case <-s.wake:
		case <-s.released:
			return s.error()
		case <-ctx.Done():
			return ctx.Err()
		}
		if s.waitStop != nil {
			s.waitStop()
		}
	}
	return s.write(ctx, st, frameData, data)
}

// ObserveWaits sets functions that Send calls when it starts and stops
// waiting for a credit; call it before the first Send.
func (s *Sender) ObserveWaits(start, stop func()) { s.waitStart, s.waitStop = start, stop }

// Usage is the fraction of the consumer's first grant of credits that the
// producer has used up and not got back: 1 while Send would wait.
func (s *Sender) Usage() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initialCredit <= 0 {
		return 0
	}
	return 1 - float64(min(s.credit, s.initialCredit))/float64(s.initialCredit)
}

// SendEvent sends an in-band event. Events need no credit: like Flink's,
// they are small and must not wait behind data the consumer has no room
// for (an unaligned barrier overtakes it; an end of partition releases the
// consumer). They are still bounded: the consumer's gate queue reserves room
// for a few events per channel, and when that is full the stream's yamux
// window (256 KiB) stops the producer.
func (s *Sender) SendEvent(ctx context.Context, e Event) error {
	st, err := s.waitAttached(ctx)
	if err != nil {
		return err
	}
	if e.Kind == EventEndOfPartition {
		s.mu.Lock()
		s.finished = true
		s.mu.Unlock()
	}
	var buf [24]byte
	return s.write(ctx, st, frameEvent, appendEvent(buf[:0], e))
}

// write sends one frame in one stream write.
func (s *Sender) write(ctx context.Context, st *yamux.Stream, typ byte, payload []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	frame := s.wbuf[:frameHeaderSize+len(payload)]
	putHeader(frame, typ, len(payload))
	copy(frame[frameHeaderSize:], payload)
	var fired chan struct{}
	var stop func() bool
	if ctx.Done() != nil {
		// A write only blocks when the consumer's stream window is full;
		// a deadline is yamux's only way to interrupt it.
		fired = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			st.SetWriteDeadline(time.Unix(1, 0))
			close(fired)
		})
	}
	_, err := st.Write(frame)
	if stop != nil && !stop() {
		<-fired
		if err == nil {
			st.SetWriteDeadline(time.Time{})
		}
	}
	if err != nil {
		// Part of the frame may be out: the stream cannot be used again.
		if ctx.Err() != nil {
			err = ctx.Err()
		} else if s.isReleased() {
			return s.error()
		} else {
			err = fmt.Errorf("network: channel %s: write to %s: %w: %w", s.id, s.peer, ErrPeerClosed, err)
		}
		s.release(err)
		return err
	}
	return nil
}

func (s *Sender) isReleased() bool {
	select {
	case <-s.released:
		return true
	default:
		return false
	}
}

// Close ends the channel from the producer's side. After an end of
// partition, the consumer reads everything sent before and then releases
// the channel (Released closes); before it, the consumer sees
// ErrPeerClosed.
func (s *Sender) Close() error {
	s.mu.Lock()
	st := s.st
	finished := s.finished
	if !finished && s.err == nil {
		s.err = fmt.Errorf("network: channel %s: %w", s.id, ErrClosed)
	}
	s.mu.Unlock()
	s.m.unregister(s)
	if st == nil || !finished {
		s.release(fmt.Errorf("network: channel %s: %w", s.id, ErrClosed))
		return nil
	}
	// Half-close: the consumer still reads our FIN after the data; its
	// own close ends readCredits and closes Released.
	return st.Close()
}

// Fail aborts the channel and tells the consumer why; the consumer's Next
// returns an error wrapping ErrProducerFailed with err's message.
func (s *Sender) Fail(err error) {
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	if st != nil && !s.isReleased() {
		var buf []byte
		msg := err.Error()
		if len(msg) > maxControlFrame-16 {
			msg = msg[:maxControlFrame-16]
		}
		buf = append(buf, msg...)
		// Best effort: if the write fails the consumer sees the close.
		s.wmu.Lock()
		writeFrame(st, frameError, buf)
		s.wmu.Unlock()
	}
	s.release(fmt.Errorf("network: channel %s: %w: %w", s.id, ErrProducerFailed, err))
}
