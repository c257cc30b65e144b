//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/connector/file"
)

// TestJoinLargerThanMemory joins 1.5 million orders (their encoding alone
// over 6 times the 8 MiB budget) with 100,100 customer records in batch
// mode, by sort-merge with spilled runs, and in streaming mode, by keyed
// state: both outputs equal the reference, and the batch process's peak
// resident memory (the kernel's, from wait4) stays under the budget plus
// 128 MiB of overhead (the Go runtime and its collector's headroom, the
// exchange's buffers, the generators) and under that of the streaming
// run, which holds both tables in state.
func TestJoinLargerThanMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("joins 1.5 million orders twice")
	}
	const orders, customers = 1_500_000, 100_000
	const budget, overhead = 8 << 20, 128 << 20
	oc, err := codec.For[Order]()
	if err != nil {
		t.Fatal(err)
	}
	gen := Orders(orders, customers)
	var encoded int
	var buf []byte
	for i := range int64(orders) {
		encoded += len(oc.Append(buf[:0], gen(i)))
	}
	if encoded < 4*budget {
		t.Fatalf("the orders encode to %d bytes, less than 4 times the budget", encoded)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "join")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(mode string) int64 {
		t.Helper()
		out := filepath.Join(dir, "out-"+mode)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "--mode", mode, "--orders", "1500000", "--customers", "100000", "-p", "2",
			"--output", out, "-D", "taskmanager.memory.managed.size=8m", "-D", "io.tmp.dirs="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, stderr.String())
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	}
	// The runs come before the reference: a child's peak resident memory
	// starts from its parent's, which it shares until it executes.
	batch := run("batch")
	streaming := run("streaming")
	byID := make(map[int64][]Customer)
	cgen := Customers(customers)
	for i := range int64(customers + customers/1000) {
		c := cgen(i)
		byID[c.ID] = append(byID[c.ID], c)
	}
	var want []string
	for i := range int64(orders) {
		o := gen(i)
		for _, c := range byID[o.Customer] {
			want = append(want, Line(o, c))
		}
	}
	slices.Sort(want)

	for _, mode := range []string{"batch", "streaming"} {
		got, err := file.ReadLines(filepath.Join(dir, "out-"+mode))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d lines, want %d (or they differ)", mode, len(got), len(want))
		}
	}
	t.Logf("peak RSS: batch %d MiB under an 8 MiB budget, streaming %d MiB; orders encode to %d MiB", batch>>20, streaming>>20, encoded>>20)
	if batch > budget+overhead {
		t.Errorf("batch peak RSS %d MiB, want at most the budget (8 MiB) + 128 MiB", batch>>20)
	}
	if batch >= streaming {
		t.Errorf("batch peak RSS %d MiB, streaming %d MiB: want batch below", batch>>20, streaming>>20)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "weir-*")); len(left) > 0 {
		t.Errorf("working files left: %v", left)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
}
