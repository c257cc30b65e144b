package cluster

import (
	"time"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
	"github.com/weirproject/weir/internal/runtime"
)

// SubtaskMetricsJSON is one subtask's metrics as a worker reports them in
// its status file and the TaskManager forwards them: counters since the
// subtask started and rates over about the last second, with Flink's
// meanings (busyTimeMsPerSecond and so on).
type SubtaskMetricsJSON struct {
	Subtask                    int    `json:"subtask"`
	State                      string `json:"state"`
	RecordsIn                  int64  `json:"recordsIn"`
	RecordsOut                 int64  `json:"recordsOut"`
	BytesIn                    int64  `json:"bytesIn"`
	BytesOut                   int64  `json:"bytesOut"`
	BufferedIn                 int64  `json:"bufferedIn"`
	AccumulatedBusyMs          int64  `json:"accumulatedBusyMs"`
	AccumulatedIdleMs          int64  `json:"accumulatedIdleMs"`
	AccumulatedBackPressuredMs int64  `json:"accumulatedBackPressuredMs"`

	RecordsInPerSecond           float64 `json:"recordsInPerSecond"`
	RecordsOutPerSecond          float64 `json:"recordsOutPerSecond"`
	BytesInPerSecond             float64 `json:"bytesInPerSecond"`
	BytesOutPerSecond            float64 `json:"bytesOutPerSecond"`
	BusyTimeMsPerSecond          float64 `json:"busyTimeMsPerSecond"`
	IdleTimeMsPerSecond          float64 `json:"idleTimeMsPerSecond"`
	BackPressuredTimeMsPerSecond float64 `json:"backPressuredTimeMsPerSecond"`

	InPoolUsage  float64 `json:"inPoolUsage"`
	OutPoolUsage float64 `json:"outPoolUsage"`
	// Watermarks are event-time milliseconds; runtime.NoTimestamp (the
	// lowest int64, as in Flink) before the first.
	InputWatermark  int64 `json:"inputWatermark"`
	OutputWatermark int64 `json:"outputWatermark"`
	// Gauges are what the task's operators and source registered, such
	// as a Kafka source's pendingRecords and keyed operators' state sizes.
	Gauges []GaugeJSON `json:"gauges,omitempty"`
}

// GaugeJSON is one operator metric (Flink's operator scope).
type GaugeJSON struct {
	Operator string `json:"operator"`
	Name     string `json:"name"`
	Value    int64  `json:"value"`
}

// CheckpointStatsJSON is one completed or failed checkpoint or savepoint
// in a worker's status: the checkpoint coordinator's record of it.
type CheckpointStatsJSON struct {
	ID               int64  `json:"id"`
	Path             string `json:"path,omitempty"`
	TriggerTimestamp int64  `json:"triggerTimestamp"` // Unix ms
	LatestAck        int64  `json:"latestAck"`        // Unix ms; when it failed, for a failed one
	DurationMs       int64  `json:"durationMs"`
	FullSize         int64  `json:"fullSize"`
	CheckpointedSize int64  `json:"checkpointedSize"`
	Subtasks         int    `json:"subtasks"`
	Acknowledged     int    `json:"acknowledged"`
	Savepoint        bool   `json:"savepoint,omitempty"`
	// Failure says why a failed checkpoint failed; empty when it
	// completed.
	Failure string `json:"failure,omitempty"`
	// Tasks are the subtasks' parts, reported for the latest checkpoints
	// only.
	Tasks []SubtaskCheckpointJSON `json:"tasks,omitempty"`
}

// SubtaskCheckpointJSON is one subtask's part in a checkpoint; times are
// Unix milliseconds.
type SubtaskCheckpointJSON struct {
	Vertex           string `json:"vertex"`
	Subtask          int    `json:"subtask"`
	Finished         bool   `json:"finished,omitempty"`
	BarrierAt        int64  `json:"barrierAt"`
	AckAt            int64  `json:"ackAt"`
	SyncMs           int64  `json:"syncMs"`
	AsyncMs          int64  `json:"asyncMs"`
	AlignmentMs      int64  `json:"alignmentMs"`
	ProcessedBytes   int64  `json:"processedBytes"`
	PersistedBytes   int64  `json:"persistedBytes"`
	StateSize        int64  `json:"stateSize"`
	CheckpointedSize int64  `json:"checkpointedSize"`
	Unaligned        bool   `json:"unaligned,omitempty"`
}

