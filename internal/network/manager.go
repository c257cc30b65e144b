// Package network is the data plane between the worker processes of a job
// spread over several TaskManagers: one multiplexed TCP connection per pair
// of processes (yamux streams, one per logical channel), a handshake with
// an optional shared secret and TLS, and Flink-style credit-based flow
// control per channel so that a slow consumer backpressures its producer
// instead of growing memory. docs/network.md describes the protocol.
package network

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Config configures a Manager. The zero value of every field selects the
// default written next to it.
type Config struct {
	// ListenAddr is where the data server listens; default "127.0.0.1:0".
	ListenAddr string
	// AdvertiseAddr is the address peers dial to reach this process, and
	// the identity this process gives in handshakes; default the
	// listener's address. Consumers must dial exactly the address the
	// producer advertises, or connections cannot be shared.
	AdvertiseAddr string
	// Token is a shared secret; when set, both ends must hold the same one.
	// It travels in clear unless TLS is set.
	Token string
	// TLS, when set, wraps every connection; the same config serves both
	// roles (server certificate, client roots; set ClientAuth for mutual
	// TLS). An empty ServerName is filled from the dialed host.
	TLS *tls.Config
	// BufferSize is the size of a consumer's network buffers, so the
	// largest data frame a producer may send to it; default 32 KiB.
	BufferSize int
	// DialTimeout bounds a TCP connect; default 5 s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds the connection handshake and a channel
	// request's reply; default 10 s.
	HandshakeTimeout time.Duration
	// KeepAliveInterval is the yamux ping interval that detects dead
	// peers; default 10 s.
	KeepAliveInterval time.Duration
	// RequestBackoffInitial and RequestBackoffMax: a consumer whose
	// producer has not registered the channel yet retries with doubling
	// backoff until the backoff would exceed the max (Flink's
	// taskmanager.network.request-backoff.*); defaults 100 ms and 10 s. A
	// negative RequestBackoffMax disables retries.
	RequestBackoffInitial time.Duration
	RequestBackoffMax     time.Duration
	// Logger receives rejected handshakes and connection failures; default
	// slog.Default().
	Logger *slog.Logger
}

// DefaultBufferSize is Flink's network buffer size.
const DefaultBufferSize = 32 << 10

