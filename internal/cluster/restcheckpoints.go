package cluster

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
)

// Checkpoint statistics as Flink's monitoring API shows them: the history
// (GET /jobs/{id}/checkpoints), one checkpoint with its vertices
// (/checkpoints/details/{cid}) and one vertex with its subtasks
// (/checkpoints/details/{cid}/subtasks/{vid}), from what the leading
// worker of each attempt reports.

// addCheckpointLocked adds a completed or failed checkpoint to the
// history. One already there is replaced when the report says more: its
// subtasks' parts, or that it completed (an attempt after a failed one
// may take the same number again).
func (j *job) addCheckpointLocked(c CheckpointStatsJSON) {
	i, found := slices.BinarySearchFunc(j.ckHistory, c.ID, func(e CheckpointStatsJSON, id int64) int {
		return cmp.Compare(e.ID, id)
	})
	if found {
		old := &j.ckHistory[i]
		if (old.Failure != "" && c.Failure == "") || (len(old.Tasks) == 0 && len(c.Tasks) > 0 && old.Failure == c.Failure) {
			*old = c
		}
		return
	}
	j.ckHistory = slices.Insert(j.ckHistory, i, c)
	if n := len(j.ckHistory) - maxCheckpointHistory; n > 0 {
		j.ckHistory = slices.Clone(j.ckHistory[n:])
	}
}

// lastCompletedLocked is the newest completed checkpoint in the history.
func (j *job) lastCompletedLocked() (CheckpointStatsJSON, bool) {
	for i := len(j.ckHistory) - 1; i >= 0; i-- {
		if c := j.ckHistory[i]; c.Failure == "" && !c.Savepoint {
			return c, true
		}
	}
	return CheckpointStatsJSON{}, false
}

// Flink's CheckpointingStatistics (GET /jobs/{id}/checkpoints).
type CheckpointingStatisticsJSON struct {
	Counts struct {
		Restored   int64 `json:"restored"`
		Total      int64 `json:"total"`
		InProgress int   `json:"in_progress"`
		Completed  int64 `json:"completed"`
		Failed     int64 `json:"failed"`
	} `json:"counts"`
	Summary CheckpointSummaryJSON `json:"summary"`
	Latest  struct {
		Completed *CheckpointStatisticsJSON `json:"completed"`
		Savepoint *CheckpointStatisticsJSON `json:"savepoint"`
		Failed    *CheckpointStatisticsJSON `json:"failed"`
		Restored  *RestoredCheckpointJSON   `json:"restored"`
	} `json:"latest"`
	History []CheckpointStatisticsJSON `json:"history"`
}

// CheckpointSummaryJSON summarizes the completed checkpoints in the
// history (Flink's CheckpointingStatistics.Summary).
type CheckpointSummaryJSON struct {
	CheckpointedSize  StatsSummaryJSON `json:"checkpointed_size"`
	StateSize         StatsSummaryJSON `json:"state_size"`
	EndToEndDuration  StatsSummaryJSON `json:"end_to_end_duration"`
	AlignmentBuffered StatsSummaryJSON `json:"alignment_buffered"`
	ProcessedData     StatsSummaryJSON `json:"processed_data"`
	PersistedData     StatsSummaryJSON `json:"persisted_data"`
}

