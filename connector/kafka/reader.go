package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirproject/weir/connector"
)

// NewReader implements connector.Source.
func (s *Source[T]) NewReader(ctx context.Context, sc connector.SplitContext) (connector.SplitReader[T], error) {
	r := &reader[T]{src: s, sc: sc, splits: make(map[tp]*PartitionSplit), commits: make(map[int64]map[tp]int64), ends: make(map[tp]int64)}
	if sc.Gauge != nil {
		// Flink's source metric: the records behind the end of the log.
		sc.Gauge("pendingRecords", r.behind.Load)
	}
	return r, nil
}

// reader reads the partitions of one subtask with one franz-go client in
// direct (group-less) mode. Its position is in its splits, which advance
// only as records are emitted.
type reader[T any] struct {
	src *Source[T]
	sc  connector.SplitContext
	cl  *kgo.Client
	// splits are the unfinished partitions; order keeps Snapshot
	// deterministic.
	splits map[tp]*PartitionSplit
	order  []tp
	// pending are partitions added since the client last heard of them.
	pending   []*PartitionSplit
	finished  []string // split IDs finished but not yet reported
	discovery []*discoverySplit
	known     map[string]int32
	// noKnown: restored without any discovery split (the job scaled
	// up): the first discovery round only learns what exists.
	noKnown       bool
	nextDiscovery time.Time
	rec           Record

	// commits are the offsets of checkpoints not yet completed, to commit
	// to the group when they do.
	commits  map[int64]map[tp]int64
	commitMu sync.Mutex
	toCommit map[tp]int64
	commitC  chan struct{}
	stop     context.CancelFunc // ends commitLoop
	wg       sync.WaitGroup

	// ends are the partitions' ends as the latest fetches saw them (the
	// last stable offset under read_committed, else the high watermark);
	// behind is how many records the splits are behind them.
	ends   map[tp]int64
	behind atomic.Int64
}

func (r *reader[T]) AddSplits(splits []connector.Split) error {
	for _, s := range splits {
		switch s := s.(type) {
		case *PartitionSplit:
			cp := *s
			k := tp{cp.Topic, cp.Partition}
			if _, dup := r.splits[k]; dup {
				return fmt.Errorf("kafka source: partition %s assigned twice", cp.SplitID())
			}
			if cp.Stop != NoStop && cp.Offset >= cp.Stop {
				r.finished = append(r.finished, cp.SplitID())
				continue
			}
			r.splits[k] = &cp
			r.order = append(r.order, k)
			r.pending = append(r.pending, &cp)
		case *discoverySplit:
			cp := &discoverySplit{ID: s.ID, Known: maps.Clone(s.Known)}
			r.discovery = append(r.discovery, cp)
			if r.known == nil {
				r.known = make(map[string]int32)
			}
			for t, n := range cp.Known {
				r.known[t] = max(r.known[t], n)
			}
		default:
			return fmt.Errorf("kafka source: split %q: %w", s.SplitID(), connector.ErrUnsupportedSplit)
		}
	}
	return nil
}

// start creates the client on the first poll.
func (r *reader[T]) start() error {
	opts := []kgo.Opt{kgo.KeepControlRecords()}
	if r.src.opts.ReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	} else {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := r.src.client(opts...)
	if err != nil {
		return err
	}
	r.cl = cl
	if r.src.discovery() {
		if r.known == nil {
			r.noKnown = true
			r.known = make(map[string]int32)
			r.src.opts.Logger.Warn("kafka source: this subtask restored no discovery state (the job was scaled up); it reads only partitions created from now on",
				"subtask", r.sc.Subtask)
		}
		r.nextDiscovery = time.Now().Add(r.src.opts.DiscoveryInterval)
	}
	if r.src.opts.GroupID != "" {
		var ctx context.Context
		r.commitC = make(chan struct{}, 1)
		ctx, r.stop = context.WithCancel(context.Background())
		r.wg.Add(1)
		go r.commitLoop(ctx)
	}
	return nil
}

// assign hands the pending partitions to the client, at their offsets.
func (r *reader[T]) assign() {
	if len(r.pending) == 0 {
		return
	}
	m := make(map[string]map[int32]kgo.Offset)
	for _, sp := range r.pending {
		if m[sp.Topic] == nil {
			m[sp.Topic] = make(map[int32]kgo.Offset)
		}
		o := kgo.NewOffset().At(sp.Offset)
		if sp.Offset == OffsetEarliest {
			o = kgo.NewOffset().AtStart()
		}
		m[sp.Topic][sp.Partition] = o
	}
	r.pending = nil
	r.cl.AddConsumePartitions(m)
}

