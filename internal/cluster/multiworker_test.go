package cluster

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

func TestJobPlanSlotOfAndPlacement(t *testing.T) {
	var plan JobPlan
	err := json.Unmarshal([]byte(`{"Vertices": [
		{"Name": "source", "Parallelism": 4, "SlotSharingGroup": "default"},
		{"Name": "map", "Parallelism": 4, "SlotSharingGroup": "default"},
		{"Name": "reduce", "Parallelism": 3, "SlotSharingGroup": "default"}]}`), &plan)
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.SlotsNeeded(); n != 4 {
		t.Fatalf("SlotsNeeded = %d, want 4", n)
	}
	for v, want := range [][]int{{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2}} {
		for s, k := range want {
			if got := plan.SlotOf(v, s); got != k {
				t.Errorf("SlotOf(%d, %d) = %d, want %d", v, s, got, k)
			}
		}
	}

	// Two groups, numbered in the order in which they first appear; the
	// second group's width is its widest vertex.
	err = json.Unmarshal([]byte(`{"Vertices": [
		{"Name": "source", "Parallelism": 2, "SlotSharingGroup": "b"},
		{"Name": "map", "Parallelism": 3, "SlotSharingGroup": "a"},
		{"Name": "window", "Parallelism": 3, "SlotSharingGroup": "b"},
		{"Name": "sink", "Parallelism": 1, "SlotSharingGroup": "a"}]}`), &plan)
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.SlotsNeeded(); n != 6 {
		t.Fatalf("SlotsNeeded = %d, want 3 + 3", n)
	}
	for _, tt := range []struct{ v, s, want int }{
		{0, 0, 0}, {0, 1, 1}, {2, 2, 2}, // group b: slots 0-2
		{1, 0, 3}, {1, 2, 5}, {3, 0, 3}, // group a: slots 3-5
	} {
		if got := plan.SlotOf(tt.v, tt.s); got != tt.want {
			t.Errorf("SlotOf(%d, %d) = %d, want %d", tt.v, tt.s, got, tt.want)
		}
	}

	tms, placement := placeWorkers([]SlotID{{"b", 0}, {"a", 0}, {"b", 1}, {"c", 0}, {"a", 1}})
	if !slices.Equal(tms, []string{"b", "a", "c"}) || !slices.Equal(placement, []int{0, 1, 0, 2, 1}) {
		t.Errorf("placeWorkers = %v, %v; want [b a c], [0 1 0 2 1]", tms, placement)
	}
}

// scriptedTM is a TaskManager whose heartbeat answers the test sets. It
// records the submissions and cancellations it gets; a cancellation of a
// reported attempt turns it CANCELED.
type scriptedTM struct {
	rpcpb.UnimplementedTaskManagerServer
	id, regID, addr string
	server          *grpc.Server

	mu      sync.Mutex
	submits []*rpcpb.SubmitJobRequest
	cancels []*rpcpb.CancelJobRequest
	jobs    map[string]*rpcpb.JobStatus // reported, by job ID
}

func (f *scriptedTM) Heartbeat(ctx context.Context, req *rpcpb.HeartbeatRequest) (*rpcpb.HeartbeatResponse, error) {
	if req.GetRegistrationId() != f.regID {
		return nil, status.Error(codes.FailedPrecondition, "unknown registration")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &rpcpb.HeartbeatResponse{}
	for _, js := range f.jobs {
		resp.Jobs = append(resp.Jobs, proto.Clone(js).(*rpcpb.JobStatus))
	}
	return resp, nil
}

func (f *scriptedTM) SubmitJob(ctx context.Context, req *rpcpb.SubmitJobRequest) (*rpcpb.SubmitJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submits = append(f.submits, req)
	f.jobs[req.GetJobId()] = &rpcpb.JobStatus{JobId: req.GetJobId(), Attempt: req.GetAttempt(), State: attemptRunning}
	return &rpcpb.SubmitJobResponse{}, nil
}

func (f *scriptedTM) CancelJob(ctx context.Context, req *rpcpb.CancelJobRequest) (*rpcpb.CancelJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, req)
	if js := f.jobs[req.GetJobId()]; js != nil && js.GetAttempt() == req.GetAttempt() && !IsTerminalJobState(js.GetState()) {
		js.State = JobCanceled
	}
	return &rpcpb.CancelJobResponse{}, nil
}

