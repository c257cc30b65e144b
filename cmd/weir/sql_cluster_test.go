//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// sqlClusterScript is a bounded SQL job over a datagen source, with a
// filter, computed values, NULLs and strings, into a filesystem sink at
// out. The session's time zone (a setting of the SQL layer, which the
// worker must get too) shows in the column t.
func sqlClusterScript(out, settings string) string {
	return settings + `
SET 'table.local-time-zone' = 'Asia/Kolkata';
CREATE TEMPORARY TABLE src (
  id BIGINT,
  k INT,
  s STRING,
  d DOUBLE
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '3000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000',
  'fields.k.min' = '0', 'fields.k.max' = '40',
  'fields.s.length' = '6', 'fields.s.null-rate' = '0.1'
);
CREATE TABLE out_t (id BIGINT, k2 INT, s STRING, d DOUBLE, t STRING) WITH (
  'connector' = 'filesystem', 'path' = '` + out + `', 'format' = 'csv'
);
INSERT INTO out_t SELECT id, k * 2, UPPER(s), ROUND(d, 3), CAST(TO_TIMESTAMP_LTZ(id * 1000, 0) AS STRING) FROM src WHERE k % 3 <> 0 OR s IS NULL;
`
}

// readParts returns the lines of a filesystem table's finished part
// files, sorted.
func readParts(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

var jobIDLine = regexp.MustCompile(`(?m)^Job ID: ([0-9a-f]+)$`)

// sqlClusterFixture starts a cluster of one TaskManager with the given
// slots and returns its REST client and address, a directory for scripts
// and outputs with a function that writes a script there, and the rows of
// the reference script (sqlClusterScript) run on the embedded cluster at
// parallelism slots.
func sqlClusterFixture(t *testing.T, slots int, opts ...string) (*cluster.RESTClient, string, string, func(name, text string) string, []string) {
	t.Helper()
	_, _, rest, _ := startCluster(t, nil, []int{slots}, append([]string{"heartbeat.interval=100ms", "heartbeat.timeout=2s"}, opts...)...)
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	waitOverview(t, client, 10*time.Second, fmt.Sprintf("a taskmanager with %d slots", slots), func(o cluster.Overview) bool { return o.SlotsTotal == slots })
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	localOut := filepath.Join(dir, "local")
	if stdout, stderr, code := weir(t, "sql", "-p", strconv.Itoa(slots), "-f", write("local.sql", sqlClusterScript(localOut, ""))); code != 0 {
		t.Fatalf("local weir sql: exit %d\n%s\n%s", code, stdout, stderr)
	}
	want := readParts(t, localOut)
	if len(want) < 1000 {
		t.Fatalf("the local run wrote %d rows", len(want))
	}
	return client, strings.TrimPrefix(rest, "http://"), dir, write, want
}

// TestSQLOnCluster runs INSERT INTO scripts with weir sql --jobmanager: the
// weir executable is the artifact, a TaskManager runs the statement as
// weir sql in worker mode, and the files it writes equal those of the same
// script run locally.
func TestSQLOnCluster(t *testing.T) {
	t.Parallel()
	client, addr, dir, write, want := sqlClusterFixture(t, 2)

	// table.dml-sync: the client waits for the job to finish.
	syncOut := filepath.Join(dir, "sync")
	p := startProc(t, "sql client", nil, "sql", "--jobmanager", addr, "-p", "2",
		"-f", write("sync.sql", sqlClusterScript(syncOut, "SET 'table.dml-sync' = 'true';\nSET 'pipeline.name' = 'it''s sql';\n")))
	if code := p.waitExit(t, 90*time.Second); code != 0 {
		t.Fatalf("weir sql --jobmanager exited %d:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	m := jobIDLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no Job ID in the output:\n%s", p.stdout.String())
	}
	job, err := client.Job(context.Background(), m[1])
	if err != nil {
		t.Fatal(err)
	}
	if job.State != cluster.JobFinished || job.Name != "it's sql" {
		t.Fatalf("job %s: state %s, name %q; want FINISHED, \"it's sql\"", m[1], job.State, job.Name)
	}
	if got := readParts(t, syncOut); !slices.Equal(got, want) {
		t.Fatalf("on the cluster: %d rows, locally %d; they differ", len(got), len(want))
	}

	// By default (Flink's), the client returns once the job is submitted.
	asyncOut := filepath.Join(dir, "async")
	p = startProc(t, "sql client", nil, "sql", "--jobmanager", addr, "-f", write("async.sql", sqlClusterScript(asyncOut, "")), "-p", "2")
	if code := p.waitExit(t, 60*time.Second); code != 0 {
		t.Fatalf("weir sql --jobmanager exited %d:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	m = jobIDLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no Job ID in the output:\n%s", p.stdout.String())
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		job, err = client.Job(context.Background(), m[1])
		if err != nil {
			t.Fatal(err)
		}
		if cluster.IsTerminalJobState(job.State) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after 60s", m[1], job.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if job.State != cluster.JobFinished || !strings.HasPrefix(job.Name, "INSERT INTO out_t SELECT") {
		t.Fatalf("job %s: state %s (%s), name %q", m[1], job.State, job.Error, job.Name)
	}
	if got := readParts(t, asyncOut); !slices.Equal(got, want) {
		t.Fatalf("on the cluster (async): %d rows, locally %d; they differ", len(got), len(want))
	}

	// A statement set is one job with both sinks; --from-savepoint goes
	// with the submission (a savepoint that does not exist fails the job,
	// naming it).
	setScript := func(a, b, settings string) string {
		return settings + `
CREATE TEMPORARY TABLE src (id BIGINT, k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '2000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '2000', 'fields.k.min' = '0', 'fields.k.max' = '9');
CREATE TABLE a (id BIGINT, k INT) WITH ('connector' = 'filesystem', 'path' = '` + a + `', 'format' = 'json');
CREATE TABLE b (k INT, id BIGINT) WITH ('connector' = 'filesystem', 'path' = '` + b + `', 'format' = 'csv');
EXECUTE STATEMENT SET BEGIN
  INSERT INTO a SELECT id, k FROM src WHERE k < 5;
  INSERT INTO b SELECT k, id * 10 FROM src WHERE k >= 5;
END;
`
	}
	la, lb := filepath.Join(dir, "la"), filepath.Join(dir, "lb")
	if stdout, stderr, code := weir(t, "sql", "-f", write("set-local.sql", setScript(la, lb, ""))); code != 0 {
		t.Fatalf("local statement set: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ra, rb := filepath.Join(dir, "ra"), filepath.Join(dir, "rb")
	p = startProc(t, "sql client", nil, "sql", "--jobmanager", addr, "-f", write("set.sql", setScript(ra, rb, "SET 'table.dml-sync' = 'true';\n")))
	if code := p.waitExit(t, 90*time.Second); code != 0 {
		t.Fatalf("statement set with --jobmanager exited %d:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	if n := len(jobIDLine.FindAllString(p.stdout.String(), -1)); n != 1 {
		t.Fatalf("%d Job IDs for one statement set:\n%s", n, p.stdout.String())
	}
	for _, d := range [][2]string{{la, ra}, {lb, rb}} {
		want, got := readParts(t, d[0]), readParts(t, d[1])
		if len(want) < 500 || !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows on the cluster, %d locally", d[1], len(got), len(want))
		}
	}
	missing := filepath.Join(dir, "no-such-savepoint", "chk-7")
	p = startProc(t, "sql client", nil, "sql", "--jobmanager", addr, "--from-savepoint", missing,
		"-f", write("restore.sql", setScript(filepath.Join(dir, "xa"), filepath.Join(dir, "xb"), "SET 'table.dml-sync' = 'true';\n")))
	if code := p.waitExit(t, 90*time.Second); code == 0 || !strings.Contains(p.stderr.String(), missing) || !strings.Contains(p.stderr.String(), "failed") {
		t.Fatalf("--from-savepoint %s: exit %d\n%s\n%s", missing, code, p.stdout.String(), p.stderr.String())
	}

	// Queries are refused with a clear message.
	stdout, stderr, code := weir(t, "sql", "--jobmanager", addr, "-f", write("q.sql", "SELECT 1;"))
	if code == 0 || !strings.Contains(stderr, "cannot run on a remote cluster (--jobmanager)") {
		t.Fatalf("SELECT with --jobmanager: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestSQLOnClusterDefaultParallelism is issue 39's newcomer: a cluster of
// one TaskManager with one slot, as weir cluster start makes it, and weir
// sql --jobmanager without -p. The job runs at the cluster's
// parallelism.default (1), not at the client's CPU count, to FINISHED
// with every row. A job that asks for more slots than the cluster has (-p,
// SET, -D) is told so at once on standard error, with the parallelism that
// fits, and fails after slot.request.timeout with that reason; a batch job
// runs in stages in the one slot and is told nothing.
func TestSQLOnClusterDefaultParallelism(t *testing.T) {
	t.Parallel()
	client, addr, dir, write, want := sqlClusterFixture(t, 1, "slot.request.timeout=3s")
	submitted := func(p *proc) string {
		t.Helper()
		m := jobIDLine.FindStringSubmatch(p.stdout.String())
		if m == nil {
			t.Fatalf("no Job ID in the output:\n%s\n%s", p.stdout.String(), p.stderr.String())
		}
		return m[1]
	}

	// As a newcomer runs it: no -p, no table.dml-sync.
	out := filepath.Join(dir, "default")
	p := startProc(t, "sql client", nil, "sql", "--jobmanager", addr, "-f", write("default.sql", sqlClusterScript(out, "")))
	if code := p.waitExit(t, 60*time.Second); code != 0 || strings.Contains(p.stderr.String(), "needs") {
		t.Fatalf("weir sql --jobmanager without -p: exit %d\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	id := submitted(p)
	job := waitJob(t, client, id, 60*time.Second, "end", func(d cluster.JobDetails) bool { return cluster.IsTerminalJobState(d.State) })
	if job.State != cluster.JobFinished || job.SlotsNeeded != 1 {
		t.Fatalf("job %s without -p: state %s (%s), %d slots; want FINISHED in 1", id, job.State, job.Error, job.SlotsNeeded)
	}
	for _, v := range job.Vertices {
		if v.Parallelism != 1 {
			t.Errorf("vertex %s runs at parallelism %d, want the cluster's 1", v.Name, v.Parallelism)
		}
	}
	if got := readParts(t, out); !slices.Equal(got, want) {
		t.Fatalf("on the cluster: %d rows, locally %d; they differ", len(got), len(want))
	}

	// -p 2 on one slot: told at once, and the job fails after
	// slot.request.timeout, saying why.
	p = startProc(t, "sql client", nil, "sql", "--jobmanager", addr, "-p", "2",
		"-f", write("p2.sql", sqlClusterScript(filepath.Join(dir, "p2"), "SET 'table.dml-sync' = 'true';\n")))
	code := p.waitExit(t, 60*time.Second)
	stderr := p.stderr.String()
	for _, s := range []string{"weir sql: the job needs 2 slots, but the cluster has 1 (1 free, 1 TaskManagers)", "-p 1 or SET 'parallelism.default' = '1'",
		"failed: no slots within slot.request.timeout (3s): the job needs 2 slots, 1 of 1 are free"} {
		if code == 0 || !strings.Contains(stderr, s) {
			t.Fatalf("weir sql -p 2 on 1 slot: exit %d, want an error and %q in\n%s\n%s", code, s, p.stdout.String(), stderr)
		}
	}
	if strings.Index(stderr, "the job needs") > strings.Index(stderr, "failed:") {
		t.Errorf("the warning came after the failure:\n%s", stderr)
	}

	// SET and -D override the cluster's default as -p does.
	for _, c := range []struct {
		what, settings string
		args           []string
	}{
		{"SET 'parallelism.default'", "SET 'parallelism.default' = '2';\n", nil},
		{"-D parallelism.default", "", []string{"-D", "parallelism.default=2"}},
	} {
		args := append([]string{"sql", "--jobmanager", addr}, c.args...)
		p = startProc(t, "sql client", nil, append(args, "-f", write("set.sql", sqlClusterScript(filepath.Join(dir, "set"), c.settings)))...)
		if code := p.waitExit(t, 60*time.Second); code != 0 || !strings.Contains(p.stderr.String(), "the job needs 2 slots, but the cluster has 1") {
			t.Fatalf("%s = 2: exit %d\n%s\n%s", c.what, code, p.stdout.String(), p.stderr.String())
		}
		id := submitted(p)
		job := waitJob(t, client, id, 30*time.Second, "end", func(d cluster.JobDetails) bool { return cluster.IsTerminalJobState(d.State) })
		if job.State != cluster.JobFailed || job.SlotsNeeded != 2 || !strings.Contains(job.Error, "needs 2 slots, 1 of 1 are free") {
			t.Fatalf("%s = 2: job %s %s in %d slots (%s); want FAILED for want of slots", c.what, id, job.State, job.SlotsNeeded, job.Error)
		}
	}

	// A batch job at -p 2 runs in stages in the one slot, unwarned.
	batchOut := filepath.Join(dir, "batch")
	p = startProc(t, "sql client", nil, "sql", "--jobmanager", addr, "-p", "2", "-D", "execution.runtime-mode=batch",
		"-f", write("batch.sql", sqlClusterScript(batchOut, "SET 'table.dml-sync' = 'true';\n")))
	if code := p.waitExit(t, 60*time.Second); code != 0 || strings.Contains(p.stderr.String(), "needs") {
		t.Fatalf("batch at -p 2 on 1 slot: exit %d\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	localBatch := filepath.Join(dir, "local-batch")
	if stdout, stderr, code := weir(t, "sql", "-p", "2", "-D", "execution.runtime-mode=batch", "-f", write("local-batch.sql", sqlClusterScript(localBatch, ""))); code != 0 {
		t.Fatalf("local weir sql in batch mode: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got, want := readParts(t, batchOut), readParts(t, localBatch); len(want) < 1000 || !slices.Equal(got, want) {
		t.Fatalf("batch at -p 2 on 1 slot: %d rows, locally %d; they differ", len(got), len(want))
	}
}

// TestSQLOnClusterUnreachable: a JobManager nobody answers at fails at
// once, naming the address.
func TestSQLOnClusterUnreachable(t *testing.T) {
	t.Parallel()
	addr := deadAddress(t)
	script := filepath.Join(t.TempDir(), "s.sql")
	if err := os.WriteFile(script, []byte(sqlClusterScript(filepath.Join(t.TempDir(), "o"), "")), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := weir(t, "sql", "--jobmanager", addr, "-f", script)
	if code == 0 || !strings.Contains(stderr, fmt.Sprintf("cannot reach the JobManager at %s", addr)) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
