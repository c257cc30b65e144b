package kafka

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newCluster starts an in-process Kafka cluster on loopback ports with the
// given topics of `partitions` partitions each, closed when the test ends.
func newCluster(t testing.TB, partitions int32, topics ...string) (*kfake.Cluster, []string) {
	t.Helper()
	return newClusterWith(t, partitions, topics)
}

func newClusterWith(t testing.TB, partitions int32, topics []string, opts ...kfake.Opt) (*kfake.Cluster, []string) {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()
}

func newClient(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes records synchronously.
func produce(t testing.TB, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every record of topic up to its end (the last stable
// offset under read_committed) with a plain franz-go consumer. Control
// records are kept to see the position pass the end, and dropped.
func readAll(t testing.TB, brokers []string, topic string, committed bool) []*kgo.Record {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	ends := endOffsets(t, brokers, topic, committed)
	cl := newClient(t, brokers, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	pos := make(map[int32]int64)
	done := func() bool {
		for p, e := range ends {
			if pos[p] < e {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v (at %v, want %v)", topic, err, pos, ends)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() && r.Offset < ends[r.Partition] {
				out = append(out, r)
			}
		})
	}
	return out
}

// endOffsets lists the end of every partition of topic: the high
// watermark, or the last stable offset for committed.
func endOffsets(t testing.TB, brokers []string, topic string, committed bool) map[int32]int64 {
	t.Helper()
	src, err := NewSource(SourceOptions{Brokers: brokers, Topics: []string{topic}, ReadUncommitted: !committed}, Bytes)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, brokers)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	counts, err := src.partitionCounts(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var splits []*PartitionSplit
	for p := range counts[topic] {
		splits = append(splits, &PartitionSplit{Topic: topic, Partition: p})
	}
	offs, err := src.listOffsets(ctx, cl, splits, -1)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int32]int64)
	for k, o := range offs {
		out[k.partition] = o
	}
	return out
}

func values(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	slices.Sort(out)
	return out
}

// kcatRead reads the records of topic visible to a read_committed
// consumer with Debian's kcat (librdkafka), a reader that is not
// franz-go, as "key<TAB>value" lines.
func kcatRead(t testing.TB, brokers []string, topic string) []string {
	t.Helper()
	bin, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_SYSTEMS") == "1" {
			t.Fatal("kcat is not installed (test.sh installs Debian's kcat); WEIR_REQUIRE_SYSTEMS=1 requires it")
		}
		t.Skip("kcat is not installed: apt-get install kcat (test.sh does) to check the output with a reader that is not franz-go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-C", "-b", strings.Join(brokers, ","), "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%k\t%s\n")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kcat: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(out) == 0 {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

var _ = fmt.Sprint