// TaskSampler turns successive snapshots of a worker's task counters into
// rates. Rates cover the time since the sample before the latest one that
// is at least rateWindow old, so a status written every 200 ms still
// reports per-second figures that do not jump with every write.
type TaskSampler struct {
	prev, last map[taskKey]sample
}

// rateWindow is the shortest interval a rate is computed over.
const rateWindow = time.Second

type taskKey struct {
	vertex  string
	subtask int
}

type sample struct {
	at time.Time
	m  runtime.TaskMetrics
}

// Sample records ms taken at now and returns each task's metrics with its
// rates, keyed by vertex ID in the order of ms.
func (s *TaskSampler) Sample(ms []runtime.TaskMetrics, now time.Time) map[string][]SubtaskMetricsJSON {
	if s.last == nil {
		s.prev, s.last = map[taskKey]sample{}, map[taskKey]sample{}
	}
	out := make(map[string][]SubtaskMetricsJSON)
	for _, m := range ms {
		k := taskKey{string(m.Vertex), m.Subtask}
		j := SubtaskMetricsJSON{
			Subtask: m.Subtask, State: string(m.State),
			RecordsIn: m.RecordsIn, RecordsOut: m.RecordsOut, BytesIn: m.BytesIn, BytesOut: m.BytesOut,
			BufferedIn:                 m.BufferedIn,
			AccumulatedBusyMs:          m.BusyNanos() / 1e6,
			AccumulatedIdleMs:          m.IdleNanos / 1e6,
			AccumulatedBackPressuredMs: m.BackPressuredNanos / 1e6,
			InPoolUsage:                m.InPoolUsage, OutPoolUsage: m.OutPoolUsage,
			InputWatermark: m.InputWatermark, OutputWatermark: m.OutputWatermark,
		}
		for _, g := range m.Gauges {
			j.Gauges = append(j.Gauges, GaugeJSON{Operator: g.Operator, Name: g.Name, Value: g.Value})
		}
		// The base is the newest sample at least rateWindow old.
		base, ok := s.last[k]
		if ok && now.Sub(base.at) < rateWindow {
			base, ok = s.prev[k]
		}
		if ok && base.m.ElapsedNanos <= m.ElapsedNanos {
			secs := now.Sub(base.at).Seconds()
			if secs > 0 {
				j.RecordsInPerSecond = float64(m.RecordsIn-base.m.RecordsIn) / secs
				j.RecordsOutPerSecond = float64(m.RecordsOut-base.m.RecordsOut) / secs
				j.BytesInPerSecond = float64(m.BytesIn-base.m.BytesIn) / secs
				j.BytesOutPerSecond = float64(m.BytesOut-base.m.BytesOut) / secs
			}
			if el := m.ElapsedNanos - base.m.ElapsedNanos; el > 0 {
				perSecond := func(now, then int64) float64 {
					return min(1000, max(0, float64(now-then)/float64(el)*1000))
				}
				j.IdleTimeMsPerSecond = perSecond(m.IdleNanos, base.m.IdleNanos)
				j.BackPressuredTimeMsPerSecond = perSecond(m.BackPressuredNanos, base.m.BackPressuredNanos)
				j.BusyTimeMsPerSecond = max(0, 1000-j.IdleTimeMsPerSecond-j.BackPressuredTimeMsPerSecond)
			}
		}
		if last, ok := s.last[k]; !ok || now.Sub(last.at) >= rateWindow {
			if ok {
				s.prev[k] = last
			}
			s.last[k] = sample{now, m}
		}
		out[string(m.Vertex)] = append(out[string(m.Vertex)], j)
	}
	return out
}

