//go:build unix

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/testmysql"
)

// TestStreamingWordCountJDBCSurvivesKill runs the streaming WordCount
// with --sink jdbc against a real MariaDB server as an OS process,
// SIGKILLs it twice after completed checkpoints and resumes it each time
// with --from-savepoint, and checks the table once the last run ended:
// in upsert mode it holds exactly the final count of every word, in
// exactly-once mode exactly one row (word, n) for every occurrence, and no
// XA transaction is left prepared.
func TestStreamingWordCountJDBCSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example, starts MariaDB and runs the job as a process several times")
	}
	server := testmysql.StartForTest(t)
	bin := buildExample(t)
	dir := t.TempDir()
	text := mixedText(20_000, 13)
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"upsert", "exactly-once"} {
		t.Run(mode, func(t *testing.T) {
			dsn := server.NewDatabase(t)
			db := testmysql.Open(t, dsn)
			args := func(extra ...string) []string {
				return append([]string{"--mode", "streaming", "--input", input, "-p", "2",
					"--sink", "jdbc", "--jdbc-url", dsn, "--jdbc-table", "words", "--jdbc-mode", mode,
					"--checkpoint-interval", "200ms", "--checkpoint-dir", filepath.Join(dir, mode+"-chk")}, extra...)
			}
			// progress is how far the committed table is: the sum of the
			// counts (upsert) or the number of rows (exactly once).
			var want []string
			var total int64
			query, progress := "SELECT word, count FROM words", "SELECT COALESCE(SUM(count), 0) FROM words"
			if mode == "upsert" {
				for w, n := range reference(text) {
					want = append(want, fmt.Sprintf("%s %d", w, n))
					total += n
				}
				slices.Sort(want)
			} else {
				want = runningCounts(text)
				total = int64(len(want))
				query, progress = "SELECT word, n FROM words", "SELECT COUNT(*) FROM words"
			}
			killAndResume(t, bin, args, func() int64 {
				var n int64
				if err := db.QueryRow(progress).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if mode == "exactly-once" {
					t.Logf("%d XA transactions prepared after the kill", countPrepared(t, db))
				}
				return n
			}, total, func() bool {
				// Exactly once, the kill should come while transactions
				// are prepared but not committed, so that the resumed run
				// has some to commit and some to roll back.
				return mode != "exactly-once" || countPrepared(t, db) > 0
			})
			got := rowsOf(t, db, query)
			if d := compareLines(got, want); d != "" {
				t.Fatalf("after two kills the table differs from the reference: %s", d)
			}
			if prepared := countPrepared(t, db); prepared != 0 {
				t.Fatalf("%d XA transactions are still prepared", prepared)
			}
			t.Logf("%s: %d rows, as the reference", mode, len(got))
		})
	}
}

// killAndResume runs the job throttled, SIGKILLs it twice after a few
// completed checkpoints, resuming it each time from the newest one, and
// lets the last run finish. After each kill the table's progress must be
// more than 0 and less than its final value. The kill waits, for 2 s at
// most, until ready holds too.
func killAndResume(t *testing.T, bin string, args func(extra ...string) []string, progress func() int64, final int64, ready func() bool) {
	chkDir := ""
	for i, a := range args() {
		if a == "--checkpoint-dir" {
			chkDir = args()[i+1]
		}
	}
	if err := os.MkdirAll(chkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var restored checkpoint
	for range 2 {
		// 5,000 lines a second: the whole input takes 4 s, which leaves
		// time for several checkpoints before each kill.
		extra := []string{"--rate", "5000"}
		if restored.id > 0 {
			extra = append(extra, "--from-savepoint", restored.path)
		}
		before := jobDirs(chkDir)
		p := startProcess(t, bin, args(extra...)...)
		var jobDir string
		var reached time.Time
		waitFor(t, p, 60*time.Second, fmt.Sprintf("checkpoint %d", restored.id+3), func() bool {
			if reached.IsZero() {
				for d := range jobDirs(chkDir) {
					if !before[d] {
						jobDir = d
					}
				}
				if c, ok := latestCheckpoint(jobDir); !ok || c.id < restored.id+3 {
					return false
				}
				reached = time.Now()
			}
			return ready() || time.Since(reached) > 2*time.Second
		})
		p.stop(t, syscall.SIGKILL)
		var ok bool
		if restored, ok = latestCheckpoint(jobDir); !ok {
			t.Fatalf("no checkpoint left in %s", jobDir)
		}
		n := progress()
		if n == 0 || n >= final {
			t.Fatalf("after the kill the table is at %d of %d; want some of the output, not all", n, final)
		}
		t.Logf("killed after %v: resuming from %s with the table at %d of %d",
			p.elapsed().Round(time.Millisecond), filepath.Base(restored.path), n, final)
	}
	p := startProcess(t, bin, args("--from-savepoint", restored.path)...)
	if err := p.wait(60 * time.Second); err != nil {
		t.Fatalf("the last resumed run: %v\n%s", err, p.output())
	}
}

// rowsOf returns the rows of a two-column query as sorted "a b" lines.
func rowsOf(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var w string
		var n int64
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d", w, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestJDBCFlags: the --sink jdbc flags are checked before anything runs.
func TestJDBCFlags(t *testing.T) {
	bin := buildExample(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sink", "kafka"}, `invalid value "kafka" for flag --sink`},
		{[]string{"--sink", "jdbc", "--jdbc-table", "t"}, "--sink jdbc needs --jdbc-url and --jdbc-table"},
		{[]string{"--sink", "jdbc", "--jdbc-url", "u@tcp(127.0.0.1:1)/d", "--jdbc-table", "t", "--jdbc-mode", "twice"}, `invalid value "twice" for flag --jdbc-mode`},
		{[]string{"--sink", "jdbc", "--jdbc-url", "u@tcp(127.0.0.1:1)/d", "--jdbc-table", "t", "--output", "x"}, "exclude each other"},
		{[]string{"--sink", "jdbc", "--jdbc-url", "not a dsn", "--jdbc-table", "t"}, "want user:pass@tcp(host:port)/db"},
	} {
		out, err := exec.Command(bin, append([]string{"--mode", "streaming"}, tc.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: %v, %s; want an error saying %q", tc.args, err, out, tc.want)
		}
	}
}

// countPrepared counts the XA transactions the server holds prepared.
func countPrepared(t *testing.T, db *sql.DB) int {
	t.Helper()
	rows, err := db.Query("XA RECOVER")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n
}
