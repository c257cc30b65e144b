package ha

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/weirproject/weir/internal/storage"
)

var (
	// ErrNotLeader is returned by a fenced write whose leadership is no
	// longer held: the election key with this leadership's term is gone
	// (lease expired or revoked, resigned) or the leadership was lost
	// locally. The write changed nothing.
	ErrNotLeader = errors.New("ha: not the leader (leadership lost or deposed); the write was not applied")
	// ErrNoLeader is returned by LeaderAddress when no leader is elected.
	ErrNoLeader = errors.New("ha: no leader elected")
)

// Services are the HA services of one process: an etcd client scoped to
// the cluster's key prefix, and the cluster's storage directory.
type Services struct {
	cfg     Config
	client  *clientv3.Client
	prefix  string // "/weir/<cluster-id>/"
	storage *storage.Location
}

// Open connects to etcd and opens the storage directory. Close releases
// them.
func Open(ctx context.Context, cfg Config) (*Services, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	loc, err := storage.Open(ctx, cfg.StorageDir)
	if err != nil {
		return nil, fmt.Errorf("ha: high-availability.storageDir: %w", err)
	}
	dial := cfg.DialTimeout
	if dial <= 0 {
		dial = 5 * time.Second
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: dial,
		Logger:      zap.NewNop(),
		DialOptions: cfg.dialOptions,
		// Keepalives on the gRPC connection notice a dead etcd member
		// and fail over to another endpoint.
		DialKeepAliveTime:    cfg.LeaseTTL,
		DialKeepAliveTimeout: cfg.LeaseTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("ha: connect to etcd %v: %w", cfg.Endpoints, err)
	}
	// clientv3.New does not wait for a connection; a bounded status call
	// makes a wrong endpoint an error here rather than a hang later.
	sctx, cancel := context.WithTimeout(ctx, dial)
	defer cancel()
	var lastErr error
	ok := false
	for _, ep := range cfg.Endpoints {
		if _, err := client.Status(sctx, ep); err != nil {
			lastErr = err
			continue
		}
		ok = true
		break
	}
	if !ok {
		client.Close()
		return nil, fmt.Errorf("ha: no etcd endpoint of %v answers (high-availability.etcd.endpoints): %w", cfg.Endpoints, lastErr)
	}
	return &Services{
		cfg:     cfg,
		client:  client,
		prefix:  "/weir/" + cfg.ClusterID + "/",
		storage: loc.Join(cfg.ClusterID),
	}, nil
}

// Close closes the etcd client. Leaderships obtained from s end (their
// leases expire at the server after the TTL; use Resign to hand over at
// once).
func (s *Services) Close() error { return s.client.Close() }

// Blobs is the cluster's directory under high-availability.storageDir,
// where large things go that etcd only points at.
func (s *Services) Blobs() *storage.Location { return s.storage }

// Config returns the services' configuration.
func (s *Services) Config() Config { return s.cfg }

func (s *Services) electionPrefix() string { return s.prefix + "leader" }

// Leader is an elected leader as clients see it.
type Leader struct {
	Address string
	// Term is the leadership's term: the create revision of its election
	// key, greater than every earlier leader's term.
	Term int64
}