func (r *reader[T]) Poll(ctx context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	perSplit, _ := out.(connector.SplitOutputs[T])
	r.reportFinished(perSplit)
	if len(r.splits) == 0 && !r.src.discovery() {
		return connector.EndOfInput, nil
	}
	if r.cl == nil {
		if err := r.start(); err != nil {
			return 0, err
		}
	}
	if r.src.discovery() && !time.Now().Before(r.nextDiscovery) {
		r.discover(ctx)
		r.nextDiscovery = time.Now().Add(r.src.opts.DiscoveryInterval)
	}
	r.assign()
	// A nil context takes only what is buffered: Poll never blocks.
	fetches := r.cl.PollRecords(nil, r.src.opts.MaxPollRecords) //nolint:staticcheck // nil is franz-go's "do not wait"
	var n int
	var ferr error
	fetches.EachError(func(t string, p int32, err error) {
		if ferr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
			ferr = fmt.Errorf("kafka source: fetch %s-%d: %w", t, p, err)
		}
	})
	if ferr != nil {
		return 0, ferr
	}
	var outErr error
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if outErr != nil {
			return
		}
		sp := r.splits[tp{fp.Topic, fp.Partition}]
		if sp == nil {
			return // finished: what was buffered is past its stop
		}
		end := fp.HighWatermark
		if fp.LastStableOffset >= 0 && !r.src.opts.ReadUncommitted {
			end = fp.LastStableOffset
		}
		if end >= 0 {
			r.ends[tp{fp.Topic, fp.Partition}] = end
		}
		o := out
		if perSplit != nil {
			o = perSplit.ForSplit(sp.SplitID())
		}
		for _, kr := range fp.Records {
			if kr.Offset < sp.Offset {
				continue
			}
			if sp.Stop != NoStop && kr.Offset >= sp.Stop {
				break
			}
			sp.Offset = kr.Offset + 1
			// Control records (transaction markers) are kept only to
			// see the position pass them: under read_committed an
			// aborted transaction's records never arrive, and its
			// marker is how the split learns it reached its stop.
			if kr.Attrs.IsControl() {
				continue
			}
			fromKgo(kr, &r.rec)
			v, err := r.src.deserialize(&r.rec)
			if err != nil {
				if errors.Is(err, ErrSkip) {
					continue
				}
				outErr = fmt.Errorf("kafka source: deserialize %s offset %d: %w", sp.SplitID(), kr.Offset, err)
				return
			}
			n++
			o.CollectWithTimestamp(v, kr.Timestamp.UnixMilli())
		}
		if sp.Stop != NoStop && (sp.Offset >= sp.Stop || len(fp.Records) > 0 && fp.Records[len(fp.Records)-1].Offset >= sp.Stop) {
			r.finish(sp)
		}
	})
	if outErr != nil {
		return 0, outErr
	}
	r.reportFinished(perSplit)
	r.updatePending()
	switch {
	case len(r.splits) == 0 && !r.src.discovery():
		return connector.EndOfInput, nil
	case n > 0 || fetches.NumRecords() > 0:
		return connector.MoreAvailable, nil
	}
	return connector.NothingAvailable, nil
}

// updatePending sums how far each split is behind its partition's end
// (or its stopping offset, if sooner).
func (r *reader[T]) updatePending() {
	var n int64
	for k, sp := range r.splits {
		end, ok := r.ends[k]
		if !ok {
			continue
		}
		if sp.Stop != NoStop {
			end = min(end, sp.Stop)
		}
		n += max(0, end-sp.Offset)
	}
	r.behind.Store(n)
}

