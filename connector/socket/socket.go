// Package socket is a source of the lines of text a TCP server sends: the
// classic `nc -lk 9999` demo of Flink's SocketWindowWordCount.
//
// It is at-most-once, as Flink's socket source is: a socket cannot be
// rewound, so the lines received but not yet processed when a job fails
// are lost, and a restored job reads whatever the server sends on its new
// connection. It is for trials and demos, not for data that matters.
package socket

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/weirproject/weir/connector"
)

// Defaults of a Source.
const (
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	DefaultMaxLineLength  = 1 << 20
)

// Source reads lines from a TCP server. Build it with Lines.
type Source struct {
	addr          string
	retries       int // < 0: forever
	initial, most time.Duration
	maxLine       int
}

var (
	_ connector.Source[string]  = (*Source)(nil)
	_ connector.SplitSerializer = (*Source)(nil)
)

// Lines returns an unbounded source of the lines that the server at
// addr (HOST:PORT) sends, without their "\n" or "\r\n"; text after the
// last "\n" of a connection is a line too. One subtask reads the socket:
// the source has a single split, and the other subtasks end at once.
//
// When it cannot connect, or the server closes the connection, it
// connects again after a pause that starts at DefaultInitialBackoff and
// doubles, up to DefaultMaxBackoff, while attempts fail; a connection
// that delivered data starts the pauses over. It does so forever unless
// Retries says otherwise.
func Lines(addr string) *Source {
	return &Source{addr: addr, retries: -1, initial: DefaultInitialBackoff, most: DefaultMaxBackoff, maxLine: DefaultMaxLineLength}
}

// Retries makes the source fail after n connection attempts in a row that
// got no data (n < 0: never). It returns s.
func (s *Source) Retries(n int) *Source {
	s.retries = max(n, -1)
	return s
}

// Backoff sets the first and the longest pause between connection
// attempts. It returns s.
func (s *Source) Backoff(initial, most time.Duration) *Source {
	s.initial, s.most = max(initial, time.Millisecond), max(most, initial, time.Millisecond)
	return s
}

// MaxLineLength bounds a line (default DefaultMaxLineLength bytes); a
// longer one fails the job rather than filling the memory. It returns s.
func (s *Source) MaxLineLength(n int) *Source {
	s.maxLine = max(n, 1)
	return s
}

// Boundedness is Unbounded.
func (s *Source) Boundedness() connector.Boundedness { return connector.Unbounded }

// Split is the one split of a socket source: the address.
type Split struct{ Addr string }

// SplitID names the split.
func (s *Split) SplitID() string { return "socket:" + s.Addr }

// Splits returns the single split.
func (s *Source) Splits(context.Context, int) ([]connector.Split, error) {
	if _, _, err := net.SplitHostPort(s.addr); err != nil {
		return nil, fmt.Errorf("socket: address %q: %w", s.addr, err)
	}
	return []connector.Split{&Split{Addr: s.addr}}, nil
}

// NewReader returns a reader; it connects when it gets the split.
func (s *Source) NewReader(ctx context.Context, _ connector.SplitContext) (connector.SplitReader[string], error) {
	return &reader{s: s, parent: ctx}, nil
}

// pollLines bounds the lines of one Poll.
const pollLines = 256

type reader struct {
	s      *Source
	parent context.Context
	split  *Split

	// The connection goroutine sends lines on lines and its final error
	// on errc; cancel and wg stop it.
	lines  chan string
	errc   chan error
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool
}

func (r *reader) AddSplits(splits []connector.Split) error {
	for _, sp := range splits {
		s, ok := sp.(*Split)
		if !ok || s == nil {
			return fmt.Errorf("socket: split %T: %w", sp, connector.ErrUnsupportedSplit)
		}
		if r.split != nil {
			continue // one connection is enough; more would read the same stream twice
		}
		r.split = &Split{Addr: s.Addr}
		ctx, cancel := context.WithCancel(r.parent)
		r.cancel = cancel
		r.lines = make(chan string, 1024)
		r.errc = make(chan error, 1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.run(ctx, s.Addr); err != nil {
				r.errc <- err
			}
		}()
	}
	return nil
}

