//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

var built struct {
	once          sync.Once
	dir, bin, out string
	err           error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func buildExample(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "kafkawordcount-test-")
		if built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "kafkawordcount")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var out []byte
		out, built.err = exec.CommandContext(ctx, "go", "build", "-o", built.bin, ".").CombinedOutput()
		built.out = string(out)
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

// lines generates text: words of several scripts and cases, punctuation.
func lines(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 2))
	vocab := []string{"Kafka", "kafka", "stream", "Straße", "café", "Ωμέγα", "москва", "東京", "2024", "the", "THE", "a", "don't", "e-mail", "x²", "naïve"}
	seps := []string{" ", ", ", ". ", "!", "—", "\t", "🙂"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(vocab[rng.IntN(len(vocab))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		out[i] = b.String()
	}
	return out
}

// reference is the failure-free output as "key\tvalue" lines, sorted: for
// every word w with n occurrences, "w\tw k" for k = 1..n. The running
// counts of one word are numbered in the order its occurrences are read,
// but as a multiset they do not depend on that order, which differs
// between partitions.
func reference(ls []string) []string {
	seen := make(map[string]int)
	var out []string
	for _, l := range ls {
		for _, w := range strings.FieldsFunc(strings.ToLower(l), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			seen[w]++
			out = append(out, w+"\t"+w+" "+strconv.Itoa(seen[w]))
		}
	}
	slices.Sort(out)
	return out
}

// setup starts a Kafka cluster in this process, on loopback, with a topic
// "in" of 3 partitions holding the text: most lines in committed
// transactions, some not transactional, and aborted transactions between
// them and at the end of every partition, whose lines must not be read.
func setup(t *testing.T, outputs ...string) (brokers []string, text []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, append([]string{"in"}, outputs...)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers = c.ListenAddrs()
	text = lines(3000, 7)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("input"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	plain, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txn := func(commit bool, ls []string, first int) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i, l := range ls {
			cl.Produce(ctx, &kgo.Record{Topic: "in", Partition: int32((first + i) % 3), Value: []byte(l)}, nil)
		}
		// EndTransaction does not send what is buffered: flush first,
		// so that aborted records too are in the log.
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	junk := []string{"aborted ABORTED junk", "never counted"}
	for i := 0; i < len(text); i += 500 {
		chunk := text[i:min(i+500, len(text))]
		if i/500%3 == 2 {
			for j, l := range chunk {
				if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "in", Partition: int32((i + j) % 3), Value: []byte(l)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			txn(true, chunk, i)
		}
		txn(false, junk, i)
	}
	for p := range 3 {
		txn(false, junk, p) // an aborted tail on every partition
	}
	return brokers, text
}

// readCommitted reads the whole topic as a read_committed consumer does,
// with franz-go, as sorted "key\tvalue" lines.
func readCommitted(t *testing.T, brokers []string, topic string, committed bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The end: the last stable offset (read_committed) or the high
	// watermark of every partition.
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range int32(3) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	end := make(map[int32]int64)
	for _, rp := range resp.Topics[0].Partitions {
		end[rp.Partition] = rp.Offset
	}
	pos := make(map[int32]int64)
	var out []string
	for {
		done := true
		for p, e := range end {
			done = done && pos[p] >= e
		}
		if done {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: at %v of %v", topic, pos, end)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() && r.Offset < end[r.Partition] {
				out = append(out, string(r.Key)+"\t"+string(r.Value))
			}
		})
	}
	slices.Sort(out)
	return out
}

// kcatRead reads the topic with Debian's kcat (librdkafka) as a
// read_committed consumer: a reader that is not franz-go.
func kcatRead(t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	bin, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_SYSTEMS") == "1" {
			t.Fatal("kcat is not installed (test.sh installs Debian's kcat); WEIR_REQUIRE_SYSTEMS=1 requires it")
		}
		t.Log("SKIPPED the check with kcat: it is not installed (apt-get install kcat; test.sh does)")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-C", "-b", strings.Join(brokers, ","), "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", `%k\t%s\n`).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kcat: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("kcat: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(out) == 0 {
		got = nil
	}
	slices.Sort(got)
	return got
}

// compareLines reports how two sorted multisets of lines differ.
func compareLines(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	var extra, missing []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			extra = append(extra, got[i])
			i++
		case i == len(got) || got[i] > want[j]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	return fmt.Sprintf("%d lines, want %d: %d extra (e.g. %q), %d missing (e.g. %q)",
		len(got), len(want), len(extra), extra[:min(len(extra), 5)], len(missing), missing[:min(len(missing), 5)])
}

// TestFlagErrors: bad flags are refused with a message naming them.
func TestFlagErrors(t *testing.T) {
	bin := buildExample(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--input-topic", "a", "--output-topic", "b"}, "--brokers, --input-topic and --output-topic are required"},
		{[]string{"--brokers", "x:1", "--input-topic", "a", "--output-topic", "b", "--delivery", "twice"}, `invalid value "twice" for flag --delivery`},
		{[]string{"--brokers", "x:1", "--input-topic", "a", "--output-topic", "b", "--starting-offsets", "soon"}, `invalid value "soon" for flag --starting-offsets`},
		{[]string{"--brokers", "x:1", "--input-topic", "a", "--output-topic", "b"}, "set --checkpoint-interval"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: %v, %q; want exit 2 and %q", tc.args, err, out, tc.want)
		}
	}
}
