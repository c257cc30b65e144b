package file

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/connector"
)

// countPacer permits as many records as it has tokens.
type countPacer struct {
	tokens           int
	emitted, closed  int
	subtask, closedS int
}

func (p *countPacer) Next(_ context.Context, subtask int) bool {
	p.subtask = subtask
	if p.tokens == 0 {
		return false
	}
	p.tokens--
	return true
}
func (p *countPacer) Emitted(int)            { p.emitted++ }
func (p *countPacer) Closed(s int)           { p.closed++; p.closedS = s }
func (p *countPacer) give(n int) *countPacer { p.tokens += n; return p }

// A paced reader emits one record per permission, in the Poll after the
// one that got it, and nothing without one.
func TestPacedReaderEmitsOneRecordPerPermission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x\ny\nz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &countPacer{}
	src := Source[string](TextLines{}, dir).Pace(p)
	splits, err := src.Splits(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.NewReader(ctx, connector.SplitContext{Subtask: 3, Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddSplits(splits); err != nil {
		t.Fatal(err)
	}
	out := &collector{}
	poll := func() connector.ReadStatus {
		t.Helper()
		st, err := r.Poll(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := poll(); st != connector.NothingAvailable || len(out.lines) != 0 {
		t.Fatalf("without a permission: %v, %q", st, out.lines)
	}
	p.give(1)
	if st := poll(); st != connector.MoreAvailable || len(out.lines) != 0 {
		t.Fatalf("the Poll that got the permission: %v, %q", st, out.lines)
	}
	if st := poll(); st != connector.MoreAvailable || !slices.Equal(out.lines, []string{"x"}) || p.emitted != 1 {
		t.Fatalf("the Poll after it: %v, %q, %d emitted", st, out.lines, p.emitted)
	}
	if st := poll(); st != connector.NothingAvailable || len(out.lines) != 1 {
		t.Fatalf("a second record without a permission: %v, %q", st, out.lines)
	}
	p.give(3)
	var st connector.ReadStatus
	for range 6 {
		if st = poll(); st == connector.EndOfInput {
			break
		}
	}
	if st != connector.EndOfInput || !slices.Equal(out.lines, []string{"x", "y", "z"}) || p.subtask != 3 {
		t.Fatalf("to the end: %v, %q, subtask %d", st, out.lines, p.subtask)
	}
	if err := r.Close(); err != nil || p.closed != 1 || p.closedS != 3 {
		t.Fatalf("close: %v, %d closes of subtask %d", err, p.closed, p.closedS)
	}
}

// RatePacer permits the first record at once and the next one only a
// period later.
func TestRatePacer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := RatePacer(1.0 / 3600) // one an hour
	if !p.Next(ctx, 0) {
		t.Fatal("the first record was not permitted")
	}
	if p.Next(ctx, 0) {
		t.Fatal("a second record within the hour was permitted")
	}
	if !p.Next(ctx, 1) {
		t.Fatal("another subtask's first record was not permitted")
	}
	fast := RatePacer(1e9)
	for i := range 100 {
		for !fast.Next(ctx, 0) {
			if ctx.Err() != nil {
				t.Fatalf("record %d: %v", i, ctx.Err())
			}
		}
	}
}
