package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirproject/weir/connector"
)

// splitOut is a connector.Output that is also connector.SplitOutputs, as
// the runtime's is with per-split watermarks: it keeps every record with
// the split it came through.
type splitOut[T any] struct {
	vals     []T
	ts       []int64
	bySplit  map[string][]T
	finished []string
}

func newSplitOut[T any]() *splitOut[T] { return &splitOut[T]{bySplit: make(map[string][]T)} }

func (o *splitOut[T]) Collect(v T) { o.CollectWithTimestamp(v, 0) }
func (o *splitOut[T]) CollectWithTimestamp(v T, ts int64) {
	o.vals, o.ts = append(o.vals, v), append(o.ts, ts)
}
func (o *splitOut[T]) ForSplit(id string) connector.Output[T] { return &oneSplit[T]{o, id} }
func (o *splitOut[T]) SplitFinished(id string)                { o.finished = append(o.finished, id) }

type oneSplit[T any] struct {
	o  *splitOut[T]
	id string
}

func (s *oneSplit[T]) Collect(v T) { s.CollectWithTimestamp(v, 0) }
func (s *oneSplit[T]) CollectWithTimestamp(v T, ts int64) {
	s.o.bySplit[s.id] = append(s.o.bySplit[s.id], v)
	s.o.CollectWithTimestamp(v, ts)
}

// fill writes n records to every partition of topic, value
// "<partition>:<i>", timestamp (i+1) seconds.
func fill(t *testing.T, cl *kgo.Client, topic string, partitions int32, from, to int) {
	t.Helper()
	var rs []*kgo.Record
	for p := range partitions {
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d:%d", p, i),
				Timestamp: time.UnixMilli(int64(i+1) * 1000)})
		}
	}
	produce(t, cl, rs...)
}

func manual(t *testing.T, brokers []string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, brokers, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

func partitionSplits(t *testing.T, splits []connector.Split) map[string]*PartitionSplit {
	t.Helper()
	out := make(map[string]*PartitionSplit)
	for _, s := range splits {
		if ps, ok := s.(*PartitionSplit); ok {
			out[ps.SplitID()] = ps
		}
	}
	return out
}

func commitGroup(t *testing.T, brokers []string, group, topic string, offsets map[int32]int64) {
	t.Helper()
	src := must(NewSource(SourceOptions{Brokers: brokers, Topics: []string{topic}}, Bytes))
	cl := must(src.client())
	defer cl.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// groupOffsets reads a group's committed offsets.
func groupOffsets(t *testing.T, brokers []string, group, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	src, err := NewSource(SourceOptions{Brokers: brokers, Topics: []string{topic}, GroupID: group}, Bytes)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, brokers)
	defer cl.Close()
	var splits []*PartitionSplit
	for p := range partitions {
		splits = append(splits, &PartitionSplit{Topic: topic, Partition: p})
	}
	m, err := src.committedOffsets(context.Background(), cl, splits)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int32]int64)
	for p := range partitions {
		if o, ok := m[tp{topic, p}]; ok {
			out[p] = o
		} else {
			out[p] = -1
		}
	}
	return out
}

