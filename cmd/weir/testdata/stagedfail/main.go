// Command stagedfail is the job of the staged batch failover test: a
// generated bounded source, a keyed sum and a file sink, in batch mode.
// Each execution of a subtask leaves a mark file named
// <stage>-<subtask>-<attempt> in --marks, and with --fail-subtask S the
// first execution of the sums' subtask S fails after a few records.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
)

type keyed struct {
	Key   int64
	Value int64
}

func main() {
	output := flag.String("output", "", "directory of the committed sums")
	marks := flag.String("marks", "", "directory of the executions' mark files (none if empty)")
	records := flag.Int64("records", 200_000, "records the source emits")
	keys := flag.Int64("keys", 1000, "distinct keys")
	failSubtask := flag.Int("fail-subtask", -1, "the sums' subtask whose first execution fails (-1: none)")
	env := stream.NewEnvironment()
	// The functions are shared by the subtasks of this process.
	var mu sync.Mutex
	seenBy := make(map[string]int)
	mark := func(stage string) stream.ProcessFunc[keyed, keyed] {
		return func(v keyed, ctx *stream.Context, out stream.Collector[keyed]) error {
			name := fmt.Sprintf("%s-%d-%d", stage, ctx.Subtask(), ctx.Attempt())
			mu.Lock()
			seenBy[name]++
			seen := seenBy[name]
			mu.Unlock()
			if seen == 1 && *marks != "" {
				if err := os.WriteFile(filepath.Join(*marks, name), nil, 0o644); err != nil {
					return err
				}
			}
			out.Collect(v)
			if stage == "sums" && ctx.Subtask() == *failSubtask && ctx.Attempt() == 0 && seen == 10 {
				return errors.New("injected failure")
			}
			return nil
		}
	}
	n := *keys
	src := stream.FromSource[keyed](env, &stream.Generator[keyed]{Count: *records, Fn: func(i int64) keyed {
		return keyed{Key: (i * 7919) % n, Value: i%1000 - 100}
	}}, "numbers")
	seen := stream.Process(src, mark("source")).Name("source-marks")
	sums := stream.Sum(stream.KeyBy(seen, func(r keyed) int64 { return r.Key }), func(r *keyed) *int64 { return &r.Value })
	lines := stream.Map(stream.Process(sums, mark("sums")).Name("sums-marks"), func(r keyed) string { return fmt.Sprintf("%d=%d", r.Key, r.Value) })
	stream.SinkTo(lines, file.Text[string](*output, nil), "files")
	if err := env.Execute(context.Background(), "stagedfail"); err != nil {
		fmt.Fprintln(os.Stderr, "stagedfail:", err)
		os.Exit(1)
	}
}
