package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

// flinkSchema is the part of an OpenAPI schema the shape test reads.
type flinkSchema struct {
	Type                 string                  `yaml:"type"`
	Ref                  string                  `yaml:"$ref"`
	Properties           map[string]*flinkSchema `yaml:"properties"`
	Items                *flinkSchema            `yaml:"items"`
	AdditionalProperties *flinkSchema            `yaml:"additionalProperties"`
	Enum                 []string                `yaml:"enum"`
	// Nullable: null is a value of the field (Flink's boxed Long fields).
	Nullable bool `yaml:"nullable"`
}

// flinkSchemas reads testdata/flink_rest_schemas.yml: Flink's published
// schemas by "#/components/schemas/<name>", the serializers' shapes by
// "#/serialized/<name>".
func flinkSchemas(t *testing.T) map[string]*flinkSchema {
	t.Helper()
	data, err := os.ReadFile("testdata/flink_rest_schemas.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]*flinkSchema `yaml:"schemas"`
		} `yaml:"components"`
		Serialized map[string]*flinkSchema `yaml:"serialized"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*flinkSchema)
	for k, s := range doc.Components.Schemas {
		out["#/components/schemas/"+k] = s
	}
	for k, s := range doc.Serialized {
		out["#/serialized/"+k] = s
	}
	return out
}

// shapeErrors compares a decoded JSON value (numbers as json.Number)
// with a schema: every field must be one the schema names, with its JSON
// type (integers integral, enums their values), and every field the
// schema names must be there unless absent lists it as
// "<schema name>.<field>". An entry "+<schema name>.<field>" allows a
// field of weir's own that Flink's schema lacks.
func shapeErrors(schemas map[string]*flinkSchema, ref string, v any, path string, absent []string) []string {
	s := schemas[ref]
	if s == nil {
		return []string{fmt.Sprintf("%s: no schema %s in the test data", path, ref)}
	}
	return checkShape(schemas, ref[strings.LastIndex(ref, "/")+1:], s, v, path, absent)
}

func checkShape(schemas map[string]*flinkSchema, name string, s *flinkSchema, v any, path string, absent []string) []string {
	if s.Ref != "" {
		return shapeErrors(schemas, s.Ref, v, path, absent)
	}
	if v == nil && s.Nullable {
		return nil
	}
	var errs []string
	bad := func(format string, args ...any) []string {
		return append(errs, path+": "+fmt.Sprintf(format, args...))
	}
	switch s.Type {
	case "object":
		if v == nil {
			// Flink's mapper writes a @Nullable field that is null.
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return bad("%T, want an object", v)
		}
		for k, fv := range m {
			switch fs := s.Properties[k]; {
			case fs != nil:
				errs = append(errs, checkShape(schemas, name+"."+k, fs, fv, path+"."+k, absent)...)
			case s.AdditionalProperties != nil:
				errs = append(errs, checkShape(schemas, name+"."+k, s.AdditionalProperties, fv, path+"."+k, absent)...)
			case slices.Contains(absent, "+"+name+"."+k):
			case len(s.Properties) > 0:
				errs = append(errs, fmt.Sprintf("%s: field %q is not in Flink's %s", path, k, name))
			}
		}
		for k := range s.Properties {
			if _, ok := m[k]; !ok && !slices.Contains(absent, name+"."+k) {
				errs = append(errs, fmt.Sprintf("%s: Flink's field %q is missing", path, k))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return bad("%T, want an array", v)
		}
		for i, e := range a {
			errs = append(errs, checkShape(schemas, name, s.Items, e, fmt.Sprintf("%s[%d]", path, i), absent)...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return bad("%T, want a string", v)
		}
		// Case-insensitive: Flink's CheckpointConfigInfo writes its
		// ProcessingMode enum in lower case with a serializer of its own.
		if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e string) bool { return strings.EqualFold(e, str) }) {
			return bad("%q is not one of %v", str, s.Enum)
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return bad("%T, want a number", v)
		}
		if _, err := n.Int64(); s.Type == "integer" && err != nil {
			return bad("%s, want an integer", n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return bad("%T, want a boolean", v)
		}
	default:
		return bad("schema type %q unknown to the test", s.Type)
	}
	return errs
}

// shapeCase is an endpoint whose answer must have a Flink schema's shape;
// absent as for shapeErrors.
type shapeCase struct {
	path   string
	schema string
	absent []string
}

// checkShapes GETs every case's path and compares the answer with its
// schema.
func checkShapes(t *testing.T, schemas map[string]*flinkSchema, base string, cases []shapeCase) {
	t.Helper()
	for _, tt := range cases {
		code, v := getJSON(t, base, tt.path)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d %v", tt.path, code, v)
			continue
		}
		for _, e := range shapeErrors(schemas, tt.schema, v, tt.path, tt.absent) {
			t.Error(e)
		}
	}
}

// getJSON GETs path and decodes the answer with numbers kept as written.
func getJSON(t *testing.T, base, path string) (int, any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return resp.StatusCode, v
}

// A plan of 3 slots (4 subtasks) with an edge and chained operators, as a program's
// --plan=json prints it.
const flinkAPIPlan = `{"JobName": "flink-api", "Vertices": [
	{"ID": "a1b2", "Name": "Source: numbers -> Map", "Parallelism": 3, "SlotSharingGroup": "default",
	 "Operators": [{"Name": "Source: numbers", "Kind": "source"}, {"Name": "Map <1>", "Kind": "map"}]},
	{"ID": "c3d4", "Name": "Sink: print", "Parallelism": 1, "SlotSharingGroup": "default",
	 "Operators": [{"Name": "Sink: print", "Kind": "sink"}], "Inputs": [0]}],
	"Edges": [{"Source": "a1b2", "Target": "c3d4", "Partitioning": "HASH"}]}`

func TestFlinkMonitoringAPI(t *testing.T) {
	jm := startJM(t, nil)
	tm := startScriptedTM(t, jm, "tm-a", 4)
	schemas := flinkSchemas(t)
	base := jm.RESTURL()
	defer http.DefaultClient.CloseIdleConnections()

	// The job's program enabled checkpointing in its code: the settings
	// come in the plan's configuration, over the -D options (the mode).
	id := submitTestJob(t, jm, withConfiguration(t, flinkAPIPlan, map[string]string{
		"restart-strategy.fixed-delay.delay":                        "10ms",
		"execution.checkpointing.interval":                          "2s",
		"execution.checkpointing.mode":                              "AT_LEAST_ONCE",
		"execution.checkpointing.min-pause":                         "500ms",
		"execution.checkpointing.tolerable-failed-checkpoints":      "3",
		"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
		"state.checkpoints.dir":                                     "/nonexistent/weir-chk",
		"state.backend.type":                                        "pebble"}),
		"execution.checkpointing.mode=EXACTLY_ONCE", "execution.checkpointing.timeout=1m")
	// Attempt 1 fails; attempt 2 runs.
	waitFor(t, 5*time.Second, "attempt 1 deployed", func() bool { return tm.submit(id, 1) != nil })
	tm.set(id, func(js *rpcpb.JobStatus) { js.State, js.Error = JobFailed, "boom in attempt one" })
	waitFor(t, 5*time.Second, "attempt 2 running", func() bool {
		if tm.submit(id, 2) == nil {
			return false
		}
		d := jobDetails(t, jm, id)
		return d.State == JobRunning && len(d.Workers) == 1 && d.Workers[0].State == attemptRunning
	})
	// A second job without checkpointing stays waiting for slots.
	idle := submitTestJob(t, jm, `{"JobName": "idle", "Vertices": [{"ID": "e5", "Name": "big", "Parallelism": 9}]}`,
		"slot.request.timeout=1m")

	checkShapes(t, schemas, base, []shapeCase{
		{"/config", "#/components/schemas/DashboardConfiguration", nil},
		{"/jobs/overview", "#/components/schemas/MultipleJobsDetails", nil},
		{"/jobs/" + id + "/plan", "#/components/schemas/JobPlanInfo",
			// Flink writes local_strategy and caching only for a
			// pre-processing operation or operator level caching, which
			// weir has not.
			[]string{"JsonPlanInput.local_strategy", "JsonPlanInput.caching"}},
		{"/jobs/" + id + "/config", "#/serialized/JobConfigInfoSerialized", nil},
		{"/jobs/" + id + "/checkpoints/config", "#/components/schemas/CheckpointConfigInfo", nil},
		{"/jobs/" + id, "#/components/schemas/JobDetailsInfo", []string{
			// As at /jobs/{id}/plan.
			"JsonPlanInput.local_strategy", "JsonPlanInput.caching",
			// weir's own fields, which its CLI reads.
			"+JobDetailsInfo.attempt", "+JobDetailsInfo.restarts", "+JobDetailsInfo.taskmanager", "+JobDetailsInfo.taskmanagerAddress",
			"+JobDetailsInfo.slotsNeeded", "+JobDetailsInfo.workers", "+JobDetailsInfo.checkpoints", "+JobDetailsInfo.error",
			"+JobDetailsVertex.slotSharingGroup", "+JobDetailsVertex.taskmanager", "+JobDetailsVertex.subtasks"}},
		{"/taskmanagers", "#/components/schemas/TaskManagersInfo", []string{
			// weir's own.
			"+TaskManagerInfo.address", "+TaskManagerInfo.registered", "+TaskManagerInfo.lastHeartbeat",
			// Not known to weir.
			"HardwareDescription.freeMemory", "HardwareDescription.managedMemory"}},
		{"/jobs/" + id + "/exceptions", "#/components/schemas/JobExceptionsInfoWithHistory",
			// An attempt fails as a whole, as Flink's global failures,
			// which name no task and no location.
			[]string{"RootExceptionInfo.taskName", "RootExceptionInfo.location"}},
		{"/taskmanagers/tm-a", "#/components/schemas/TaskManagerDetailsInfo", []string{
			// weir's own, as in GET /taskmanagers.
			"+TaskManagerDetailsInfo.address", "+TaskManagerDetailsInfo.registered", "+TaskManagerDetailsInfo.lastHeartbeat",
			// Not known to weir (see TaskManagerDetailsJSON).
			"TaskManagerDetailsInfo.metrics", "HardwareDescription.freeMemory", "HardwareDescription.managedMemory"}},
		{"/jobs/" + idle + "/exceptions", "#/components/schemas/JobExceptionsInfoWithHistory",
			// Flink too leaves them out of a job that has not failed.
			[]string{"JobExceptionsInfoWithHistory.root-exception", "JobExceptionsInfoWithHistory.timestamp"}},
	})

	// The values.
	var cfg DashboardConfigJSON
	decodeGet(t, base, "/config", &cfg)
	if cfg.RefreshInterval != 3000 || cfg.FlinkVersion == "" || !cfg.Features.WebCancel || !cfg.Features.WebSubmit {
		t.Errorf("/config = %+v", cfg)
	}
	var ov JobsOverviewJSON
	decodeGet(t, base, "/jobs/overview", &ov)
	if len(ov.Jobs) != 2 || ov.Jobs[0].JID != id || ov.Jobs[1].JID != idle {
		t.Fatalf("/jobs/overview = %+v, want the two jobs in submission order", ov)
	}
	if j := ov.Jobs[0]; j.Name != "flink-api" || j.State != JobRunning || j.EndTime != -1 || j.Tasks["total"] != 4 ||
		j.Tasks["running"] != 4 || j.LastModification < j.StartTime {
		t.Errorf("running job in /jobs/overview = %+v", j)
	}
	if j := ov.Jobs[1]; j.State != JobCreated || j.Tasks["total"] != 9 || j.Tasks["created"] != 9 {
		t.Errorf("waiting job in /jobs/overview = %+v", j)
	}
	var plan JobPlanJSON
	decodeGet(t, base, "/jobs/"+id+"/plan", &plan)
	if p := plan.Plan; p.JID != id || p.Name != "flink-api" || p.Type != "STREAMING" || len(p.Nodes) != 2 ||
		p.Nodes[0].ID != "a1b2" || p.Nodes[0].Parallelism != 3 || len(p.Nodes[0].Inputs) != 0 ||
		p.Nodes[0].Description != "Source: numbers<br/>Map &lt;1&gt;" || p.Nodes[0].OperatorStrategy != "source -> map" ||
		!slices.Equal(p.Nodes[1].Inputs, []PlanInputJSON{{Num: 0, ID: "a1b2", ShipStrategy: "HASH", Exchange: "pipelined_bounded"}}) {
		t.Errorf("/jobs/{id}/plan = %+v", p)
	}
	var jc JobConfigJSON
	decodeGet(t, base, "/jobs/"+id+"/config", &jc)
	if ec := jc.ExecutionConfig; jc.JID != id || jc.Name != "flink-api" || ec.ExecutionMode != "PIPELINED" ||
		ec.JobParallelism != -1 || ec.UserConfig["execution.checkpointing.mode"] != "AT_LEAST_ONCE" ||
		!strings.Contains(ec.RestartStrategy, "fixed delay (10ms)") {
		t.Errorf("/jobs/{id}/config = %+v", jc)
	}
	var cc CheckpointConfigJSON
	decodeGet(t, base, "/jobs/"+id+"/checkpoints/config", &cc)
	if cc.Mode != "at_least_once" || cc.Interval != 2000 || cc.Timeout != 60000 || cc.MinPause != 500 || cc.MaxConcurrent != 1 ||
		!cc.Externalization.Enabled || cc.Externalization.DeleteOnCancellation || cc.StateBackend != "PebbleStateBackend" ||
		cc.CheckpointStorage != "FileSystemCheckpointStorage" || cc.TolerableFailedCheckpoints != 3 || !cc.CheckpointsAfterTasksFinish ||
		cc.StateChangelogEnabled || cc.ChangelogStorage != "memory" || cc.ChangelogPeriodicMaterialInterval != 600000 {
		t.Errorf("/jobs/{id}/checkpoints/config = %+v", cc)
	}
	// GET /jobs/{id} carries the plan of GET /jobs/{id}/plan.
	var jd JobDetails
	decodeGet(t, base, "/jobs/"+id, &jd)
	if !reflect.DeepEqual(jd.Plan, plan.Plan) || jd.JobType != "STREAMING" {
		t.Errorf("/jobs/{id} plan = %+v, job-type %q, want %+v, STREAMING", jd.Plan, jd.JobType, plan.Plan)
	}
	// The program's configuration, over its -D options.
	if uc := jc.ExecutionConfig.UserConfig; uc["execution.checkpointing.min-pause"] != "500 ms" || uc["execution.checkpointing.timeout"] != "1 min" {
		t.Errorf("/jobs/{id}/config user-config = %v, want the program's configuration", jc.ExecutionConfig.UserConfig)
	}
	var ex JobExceptionsJSON
	decodeGet(t, base, "/jobs/"+id+"/exceptions", &ex)
	if h := ex.ExceptionHistory; len(h.Entries) != 1 || h.Truncated || !strings.Contains(h.Entries[0].Stacktrace, "boom in attempt one") ||
		h.Entries[0].ExceptionName != failureName || ex.RootException == nil || !strings.Contains(*ex.RootException, "boom in attempt one") ||
		ex.Timestamp == nil || *ex.Timestamp != h.Entries[0].Timestamp {
		t.Errorf("/jobs/{id}/exceptions = %+v", ex)
	}

	var tmd TaskManagerDetailsJSON
	decodeGet(t, base, "/taskmanagers/tm-a", &tmd)
	unknown := unknownResourceProfile()
	if tmd.ID != "tm-a" || tmd.Path != tm.addr || tmd.Address != tm.addr || tmd.JMXPort != -1 || tmd.SlotsNumber != 4 ||
		tmd.FreeSlots != 1 || tmd.TimeSinceLastHeartbeat < tmd.Registered || tmd.TimeSinceLastHeartbeat != tmd.LastHeartbeat ||
		// The worker of this one-TaskManager job has no data listener.
		tmd.DataPort != -1 || tmd.Blocked ||
		!reflect.DeepEqual(tmd.TotalResource, unknown) || !reflect.DeepEqual(tmd.FreeResource, unknown) ||
		tmd.MemoryConfiguration != (MemoryConfigurationJSON{}) || len(tmd.AllocatedSlots) != 3 {
		t.Errorf("/taskmanagers/tm-a = %+v", tmd)
	}
	// The job's 3 slots (one slot sharing group, widest vertex 3).
	for _, s := range tmd.AllocatedSlots {
		if s.JobID != id || !reflect.DeepEqual(s.Resource, unknown) {
			t.Errorf("/taskmanagers/tm-a allocated slots %+v, want 3 of job %s", tmd.AllocatedSlots, id)
			break
		}
	}
	var tms TaskManagersJSON
	decodeGet(t, base, "/taskmanagers", &tms)
	if len(tms.TaskManagers) != 1 || !reflect.DeepEqual(tms.TaskManagers[0], tmd.TaskManagerJSON) {
		t.Errorf("/taskmanagers = %+v, want the TaskManager of /taskmanagers/tm-a %+v", tms, tmd.TaskManagerJSON)
	}

	// A job that gets no slots fails before any attempt runs: its
	// failure is in the history, and its subtasks count as canceled.
	starved := submitTestJob(t, jm, `{"JobName": "starved", "Vertices": [{"ID": "f6", "Name": "big", "Parallelism": 7}]}`,
		"slot.request.timeout=1ms")
	waitFor(t, 5*time.Second, "the starved job failed", func() bool { return jobDetails(t, jm, starved).State == JobFailed })
	decodeGet(t, base, "/jobs/"+starved+"/exceptions", &ex)
	if h := ex.ExceptionHistory.Entries; len(h) != 1 || !strings.Contains(h[0].Stacktrace, "attempt 1 failed: no slots within slot.request.timeout") ||
		ex.RootException == nil || !strings.Contains(*ex.RootException, "no slots") {
		t.Errorf("/jobs/{starved}/exceptions = %+v", ex)
	}
	decodeGet(t, base, "/jobs/overview", &ov)
	if j := ov.Jobs[len(ov.Jobs)-1]; j.JID != starved || j.State != JobFailed || j.Tasks["canceled"] != 7 || j.EndTime < j.StartTime ||
		j.LastModification != j.EndTime {
		t.Errorf("starved job in /jobs/overview = %+v", j)
	}

	// Unknown jobs: 404 with Flink's error body; a job without
	// checkpointing has no checkpoint configuration, as in Flink.
	for _, p := range []string{"/plan", "/config", "/checkpoints/config", "/exceptions"} {
		code, v := getJSON(t, base, "/jobs/0123abcd"+p)
		if code != http.StatusNotFound || fmt.Sprint(v) != "map[errors:[job 0123abcd not found]]" {
			t.Errorf("GET /jobs/0123abcd%s = %d %v", p, code, v)
		}
	}
	if code, v := getJSON(t, base, "/jobs/"+idle+"/checkpoints/config"); code != http.StatusNotFound ||
		!strings.Contains(fmt.Sprint(v), "Checkpointing is not enabled") {
		t.Errorf("checkpoint config of a job without checkpointing = %d %v", code, v)
	}
}

// withConfiguration adds a configuration to a plan, as a program's
// --plan=json carries the configuration it runs with.
func withConfiguration(t *testing.T, plan string, cfg map[string]string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(plan), &m); err != nil {
		t.Fatal(err)
	}
	m["Configuration"] = cfg
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func decodeGet(t *testing.T, base, path string, v any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func TestFailureHistoryBounded(t *testing.T) {
	d := &dispatcher{}
	j := &job{}
	for i := range maxFailureHistory + 3 {
		d.recordFailure(j, i+1, fmt.Sprintf("failure %d", i+1))
	}
	if len(j.failures) != maxFailureHistory || j.failures[0].attempt != 4 || j.failuresTotal != maxFailureHistory+3 {
		t.Errorf("kept %d failures from attempt %d of %d", len(j.failures), j.failures[0].attempt, j.failuresTotal)
	}
}