// TestStartingAndStoppingOffsets: every kind of starting offset resolves
// to the offsets a plain reading of the partitions gives, and stopping at
// the latest fixes the ends when Splits runs.
func TestStartingAndStoppingOffsets(t *testing.T) {
	_, brokers := newCluster(t, 3, "t")
	cl := manual(t, brokers)
	fill(t, cl, "t", 3, 0, 10)
	commitGroup(t, brokers, "g", "t", map[int32]int64{0: 3, 1: 7})
	for _, tc := range []struct {
		name  string
		start StartingOffsets
		want  [3]int64
	}{
		{"earliest", Earliest(), [3]int64{0, 0, 0}},
		{"latest", Latest(), [3]int64{10, 10, 10}},
		{"committed, else earliest", Committed(Earliest()), [3]int64{3, 7, 0}},
		{"committed, else latest", Committed(Latest()), [3]int64{3, 7, 10}},
		{"timestamp", FromTimestamp(5500), [3]int64{5, 5, 5}}, // the first at or after 5.5 s is i=5 (6 s)
		{"timestamp after the end", FromTimestamp(99_000), [3]int64{10, 10, 10}},
	} {
		for _, bounded := range []bool{false, true} {
			opts := SourceOptions{Brokers: brokers, Topics: []string{"t"}, GroupID: "g", Start: tc.start}
			if bounded {
				opts.Stop = StopAtLatest()
			}
			src, err := NewSource(opts, String)
			if err != nil {
				t.Fatal(err)
			}
			splits, err := src.Splits(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			ps := partitionSplits(t, splits)
			if len(ps) != 3 {
				t.Fatalf("%s: %d partition splits", tc.name, len(ps))
			}
			for p := range 3 {
				sp := ps[fmt.Sprintf("t-%d", p)]
				wantStop := int64(NoStop)
				if bounded {
					wantStop = 10
				}
				if sp.Offset != tc.want[p] || sp.Stop != wantStop {
					t.Errorf("%s (bounded %v): partition %d starts at %d and stops at %d; want %d and %d", tc.name, bounded, p, sp.Offset, sp.Stop, tc.want[p], wantStop)
				}
			}
			// Unbounded: one discovery split per subtask.
			if wantMeta := map[bool]int{false: 2, true: 0}[bounded]; len(splits)-3 != wantMeta {
				t.Errorf("%s (bounded %v): %d discovery splits, want %d", tc.name, bounded, len(splits)-3, wantMeta)
			}
		}
	}
	if _, err := ParseStartingOffsets("soon"); err == nil {
		t.Error("ParseStartingOffsets accepted soon")
	}
	if s, err := ParseStartingOffsets("timestamp:42"); err != nil || s != FromTimestamp(42) {
		t.Errorf("timestamp:42: %v %v", s, err)
	}
	if _, err := NewSource(SourceOptions{Brokers: brokers, Topics: []string{"t"}, Start: Committed(Earliest())}, String); err == nil {
		t.Error("committed offsets without a group were accepted")
	}
	src, _ := NewSource(SourceOptions{Brokers: brokers, Topics: []string{"nope"}}, String)
	if _, err := src.Splits(context.Background(), 1); err == nil || !strings.Contains(err.Error(), `topic "nope"`) {
		t.Errorf("missing topic: %v", err)
	}
}

// readUntilEnd polls a reader until EndOfInput (or the number of records
// wanted, for unbounded ones).
func readUntilEnd[T any](t *testing.T, r connector.SplitReader[T], out *splitOut[T], atMost int) connector.ReadStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, err := r.Poll(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		if st == connector.EndOfInput || atMost > 0 && len(out.vals) >= atMost {
			return st
		}
		if st == connector.NothingAvailable {
			time.Sleep(time.Millisecond)
		}
	}
	t.Fatalf("no end after 20 s; %d records", len(out.vals))
	return 0
}

