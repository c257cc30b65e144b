package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weirproject/weir/connector"
)

// StartingOffsets says where a source starts reading the partitions it
// finds at the job's first start. Partitions discovered later are read
// from their earliest offset, as they are new. A job restored from a
// checkpoint resumes from the checkpointed offsets instead.
type StartingOffsets struct {
	kind      startKind
	timestamp int64
	fallback  startKind
}

type startKind int

const (
	startEarliest startKind = iota
	startLatest
	startCommitted
	startTimestamp
)

// Earliest starts at the earliest offset of each partition (the default).
func Earliest() StartingOffsets { return StartingOffsets{kind: startEarliest} }

// Latest starts at the end of each partition: only records written after
// the job first started are read.
func Latest() StartingOffsets { return StartingOffsets{kind: startLatest} }

// Committed starts at the offsets the consumer group (SourceOptions.GroupID)
// committed; partitions without a committed offset start at fallback
// (Earliest or Latest).
func Committed(fallback StartingOffsets) StartingOffsets {
	return StartingOffsets{kind: startCommitted, fallback: fallback.kind}
}

// FromTimestamp starts at the first record whose timestamp is at or after
// ms (milliseconds since the Unix epoch), or at the end of a partition
// without one.
func FromTimestamp(ms int64) StartingOffsets {
	return StartingOffsets{kind: startTimestamp, timestamp: ms}
}

// ParseStartingOffsets parses earliest, latest, committed (falling back to
// earliest) or timestamp:<ms>, for command-line flags.
func ParseStartingOffsets(s string) (StartingOffsets, error) {
	switch s {
	case "earliest":
		return Earliest(), nil
	case "latest":
		return Latest(), nil
	case "committed":
		return Committed(Earliest()), nil
	}
	var ms int64
	if _, err := fmt.Sscanf(s, "timestamp:%d", &ms); err == nil {
		return FromTimestamp(ms), nil
	}
	return StartingOffsets{}, fmt.Errorf("kafka: starting offsets %q: want earliest, latest, committed or timestamp:<ms>", s)
}

// StoppingOffsets makes a source bounded: each partition is read up to an
// offset (exclusive), fixed when the job first starts and kept in its
// checkpoints, so a restarted job ends at the same place.
type StoppingOffsets struct {
	latest  bool
	offsets map[string]map[int32]int64
}

// StopAtLatest stops at the offsets that are the latest when the job first
// starts (the last stable offsets under read_committed).
func StopAtLatest() StoppingOffsets { return StoppingOffsets{latest: true} }

// StopAt stops at the given offsets, by topic and partition; partitions
// not in the map are not read at all.
func StopAt(offsets map[string]map[int32]int64) StoppingOffsets {
	return StoppingOffsets{offsets: offsets}
}

func (s StoppingOffsets) set() bool { return s.latest || s.offsets != nil }

// SourceOptions configure a Source. Brokers and one of Topics and
// TopicPattern are required.
type SourceOptions struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Topics to read.
	Topics []string
	// TopicPattern reads every topic whose whole name it matches
	// (internal topics excepted); discovery picks up new ones.
	TopicPattern *regexp.Regexp
	// GroupID is the consumer group offsets are committed to when a
	// checkpoint completes, for monitoring (lag); the source itself
	// resumes from its checkpoints, never from the group. Empty: no
	// commits. Committed starting offsets read it too.
	GroupID string
	// Start says where to start; the default is Earliest.
	Start StartingOffsets
	// Stop, when set, makes the source bounded; partition discovery is
	// then off, as in Flink.
	Stop StoppingOffsets
	// DiscoveryInterval is how often an unbounded source looks for new
	// partitions and topics. 0 means 30 s; negative disables discovery.
	DiscoveryInterval time.Duration
	// ReadUncommitted also reads records of open and aborted
	// transactions; the default is read_committed.
	ReadUncommitted bool
	// MaxPollRecords bounds the records one poll emits (default 1000),
	// which bounds how long a checkpoint barrier waits behind them.
	MaxPollRecords int
	// ClientOptions are added to every franz-go client the source makes
	// (TLS, SASL, timeouts).
	ClientOptions []kgo.Opt
	// Logger gets the source's warnings; nil discards them.
	Logger *slog.Logger
}

