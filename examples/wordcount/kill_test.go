//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/weirproject/weir/connector/file"
)

// runningCounts is the reference output of the streaming mode: for every
// occurrence of a word, in text order, "word k" where k counts the
// occurrences so far; sorted, since only the multiset is defined.
func runningCounts(text string) []string {
	seen := make(map[string]int)
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		seen[w]++
		out = append(out, w+" "+strconv.Itoa(seen[w]))
	}
	slices.Sort(out)
	return out
}

// committed returns the sorted lines of the published part files in dir;
// file.ReadLines skips the hidden in-progress and pending files.
func committed(t *testing.T, dir string) []string {
	t.Helper()
	lines, err := file.ReadLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

// committedSoFar is the number of committed lines in dir, 0 before the
// sink has made dir: for polling a job that is starting.
func committedSoFar(t *testing.T, dir string) int {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return 0
	}
	return len(committed(t, dir))
}

// compareLines reports how two sorted multisets of lines differ.
func compareLines(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	var extra, missing []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			extra = append(extra, got[i])
			i++
		case i == len(got) || got[i] > want[j]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	return fmt.Sprintf("%d lines, want %d: %d extra (e.g. %q), %d missing (e.g. %q)",
		len(got), len(want), len(extra), extra[:min(len(extra), 5)], len(missing), missing[:min(len(missing), 5)])
}

// checkpoint is a completed checkpoint a job left in its checkpoint
// directory.
type checkpoint struct {
	path string
	id   int
}

// latestCheckpoint returns the newest chk-<n> under jobDir whose
// _metadata exists: only a checkpoint whose metadata is written is
// complete; a newer directory may still be half written.
func latestCheckpoint(jobDir string) (checkpoint, bool) {
	metas, _ := filepath.Glob(filepath.Join(jobDir, "chk-*", "_metadata"))
	var best checkpoint
	for _, m := range metas {
		dir := filepath.Dir(m)
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "chk-"))
		if err == nil && n > best.id {
			best = checkpoint{dir, n}
		}
	}
	return best, best.id > 0
}

// TestStreamingWordCountSurvivesKill runs the streaming WordCount as an OS
// process, SIGKILLs it once it has completed a few checkpoints, resumes it
// with --from-savepoint from the newest one, kills and resumes it again,
// interrupts it (Ctrl-C) and resumes it a last time, and checks that the
// committed output is that of a run without failures: every running count
// exactly once. It does so with either state backend.
func TestStreamingWordCountSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example and runs it as a process several times")
	}
	dir := t.TempDir()
	bin := buildExample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// About 4.6 MB, more than 4 MiB, so that the file source cuts it
	// into four ranges of the same size and both subtasks read equally
	// long: checkpoints stop once a source subtask has finished.
	text := mixedText(100_000, 99)
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want := runningCounts(text)
	args := func(out, chk string, extra ...string) []string {
		return append([]string{"--mode", "streaming", "--input", input, "--output", out, "-p", "2",
			"--checkpoint-interval", "200ms", "--checkpoint-dir", chk}, extra...)
	}

	// The failure-free run, unthrottled.
	cleanOut := filepath.Join(dir, "clean")
	start := time.Now()
	if out, err := exec.CommandContext(ctx, bin, args(cleanOut, filepath.Join(dir, "clean-chk"))...).CombinedOutput(); err != nil {
		t.Fatalf("clean run: %v\n%s", err, out)
	}
	clean := committed(t, cleanOut)
	if d := compareLines(clean, want); d != "" {
		t.Fatalf("the failure-free run differs from the reference: %s", d)
	}
	t.Logf("%d words; the failure-free run took %v", len(want), time.Since(start).Round(time.Millisecond))

	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			// A killed process cannot remove its pebble stores; they go
			// where the test cleans up.
			stopAndResume(t, bin, want, clean, func(out, chk string, extra ...string) []string {
				return args(out, chk, append([]string{"--state-backend", backend, "-D", "io.tmp.dirs=" + t.TempDir()}, extra...)...)
			})
		})
	}
}

