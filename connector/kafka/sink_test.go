package kafka

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirproject/weir/connector"
)

func strs(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%04d", prefix, i))
	}
	slices.Sort(out)
	return out
}

func newTxnWriter(t *testing.T, brokers []string, prefix string, subtask, parallelism int) connector.SinkWriter[string] {
	t.Helper()
	s, err := NewSink(SinkOptions{Brokers: brokers, Topic: "out", TransactionalIDPrefix: prefix}, StringValues)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Subtask: subtask, Parallelism: parallelism})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func writeAll(t *testing.T, w connector.SinkWriter[string], vs []string) {
	t.Helper()
	for _, v := range vs {
		if err := w.Write(v, math.MinInt64); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExactlyOnceWriterTwoPhases walks a transaction through its phases:
// nothing is visible to read_committed after the prepare, everything
// after the commit, a repeated commit changes nothing, and a commit from
// another writer (the recovered job) finishes a prepared transaction.
func TestExactlyOnceWriterTwoPhases(t *testing.T) {
	_, brokers := newCluster(t, 3, "out")
	w := newTxnWriter(t, brokers, "job", 0, 1)
	writeAll(t, w, strs("a", 0, 100))
	c1, err := w.(connector.Committer).PrepareCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, strs("b", 0, 50))
	c2, err := w.(connector.Committer).PrepareCommit(2)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, brokers, "out", true); len(got) != 0 {
		t.Fatalf("read_committed sees %d records before any commit", len(got))
	}
	if got := len(readAll(t, brokers, "out", false)); got != 150 {
		t.Fatalf("read_uncommitted sees %d records, want 150", got)
	}
	if err := w.(connector.Committer).Commit([][]byte{c1}); err != nil {
		t.Fatal(err)
	}
	// Again: idempotent.
	if err := w.(connector.Committer).Commit([][]byte{c1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Transaction 2 is still open; a recovered writer commits it from
	// its committable, as the runtime does with a restored checkpoint.
	w2 := newTxnWriter(t, brokers, "job", 0, 1)
	writeAll(t, w2, nil)
	if err := w2.(connector.Committer).Commit([][]byte{c1, c2}); err != nil {
		t.Fatal(err)
	}
	want := append(strs("a", 0, 100), strs("b", 0, 50)...)
	slices.Sort(want)
	if got := values(readAll(t, brokers, "out", true)); !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %d records, want %d", len(got), len(want))
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestExactlyOnceRecoveryAbortsLingering: a run that dies with an open
// transaction (written, not prepared) and a prepared one whose checkpoint
// did not complete leaves both open; the recovered run commits the
// restored checkpoint's transaction and aborts the others, so that
// read_committed consumers see exactly the restored output and are not
// held back.
func TestExactlyOnceRecoveryAbortsLingering(t *testing.T) {
	_, brokers := newCluster(t, 2, "out")
	// Subtask 1 of 2 in the first run, so that the recovered run with
	// one subtask must clean up the IDs of a subtask it does not have.
	var restored [][]byte
	for sub := range 2 {
		w := newTxnWriter(t, brokers, "job", sub, 2)
		writeAll(t, w, strs(fmt.Sprintf("c%d-", sub), 0, 20))
		c, err := w.(connector.Committer).PrepareCommit(7) // the restored checkpoint
		if err != nil {
			t.Fatal(err)
		}
		restored = append(restored, c)
		writeAll(t, w, strs(fmt.Sprintf("p%d-", sub), 0, 20))
		if _, err := w.(connector.Committer).PrepareCommit(8); err != nil { // never completes
			t.Fatal(err)
		}
		writeAll(t, w, strs(fmt.Sprintf("o%d-", sub), 0, 20)) // open
		tw := w.(*txnWriter[string])
		if err := tw.cl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		// A crash: the process is gone, its transactions stay open.
		tw.cl.Close()
		tw.cl = nil
		tw.admin.Close()
		tw.admin = nil
	}
	w := newTxnWriter(t, brokers, "job", 0, 1)
	if err := w.(connector.Committer).Commit(restored); err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, strs("new", 0, 10))
	c, err := w.(connector.Committer).PrepareCommit(8)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.(connector.Committer).Commit([][]byte{c}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := append(append(strs("c0-", 0, 20), strs("c1-", 0, 20)...), strs("new", 0, 10)...)
	slices.Sort(want)
	if got := values(readAll(t, brokers, "out", true)); !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %d records, want %d: %v", len(got), len(want), got)
	}
}

func TestTransactionTimeoutChecks(t *testing.T) {
	_, brokers := newClusterWith(t, 1, []string{"out"}, kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "60000"}))
	_, err := NewSink(SinkOptions{Brokers: brokers, Topic: "out", TransactionalIDPrefix: "p",
		TransactionTimeout: time.Second, CheckpointInterval: 5 * time.Second}, StringValues)
	if err == nil || !strings.Contains(err.Error(), "shorter than the checkpoint interval") {
		t.Fatalf("timeout below the checkpoint interval: got %v", err)
	}
	s, err := NewSink(SinkOptions{Brokers: brokers, Topic: "out", TransactionalIDPrefix: "p",
		TransactionTimeout: 2 * time.Minute}, StringValues)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1})
	if err == nil || !strings.Contains(err.Error(), "exceeds the transaction.max.timeout.ms 60000") {
		t.Fatalf("timeout above the broker's maximum: got %v", err)
	}
	s, err = NewSink(SinkOptions{Brokers: brokers, Topic: "out", TransactionalIDPrefix: "p",
		TransactionTimeout: time.Minute}, StringValues)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1})
	if err != nil {
		t.Fatalf("timeout at the broker's maximum: %v", err)
	}
	w.Close()
}