// Source reads Kafka partitions as splits: one split per partition, with
// the offset to read next (and the offset to stop at, for a bounded
// source) in every checkpoint.
type Source[T any] struct {
	opts        SourceOptions
	deserialize Deserializer[T]
}

// NewSource returns a source of the records of opts' topics, each turned
// into a T by deserialize (Bytes, String, JSON or a function of the whole
// record).
func NewSource[T any](opts SourceOptions, deserialize Deserializer[T]) (*Source[T], error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("kafka source: no brokers")
	}
	if (len(opts.Topics) == 0) == (opts.TopicPattern == nil) {
		return nil, errors.New("kafka source: give either topics or a topic pattern")
	}
	if deserialize == nil {
		return nil, errors.New("kafka source: no deserializer")
	}
	if opts.Start.kind == startCommitted && opts.GroupID == "" {
		return nil, errors.New("kafka source: committed starting offsets need a group ID")
	}
	if opts.DiscoveryInterval == 0 {
		opts.DiscoveryInterval = 30 * time.Second
	}
	if opts.MaxPollRecords <= 0 {
		opts.MaxPollRecords = 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Topics = slices.Clone(opts.Topics)
	return &Source[T]{opts: opts, deserialize: deserialize}, nil
}

// Boundedness implements connector.Source: bounded with stopping offsets.
func (s *Source[T]) Boundedness() connector.Boundedness {
	if s.opts.Stop.set() {
		return connector.Bounded
	}
	return connector.Unbounded
}

func (s *Source[T]) discovery() bool {
	return !s.opts.Stop.set() && s.opts.DiscoveryInterval > 0
}

// PartitionSplit is one partition and the offset to read next.
type PartitionSplit struct {
	Topic     string
	Partition int32
	// Offset is the next offset to read; OffsetEarliest for a partition
	// discovered but not yet read.
	Offset int64
	// Stop is the offset to stop at (exclusive), or NoStop.
	Stop int64
}

// OffsetEarliest marks a split that starts at its partition's earliest
// offset, whatever it is when the split is first read.
const OffsetEarliest = -2

// NoStop is the Stop of a split without end.
const NoStop = -1

// SplitID implements connector.Split: topic-partition, as Flink names it.
func (p *PartitionSplit) SplitID() string { return fmt.Sprintf("%s-%d", p.Topic, p.Partition) }

// discoverySplit carries what partition discovery knows: the partition
// count of every topic whose partitions are assigned already. Every
// reader gets one at the first start, so that only partitions created
// later count as new.
type discoverySplit struct {
	ID    int
	Known map[string]int32
}

func (d *discoverySplit) SplitID() string { return fmt.Sprintf("kafka-discovery-%d", d.ID) }

// client returns a franz-go client for metadata and offset requests.
func (s *Source[T]) client(extra ...kgo.Opt) (*kgo.Client, error) {
	// OffsetCommit and OffsetFetch v10 name topics by ID only; the source
	// names them, which v9 still allows (every broker that has v10 has v9).
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	versions.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 9)
	opts := append([]kgo.Opt{kgo.SeedBrokers(s.opts.Brokers...), kgo.MaxVersions(versions)}, s.opts.ClientOptions...)
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka source: %w", err)
	}
	return cl, nil
}