// set changes what the heartbeats report of the attempt of job that the
// TaskManager runs.
func (f *scriptedTM) set(job string, change func(*rpcpb.JobStatus)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f.jobs[job])
}

// submit returns the submission of a job attempt, or nil.
func (f *scriptedTM) submit(job string, attempt int) *rpcpb.SubmitJobRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.submits {
		if s.GetJobId() == job && int(s.GetAttempt()) == attempt {
			return s
		}
	}
	return nil
}

func (f *scriptedTM) cancelled(job string, attempt int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cancels {
		if c.GetJobId() == job && int(c.GetAttempt()) == attempt {
			return true
		}
	}
	return false
}

// startScriptedTM registers a scriptedTM with slots slots.
func startScriptedTM(t *testing.T, jm *JobManager, id string, slots int) *scriptedTM {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &scriptedTM{id: id, regID: "reg-" + id, server: grpc.NewServer(), addr: ln.Addr().String(), jobs: make(map[string]*rpcpb.JobStatus)}
	rpcpb.RegisterTaskManagerServer(f.server, f)
	served := make(chan struct{})
	go func() { defer close(served); f.server.Serve(ln) }()
	t.Cleanup(func() { f.server.Stop(); <-served })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = jmClient(t, jm.RPCAddr(), Security{}).RegisterTaskManager(ctx, &rpcpb.RegisterTaskManagerRequest{
		ResourceId: id, RegistrationId: f.regID, Address: f.addr, Slots: int32(slots),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// submitTestJob submits a job with plan, whose artifact is a stub.
func submitTestJob(t *testing.T, jm *JobManager, plan string, options ...string) string {
	t.Helper()
	sum, err := jm.artifacts.put(strings.NewReader("#!/bin/sh\nexit 0\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := jm.dispatcher.submit(JobSubmission{Artifact: sum, Plan: json.RawMessage(plan), Options: options})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func jobDetails(t *testing.T, jm *JobManager, id string) JobDetails {
	t.Helper()
	d, ok := jm.dispatcher.details(id)
	if !ok {
		t.Fatalf("job %s not found", id)
	}
	return d
}

// A plan of 4 slots: source (3) in group "default", sink (1) in "sinks".
const fourSlotPlan = `{"JobName": "spread", "Vertices": [
	{"ID": "src", "Name": "source", "Parallelism": 3, "SlotSharingGroup": "default"},
	{"ID": "snk", "Name": "sink", "Parallelism": 1, "SlotSharingGroup": "sinks"}]}`

func TestJobSpreadOverTaskManagers(t *testing.T) {
	jm := startJM(t, nil)
	a := startScriptedTM(t, jm, "tm-a", 2)
	b := startScriptedTM(t, jm, "tm-b", 2)
	id := submitTestJob(t, jm, fourSlotPlan, "restart-strategy.fixed-delay.delay=10ms")

	waitFor(t, 5*time.Second, "attempt 1 deployed to both TaskManagers", func() bool {
		return a.submit(id, 1) != nil && b.submit(id, 1) != nil
	})
	// Slots are taken one at a time from the TaskManager with the most
	// free ones: a, b, a, b.
	sa, sb := a.submit(id, 1), b.submit(id, 1)
	if sa.GetWorkerIndex() != 0 || sb.GetWorkerIndex() != 1 || sa.GetWorkers() != 2 || sb.GetWorkers() != 2 {
		t.Errorf("worker index/workers: a %d/%d, b %d/%d; want 0/2, 1/2", sa.GetWorkerIndex(), sa.GetWorkers(), sb.GetWorkerIndex(), sb.GetWorkers())
	}
	for _, s := range []*rpcpb.SubmitJobRequest{sa, sb} {
		if !slices.Equal(s.GetPlacement(), []int32{0, 1, 0, 1}) {
			t.Errorf("placement %v, want [0 1 0 1]", s.GetPlacement())
		}
	}
	if len(sa.GetDataToken()) != 32 || sa.GetDataToken() != sb.GetDataToken() {
		t.Errorf("data tokens %q and %q: want one 32-digit secret", sa.GetDataToken(), sb.GetDataToken())
	}
	d := jobDetails(t, jm, id)
	if d.State != JobRunning || d.TaskManager != "tm-a" || d.TaskManagerAddress != a.addr || len(d.Workers) != 2 ||
		d.Workers[0].TaskManager != "tm-a" || d.Workers[1].TaskManager != "tm-b" {
		t.Errorf("details: state %s, taskmanager %s %s, workers %+v", d.State, d.TaskManager, d.TaskManagerAddress, d.Workers)
	}
	var where []string
	for _, v := range d.Vertices {
		for _, s := range v.Subtasks {
			where = append(where, v.ID+":"+s.TaskManager)
		}
	}
	if want := []string{"src:tm-a", "src:tm-b", "src:tm-a", "snk:tm-b"}; !slices.Equal(where, want) {
		t.Errorf("subtasks run on %v, want %v", where, want)
	}
	if d.Vertices[1].TaskManager != "tm-b" {
		t.Errorf("sink vertex taskmanager %s, want tm-b (its subtask 0)", d.Vertices[1].TaskManager)
	}
	if o := jm.overview(); o.SlotsTotal != 4 || o.SlotsAvailable != 0 {
		t.Errorf("overview %+v: want all 4 slots taken", o)
	}

	// The rendezvous.
	client := jmClient(t, jm.RPCAddr(), Security{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	report := func(tm *scriptedTM, regID string, job string, attempt, worker int, addr string) (*rpcpb.ReportWorkerResponse, error) {
		return client.ReportWorker(ctx, &rpcpb.ReportWorkerRequest{
			ResourceId: tm.id, RegistrationId: regID, JobId: job, Attempt: int32(attempt), WorkerIndex: int32(worker), DataAddress: addr,
		})
	}
	resp, err := report(a, a.regID, id, 1, 0, "127.0.0.1:1111")
	if err != nil || resp.GetComplete() || !slices.Equal(resp.GetDataAddresses(), []string{"127.0.0.1:1111", ""}) {
		t.Fatalf("first report: %v, %v; want incomplete", resp, err)
	}
	for _, tt := range []struct {
		name   string
		call   func() (*rpcpb.ReportWorkerResponse, error)
		code   codes.Code
		substr string
	}{
		{"wrong taskmanager", func() (*rpcpb.ReportWorkerResponse, error) { return report(a, a.regID, id, 1, 1, "127.0.0.1:1") },
			codes.FailedPrecondition, "runs on taskmanager tm-b"},
		{"stale registration", func() (*rpcpb.ReportWorkerResponse, error) { return report(a, "old", id, 1, 0, "127.0.0.1:1") },
			codes.FailedPrecondition, "no registration old"},
		{"unknown job", func() (*rpcpb.ReportWorkerResponse, error) { return report(a, a.regID, "nojob", 1, 0, "127.0.0.1:1") },
			codes.NotFound, "job nojob not found"},
		{"other attempt", func() (*rpcpb.ReportWorkerResponse, error) { return report(a, a.regID, id, 2, 0, "127.0.0.1:1") },
			codes.FailedPrecondition, "not the running attempt"},
		{"no such worker", func() (*rpcpb.ReportWorkerResponse, error) { return report(a, a.regID, id, 1, 2, "127.0.0.1:1") },
			codes.NotFound, "no worker 2"},
		{"bad address", func() (*rpcpb.ReportWorkerResponse, error) { return report(a, a.regID, id, 1, 0, "nowhere") },
			codes.InvalidArgument, "want host:port"},
	} {
		_, err := tt.call()
		if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.substr) {
			t.Errorf("%s: err = %v, want %s containing %q", tt.name, err, tt.code, tt.substr)
		}
	}
	resp, err = report(b, b.regID, id, 1, 1, "127.0.0.1:2222")
	want := []string{"127.0.0.1:1111", "127.0.0.1:2222"}
	if err != nil || !resp.GetComplete() || !slices.Equal(resp.GetDataAddresses(), want) {
		t.Fatalf("last report: %v, %v; want complete %v", resp, err, want)
	}
	if resp, err = report(a, a.regID, id, 1, 0, "127.0.0.1:1111"); err != nil || !resp.GetComplete() {
		t.Fatalf("report again: %v, %v; want complete", resp, err)
	}
	// A TaskManager's data port (Flink's dataPort) is its worker's data
	// listener.
	var tms TaskManagersJSON
	decodeGet(t, jm.RESTURL(), "/taskmanagers", &tms)
	ports := make(map[string]int)
	for _, tm := range tms.TaskManagers {
		ports[tm.ID] = tm.DataPort
	}
	if ports["tm-a"] != 1111 || ports["tm-b"] != 2222 || len(ports) != 2 {
		t.Errorf("data ports %v, want tm-a 1111 and tm-b 2222", ports)
	}

	// Checkpoints count once the JobManager confirmed them, and only the
	// leader worker's TaskManager may ask.
	confirm := func(tm *scriptedTM, attempt, worker int, chk int64, path string) error {
		_, err := client.ConfirmCheckpoint(ctx, &rpcpb.ConfirmCheckpointRequest{
			ResourceId: tm.id, RegistrationId: tm.regID, JobId: id, Attempt: int32(attempt), WorkerIndex: int32(worker),
			CheckpointId: chk, Path: path,
		})
		return err
	}
	for _, c := range []struct {
		tm      *scriptedTM
		worker  int
		chk     int64
		path    string
		refused string
	}{
		{a, 0, 1, "/chk/1", ""},
		{b, 1, 2, "/chk/b", "only the leader worker"},
		{a, 0, 1, "/chk/1", "not newer"},
		{a, 0, 2, "/chk/2", ""},
	} {
		err := confirm(c.tm, 1, c.worker, c.chk, c.path)
		if c.refused == "" && err != nil {
			t.Fatalf("confirm checkpoint %d: %v", c.chk, err)
		}
		if c.refused != "" && (status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), c.refused)) {
			t.Errorf("confirm checkpoint %d by worker %d: err = %v, want FailedPrecondition containing %q", c.chk, c.worker, err, c.refused)
		}
	}

	// Metrics add up over the workers. What a worker reports of its
	// checkpoints does not count: only confirmations do.
	a.set(id, func(js *rpcpb.JobStatus) {
		js.Vertices = []*rpcpb.VertexStatus{{Id: "src", RecordsIn: 5, RecordsOut: 5}}
		js.CompletedCheckpoints, js.LatestCheckpoint = 3, "/chk/3-unconfirmed"
	})
	b.set(id, func(js *rpcpb.JobStatus) {
		js.Vertices = []*rpcpb.VertexStatus{{Id: "src", RecordsIn: 7, RecordsOut: 7}, {Id: "snk", RecordsIn: 12}}
	})
	waitFor(t, 5*time.Second, "summed metrics", func() bool {
		d := jobDetails(t, jm, id)
		return d.Vertices[0].Metrics == VertexMetricsJSON{ReadRecords: 12, WriteRecords: 12} &&
			d.Vertices[1].Metrics.ReadRecords == 12 && d.Checkpoints == JobCheckpointJSON{Completed: 2, Latest: "/chk/2"}
	})

	// A failed worker fails the attempt: the other is cancelled and the
	// job restarts whole from the latest checkpoint.
	b.set(id, func(js *rpcpb.JobStatus) { js.State, js.Error = JobFailed, "boom" })
	waitFor(t, 5*time.Second, "attempt 2 deployed", func() bool {
		return a.submit(id, 2) != nil && b.submit(id, 2) != nil
	})
	if !a.cancelled(id, 1) {
		t.Error("the other worker of the failed attempt was not cancelled")
	}
	if p := a.submit(id, 2).GetRestorePath(); p != "/chk/2" {
		t.Errorf("attempt 2 restores %q, want the latest checkpoint", p)
	}
	if tok := a.submit(id, 2).GetDataToken(); tok == sa.GetDataToken() {
		t.Error("attempt 2 has the data token of attempt 1")
	}
	d = jobDetails(t, jm, id)
	if d.Attempt != 2 || d.Restarts != 1 || !strings.Contains(d.Error, "worker 1 on taskmanager tm-b: boom") {
		t.Errorf("after the failure: attempt %d, restarts %d, error %q", d.Attempt, d.Restarts, d.Error)
	}
	if _, err := report(a, a.regID, id, 1, 0, "127.0.0.1:1111"); status.Code(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), "not the running attempt") {
		t.Errorf("report for the failed attempt: err = %v, want FailedPrecondition", err)
	}
	// The fence: the replaced attempt's leader can no longer complete a
	// checkpoint, so its sinks never commit beside attempt 2's.
	if err := confirm(a, 1, 0, 3, "/chk/3"); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "not the running attempt") {
		t.Errorf("confirm for the failed attempt: err = %v, want FailedPrecondition", err)
	}
	if p := jobDetails(t, jm, id).Checkpoints.Latest; p != "/chk/2" {
		t.Errorf("latest checkpoint %q after the stale confirmation, want /chk/2", p)
	}

	// Both workers of attempt 2 run; several heartbeats must not cancel
	// either of them.
	time.Sleep(5 * jm.opts.HeartbeatInterval)
	if a.cancelled(id, 2) || b.cancelled(id, 2) {
		t.Fatal("a worker of the current attempt was cancelled as stale")
	}
	a.set(id, func(js *rpcpb.JobStatus) { js.State = JobFinished })
	time.Sleep(3 * jm.opts.HeartbeatInterval)
	if d := jobDetails(t, jm, id); d.State != JobRunning {
		t.Fatalf("one of two workers finished: job %s, want RUNNING", d.State)
	}
	b.set(id, func(js *rpcpb.JobStatus) { js.State = JobFinished })
	waitFor(t, 5*time.Second, "job FINISHED", func() bool { return jobDetails(t, jm, id).State == JobFinished })
	waitTotals(t, jm, [3]int{2, 4, 4})
}

func TestJobSpreadTaskManagerLostAndSlotWait(t *testing.T) {
	jm := startJM(t, nil)
	a := startScriptedTM(t, jm, "tm-a", 2)
	b := startScriptedTM(t, jm, "tm-b", 2)
	id := submitTestJob(t, jm, fourSlotPlan, "restart-strategy.type=none")
	waitFor(t, 5*time.Second, "attempt 1 deployed", func() bool { return a.submit(id, 1) != nil && b.submit(id, 1) != nil })
	// Both TaskManagers reported their worker running: the deployment is
	// over, so that what follows is a lost TaskManager and not a failed
	// deployment (stopping b's server while the JobManager still waited
	// for its answer to SubmitJob failed the deployment instead).
	waitFor(t, 5*time.Second, "both workers RUNNING", func() bool {
		d := jobDetails(t, jm, id)
		return len(d.Workers) == 2 && d.Workers[0].State == JobRunning && d.Workers[1].State == JobRunning
	})
	b.server.Stop()
	waitFor(t, 5*time.Second, "job FAILED", func() bool { return jobDetails(t, jm, id).State == JobFailed })
	if d := jobDetails(t, jm, id); !strings.Contains(d.Error, "taskmanager tm-b of worker 1 was lost") {
		t.Errorf("error %q does not name the lost TaskManager", d.Error)
	}
	if !a.cancelled(id, 1) {
		t.Error("the worker on the TaskManager that lives was not cancelled")
	}
	waitTotals(t, jm, [3]int{1, 2, 2})

	// Too few slots in the cluster: the job waits, then fails.
	id2 := submitTestJob(t, jm, fourSlotPlan, "slot.request.timeout=300ms")
	waitFor(t, 5*time.Second, "waiting", func() bool {
		return jobDetails(t, jm, id2).Waiting == "needs 4 slots, 2 of 2 are free on 1 TaskManagers"
	})
	waitFor(t, 5*time.Second, "job FAILED", func() bool { return jobDetails(t, jm, id2).State == JobFailed })
	if d := jobDetails(t, jm, id2); !strings.Contains(d.Error, "slot.request.timeout") || strings.Contains(d.Error, "one TaskManager") {
		t.Errorf("error %q", d.Error)
	}
}

func TestJobEvenlySpreadOutSlots(t *testing.T) {
	jm := startJM(t, nil)
	a := startScriptedTM(t, jm, "tm-a", 4)
	b := startScriptedTM(t, jm, "tm-b", 4)
	plan := `{"Vertices": [{"ID": "v", "Name": "v", "Parallelism": 2, "SlotSharingGroup": "default"}]}`

	// The job's option spreads it, although one TaskManager could hold it.
	spread := submitTestJob(t, jm, plan, "cluster.evenly-spread-out-slots=true")
	waitFor(t, 5*time.Second, "deployed to both", func() bool { return a.submit(spread, 1) != nil && b.submit(spread, 1) != nil })
	if s := a.submit(spread, 1); s.GetWorkers() != 2 || !slices.Equal(s.GetPlacement(), []int32{0, 1}) {
		t.Errorf("spread job: workers %d, placement %v; want 2, [0 1]", s.GetWorkers(), s.GetPlacement())
	}
	// By default a job that one TaskManager holds runs there, as one
	// worker.
	one := submitTestJob(t, jm, plan)
	waitFor(t, 5*time.Second, "deployed", func() bool { return a.submit(one, 1) != nil || b.submit(one, 1) != nil })
	s := a.submit(one, 1)
	if s == nil {
		s = b.submit(one, 1)
	}
	if s.GetWorkers() > 1 || len(s.GetPlacement()) != 0 {
		t.Errorf("one-TaskManager job: workers %d, placement %v", s.GetWorkers(), s.GetPlacement())
	}
	if d := jobDetails(t, jm, one); len(d.Workers) != 1 {
		t.Errorf("one-TaskManager job: workers %+v", d.Workers)
	}
}

// TestTaskManagerRendezvous runs a job over two real TaskManagers whose
// worker is a shell script: it writes its data address into its status
// file, waits for the peers file, and finishes.
func TestTaskManagerRendezvous(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	jm := startJM(t, nil)
	dirA, dirB := t.TempDir(), t.TempDir()
	runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) { o.WorkingDir = dirA; o.ResourceID = "tm-a" })
	runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) { o.WorkingDir = dirB; o.ResourceID = "tm-b" })
	waitTotals(t, jm, [3]int{2, 4, 4})
	script := `#!/bin/sh
env | grep '^WEIR_' | grep -v TOKEN > env.txt
status() {
	printf '{"state":"%s","dataAddress":"%s:1000%s","started":%s,"vertices":[{"id":"src","recordsIn":5,"recordsOut":5}]}' \
		"$1" "$WEIR_DATA_HOST" "$WEIR_WORKER_INDEX" "$2" > "$WEIR_WORKER_STATUS.tmp"
	mv "$WEIR_WORKER_STATUS.tmp" "$WEIR_WORKER_STATUS"
}
status RUNNING 0
i=0
while [ ! -f "$WEIR_WORKER_PEERS" ]; do
	sleep 0.05
	i=$((i+1))
	[ $i -gt 400 ] && exit 3
done
status FINISHED "$(date +%s%3N)"
`
	id, d := runScriptJob(t, jm, script, 15*time.Second)
	if d.State != JobFinished {
		t.Fatalf("job %s: %s", d.State, d.Error)
	}
	for i, dir := range []string{dirA, dirB} {
		adir := filepath.Join(dir, "jobs", id+"-1")
		peers, err := os.ReadFile(filepath.Join(adir, "peers.json"))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"dataAddresses":["127.0.0.1:10000","127.0.0.1:10001"]}`; string(peers) != want {
			t.Errorf("worker %d: peers file %s, want %s", i, peers, want)
		}
		env, err := os.ReadFile(filepath.Join(adir, "env.txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"WEIR_ATTEMPT=1", "WEIR_WORKER_INDEX=" + string(rune('0'+i)), "WEIR_WORKER_PLACEMENT=0,1,0,1",
			"WEIR_WORKER_PEERS=" + filepath.Join(adir, "peers.json"), "WEIR_DATA_HOST=127.0.0.1",
		} {
			if !strings.Contains(string(env), want+"\n") {
				t.Errorf("worker %d: environment lacks %s:\n%s", i, want, env)
			}
		}
	}
	// A worker's start time (when it had met its peers) reaches the job's
	// details: deployment ends there.
	for _, w := range d.Workers {
		if w.StartTime < d.Timestamps[JobRunning] || w.StartTime > d.EndTime {
			t.Errorf("worker %d started at %d, want within the attempt's %d..%d", w.Index, w.StartTime, d.Timestamps[JobRunning], d.EndTime)
		}
	}
	if d.Vertices[0].Metrics.ReadRecords != 10 {
		t.Errorf("source read-records %d, want 5 + 5", d.Vertices[0].Metrics.ReadRecords)
	}
}

// TestTaskManagerRendezvousTimeout: a worker that never writes its data
// address fails its attempt after the rendezvous timeout.
func TestTaskManagerRendezvousTimeout(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	old := rendezvousTimeout
	rendezvousTimeout = 500 * time.Millisecond
	// Restored after the TaskManagers stopped: cleanups run last first.
	t.Cleanup(func() { rendezvousTimeout = old })
	jm := startJM(t, nil)
	runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) { o.ResourceID = "tm-a" })
	runTM(t, jm.RPCAddr(), 2, func(o *TaskManagerOptions) { o.ResourceID = "tm-b" })
	waitTotals(t, jm, [3]int{2, 4, 4})
	// Worker 0 reports its address, worker 1 never does; both wait to be
	// stopped.
	script := `#!/bin/sh