// stopAndResume runs the job (args) throttled, stops it with SIGKILL,
// SIGKILL and SIGINT, each after a few checkpoints, resuming it every time
// from the newest one, lets the last run finish and compares its committed
// output with that of the failure-free run and the reference.
func stopAndResume(t *testing.T, bin string, want, clean []string, args func(out, chk string, extra ...string) []string) {
	dir := t.TempDir()
	// The runs that get stopped read 20,000 lines a second, 5 s for the
	// whole input, which leaves time for several checkpoints before each
	// stop.
	out, chkDir := filepath.Join(dir, "out"), filepath.Join(dir, "chk")
	if err := os.Mkdir(chkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var restored checkpoint
	// Two crashes, then a Ctrl-C, which cancels the job but keeps its
	// checkpoints (the example asks for RETAIN_ON_CANCELLATION).
	stops := []syscall.Signal{syscall.SIGKILL, syscall.SIGKILL, syscall.SIGINT}
	for i, sig := range stops {
		extra := []string{"--rate", "20000"}
		if restored.id > 0 {
			extra = append(extra, "--from-savepoint", restored.path)
		}
		before := jobDirs(chkDir)
		p := startProcess(t, bin, args(out, chkDir, extra...)...)
		// The run writes its checkpoints to a new <job-id> directory,
		// numbered on from the one it restored. Three of its own make
		// sure it made progress past the restore before it dies.
		var jobDir string
		waitFor(t, p, 30*time.Second, fmt.Sprintf("checkpoint %d", restored.id+3), func() bool {
			for d := range jobDirs(chkDir) {
				if !before[d] {
					jobDir = d
				}
			}
			c, ok := latestCheckpoint(jobDir)
			return jobDir != "" && ok && c.id >= restored.id+3
		})
		if i == 1 {
			// The first kill comes right after a checkpoint's metadata
			// is written, when its files may not be committed yet; the
			// second halfway to the next one, amid uncommitted output.
			time.Sleep(100 * time.Millisecond)
		}
		p.stop(t, sig)
		var ok bool
		if restored, ok = latestCheckpoint(jobDir); !ok {
			t.Fatalf("%v: no checkpoint left in %s", sig, jobDir)
		}
		// What the killed runs published is a part of the final output,
		// not all of it: the kill came before the end.
		partial := committed(t, out)
		if len(partial) == 0 || len(partial) >= len(want) {
			t.Fatalf("%v: %d of %d lines committed; want some, not all", sig, len(partial), len(want))
		}
		t.Logf("%v after %v: resuming from %s with %d of %d lines committed",
			sig, p.elapsed().Round(time.Millisecond), filepath.Base(restored.path), len(partial), len(want))
	}

	p := startProcess(t, bin, args(out, chkDir, "--from-savepoint", restored.path)...)
	if err := p.wait(30 * time.Second); err != nil {
		t.Fatalf("the last resumed run: %v\n%s", err, p.output())
	}
	got := committed(t, out)
	if d := compareLines(got, clean); d != "" {
		t.Fatalf("after %d stops, the committed output differs from the failure-free run: %s", len(stops), d)
	}
	if d := compareLines(got, want); d != "" {
		t.Fatalf("after %d stops, the committed output differs from the reference: %s", len(stops), d)
	}
}

// jobDirs returns the <job-id> directories of the jobs that wrote
// checkpoints to dir.
func jobDirs(dir string) map[string]bool {
	entries, _ := os.ReadDir(dir)
	out := make(map[string]bool)
	for _, e := range entries {
		out[filepath.Join(dir, e.Name())] = true
	}
	return out
}

// process is a job program running as a child process; t.Cleanup kills
// it if the test ends first.
type process struct {
	cmd     *exec.Cmd
	out     *strings.Builder
	started time.Time
	done    chan struct{}
	err     error
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), out: &strings.Builder{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.started = time.Now()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *process) elapsed() time.Duration { return time.Since(p.started) }

// output is only safe to read once the process has ended.
func (p *process) output() string { return p.out.String() }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("still running after %v; killed", timeout)
	}
}

// stop sends sig and waits for the process to end. SIGKILL gives it no
// chance to clean up, as in a crash of its machine; SIGINT is Ctrl-C,
// which cancels the job.
func (p *process) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after %v", sig)
	}
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		t.Fatalf("the process ended before %v: %v\n%s", sig, p.err, p.output())
	}
	if sig == syscall.SIGKILL && ee.Sys().(syscall.WaitStatus).Signal() != sig {
		t.Fatalf("the process ended before %v: %v\n%s", sig, p.err, p.output())
	}
	if sig == syscall.SIGINT && !strings.Contains(p.output(), "context canceled") {
		t.Fatalf("after %v: %v\n%s", sig, p.err, p.output())
	}
}

// waitFor polls cond until it holds; it fails the test if the process
// ends first or timeout passes.
func waitFor(t *testing.T, p *process, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if p.exited() {
			t.Fatalf("the process ended before %s: %v\n%s", what, p.err, p.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