// Splits implements connector.Source: it lists the partitions and fixes
// their starting (and stopping) offsets. It is called at every start, but
// a restored job uses its checkpointed splits instead.
func (s *Source[T]) Splits(ctx context.Context, parallelism int) ([]connector.Split, error) {
	cl, err := s.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	counts, err := s.partitionCounts(ctx, cl)
	if err != nil {
		return nil, err
	}
	var splits []*PartitionSplit
	for _, t := range sortedKeys(counts) {
		for p := range counts[t] {
			splits = append(splits, &PartitionSplit{Topic: t, Partition: p, Stop: NoStop})
		}
	}
	if err := s.resolveStart(ctx, cl, splits); err != nil {
		return nil, err
	}
	if s.opts.Stop.set() {
		if err := s.resolveStop(ctx, cl, splits); err != nil {
			return nil, err
		}
	}
	out := make([]connector.Split, 0, len(splits)+parallelism)
	for _, sp := range splits {
		out = append(out, sp)
	}
	if s.discovery() {
		// The runtime gives split i to subtask i mod parallelism: these
		// consecutive ones reach every subtask once.
		for i := range parallelism {
			out = append(out, &discoverySplit{ID: i, Known: counts})
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// partitionCounts returns the partition count of every topic the source
// reads. A named topic that does not exist is an error.
func (s *Source[T]) partitionCounts(ctx context.Context, cl *kgo.Client) (map[string]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	if s.opts.TopicPattern == nil {
		for _, t := range s.opts.Topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafka source: list partitions: %w", err)
	}
	counts := make(map[string]int32)
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		name := *t.Topic
		if s.opts.TopicPattern != nil {
			if t.IsInternal || !fullMatch(s.opts.TopicPattern, name) || t.ErrorCode != 0 {
				continue
			}
		} else if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("kafka source: topic %q: %w", name, err)
		}
		counts[name] = int32(len(t.Partitions))
	}
	return counts, nil
}

func fullMatch(re *regexp.Regexp, s string) bool {
	loc := re.FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}

// resolveStart sets every split's starting offset.
func (s *Source[T]) resolveStart(ctx context.Context, cl *kgo.Client, splits []*PartitionSplit) error {
	kind := s.opts.Start.kind
	var missing []*PartitionSplit
	if kind == startCommitted {
		committed, err := s.committedOffsets(ctx, cl, splits)
		if err != nil {
			return err
		}
		for _, sp := range splits {
			if o, ok := committed[tp{sp.Topic, sp.Partition}]; ok && o >= 0 {
				sp.Offset = o
			} else {
				missing = append(missing, sp)
			}
		}
		kind = s.opts.Start.fallback
		splits = missing
	}
	var ts int64
	switch kind {
	case startEarliest:
		ts = -2
	case startLatest:
		ts = -1
	case startTimestamp:
		ts = s.opts.Start.timestamp
	}
	offsets, err := s.listOffsets(ctx, cl, splits, ts)
	if err != nil {
		return err
	}
	var none []*PartitionSplit
	for _, sp := range splits {
		sp.Offset = offsets[tp{sp.Topic, sp.Partition}]
		if sp.Offset < 0 {
			none = append(none, sp) // no record at or after the timestamp
		}
	}
	if len(none) > 0 {
		latest, err := s.listOffsets(ctx, cl, none, -1)
		if err != nil {
			return err
		}
		for _, sp := range none {
			sp.Offset = latest[tp{sp.Topic, sp.Partition}]
		}
	}
	return nil
}

// resolveStop sets every split's stopping offset.
func (s *Source[T]) resolveStop(ctx context.Context, cl *kgo.Client, splits []*PartitionSplit) error {
	if !s.opts.Stop.latest {
		for _, sp := range splits {
			if o, ok := s.opts.Stop.offsets[sp.Topic][sp.Partition]; ok {
				sp.Stop = o
			} else {
				sp.Stop = sp.Offset // nothing to read
			}
		}
		return nil
	}
	latest, err := s.listOffsets(ctx, cl, splits, -1)
	if err != nil {
		return err
	}
	for _, sp := range splits {
		sp.Stop = latest[tp{sp.Topic, sp.Partition}]
	}
	return nil
}

type tp struct {
	topic     string
	partition int32
}

// listOffsets asks the partition leaders for an offset per partition:
// timestamp -2 is the earliest, -1 the latest (the last stable offset
// under read_committed), otherwise the first at or after the timestamp
// (-1 if none).
func (s *Source[T]) listOffsets(ctx context.Context, cl *kgo.Client, splits []*PartitionSplit, timestamp int64) (map[tp]int64, error) {
	out := make(map[tp]int64)
	if len(splits) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if !s.opts.ReadUncommitted {
		req.IsolationLevel = 1
	}
	idx := make(map[string]int)
	for _, sp := range splits {
		i, ok := idx[sp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[sp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = sp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = sp.Partition
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = timestamp
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafka source: list offsets: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("kafka source: list offsets of %s-%d: %w", t.Topic, p.Partition, err)
			}
			out[tp{t.Topic, p.Partition}] = p.Offset
		}
	}
	for _, sp := range splits {
		if _, ok := out[tp{sp.Topic, sp.Partition}]; !ok {
			return nil, fmt.Errorf("kafka source: list offsets: no answer for %s", sp.SplitID())
		}
	}
	return out, nil
}

// committedOffsets returns the group's committed offsets (-1: none).
func (s *Source[T]) committedOffsets(ctx context.Context, cl *kgo.Client, splits []*PartitionSplit) (map[tp]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = s.opts.GroupID
	idx := make(map[string]int)
	for _, sp := range splits {
		i, ok := idx[sp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[sp.Topic] = i
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = sp.Topic
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, sp.Partition)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafka source: committed offsets of group %q: %w", s.opts.GroupID, err)
	}
	out := make(map[tp]int64)
	if err := kerr.ErrorForCode(resp.ErrorCode); errors.Is(err, kerr.GroupIDNotFound) {
		return out, nil // a new group: no offsets
	} else if err != nil {
		return nil, fmt.Errorf("kafka source: committed offsets of group %q: %w", s.opts.GroupID, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("kafka source: committed offset of %s-%d in group %q: %w", t.Topic, p.Partition, s.opts.GroupID, err)
			}
			out[tp{t.Topic, p.Partition}] = p.Offset
		}
	}
	return out, nil
}