// finish ends a split that reached its stopping offset.
func (r *reader[T]) finish(sp *PartitionSplit) {
	k := tp{sp.Topic, sp.Partition}
	delete(r.splits, k)
	for i, o := range r.order {
		if o == k {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
	r.cl.RemoveConsumePartitions(map[string][]int32{sp.Topic: {sp.Partition}})
	r.finished = append(r.finished, sp.SplitID())
}

func (r *reader[T]) reportFinished(perSplit connector.SplitOutputs[T]) {
	if perSplit != nil {
		for _, id := range r.finished {
			perSplit.SplitFinished(id)
		}
	}
	r.finished = nil
}

// discover looks for partitions created since the job first started and
// takes those this subtask owns. A failed lookup is retried at the next
// interval: the partitions it would find are not going anywhere.
func (r *reader[T]) discover(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	counts, err := r.src.partitionCounts(ctx, r.cl)
	if err != nil {
		r.src.opts.Logger.Warn("kafka source: partition discovery failed; retrying at the next interval", "err", err)
		return
	}
	r.addDiscovered(counts)
}

func (r *reader[T]) addDiscovered(counts map[string]int32) {
	for _, t := range sortedKeys(counts) {
		n := counts[t]
		if !r.noKnown {
			for p := r.known[t]; p < n; p++ {
				k := tp{t, p}
				if _, ok := r.splits[k]; ok || Owner(t, p, r.sc.Parallelism) != r.sc.Subtask {
					continue
				}
				// New partitions start at their beginning, as in Flink:
				// everything in them was written after the job started.
				sp := &PartitionSplit{Topic: t, Partition: p, Offset: OffsetEarliest, Stop: NoStop}
				r.splits[k] = sp
				r.order = append(r.order, k)
				r.pending = append(r.pending, sp)
			}
		}
		r.known[t] = max(r.known[t], n)
	}
	r.noKnown = false
	for _, d := range r.discovery {
		d.Known = maps.Clone(r.known)
	}
}

func (r *reader[T]) Snapshot() ([]connector.Split, error) {
	out := make([]connector.Split, 0, len(r.order)+len(r.discovery))
	for _, k := range r.order {
		cp := *r.splits[k]
		out = append(out, &cp)
	}
	for _, d := range r.discovery {
		out = append(out, &discoverySplit{ID: d.ID, Known: maps.Clone(d.Known)})
	}
	return out, nil
}

// SnapshotCheckpoint implements connector.CheckpointListener: it also
// remembers the offsets, to commit them to the group when the checkpoint
// completes.
func (r *reader[T]) SnapshotCheckpoint(id int64) ([]connector.Split, error) {
	if r.src.opts.GroupID != "" {
		offsets := make(map[tp]int64, len(r.splits))
		for k, sp := range r.splits {
			if sp.Offset >= 0 {
				offsets[k] = sp.Offset
			}
		}
		r.commits[id] = offsets
	}
	return r.Snapshot()
}

// NotifyCheckpointComplete implements connector.CheckpointListener. The
// commit to the group runs in the background, and its failure only logs:
// the group's offsets are for monitoring, the job's are in its
// checkpoints.
func (r *reader[T]) NotifyCheckpointComplete(id int64) error {
	offsets, ok := r.commits[id]
	for c := range r.commits {
		if c <= id {
			delete(r.commits, c)
		}
	}
	if !ok || r.commitC == nil || len(offsets) == 0 {
		return nil
	}
	r.commitMu.Lock()
	r.toCommit = offsets
	r.commitMu.Unlock()
	select {
	case r.commitC <- struct{}{}:
	default: // the loop will take the newest offsets
	}
	return nil
}

// commitLoop commits the newest completed checkpoint's offsets, one
// commit at a time.
func (r *reader[T]) commitLoop(ctx context.Context) {
	defer r.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.commitC:
		}
		r.commitMu.Lock()
		offsets := r.toCommit
		r.toCommit = nil
		r.commitMu.Unlock()
		if err := r.commitOffsets(ctx, offsets); err != nil {
			r.src.opts.Logger.Warn("kafka source: committing offsets to the group failed (they are for monitoring only)", "group", r.src.opts.GroupID, "err", err)
		}
	}
}

func (r *reader[T]) commitOffsets(ctx context.Context, offsets map[tp]int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = r.src.opts.GroupID
	req.Generation = -1 // a group-less commit, as a standalone consumer's
	idx := make(map[string]int)
	for k, o := range offsets {
		i, ok := idx[k.topic]
		if !ok {
			i = len(req.Topics)
			idx[k.topic] = i
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = k.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = k.partition
		rp.Offset = o
		rp.LeaderEpoch = -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, r.cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

func (r *reader[T]) Close() error {
	if r.stop != nil {
		r.stop()
		r.wg.Wait()
		r.stop = nil
	}
	if r.cl != nil {
		r.cl.Close()
		r.cl = nil
	}
	return nil
}
