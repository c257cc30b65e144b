// WordCount counts the words of a text file or directory (or of a small
// embedded text) on the local mini cluster, or on a cluster with
// weir run, and prints "word count" lines.
//
//	go run ./examples/wordcount --input FILE [--output DIR] [--parallelism N]
//	    [--count-parallelism N] [--rate LINES_PER_SECOND]
//
// With --mode streaming it emits the running count of a word after every
// occurrence instead of the final counts, takes checkpoints when asked to
// (--checkpoint-interval, --checkpoint-dir; the run prints its JobID and
// checkpoint directory on standard error) and resumes from one with
// --from-savepoint (Ctrl-C keeps the checkpoints too); with --output its
// committed part files then hold every running count exactly once, however
// often the job failed and resumed:
//
//	go run ./examples/wordcount --mode streaming --input FILE --output DIR \
//	    --checkpoint-interval 1s --checkpoint-dir /tmp/chk
//	go run ./examples/wordcount --mode streaming --input FILE --output DIR \
//	    --checkpoint-interval 1s --checkpoint-dir /tmp/chk --from-savepoint /tmp/chk/<job-id>/chk-<n>
//
// --rate caps the lines read a second, to watch a streaming run or stop
// it midway; --count-parallelism runs the keyed count and the sink at
// another parallelism than the source and tokenizer.
//
// With --sink jdbc it writes to a MySQL or MariaDB table instead, which it
// creates if it is missing: --jdbc-mode upsert keeps the latest count of
// every word, (word PRIMARY KEY, count); --jdbc-mode exactly-once appends
// a row (word, n) for every occurrence, through XA transactions committed
// with the checkpoints:
//
//	go run ./examples/wordcount --mode streaming --input FILE --sink jdbc \
//	    --jdbc-url 'user:pass@tcp(127.0.0.1:3306)/db' --jdbc-table words \
//	    --jdbc-mode exactly-once --checkpoint-interval 1s --checkpoint-dir /tmp/chk
//
// With --monitor-interval D it keeps watching --input (a file or a
// directory) and counts every file that appears in it, listing it every D,
// in streaming mode until stopped; checkpoints remember which files were
// read and how far, so each counts exactly once across restarts:
//
//	go run ./examples/wordcount --input DIR --monitor-interval 1s --output OUT \
//	    --checkpoint-interval 1s --checkpoint-dir /tmp/chk
//
// With --socket it counts the lines a TCP server sends, as Flink's
// SocketWindowWordCount does (start the server first with `nc -lk 9999`);
// it runs in streaming mode until Ctrl-C, and the socket is at-most-once:
//
//	go run ./examples/wordcount --socket localhost:9999
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/connector/jdbc"
	"github.com/weirproject/weir/connector/socket"
	"github.com/weirproject/weir/examples/wordcount/wc"
	"github.com/weirproject/weir/stream"
)

//go:embed sample.txt
var sample string

