package file

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/weirproject/weir/connector"
)

func newWriter[T any](t *testing.T, s *TextSink[T], subtask, attempt int) connector.SinkWriter[T] {
	t.Helper()
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Subtask: subtask, Parallelism: 3, AttemptNumber: attempt})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTextSinkPublishesOnClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "nested") // created by the sink
	sink := Text[int](dir, nil)
	w0 := newWriter(t, sink, 0, 0)
	w1 := newWriter(t, sink, 1, 0) // gets no records
	w2 := newWriter(t, sink, 2, 0)
	for i := range 100000 { // more than the buffer
		must(t, w0.Write(i, math.MinInt64))
	}
	must(t, w2.Write(-1, 0))
	must(t, w2.Write(-2, 0))
	must(t, w0.Flush())
	must(t, w1.Flush())
	must(t, w2.Flush())

	// Flushed but not closed: readers see nothing yet.
	if got := dirNames(t, dir); !slices.Equal(got, []string{".part-0-0.inprogress", ".part-1-0.inprogress", ".part-2-0.inprogress"}) {
		t.Fatalf("before Close: %v", got)
	}
	if lines, err := ReadLines(dir); err != nil || len(lines) != 0 {
		t.Fatalf("ReadLines before Close = %d lines, %v", len(lines), err)
	}

	must(t, w2.Close())
	must(t, w0.Close())
	must(t, w1.Close())
	must(t, w1.Close()) // idempotent
	if got := dirNames(t, dir); !slices.Equal(got, []string{"part-0", "part-1", "part-2"}) {
		t.Fatalf("after Close: %v", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "part-1")); err != nil || fi.Size() != 0 {
		t.Fatalf("empty subtask: %v, %v", fi, err)
	}
	lines, err := ReadLines(dir)
	must(t, err)
	var want []string
	for i := range 100000 {
		want = append(want, strconv.Itoa(i))
	}
	want = append(want, "-1", "-2")
	checkLines(t, lines, want, "ReadLines")

	// The output reads back through the source too.
	got := readSplitwise(t, Lines(dir).SplitSize(4096), 2)
	checkLines(t, got, want, "Lines over the output")
}

func TestTextSinkFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	sink := Text(dir, func(s string) string { return s })

	// Never flushed: the job failed.
	w := newWriter(t, sink, 0, 0)
	must(t, w.Write("a", 0))
	must(t, w.Close())

	// Flushed for a checkpoint, then written to, then failed.
	w = newWriter(t, sink, 1, 0)
	must(t, w.Write("a", 0))
	must(t, w.Flush())
	must(t, w.Write("b", 0))
	must(t, w.Close())

	// Flushed, then aborted by a runtime that knows better.
	w = newWriter(t, sink, 2, 0)
	must(t, w.Write("a", 0))
	must(t, w.Flush())
	must(t, w.(*TextWriter[string]).Abort())
	must(t, w.Close())

	if got := dirNames(t, dir); len(got) != 0 {
		t.Fatalf("failed writers left %v", got)
	}
	if err := w.Write("x", 0); err == nil {
		t.Error("Write after Close: no error")
	}
	if err := w.Flush(); err == nil {
		t.Error("Flush after Close: no error")
	}
}

func TestTextSinkAttempts(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{".part-0-0.inprogress", ".part-0-1.inprogress", ".part-0-5.inprogress", ".part-1-0.inprogress", ".part-0-x.inprogress", "part-0"} {
		writeFile(t, filepath.Join(dir, name), "stale\n")
	}
	sink := Text[string](dir, nil)
	w := newWriter(t, sink, 0, 2)
	// Earlier attempts of subtask 0 are gone; later attempts (a zombie is
	// no reason to guess), other subtasks and unknown names stay.
	want := []string{".part-0-2.inprogress", ".part-0-5.inprogress", ".part-0-x.inprogress", ".part-1-0.inprogress", "part-0"}
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after NewWriter of attempt 2: %v, want %v", got, want)
	}
	must(t, w.Write("fresh", 0))
	must(t, w.Flush())
	must(t, w.Close())
	lines, err := ReadLines(dir)
	must(t, err)
	checkLines(t, lines, []string{"fresh"}, "part-0 replaced")

	// The same attempt opened again (a crashed process rerun) truncates.
	w = newWriter(t, sink, 3, 0)
	must(t, w.Write("first", 0))
	must(t, w.Flush())
	w.(*TextWriter[string]).f.Close() // the crashed process
	w = newWriter(t, sink, 3, 0)
	must(t, w.Write("second", 0))
	must(t, w.Flush())
	must(t, w.Close())
	b, err := os.ReadFile(filepath.Join(dir, "part-3"))
	if err != nil || string(b) != "second\n" {
		t.Fatalf("part-3 = %q, %v", b, err)
	}
}