// splitJSON is the checkpointed form of a split.
type splitJSON struct {
	Topic     string           `json:"t,omitempty"`
	Partition int32            `json:"p,omitempty"`
	Offset    int64            `json:"o,omitempty"`
	Stop      int64            `json:"s,omitempty"`
	Discovery *int             `json:"d,omitempty"`
	Known     map[string]int32 `json:"k,omitempty"`
}

// EncodeSplits implements connector.SplitSerializer.
func (s *Source[T]) EncodeSplits(splits []connector.Split) ([]byte, error) {
	out := make([]splitJSON, len(splits))
	for i, sp := range splits {
		switch sp := sp.(type) {
		case *PartitionSplit:
			out[i] = splitJSON{Topic: sp.Topic, Partition: sp.Partition, Offset: sp.Offset, Stop: sp.Stop}
		case *discoverySplit:
			id := sp.ID
			out[i] = splitJSON{Discovery: &id, Known: sp.Known}
		default:
			return nil, fmt.Errorf("kafka source: split %q: %w", sp.SplitID(), connector.ErrUnsupportedSplit)
		}
	}
	return json.Marshal(out)
}

// DecodeSplits implements connector.SplitSerializer.
func (s *Source[T]) DecodeSplits(data []byte) ([]connector.Split, error) {
	var in []splitJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("kafka source: decode splits: %w", err)
	}
	out := make([]connector.Split, len(in))
	for i, sj := range in {
		if sj.Discovery != nil {
			out[i] = &discoverySplit{ID: *sj.Discovery, Known: sj.Known}
			continue
		}
		if sj.Topic == "" {
			return nil, fmt.Errorf("kafka source: decode splits: split %d has no topic", i)
		}
		out[i] = &PartitionSplit{Topic: sj.Topic, Partition: sj.Partition, Offset: sj.Offset, Stop: sj.Stop}
	}
	return out, nil
}

// Owner is the subtask that reads a partition discovered while the job
// runs, as Flink's Kafka source assigns them: partitions of one topic go
// round robin from a start that depends on the topic's name.
func Owner(topic string, partition int32, parallelism int) int {
	start := (int64(javaHash(topic)*31) & 0x7FFFFFFF) % int64(parallelism)
	return int((start + int64(partition)) % int64(parallelism))
}

// javaHash is Java's String.hashCode, so that Owner agrees with Flink.
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
