package stream_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/stream"
)

func TestPanicNamesOperatorAndSubtask(t *testing.T) {
	env := newEnv(t, 4)
	// Contiguous splits: subtask 2 of 4 (index 1) reads 100..199.
	src := stream.FromSlice(env, seq(400))
	m := stream.Map(src, func(v int64) int64 {
		if v == 150 {
			panic("boom")
		}
		return v
	}).Name("tokenize")
	stream.Collect(m)
	err := env.Execute(context.Background(), "panic")
	var oe *stream.OperatorError
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v (%T), want an OperatorError", err, err)
	}
	if !strings.HasPrefix(err.Error(), `map "tokenize" (2/4): panic: boom`) {
		t.Fatalf("err = %q", err)
	}
	if !strings.Contains(oe.Stack, "TestPanicNamesOperatorAndSubtask") {
		t.Fatalf("stack does not show the user function:\n%s", oe.Stack)
	}
}

func TestErrorsAreAttributedWithinAChain(t *testing.T) {
	cases := []struct {
		name  string
		build func(env *stream.Environment)
		want  string
	}{
		{"downstream of a flat map", func(env *stream.Environment) {
			fm := stream.FlatMap(stream.FromSlice(env, []string{"a b"}), func(s string, out stream.Collector[string]) {
				for _, w := range strings.Fields(s) {
					out.Collect(w)
				}
			}).Name("split")
			stream.Collect(stream.Map(fm, func(s string) string { panic("in map") }).Name("explode"))
		}, `map "explode" (1/1): panic: in map`},
		{"flat map after emitting", func(env *stream.Environment) {
			fm := stream.FlatMap(stream.FromSlice(env, []string{"a b"}), func(s string, out stream.Collector[string]) {
				out.Collect(s)
				panic("after collect")
			}).Name("split")
			stream.Collect(stream.Map(fm, strings.ToUpper).Name("upper"))
		}, `flat-map "split" (1/1): panic: after collect`},
		{"process function error", func(env *stream.Environment) {
			p := stream.Process(stream.FromSlice(env, []int64{1, 2, 3}), stream.ProcessFunc[int64, int64](func(v int64, _ *stream.Context, out stream.Collector[int64]) error {
				if v == 2 {
					return errors.New("bad record 2")
				}
				out.Collect(v)
				return nil
			})).Name("validate")
			stream.Collect(p)
		}, `process "validate" (1/1): bad record 2`},
		{"filter downstream of a network edge", func(env *stream.Environment) {
			s := stream.FromSlice(env, []int64{1, 2, 3}).Rebalance()
			stream.Collect(s.Filter(func(v int64) bool {
				if v == 3 {
					panic(errors.New("filter failed"))
				}
				return true
			}).Name("keep"))
		}, `filter "keep" (1/1): panic: filter failed`},
		{"source reader error", func(env *stream.Environment) {
			stream.Collect(stream.FromSource[int64](env, failingSource{}, "broken"))
		}, `source "broken" (1/1): read failed at offset 7`},
		{"sink writer error", func(env *stream.Environment) {
			stream.SinkTo[int64](stream.FromSlice(env, []int64{1}), failingSink{}, "bad-sink")
		}, `sink "bad-sink" (1/1): disk full`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, 1)
			c.build(env)
			err := env.Execute(context.Background(), "attr")
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err = %v, want prefix %q", err, c.want)
			}
		})
	}
}

func TestPanickedErrorIsUnwrappable(t *testing.T) {
	sentinel := errors.New("sentinel")
	env := newEnv(t, 1)
	stream.Collect(stream.Map(stream.FromSlice(env, []int64{1}), func(int64) int64 { panic(sentinel) }))
	if err := env.Execute(context.Background(), "unwrap"); !errors.Is(err, sentinel) {
		t.Fatalf("err = %v does not wrap the panicked error", err)
	}
}

type failingSource struct{}

func (failingSource) Boundedness() connector.Boundedness { return connector.Bounded }
func (failingSource) Splits(context.Context, int) ([]connector.Split, error) {
	return nil, nil
}
func (failingSource) NewReader(context.Context, connector.SplitContext) (connector.SplitReader[int64], error) {
	return failingReader{}, nil
}

type failingReader struct{}

func (failingReader) AddSplits([]connector.Split) error { return nil }
func (failingReader) Poll(context.Context, connector.Output[int64]) (connector.ReadStatus, error) {
	return 0, errors.New("read failed at offset 7")
}
func (failingReader) Snapshot() ([]connector.Split, error) { return nil, nil }
func (failingReader) Close() error                         { return nil }

type failingSink struct{}

func (failingSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[int64], error) {
	return failingWriter{}, nil
}

type failingWriter struct{}