// StatsSummaryJSON is Flink's StatsSummaryDto.
type StatsSummaryJSON struct {
	Min  int64   `json:"min"`
	Max  int64   `json:"max"`
	Avg  int64   `json:"avg"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

func statsSummary(values []int64) StatsSummaryJSON {
	if len(values) == 0 {
		return StatsSummaryJSON{}
	}
	v := values // the caller's own slice, built for this summary
	slices.Sort(v)
	sum := int64(0)
	for _, x := range v {
		sum += x
	}
	// Nearest rank: the smallest value with at least p of the values at
	// or below it.
	q := func(p float64) float64 {
		return float64(v[max(0, int(math.Ceil(p*float64(len(v))))-1)])
	}
	return StatsSummaryJSON{Min: v[0], Max: v[len(v)-1], Avg: sum / int64(len(v)),
		P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), P999: q(0.999)}
}

// CheckpointStatisticsJSON is one checkpoint of the history, as Flink's
// CheckpointStatistics subtypes write it: completed ones with
// external_path and discarded, failed ones with failure_timestamp and
// failure_message ("clazz" says which). Tasks is empty in the history and
// filled in a checkpoint's details.
type CheckpointStatisticsJSON struct {
	ID                 int64  `json:"id"`
	Status             string `json:"status"`
	IsSavepoint        bool   `json:"is_savepoint"`
	TriggerTimestamp   int64  `json:"trigger_timestamp"`
	LatestAckTimestamp int64  `json:"latest_ack_timestamp"`
	// StateSize is what the checkpoint wrote (Flink keeps the old name
	// for its checkpointed size); CheckpointedSize the same, and
	// FullStateSize everything it references (weir's own field).
	StateSize         int64                              `json:"state_size"`
	CheckpointedSize  int64                              `json:"checkpointed_size"`
	FullStateSize     int64                              `json:"full_state_size"`
	EndToEndDuration  int64                              `json:"end_to_end_duration"`
	AlignmentBuffered int64                              `json:"alignment_buffered"`
	ProcessedData     int64                              `json:"processed_data"`
	PersistedData     int64                              `json:"persisted_data"`
	NumSubtasks       int                                `json:"num_subtasks"`
	NumAckSubtasks    int                                `json:"num_acknowledged_subtasks"`
	CheckpointType    string                             `json:"checkpoint_type"`
	Tasks             map[string]TaskCheckpointStatsJSON `json:"tasks"`
	ExternalPath      string                             `json:"external_path,omitempty"`
	Discarded         *bool                              `json:"discarded,omitempty"`
	FailureTimestamp  *int64                             `json:"failure_timestamp,omitempty"`
	FailureMessage    *string                            `json:"failure_message,omitempty"`
	Clazz             string                             `json:"clazz"`
}

// TaskCheckpointStatsJSON is one vertex's part in a checkpoint (Flink's
// TaskCheckpointStatistics).
type TaskCheckpointStatsJSON struct {
	ID                 int64  `json:"id"`
	Status             string `json:"status"`
	LatestAckTimestamp int64  `json:"latest_ack_timestamp"`
	StateSize          int64  `json:"state_size"`
	CheckpointedSize   int64  `json:"checkpointed_size"`
	EndToEndDuration   int64  `json:"end_to_end_duration"`
	AlignmentBuffered  int64  `json:"alignment_buffered"`
	ProcessedData      int64  `json:"processed_data"`
	PersistedData      int64  `json:"persisted_data"`
	NumSubtasks        int    `json:"num_subtasks"`
	NumAckSubtasks     int    `json:"num_acknowledged_subtasks"`
}

// TaskCheckpointDetailsJSON is Flink's
// TaskCheckpointStatisticsWithSubtaskDetails: a vertex's part in a
// checkpoint with a summary over its subtasks and each subtask's part.
type TaskCheckpointDetailsJSON struct {
	TaskCheckpointStatsJSON
	Summary struct {
		StateSize          StatsSummaryJSON `json:"state_size"`
		CheckpointedSize   StatsSummaryJSON `json:"checkpointed_size"`
		EndToEndDuration   StatsSummaryJSON `json:"end_to_end_duration"`
		CheckpointDuration struct {
			Sync  StatsSummaryJSON `json:"sync"`
			Async StatsSummaryJSON `json:"async"`
		} `json:"checkpoint_duration"`
		Alignment struct {
			Buffered  StatsSummaryJSON `json:"buffered"`
			Processed StatsSummaryJSON `json:"processed"`
			Persisted StatsSummaryJSON `json:"persisted"`
			Duration  StatsSummaryJSON `json:"duration"`
		} `json:"alignment"`
		StartDelay StatsSummaryJSON `json:"start_delay"`
	} `json:"summary"`
	Subtasks []SubtaskCheckpointStatsJSON `json:"subtasks"`
}

// SubtaskCheckpointStatsJSON is Flink's SubtaskCheckpointStatistics: a
// completed subtask's part ("clazz": "completed") or one that never
// acknowledged ("pending", status "pending_or_failed", index only).
type SubtaskCheckpointStatsJSON struct {
	Index               int                      `json:"index"`
	Status              string                   `json:"status"`
	AckTimestamp        *int64                   `json:"ack_timestamp,omitempty"`
	EndToEndDuration    *int64                   `json:"end_to_end_duration,omitempty"`
	StateSize           *int64                   `json:"state_size,omitempty"`
	CheckpointedSize    *int64                   `json:"checkpointed_size,omitempty"`
	Checkpoint          *CheckpointDurationJSON  `json:"checkpoint,omitempty"`
	Alignment           *CheckpointAlignmentJSON `json:"alignment,omitempty"`
	StartDelay          *int64                   `json:"start_delay,omitempty"`
	UnalignedCheckpoint *bool                    `json:"unaligned_checkpoint,omitempty"`
	Aborted             *bool                    `json:"aborted,omitempty"`
	Clazz               string                   `json:"clazz"`
}

// CheckpointDurationJSON is a subtask's synchronous and asynchronous
// snapshot parts in ms (Flink's CheckpointDuration).
type CheckpointDurationJSON struct {
	Sync  int64 `json:"sync"`
	Async int64 `json:"async"`
}

// CheckpointAlignmentJSON is a subtask's alignment: bytes processed and
// persisted, and its duration in ms (Flink's CheckpointAlignment; buffered
// is always 0, as in Flink since unaligned checkpoints).
type CheckpointAlignmentJSON struct {
	Buffered  int64 `json:"buffered"`
	Processed int64 `json:"processed"`
	Persisted int64 `json:"persisted"`
	Duration  int64 `json:"duration"`
}

// RestoredCheckpointJSON is Flink's RestoredCheckpointStatistics.
type RestoredCheckpointJSON struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// checkpointStatisticsLocked describes one checkpoint of the history;
// with tasks, its vertices' parts too.
func (j *job) checkpointStatisticsLocked(c CheckpointStatsJSON, newest bool, tasks bool) CheckpointStatisticsJSON {
	out := CheckpointStatisticsJSON{
		ID: c.ID, Status: "COMPLETED", IsSavepoint: c.Savepoint, TriggerTimestamp: c.TriggerTimestamp, LatestAckTimestamp: c.LatestAck,
		StateSize: c.CheckpointedSize, CheckpointedSize: c.CheckpointedSize, FullStateSize: c.FullSize,
		EndToEndDuration: c.DurationMs, NumSubtasks: c.Subtasks, NumAckSubtasks: c.Acknowledged,
		CheckpointType: "CHECKPOINT", Tasks: map[string]TaskCheckpointStatsJSON{}, Clazz: "completed",
	}
	if c.Savepoint {
		out.CheckpointType = "SAVEPOINT"
	}
	var latestAck int64
	for _, t := range c.Tasks {
		out.ProcessedData += t.ProcessedBytes
		out.PersistedData += t.PersistedBytes
		latestAck = max(latestAck, t.AckAt)
	}
	if c.Failure != "" {
		out.Status, out.Clazz = "FAILED", "failed"
		out.LatestAckTimestamp = latestAck
		failedAt, msg := c.LatestAck, c.Failure
		out.FailureTimestamp, out.FailureMessage = &failedAt, &msg
	} else {
		out.ExternalPath = c.Path
		// A checkpoint older than the retained ones was deleted;
		// savepoints belong to their owner and stay.
		discarded := !c.Savepoint && c.Path != "" && c.Path != j.latest && !newest
		out.Discarded = &discarded
	}
	if tasks {
		for _, v := range j.vertices {
			if ts, ok := j.taskCheckpointLocked(c, v); ok {
				out.Tasks[v.ID] = ts.TaskCheckpointStatsJSON
			}
		}
	}
	return out
}

// taskCheckpointLocked is vertex v's part in checkpoint c, with its
// subtasks'; false when the checkpoint's report carried no subtasks.
func (j *job) taskCheckpointLocked(c CheckpointStatsJSON, v JobVertexJSON) (TaskCheckpointDetailsJSON, bool) {
	var out TaskCheckpointDetailsJSON
	if len(c.Tasks) == 0 {
		return out, false
	}
	ts := &out.TaskCheckpointStatsJSON
	ts.ID, ts.Status, ts.NumSubtasks = c.ID, "COMPLETED", v.Parallelism
	if c.Failure != "" {
		ts.Status = "FAILED"
	}
	acked := make([]*SubtaskCheckpointJSON, v.Parallelism)
	for i := range c.Tasks {
		if t := &c.Tasks[i]; t.Vertex == v.ID && t.Subtask >= 0 && t.Subtask < v.Parallelism {
			acked[t.Subtask] = t
		}
	}
	var states, sizes, durations, syncs, asyncs, processed, persisted, alignments, delays []int64
	for i, t := range acked {
		if t == nil {
			out.Subtasks = append(out.Subtasks, SubtaskCheckpointStatsJSON{Index: i, Status: "pending_or_failed", Clazz: "pending"})
			continue
		}
		ts.NumAckSubtasks++
		ack := t.AckAt
		if t.Finished {
			// It had finished: nothing to acknowledge but its end.
			ack = c.TriggerTimestamp
		}
		ts.LatestAckTimestamp = max(ts.LatestAckTimestamp, ack)
		ts.StateSize += t.StateSize
		ts.CheckpointedSize += t.CheckpointedSize
		ts.ProcessedData += t.ProcessedBytes
		ts.PersistedData += t.PersistedBytes
		duration := max(0, ack-c.TriggerTimestamp)
		delay := max(0, t.BarrierAt-c.TriggerTimestamp)
		if t.Finished {
			delay = 0
		}
		sub := SubtaskCheckpointStatsJSON{Index: i, Status: "completed", Clazz: "completed",
			AckTimestamp: &ack, EndToEndDuration: &duration, StateSize: &t.StateSize, CheckpointedSize: &t.CheckpointedSize,
			StartDelay: &delay, UnalignedCheckpoint: &t.Unaligned, Aborted: new(bool)}
		sub.Checkpoint = &CheckpointDurationJSON{Sync: t.SyncMs, Async: t.AsyncMs}
		sub.Alignment = &CheckpointAlignmentJSON{Processed: t.ProcessedBytes, Persisted: t.PersistedBytes, Duration: t.AlignmentMs}
		out.Subtasks = append(out.Subtasks, sub)
		states = append(states, t.StateSize)
		sizes = append(sizes, t.CheckpointedSize)
		durations = append(durations, duration)
		syncs = append(syncs, t.SyncMs)
		asyncs = append(asyncs, t.AsyncMs)
		processed = append(processed, t.ProcessedBytes)
		persisted = append(persisted, t.PersistedBytes)
		alignments = append(alignments, t.AlignmentMs)
		delays = append(delays, delay)
	}
	if ts.LatestAckTimestamp > 0 {
		ts.EndToEndDuration = max(0, ts.LatestAckTimestamp-c.TriggerTimestamp)
	}
	sm := &out.Summary
	sm.StateSize, sm.CheckpointedSize, sm.EndToEndDuration = statsSummary(states), statsSummary(sizes), statsSummary(durations)
	sm.CheckpointDuration.Sync, sm.CheckpointDuration.Async = statsSummary(syncs), statsSummary(asyncs)
	sm.Alignment.Buffered = statsSummary(make([]int64, len(processed)))
	sm.Alignment.Processed, sm.Alignment.Persisted = statsSummary(processed), statsSummary(persisted)
	sm.Alignment.Duration, sm.StartDelay = statsSummary(alignments), statsSummary(delays)
	return out, true
}

func (j *job) checkpointingLocked() CheckpointingStatisticsJSON {
	var out CheckpointingStatisticsJSON
	out.Counts.Completed = int64(j.baseChk + j.attemptChk)
	out.Counts.Failed = int64(j.ckFailed + j.ckFailedAttempt)
	out.Counts.Total = out.Counts.Completed + out.Counts.Failed
	if j.restored != nil {
		out.Counts.Restored = 1
		if j.restarts > 0 {
			out.Counts.Restored = int64(j.restarts)
		}
		out.Latest.Restored = &RestoredCheckpointJSON{ID: j.restored.id, RestoreTimestamp: j.restored.at.UnixMilli(),
			IsSavepoint: j.restored.savepoint, ExternalPath: j.restored.path}
	}
	out.History = []CheckpointStatisticsJSON{}
	var sizes, full, durations, processed, persisted []int64
	newest, _ := j.lastCompletedLocked()
	for i := len(j.ckHistory) - 1; i >= 0; i-- {
		c := j.ckHistory[i]
		cs := j.checkpointStatisticsLocked(c, c.ID == newest.ID, false)
		out.History = append(out.History, cs)
		switch {
		case c.Failure != "":
			if out.Latest.Failed == nil {
				out.Latest.Failed = &cs
			}
			continue
		case c.Savepoint:
			if out.Latest.Savepoint == nil {
				out.Latest.Savepoint = &cs
			}
		case out.Latest.Completed == nil:
			out.Latest.Completed = &cs
		}
		sizes = append(sizes, c.CheckpointedSize)
		full = append(full, c.FullSize)
		durations = append(durations, c.DurationMs)
		processed = append(processed, cs.ProcessedData)
		persisted = append(persisted, cs.PersistedData)
	}
	if j.latest != "" && (out.Latest.Completed == nil || out.Latest.Completed.ExternalPath != j.latest) {
		// The JobManager confirmed a checkpoint before a heartbeat brought
		// its statistics: the confirmed one is the latest.
		out.Latest.Completed = &CheckpointStatisticsJSON{ID: j.confirmedID, Status: "COMPLETED", CheckpointType: "CHECKPOINT",
			Tasks: map[string]TaskCheckpointStatsJSON{}, ExternalPath: j.latest, Discarded: new(bool), Clazz: "completed"}
	}
	out.Summary = CheckpointSummaryJSON{CheckpointedSize: statsSummary(sizes), StateSize: statsSummary(full),
		EndToEndDuration: statsSummary(durations), AlignmentBuffered: statsSummary(make([]int64, len(sizes))),
		ProcessedData: statsSummary(processed), PersistedData: statsSummary(persisted)}
	return out
}

func (jm *JobManager) handleCheckpointing(w http.ResponseWriter, r *http.Request) {
	jm.withJob(w, r, func(j *job) any { return j.checkpointingLocked() })
}

// checkpointLocked finds checkpoint cid of the history.
func (j *job) checkpointLocked(cid string) (CheckpointStatsJSON, any) {
	id, err := strconv.ParseInt(cid, 10, 64)
	if err != nil {
		return CheckpointStatsJSON{}, restError{http.StatusBadRequest, fmt.Sprintf("checkpoint ID %q: not a number", cid)}
	}
	i, found := slices.BinarySearchFunc(j.ckHistory, id, func(e CheckpointStatsJSON, id int64) int { return cmp.Compare(e.ID, id) })
	if !found {
		return CheckpointStatsJSON{}, restError{http.StatusNotFound, fmt.Sprintf("checkpoint %d of job %s is not in its history (the latest %d)", id, j.id, maxCheckpointHistory)}
	}
	return j.ckHistory[i], nil
}

// handleCheckpointDetails is GET /jobs/{id}/checkpoints/details/{cid}.
func (jm *JobManager) handleCheckpointDetails(w http.ResponseWriter, r *http.Request) {
	jm.withJob(w, r, func(j *job) any {
		c, e := j.checkpointLocked(r.PathValue("cid"))
		if e != nil {
			return e
		}
		newest, _ := j.lastCompletedLocked()
		return j.checkpointStatisticsLocked(c, c.ID == newest.ID, true)
	})
}

// handleCheckpointSubtasks is GET
// /jobs/{id}/checkpoints/details/{cid}/subtasks/{vid}.
func (jm *JobManager) handleCheckpointSubtasks(w http.ResponseWriter, r *http.Request) {
	jm.withVertex(w, r, func(j *job, v JobVertexJSON, _ int) any {
		c, e := j.checkpointLocked(r.PathValue("cid"))
		if e != nil {
			return e
		}
		out, ok := j.taskCheckpointLocked(c, v)
		if !ok {
			return restError{http.StatusNotFound, fmt.Sprintf("checkpoint %d of job %s has no subtask details (only the latest checkpoints of an attempt are reported with them)", c.ID, j.id)}
		}
		return out
	})
}