func (c *Config) setDefaults() {
	if c.ListenAddr == "" {
		c.ListenAddr = "127.0.0.1:0"
	}
	if c.BufferSize <= 0 {
		c.BufferSize = DefaultBufferSize
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.KeepAliveInterval <= 0 {
		c.KeepAliveInterval = 10 * time.Second
	}
	if c.RequestBackoffInitial <= 0 {
		c.RequestBackoffInitial = 100 * time.Millisecond
	}
	if c.RequestBackoffMax == 0 {
		c.RequestBackoffMax = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Manager is one process's data plane: its data server and its
// connections to other processes.
type Manager struct {
	cfg   Config
	ln    net.Listener
	addr  string
	ymux  *yamux.Config
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	peers map[string]*peer
	// live holds every connection until its session ends, including one
	// a newer connection from the same peer replaced.
	live map[*peer]struct{}
	// dialing holds the dials in flight, so that concurrent requests to
	// one peer share one connection and an incoming connection from that
	// peer can be recognized as a duplicate.
	dialing map[string]*dialCall
	// changed is closed and replaced whenever a peer registers.
	changed chan struct{}
	senders map[ChannelID]*Sender
	gates   map[*Gate]struct{}
	// raw holds connections still in their handshake, to abort them on
	// Close.
	raw    map[net.Conn]struct{}
	closed bool
}

type peer struct {
	addr   string
	sess   *yamux.Session
	dialed bool // this process dialed it
}

type dialCall struct {
	done chan struct{}
	err  error
}

// Listen starts a data server and returns its Manager.
func Listen(cfg Config) (*Manager, error) {
	cfg.setDefaults()
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("network: listen on %s: %w", cfg.ListenAddr, err)
	}
	m := &Manager{
		cfg:     cfg,
		ln:      ln,
		addr:    cfg.AdvertiseAddr,
		peers:   make(map[string]*peer),
		live:    make(map[*peer]struct{}),
		dialing: make(map[string]*dialCall),
		changed: make(chan struct{}),
		senders: make(map[ChannelID]*Sender),
		gates:   make(map[*Gate]struct{}),
		raw:     make(map[net.Conn]struct{}),
	}
	if m.addr == "" {
		m.addr = ln.Addr().String()
	}
	m.ymux = yamux.DefaultConfig()
	m.ymux.KeepAliveInterval = cfg.KeepAliveInterval
	m.ymux.StreamOpenTimeout = cfg.HandshakeTimeout
	m.ymux.StreamCloseTimeout = time.Minute
	m.ymux.LogOutput = nil
	m.ymux.Logger = yamuxLogger{cfg.Logger}
	m.ctx, m.stop = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

// Addr returns the address peers dial to reach this process.
func (m *Manager) Addr() string { return m.addr }

// BufferSize is the size of this data plane's buffers, and so the largest
// frame a producer may send (taskmanager.network.memory.buffer-size; the
// workers of a job share their configuration).
func (m *Manager) BufferSize() int { return m.cfg.BufferSize }

// NumConnections returns the number of live connections to other
// processes.
func (m *Manager) NumConnections() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// Close stops the data server, closes every connection, gate and sender,
// and waits for all goroutines of the manager to end.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	peers := m.peers
	m.peers = map[string]*peer{}
	raw := m.raw
	m.raw = map[net.Conn]struct{}{}
	// Copied under the lock: releasing a sender unregisters it, which
	// deletes from the map.
	senders := make([]*Sender, 0, len(m.senders))
	for _, snd := range m.senders {
		senders = append(senders, snd)
	}
	gates := make([]*Gate, 0, len(m.gates))
	for g := range m.gates {
		gates = append(gates, g)
	}
	m.mu.Unlock()

	m.stop()
	err := m.ln.Close()
	for c := range raw {
		c.Close()
	}
	for _, s := range senders {
		s.release(fmt.Errorf("network: channel %s: manager %w", s.id, ErrClosed))
	}
	for _, g := range gates {
		g.Close()
	}
	for _, p := range peers {
		p.sess.Close()
	}
	m.wg.Wait()
	return err
}

func (m *Manager) acceptLoop() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if m.ctx.Err() != nil {
				return
			}
			m.cfg.Logger.Warn("network: accept failed", "addr", m.addr, "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-m.ctx.Done():
				return
			}
			continue
		}
		if !m.track(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		go m.serveConn(c)
	}
}

func (m *Manager) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.raw[c] = struct{}{}
	return true
}

func (m *Manager) untrack(c net.Conn) {
	m.mu.Lock()
	delete(m.raw, c)
	m.mu.Unlock()
}

// Handshake. The dialer sends magic, version, and a payload of token and
// its advertised address; the server answers with a status byte and a
// message. Both are length-prefixed so a stranger's bytes cannot make us
// allocate much.
var magic = [4]byte{'W', 'E', 'I', 'R'}

const protocolVersion = 1

const (
	helloOK byte = iota
	helloWrongToken
	helloDuplicate
	helloBadVersion
	helloClosed
)

// errDuplicate: the peer is dialing us at the same time and its
// connection wins the tie-break; ours is dropped and we use its.
var errDuplicate = errors.New("duplicate connection")

func writeHello(w io.Writer, token, addr string) error {
	payload := appendString(appendString(nil, token), addr)
	buf := make([]byte, 0, 9+len(payload))
	buf = append(buf, magic[:]...)
	buf = append(buf, protocolVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	_, err := w.Write(append(buf, payload...))
	return err
}

func readHello(r io.Reader) (version byte, token, addr string, err error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, "", "", err
	}
	if [4]byte(hdr[:4]) != magic {
		return 0, "", "", fmt.Errorf("%w: not a weir data connection", ErrProtocol)
	}
	n := binary.BigEndian.Uint32(hdr[5:])
	if n > maxControlFrame {
		return 0, "", "", fmt.Errorf("%w: hello of %d bytes", ErrProtocol, n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, "", "", err
	}
	d := decoder{b: payload}
	token = d.string()
	addr = d.string()
	return hdr[4], token, addr, d.err
}

func writeReply(w io.Writer, status byte, msg string) error {
	buf := []byte{status}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(msg)))
	_, err := w.Write(append(buf, msg...))
	return err
}

func readReply(r io.Reader) (byte, string, error) {
	var hdr [3]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, "", err
	}
	msg := make([]byte, binary.BigEndian.Uint16(hdr[1:]))
	if _, err := io.ReadFull(r, msg); err != nil {
		return 0, "", err
	}
	return hdr[0], string(msg), nil
}

func tokensEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func (m *Manager) serveConn(raw net.Conn) {
	defer m.wg.Done()
	p, err := m.acceptHandshake(raw)
	m.untrack(raw)
	if err != nil {
		raw.Close()
		switch {
		case m.ctx.Err() != nil:
		case errors.Is(err, errDuplicate):
			// The expected end of two processes dialing each other.
			m.cfg.Logger.Debug("network: dropped duplicate connection", "addr", m.addr, "remote", raw.RemoteAddr().String())
		default:
			m.cfg.Logger.Warn("network: rejected connection", "addr", m.addr, "remote", raw.RemoteAddr().String(), "err", err)
		}
		return
	}
	m.runSession(p)
}

func (m *Manager) acceptHandshake(raw net.Conn) (*peer, error) {
	raw.SetDeadline(time.Now().Add(m.cfg.HandshakeTimeout))
	var c net.Conn = raw
	if m.cfg.TLS != nil {
		c = tls.Server(raw, m.cfg.TLS)
	}
	version, token, from, err := readHello(c)
	if err != nil {
		return nil, fmt.Errorf("network: handshake from %s: %w", raw.RemoteAddr(), err)
	}
	if version != protocolVersion {
		writeReply(c, helloBadVersion, fmt.Sprintf("protocol version %d, want %d", version, protocolVersion))
		return nil, fmt.Errorf("network: %s speaks protocol version %d, want %d: %w", from, version, protocolVersion, ErrProtocol)
	}
	if !tokensEqual(token, m.cfg.Token) {
		writeReply(c, helloWrongToken, ErrWrongToken.Error())
		return nil, fmt.Errorf("network: handshake from %s (%s): %w", from, raw.RemoteAddr(), ErrWrongToken)
	}
	// The check for a duplicate and the registration are one critical
	// section, mirrored by session(): that is what makes the tie-break
	// agree on both ends.
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		writeReply(c, helloClosed, "data server is closing")
		return nil, ErrClosed
	}
	old := m.peers[from]
	mine := m.dialing[from] != nil || (old != nil && old.dialed && !old.sess.IsClosed())
	if mine && m.addr < from {
		// Both ends dialed; the connection dialed by the smaller address
		// wins, and ours is in flight or established.
		writeReply(c, helloDuplicate, "use the connection dialed by "+m.addr)
		return nil, fmt.Errorf("network: duplicate connection from %s dropped: %w", from, errDuplicate)
	}
	if err := writeReply(c, helloOK, ""); err != nil {
		return nil, fmt.Errorf("network: handshake from %s: %w", from, err)
	}
	raw.SetDeadline(time.Time{})
	sess, err := yamux.Server(c, m.ymux)
	if err != nil {
		return nil, err
	}
	if old != nil {
		// The peer dialed again, so it has given up on the old connection.
		old.sess.Close()
	}
	p := &peer{addr: from, sess: sess}
	m.register(p)
	return p, nil
}

// register must be called with m.mu held.
func (m *Manager) register(p *peer) {
	m.peers[p.addr] = p
	m.live[p] = struct{}{}
	close(m.changed)
	m.changed = make(chan struct{})
}

// runSession serves the streams the peer opens until the connection ends.
// Either end may open streams on a connection, whoever dialed it.
func (m *Manager) runSession(p *peer) {
	defer func() {
		p.sess.Close()
		m.mu.Lock()
		if m.peers[p.addr] == p {
			delete(m.peers, p.addr)
		}
		delete(m.live, p)
		m.mu.Unlock()
	}()
	for {
		st, err := p.sess.AcceptStream()
		if err != nil {
			return
		}
		m.wg.Add(1)
		go m.serveStream(p, st)
	}
}

// session returns the connection to the process at addr, dialing it if
// there is none.
func (m *Manager) session(ctx context.Context, addr string) (*yamux.Session, error) {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, fmt.Errorf("network: manager %w", ErrClosed)
		}
		if p := m.peers[addr]; p != nil && !p.sess.IsClosed() {
			m.mu.Unlock()
			return p.sess, nil
		}
		if d := m.dialing[addr]; d != nil {
			m.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if d.err != nil {
				return nil, d.err
			}
			continue
		}
		d := &dialCall{done: make(chan struct{})}
		m.dialing[addr] = d
		// Added under the lock that checked m.closed, so Close's Wait
		// cannot have started with a zero count.
		m.wg.Add(1)
		m.mu.Unlock()

		err := m.dial(ctx, addr)
		if errors.Is(err, errDuplicate) {
			err = m.awaitPeer(ctx, addr)
		}
		d.err = err
		close(d.done)
		if err != nil {
			return nil, err
		}
	}
}