func newReader[T any](t *testing.T, src *Source[T], subtask, parallelism int, splits []connector.Split) connector.SplitReader[T] {
	t.Helper()
	r, err := src.NewReader(context.Background(), connector.SplitContext{Subtask: subtask, Parallelism: parallelism})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.AddSplits(splits); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBoundedEndsAtFirstLatestAcrossRestore: a bounded source reads
// what was there when Splits ran, not what came later, also when it is
// restored midway from its encoded splits; each record once, and every
// partition reported finished.
func TestBoundedEndsAtFirstLatestAcrossRestore(t *testing.T) {
	_, brokers := newCluster(t, 3, "t")
	cl := manual(t, brokers)
	fill(t, cl, "t", 3, 0, 20)
	src, err := NewSource(SourceOptions{Brokers: brokers, Topics: []string{"t"}, Stop: StopAtLatest(), MaxPollRecords: 7}, String)
	if err != nil {
		t.Fatal(err)
	}
	if src.Boundedness() != connector.Bounded {
		t.Fatal("a source with stopping offsets is not bounded")
	}
	splits, err := src.Splits(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, cl, "t", 3, 20, 30) // after the job first started
	r := newReader(t, src, 0, 1, splits)
	out := newSplitOut[string]()
	readUntilEnd(t, r, out, 25)
	data, err := src.EncodeSplits(must(r.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	restored, err := src.DecodeSplits(data)
	if err != nil {
		t.Fatal(err)
	}
	r2 := newReader(t, src, 0, 1, restored)
	if st := readUntilEnd(t, r2, out, 0); st != connector.EndOfInput {
		t.Fatal(st)
	}
	var want []string
	for p := range 3 {
		for i := range 20 {
			want = append(want, fmt.Sprintf("%d:%d", p, i))
		}
	}
	got := slices.Sorted(slices.Values(out.vals))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d records, want %d: %v", len(got), len(want), got)
	}
	// Event time is the record's timestamp; records come per split.
	for i, v := range out.vals {
		n, _ := strconv.Atoi(v[strings.IndexByte(v, ':')+1:])
		if out.ts[i] != int64(n+1)*1000 {
			t.Fatalf("record %s has timestamp %d", v, out.ts[i])
		}
	}
	for p := range 3 {
		if id := fmt.Sprintf("t-%d", p); len(out.bySplit[id]) != 20 {
			t.Errorf("split %s emitted %d records through ForSplit", id, len(out.bySplit[id]))
		}
	}
	slices.Sort(out.finished)
	if !slices.Equal(out.finished, []string{"t-0", "t-1", "t-2"}) {
		t.Errorf("finished splits %v", out.finished)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestStopAfterAbortedTail: under read_committed, an aborted transaction
// at the end of a partition delivers none of its records; the split must
// still end at the stopping offset (it sees the abort marker pass) rather
// than wait forever for an offset that never comes.
func TestStopAfterAbortedTail(t *testing.T) {
	_, brokers := newCluster(t, 1, "t")
	txn := manual(t, brokers, kgo.TransactionalID("tx"))
	ctx := context.Background()
	write := func(commit bool, vals ...string) {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			txn.Produce(ctx, &kgo.Record{Topic: "t", Value: []byte(v)}, nil)
		}
		// EndTransaction does not send what is buffered: flush first,
		// so that aborted records too are in the log.
		if err := txn.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	write(true, "a", "b", "c")       // offsets 0-2, marker 3
	write(false, "x", "y", "z")      // offsets 4-6, marker 7
	write(true, "d")                 // 8, marker 9
	write(false, "u", "v", "w", "q") // 10-13, marker 14
	for _, tc := range []struct {
		name      string
		stop      StoppingOffsets
		uncommitd bool
		want      []string
	}{
		{"latest", StopAtLatest(), false, []string{"a", "b", "c", "d"}},
		{"inside the aborted tail", StopAt(map[string]map[int32]int64{"t": {0: 12}}), false, []string{"a", "b", "c", "d"}},
		{"inside an aborted transaction", StopAt(map[string]map[int32]int64{"t": {0: 6}}), false, []string{"a", "b", "c"}},
		{"read_uncommitted", StopAtLatest(), true, []string{"a", "b", "c", "d", "q", "u", "v", "w", "x", "y", "z"}},
	} {
		src, err := NewSource(SourceOptions{Brokers: brokers, Topics: []string{"t"}, Stop: tc.stop, ReadUncommitted: tc.uncommitd}, String)
		if err != nil {
			t.Fatal(err)
		}
		splits, err := src.Splits(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		r := newReader(t, src, 0, 1, splits)
		out := newSplitOut[string]()
		readUntilEnd(t, r, out, 0)
		if got := slices.Sorted(slices.Values(out.vals)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: read %v, want %v", tc.name, got, tc.want)
		}
		r.Close()
	}
}

type event struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// TestDeserializers: raw bytes, strings, JSON into a struct, and a
// function that sees the whole record; a bad record fails with its place,
// ErrSkip drops it.
func TestDeserializers(t *testing.T) {
	_, brokers := newCluster(t, 2, "t")
	cl := manual(t, brokers)
	produce(t, cl,
		&kgo.Record{Topic: "t", Partition: 1, Key: []byte("k1"), Value: []byte(`{"name":"één","n":1}`), Timestamp: time.UnixMilli(1234),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}},
		&kgo.Record{Topic: "t", Partition: 1, Key: []byte("k2"), Value: []byte(`{"name":"b","n":2}`), Timestamp: time.UnixMilli(1235)},
		&kgo.Record{Topic: "t", Partition: 1, Value: []byte(`not json`), Timestamp: time.UnixMilli(1236)})
	opts := SourceOptions{Brokers: brokers, Topics: []string{"t"}, Stop: StopAt(map[string]map[int32]int64{"t": {1: 2}})}
	read := func(t *testing.T, opts SourceOptions) []string {
		t.Helper()
		src, err := NewSource(opts, func(r *Record) (string, error) {
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, h.Key+"="+string(h.Value))
			}
			return fmt.Sprintf("%s/%d/%d key=%s ts=%d headers=%v value=%s", r.Topic, r.Partition, r.Offset, r.Key, r.Timestamp.UnixMilli(), hs, r.Value), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		splits := must(src.Splits(context.Background(), 1))
		out := newSplitOut[string]()
		readUntilEnd(t, newReader(t, src, 0, 1, splits), out, 0)
		return out.vals
	}
	got := read(t, opts)
	want := []string{
		`t/1/0 key=k1 ts=1234 headers=[h=v] value={"name":"één","n":1}`,
		`t/1/1 key=k2 ts=1235 headers=[] value={"name":"b","n":2}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("function deserializer:\n got %q\nwant %q", got, want)
	}

	jsrc := must(NewSource(opts, JSON[event]()))
	jout := newSplitOut[event]()
	readUntilEnd(t, newReader(t, jsrc, 0, 1, must(jsrc.Splits(context.Background(), 1))), jout, 0)
	if !slices.Equal(jout.vals, []event{{"één", 1}, {"b", 2}}) {
		t.Fatalf("JSON: %v", jout.vals)
	}
	ssrc := must(NewSource(opts, String))
	sout := newSplitOut[string]()
	readUntilEnd(t, newReader(t, ssrc, 0, 1, must(ssrc.Splits(context.Background(), 1))), sout, 0)
	bsrc := must(NewSource(opts, Bytes))
	bout := newSplitOut[[]byte]()
	readUntilEnd(t, newReader(t, bsrc, 0, 1, must(bsrc.Splits(context.Background(), 1))), bout, 0)
	if len(sout.vals) != 2 || sout.vals[1] != `{"name":"b","n":2}` || len(bout.vals) != 2 || string(bout.vals[0]) != `{"name":"één","n":1}` {
		t.Fatalf("string %q, bytes %q", sout.vals, bout.vals)
	}

	// The third record is not JSON.
	all := opts
	all.Stop = StopAtLatest()
	jsrc = must(NewSource(all, JSON[event]()))
	r := newReader(t, jsrc, 0, 1, must(jsrc.Splits(context.Background(), 1)))
	var err error
	for range 1000 {
		if _, err = r.Poll(context.Background(), newSplitOut[event]()); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err == nil || !strings.Contains(err.Error(), "t-1 offset 2") || !strings.Contains(err.Error(), "JSON") {
		t.Fatalf("bad JSON: %v", err)
	}
	skip := must(NewSource(all, func(r *Record) (event, error) {
		var e event
		if json.Unmarshal(r.Value, &e) != nil {
			return e, ErrSkip
		}
		return e, nil
	}))
	kout := newSplitOut[event]()
	readUntilEnd(t, newReader(t, skip, 0, 1, must(skip.Splits(context.Background(), 1))), kout, 0)
	if len(kout.vals) != 2 {
		t.Fatalf("ErrSkip: %v", kout.vals)
	}
}

func TestOwnerAgreesWithFlink(t *testing.T) {
	// Java: "topic".hashCode() == 110546223.
	if h := javaHash("topic"); h != 110546223 {
		t.Fatalf("javaHash(topic) = %d", h)
	}
	counts := make([]int, 3)
	for p := range int32(9) {
		counts[Owner("topic", p, 3)]++
	}
	if !slices.Equal(counts, []int{3, 3, 3}) {
		t.Fatalf("partitions per subtask %v", counts)
	}
}

// TestPartitionDiscovery: two subtasks of an unbounded source, reading a
// topic pattern; partitions added to a topic and a new matching topic are
// each read by exactly one subtask (their Owner), from their beginning,
// and a subtask restored from its snapshot keeps them and does not take
// any other's.
func TestPartitionDiscovery(t *testing.T) {
	_, brokers := newCluster(t, 2, "d1", "other")
	cl := manual(t, brokers)
	fill(t, cl, "d1", 2, 0, 3)
	src, err := NewSource(SourceOptions{Brokers: brokers, TopicPattern: regexp.MustCompile(`d\d`), DiscoveryInterval: 30 * time.Millisecond}, String)
	if err != nil {
		t.Fatal(err)
	}
	splits := must(src.Splits(context.Background(), 2))
	assigned := [2][]connector.Split{}
	for i, s := range splits {
		assigned[i%2] = append(assigned[i%2], s)
	}
	readers := []connector.SplitReader[string]{newReader(t, src, 0, 2, assigned[0]), newReader(t, src, 1, 2, assigned[1])}
	outs := []*splitOut[string]{newSplitOut[string](), newSplitOut[string](), newSplitOut[string]()}
	// pollAll polls both subtasks until they read want records, and
	// then some more rounds, in which nothing else may come.
	pollAll := func(want int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		var extra time.Time
		for {
			if n := len(outs[0].vals) + len(outs[1].vals); n >= want && extra.IsZero() {
				extra = time.Now().Add(150 * time.Millisecond)
			}
			if !extra.IsZero() && time.Now().After(extra) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("read %d + %d records, want %d", len(outs[0].vals), len(outs[1].vals), want)
			}
			for i, r := range readers {
				if _, err := r.Poll(context.Background(), outs[i]); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	pollAll(6)

	// Three more partitions of d1, and a new topic d2 of 2.
	admin := newClient(t, brokers)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "d1", 5
	cp.Topics = append(cp.Topics, cpt)
	cp.TimeoutMillis = 5000
	if resp, err := cp.RequestWith(context.Background(), admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create partitions: %v %v", err, resp)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "d2", 2, 1
	ct.Topics = append(ct.Topics, ctt)
	ct.TimeoutMillis = 5000
	if resp, err := ct.RequestWith(context.Background(), admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %v", err, resp)
	}
	cl = manual(t, brokers)    // one that knows the new partitions
	fill(t, cl, "d1", 5, 3, 4) // one more record everywhere, the first in the new partitions
	fill(t, cl, "d2", 2, 0, 2)
	fill(t, cl, "other", 2, 0, 5)
	pollAll(6 + 5 + 4)
	seen := make(map[string]int)
	for i, o := range outs[:2] {
		for id, vs := range o.bySplit {
			tpc, ps, _ := strings.Cut(id, "-")
			p, _ := strconv.Atoi(ps)
			if owner := Owner(tpc, int32(p), 2); (tpc == "d2" || p >= 2) && owner != i {
				t.Errorf("subtask %d read the new partition %s, whose owner is %d", i, id, owner)
			}
			for _, v := range vs {
				seen[tpc+"/"+v]++
			}
		}
	}
	var want []string
	for p := range 5 {
		for i := range 4 {
			if p < 2 || i == 3 {
				want = append(want, fmt.Sprintf("d1/%d:%d", p, i))
			}
		}
	}
	for p := range 2 {
		for i := range 2 {
			want = append(want, fmt.Sprintf("d2/%d:%d", p, i))
		}
	}
	if got := slices.Sorted(maps.Keys(seen)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s read %d times", k, n)
		}
	}

	// Restore both subtasks from their snapshots: each has its
	// discovered partitions and knows the topics, so no one takes a
	// partition twice when more records come.
	for i := range readers {
		snap := must(src.EncodeSplits(must(readers[i].Snapshot())))
		readers[i].Close()
		readers[i] = newReader(t, src, i, 2, must(src.DecodeSplits(snap)))
		outs[i] = newSplitOut[string]()
	}
	fill(t, cl, "d1", 5, 4, 5)
	fill(t, cl, "d2", 2, 2, 3)
	pollAll(7)
	if n := len(outs[0].vals) + len(outs[1].vals); n != 7 {
		t.Fatalf("after the restore, %d records read, want 7", n)
	}
}

// TestOffsetsCommittedOnCheckpointCompletion: the group's offsets follow
// the completed checkpoints, not the reading position.
func TestOffsetsCommittedOnCheckpointCompletion(t *testing.T) {
	_, brokers := newCluster(t, 2, "t")
	cl := manual(t, brokers)
	fill(t, cl, "t", 2, 0, 10)
	src := must(NewSource(SourceOptions{Brokers: brokers, Topics: []string{"t"}, GroupID: "mon", MaxPollRecords: 4}, String))
	r := newReader(t, src, 0, 1, must(src.Splits(context.Background(), 1)))
	out := newSplitOut[string]()
	readUntilEnd(t, r, out, 4)
	l := r.(connector.CheckpointListener)
	snap := partitionSplits(t, must(l.SnapshotCheckpoint(1)))
	readUntilEnd(t, r, out, 20)
	must(l.SnapshotCheckpoint(2))
	if got := groupOffsets(t, brokers, "mon", "t", 2); got[0] != -1 || got[1] != -1 {
		t.Fatalf("offsets committed before any checkpoint completed: %v", got)
	}
	if err := l.NotifyCheckpointComplete(1); err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{0: snap["t-0"].Offset, 1: snap["t-1"].Offset}
	deadline := time.Now().Add(10 * time.Second)
	for got := groupOffsets(t, brokers, "mon", "t", 2); !maps.Equal(got, want); got = groupOffsets(t, brokers, "mon", "t", 2) {
		if time.Now().After(deadline) {
			t.Fatalf("group offsets %v, want those of checkpoint 1: %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.NotifyCheckpointComplete(2); err != nil {
		t.Fatal(err)
	}
	want = map[int32]int64{0: 10, 1: 10}
	for got := groupOffsets(t, brokers, "mon", "t", 2); !maps.Equal(got, want); got = groupOffsets(t, brokers, "mon", "t", 2) {
		if time.Now().After(deadline) {
			t.Fatalf("group offsets %v, want those of checkpoint 2: %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