// TestAtLeastOnceFlush: everything written is in Kafka once Flush
// returns.
func TestAtLeastOnceFlush(t *testing.T) {
	_, brokers := newCluster(t, 3, "out")
	s, err := NewSink(SinkOptions{Brokers: brokers, Topic: "out", Delivery: AtLeastOnce}, StringValues)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeAll(t, w, strs("x", 0, 500))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := values(readAll(t, brokers, "out", false)); !slices.Equal(got, strs("x", 0, 500)) {
		t.Fatalf("after Flush, %d of 500 records are in Kafka", len(got))
	}
}

// TestSinkRecordFields: keys, headers, timestamps (the record's own, or
// the stream's) and a partitioner reach Kafka.
func TestSinkRecordFields(t *testing.T) {
	_, brokers := newCluster(t, 4, "out")
	type ev struct {
		k  string
		p  int32
		ts int64
	}
	s, err := NewSink(SinkOptions{Brokers: brokers, Topic: "out", Delivery: AtLeastOnce, Partitioner: kgo.ManualPartitioner()},
		func(v ev, r *Record) error {
			r.Key, r.Value, r.Partition = []byte(v.k), []byte("v-"+v.k), v.p
			r.Headers = []Header{{Key: "h", Value: []byte(v.k)}}
			if v.ts > 0 {
				r.Timestamp = time.UnixMilli(v.ts)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(ev{"a", 3, 1000}, 5000); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ev{"b", 1, 0}, 7000); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, brokers, "out", false)
	slices.SortFunc(got, func(a, b *kgo.Record) int { return strings.Compare(string(a.Key), string(b.Key)) })
	if len(got) != 2 {
		t.Fatalf("%d records", len(got))
	}
	for i, want := range []struct {
		k  string
		p  int32
		ts int64
	}{{"a", 3, 1000}, {"b", 1, 7000}} {
		r := got[i]
		if string(r.Key) != want.k || string(r.Value) != "v-"+want.k || r.Partition != want.p || r.Timestamp.UnixMilli() != want.ts ||
			len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != want.k {
			t.Errorf("record %d: key %q value %q partition %d ts %d headers %v; want key %q partition %d ts %d",
				i, r.Key, r.Value, r.Partition, r.Timestamp.UnixMilli(), r.Headers, want.k, want.p, want.ts)
		}
	}
}
