package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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

func TestNexmarkRunsChecksEveryRun(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := weir(t, "nexmark", "--query", "q5", "--events", "20000", "--baseline", "--runs", "3", "--warmup", "1", "-p", "2")
	if code != 0 {
		t.Fatalf("weir nexmark: exit status %d\nstderr:\n%s", code, stderr)
	}
	for _, want := range []string{"runs         3; figures are the median (min–max)", "engine/loop  throughput ", "–", "checked      the engine's results equal the loop's", "warm-up      1 run(s) before, not counted"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not contain %q:\n%s", want, stdout)
		}
	}
}

// TestNexmarkBaselineWithOutput: --output writes the engine's results and
// --baseline still compares them with the loop's (issue 39: the engine's
// side had no digest with --output, so every run reported a mismatch of
// "0 results"), with the loop's written too or not.
func TestNexmarkBaselineWithOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, extra := range [][]string{nil, {"--baseline-output", filepath.Join(dir, "loop.jsonl")}} {
		out := filepath.Join(dir, "engine.jsonl")
		args := append([]string{"nexmark", "--query", "q1", "--events", "2000", "-p", "2", "--baseline", "--output", out}, extra...)
		stdout, stderr, code := weir(t, args...)
		if code != 0 || !strings.Contains(stdout, "checked      the engine's results equal the loop's (count and order-independent hash)") {
			t.Fatalf("weir %s: exit status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
		// 46 of every 50 events are bids, and q1 converts every bid.
		if n := len(readLines(t, out)); n != 1840 || !strings.Contains(stdout, "results      1840\n") {
			t.Errorf("weir %s: %d lines written, want 1840; stdout:\n%s", strings.Join(args, " "), n, stdout)
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
		{"nexmark", "--query", "q1", "--runs", "0"},
		{"nexmark", "--query", "q1", "--runs", "2", "--output", "x.jsonl"},
		{"nexmark", "--query", "q1", "--runs", "2", "--jobmanager", "127.0.0.1:1"},
		{"nexmark", "--query", "q1", "--warmup", "-1"},
		{"nexmark", "--query", "q1", "--warmup", "1", "--jobmanager", "127.0.0.1:1"},
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
	out := filepath.Join(t.TempDir(), "q2.jsonl")
	stdout, stderr, code := weir(t, "nexmark", "--query", "q2", "--events", "200000", "-p", "2", "--output", out)
	if code != 0 {
		t.Fatalf("weir nexmark --output: exit status %d\nstderr:\n%s", code, stderr)
	}
	lines := readLines(t, out)
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
	if entries, err := os.ReadDir(filepath.Dir(out)); err != nil || len(entries) != 1 {
		t.Errorf("the output directory holds %d entries, want the output file only (%v)", len(entries), err)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	return strings.Split(string(b[:len(b)-1]), "\n")
}

// TestNexmarkOutputMatchesBaseline runs every query once with both the
// engine's and the loop's results written out, at parallelism 2, and
// compares them as multisets of lines. Q12's windows follow the wall
// clock, so only its bids per bidder are compared.
func TestNexmarkOutputMatchesBaseline(t *testing.T) {
	t.Parallel()
	// Slow enough for the windows of q5, q7, q8 and q11 to close and
	// auctions to expire for q4, q6 and q9.
	const events, rate = "20000", "500"
	for _, q := range nexmark.QueryNames() {
		t.Run(q, func(t *testing.T) {
			dir := t.TempDir()
			engine, loop := filepath.Join(dir, "engine.jsonl"), filepath.Join(dir, "loop.jsonl")
			stdout, stderr, code := weir(t, "nexmark", "--query", q, "--events", events, "--rate", rate, "-p", "2",
				"--output", engine, "--baseline-output", loop)
			if code != 0 {
				t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			got, want := readLines(t, engine), readLines(t, loop)
			if len(want) == 0 {
				t.Fatal("no results")
			}
			if nexmark.Queries[q].WallClock {
				got, want = bidsPerBidder(t, got), bidsPerBidder(t, want)
			}
			slices.Sort(got)
			slices.Sort(want)
			if len(got) != len(want) {
				t.Fatalf("the engine writes %d lines, the loop %d", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("outputs differ:\nengine %s\nloop   %s", got[i], want[i])
				}
			}
		})
	}
}

// bidsPerBidder sums the counts of Q12's rows per bidder, as lines.
func bidsPerBidder(t *testing.T, lines []string) []string {
	t.Helper()
	sum := map[int64]int64{}
	for _, l := range lines {
		var r nexmark.BidderCount
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		sum[r.Bidder] += r.BidCount
	}
	var out []string
	for b, n := range sum {
		out = append(out, fmt.Sprint(b, n))
	}
	return out
}
