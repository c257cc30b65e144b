//go:build unix

package jdbc_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// metadataFiles lists the completed checkpoints under dir (every job's
// chk-<n>/_metadata), oldest first.
func metadataFiles(dir string) []string {
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

func checkpointNumber(dir string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "chk-"))
	return n
}

// TestSQLGroupByIntoJDBCSurvivesKill is the must-show: `weir sql -f
// job.sql` runs an updating GROUP BY with a HAVING (groups come and go)
// into a jdbc table with a primary key, with checkpoints every 200 ms
// retained on cancellation. The process is SIGKILLed after at least 2
// completed checkpoints, restarted with --from-savepoint on the newest
// one, killed again the same way, and restarted to finish: the table must
// then equal the brute-force result.
func TestSQLGroupByIntoJDBCSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the weir binary")
	}
	// 6 s at 20,000 rows a second. datagen's generator emits 1024 rows a
	// poll per subtask, and a checkpoint barrier passes only between
	// polls: a low rate leaves little room for checkpoints.
	const n = 120000
	dsn, db := database(t, "CREATE TABLE agg (k VARCHAR(10) PRIMARY KEY, cnt BIGINT NOT NULL, total BIGINT NOT NULL)")
	dir := t.TempDir()
	bin := filepath.Join(dir, "weir")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if out, err := osexec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/weirproject/weir/cmd/weir").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	chk := filepath.Join(dir, "chk")
	script := filepath.Join(dir, "job.sql")
	// A bounded job runs in batch mode at runtime unless told otherwise,
	// and batch jobs take no checkpoints.
	job := fmt.Sprintf(`SET 'execution.runtime-mode' = 'streaming';
SET 'execution.checkpointing.interval' = '200 ms';
SET 'state.checkpoints.num-retained' = '100';
SET 'execution.checkpointing.externalized-checkpoint-retention' = 'RETAIN_ON_CANCELLATION';
SET 'state.checkpoints.dir' = '%s';
SET 'parallelism.default' = '2';
%s;
CREATE TABLE agg (k STRING, cnt BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED)
	WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'agg', 'sink.buffer-flush.interval' = '100 ms');
INSERT INTO agg SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k HAVING MOD(COUNT(*), 3) <> 0;
`, chk, fmt.Sprintf(evDDL, 20000, n-1), dsn)
	if err := os.WriteFile(script, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	var restoreFrom string
	for run := range 3 {
		args := []string{"sql", "-f", script}
		if restoreFrom != "" {
			args = append(args, "--from-savepoint", restoreFrom)
		}
		cmd := osexec.CommandContext(ctx, bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		before := len(metadataFiles(chk))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if run == 2 {
			if err := <-done; err != nil {
				t.Fatalf("run %d: %v\n%s", run+1, err, out.String())
			}
			break
		}
		// Kill after two more completed checkpoints.
		for len(metadataFiles(chk)) < before+2 {
			select {
			case err := <-done:
				t.Fatalf("run %d ended before two checkpoints completed (%v): make the job longer\n%s", run+1, err, out.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err := <-done; err == nil {
			t.Fatalf("run %d finished before it was killed: make the job longer", run+1)
		}
		metas := metadataFiles(chk)
		latest := filepath.Dir(metas[len(metas)-1])
		// A job restored from chk-<n> numbers its checkpoints on from n:
		// the resumed run did start from the checkpoint.
		if restoreFrom != "" && checkpointNumber(latest) <= checkpointNumber(restoreFrom) {
			t.Fatalf("run %d restored from %s but its checkpoints start again at %s", run+1, restoreFrom, latest)
		}
		restoreFrom = latest
		t.Logf("run %d killed; %d checkpoints completed so far, resuming from %s", run+1, len(metas), strings.TrimPrefix(restoreFrom, dir))
	}
	if got, want := query(t, db, "SELECT k, cnt, total FROM agg"), bruteForce(n); !slices.Equal(got, want) {
		t.Fatalf("table agg holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