func main() {
	input := flag.String("input", "", "text `file` or directory to count (default: an embedded sample)")
	output := flag.String("output", "", "write the counts to part files under `dir` instead of stdout")
	mode := flag.String("mode", "batch", "`mode` batch (the final count of every word) or streaming (the running count after every occurrence)")
	rate := flag.Float64("rate", 0, "read at most `N` input lines a second (0: as fast as possible), to watch a streaming run or stop it midway")
	monitor := flag.Duration("monitor-interval", 0, "with --input: keep watching the file or directory for new files, listing it every `interval` (streaming, until stopped; each file is read once, exactly once across restarts)")
	socketAddr := flag.String("socket", "", "count the lines that the TCP server at `HOST:PORT` sends (streaming, until stopped; at-most-once)")
	countParallelism := flag.Int("count-parallelism", 0, "run the keyed count and the sink with `N` subtasks (0: the job's parallelism, -p)")
	sinkKind := flag.String("sink", "", "`sink` jdbc to write to MySQL/MariaDB (default: files with --output, else stdout)")
	jdbcURL := flag.String("jdbc-url", "", "with --sink jdbc: the server and database, go-sql-driver `DSN` user:pass@tcp(host:port)/db")
	jdbcTable := flag.String("jdbc-table", "", "with --sink jdbc: the `table`, created if missing")
	jdbcMode := flag.String("jdbc-mode", "upsert", "with --sink jdbc: `mode` upsert (the latest count of each word) or exactly-once (a row (word, n) per occurrence, through XA transactions)")
	jdbcSinkID := flag.String("jdbc-sink-id", "", "with --jdbc-mode exactly-once: the `name` of the job's transactions, the same when it resumes (default: wordcount/<table>)")
	env := stream.NewEnvironment()
	modeSet := false
	flag.Visit(func(f *flag.Flag) { modeSet = modeSet || f.Name == "mode" })
	if *socketAddr != "" {
		// A socket never ends: only streaming mode emits its counts.
		switch {
		case *input != "":
			fail(2, fmt.Errorf("--socket and --input exclude each other"))
		case modeSet && *mode != "streaming":
			fail(2, fmt.Errorf("--socket needs --mode streaming: a socket never ends"))
		}
		*mode = "streaming"
	}
	if *monitor < 0 {
		fail(2, fmt.Errorf("invalid value %v for flag --monitor-interval: want an interval > 0, or 0 to read the input once", *monitor))
	}
	if *monitor > 0 {
		// A watched directory never ends either.
		switch {
		case *input == "":
			fail(2, fmt.Errorf("--monitor-interval needs --input, the file or directory to watch"))
		case modeSet && *mode != "streaming":
			fail(2, fmt.Errorf("--monitor-interval needs --mode streaming: a watched directory never ends"))
		}
		*mode = "streaming"
	}
	switch *mode {
	case "batch":
		// The counts are final only when the input has ended: run bounded
		// inputs in batch mode unless the configuration says otherwise.
		env.SetRuntimeMode(stream.Automatic)
	case "streaming":
		// Batch execution would hold every count back until the end and
		// take no checkpoints, which is what streaming mode is for.
		env.SetRuntimeMode(stream.Streaming)
		if m := config.RuntimeMode.Get(env.Config()); m != string(stream.Streaming) {
			fail(2, fmt.Errorf("--mode streaming conflicts with %s=%s", config.RuntimeMode.Key, m))
		}
		// Stopping a run with Ctrl-C keeps its checkpoints, to resume
		// from, as a crash would.
		if !env.Config().IsSet(config.ExternalizedRetention.Key) {
			config.ExternalizedRetention.Set(env.Config(), config.RetentionRetainOnCancellation)
		}
	default:
		fail(2, fmt.Errorf("invalid value %q for flag --mode: want batch or streaming", *mode))
	}

	var lines *stream.Stream[string]
	if *socketAddr != "" {
		// One connection: more subtasks would have nothing to read.
		lines = stream.FromSource[string](env, socket.Lines(*socketAddr), "socket").SetParallelism(1)
	} else if *input != "" && *monitor > 0 {
		lines = stream.FromSource[string](env, file.Source[string](file.TextLines{}, *input).MonitorInterval(*monitor), "lines")
	} else if *input != "" {
		lines = stream.FromSource(env, file.Lines(*input), "lines")
	} else {
		lines = stream.FromSlice(env, strings.Split(sample, "\n")).Name("sample")
	}
	if *rate < 0 {
		fail(2, fmt.Errorf("invalid value %v for flag --rate: want lines a second > 0, or 0 for no limit", *rate))
	}
	source := lines
	if *rate > 0 {
		lines = stream.Process(lines, stream.ProcessFunction[string, string](&throttle{rate: *rate})).Name("throttle").UID("throttle")
	}
	counts := wc.Build(lines)
	if *countParallelism < 0 {
		fail(2, fmt.Errorf("invalid value %d for flag --count-parallelism: want subtasks > 0, or 0 for the job's parallelism", *countParallelism))
	}
	var sink *stream.Sink
	switch *sinkKind {
	case "", "jdbc":
	default:
		fail(2, fmt.Errorf("invalid value %q for flag --sink: want jdbc, or none for files or stdout", *sinkKind))
	}
	if *sinkKind == "jdbc" {
		if *output != "" {
			fail(2, errors.New("--sink jdbc and --output exclude each other"))
		}
		js, err := jdbcSink(*jdbcURL, *jdbcTable, *jdbcMode, *jdbcSinkID)
		if err != nil {
			fail(2, err)
		}
		sink = stream.SinkTo(counts, js, "jdbc")
	} else if *output != "" {
		// The text sink commits its files with the checkpoints, so that
		// the committed output is exactly once.
		sink = stream.SinkTo(counts, file.Text[wc.WordCount](*output, nil), "files")
	} else {
		sink = stream.Print(counts)
	}
	if *countParallelism > 0 {
		counts.SetParallelism(*countParallelism)
		sink.SetParallelism(*countParallelism)
	}
	if *mode == "streaming" {
		// A run resumed with --from-savepoint finds the state of the
		// source position, the counts and the sink's transactions by
		// these UIDs, which do not change when the job does.
		source.UID("lines")
		counts.UID("count")
		sink.UID("out")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "wordcount"); err != nil {
		fail(1, err)
	}
}

