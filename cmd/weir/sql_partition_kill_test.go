//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// completedCheckpoints lists the completed checkpoints under dir (every
// job's chk-<n>/_metadata), oldest first.
func completedCheckpoints(dir string) []string {
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "chk-*", "_metadata"))
	slices.SortFunc(metas, func(a, b string) int {
		sa, _ := os.Stat(a)
		sb, _ := os.Stat(b)
		if sa == nil || sb == nil {
			return strings.Compare(a, b)
		}
		return sa.ModTime().Compare(sb.ModTime())
	})
	return metas
}

// TestSQLPartitionedSinkSurvivesKill: a streaming INSERT into a
// partitioned filesystem table, checkpointing every 200 ms, is SIGKILLed
// twice after completed checkpoints and resumed with --from-savepoint;
// in the end every row is in exactly one published file, in the
// partition directory of its key. Part files roll every 100 ms, so that
// the killed runs publish files (a run that started over instead of
// resuming would write their rows again). The success-file commit policy
// marks every partition.
func TestSQLPartitionedSinkSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the weir binary")
	}
	t.Parallel()
	const n = 100000
	bin := buildWeir(t)
	dir := t.TempDir()
	chk, out := filepath.Join(dir, "chk"), filepath.Join(dir, "out")
	script := filepath.Join(dir, "job.sql")
	job := fmt.Sprintf(`SET 'execution.runtime-mode' = 'streaming';
SET 'execution.checkpointing.interval' = '200 ms';
SET 'state.checkpoints.num-retained' = '100';
SET 'execution.checkpointing.externalized-checkpoint-retention' = 'RETAIN_ON_CANCELLATION';
SET 'state.checkpoints.dir' = '%s';
SET 'parallelism.default' = '2';
CREATE TABLE ev (id BIGINT, k AS 'k=' || CAST(MOD(id * 31, 7) AS STRING) || '/ü', v AS MOD(id * 17, 100))
	WITH ('connector' = 'datagen', 'rows-per-second' = '20000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d');
CREATE TABLE out_t (id BIGINT, v BIGINT, k STRING) PARTITIONED BY (k)
	WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json', 'sink.rolling-policy.rollover-interval' = '100 ms',
		'sink.partition-commit.policy.kind' = 'success-file');
INSERT INTO out_t SELECT id, v, k FROM ev;
`, chk, n-1, out)
	if err := os.WriteFile(script, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var restoreFrom string
	for run := range 3 {
		args := []string{"sql", "-f", script}
		if restoreFrom != "" {
			args = append(args, "--from-savepoint", restoreFrom)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		before := len(completedCheckpoints(chk))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if run == 2 {
			if err := <-done; err != nil {
				t.Fatalf("run %d: %v\n%s", run+1, err, buf.String())
			}
			break
		}
		for len(completedCheckpoints(chk)) < before+2 {
			select {
			case err := <-done:
				t.Fatalf("run %d ended before two checkpoints completed (%v)\n%s", run+1, err, buf.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err := <-done; err == nil {
			t.Fatalf("run %d finished before it was killed: make the job longer", run+1)
		}
		metas := completedCheckpoints(chk)
		restoreFrom = filepath.Dir(metas[len(metas)-1])
	}
	seen := make([]int, n)
	marked, dirs := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		if d.Name() == "_SUCCESS" {
			marked[filepath.Dir(rel)] = true
			return nil
		}
		dirs[filepath.Dir(rel)] = true
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r struct{ ID, V int64 }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %q: %v", rel, line, err)
			}
			if r.ID < 0 || r.ID >= n || r.V != r.ID*17%100 {
				t.Fatalf("%s: bad row %q", rel, line)
			}
			// k = 'k=<m>/ü', escaped: k=k%3D<m>%2Fü
			if want := fmt.Sprintf("k=k%%3D%d%%2Fü", r.ID*31%7); filepath.Dir(rel) != want {
				t.Fatalf("row %d in %s, want directory %s", r.ID, rel, want)
			}
			seen[r.ID]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The partition commit policy marked every partition (at the
	// checkpoints that published its files).
	if len(dirs) != 7 {
		t.Fatalf("%d partition directories, want 7: %v", len(dirs), dirs)
	}
	for d := range dirs {
		if !marked[d] {
			t.Fatalf("no _SUCCESS in %s", d)
		}
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("row %d written %d times", id, c)
		}
	}
}