func (failingWriter) Write(int64, int64) error { return errors.New("disk full") }
func (failingWriter) Flush() error             { return nil }
func (failingWriter) Close() error             { return nil }

// unbounded is an endless generator of n -> n.
func unbounded(env *stream.Environment) *stream.Stream[int64] {
	return stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 { return i }}, "endless")
}

func TestCancellationStopsEveryGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	env := newEnv(t, 3)
	m := stream.Map(unbounded(env), func(v int64) int64 { return v + 1 })
	stream.Collect(stream.KeyBy(m, func(v int64) int64 { return v % 10 }).Reduce(func(a, b int64) int64 { return b }).Filter(func(int64) bool { return false }))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	err := env.Execute(ctx, "cancel")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancellation took %v", d)
	}
}

func TestFailureInOneTaskCancelsTheOthers(t *testing.T) {
	defer goleak.VerifyNone(t)
	env := newEnv(t, 2)
	// An endless source and a failing operator downstream of a network
	// edge: the failure must stop the source, which would never end.
	m := stream.Map(unbounded(env).Rebalance(), func(v int64) int64 {
		if v == 5000 {
			panic("stop")
		}
		return v
	}).Name("fail-at-5000")
	stream.Collect(m.Filter(func(int64) bool { return false }))
	done := make(chan error, 1)
	go func() { done <- env.Execute(context.Background(), "fail") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), `map "fail-at-5000"`) || !strings.Contains(err.Error(), "panic: stop") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("job did not fail within 10s")
	}
}

func TestBackpressureBoundsBufferedRecords(t *testing.T) {
	defer goleak.VerifyNone(t)
	const bufferRecords, perChannel, floating = 64, 2, 2
	env := newEnv(t, 1,
		"taskmanager.network.buffer-records", "64",
		"taskmanager.network.memory.buffers-per-channel", "2",
		"taskmanager.network.memory.floating-buffers-per-gate", "2")
	// A fast endless source feeding a slow sink through a network edge.
	payload := strings.Repeat("x", 1024)
	big := stream.Map(unbounded(env), func(v int64) string { return payload })
	slow := stream.Map(big.Rebalance(), func(s string) int { time.Sleep(50 * time.Microsecond); return len(s) }).Name("slow")
	stream.Collect(slow.Filter(func(int) bool { return false }))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "backpressure")
	if err != nil {
		t.Fatal(err)
	}
	// One input channel: at most exclusive + floating buffers in flight.
	bound := int64((perChannel + floating) * bufferRecords)
	var maxBuffered, slowIn, srcOut int64
	var heapStart, heapMax uint64
	var ms runtime.MemStats
	deadline := time.Now().Add(1500 * time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		time.Sleep(20 * time.Millisecond)
		for _, m := range job.Metrics() {
			maxBuffered = max(maxBuffered, m.BufferedIn)
			if strings.HasPrefix(m.Task, "slow") {
				slowIn = m.RecordsIn
			} else {
				srcOut = m.RecordsOut
			}
		}
		runtime.ReadMemStats(&ms)
		if i == 5 {
			heapStart = ms.HeapAlloc
		}
		heapMax = max(heapMax, ms.HeapAlloc)
	}
	job.Cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if maxBuffered == 0 || maxBuffered > bound {
		t.Fatalf("buffered records peaked at %d, bound is %d", maxBuffered, bound)
	}
	// The source cannot run ahead of the slow consumer by more than what
	// the credits allow plus one buffer being filled.
	if ahead := srcOut - slowIn; ahead > bound+bufferRecords {
		t.Fatalf("source is %d records ahead of the consumer (bound %d)", ahead, bound+bufferRecords)
	}
	if heapMax > heapStart+64<<20 {
		t.Fatalf("heap grew from %d to %d bytes under backpressure", heapStart, heapMax)
	}
	t.Logf("peak buffered %d (bound %d), source out %d, consumer in %d, heap %d..%d KiB", maxBuffered, bound, srcOut, slowIn, heapStart>>10, heapMax>>10)
}

func TestSlowStreamIsFlushedByTheBufferTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	env := newEnv(t, 1, "execution.buffer-timeout", "20 ms")
	// One record every 10 ms: buffers never fill, so only the timeout
	// can move records downstream.
	slowSrc := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 { time.Sleep(10 * time.Millisecond); return i }}, "trickle")
	seen := make(chan time.Time, 100)
	stream.Collect(stream.Map(slowSrc.Rebalance(), func(v int64) int64 {
		select {
		case seen <- time.Now():
		default:
		}
		return v
	}).Filter(func(int64) bool { return false }))
	ctx, cancel := context.WithCancel(context.Background())
	job, err := env.ExecuteAsync(ctx, "trickle")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(2 * time.Second):
		t.Fatal("no record crossed the network edge within 2s")
	}
	cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