trap 'exit 143' TERM
if [ "$WEIR_WORKER_INDEX" = 0 ]; then
	printf '{"state":"RUNNING","dataAddress":"%s:1"}' "$WEIR_DATA_HOST" > "$WEIR_WORKER_STATUS"
fi
i=0
while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
exit 4
`
	_, d := runScriptJob(t, jm, script, 15*time.Second)
	if d.State != JobFailed {
		t.Fatalf("job %s, want FAILED", d.State)
	}
	// Which TaskManager gives up first is a race; either names worker 1.
	if !strings.Contains(d.Error, "worker 1 did not write its data address") &&
		!strings.Contains(d.Error, "worker(s) 1 never reported a data address") {
		t.Errorf("error %q does not name worker 1", d.Error)
	}
}

// TestWorkerEndReportedAtOnce: with heartbeats every 10 s, a job whose
// worker finishes is FINISHED within a second, because the TaskManager
// asks for a heartbeat as soon as its worker ended.
func TestWorkerEndReportedAtOnce(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	jm := startJM(t, func(o *JobManagerOptions) {
		o.HeartbeatInterval = 10 * time.Second
		o.HeartbeatTimeout = 30 * time.Second
	})
	runTM(t, jm.RPCAddr(), 4, nil)
	waitTotals(t, jm, [3]int{1, 4, 4})
	script := "#!/bin/sh\nprintf '{\"state\":\"FINISHED\"}' > \"$WEIR_WORKER_STATUS\"\n"
	start := time.Now()
	if _, d := runScriptJob(t, jm, script, 5*time.Second); d.State != JobFinished {
		t.Fatalf("job %s: %s", d.State, d.Error)
	}
	t.Logf("FINISHED %v after the submission", time.Since(start).Round(time.Millisecond))
}

// runScriptJob submits a shell script as the artifact of a 4-slot job
// without restarts and waits up to d for the job to end.
func runScriptJob(t *testing.T, jm *JobManager, script string, d time.Duration) (string, JobDetails) {
	t.Helper()
	sum, err := jm.artifacts.put(strings.NewReader(script), "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := jm.dispatcher.submit(JobSubmission{Artifact: sum, Plan: json.RawMessage(fourSlotPlan), Options: []string{"restart-strategy.type=none"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, "job ended", func() bool { return IsTerminalJobState(jobDetails(t, jm, id).State) })
	return id, jobDetails(t, jm, id)
}
