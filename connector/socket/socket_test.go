package socket_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/socket"
	"github.com/weirproject/weir/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server accepts connections on a loopback port and, on the i-th, writes
// sends[i] and closes it; after the last it keeps the connection open
// until the test ends.
func server(t *testing.T, sends ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if i < len(sends) {
				c.Write([]byte(sends[i]))
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

type collector struct{ lines []string }

func (c *collector) Collect(v string)                       { c.lines = append(c.lines, v) }
func (c *collector) CollectWithTimestamp(v string, _ int64) { c.lines = append(c.lines, v) }

func newReader(t *testing.T, src *socket.Source) connector.SplitReader[string] {
	t.Helper()
	splits, err := src.Splits(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(splits) != 1 {
		t.Fatalf("%d splits, want 1", len(splits))
	}
	r, err := src.NewReader(context.Background(), connector.SplitContext{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddSplits(splits); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestReadsLinesAndReconnects: lines with "\n" and "\r\n", non-ASCII and
// empty lines, a last line without "\n", over three connections the
// server closes, which the reader reconnects after.
func TestReadsLinesAndReconnects(t *testing.T) {
	sends := []string{"hello world\nGrüße 東京\r\n\n", "second\npartial", "", "third 🚀\n"}
	var want []string
	for _, s := range sends {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		want = append(want, strings.Split(strings.TrimSuffix(s, "\n"), "\n")...)
	}
	want = slices.DeleteFunc(want, func(s string) bool { return s == "" }) // the empty connection
	want = slices.Insert(want, 2, "")                                      // the empty line
	addr := server(t, sends...)
	r := newReader(t, socket.Lines(addr).Backoff(5*time.Millisecond, 20*time.Millisecond))
	var c collector
	deadline := time.Now().Add(10 * time.Second)
	for len(c.lines) < len(want) && time.Now().Before(deadline) {
		st, err := r.Poll(context.Background(), &c)
		if err != nil {
			t.Fatal(err)
		}
		if st == connector.NothingAvailable {
			time.Sleep(time.Millisecond)
		}
	}
	if !slices.Equal(c.lines, want) {
		t.Fatalf("lines %q, want %q", c.lines, want)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestGivesUpAfterRetries(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens here now
	r := newReader(t, socket.Lines(addr).Retries(2).Backoff(time.Millisecond, 2*time.Millisecond))
	var c collector
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, err := r.Poll(context.Background(), &c)
		if err != nil {
			if !strings.Contains(err.Error(), "socket: "+addr+": gave up after 3 attempts") {
				t.Fatalf("err = %v", err)
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the reader did not give up")
}

func TestLineTooLong(t *testing.T) {
	addr := server(t, strings.Repeat("x", 100)+"\n")
	r := newReader(t, socket.Lines(addr).MaxLineLength(50))
	var c collector
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := r.Poll(context.Background(), &c); err != nil {
			if !strings.Contains(err.Error(), "a line longer than 50 bytes") {
				t.Fatalf("err = %v", err)
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no error for a line over the limit")
}

// TestInAJob: the source in a checkpointed job at parallelism 2 (one
// subtask reads), with a word count as in the demo; the job runs until
// cancelled and leaves no goroutine behind.
func TestInAJob(t *testing.T) {
	text := "to be or not to be\nthat is the question\n"
	addr := server(t, text)
	cfg := config.New()
	config.Parallelism.Set(cfg, 2)
	if err := cfg.Set("execution.checkpointing.interval", "10 ms"); err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironmentWithConfig(cfg)
	lines := stream.FromSource[string](env, socket.Lines(addr).Backoff(5*time.Millisecond, 10*time.Millisecond), "socket")
	words := stream.FlatMap(lines, func(l string, out stream.Collector[string]) {
		for _, w := range strings.Fields(l) {
			out.Collect(w)
		}
	})
	got := stream.Collect(words)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "socket")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(text)
	slices.Sort(want)
	var vals []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if vals = got.Values(); len(vals) >= len(want) {
			break
		}
	}
	cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("job: %v", err)
	}
	slices.Sort(vals)
	if !slices.Equal(vals, want) {
		t.Fatalf("words %q, want %q", vals, want)
	}
}
