package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMonitoredDirectoryWordCount watches a directory with
// --monitor-interval: files added while the job runs are counted, and
// after a SIGKILL and a resume from the newest checkpoint every file,
// including one added while the job was down, is counted exactly once.
func TestMonitoredDirectoryWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example binary")
	}
	bin := buildExample(t)
	dir := t.TempDir()
	in, out, chk := filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "chk")
	for _, d := range []string{in, chk} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	texts := []string{mixedText(500, 1), mixedText(700, 2), mixedText(600, 3)}
	// A file appears whole: written elsewhere, then renamed into place.
	add := func(i int) {
		tmp := filepath.Join(dir, "tmp")
		if err := os.WriteFile(tmp, []byte(texts[i]), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(in, string(rune('a'+i))+".txt")); err != nil {
			t.Fatal(err)
		}
	}
	args := func(extra ...string) []string {
		return append([]string{"--input", in, "--monitor-interval", "50ms", "--output", out, "-p", "2",
			"--checkpoint-interval", "50ms", "--checkpoint-dir", chk}, extra...)
	}
	progress := func() int { return committedSoFar(t, out) }
	add(0)
	p := startProcess(t, bin, args()...)
	waitFor(t, p, 60*time.Second, "the first file's counts", func() bool {
		return progress() >= len(runningCounts(texts[0]))
	})
	add(1)
	both := runningCounts(texts[0] + texts[1])
	waitFor(t, p, 60*time.Second, "the second file's counts", func() bool { return progress() >= len(both) })
	var jobDir string
	for d := range jobDirs(chk) {
		jobDir = d
	}
	first, _ := latestCheckpoint(jobDir)
	waitFor(t, p, 30*time.Second, "a checkpoint after both files", func() bool {
		c, ok := latestCheckpoint(jobDir)
		return ok && c.id >= first.id+2
	})
	p.stop(t, syscall.SIGKILL)
	restored, ok := latestCheckpoint(jobDir)
	if !ok {
		t.Fatalf("no checkpoint in %s", jobDir)
	}
	add(2)
	p = startProcess(t, bin, args("--from-savepoint", restored.path)...)
	want := runningCounts(strings.Join(texts, ""))
	waitFor(t, p, 60*time.Second, "every file's counts", func() bool { return progress() >= len(want) })
	time.Sleep(300 * time.Millisecond) // room for a duplicate to show
	p.stop(t, syscall.SIGINT)
	if d := compareLines(committed(t, out), want); d != "" {
		t.Fatalf("committed counts differ from the reference:\n%s", d)
	}
}
