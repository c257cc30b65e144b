package cluster

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

// TestFlinkVertexAndCheckpointAPI reports subtask metrics and checkpoints
// through a TaskManager's heartbeats and reads them back from Flink's
// endpoints: the shapes against Flink's description (or its serializers
// where the description differs), and the values as reported.
func TestFlinkVertexAndCheckpointAPI(t *testing.T) {
	jm := startJM(t, nil)
	tm := startScriptedTM(t, jm, "tm-a", 4)
	schemas := flinkSchemas(t)
	base := jm.RESTURL()
	defer http.DefaultClient.CloseIdleConnections()

	id := submitTestJob(t, jm, flinkAPIPlan, "execution.checkpointing.interval=1s")
	waitFor(t, 5*time.Second, "attempt 1 deployed", func() bool { return tm.submit(id, 1) != nil })
	now := time.Now().UnixMilli()
	tm.set(id, func(js *rpcpb.JobStatus) {
		js.State = attemptRunning
		source := &rpcpb.VertexStatus{Id: "a1b2", Name: "Source: numbers -> Map", Parallelism: 3, RecordsOut: 3000}
		for s := range 3 {
			source.Subtasks = append(source.Subtasks, &rpcpb.SubtaskMetrics{Subtask: int32(s), State: "RUNNING",
				RecordsOut: 1000, BytesOut: 64000, RecordsOutPerSecond: 500, BackPressuredTimeMsPerSecond: 900 - float64(s)*400,
				IdleTimeMsPerSecond: 0, BusyTimeMsPerSecond: 100 + float64(s)*400, OutPoolUsage: 1,
				InputWatermark: math.MinInt64, OutputWatermark: now - 2000, Gauges: map[string]int64{"pendingRecords": int64(7 * s)}})
		}
		sink := &rpcpb.VertexStatus{Id: "c3d4", Name: "Sink: print", Parallelism: 1, RecordsIn: 3000,
			Subtasks: []*rpcpb.SubtaskMetrics{{Subtask: 0, State: "RUNNING", RecordsIn: 3000, BytesIn: 192000,
				RecordsInPerSecond: 1500, BusyTimeMsPerSecond: 1000, InPoolUsage: 1, InputWatermark: now - 2500, OutputWatermark: now - 2500}}}
		js.Vertices = []*rpcpb.VertexStatus{source, sink}
		js.FailedCheckpoints = 1
		for c := int64(1); c <= 12; c++ {
			js.Checkpoints = append(js.Checkpoints, &rpcpb.CheckpointStats{Id: c, Path: "/chk/" + id + "/chk-" + string(rune('0'+c%10)),
				TriggerTimestamp: now - 1000*(13-c), LatestAck: now - 1000*(13-c) + 40, DurationMs: 40 + c, FullSize: 1000 * c,
				CheckpointedSize: 100 * c, Subtasks: 4})
		}
	})
	waitFor(t, 5*time.Second, "the subtask metrics", func() bool {
		var bp BackPressureJSON
		decodeGet(t, base, "/jobs/"+id+"/vertices/a1b2/backpressure", &bp)
		return len(bp.Subtasks) == 3 && bp.Subtasks[0].Ratio > 0
	})

	checkShapes(t, schemas, base, []shapeCase{
		{"/jobs/" + id, "#/components/schemas/JobDetailsInfo", []string{
			// The JSON plan is at /jobs/{id}/plan.
			"JobDetailsInfo.plan",
			// weir's own fields, which its CLI reads.
			"+JobDetailsInfo.attempt", "+JobDetailsInfo.restarts", "+JobDetailsInfo.taskmanager", "+JobDetailsInfo.taskmanagerAddress",
			"+JobDetailsInfo.slotsNeeded", "+JobDetailsInfo.workers", "+JobDetailsInfo.checkpoints",
			"+JobDetailsVertex.slotSharingGroup", "+JobDetailsVertex.taskmanager", "+JobDetailsVertex.subtasks"}},
		{"/jobs/" + id + "/vertices/a1b2", "#/components/schemas/JobVertexDetailsInfo", nil},
		{"/jobs/" + id + "/vertices/a1b2/backpressure", "#/components/schemas/JobVertexBackPressureInfo", nil},
		{"/jobs/" + id + "/vertices/c3d4/watermarks", "#/serialized/MetricCollection", nil},
		{"/jobs/" + id + "/vertices/c3d4/metrics", "#/serialized/MetricCollection", []string{"Metric.value"}},
		{"/jobs/" + id + "/vertices/c3d4/metrics?get=0.numRecordsInPerSecond,0.busyTimeMsPerSecond", "#/serialized/MetricCollection", nil},
		{"/jobs/" + id + "/checkpoints", "#/serialized/CheckpointingStatistics", []string{
			// Never taken yet / not known to weir: no savepoint in the
			// checkpoint history, no failure details.
			"LatestCheckpoints.savepoint", "LatestCheckpoints.failed", "LatestCheckpoints.restored",
			"CompletedCheckpointStatistics.external_path",
			"+CompletedCheckpointStatistics.full_state_size"}},
	})

	// The values.
	var bp BackPressureJSON
	decodeGet(t, base, "/jobs/"+id+"/vertices/a1b2/backpressure", &bp)
	if bp.Level != "high" || bp.Subtasks[0].Level != "high" || bp.Subtasks[1].Level != "low" || bp.Subtasks[2].Level != "ok" ||
		bp.Subtasks[0].Ratio != 0.9 || bp.Subtasks[0].BusyRatio != 0.1 {
		t.Errorf("backpressure = %+v", bp)
	}
	var sinkBP BackPressureJSON
	decodeGet(t, base, "/jobs/"+id+"/vertices/c3d4/backpressure", &sinkBP)
	if sinkBP.Level != "ok" || sinkBP.Subtasks[0].BusyRatio != 1 {
		t.Errorf("sink backpressure = %+v", sinkBP)
	}
	var wms []MetricJSON
	decodeGet(t, base, "/jobs/"+id+"/vertices/c3d4/watermarks", &wms)
	if len(wms) != 1 || wms[0].ID != "0.currentInputWatermark" || wms[0].Value == nil || *wms[0].Value != strconv.FormatInt(now-2500, 10) {
		t.Errorf("watermarks = %+v", wms)
	}
	var ms []MetricJSON
	decodeGet(t, base, "/jobs/"+id+"/vertices/c3d4/metrics?get=0.numRecordsInPerSecond,0.busyTimeMsPerSecond,9.nothing", &ms)
	if len(ms) != 2 || *ms[0].Value != "1500" || *ms[1].Value != "1000" {
		t.Errorf("metrics = %+v", ms)
	}
	var lag []MetricJSON
	decodeGet(t, base, "/jobs/"+id+"/vertices/a1b2/metrics?get=2.pendingRecords", &lag)
	if len(lag) != 1 || *lag[0].Value != "14" {
		t.Errorf("source pendingRecords = %+v, want 14", lag)
	}
	var vd JobVertexDetailsJSON
	decodeGet(t, base, "/jobs/"+id+"/vertices/a1b2", &vd)
	if len(vd.Subtasks) != 3 || vd.Subtasks[2].Status != "RUNNING" || vd.Subtasks[2].Metrics.WriteRecords != 1000 ||
		vd.Subtasks[2].Metrics.WriteBytes != 64000 || vd.Subtasks[2].TaskManagerID != "tm-a" {
		t.Errorf("vertex = %+v", vd)
	}
	d := jobDetails(t, jm, id)
	if d.Vertices[0].Metrics.WriteBytes != 192000 || d.Vertices[1].Metrics.ReadBytes != 192000 ||
		d.Vertices[0].Tasks["RUNNING"] != 3 || d.Vertices[0].Status != "RUNNING" || d.StatusCounts["RUNNING"] != 4 {
		t.Errorf("job vertices = %+v, status counts %v", d.Vertices, d.StatusCounts)
	}
	var cs CheckpointingStatisticsJSON
	decodeGet(t, base, "/jobs/"+id+"/checkpoints", &cs)
	if len(cs.History) != maxCheckpointHistory || cs.History[0].ID != 12 || cs.History[9].ID != 3 ||
		cs.Counts.Failed != 1 || cs.Summary.EndToEndDuration.Min != 43 || cs.Summary.EndToEndDuration.Max != 52 ||
		cs.Summary.CheckpointedSize.Max != 1200 || cs.History[0].NumSubtasks != 4 {
		t.Errorf("checkpoints = %+v", cs)
	}
	for _, path := range []string{"/jobs/" + id + "/vertices/nope", "/jobs/nope/vertices/a1b2/backpressure"} {
		if code, v := getJSON(t, base, path); code != http.StatusNotFound {
			t.Errorf("GET %s = %d %v, want 404", path, code, v)
		}
	}
}