// subtaskMetricsProto and its inverse carry the metrics in heartbeats.
func subtaskMetricsProto(m SubtaskMetricsJSON) *rpcpb.SubtaskMetrics {
	return &rpcpb.SubtaskMetrics{
		Subtask: int32(m.Subtask), State: m.State,
		RecordsIn: m.RecordsIn, RecordsOut: m.RecordsOut, BytesIn: m.BytesIn, BytesOut: m.BytesOut, BufferedIn: m.BufferedIn,
		AccumulatedBusyMs: m.AccumulatedBusyMs, AccumulatedIdleMs: m.AccumulatedIdleMs, AccumulatedBackPressuredMs: m.AccumulatedBackPressuredMs,
		RecordsInPerSecond: m.RecordsInPerSecond, RecordsOutPerSecond: m.RecordsOutPerSecond,
		BytesInPerSecond: m.BytesInPerSecond, BytesOutPerSecond: m.BytesOutPerSecond,
		BusyTimeMsPerSecond: m.BusyTimeMsPerSecond, IdleTimeMsPerSecond: m.IdleTimeMsPerSecond,
		BackPressuredTimeMsPerSecond: m.BackPressuredTimeMsPerSecond,
		InPoolUsage:                  m.InPoolUsage, OutPoolUsage: m.OutPoolUsage,
		InputWatermark: m.InputWatermark, OutputWatermark: m.OutputWatermark,
		Gauges: gaugesProto(m.Gauges),
	}
}

func gaugesProto(gs []GaugeJSON) []*rpcpb.OperatorGauge {
	out := make([]*rpcpb.OperatorGauge, len(gs))
	for i, g := range gs {
		out[i] = &rpcpb.OperatorGauge{Operator: g.Operator, Name: g.Name, Value: g.Value}
	}
	return out
}

func subtaskMetricsFromProto(p *rpcpb.SubtaskMetrics) SubtaskMetricsJSON {
	return SubtaskMetricsJSON{
		Subtask: int(p.GetSubtask()), State: p.GetState(),
		RecordsIn: p.GetRecordsIn(), RecordsOut: p.GetRecordsOut(), BytesIn: p.GetBytesIn(), BytesOut: p.GetBytesOut(), BufferedIn: p.GetBufferedIn(),
		AccumulatedBusyMs: p.GetAccumulatedBusyMs(), AccumulatedIdleMs: p.GetAccumulatedIdleMs(), AccumulatedBackPressuredMs: p.GetAccumulatedBackPressuredMs(),
		RecordsInPerSecond: p.GetRecordsInPerSecond(), RecordsOutPerSecond: p.GetRecordsOutPerSecond(),
		BytesInPerSecond: p.GetBytesInPerSecond(), BytesOutPerSecond: p.GetBytesOutPerSecond(),
		BusyTimeMsPerSecond: p.GetBusyTimeMsPerSecond(), IdleTimeMsPerSecond: p.GetIdleTimeMsPerSecond(),
		BackPressuredTimeMsPerSecond: p.GetBackPressuredTimeMsPerSecond(),
		InPoolUsage:                  p.GetInPoolUsage(), OutPoolUsage: p.GetOutPoolUsage(),
		InputWatermark: p.GetInputWatermark(), OutputWatermark: p.GetOutputWatermark(),
		Gauges: gaugesFromProto(p.GetGauges()),
	}
}

func gaugesFromProto(gs []*rpcpb.OperatorGauge) []GaugeJSON {
	var out []GaugeJSON
	for _, g := range gs {
		out = append(out, GaugeJSON{Operator: g.GetOperator(), Name: g.GetName(), Value: g.GetValue()})
	}
	return out
}

