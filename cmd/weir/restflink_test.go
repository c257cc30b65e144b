//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// TestClusterFlinkMonitoringAPI runs the WordCount on a cluster of
// processes and reads Flink's monitoring endpoints of the JobManager: the
// plan is the program's job graph, the overview counts its finished
// subtasks, the configuration is what the job was run with.
func TestClusterFlinkMonitoringAPI(t *testing.T) {
	needGo(t)
	t.Parallel()
	_, _, rest, _ := startCluster(t, nil, []int{4}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(strings.TrimPrefix(rest, "http://"), cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "1 taskmanager", func(o cluster.Overview) bool { return o.TaskManagers == 1 })
	wc := buildWordCount(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(500, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := weir(t, "run", "--jobmanager", strings.TrimPrefix(rest, "http://"), "-p", "2",
		"-D", "restart-strategy.type=none", wc, "--input", input, "--output", filepath.Join(dir, "out"))
	if code != exitOK {
		t.Fatalf("weir run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	// Not a terminal: plain progress lines with each vertex's records and
	// rates.
	if !strings.Contains(stdout, "/s) out ") || strings.Contains(stdout, "\x1b[") {
		t.Errorf("weir run's progress lines lack the vertices' rates, or hold terminal escapes:\n%s", stdout)
	}
	d, err := client.Job(context.Background(), id)
	if err != nil || d.State != cluster.JobFinished {
		t.Fatalf("GET /jobs/%s = %+v, %v", id, d, err)
	}
	get := func(path string, v any) {
		t.Helper()
		getREST(t, rest, path, v)
	}
	defer http.DefaultClient.CloseIdleConnections()

	var plan cluster.JobPlanJSON
	get("/jobs/"+id+"/plan", &plan)
	if len(plan.Plan.Nodes) != len(d.Vertices) || plan.Plan.JID != id || plan.Plan.Name != d.Name {
		t.Fatalf("plan %+v, job vertices %+v", plan.Plan, d.Vertices)
	}
	inputs := 0
	for i, n := range plan.Plan.Nodes {
		v := d.Vertices[i]
		if n.ID != v.ID || n.Parallelism != v.Parallelism || n.Operator != v.Name || n.OperatorStrategy == "" {
			t.Errorf("plan node %+v, vertex %s %q parallelism %d", n, v.ID, v.Name, v.Parallelism)
		}
		for _, in := range n.Inputs {
			inputs++
			// The WordCount's keyed count reads the tokenizer by hash.
			if in.ID != d.Vertices[0].ID || in.ShipStrategy != "HASH" || in.Exchange != "pipelined_bounded" {
				t.Errorf("plan node %s input %+v", n.ID, in)
			}
		}
	}
	if inputs != len(d.Vertices)-1 {
		t.Errorf("plan has %d inputs for %d vertices in a line: %+v", inputs, len(d.Vertices), plan.Plan.Nodes)
	}

	// GET /jobs/{id} carries the same plan, as Flink's JobDetailsInfo.
	var withPlan struct {
		Plan cluster.PlanJSON `json:"plan"`
	}
	get("/jobs/"+id, &withPlan)
	if !reflect.DeepEqual(withPlan.Plan, plan.Plan) {
		t.Errorf("GET /jobs/%s plan = %+v, want that of /plan %+v", id, withPlan.Plan, plan.Plan)
	}

	var ov cluster.JobsOverviewJSON
	get("/jobs/overview", &ov)
	total := 0
	for _, v := range d.Vertices {
		total += v.Parallelism
	}
	if len(ov.Jobs) != 1 || ov.Jobs[0].JID != id || ov.Jobs[0].State != cluster.JobFinished ||
		ov.Jobs[0].Tasks["total"] != total || ov.Jobs[0].Tasks["finished"] != total || ov.Jobs[0].EndTime < ov.Jobs[0].StartTime {
		t.Errorf("/jobs/overview = %+v, want the finished job with %d finished tasks", ov, total)
	}

	var jc cluster.JobConfigJSON
	get("/jobs/"+id+"/config", &jc)
	if jc.ExecutionConfig.JobParallelism != 2 || jc.ExecutionConfig.RestartStrategy != "Restart deactivated." ||
		jc.ExecutionConfig.UserConfig["restart-strategy.type"] != "none" {
		t.Errorf("/jobs/%s/config = %+v", id, jc)
	}
	var ex cluster.JobExceptionsJSON
	get("/jobs/"+id+"/exceptions", &ex)
	if ex.RootException != nil || len(ex.ExceptionHistory.Entries) != 0 {
		t.Errorf("exceptions of a job that never failed: %+v", ex)
	}
}

// TestCheckpointConfigSetInCode runs a program that enables checkpointing
// in its code (testdata/codecheckpoint: no -D option, no flag) on a
// cluster of two TaskManagers, and reads what Flink's tools read: the
// JobManager serves the checkpoint configuration the job runs with at
// GET /jobs/{id}/checkpoints/config while the job completes checkpoints,
// GET /jobs/{id} carries the plan, and GET /taskmanagers the TaskManagers'
// data ports, those of the job's workers, which exchange records.
func TestCheckpointConfigSetInCode(t *testing.T) {
	needGo(t)
	t.Parallel()
	_, _, rest, _ := startCluster(t, nil, []int{1, 1}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	program := filepath.Join(t.TempDir(), "codecheckpoint")
	if out, err := exec.Command("go", "build", "-o", program, "./testdata/codecheckpoint").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	chk := t.TempDir()
	host := strings.TrimPrefix(rest, "http://")
	stdout, stderr, code := weir(t, "run", "-d", "--jobmanager", host, "-p", "2", program, "--chk-dir", chk)
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	defer weir(t, "cancel", "--jobmanager", host, id)
	d := waitJob(t, client, id, 60*time.Second, "completed checkpoints and both workers' data listeners", func(d cluster.JobDetails) bool {
		if d.State != cluster.JobRunning || d.Checkpoints.Completed < 2 || len(d.Workers) != 2 {
			return false
		}
		for _, w := range d.Workers {
			if w.DataAddress == "" {
				return false
			}
		}
		return true
	})

	get := func(path string, v any) {
		t.Helper()
		getREST(t, rest, path, v)
	}
	defer http.DefaultClient.CloseIdleConnections()
	var cc cluster.CheckpointConfigJSON
	get("/jobs/"+id+"/checkpoints/config", &cc)
	want := cluster.CheckpointConfigJSON{Mode: "at_least_once", Interval: 200, Timeout: 600000, MinPause: 50, MaxConcurrent: 1,
		StateBackend: "HashMapStateBackend", CheckpointStorage: "FileSystemCheckpointStorage", TolerableFailedCheckpoints: 2,
		CheckpointsAfterTasksFinish: true, ChangelogPeriodicMaterialInterval: 600000, ChangelogStorage: "memory"}
	want.Externalization.Enabled = true // retained on cancellation, as the code says
	if cc != want {
		t.Errorf("checkpoint configuration\n got %+v\nwant %+v", cc, want)
	}

	var withPlan struct {
		Plan cluster.PlanJSON `json:"plan"`
	}
	get("/jobs/"+id, &withPlan)
	if p := withPlan.Plan; p.JID != id || p.Name != "code-checkpoint" || p.Type != "STREAMING" || len(p.Nodes) != len(d.Vertices) {
		t.Errorf("GET /jobs/{id} plan = %+v, want the job's %d vertices", p, len(d.Vertices))
	}

	var tms cluster.TaskManagersJSON
	get("/taskmanagers", &tms)
	workerPort := make(map[string]int)
	for _, w := range d.Workers {
		_, p, _ := net.SplitHostPort(w.DataAddress)
		workerPort[w.TaskManager], _ = strconv.Atoi(p)
	}
	if len(tms.TaskManagers) != 2 {
		t.Fatalf("GET /taskmanagers = %+v", tms)
	}
	for _, tm := range tms.TaskManagers {
		if tm.DataPort <= 0 || tm.DataPort != workerPort[tm.ID] || tm.Path != tm.Address || tm.JMXPort != -1 ||
			tm.TimeSinceLastHeartbeat < tm.Registered || tm.TotalResource.CPUCores != -1 || tm.MemoryConfiguration.TaskHeap != nil {
			t.Errorf("taskmanager %+v, want the data port %d of its worker", tm, workerPort[tm.ID])
		}
	}
}

// getREST decodes the JSON answer of a GET on a JobManager's REST API.
func getREST(t *testing.T, rest, path string, v any) {
	t.Helper()
	resp, err := http.Get(rest + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
