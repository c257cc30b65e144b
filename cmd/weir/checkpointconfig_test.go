//go:build unix

package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

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
		status, body := restGet(t, rest+path, "")
		if status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, status, body)
		}
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
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
