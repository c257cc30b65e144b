// Command kafka measures the Kafka connector's throughput against plain
// franz-go loops on the same in-process cluster (kfake, one broker):
//
//	go run ./bench/kafka [--records 500000] [--size 100] [--partitions 3] [--runs 5]
//
// source: a weir job (Kafka source, bounded at the latest offsets → a sink
// that only counts) against a franz-go consumer loop reading the same
// topic. sink: a weir job (generator → Kafka sink) with each delivery
// guarantee against a franz-go producer loop (Produce, then Flush). The
// cluster runs in this process and takes CPU too, the same for both
// sides. Each figure is the median and min–max of --runs runs, by the
// clock and per core (CPU time).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/kafka"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/stream"
)

var (
	records    = flag.Int("records", 500_000, "records per run")
	size       = flag.Int("size", 100, "value size in bytes")
	partitions = flag.Int("partitions", 3, "partitions of every topic")
	runs       = flag.Int("runs", 5, "timed runs per case (the median and min–max are reported)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kafka bench:", err)
		os.Exit(1)
	}
}

type result struct {
	name     string
	baseline int // index of the loop this case is compared with
	wall     []float64
	cpu      []float64
}

func run() error {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(*partitions), kfake.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	value := []byte(strings.Repeat("x", *size))
	type benchCase struct {
		result
		run func(i int) error
	}
	// Every run goes through all cases in this order, so that a loop and
	// the weir cases compared with it meet the same moment of a shared
	// machine; the producer loop writes the source cases' input.
	cases := []*benchCase{{result: result{name: "sink: franz-go producer loop", baseline: 0}, run: func(i int) error {
		return produceLoop(brokers, fmt.Sprintf("in-%d", i), value)
	}}}
	for _, d := range []kafka.Delivery{kafka.None, kafka.AtLeastOnce, kafka.ExactlyOnce} {
		cases = append(cases, &benchCase{result: result{name: "sink: weir " + d.String(), baseline: 0}, run: func(i int) error {
			return sinkJob(brokers, fmt.Sprintf("out-%s-%d", d, i), d, value)
		}})
	}
	cases = append(cases,
		&benchCase{result: result{name: "source: franz-go consumer loop", baseline: 4}, run: func(i int) error {
			return consumeLoop(brokers, fmt.Sprintf("in-%d", i))
		}},
		&benchCase{result: result{name: "source: weir (read_committed)", baseline: 4}, run: func(i int) error {
			return sourceJob(brokers, fmt.Sprintf("in-%d", i))
		}})
	for i := range *runs {
		for _, bc := range cases {
			runtime.GC()
			start, cpu := time.Now(), benchstat.ProcessCPU()
			if err := bc.run(i); err != nil {
				return fmt.Errorf("%s: %w", bc.name, err)
			}
			bc.wall = append(bc.wall, time.Since(start).Seconds())
			bc.cpu = append(bc.cpu, (benchstat.ProcessCPU() - cpu).Seconds())
		}
	}

	fmt.Printf("%d records of %d bytes, %d partitions, parallelism 1; median (min–max) of %d runs, cases alternating.\n", *records, *size, *partitions, *runs)
	fmt.Printf("CPU time is this process's, the in-process broker's included, for both sides.\n\n")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tk records/s\tMB/s\tCPU s\tratio to loop\tper core\t")
	n := float64(*records)
	for _, bc := range cases {
		loop := cases[bc.baseline]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", bc.name,
			benchstat.Of(benchstat.Scale(n/1e3, bc.wall)).Format("%.0f"),
			benchstat.Of(benchstat.Scale(n*float64(*size)/1e6, bc.wall)).Format("%.1f"),
			benchstat.Of(bc.cpu).Format("%.2f"),
			benchstat.Of(benchstat.Ratios(loop.wall, bc.wall)), benchstat.Of(benchstat.Ratios(loop.cpu, bc.cpu)))
	}
	return tw.Flush()
}

func produceLoop(brokers []string, topic string, value []byte) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	for range *records {
		cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		return err
	}
	if e := failed.Load(); e != nil {
		return *e
	}
	return nil
}

func consumeLoop(brokers []string, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	n := 0
	for n < *records {
		fs := cl.PollFetches(context.Background())
		if err := fs.Err0(); err != nil {
			return err
		}
		fs.EachRecord(func(*kgo.Record) { n++ })
	}
	return nil
}

func newEnv(interval time.Duration) *stream.Environment {
	cfg := config.New()
	config.Parallelism.Set(cfg, 1)
	if interval > 0 {
		config.CheckpointInterval.Set(cfg, interval)
	}
	return stream.NewEnvironmentWithConfig(cfg)
}

func sinkJob(brokers []string, topic string, d kafka.Delivery, value []byte) error {
	env := newEnv(time.Second)
	sink, err := kafka.NewSink(kafka.SinkOptions{Brokers: brokers, Topic: topic, Delivery: d,
		TransactionalIDPrefix: "bench-" + topic, CheckpointInterval: time.Second,
		ClientOptions: []kgo.Opt{kgo.AllowAutoTopicCreation()}}, kafka.BytesValues)
	if err != nil {
		return err
	}
	gen := &stream.Generator[[]byte]{Count: int64(*records), Fn: func(int64) []byte { return value }}
	stream.SinkTo(stream.FromSource[[]byte](env, gen, "gen"), sink, "kafka")
	return env.Execute(context.Background(), "kafka-sink-bench")
}

func sourceJob(brokers []string, topic string) error {
	env := newEnv(0)
	src, err := kafka.NewSource(kafka.SourceOptions{Brokers: brokers, Topics: []string{topic}, Stop: kafka.StopAtLatest()}, kafka.Bytes)
	if err != nil {
		return err
	}
	var n atomic.Int64
	stream.SinkTo(stream.FromSource[[]byte](env, src, "kafka"), countSink{&n}, "count")
	if err := env.Execute(context.Background(), "kafka-source-bench"); err != nil {
		return err
	}
	if got := n.Load(); got != int64(*records) {
		return fmt.Errorf("read %d records, want %d", got, *records)
	}
	return nil
}

type countSink struct{ n *atomic.Int64 }

func (c countSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[[]byte], error) {
	return &countWriter{n: c.n}, nil
}

type countWriter struct {
	n     *atomic.Int64
	local int64
}

func (w *countWriter) Write([]byte, int64) error { w.local++; return nil }
func (w *countWriter) Flush() error              { w.n.Add(w.local); w.local = 0; return nil }
func (w *countWriter) Close() error              { return nil }