// dial connects to addr and registers the connection; the caller has done
// m.wg.Add(1) for the session goroutine it starts.
func (m *Manager) dial(ctx context.Context, addr string) (err error) {
	started := false
	defer func() {
		if !started {
			m.mu.Lock()
			delete(m.dialing, addr)
			m.mu.Unlock()
			m.wg.Done()
		}
	}()
	d := net.Dialer{Timeout: m.cfg.DialTimeout}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("network: cannot reach data server %s: %w: %w", addr, ErrUnreachable, err)
	}
	if !m.track(raw) {
		raw.Close()
		return fmt.Errorf("network: manager %w", ErrClosed)
	}
	defer m.untrack(raw)
	raw.SetDeadline(time.Now().Add(m.cfg.HandshakeTimeout))
	// Cancelling ctx aborts a handshake stuck on a silent peer.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var c net.Conn = raw
	if m.cfg.TLS != nil {
		cfg := m.cfg.TLS.Clone()
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return fmt.Errorf("network: TLS handshake with %s: %w", addr, err)
		}
		c = tc
	}
	fail := func(err error) error {
		raw.Close()
		if ctx.Err() != nil {
			return fmt.Errorf("network: handshake with %s: %w", addr, ctx.Err())
		}
		return err
	}
	if err := writeHello(c, m.cfg.Token, m.addr); err != nil {
		return fail(fmt.Errorf("network: handshake with %s: %w", addr, err))
	}
	status, msg, err := readReply(c)
	if err != nil {
		return fail(fmt.Errorf("network: handshake with %s: no reply (wrong TLS setting or not a weir data server?): %w", addr, err))
	}
	switch status {
	case helloOK:
	case helloWrongToken:
		return fail(fmt.Errorf("network: data server %s rejected the handshake: %w", addr, ErrWrongToken))
	case helloDuplicate:
		return fail(fmt.Errorf("network: data server %s: %w", addr, errDuplicate))
	case helloClosed:
		return fail(fmt.Errorf("network: data server %s is %w", addr, ErrClosed))
	default:
		return fail(fmt.Errorf("network: data server %s rejected the handshake: %s: %w", addr, msg, ErrProtocol))
	}
	raw.SetDeadline(time.Time{})
	sess, err := yamux.Client(c, m.ymux)
	if err != nil {
		return fail(err)
	}
	m.mu.Lock()
	delete(m.dialing, addr)
	if m.closed {
		m.mu.Unlock()
		sess.Close()
		return fmt.Errorf("network: manager %w", ErrClosed)
	}
	p := &peer{addr: addr, sess: sess, dialed: true}
	m.register(p)
	m.mu.Unlock()
	started = true
	go func() {
		defer m.wg.Done()
		m.runSession(p)
	}()
	return nil
}

// awaitPeer waits for the connection the peer is dialing to us, after
// ours lost the tie-break.
func (m *Manager) awaitPeer(ctx context.Context, addr string) error {
	timer := time.NewTimer(m.cfg.HandshakeTimeout)
	defer timer.Stop()
	for {
		m.mu.Lock()
		if p := m.peers[addr]; p != nil && !p.sess.IsClosed() {
			m.mu.Unlock()
			return nil
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return fmt.Errorf("network: data server %s declined our connection as a duplicate, but its own did not arrive within %v: %w", addr, m.cfg.HandshakeTimeout, ErrUnreachable)
		case <-ctx.Done():
			return ctx.Err()
		case <-m.ctx.Done():
			return fmt.Errorf("network: manager %w", ErrClosed)
		}
	}
}

type yamuxLogger struct{ l *slog.Logger }

func (y yamuxLogger) Print(v ...any) { y.l.Debug(fmt.Sprint(v...)) }
func (y yamuxLogger) Printf(format string, v ...any) {
	y.l.Debug(fmt.Sprintf(format, v...))
}
func (y yamuxLogger) Println(v ...any) { y.l.Debug(fmt.Sprint(v...)) }
