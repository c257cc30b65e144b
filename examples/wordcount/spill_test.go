//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirproject/weir/connector/file"
)

// TestBatchWordCountLargerThanMemory counts 3 million distinct words
// (each twice, 54 MB of text) under a managed-memory budget of 8 MiB, a
// seventh of the input: the counts are right, and the process's peak
// resident memory (the kernel's, from wait4) stays under the budget plus
// 192 MiB of overhead (the Go runtime, the exchange's buffers, the lines
// that the words held in memory still point into, the garbage collector's
// headroom, which grows when other processes keep the collector from
// running: 110 MiB alone, up to 160 MiB beside other test binaries), and
// under half of what the same run takes without a budget
// that binds.
func TestBatchWordCountLargerThanMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and counts 54 MB of text")
	}
	bin := buildExample(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "words.txt")
	const distinct = 3_000_000
	words := make([]int32, 0, 2*distinct)
	for i := range int32(distinct) {
		words = append(words, i, i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	f, err := os.Create(input)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i, n := range words {
		sep := " "
		if i%10 == 9 {
			sep = "\n"
		}
		fmt.Fprintf(w, "w%07d%s", n, sep)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	run := func(budget string) int64 {
		t.Helper()
		out := filepath.Join(dir, "out-"+budget)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-p", "1", "--input", input, "--output", out, "-D", "taskmanager.memory.managed.size="+budget, "-D", "io.tmp.dirs="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("budget %s: %v\n%s", budget, err, stderr.String())
		}
		lines, err := file.ReadLines(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != distinct {
			t.Fatalf("budget %s: %d words, want %d", budget, len(lines), distinct)
		}
		for _, l := range lines {
			if !strings.HasSuffix(l, " 2") || len(l) != len("w0000000 2") {
				t.Fatalf("budget %s: output line %q, want \"wNNNNNNN 2\"", budget, l)
			}
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	}
	const budget, overhead = 8 << 20, 192 << 20
	spilled := run("8m")
	unbounded := run("2g")
	t.Logf("peak RSS: %d MiB under an 8 MiB budget, %d MiB without spilling", spilled>>20, unbounded>>20)
	if spilled > budget+overhead {
		t.Errorf("peak RSS %d MiB, want at most the budget (8 MiB) + 192 MiB", spilled>>20)
	}
	if spilled > unbounded/2 {
		t.Errorf("peak RSS %d MiB with spilling, %d MiB without: want less than half", spilled>>20, unbounded>>20)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "weir-spill-*")); len(left) > 0 {
		t.Errorf("spill files left: %v", left)
	}
}
