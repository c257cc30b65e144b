// Command codecheckpoint is the job of the checkpoint configuration test:
// it enables checkpointing in its code, not with -D options or flags, as
// Flink programs call env.enableCheckpointing, and runs until cancelled: a
// paced generator, a keyed running count (state to checkpoint) and a sink
// that drops what it gets. --chk-dir is where its checkpoints go.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/stream"
)

func main() {
	dir := flag.String("chk-dir", "", "checkpoint directory (state.checkpoints.dir)")
	env := stream.NewEnvironment()
	cfg := env.Config()
	config.CheckpointInterval.Set(cfg, 200*time.Millisecond)
	config.CheckpointMode.Set(cfg, config.CheckpointModeAtLeastOnce)
	config.CheckpointMinPause.Set(cfg, 50*time.Millisecond)
	config.TolerableCheckpointFailures.Set(cfg, 2)
	config.ExternalizedRetention.Set(cfg, config.RetentionRetainOnCancellation)
	if *dir != "" {
		config.CheckpointsDir.Set(cfg, "file://"+*dir)
	}
	numbers := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Rate: 500, Fn: func(i int64) int64 { return i }}, "numbers")
	counts := stream.KeyBy(numbers, func(i int64) int64 { return i % 16 }).Reduce(func(a, b int64) int64 { return a + 1 }).Name("count")
	stream.SinkTo[int64](counts, dropSink{}, "drop")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "code-checkpoint"); err != nil {
		fmt.Fprintln(os.Stderr, "codecheckpoint:", err)
		os.Exit(1)
	}
}

type dropSink struct{}

func (dropSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[int64], error) {
	return dropWriter{}, nil
}

type dropWriter struct{}

func (dropWriter) Write(int64, int64) error { return nil }
func (dropWriter) Flush() error             { return nil }
func (dropWriter) Close() error             { return nil }
