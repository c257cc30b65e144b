// WordCount counts the words of a text file (or of a small embedded text)
// on the local mini cluster and prints "word count" lines.
//
//	go run ./examples/wordcount --input FILE [--output DIR] [--parallelism N]
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/examples/wordcount/wc"
	"github.com/weirproject/weir/stream"
)

//go:embed sample.txt
var sample string

func main() {
	input := flag.String("input", "", "text `file` or directory to count (default: an embedded sample)")
	output := flag.String("output", "", "write the counts to part files under `dir` instead of stdout")
	env := stream.NewEnvironment()
	// The counts are final only when the input has ended: run bounded
	// inputs in batch mode unless the configuration says otherwise.
	env.SetRuntimeMode(stream.Automatic)

	var lines *stream.Stream[string]
	if *input != "" {
		lines = stream.FromSource(env, file.Lines(*input), "lines")
	} else {
		lines = stream.FromSlice(env, strings.Split(sample, "\n")).Name("sample")
	}
	counts := wc.Build(lines)
	if *output != "" {
		stream.SinkTo(counts, file.Text[wc.WordCount](*output, nil), "files")
	} else {
		stream.Print(counts)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "wordcount"); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}
