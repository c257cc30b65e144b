package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/connector"
)

// collector is a connector.Output that keeps the lines.
type collector struct{ lines []string }

func (c *collector) Collect(v string)                       { c.lines = append(c.lines, v) }
func (c *collector) CollectWithTimestamp(v string, _ int64) { c.lines = append(c.lines, v) }
func (c *collector) take() []string                         { l := c.lines; c.lines = nil; return l }

var _ connector.Output[string] = (*collector)(nil)

// wantLines is the reference split of content into lines: what a single
// sequential read must produce.
func wantLines(content string) []string {
	if content == "" {
		return nil
	}
	lines := strings.Split(content, "\n")
	if strings.HasSuffix(content, "\n") {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		if i < len(lines)-1 || strings.HasSuffix(content, "\n") {
			lines[i] = strings.TrimSuffix(lines[i], "\r")
		}
	}
	return lines
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func splitsOf(t testing.TB, src *LineSource, parallelism int) []connector.Split {
	t.Helper()
	splits, err := src.Splits(context.Background(), parallelism)
	if err != nil {
		t.Fatal(err)
	}
	return splits
}

func newReader(t testing.TB, src *LineSource, splits []connector.Split) connector.SplitReader[string] {
	t.Helper()
	r, err := src.NewReader(context.Background(), connector.SplitContext{Subtask: 0, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddSplits(splits); err != nil {
		t.Fatal(err)
	}
	return r
}

// drain polls r to the end, checking the per-poll bound on the way.
func drain(t testing.TB, r connector.SplitReader[string]) []string {
	t.Helper()
	var c collector
	var all []string
	for i := 0; ; i++ {
		if i > 1e7 {
			t.Fatal("reader does not end")
		}
		st, err := r.Poll(context.Background(), &c)
		if err != nil {
			t.Fatal(err)
		}
		got := c.take()
		if len(got) > pollLines {
			t.Fatalf("one Poll emitted %d lines, want at most %d", len(got), pollLines)
		}
		all = append(all, got...)
		if st == connector.EndOfInput {
			return all
		}
		if st != connector.MoreAvailable {
			t.Fatalf("Poll = %v, want MoreAvailable or EndOfInput", st)
		}
	}
}

// readSplitwise reads every split with a reader of its own, in split order,
// which is file order, so the result must equal a sequential read.
func readSplitwise(t testing.TB, src *LineSource, parallelism int) []string {
	t.Helper()
	var all []string
	for _, s := range splitsOf(t, src, parallelism) {
		r := newReader(t, src, []connector.Split{s})
		all = append(all, drain(t, r)...)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

func checkLines(t testing.TB, got, want []string, what string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %d lines %.300q\nwant %d lines %.300q", what, len(got), got, len(want), want)
	}
}

func TestLinesEdgeCases(t *testing.T) {
	contents := []string{
		"", "a", "a\n", "\n", "\n\n", "\n\n\n", "a\nb", "a\nb\n", "ab\n\ncd\n",
		"a\r\nb\r\n", "a\r\nb", "a\r", "\r", "\r\n", "\r\r\n", "a\rb\n", "\r\n\r\n",
		"line one\nline two\n\nline four without newline",
		"\nleading empty line\n", "x\n\n\n\ny",
	}
	dir := t.TempDir()
	for i, content := range contents {
		path := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		writeFile(t, path, content)
		want := wantLines(content)
		for size := int64(1); size <= int64(len(content))+2; size++ {
			got := readSplitwise(t, Lines(path).SplitSize(size), 1)
			checkLines(t, got, want, fmt.Sprintf("%q split size %d", content, size))
		}
		checkLines(t, readSplitwise(t, Lines(path), 3), want, fmt.Sprintf("%q automatic split size", content))
	}
}

// randomContent draws text that is dense in the cases that matter at split
// boundaries: empty lines, "\r\n", "\r" not before "\n", and a final line
// with or without "\n".
func randomContent(rng *rand.Rand, n int) string {
	const alphabet = "ab\n\n\n\r"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func TestLinesPropertyRandomSplitSizes(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	for iter := range 300 {
		content := randomContent(rng, rng.IntN(200))
		path := filepath.Join(dir, fmt.Sprintf("f%d", iter))
		writeFile(t, path, content)
		want := wantLines(content)
		sizes := []int64{1, 2, 3, int64(len(content)), int64(len(content)) + 1}
		for range 5 {
			sizes = append(sizes, 1+rng.Int64N(int64(len(content))+2))
		}
		for _, size := range sizes {
			src := Lines(path).SplitSize(size)
			got := drain(t, newReader(t, src, splitsOf(t, src, 1)))
			checkLines(t, got, want, fmt.Sprintf("seed %d: %q split size %d", seed, content, size))
		}
	}
}

// TestLinesPropertyManyFiles reads several files through subtask readers
// that each get several splits, as the runtime assigns them, and checks
// that every line comes out exactly once.
func TestLinesPropertyManyFiles(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for iter := range 40 {
		dir := t.TempDir()
		var want []string
		nfiles := rng.IntN(6)
		for i := range nfiles {
			content := randomContent(rng, rng.IntN(3000))
			writeFile(t, filepath.Join(dir, fmt.Sprintf("f%02d", i)), content)
			want = append(want, wantLines(content)...)
		}
		src := Lines(dir).SplitSize(1 + rng.Int64N(500))
		parallelism := 1 + rng.IntN(5)
		splits := splitsOf(t, src, parallelism)
		var got []string
		for sub := range parallelism {
			var mine []connector.Split
			for i := sub; i < len(splits); i += parallelism {
				mine = append(mine, splits[i])
			}
			r := newReader(t, src, mine)
			got = append(got, drain(t, r)...)
			r.Close()
		}
		slices.Sort(got)
		slices.Sort(want)
		checkLines(t, got, want, fmt.Sprintf("seed %d iteration %d", seed, iter))
	}
}

// TestLinesLongLines covers lines longer than the read buffer, which are
// put together from several reads, around split boundaries.
func TestLinesLongLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for _, n := range []int{0, 5, bufferSize - 1, bufferSize, bufferSize + 1, 3*bufferSize + 17, 0, 1, 300 << 10, 2} {
		for range n {
			b.WriteByte("abcdefgh"[rng.IntN(8)])
		}
		b.WriteString("\n")
	}
	b.WriteString(strings.Repeat("z", 2*bufferSize)) // final line without newline
	content := b.String()
	path := filepath.Join(t.TempDir(), "long.txt")
	writeFile(t, path, content)
	want := wantLines(content)
	for _, size := range []int64{1000, bufferSize - 1, bufferSize, bufferSize + 1, 100000, 1 << 20, int64(len(content))} {
		got := readSplitwise(t, Lines(path).SplitSize(size), 1)
		checkLines(t, got, want, fmt.Sprintf("split size %d", size))
	}
	// A split inside a long line skips it and emits nothing.
	r := newReader(t, Lines(path), []connector.Split{&FileSplit{Path: path, Start: 3 * bufferSize, End: 3*bufferSize + 1}})
	if got := drain(t, r); len(got) != 0 {
		t.Fatalf("split inside a long line emitted %d lines", len(got))
	}
}

func TestLinesDirectory(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"b.txt":              "b1\nb2\n",
		"a.txt":              "a1\n",
		"sub/c.txt":          "c1\nc2",
		"sub/deeper/d.txt":   "d1\n",
		"sub/empty.txt":      "",
		".hidden":            "no\n",
		"_SUCCESS":           "no\n",
		"sub/.part-0.tmp":    "no\n",
		".git/config":        "no\n",
		"_temporary/x.txt":   "no\n",
		"sub/_logs/log.txt":  "no\n",
		"z/.inprogress/y.tx": "no\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	other := filepath.Join(t.TempDir(), "_explicit.txt") // named explicitly: not hidden
	writeFile(t, other, "e1\n")
	if err := os.Symlink(filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub", "link.txt")); err != nil {
		t.Fatal(err)
	}

	src := Lines(other, dir, filepath.Join(dir, "b.txt"), dir+"/") // duplicates are read once
	got := readSplitwise(t, src, 2)
	want := []string{"e1", "a1", "b1", "b2", "c1", "c2", "d1", "a1"}
	checkLines(t, got, want, "directory read")

	ids := map[string]bool{}
	for _, s := range splitsOf(t, src, 2) {
		if ids[s.SplitID()] {
			t.Errorf("duplicate split ID %s", s.SplitID())
		}
		ids[s.SplitID()] = true
	}
	var paths []string
	for _, s := range splitsOf(t, src, 2) {
		paths = append(paths, s.(*FileSplit).Path)
	}
	wantPaths := []string{
		other,
		filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"),
		filepath.Join(dir, "sub", "c.txt"), filepath.Join(dir, "sub", "deeper", "d.txt"),
		filepath.Join(dir, "sub", "link.txt"),
	}
	checkLines(t, paths, wantPaths, "split paths")

	// A link to a directory, named as a path, stands for the directory.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(dir, "sub", "deeper"), link); err != nil {
		t.Fatal(err)
	}
	splits := splitsOf(t, Lines(link), 1)
	if len(splits) != 1 || splits[0].(*FileSplit).Path != filepath.Join(link, "d.txt") {
		t.Fatalf("splits of a linked directory: %v", splits)
	}
}

func TestSplitsLayout(t *testing.T) {
	dir := t.TempDir()
	const mib = 1 << 20
	sizes := map[string]int64{"a": 3*mib + mib/2, "b": mib + mib/20, "c": 10, "d": 0}
	for name, size := range sizes {
		writeFile(t, filepath.Join(dir, name), strings.Repeat("x\n", int(size/2))+strings.Repeat("y", int(size%2)))
	}
	check := func(src *LineSource, parallelism int, wantCount map[string]int) {
		t.Helper()
		splits := splitsOf(t, src, parallelism)
		count := map[string]int{}
		next := map[string]int64{}
		for _, s := range splits {
			fs := s.(*FileSplit)
			name := filepath.Base(fs.Path)
			if fs.Start != next[name] || fs.End <= fs.Start || fs.Offset != fs.Start {
				t.Fatalf("p=%d: split %v does not continue at %d", parallelism, fs, next[name])
			}
			if want := fmt.Sprintf("%s:%d", fs.Path, fs.Start); fs.SplitID() != want {
				t.Fatalf("SplitID = %q, want %q", fs.SplitID(), want)
			}
			next[name] = fs.End
			count[name]++
		}
		for name, size := range sizes {
			if next[name] != size {
				t.Errorf("p=%d: splits of %s end at %d, want %d", parallelism, name, next[name], size)
			}
		}
		if !maps.Equal(count, wantCount) {
			t.Errorf("p=%d: splits per file %v, want %v", parallelism, count, wantCount)
		}
	}
	// Total 4.55 MiB. p=1: max(1 MiB, 2.275 MiB) -> a in 2, b in 1.
	check(Lines(dir), 1, map[string]int{"a": 2, "b": 1, "c": 1})
	// p=8: 1 MiB -> a in 3 plus a half-size tail, b within the 10% slop.
	check(Lines(dir), 8, map[string]int{"a": 4, "b": 1, "c": 1})
	// A fixed size has no slop.
	check(Lines(dir).SplitSize(mib), 8, map[string]int{"a": 4, "b": 2, "c": 1})
	check(Lines(dir).SplitSize(1000), 1, map[string]int{"a": int((sizes["a"] + 999) / 1000), "b": int((sizes["b"] + 999) / 1000), "c": 1})
	check(Lines(dir).SplitSize(4).SplitSize(0), 1, map[string]int{"a": 2, "b": 1, "c": 1})
}

func TestSplitsErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such.txt")
	_, err := Lines(dir, missing).Splits(context.Background(), 1)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "file: ") {
		t.Errorf("missing path: err = %v", err)
	}
	if _, err := Lines(dir).Splits(context.Background(), 0); err == nil {
		t.Error("parallelism 0: no error")
	}
	if _, err := Lines().Splits(context.Background(), 1); err == nil {
		t.Error("no paths: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	writeFile(t, filepath.Join(dir, "x"), "x\n")
	if _, err := Lines(dir).Splits(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
	if runtime.GOOS != "windows" && os.Getuid() != 0 {
		locked := filepath.Join(dir, "locked")
		writeFile(t, filepath.Join(locked, "f"), "f\n")
		os.Chmod(locked, 0)
		defer os.Chmod(locked, 0o755)
		_, err := Lines(dir).Splits(context.Background(), 1)
		if err == nil || !strings.Contains(err.Error(), locked) {
			t.Errorf("unreadable directory: err = %v", err)
		}
	}
	// An empty directory is no error: it has no lines.
	splits, err := Lines(t.TempDir()).Splits(context.Background(), 1)
	if err != nil || len(splits) != 0 {
		t.Errorf("empty directory: %v, %v", splits, err)
	}
}

func TestPollBounds(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	writeFile(t, short, strings.Repeat("x\n", 1000))
	r := newReader(t, Lines(short), splitsOf(t, Lines(short), 1))
	var c collector
	for _, want := range []int{256, 256, 256, 232} {
		st, err := r.Poll(context.Background(), &c)
		if err != nil {
			t.Fatal(err)
		}
		wantSt := connector.MoreAvailable
		if want < 256 {
			wantSt = connector.EndOfInput
		}
		if got := len(c.take()); got != want || st != wantSt {
			t.Fatalf("Poll emitted %d lines with %v, want %d with %v", got, st, want, wantSt)
		}
	}
	// After the end, the reader stays at the end until it gets splits.
	if st, err := r.Poll(context.Background(), &c); st != connector.EndOfInput || err != nil || len(c.take()) != 0 {
		t.Fatalf("Poll after end = %v, %v", st, err)
	}
	if s, err := r.Snapshot(); len(s) != 0 || err != nil {
		t.Fatalf("Snapshot after end = %v, %v", s, err)
	}
	if err := r.AddSplits(splitsOf(t, Lines(short), 1)); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, r); len(got) != 1000 {
		t.Fatalf("read %d lines after AddSplits, want 1000", len(got))
	}

	wide := filepath.Join(dir, "wide")
	writeFile(t, wide, strings.Repeat(strings.Repeat("w", 1023)+"\n", 200))
	r = newReader(t, Lines(wide), splitsOf(t, Lines(wide), 1))
	if _, err := r.Poll(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	if got := len(c.take()); got != pollBytes/1024 {
		t.Fatalf("Poll of 1 KiB lines emitted %d, want %d", got, pollBytes/1024)
	}
}

// TestSnapshotResume restores a fresh reader from the snapshot after every
// single poll (through JSON, as a checkpoint would store it) and checks
// that the pieces add up to a single uninterrupted read.
func TestSnapshotResume(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	for iter := range 30 {
		dir := t.TempDir()
		var b strings.Builder
		for range rng.IntN(3000) {
			switch rng.IntN(200) {
			case 0:
				b.WriteString(strings.Repeat("L", bufferSize+rng.IntN(3*bufferSize)))
			case 1:
				b.WriteString("\r")
			}
			b.WriteString(randomContent(rng, rng.IntN(20)))
			b.WriteString("\n")
		}
		if rng.IntN(2) == 0 {
			b.WriteString("tail")
		}
		path := filepath.Join(dir, "f")
		writeFile(t, path, b.String())
		writeFile(t, filepath.Join(dir, "g"), randomContent(rng, rng.IntN(5000)))

		src := Lines(dir)
		if rng.IntN(3) > 0 {
			// At most ~64 splits: every restart round-trips the remaining
			// splits through JSON, so a split per byte would make the test
			// quadratic in the file size (it once ran past CI's timeout).
			minSplit := int64(b.Len())/64 + 1
			src.SplitSize(minSplit + rng.Int64N(int64(b.Len())/2+1))
		}
		splits := splitsOf(t, src, 1)
		want := drain(t, newReader(t, src, splits))

		var got []string
		var c collector
		for restarts := 0; ; restarts++ {
			r := newReader(t, src, splits)
			st, err := r.Poll(context.Background(), &c)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, c.take()...)
			snap, err := r.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			if st == connector.EndOfInput {
				if len(snap) != 0 {
					t.Fatalf("snapshot at end of input: %v", snap)
				}
				break
			}
			splits = roundTrip(t, snap)
		}
		checkLines(t, got, want, fmt.Sprintf("seed %d iteration %d: restored after every poll", seed, iter))
	}
}

func roundTrip(t testing.TB, splits []connector.Split) []connector.Split {
	t.Helper()
	var values []FileSplit
	for _, s := range splits {
		fs := s.(*FileSplit)
		if fs.Offset < fs.Start || fs.Offset >= fs.End {
			t.Fatalf("snapshot has finished or bad split %v", fs)
		}
		values = append(values, *fs)
	}
	data, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	values = nil
	if err := json.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	var out []connector.Split
	for i := range values {
		out = append(out, &values[i])
	}
	return out
}

// TestSnapshotDoesNotDisturb checks that Snapshot hands out copies: the
// reader goes on unchanged, and the snapshot stays as it was.
func TestSnapshotDoesNotDisturb(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	writeFile(t, path, strings.Repeat("line\n", 1000))
	src := Lines(path).SplitSize(2000)
	splits := splitsOf(t, src, 1)
	r := newReader(t, src, splits)
	var c collector
	r.Poll(context.Background(), &c)
	snap, _ := r.Snapshot()
	before := fmt.Sprint(snap)
	rest := drain(t, r)
	if fmt.Sprint(snap) != before {
		t.Fatalf("snapshot changed from %s to %s", before, snap)
	}
	if first := splits[0].(*FileSplit); first.Offset != 0 {
		t.Fatalf("AddSplits argument changed: %v", first)
	}
	if n := len(c.take()) + len(rest); n != 1000 {
		t.Fatalf("read %d lines, want 1000", n)
	}
	if got := snap[0].(*FileSplit).Offset; got != 256*5 {
		t.Fatalf("snapshot offset %d, want %d", got, 256*5)
	}
	if len(snap) != 3 {
		t.Fatalf("snapshot has %d splits, want 3 (current and two queued)", len(snap))
	}
}

func TestReaderErrors(t *testing.T) {
	dir := t.TempDir()
	src := Lines(dir)
	var c collector
	ctx := context.Background()

	r := newReader(t, src, nil)
	if err := r.AddSplits([]connector.Split{fakeSplit{}}); !errors.Is(err, connector.ErrUnsupportedSplit) {
		t.Errorf("foreign split: err = %v", err)
	}
	if err := r.AddSplits([]connector.Split{(*FileSplit)(nil)}); !errors.Is(err, connector.ErrUnsupportedSplit) {
		t.Errorf("nil split: err = %v", err)
	}
	if err := r.AddSplits([]connector.Split{&FileSplit{Path: "x", Start: 5, End: 4}}); err == nil {
		t.Error("End < Start: no error")
	}

	missing := filepath.Join(dir, "gone.txt")
	r = newReader(t, src, []connector.Split{&FileSplit{Path: missing, End: 10}})
	if _, err := r.Poll(ctx, &c); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}

	// Reading a directory fails on the first read, at a known offset.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for _, tc := range []struct {
		start int64
		want  string
	}{{0, "at offset 0:"}, {5, "at offset 4:"}} {
		r = newReader(t, src, []connector.Split{&FileSplit{Path: sub, Start: tc.start, End: 10}})
		_, err := r.Poll(ctx, &c)
		if err == nil || !strings.HasPrefix(err.Error(), "file: read "+sub+" "+tc.want) {
			t.Errorf("read error: err = %v, want prefix %q", err, "file: read "+sub+" "+tc.want)
		}
		r.Close()
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Poll(cctx, &c); err == nil {
		t.Error("Poll on closed reader: no error")
	}
	r = newReader(t, src, nil)
	if _, err := r.Poll(cctx, &c); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Poll: err = %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type fakeSplit struct{}

func (fakeSplit) SplitID() string { return "fake" }

// TestReaderRestoredSplitForms covers splits built by hand: Offset zero
// means not started, and a split past its end reads nothing.
func TestReaderRestoredSplitForms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	writeFile(t, path, "aa\nbb\ncc\n")
	src := Lines(path)
	got := drain(t, newReader(t, src, []connector.Split{&FileSplit{Path: path, Start: 1, End: 9}}))
	checkLines(t, got, []string{"bb", "cc"}, "Offset zero with Start 1")
	got = drain(t, newReader(t, src, []connector.Split{&FileSplit{Path: path, Start: 0, End: 9, Offset: 9}}))
	checkLines(t, got, nil, "finished split")
	got = drain(t, newReader(t, src, []connector.Split{&FileSplit{Path: path, Start: 0, End: 9, Offset: 6}}))
	checkLines(t, got, []string{"cc"}, "resumed at offset 6")
}

// TestReaderFileShrank: a file that got shorter since Splits ends the split
// at its new end instead of failing.
func TestReaderFileShrank(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	writeFile(t, path, "aa\nbb\ncc\ndd\n")
	src := Lines(path).SplitSize(6)
	splits := splitsOf(t, src, 1)
	writeFile(t, path, "aa\nb")
	var got []string
	for _, s := range splits {
		got = append(got, drain(t, newReader(t, src, []connector.Split{s}))...)
	}
	checkLines(t, got, []string{"aa", "b"}, "shrunk file")
}

func TestPollAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	path := filepath.Join(t.TempDir(), "f")
	const n = 20000
	writeFile(t, path, strings.Repeat("some line of text\n", n))
	src := Lines(path)
	r := newReader(t, src, splitsOf(t, src, 1))
	defer r.Close()
	var out discard
	r.Poll(context.Background(), out) // opens the file, allocates the buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for {
		st, err := r.Poll(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		if st == connector.EndOfInput {
			break
		}
	}
	runtime.ReadMemStats(&after)
	if allocs := after.Mallocs - before.Mallocs; allocs > n+100 {
		t.Errorf("%d allocations for %d lines, want about one per line", allocs, n)
	}
}

type discard struct{}

var sink string

func (discard) Collect(v string)                       { sink = v }
func (discard) CollectWithTimestamp(v string, _ int64) { sink = v }

func BenchmarkPoll(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f")
	writeFile(b, path, strings.Repeat("a line of moderate length, like a log line or so\n", 100000))
	src := Lines(path)
	splits := splitsOf(b, src, 1)
	b.ReportAllocs()
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	for b.Loop() {
		r := newReader(b, src, splits)
		for {
			st, err := r.Poll(context.Background(), discard{})
			if err != nil {
				b.Fatal(err)
			}
			if st == connector.EndOfInput {
				break
			}
		}
		r.Close()
	}
}

// TestSkipBoundary puts the end of a split right around the newline that
// ends a line longer than the buffer, where the reader decides whether the
// split owns any line without scanning the whole long line.
func TestSkipBoundary(t *testing.T) {
	const q = 3*bufferSize + 100 // index of the '\n' ending the long line
	content := strings.Repeat("x", q) + "\ntail\n"
	path := filepath.Join(t.TempDir(), "f")
	writeFile(t, path, content)
	src := Lines(path)
	for _, start := range []int64{1, q - bufferSize, q - bufferSize + 1, q - bufferSize + 2, q - 1, q, q + 1} {
		for end := max(start, q-2); end <= q+3; end++ {
			var want []string
			if start <= q+1 && q+1 < end { // the split holds the first byte of "tail"
				want = []string{"tail"}
			}
			got := drain(t, newReader(t, src, []connector.Split{&FileSplit{Path: path, Start: start, End: end, Offset: start}}))
			checkLines(t, got, want, fmt.Sprintf("split [%d,%d) with '\\n' at %d", start, end, q))
		}
	}
}
