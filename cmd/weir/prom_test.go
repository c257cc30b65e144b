//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weirproject/weir/internal/cluster"
)

// TestPrometheusEndpoints runs a job on a JobManager and a TaskManager
// that serve Prometheus endpoints (metrics.reporter.prom.port), scrapes
// both while the job runs and has Prometheus's own promtool parse them:
// no format error (its naming advice about Flink's camelCase names
// aside), and the task metrics carry the job's name.
func TestPrometheusEndpoints(t *testing.T) {
	needGo(t)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_SYSTEMS") == "1" {
			t.Fatal("promtool (Debian's prometheus) is not installed")
		}
		t.Skip("promtool (Debian's prometheus) is not installed")
	}
	t.Parallel()
	jmProm, tmProm := freePort(t), freePort(t)
	jm, rpc, rest := startJobManager(t, nil, "-D", "heartbeat.interval=100ms", "-D", "heartbeat.timeout=2s",
		"-D", "metrics.reporter.prom.port="+jmProm)
	tm := startProc(t, "taskmanager", nil, "taskmanager", "--jobmanager", rpc, "--slots", "2",
		"-D", "metrics.reporter.prom.port="+tmProm+"-"+tmProm)
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "1 taskmanager", func(o cluster.Overview) bool { return o.TaskManagers == 1 })
	program := filepath.Join(t.TempDir(), "slowsink")
	if out, err := exec.Command("go", "build", "-o", program, "./testdata/slowsink").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stdout, stderr, code := weir(t, "run", "-d", "--jobmanager", strings.TrimPrefix(rest, "http://"), "-p", "1", program, "--rate", "1000000000", "--keys", "100")
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	defer weir(t, "cancel", "--jobmanager", strings.TrimPrefix(rest, "http://"), id)
	waitJob(t, client, id, 30*time.Second, "records at the sink", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && len(d.Vertices) == 2 && d.Vertices[1].Metrics.ReadRecords > 0
	})

	scrape := func(who, port string) string {
		t.Helper()
		resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: GET /metrics: %s\n%s", who, resp.Status, body)
		}
		// promtool's naming advice about Flink's camelCase names.
		advice := regexp.MustCompile(`camelCase`)
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, _ := cmd.CombinedOutput()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" && !advice.MatchString(line) {
				t.Errorf("%s: promtool check metrics: %s", who, line)
			}
		}
		return string(body)
	}
	// The keyed reduce's state size, at Flink's operator scope.
	stateEntries := regexp.MustCompile(`weir_taskmanager_job_task_operator_stateEntries\{[^}]*operator_name="latest"[^}]*\} 100\n`)
	var tmText string
	deadline := time.Now().Add(15 * time.Second)
	for {
		tmText = scrape("taskmanager", tmProm)
		if (strings.Contains(tmText, `weir_taskmanager_job_task_numRecordsIn{`) && stateEntries.MatchString(tmText)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	jmText := scrape("jobmanager", jmProm)
	for _, want := range []string{
		`job_name="backpressure"`, `job_id="` + id + `"`, `task_name="latest -> Sink: slow"`, `weir_taskmanager_job_task_backPressuredTimeMsPerSecond{`,
		`weir_taskmanager_job_task_busyTimeMsPerSecond{`, `weir_taskmanager_job_worker_heapBytes{`, "go_goroutines", "process_open_fds",
	} {
		if !strings.Contains(tmText, want) {
			t.Errorf("the taskmanager's metrics lack %s", want)
		}
	}
	if !stateEntries.MatchString(tmText) {
		t.Errorf("the taskmanager's metrics lack the keyed reduce's stateEntries 100 (%s)", stateEntries)
	}
	for _, want := range []string{`weir_jobmanager_job_numRestarts{job_id="` + id + `",job_name="backpressure"} 0`,
		"weir_jobmanager_numRegisteredTaskManagers 1"} {
		if !strings.Contains(jmText, want) {
			t.Errorf("the jobmanager's metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("taskmanager:\n%s\njobmanager:\n%s", tmText, jmText)
	}
	// Profiles on demand: a goroutine profile of the job's worker through
	// the JobManager shows the task goroutines with their vertex labels,
	// and a flame graph of the busy sink vertex has samples of its
	// writer.
	d, err := client.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	source, sink := d.Vertices[0], d.Vertices[1]
	// The same gauge on the REST API, under Flink's operator metric id.
	var state []cluster.MetricJSON
	getREST(t, rest, "/jobs/"+id+"/vertices/"+sink.ID+"/metrics?get=0.latest.stateEntries", &state)
	if len(state) != 1 || state[0].Value == nil || *state[0].Value != "100" {
		t.Errorf("GET .../metrics?get=0.latest.stateEntries = %+v, want 100", state)
	}
	resp, err := http.Get(rest + "/taskmanagers/" + source.Subtasks[0].TaskManager + "/profile?type=goroutine")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("goroutine profile: %s %s", resp.Status, data)
	}
	prof, err := profile.ParseData(data)
	if err != nil {
		t.Fatalf("goroutine profile: %v", err)
	}
	labelled := map[string]bool{}
	for _, smp := range prof.Sample {
		for _, v := range smp.Label["vertex"] {
			labelled[v] = true
		}
	}
	if !labelled[source.ID] || !labelled[sink.ID] {
		t.Errorf("goroutine profile: vertex labels %v, want %s and %s", labelled, source.ID, sink.ID)
	}
	var fg cluster.FlameGraphJSON
	getREST(t, rest, "/jobs/"+id+"/vertices/"+sink.ID+"/flamegraph?seconds=2", &fg)
	var names []string
	var check func(n *cluster.FlameNodeJSON)
	check = func(n *cluster.FlameNodeJSON) {
		names = append(names, n.Name)
		sum := int64(0)
		for _, c := range n.Children {
			sum += c.Value
			check(c)
		}
		if sum > n.Value {
			t.Errorf("flame graph node %s: children hold %d samples, more than its %d", n.Name, sum, n.Value)
		}
	}
	if fg.Data == nil || fg.Data.Value == 0 {
		t.Fatalf("flame graph of the sink: %+v", fg)
	}
	check(fg.Data)
	if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "slowWriter") }) {
		t.Errorf("flame graph of the sink (%d samples) has no frame of its writer: %v", fg.Data.Value, names)
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "runtime.RunSource") }) {
		t.Errorf("flame graph of the sink holds the source task's frames")
	}
	if code, _ := getStatus(rest + "/taskmanagers/nope/profile?job=" + id); code != http.StatusNotFound {
		t.Errorf("profile of an unknown taskmanager: %d, want 404", code)
	}
	if code, _ := getStatus(rest + "/taskmanagers/" + source.Subtasks[0].TaskManager + "/profile?type=bogus"); code != http.StatusBadRequest {
		t.Errorf("profile of an unknown type: %d, want 400", code)
	}

	// Flink's /taskmanagers/{id}/metrics: the TaskManager and its worker.
	var tmMetrics []cluster.MetricJSON
	waitFor := time.Now().Add(5 * time.Second)
	for {
		getREST(t, rest, "/taskmanagers/"+source.Subtasks[0].TaskManager+"/metrics?get=Status.JVM.Memory.Heap.Used,Status.Process.Count", &tmMetrics)
		if len(tmMetrics) == 2 && *tmMetrics[1].Value == "2" || time.Now().After(waitFor) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(tmMetrics) != 2 || *tmMetrics[0].Value == "0" || *tmMetrics[1].Value != "2" {
		t.Errorf("/taskmanagers/{id}/metrics = %v, want the heap in use and 2 processes (the taskmanager and the job's worker)", tmMetrics)
	}

	// The logs name the endpoints.
	if !jm.waitStderr("prometheus metrics", time.Second) || !tm.waitStderr("prometheus metrics", time.Second) {
		t.Errorf("the processes did not log their Prometheus endpoints")
	}
}

// getStatus GETs url and returns the status code and body.
func getStatus(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
