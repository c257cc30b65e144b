// KafkaWordCount reads lines of text from a Kafka topic, counts their
// words as the streaming WordCount does, and writes for every occurrence
// a record with key `word` and value `word n`, the running count, to
// another topic: exactly once by default, through Kafka transactions that
// commit with the job's checkpoints.
//
//	go run ./examples/kafkawordcount --brokers localhost:9092 \
//	    --input-topic lines --output-topic counts \
//	    --checkpoint-interval 1s --checkpoint-dir /tmp/chk
//
// With --bounded it stops at the offsets that were the latest when the job
// first started, also after it resumed from a checkpoint with
// --from-savepoint. Ctrl-C keeps the checkpoints, to resume from.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector/kafka"
	"github.com/weirproject/weir/examples/wordcount/wc"
	"github.com/weirproject/weir/stream"
)

func main() {
	brokers := flag.String("brokers", "", "Kafka brokers, `HOST:PORT[,...]`")
	input := flag.String("input-topic", "", "`topic` to read lines of text from")
	output := flag.String("output-topic", "", "`topic` to write the running counts to")
	group := flag.String("group-id", "kafkawordcount", "consumer `group` the read offsets are committed to on every checkpoint (for monitoring), and read by --starting-offsets committed")
	starting := flag.String("starting-offsets", "earliest", "where the first run starts reading: `earliest`, latest or committed")
	bounded := flag.Bool("bounded", false, "stop at the offsets that are the latest when the job first starts")
	delivery := flag.String("delivery", "exactly-once", "output guarantee: `mode` exactly-once, at-least-once or none")
	rate := flag.Float64("rate", 0, "read at most `N` lines a second (0: as fast as possible)")
	env := stream.NewEnvironment()

	if *brokers == "" || *input == "" || *output == "" {
		fail(2, fmt.Errorf("--brokers, --input-topic and --output-topic are required"))
	}
	start, err := kafka.ParseStartingOffsets(*starting)
	if err != nil || strings.HasPrefix(*starting, "timestamp:") {
		fail(2, fmt.Errorf("invalid value %q for flag --starting-offsets: want earliest, latest or committed", *starting))
	}
	del, err := kafka.ParseDelivery(*delivery)
	if err != nil {
		fail(2, fmt.Errorf("invalid value %q for flag --delivery: want exactly-once, at-least-once or none", *delivery))
	}
	if *rate < 0 {
		fail(2, fmt.Errorf("invalid value %v for flag --rate: want lines a second > 0, or 0 for no limit", *rate))
	}
	// Running counts are what this job is about, and checkpoints are what
	// commit its transactions: streaming execution, bounded input or not.
	env.SetRuntimeMode(stream.Streaming)
	if m := config.RuntimeMode.Get(env.Config()); m != string(stream.Streaming) {
		fail(2, fmt.Errorf("kafkawordcount runs in streaming mode; it conflicts with %s=%s", config.RuntimeMode.Key, m))
	}
	if !env.Config().IsSet(config.ExternalizedRetention.Key) {
		config.ExternalizedRetention.Set(env.Config(), config.RetentionRetainOnCancellation)
	}
	interval := config.CheckpointInterval.Get(env.Config())
	if del == kafka.ExactlyOnce && interval <= 0 {
		fail(2, fmt.Errorf("--delivery exactly-once commits with checkpoints: set --checkpoint-interval"))
	}

	srcOpts := kafka.SourceOptions{Brokers: strings.Split(*brokers, ","), Topics: []string{*input}, GroupID: *group, Start: start}
	if *bounded {
		srcOpts.Stop = kafka.StopAtLatest()
	}
	if *rate > 0 {
		// The throttle sleeps inside the source's poll: polls of about
		// 20 ms of lines let checkpoint barriers through in between.
		srcOpts.MaxPollRecords = max(1, int(*rate/50))
	}
	src, err := kafka.NewSource(srcOpts, kafka.String)
	if err != nil {
		fail(2, err)
	}
	sink, err := kafka.NewSink(kafka.SinkOptions{
		Brokers:  strings.Split(*brokers, ","),
		Topic:    *output,
		Delivery: del,
		// The same on every run of this job, so that a resumed run finds
		// and aborts what a failed one left open.
		TransactionalIDPrefix: "kafkawordcount-" + *output,
		CheckpointInterval:    interval,
	}, func(c wc.WordCount, r *kafka.Record) error {
		r.Key = []byte(c.Word)
		r.Value = strconv.AppendInt(append([]byte(c.Word), ' '), c.Count, 10)
		return nil
	})
	if err != nil {
		fail(2, err)
	}

	lines := stream.FromSource[string](env, src, "kafka").UID("kafka-source")
	if *rate > 0 {
		lines = stream.Process(lines, stream.ProcessFunction[string, string](&throttle{rate: *rate})).Name("throttle").UID("throttle")
	}
	counts := wc.Build(lines)
	counts.UID("count")
	stream.SinkTo(counts, sink, "kafka").UID("kafka-sink")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "kafkawordcount"); err != nil {
		fail(1, err)
	}
}

// throttle passes lines on at no more than rate a second for the job, as
// examples/wordcount's does.
type throttle struct {
	rate  float64
	every time.Duration
	start time.Time
	n     int64
}

func (t *throttle) Open(ctx *stream.Context) error {
	t.every = time.Duration(float64(time.Second) * float64(ctx.Parallelism()) / t.rate)
	t.start, t.n = time.Now(), 0
	return nil
}

func (t *throttle) ProcessElement(line string, _ *stream.Context, out stream.Collector[string]) error {
	t.n++
	if ahead := time.Duration(t.n)*t.every - time.Since(t.start); ahead > time.Millisecond {
		time.Sleep(ahead)
	}
	out.Collect(line)
	return nil
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "kafkawordcount:", err)
	os.Exit(code)
}
