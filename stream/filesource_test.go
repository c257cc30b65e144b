package stream_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
)

// TestFileSourceYieldsToCheckpoints: the file source hands its lines to
// the chained operators inside a Poll, and a checkpoint's trigger waits
// for the Poll to end. With 5 ms of work per line, a Poll of its 256-line
// bound took over a second, so a 200-line file saw no checkpoint at
// all; with its time bound checkpoints complete while it reads.
func TestFileSourceYieldsToCheckpoints(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.txt")
	var text strings.Builder
	for i := range 200 {
		fmt.Fprintf(&text, "line %d\n", i)
	}
	if err := os.WriteFile(input, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, 1, "execution.checkpointing.interval", "20 ms", "execution.runtime-mode", "STREAMING")
	lines := stream.FromSource(env, file.Lines(input), "lines")
	slow := stream.Map(lines, func(s string) string { time.Sleep(5 * time.Millisecond); return s })
	got := stream.Collect(slow)
	job, err := env.ExecuteAsync(context.Background(), "slow-chain")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(got.Values()); n != 200 {
		t.Fatalf("committed %d lines, want 200", n)
	}
	if c := job.CompletedCheckpoints(); c < 10 {
		t.Fatalf("%d checkpoints completed while the source read for about a second, want at least 10", c)
	}
}