// Leadership is this process's leadership of the cluster, held through an
// etcd session lease. Its term fences every write of the stores it hands
// out.
type Leadership struct {
	s       *Services
	session *concurrency.Session
	elec    *concurrency.Election
	key     string
	term    int64
	address string

	done     chan struct{}
	lostOnce sync.Once
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// Campaign blocks until this process leads the cluster, or ctx ends. The
// address is published for LeaderAddress and ObserveLeader. The returned
// Leadership must be ended with Resign (or is lost when the process's
// session lease expires).
func (s *Services) Campaign(ctx context.Context, address string) (*Leadership, error) {
	for {
		l, err := s.campaignOnce(ctx, address)
		if err == nil || !errors.Is(err, errLostWhileWaiting) {
			return l, err
		}
		// The session expired while waiting (a long pause or a cut
		// connection): campaign again with a fresh session.
	}
}

var errLostWhileWaiting = errors.New("ha: session lost while campaigning")

func (s *Services) campaignOnce(ctx context.Context, address string) (*Leadership, error) {
	ttl := int(s.cfg.LeaseTTL / time.Second)
	sess, err := concurrency.NewSession(s.client, concurrency.WithTTL(ttl))
	if err != nil {
		return nil, fmt.Errorf("ha: create etcd session: %w", err)
	}
	elec := concurrency.NewElection(sess, s.electionPrefix())
	if err := elec.Campaign(ctx, address); err != nil {
		sess.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("ha: campaign: %w", err)
	}
	// Campaign only waits for the older candidates' keys to go; check
	// that ours is still there, i.e. the session did not expire while
	// waiting.
	resp, err := s.client.Get(ctx, elec.Key())
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("ha: campaign: %w", err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != elec.Rev() {
		sess.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errLostWhileWaiting
	}
	mctx, stop := context.WithCancel(context.Background())
	l := &Leadership{
		s: s, session: sess, elec: elec, key: elec.Key(), term: elec.Rev(), address: address,
		done: make(chan struct{}), stop: stop,
	}
	l.wg.Add(1)
	go l.monitor(mctx, resp.Header.Revision)
	return l, nil
}

// monitor closes done when the session ends (lease expired, revoked, or
// not renewed within its TTL) or the election key is deleted.
func (l *Leadership) monitor(ctx context.Context, rev int64) {
	defer l.wg.Done()
	defer l.markLost()
	for {
		wctx, cancel := context.WithCancel(ctx)
		wch := l.s.client.Watch(clientv3.WithRequireLeader(wctx), l.key, clientv3.WithRev(rev+1))
		for open := true; open; {
			select {
			case <-ctx.Done():
				cancel()
				return
			case <-l.session.Done():
				cancel()
				return
			case wr, ok := <-wch:
				if !ok {
					open = false
					break
				}
				if wr.Err() != nil {
					open = false
					break
				}
				for _, ev := range wr.Events {
					if ev.Type == clientv3.EventTypeDelete {
						cancel()
						return
					}
				}
				rev = wr.Header.Revision
			}
		}
		cancel()
		// The watch broke (etcd unreachable, compaction): check the key
		// directly unless the session or ctx has ended meanwhile.
		select {
		case <-ctx.Done():
			return
		case <-l.session.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		gctx, gcancel := context.WithTimeout(ctx, l.s.cfg.LeaseTTL)
		resp, err := l.s.client.Get(gctx, l.key)
		gcancel()
		if err != nil {
			continue // keep trying until the session's keepalive deadline ends it
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.term {
			return
		}
		rev = resp.Header.Revision
	}
}

func (l *Leadership) markLost() { l.lostOnce.Do(func() { close(l.done) }) }

// Term is the leadership's term, greater than every earlier leader's.
func (l *Leadership) Term() int64 { return l.term }

// Address is the address this leader published.
func (l *Leadership) Address() string { return l.address }

// Done is closed when the leadership is lost or resigned. A leader must
// stop acting on it; its fenced writes fail from the moment the election
// key is gone, which may be before Done is closed.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Resign gives up leadership at once, so that a standby takes over without
// waiting for the lease to expire, and ends the session.
func (l *Leadership) Resign(ctx context.Context) error {
	err := l.elec.Resign(ctx)
	cerr := l.session.Close() // revokes the lease
	l.stop()
	l.wg.Wait()
	l.markLost()
	if err != nil {
		return fmt.Errorf("ha: resign: %w", err)
	}
	// A lease already gone (expired or revoked: the leadership was lost
	// before) is what Resign wanted anyway.
	if cerr != nil && !errors.Is(cerr, context.Canceled) && !errors.Is(cerr, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("ha: resign: revoke lease: %w", cerr)
	}
	return nil
}

// LeaderAddress returns the current leader, or ErrNoLeader.
func (s *Services) LeaderAddress(ctx context.Context) (Leader, error) {
	resp, err := s.client.Get(ctx, s.electionPrefix()+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return Leader{}, fmt.Errorf("ha: read leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return Leader{}, ErrNoLeader
	}
	kv := resp.Kvs[0]
	return Leader{Address: string(kv.Value), Term: kv.CreateRevision}, nil
}

// ObserveLeader sends the current leader and then every change of leader
// (or of its address) until ctx ends; then the channel is closed. A
// receiver that falls behind sees only the newest leader: the channel
// holds one value and older undelivered ones are replaced.
func (s *Services) ObserveLeader(ctx context.Context) <-chan Leader {
	ch := make(chan Leader, 1)
	go s.observe(ctx, ch)
	return ch
}

func (s *Services) observe(ctx context.Context, ch chan Leader) {
	defer close(ch)
	var last Leader
	send := func(l Leader) {
		if l == last {
			return
		}
		last = l
		for {
			select {
			case ch <- l:
				return
			default:
			}
			select { // drop the stale value the receiver has not taken
			case <-ch:
			default:
			}
		}
	}
	pfx := s.electionPrefix() + "/"
	for ctx.Err() == nil {
		resp, err := s.client.Get(ctx, pfx, clientv3.WithFirstCreate()...)
		if err != nil {
			if !sleepCtx(ctx, 200*time.Millisecond) {
				return
			}
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		var wch clientv3.WatchChan
		if len(resp.Kvs) == 0 {
			// Wait for any candidate's key to appear.
			wch = s.client.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1),
				clientv3.WithFilterDelete())
		} else {
			kv := resp.Kvs[0]
			send(Leader{Address: string(kv.Value), Term: kv.CreateRevision})
			// Follow the leader's key: a put changes its address, a
			// delete ends its term.
			wch = s.client.Watch(wctx, string(kv.Key), clientv3.WithRev(resp.Header.Revision+1))
		}
		s.waitChange(ctx, wch, len(resp.Kvs) > 0, send)
		cancel()
	}
}

// waitChange returns when the watched leader key is deleted, a candidate
// key appears (when there was no leader), or the watch ends. Puts to a
// leader's key are forwarded as address changes.
func (s *Services) waitChange(ctx context.Context, wch clientv3.WatchChan, hadLeader bool, send func(Leader)) {
	for {
		select {
		case <-ctx.Done():
			return
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil {
				sleepCtx(ctx, 100*time.Millisecond)
				return
			}
			for _, ev := range wr.Events {
				if !hadLeader || ev.Type == clientv3.EventTypeDelete {
					return
				}
				send(Leader{Address: string(ev.Kv.Value), Term: ev.Kv.CreateRevision})
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

type mvccKV = mvccpb.KeyValue