type celsius float64

func (c celsius) String() string { return fmt.Sprintf("%.1f°C", float64(c)) }

type ptrStringer struct{ n int }

func (p *ptrStringer) String() string { return "p" + strconv.Itoa(p.n) }

type point struct{ X, Y int }

func writeAll[T any](t *testing.T, format func(T) string, values ...T) string {
	t.Helper()
	dir := t.TempDir()
	w := newWriter(t, Text(dir, format), 0, 0)
	for _, v := range values {
		must(t, w.Write(v, 0))
	}
	must(t, w.Flush())
	must(t, w.Close())
	b, err := os.ReadFile(filepath.Join(dir, "part-0"))
	must(t, err)
	return string(b)
}

func TestTextSinkFormats(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"string", writeAll[string](t, nil, "a", "", "b c"), "a\n\nb c\n"},
		{"int", writeAll[int](t, nil, 1, -2), "1\n-2\n"},
		{"Stringer", writeAll[celsius](t, nil, 21.5), "21.5°C\n"},
		{"pointer Stringer", writeAll[*ptrStringer](t, nil, &ptrStringer{7}, nil), "p7\n<nil>\n"},
		{"struct", writeAll[point](t, nil, point{1, 2}), "{1 2}\n"},
		{"interface", writeAll[any](t, nil, celsius(3), "s", nil), "3.0°C\ns\n<nil>\n"},
		{"error", writeAll[error](t, nil, errors.New("boom")), "boom\n"},
		{"custom", writeAll(t, func(p point) string { return fmt.Sprintf("%d,%d", p.X, p.Y) }, point{1, 2}), "1,2\n"},
		{"embedded newline", writeAll[string](t, nil, "a\nb"), "a\nb\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: wrote %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestTextSinkErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	writeFile(t, blocker, "x")
	out := filepath.Join(blocker, "out")
	_, err := Text[int](out, nil).NewWriter(context.Background(), connector.SinkContext{})
	if err == nil || !strings.HasPrefix(err.Error(), "file: ") || !strings.Contains(err.Error(), blocker) {
		t.Errorf("directory under a file: err = %v", err)
	}

	// Disk full: the in-progress file is a link to /dev/full.
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	full := filepath.Join(dir, "full")
	os.Mkdir(full, 0o755)
	tmp := filepath.Join(full, ".part-0-0.inprogress")
	must(t, os.Symlink("/dev/full", tmp))
	w := newWriter(t, Text[string](full, nil), 0, 0)
	must(t, w.Write("small", 0)) // buffered
	err = w.Flush()
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "file: write "+tmp+": ") {
		t.Fatalf("Flush on a full disk: err = %v", err)
	}
	if err2 := w.Write("more", 0); !errors.Is(err2, syscall.ENOSPC) {
		t.Errorf("Write after the failure: err = %v", err2)
	}
	if err2 := w.Flush(); !errors.Is(err2, syscall.ENOSPC) {
		t.Errorf("second Flush: err = %v", err2)
	}
	must(t, w.Close())
	if got := dirNames(t, full); len(got) != 0 {
		t.Errorf("failed writer left %v", got)
	}

	// A full buffer fails in Write itself.
	must(t, os.Symlink("/dev/full", tmp))
	w = newWriter(t, Text[string](full, nil), 0, 0)
	big := strings.Repeat("x", bufferSize)
	if err := w.Write(big, 0); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), tmp) {
		t.Errorf("Write on a full disk: err = %v", err)
	}
	must(t, w.Close())
}

func TestReadLines(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"part-10":              "ten\n",
		"part-2":               "two\r\nsecond of two",
		"part-0":               "",
		"part-x":               "x\n",
		"part-1":               "one\n\n",
		".part-3-0.inprogress": "hidden\n",
		"_SUCCESS":             "",
		"other":                "other\n",
	} {
		writeFile(t, filepath.Join(dir, name), content)
	}
	os.Mkdir(filepath.Join(dir, "part-4"), 0o755) // not a file
	lines, err := ReadLines(dir)
	must(t, err)
	checkLines(t, lines, []string{"one", "", "two", "second of two", "ten", "x"}, "ReadLines")

	missing := filepath.Join(dir, "missing")
	if _, err := ReadLines(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing dir: err = %v", err)
	}
	lines, err = ReadLines(t.TempDir())
	if err != nil || len(lines) != 0 {
		t.Errorf("empty dir: %q, %v", lines, err)
	}
}