// jdbcSink creates the table if it is missing and returns the sink. The
// words are binary strings to the database (utf8mb4_bin), so that words
// that differ only in case or accents stay distinct keys.
func jdbcSink(dsn, table, mode, sinkID string) (connector.Sink[wc.WordCount], error) {
	if dsn == "" || table == "" {
		return nil, errors.New("--sink jdbc needs --jdbc-url and --jdbc-table")
	}
	opts := jdbc.SinkOptions{DSN: dsn, Table: table}
	var ddl string
	var row func(wc.WordCount) []any
	const word = "word VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
	switch mode {
	case "upsert":
		ddl = "(" + word + " PRIMARY KEY, count BIGINT NOT NULL) ENGINE=InnoDB"
		opts.Columns, opts.Key = []string{"word", "count"}, []string{"word"}
		row = func(w wc.WordCount) []any { return []any{w.Word, w.Count} }
	case "exactly-once":
		ddl = "(id BIGINT AUTO_INCREMENT PRIMARY KEY, " + word + ", n BIGINT NOT NULL) ENGINE=InnoDB"
		opts.Columns = []string{"word", "n"}
		opts.ExactlyOnce = true
		opts.SinkID = sinkID
		if opts.SinkID == "" {
			opts.SinkID = "wordcount/" + table
		}
		row = func(w wc.WordCount) []any { return []any{w.Word, w.Count} }
	default:
		return nil, fmt.Errorf("invalid value %q for flag --jdbc-mode: want upsert or exactly-once", mode)
	}
	sink, err := jdbc.NewSink(opts, row)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := jdbc.Exec(ctx, dsn, "CREATE TABLE IF NOT EXISTS "+jdbc.QuoteTable(table)+" "+ddl); err != nil {
		return nil, fmt.Errorf("create table %s: %w", table, err)
	}
	return sink, nil
}

// throttle passes lines on at no more than rate a second for the job,
// rate/parallelism for each subtask. It chains with the source, so it
// slows the reading itself; it sleeps between records, where the source
// task still handles checkpoint barriers between its polls.
type throttle struct {
	rate  float64
	every time.Duration // per line, for this subtask
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
	// Sleeping per line would cost a timer wake-up for every line at high
	// rates; sleeping only once ahead by a millisecond keeps the average.
	if ahead := time.Duration(t.n)*t.every - time.Since(t.start); ahead > time.Millisecond {
		time.Sleep(ahead)
	}
	out.Collect(line)
	return nil
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "wordcount:", err)
	os.Exit(code)
}
