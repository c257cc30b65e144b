package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/stream"
)

// The benchmarks run one job of b.N records, so ns/op is the cost of one
// record through the whole job (set-up amortized over b.N) and allocs/op
// the allocations per record. ns/record repeats ns/op under a name that
// says what an op is.
//
//	go test -run XXX -bench . -benchmem ./stream

type benchRecord struct {
	Key   int64
	Count int64
}

// discardSink counts what it receives and keeps nothing.
type discardSink[T any] struct{ n *int64 }

func (s discardSink[T]) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[T], error) {
	return &discardWriter[T]{n: s.n}, nil
}

type discardWriter[T any] struct {
	n     *int64
	count int64
}

func (w *discardWriter[T]) Write(T, int64) error { w.count++; return nil }
func (w *discardWriter[T]) Flush() error         { *w.n += w.count; w.count = 0; return nil }
func (w *discardWriter[T]) Close() error         { return nil }

func benchEnv(mode stream.RuntimeMode) *stream.Environment {
	cfg := config.New()
	config.Parallelism.Set(cfg, 1)
	return stream.NewEnvironmentWithConfig(cfg).SetRuntimeMode(mode)
}

func runBench(b *testing.B, env *stream.Environment, n *int64, want int64) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := env.Execute(context.Background(), b.Name()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if *n != want {
		b.Fatalf("sink received %d records, want %d", *n, want)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/record")
}

// BenchmarkMapFilterKeyBySum: Generator → Map → Filter → KeyBy → Sum →
// discarding sink at parallelism 1, in streaming mode so that Sum emits
// every update. Source, Map and Filter form one task; the KeyBy exchange
// passes buffers to the task of Sum and the sink.
func BenchmarkMapFilterKeyBySum(b *testing.B) {
	env := benchEnv(stream.Streaming)
	src := stream.FromSource(env, &stream.Generator[int64]{Count: int64(b.N), Fn: func(i int64) int64 { return i }}, "generator")
	recs := stream.Map(src, func(i int64) benchRecord { return benchRecord{Key: i & 1023, Count: 1} })
	kept := recs.Filter(func(r benchRecord) bool { return r.Key >= 0 }) // keeps every record
	sums := stream.Sum(stream.KeyBy(kept, func(r benchRecord) int64 { return r.Key }),
		func(r *benchRecord) *int64 { return &r.Count })
	var n int64
	stream.SinkTo(sums, discardSink[benchRecord]{&n}, "discard")
	runBench(b, env, &n, int64(b.N))
}

// BenchmarkChainedMap: Generator → Map → discarding sink, all chained in
// one task at parallelism 1: the pure cost of the source loop and two
// chained calls per record.
func BenchmarkChainedMap(b *testing.B) {
	env := benchEnv(stream.Streaming)
	src := stream.FromSource(env, &stream.Generator[int64]{Count: int64(b.N), Fn: func(i int64) int64 { return i }}, "generator")
	doubled := stream.Map(src, func(i int64) int64 { return 2 * i })
	var n int64
	stream.SinkTo(doubled, discardSink[int64]{&n}, "discard")
	runBench(b, env, &n, int64(b.N))
}
