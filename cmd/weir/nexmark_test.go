package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/nexmark"
)

func TestNexmarkQ1(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := weir(t, "nexmark", "--query", "q1", "--events", "2000", "--baseline")
	if code != 0 {
		t.Fatalf("weir nexmark: exit status %d\nstderr:\n%s", code, stderr)
	}
	// 46 of every 50 events are bids, and q1 converts every bid.
	for _, want := range []string{"results      1840\n", "events/s per core", "max RSS", "engine/loop"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not contain %q:\n%s", want, stdout)
		}
	}
}

func TestNexmarkUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"nexmark"},
		{"nexmark", "--query", "q99"},
		{"nexmark", "--query", "q1", "--events", "-1"},
		{"nexmark", "--query", "q1", "--parallelism", "0"},
	} {
		_, stderr, code := weir(t, args...)
		if code != exitUsage {
			t.Errorf("weir %s: exit status %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, exitUsage, stderr)
		}
	}
}

func TestNexmarkGenerate(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "events.jsonl")
	_, stderr, code := weir(t, "nexmark", "generate", "--events", "100", "--output", out)
	if code != 0 {
		t.Fatalf("weir nexmark generate: exit status %d\nstderr:\n%s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := nexmark.Generate(nexmark.DefaultConfig(), 100)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	i := 0
	for ; sc.Scan(); i++ {
		var e nexmark.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if i < len(want) && (e.Kind != want[i].Kind || e.Timestamp() != want[i].Timestamp()) {
			t.Errorf("line %d: %s, want a %v at %d", i+1, sc.Bytes(), want[i].Kind, want[i].Timestamp())
		}
	}
	if i != 100 {
		t.Errorf("%d lines, want 100", i)
	}
}

func TestNexmarkOutput(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := weir(t, "nexmark", "--query", "q2", "--events", "200000", "-p", "2", "--output", dir)
	if code != 0 {
		t.Fatalf("weir nexmark --output: exit status %d\nstderr:\n%s", code, stderr)
	}
	lines, err := file.ReadLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, fmt.Sprintf("results      %d\n", len(lines))) {
		t.Fatalf("%d lines written, output says:\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		var r nexmark.Q2Result
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Auction%123 != 0 {
			t.Fatalf("line %q: %+v %v", l, r, err)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no results")
	}
}