// run connects, reads and reconnects until ctx ends; its error is for a
// source that gave up.
func (r *reader) run(ctx context.Context, addr string) error {
	var d net.Dialer
	pause, failures := r.s.initial, 0
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		got := false
		if err == nil {
			got, err = r.read(ctx, conn)
		}
		if ctx.Err() != nil {
			return nil
		}
		var tooLong *lineTooLongError
		if errors.As(err, &tooLong) {
			return err
		}
		if got {
			pause, failures = r.s.initial, 0
		} else {
			failures++
			if r.s.retries >= 0 && failures > r.s.retries {
				if err == nil {
					err = errors.New("the connection closed without data")
				}
				return fmt.Errorf("socket: %s: gave up after %d attempts: %w", addr, failures, err)
			}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		pause = min(2*pause, r.s.most)
	}
}

type lineTooLongError struct {
	addr string
	max  int
}

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("socket: %s sent a line longer than %d bytes", e.addr, e.max)
}

// read hands the connection's lines on until it ends; got says whether
// any data came.
func (r *reader) read(ctx context.Context, conn net.Conn) (got bool, err error) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		got = got || len(chunk) > 0
		line = append(line, chunk...)
		if len(line) > r.s.maxLine+2 || err == bufio.ErrBufferFull && len(line) > r.s.maxLine {
			return got, &lineTooLongError{conn.RemoteAddr().String(), r.s.maxLine}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil || len(line) > 0 {
			s := string(line)
			if n := len(s); n > 0 && s[n-1] == '\n' {
				s = s[:n-1]
				if n := len(s); n > 0 && s[n-1] == '\r' {
					s = s[:n-1]
				}
			}
			select {
			case r.lines <- s:
			case <-ctx.Done():
				return got, nil
			}
			line = line[:0]
		}
		if err != nil {
			return got, err
		}
	}
}

// Poll emits the lines received so far, up to pollLines.
func (r *reader) Poll(ctx context.Context, out connector.Output[string]) (connector.ReadStatus, error) {
	if r.closed {
		return 0, errors.New("socket: Poll on a closed reader")
	}
	if r.split == nil {
		return connector.EndOfInput, nil
	}
	for n := 0; n < pollLines; n++ {
		select {
		case l := <-r.lines:
			out.Collect(l)
			continue
		default:
		}
		if n > 0 {
			return connector.MoreAvailable, nil
		}
		select {
		case err := <-r.errc:
			return 0, err
		default:
			return connector.NothingAvailable, nil
		}
	}
	return connector.MoreAvailable, nil
}

// Snapshot returns the split: a socket has no position to keep.
func (r *reader) Snapshot() ([]connector.Split, error) {
	if r.split == nil {
		return nil, nil
	}
	return []connector.Split{&Split{Addr: r.split.Addr}}, nil
}

// Close stops the connection goroutine and waits for it.
func (r *reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cancel != nil {
		r.cancel()
		r.wg.Wait()
	}
	return nil
}

// EncodeSplits implements connector.SplitSerializer.
func (s *Source) EncodeSplits(splits []connector.Split) ([]byte, error) {
	out := make([]*Split, len(splits))
	for i, sp := range splits {
		ss, ok := sp.(*Split)
		if !ok {
			return nil, fmt.Errorf("socket: split %q: %w", sp.SplitID(), connector.ErrUnsupportedSplit)
		}
		out[i] = ss
	}
	return json.Marshal(out)
}

// DecodeSplits implements connector.SplitSerializer. A split restored
// from a checkpoint reconnects to the source's current address, so that
// a job can move to another server.
func (s *Source) DecodeSplits(data []byte) ([]connector.Split, error) {
	var in []*Split
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("socket: decode splits: %w", err)
	}
	out := make([]connector.Split, len(in))
	for i := range in {
		out[i] = &Split{Addr: s.addr}
	}
	return out, nil
}
