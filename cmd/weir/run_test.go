//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/cluster"
)

// The job tests submit examples/wordcount to JobManager and TaskManager
// processes and compare what it commits with a local run of the same
// program.

var wordcountBinary struct {
	once sync.Once
	path string
	err  error
}

// buildWordCount builds examples/wordcount once per test run, into the
// directory of the weir binary, which TestMain removes.
func buildWordCount(t *testing.T) string {
	t.Helper()
	buildWeir(t)
	wordcountBinary.once.Do(func() {
		wordcountBinary.path = filepath.Join(weirBinary.dir, "wordcount")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", wordcountBinary.path, wordcount).CombinedOutput(); err != nil {
			wordcountBinary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if wordcountBinary.err != nil {
		t.Fatal(wordcountBinary.err)
	}
	return wordcountBinary.path
}

// wordText returns lines of words from a small vocabulary.
func wordText(lines, seed int) string {
	vocab := []string{"alpha", "beta", "gamma", "delta", "Epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"}
	var b strings.Builder
	x := uint32(seed*7919 + 1)
	for i := range lines {
		n := i%5 + 1
		for j := range n {
			x = x*1664525 + 1013904223
			if j > 0 {
				b.WriteString(" ")
			}
			b.WriteString(vocab[int(x>>16)%len(vocab)])
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// runningCounts is the reference output of the streaming WordCount: for
// every occurrence of a word, in text order, "word k" where k counts the
// occurrences so far; sorted.
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

// committedLines returns the sorted lines of the published part files in
// dir.
func committedLines(t *testing.T, dir string) []string {
	t.Helper()
	lines, err := file.ReadLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

func diffLines(got, want []string) string {
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

var submittedID = regexp.MustCompile(`submitted with JobID ([0-9a-f]+)`)

func jobID(t *testing.T, stdout string) string {
	t.Helper()
	m := submittedID.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no job ID in the output of weir run:\n%s", stdout)
	}
	return m[1]
}

// waitJob polls GET /jobs/{id} until cond holds or d passes.
func waitJob(t *testing.T, client *cluster.RESTClient, id string, d time.Duration, what string, cond func(cluster.JobDetails) bool) cluster.JobDetails {
	t.Helper()
	deadline := time.Now().Add(d)
	var last cluster.JobDetails
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last, err = client.Job(ctx, id)
		cancel()
		if err == nil && cond(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("job %s: no %s within %v; last %+v, error %v", id, what, d, last, err)
	return last
}

// startCluster starts a JobManager with the given -D options and a
// TaskManager per entry of slots.
func startCluster(t *testing.T, env []string, slots []int, defines ...string) (jm *proc, rpc, rest string, tms []*proc) {
	t.Helper()
	var args []string
	for _, d := range defines {
		args = append(args, "-D", d)
	}
	jm, rpc, rest = startJobManager(t, env, args...)
	for i, n := range slots {
		tms = append(tms, startProc(t, fmt.Sprintf("taskmanager %d", i+1), env,
			"taskmanager", "--jobmanager", rpc, "--slots", strconv.Itoa(n)))
	}
	return jm, rpc, rest, tms
}

func TestClusterRunJobs(t *testing.T) {
	needGo(t)
	t.Parallel()
	const token = "run-token-0123456789"
	env := []string{"WEIR_TOKEN=" + token}
	jm, _, rest, _ := startCluster(t, env, []int{3, 3},
		"heartbeat.interval=100ms", "heartbeat.timeout=2s", "slot.request.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers with 6 slots", func(o cluster.Overview) bool {
		return o.TaskManagers == 2 && o.SlotsTotal == 6
	})
	tmIDs := map[string]bool{}
	tms, err := client.TaskManagers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range tms {
		tmIDs[tm.ID] = true
	}
	wc := buildWordCount(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(3000, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	rest = strings.TrimPrefix(rest, "http://")
	cli := func(args ...string) (string, string, int) {
		return weir(t, append([]string{args[0], "--jobmanager", rest, "--token", token}, args[1:]...)...)
	}

	// (a) The batch WordCount, built by weir run from its package and run
	// attached, commits what a local run commits.
	localOut := filepath.Join(dir, "local")
	if out, err := exec.Command(wc, "-p", "3", "--input", input, "--output", localOut).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	clusterOut := filepath.Join(dir, "cluster")
	start := time.Now()
	stdout, stderr, code := cli("run", "-p", "3", wordcount, "--input", input, "--output", clusterOut)
	if code != exitOK {
		t.Fatalf("weir run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("weir run (with go build) took %v", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(stdout, "FINISHED") {
		t.Errorf("weir run printed no FINISHED progress line:\n%s", stdout)
	}
	if d := diffLines(committedLines(t, clusterOut), committedLines(t, localOut)); d != "" {
		t.Errorf("the cluster run differs from the local run: %s", d)
	}
	id := jobID(t, stdout)
	d, err := client.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != cluster.JobFinished || d.Attempt != 1 || !tmIDs[d.TaskManager] || d.SlotsNeeded != 3 || len(d.Vertices) != 2 {
		t.Errorf("GET /jobs/%s = %+v", id, d)
	}
	for _, v := range d.Vertices {
		if v.Parallelism != 3 || v.TaskManager != d.TaskManager {
			t.Errorf("vertex %+v: want parallelism 3 on %s", v, d.TaskManager)
		}
	}
	for _, v := range d.Vertices {
		if len(v.Subtasks) != v.Parallelism {
			t.Errorf("vertex %s lists %d subtasks, parallelism %d", v.Name, len(v.Subtasks), v.Parallelism)
		}
		for _, st := range v.Subtasks {
			if st.TaskManager != d.TaskManager || st.Attempt != d.Attempt || st.TaskManagerAddress == "" {
				t.Errorf("vertex %s subtask %d placed at %+v, job on %s attempt %d", v.Name, st.Subtask, st, d.TaskManager, d.Attempt)
			}
		}
	}
	if d.Vertices[0].Metrics.ReadRecords+d.Vertices[0].Metrics.WriteRecords == 0 {
		t.Errorf("no records counted: %+v", d.Vertices)
	}

	// (b) The seeds' example: a job whose source and tokenizer have
	// parallelism 4 and whose keyed count has 3 needs 4 slots, more than
	// one TaskManager has, so it spreads over both; its subtasks exchange
	// records over TCP, and it commits what the local run commits.
	// Plain -p 4 first: every vertex at 4.
	localAll4 := filepath.Join(dir, "local-all-4")
	if out, err := exec.Command(wc, "-p", "4", "--input", input, "--output", localAll4).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	stdout, stderr, code = cli("run", "-p", "4", wc, "--input", input, "--output", filepath.Join(dir, "all-4"))
	if code != exitOK {
		t.Fatalf("weir run -p 4: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d := diffLines(committedLines(t, filepath.Join(dir, "all-4")), committedLines(t, localAll4)); d != "" {
		t.Errorf("the run across TaskManagers differs from the local run: %s", d)
	}
	d, err = client.Job(context.Background(), jobID(t, stdout))
	if err != nil {
		t.Fatal(err)
	}
	checkSpread(t, d, tmIDs, []int{4, 4})
	localP4 := filepath.Join(dir, "local-p4")
	if out, err := exec.Command(wc, "-p", "4", "--count-parallelism", "3", "--input", input, "--output", localP4).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	stdout, stderr, code = cli("run", "-p", "4", wc, "--count-parallelism", "3", "--input", input, "--output", filepath.Join(dir, "p4"))
	if code != exitOK {
		t.Fatalf("weir run -p 4: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d := diffLines(committedLines(t, filepath.Join(dir, "p4")), committedLines(t, localP4)); d != "" {
		t.Errorf("the run across TaskManagers differs from the local run: %s", d)
	}
	d, err = client.Job(context.Background(), jobID(t, stdout))
	if err != nil {
		t.Fatal(err)
	}
	checkSpread(t, d, tmIDs, []int{4, 3})

	// (b') A streaming job that needs more slots than the cluster has
	// waits, says why, and fails after slot.request.timeout.
	stdout, stderr, code = cli("run", "-p", "7", wc, "--mode", "streaming", "--input", input, "--output", filepath.Join(dir, "p7"))
	if code != exitError || !strings.Contains(stdout, "needs 7 slots, 6 of 6 are free on 2 TaskManagers") ||
		!strings.Contains(stderr, "slot.request.timeout") {
		t.Errorf("weir run -p 7: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d, err := client.Job(context.Background(), jobID(t, stdout)); err != nil || d.State != cluster.JobFailed || d.Attempt != 0 {
		t.Errorf("the job needing 7 slots: %+v, %v", d, err)
	}
	// (b'') The same job in batch mode runs in stages in the 6 slots there
	// are, and commits what the local run commits.
	localP7 := filepath.Join(dir, "local-p7")
	if out, err := exec.Command(wc, "-p", "7", "--input", input, "--output", localP7).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	stdout, stderr, code = cli("run", "-p", "7", wc, "--input", input, "--output", filepath.Join(dir, "p7-batch"))
	if code != exitOK {
		t.Fatalf("weir run -p 7 (batch): exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d := diffLines(committedLines(t, filepath.Join(dir, "p7-batch")), committedLines(t, localP7)); d != "" {
		t.Errorf("the batch run in 6 slots differs from the local run: %s", d)
	}
	if d, err := client.Job(context.Background(), jobID(t, stdout)); err != nil || d.State != cluster.JobFinished || d.Attempt != 1 || len(d.Workers) != 2 {
		t.Errorf("the batch job at p=7: %+v, %v", d, err)
	}

	// A slow streaming job takes a savepoint and is stopped with one;
	// another is cancelled.
	chk := filepath.Join(dir, "chk")
	streaming := func(p, rate, out string) string {
		stdout, stderr, code := cli("run", "-d", "-p", p, wc, "--mode", "streaming", "--input", input, "--output", out,
			"--rate", rate, "--checkpoint-interval", "200ms", "--checkpoint-dir", "file://"+chk)
		if code != exitOK {
			t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return jobID(t, stdout)
	}
	// The one to stop spreads over both TaskManagers: its leader worker
	// takes the savepoint with the other and then stops it.
	// One file means one reading source subtask: at p=4 it reads a
	// quarter of the rate, 200 lines a second. The other runs slowly
	// enough to be cancelled while it runs.
	stopID, cancelID := streaming("4", "800", filepath.Join(dir, "s1")), streaming("1", "50", filepath.Join(dir, "s2"))
	for _, id := range []string{stopID, cancelID} {
		waitJob(t, client, id, 20*time.Second, "running worker", func(d cluster.JobDetails) bool {
			return d.State == cluster.JobRunning && d.Vertices[0].Metrics.WriteRecords > 0
		})
	}
	stdout, stderr, code = cli("list")
	if code != exitOK || !strings.Contains(stdout, stopID) || !strings.Contains(stdout, cancelID) || strings.Contains(stdout, id) {
		t.Errorf("weir list: exit %d\n%s%s", code, stdout, stderr)
	}
	savepoints := filepath.Join(dir, "savepoints")
	stdout, stderr, code = cli("savepoint", stopID, savepoints)
	if code != exitOK || !strings.Contains(stdout, "Savepoint completed. Path: "+savepoints) {
		t.Errorf("weir savepoint: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = cli("stop", "--savepoint-path", savepoints, stopID)
	if code != exitOK || !strings.Contains(stdout, "Savepoint completed. Path: "+savepoints) {
		t.Errorf("weir stop: exit %d\n%s%s", code, stdout, stderr)
	}
	if m := regexp.MustCompile(`Path: (\S+)`).FindStringSubmatch(stdout); m != nil {
		if _, err := os.Stat(filepath.Join(m[1], "_metadata")); err != nil {
			t.Errorf("the stop savepoint has no _metadata: %v", err)
		}
		// Named as Flink names them: the JobID the user sees.
		if name := filepath.Base(m[1]); !strings.HasPrefix(name, "savepoint-"+stopID[:6]+"-") {
			t.Errorf("savepoint %s: want savepoint-%s-<random>", name, stopID[:6])
		}
	}
	waitJob(t, client, stopID, 10*time.Second, "FINISHED after stop", func(d cluster.JobDetails) bool { return d.State == cluster.JobFinished })
	stdout, stderr, code = cli("cancel", cancelID)
	if code != exitOK || !strings.Contains(stdout, "Cancelled job "+cancelID) {
		t.Errorf("weir cancel: exit %d\n%s%s", code, stdout, stderr)
	}

	// (d) Bad input gets clear errors, and the cluster keeps running.
	bad := filepath.Join(dir, "bad")
	os.Mkdir(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "go.mod"), []byte("module bad\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "main.go"), []byte("package main\n\nfunc main() { nope() }\n"), 0o644)
	_, stderr, code = cli("run", bad)
	if code != exitError || !strings.Contains(stderr, "cannot build") || !strings.Contains(stderr, "undefined: nope") {
		t.Errorf("weir run of a program that does not build: exit %d\n%s", code, stderr)
	}
	_, stderr, code = cli("run", filepath.Join(dir, "missing"))
	if code != exitError || !strings.Contains(stderr, "not found") {
		t.Errorf("weir run of a missing program: exit %d\n%s", code, stderr)
	}
	// A worker that fails is restarted by the job's restart strategy;
	// when none is left the job fails with the worker's error.
	stdout, stderr, code = cli("run", "-D", "restart-strategy.fixed-delay.attempts=1", "-D", "restart-strategy.fixed-delay.delay=100ms",
		wc, "--input", filepath.Join(dir, "no-such-input"))
	if code != exitError || !strings.Contains(stderr, "attempt 2 failed: worker exited with status 1") ||
		!strings.Contains(stderr, "no-such-input") || !strings.Contains(stderr, "restart-strategy.fixed-delay.attempts") {
		t.Errorf("weir run of a failing job: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d, err := client.Job(context.Background(), jobID(t, stdout)); err != nil || d.State != cluster.JobFailed || d.Attempt != 2 || d.Restarts != 1 {
		t.Errorf("the failing job: %+v, %v", d, err)
	}
	_, stderr, code = cli("cancel", "0123456789abcdef")
	if code != exitError || !strings.Contains(stderr, "job 0123456789abcdef not found") {
		t.Errorf("weir cancel of an unknown job: exit %d\n%s", code, stderr)
	}
	_, stderr, code = weir(t, "run", "--jobmanager", rest, "--token", "wrong", wc, "--input", input)
	if code != exitError || !strings.Contains(stderr, "401") {
		t.Errorf("weir run with a wrong token: exit %d\n%s", code, stderr)
	}
	waitOverview(t, client, 10*time.Second, "job counts", func(o cluster.Overview) bool {
		return o.JobsFinished == 5 && o.JobsFailed == 2 && o.JobsCancelled == 1 && o.JobsRunning == 0
	})
	ov, err := client.Overview(context.Background())
	if err != nil || ov.TaskManagers != 2 || ov.SlotsAvailable != 6 {
		t.Errorf("overview after the jobs: %+v, %v", ov, err)
	}
	select {
	case <-jm.done:
		t.Fatalf("the jobmanager exited: %v", jm.err)
	default:
	}
}

// checkSpread checks GET /jobs/{id} of a finished job that ran on both
// TaskManagers: the vertices have the given parallelisms, subtask s of
// every vertex runs in slot s (slot sharing) on one of the cluster's
// TaskManagers, the subtasks cover both of them, and one worker ran on
// each.
func checkSpread(t *testing.T, d cluster.JobDetails, tmIDs map[string]bool, parallelism []int) {
	t.Helper()
	if d.State != cluster.JobFinished || len(d.Vertices) != len(parallelism) || len(d.Workers) != 2 || d.SlotsNeeded != slices.Max(parallelism) {
		t.Fatalf("GET /jobs/%s = %+v", d.ID, d)
	}
	used := map[string]bool{}
	slotTM := map[int]string{}
	for i, v := range d.Vertices {
		if v.Parallelism != parallelism[i] || len(v.Subtasks) != v.Parallelism {
			t.Errorf("vertex %s: parallelism %d with %d subtasks listed, want %d", v.Name, v.Parallelism, len(v.Subtasks), parallelism[i])
		}
		for _, st := range v.Subtasks {
			if !tmIDs[st.TaskManager] || st.TaskManagerAddress == "" || st.Attempt != d.Attempt {
				t.Errorf("vertex %s subtask %d placed at %+v", v.Name, st.Subtask, st)
			}
			if tm, ok := slotTM[st.Subtask]; ok && tm != st.TaskManager {
				t.Errorf("vertex %s subtask %d runs on %s, but slot %d is on %s", v.Name, st.Subtask, st.TaskManager, st.Subtask, tm)
			}
			slotTM[st.Subtask] = st.TaskManager
			used[st.TaskManager] = true
		}
		if v.Metrics.ReadRecords+v.Metrics.WriteRecords == 0 {
			t.Errorf("vertex %s counted no records", v.Name)
		}
	}
	if len(used) != 2 {
		t.Errorf("the subtasks ran on %v, want both TaskManagers", used)
	}
	for _, w := range d.Workers {
		if !tmIDs[w.TaskManager] {
			t.Errorf("worker %+v on an unknown TaskManager", w)
		}
	}
}

// workerPIDs returns the processes whose environment says they are a
// worker of the given job attempt.
func workerPIDs(jobID string, attempt int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	want := fmt.Sprintf("/%s-%d/status.json", jobID, attempt)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(environ), want) && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestClusterFailover runs the streaming exactly-once WordCount on a
// TaskManager, SIGKILLs that TaskManager after a few checkpoints, starts a
// replacement, and checks that the job resumed from its latest checkpoint
// there and committed what a failure-free run commits.
func TestClusterFailover(t *testing.T) {
	needGo(t)
	t.Parallel()
	clusterFailover(t, 3, 2)
}

// TestClusterFailoverAcrossTaskManagers spreads the job (p=4) over two
// TaskManagers with 3 slots each and kills the leader's: the survivor
// alone cannot hold the job, which waits for the replacement.
func TestClusterFailoverAcrossTaskManagers(t *testing.T) {
	needGo(t)
	t.Parallel()
	clusterFailover(t, 3, 4)
}

// clusterFailover runs the streaming exactly-once WordCount at
// parallelism p on TaskManagers with slots slots each (as many as it
// needs), SIGKILLs the TaskManager of its leader worker after a few
// checkpoints, starts a replacement, and checks that the job resumed from
// its latest checkpoint and committed what a failure-free run commits.
func clusterFailover(t *testing.T, slots, p int) {
	taskManagers := (p + slots - 1) / slots
	tmSlots := make([]int, taskManagers)
	for i := range tmSlots {
		tmSlots[i] = slots
	}
	_, rpc, rest, tms := startCluster(t, nil, tmSlots,
		"heartbeat.interval=100ms", "heartbeat.timeout=1s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "the taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == taskManagers })
	wc := buildWordCount(t)

	dir := t.TempDir()
	// Files of the same size, one per source subtask, so that all read
	// until the end: checkpoints stop once a source subtask is done.
	input := filepath.Join(dir, "input")
	os.Mkdir(input, 0o755)
	var text string
	for i := range p {
		part := wordText(16000/p, i+2)
		text += part
		if err := os.WriteFile(filepath.Join(input, fmt.Sprintf("part-%d.txt", i)), []byte(part), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := runningCounts(text)
	args := func(out, chk string) []string {
		return []string{"--mode", "streaming", "--input", input, "--output", out,
			"--checkpoint-interval", "200ms", "--checkpoint-dir", "file://" + chk}
	}
	cleanOut := filepath.Join(dir, "clean")
	if out, err := exec.Command(wc, append(args(cleanOut, filepath.Join(dir, "clean-chk")), "-p", strconv.Itoa(p))...).CombinedOutput(); err != nil {
		t.Fatalf("failure-free local run: %v\n%s", err, out)
	}
	clean := committedLines(t, cleanOut)
	if d := diffLines(clean, want); d != "" {
		t.Fatalf("the failure-free run differs from the reference: %s", d)
	}

	out := filepath.Join(dir, "out")
	stdout, stderr, code := weir(t, append([]string{"run", "-d", "--jobmanager", strings.TrimPrefix(rest, "http://"), "-p", strconv.Itoa(p), wc},
		append(args(out, filepath.Join(dir, "chk")), "--rate", "3000")...)...)
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	d := waitJob(t, client, id, 30*time.Second, "3 completed checkpoints", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && d.Checkpoints.Completed >= 3
	})
	if len(workerPIDs(id, 1)) != taskManagers {
		t.Fatalf("want %d worker processes of attempt 1, got %v", taskManagers, workerPIDs(id, 1))
	}
	killed := d.TaskManager
	var victim *proc
	for _, tm := range tms {
		// A TaskManager logs its resource ID when it starts.
		if strings.Contains(tm.stderr.String(), killed) {
			victim = tm
		}
	}
	if victim == nil {
		t.Fatalf("no taskmanager process logged the leader's resource ID %s", killed)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	// The workers die with their TaskManager or are cancelled, so that
	// the restarted attempt is the only one writing.
	deadline := time.Now().Add(15 * time.Second)
	for len(workerPIDs(id, 1)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("workers of attempt 1 still run: %v", workerPIDs(id, 1))
		}
		time.Sleep(20 * time.Millisecond)
	}
	d = waitJob(t, client, id, 10*time.Second, "RESTARTING, waiting for slots", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRestarting && strings.Contains(d.Waiting, fmt.Sprintf("needs %d slots", p))
	})
	t.Logf("%v after the kill: %s; %s", time.Since(killedAt).Round(time.Millisecond), d.Waiting, d.Error)
	partial := committedLines(t, out)
	if len(partial) == 0 || len(partial) >= len(want) {
		t.Fatalf("%d of %d lines committed before the kill; want some, not all", len(partial), len(want))
	}
	startProc(t, "replacement taskmanager", nil, "taskmanager", "--jobmanager", rpc, "--slots", strconv.Itoa(slots))

	d = waitJob(t, client, id, 60*time.Second, "FINISHED", func(d cluster.JobDetails) bool {
		if d.State == cluster.JobFailed {
			t.Fatalf("job failed: %s", d.Error)
		}
		return d.State == cluster.JobFinished
	})
	if d.Attempt != 2 || d.Restarts != 1 || d.TaskManager == killed || d.TaskManager == "" || len(d.Workers) != taskManagers {
		t.Errorf("after the failover: %+v", d)
	}
	// The heartbeat timeout finds the lost TaskManager, unless the other
	// worker noticed first: its control link or a data channel to the
	// killed worker broke, on either end (network.ErrPeerClosed).
	lost := false
	for _, why := range []string{"taskmanager " + killed + " was lost", "lost the leader worker", "peer closed the channel mid-stream"} {
		lost = lost || strings.Contains(d.Error, why)
	}
	if d.Checkpoints.Latest == "" || !lost {
		t.Errorf("no latest checkpoint, or another error: %+v", d)
	}
	t.Logf("resumed and finished %v after the kill; %d checkpoints", time.Since(killedAt).Round(time.Millisecond), d.Checkpoints.Completed)
	got := committedLines(t, out)
	if diff := diffLines(got, clean); diff != "" {
		t.Errorf("after the failover, the committed output differs from the failure-free run: %s", diff)
	}
}

// TestFollowJobSeesAQuickEndAtOnce: weir run looks at a just-submitted
// job soon and then ever less often, so a job that ends within moments
// is reported ending then rather than a whole --poll later (500 ms by
// default, which made tiny jobs take 0.6 s on a warm cluster).
func TestFollowJobSeesAQuickEndAtOnce(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	submitted := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jobs/"+id {
			http.NotFound(w, r)
			return
		}
		state := cluster.JobRunning
		if time.Since(submitted) > 60*time.Millisecond {
			state = cluster.JobFinished
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(cluster.JobDetails{ID: id, Name: "tiny", State: state, Attempt: 1})
	}))
	defer srv.Close()
	client, err := cluster.NewRESTClient(strings.TrimPrefix(srv.URL, "http://"), cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var out bytes.Buffer
	if err := followJob(context.Background(), client, id, 500*time.Millisecond, &out, &out); err != nil {
		t.Fatal(err)
	}
	// Looks at about 0, 10, 30, 70 and 150 ms: the end at 60 ms is seen by
	// 70 ms, give or take a loaded machine; a fixed 500 ms poll sees it at 500.
	if took := time.Since(submitted); took > 300*time.Millisecond {
		t.Fatalf("followJob saw a job that finished after 60 ms only after %v\n%s", took, out.String())
	}
	if !strings.Contains(out.String(), "FINISHED") {
		t.Fatalf("no FINISHED line:\n%s", out.String())
	}
}
