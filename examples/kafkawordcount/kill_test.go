//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExactlyOnceSurvivesKill runs the bounded KafkaWordCount as an OS
// process against a Kafka cluster in the test process, SIGKILLs it twice
// after completed checkpoints, resumes it each time with --from-savepoint
// from the newest one, lets the last run finish, and checks that what a
// read_committed consumer sees (franz-go's and kcat's) is exactly the
// output of a failure-free run and of the reference count; at
// parallelism 1 and 2, over 3 input partitions.
func TestExactlyOnceSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example and runs it as a process several times")
	}
	bin := buildExample(t)
	brokers, text := setup(t, "clean-1", "killed-1", "clean-2", "killed-2")
	want := reference(text)
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			args := func(out, chk string, extra ...string) []string {
				return append([]string{"--brokers", strings.Join(brokers, ","), "--input-topic", "in", "--output-topic", out,
					"--group-id", "wc-" + out, "--bounded", "-p", strconv.Itoa(p),
					"--checkpoint-interval", "200ms", "--checkpoint-dir", chk}, extra...)
			}
			start := time.Now()
			cleanTopic := fmt.Sprintf("clean-%d", p)
			if out, err := exec.Command(bin, args(cleanTopic, t.TempDir())...).CombinedOutput(); err != nil {
				t.Fatalf("clean run: %v\n%s", err, out)
			}
			clean := readCommitted(t, brokers, cleanTopic, true)
			if d := compareLines(clean, want); d != "" {
				t.Fatalf("the failure-free run differs from the reference: %s", d)
			}
			t.Logf("%d words; the failure-free run took %v", len(want), time.Since(start).Round(time.Millisecond))

			topic := fmt.Sprintf("killed-%d", p)
			killAndResume(t, bin, brokers, topic, len(want), 2, func(chk string, extra ...string) []string {
				return args(topic, chk, append([]string{"--rate", "600"}, extra...)...)
			})
			got := readCommitted(t, brokers, topic, true)
			if d := compareLines(got, clean); d != "" {
				t.Fatalf("after 2 kills, the committed output differs from the failure-free run: %s", d)
			}
			if p == 2 {
				if d := compareLines(kcatRead(t, brokers, topic), want); d != "" {
					t.Fatalf("after 2 kills, kcat (read_committed) reads output that differs from the reference: %s", d)
				}
			}
		})
	}
}

// TestAtLeastOnceLosesNothing: with --delivery at-least-once, a run killed
// after checkpoints and resumed leaves every record of the reference in
// the output, some perhaps twice.
func TestAtLeastOnceLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example and runs it as a process")
	}
	bin := buildExample(t)
	brokers, text := setup(t, "alo")
	want := reference(text)
	killAndResume(t, bin, brokers, "alo", len(want), 1, func(chk string, extra ...string) []string {
		return append([]string{"--brokers", strings.Join(brokers, ","), "--input-topic", "in", "--output-topic", "alo",
			"--bounded", "-p", "2", "--delivery", "at-least-once", "--rate", "600",
			"--checkpoint-interval", "200ms", "--checkpoint-dir", chk}, extra...)
	})
	got := readCommitted(t, brokers, "alo", false)
	have := make(map[string]int)
	for _, g := range got {
		have[g]++
	}
	var missing []string
	for _, w := range want {
		if have[w] == 0 {
			missing = append(missing, w)
		}
		have[w]--
	}
	inRef := make(map[string]bool)
	for _, w := range want {
		inRef[w] = true
	}
	for g := range have {
		if !inRef[g] {
			t.Fatalf("output line %q is not in the reference", g)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d reference lines are missing, e.g. %q", len(missing), len(want), missing[:min(5, len(missing))])
	}
	t.Logf("%d lines for %d reference lines", len(got), len(want))
}

// killAndResume runs the job, SIGKILLs it `kills` times, each after three
// checkpoints of its own, resuming it from the newest completed one, and
// lets the last run finish.
func killAndResume(t *testing.T, bin string, brokers []string, topic string, total, kills int, args func(chk string, extra ...string) []string) {
	t.Helper()
	chkDir := t.TempDir()
	var restored checkpoint
	for i := range kills {
		var extra []string
		if restored.id > 0 {
			extra = []string{"--from-savepoint", restored.path}
		}
		before := jobDirs(chkDir)
		p := startProcess(t, bin, args(chkDir, extra...)...)
		var jobDir string
		waitFor(t, p, 60*time.Second, fmt.Sprintf("checkpoint %d", restored.id+3), func() bool {
			for d := range jobDirs(chkDir) {
				if !before[d] {
					jobDir = d
				}
			}
			c, ok := latestCheckpoint(jobDir)
			return jobDir != "" && ok && c.id >= restored.id+3
		})
		if i == 1 {
			// Halfway to the next checkpoint, amid an open transaction.
			time.Sleep(100 * time.Millisecond)
		}
		p.kill(t)
		var ok bool
		if restored, ok = latestCheckpoint(jobDir); !ok {
			t.Fatalf("no checkpoint left in %s", jobDir)
		}
		partial := readCommitted(t, brokers, topic, true)
		if len(partial) == 0 || len(partial) >= total {
			t.Fatalf("kill %d: %d of %d lines committed; want some, not all", i+1, len(partial), total)
		}
		t.Logf("kill %d after %v: resuming from %s with %d of %d lines committed",
			i+1, p.elapsed().Round(time.Millisecond), filepath.Base(restored.path), len(partial), total)
	}
	p := startProcess(t, bin, args(chkDir, "--from-savepoint", restored.path)...)
	if err := p.wait(90 * time.Second); err != nil {
		t.Fatalf("the last resumed run: %v\n%s", err, p.output())
	}
}

type checkpoint struct {
	path string
	id   int
}

// latestCheckpoint returns the newest chk-<n> under jobDir whose
// _metadata exists: only then is it complete.
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

func jobDirs(dir string) map[string]bool {
	entries, _ := os.ReadDir(dir)
	out := make(map[string]bool)
	for _, e := range entries {
		out[filepath.Join(dir, e.Name())] = true
	}
	return out
}

// process is the job running as a child process; t.Cleanup kills it if
// the test ends first.
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

// kill SIGKILLs the process, as a crash of its machine, and checks that it
// was still running.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the process ended before SIGKILL: %v\n%s", p.err, p.output())
	}
}

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
