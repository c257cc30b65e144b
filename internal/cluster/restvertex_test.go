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
				InputWatermark: math.MinInt64, OutputWatermark: now - 2000, Gauges: []*rpcpb.OperatorGauge{{Operator: "Source: numbers", Name: "pendingRecords", Value: int64(7 * s)}}})
		}
		sink := &rpcpb.VertexStatus{Id: "c3d4", Name: "Sink: print", Parallelism: 1, RecordsIn: 3000,
			Subtasks: []*rpcpb.SubtaskMetrics{{Subtask: 0, State: "RUNNING", RecordsIn: 3000, BytesIn: 192000,
				RecordsInPerSecond: 1500, BusyTimeMsPerSecond: 1000, InPoolUsage: 1, InputWatermark: now - 2500, OutputWatermark: now - 2500}}}
		js.Vertices = []*rpcpb.VertexStatus{source, sink}
		js.FailedCheckpoints = 1
		for c := int64(1); c <= 12; c++ {
			js.Checkpoints = append(js.Checkpoints, &rpcpb.CheckpointStats{Id: c, Path: "/chk/" + id + "/chk-" + string(rune('0'+c%10)),
				TriggerTimestamp: now - 1000*(13-c), LatestAck: now - 1000*(13-c) + 40, DurationMs: 40 + c, FullSize: 1000 * c,
				CheckpointedSize: 100 * c, Subtasks: 4, Acknowledged: 4})
		}
		// The latest completed one with its subtasks' parts: the source's
		// three aligned nothing, the sink aligned for 7 ms.
		latest := js.Checkpoints[11]
		trig := latest.TriggerTimestamp
		for s := range 3 {
			latest.Tasks = append(latest.Tasks, &rpcpb.SubtaskCheckpoint{Vertex: "a1b2", Subtask: int32(s), BarrierAt: trig + 1,
				AckAt: trig + 10 + int64(s), SyncMs: 1, AsyncMs: 5 + int64(s), StateSize: 100, CheckpointedSize: 30})
		}
		latest.Tasks = append(latest.Tasks, &rpcpb.SubtaskCheckpoint{Vertex: "c3d4", Subtask: 0, BarrierAt: trig + 3, AckAt: trig + 40,
			SyncMs: 2, AsyncMs: 20, AlignmentMs: 7, ProcessedBytes: 4096, StateSize: 10, CheckpointedSize: 10})
		// Checkpoint 13 failed: two of the source's subtasks acknowledged.
		failed := &rpcpb.CheckpointStats{Id: 13, TriggerTimestamp: now - 500, LatestAck: now - 100, DurationMs: 400, Subtasks: 4,
			Acknowledged: 2, Failure: "timed out after 400ms (execution.checkpointing.timeout)"}
		for s := range 2 {
			failed.Tasks = append(failed.Tasks, &rpcpb.SubtaskCheckpoint{Vertex: "a1b2", Subtask: int32(s), BarrierAt: now - 499,
				AckAt: now - 450, SyncMs: 1, AsyncMs: 2, StateSize: 100, CheckpointedSize: 30})
		}
		js.Checkpoints = append(js.Checkpoints, failed)
	})
	waitFor(t, 5*time.Second, "the subtask metrics", func() bool {
		var bp BackPressureJSON
		decodeGet(t, base, "/jobs/"+id+"/vertices/a1b2/backpressure", &bp)
		return len(bp.Subtasks) == 3 && bp.Subtasks[0].Ratio > 0
	})

	checkShapes(t, schemas, base, []shapeCase{
		{"/jobs/" + id, "#/components/schemas/JobDetailsInfo", []string{
			// The plan as at /jobs/{id}/plan (TestFlinkMonitoringAPI).
			"JsonPlanInput.local_strategy", "JsonPlanInput.caching",
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
			// None taken: no savepoint, no restore.
			"LatestCheckpoints.savepoint", "LatestCheckpoints.restored",
			// The history holds both subtypes.
			"AnyCheckpointStatistics.external_path", "AnyCheckpointStatistics.discarded",
			"AnyCheckpointStatistics.failure_timestamp", "AnyCheckpointStatistics.failure_message",
			"+AnyCheckpointStatistics.full_state_size", "+CompletedCheckpointStatistics.full_state_size",
			"+FailedCheckpointStatistics.full_state_size"}},
		{"/jobs/" + id + "/checkpoints/details/12", "#/serialized/CompletedCheckpointDetails", []string{
			"+CompletedCheckpointDetails.full_state_size"}},
		{"/jobs/" + id + "/checkpoints/details/13", "#/serialized/FailedCheckpointStatistics", []string{
			"+FailedCheckpointStatistics.full_state_size"}},
		{"/jobs/" + id + "/checkpoints/details/12/subtasks/c3d4", "#/serialized/TaskCheckpointStatisticsWithSubtaskDetails", []string{
			"+SubtaskCheckpointStatistics.checkpointed_size"}},
		{"/jobs/" + id + "/checkpoints/details/13/subtasks/a1b2", "#/serialized/TaskCheckpointStatisticsWithSubtaskDetails", []string{
			"+SubtaskCheckpointStatistics.checkpointed_size",
			// The subtask that never acknowledged is Flink's pending one:
			// its index and status only.
			"SubtaskCheckpointStatistics.ack_timestamp", "SubtaskCheckpointStatistics.end_to_end_duration",
			"SubtaskCheckpointStatistics.state_size", "SubtaskCheckpointStatistics.checkpoint", "SubtaskCheckpointStatistics.alignment",
			"SubtaskCheckpointStatistics.start_delay", "SubtaskCheckpointStatistics.unaligned_checkpoint", "SubtaskCheckpointStatistics.aborted"}},
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
	decodeGet(t, base, "/jobs/"+id+"/vertices/a1b2/metrics?get=2.Source:%20numbers.pendingRecords", &lag)
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
	if len(cs.History) != maxCheckpointHistory || cs.History[0].ID != 13 || cs.History[9].ID != 4 ||
		cs.Counts.Failed != 1 || cs.Summary.EndToEndDuration.Min != 44 || cs.Summary.EndToEndDuration.Max != 52 ||
		cs.Summary.CheckpointedSize.Max != 1200 || cs.History[1].NumSubtasks != 4 || cs.Summary.ProcessedData.Max != 4096 {
		t.Errorf("checkpoints = %+v", cs)
	}
	if f := cs.Latest.Failed; f == nil || f.ID != 13 || f.Status != "FAILED" || f.Clazz != "failed" || f.NumAckSubtasks != 2 ||
		f.FailureMessage == nil || *f.FailureMessage != "timed out after 400ms (execution.checkpointing.timeout)" || f.Discarded != nil {
		t.Errorf("latest failed checkpoint = %+v", f)
	}
	if c := cs.Latest.Completed; c == nil || c.ID != 12 || c.Discarded == nil || *c.Discarded || c.FailureMessage != nil {
		t.Errorf("latest completed checkpoint = %+v", c)
	}

	// One checkpoint's vertices, and one vertex's subtasks.
	var cd CheckpointStatisticsJSON
	decodeGet(t, base, "/jobs/"+id+"/checkpoints/details/12", &cd)
	src, snk := cd.Tasks["a1b2"], cd.Tasks["c3d4"]
	trig := cd.TriggerTimestamp
	if len(cd.Tasks) != 2 || src.NumAckSubtasks != 3 || src.StateSize != 300 || src.CheckpointedSize != 90 ||
		src.LatestAckTimestamp != trig+12 || src.EndToEndDuration != 12 || snk.ProcessedData != 4096 || snk.EndToEndDuration != 40 {
		t.Errorf("checkpoint 12's tasks = %+v", cd.Tasks)
	}
	var sd TaskCheckpointDetailsJSON
	decodeGet(t, base, "/jobs/"+id+"/checkpoints/details/12/subtasks/c3d4", &sd)
	if len(sd.Subtasks) != 1 || sd.Subtasks[0].Alignment == nil || sd.Subtasks[0].Alignment.Duration != 7 ||
		sd.Subtasks[0].Alignment.Processed != 4096 || *sd.Subtasks[0].StartDelay != 3 || sd.Subtasks[0].Checkpoint.Async != 20 ||
		sd.Summary.Alignment.Duration.Max != 7 || sd.Summary.CheckpointDuration.Async.Min != 20 {
		t.Errorf("checkpoint 12 at the sink = %+v", sd)
	}
	var fd TaskCheckpointDetailsJSON
	decodeGet(t, base, "/jobs/"+id+"/checkpoints/details/13/subtasks/a1b2", &fd)
	if fd.Status != "FAILED" || fd.NumAckSubtasks != 2 || fd.NumSubtasks != 3 || len(fd.Subtasks) != 3 ||
		fd.Subtasks[2].Status != "pending_or_failed" || fd.Subtasks[2].AckTimestamp != nil || fd.Subtasks[0].Status != "completed" {
		t.Errorf("failed checkpoint 13 at the source = %+v", fd)
	}
	for path, want := range map[string]int{
		"/jobs/" + id + "/checkpoints/details/99":               http.StatusNotFound,
		"/jobs/" + id + "/checkpoints/details/x":                http.StatusBadRequest,
		"/jobs/" + id + "/checkpoints/details/11/subtasks/a1b2": http.StatusNotFound, // reported without details
		"/jobs/" + id + "/checkpoints/details/12/subtasks/nope": http.StatusNotFound,
	} {
		if code, v := getJSON(t, base, path); code != want {
			t.Errorf("GET %s = %d %v, want %d", path, code, v, want)
		}
	}
	for _, path := range []string{"/jobs/" + id + "/vertices/nope", "/jobs/nope/vertices/a1b2/backpressure"} {
		if code, v := getJSON(t, base, path); code != http.StatusNotFound {
			t.Errorf("GET %s = %d %v, want 404", path, code, v)
		}
	}
}