func checkpointStatsProto(c CheckpointStatsJSON) *rpcpb.CheckpointStats {
	p := &rpcpb.CheckpointStats{Id: c.ID, Path: c.Path, TriggerTimestamp: c.TriggerTimestamp, LatestAck: c.LatestAck,
		DurationMs: c.DurationMs, FullSize: c.FullSize, CheckpointedSize: c.CheckpointedSize, Subtasks: int32(c.Subtasks),
		Acknowledged: int32(c.Acknowledged), Savepoint: c.Savepoint, Failure: c.Failure}
	for _, t := range c.Tasks {
		p.Tasks = append(p.Tasks, &rpcpb.SubtaskCheckpoint{Vertex: t.Vertex, Subtask: int32(t.Subtask), Finished: t.Finished,
			BarrierAt: t.BarrierAt, AckAt: t.AckAt, SyncMs: t.SyncMs, AsyncMs: t.AsyncMs, AlignmentMs: t.AlignmentMs,
			ProcessedBytes: t.ProcessedBytes, PersistedBytes: t.PersistedBytes, StateSize: t.StateSize,
			CheckpointedSize: t.CheckpointedSize, Unaligned: t.Unaligned})
	}
	return p
}

func checkpointStatsFromProto(p *rpcpb.CheckpointStats) CheckpointStatsJSON {
	c := CheckpointStatsJSON{ID: p.GetId(), Path: p.GetPath(), TriggerTimestamp: p.GetTriggerTimestamp(), LatestAck: p.GetLatestAck(),
		DurationMs: p.GetDurationMs(), FullSize: p.GetFullSize(), CheckpointedSize: p.GetCheckpointedSize(), Subtasks: int(p.GetSubtasks()),
		Acknowledged: int(p.GetAcknowledged()), Savepoint: p.GetSavepoint(), Failure: p.GetFailure()}
	for _, t := range p.GetTasks() {
		c.Tasks = append(c.Tasks, SubtaskCheckpointJSON{Vertex: t.GetVertex(), Subtask: int(t.GetSubtask()), Finished: t.GetFinished(),
			BarrierAt: t.GetBarrierAt(), AckAt: t.GetAckAt(), SyncMs: t.GetSyncMs(), AsyncMs: t.GetAsyncMs(), AlignmentMs: t.GetAlignmentMs(),
			ProcessedBytes: t.GetProcessedBytes(), PersistedBytes: t.GetPersistedBytes(), StateSize: t.GetStateSize(),
			CheckpointedSize: t.GetCheckpointedSize(), Unaligned: t.GetUnaligned()})
	}
	return c
}

// CheckpointStatsOf converts the coordinator's records for a status file,
// with the subtasks' parts of the latest detailed ones.
func CheckpointStatsOf(h []runtime.CheckpointStats, detailed int) []CheckpointStatsJSON {
	out := make([]CheckpointStatsJSON, 0, len(h))
	for i, c := range h {
		j := CheckpointStatsJSON{ID: c.ID, Path: c.Path, TriggerTimestamp: c.TriggeredAt.UnixMilli(), LatestAck: c.CompletedAt.UnixMilli(),
			DurationMs: c.Duration.Milliseconds(), FullSize: c.FullSize, CheckpointedSize: c.CheckpointedSize, Subtasks: c.Subtasks,
			Acknowledged: c.Acknowledged, Savepoint: c.Savepoint, Failure: c.Failure}
		if i >= len(h)-detailed {
			for _, t := range c.Tasks {
				st := SubtaskCheckpointJSON{Vertex: t.Vertex, Subtask: t.Subtask, Finished: t.Finished}
				if !t.Finished {
					st.BarrierAt, st.AckAt = t.BarrierAt.UnixMilli(), t.AckAt.UnixMilli()
					st.SyncMs, st.AsyncMs, st.AlignmentMs = t.Sync.Milliseconds(), t.Async.Milliseconds(), t.Alignment.Milliseconds()
					st.ProcessedBytes, st.PersistedBytes = t.ProcessedBytes, t.PersistedBytes
					st.StateSize, st.CheckpointedSize, st.Unaligned = t.StateSize, t.CheckpointedSize, t.Unaligned
				}
				j.Tasks = append(j.Tasks, st)
			}
		}
		out = append(out, j)
	}
	return out
}
