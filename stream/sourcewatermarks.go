package stream

import (
	"context"
	"fmt"
	"slices"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/runtime"
)

// FromSourceWithWatermarks adds a source whose records get timestamps and
// watermarks inside the source task, per split: each split has its own
// generator and the source's watermark is the minimum over the splits that
// are not finished or idle. This is what keeps a subtask reading several
// Kafka partitions at different speeds from dropping records as late.
func FromSourceWithWatermarks[T any](env *Environment, src connector.Source[T], name string, strategy WatermarkStrategy[T]) *Stream[T] {
	interval := config.AutoWatermarkInterval.Get(env.cfg).Milliseconds()
	return FromSource[T](env, &watermarkedSource[T]{Source: src, strategy: strategy, interval: interval}, name)
}

type watermarkedSource[T any] struct {
	connector.Source[T]
	strategy WatermarkStrategy[T]
	interval int64
}

// EncodeSplits passes checkpointing through to the wrapped source.
func (s *watermarkedSource[T]) EncodeSplits(splits []connector.Split) ([]byte, error) {
	ser, ok := s.Source.(connector.SplitSerializer)
	if !ok {
		return nil, fmt.Errorf("source %T cannot be checkpointed: it does not implement connector.SplitSerializer", s.Source)
	}
	return ser.EncodeSplits(splits)
}

// DecodeSplits passes checkpointing through to the wrapped source.
func (s *watermarkedSource[T]) DecodeSplits(data []byte) ([]connector.Split, error) {
	ser, ok := s.Source.(connector.SplitSerializer)
	if !ok {
		return nil, fmt.Errorf("source %T cannot be checkpointed: it does not implement connector.SplitSerializer", s.Source)
	}
	return ser.DecodeSplits(data)
}

func (s *watermarkedSource[T]) NewReader(ctx context.Context, sc connector.SplitContext) (connector.SplitReader[T], error) {
	r, err := s.Source.NewReader(ctx, sc)
	if err != nil {
		return nil, err
	}
	return &watermarkedReader[T]{SplitReader: r, strategy: s.strategy, interval: s.interval, splits: make(map[string]*splitWatermarks[T]), current: runtime.NoTimestamp}, nil
}

// sourceTaskOutput is what the runtime's source output offers besides
// records.
type sourceTaskOutput interface {
	EmitWatermark(wm int64)
	EmitWatermarkStatus(idle bool)
	ProcessingTimeMillis() int64
}

// watermarkedReader wraps a reader: it is the Output the inner reader
// emits to, with one generator per split, and it emits the combined
// watermark to the task.
type watermarkedReader[T any] struct {
	connector.SplitReader[T]
	strategy     WatermarkStrategy[T]
	interval     int64
	splits       map[string]*splitWatermarks[T]
	out          connector.Output[T]
	task         sourceTaskOutput
	now          int64
	lastPeriodic int64
	current      int64
	idle         bool
	// assigned are the reader's splits; they hold the watermark back from
	// the start (a split that has not emitted yet may still have early
	// records), once the reader shows it emits per split.
	assigned  []string
	perSplits bool
}

func (r *watermarkedReader[T]) AddSplits(splits []connector.Split) error {
	for _, s := range splits {
		r.assigned = append(r.assigned, s.SplitID())
	}
	return r.SplitReader.AddSplits(splits)
}

// SnapshotCheckpoint passes connector.CheckpointListener through to the
// wrapped reader.
func (r *watermarkedReader[T]) SnapshotCheckpoint(id int64) ([]connector.Split, error) {
	if l, ok := r.SplitReader.(connector.CheckpointListener); ok {
		return l.SnapshotCheckpoint(id)
	}
	return r.SplitReader.Snapshot()
}

// NotifyCheckpointComplete passes connector.CheckpointListener through to
// the wrapped reader.
func (r *watermarkedReader[T]) NotifyCheckpointComplete(id int64) error {
	if l, ok := r.SplitReader.(connector.CheckpointListener); ok {
		return l.NotifyCheckpointComplete(id)
	}
	return nil
}

type splitWatermarks[T any] struct {
	r          *watermarkedReader[T]
	gen        WatermarkGenerator[T]
	wm         int64
	lastRecord int64
	idle       bool
}

func (r *watermarkedReader[T]) Poll(ctx context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	task, ok := out.(sourceTaskOutput)
	if !ok {
		return 0, fmt.Errorf("stream: source watermarks need the runtime's source output, got %T", out)
	}
	r.out, r.task = out, task
	r.now = task.ProcessingTimeMillis()
	status, err := r.SplitReader.Poll(ctx, r)
	if err != nil {
		return status, err
	}
	r.now = task.ProcessingTimeMillis()
	// Periodic emission every interval of processing time; an interval
	// of 0 turns it off, as in Flink (ProgressiveTimestampsAndWatermarks
	// starts no periodic emitter then): only what generators emit in
	// OnEvent, and the end of input, advance the watermark.
	if !r.strategy.perEvent && r.interval > 0 && r.now-r.lastPeriodic >= r.interval {
		r.lastPeriodic = r.now
		for _, s := range r.splits {
			s.gen.OnPeriodicEmit(s)
		}
	}
	if t := r.strategy.idleTimeout.Milliseconds(); t > 0 {
		for _, s := range r.splits {
			if !s.idle && r.now-s.lastRecord >= t {
				s.idle = true
			}
		}
	}
	r.combine()
	return status, nil
}

func (r *watermarkedReader[T]) split(id string) *splitWatermarks[T] {
	s, ok := r.splits[id]
	if !ok {
		s = &splitWatermarks[T]{r: r, gen: r.strategy.newGenerator(), wm: runtime.NoTimestamp, lastRecord: r.now}
		r.splits[id] = s
	}
	return s
}

// Collect takes records of readers that do not say their split: one
// generator for the whole subtask.
func (r *watermarkedReader[T]) Collect(v T) { r.split("").CollectWithTimestamp(v, runtime.NoTimestamp) }

func (r *watermarkedReader[T]) CollectWithTimestamp(v T, ts int64) {
	r.split("").CollectWithTimestamp(v, ts)
}

// ForSplit implements connector.SplitOutputs.
func (r *watermarkedReader[T]) ForSplit(id string) connector.Output[T] {
	if !r.perSplits {
		r.perSplits = true
		for _, a := range r.assigned {
			r.split(a)
		}
	}
	return r.split(id)
}

// SplitFinished implements connector.SplitOutputs.
func (r *watermarkedReader[T]) SplitFinished(id string) {
	delete(r.splits, id)
	r.assigned = slices.DeleteFunc(r.assigned, func(a string) bool { return a == id })
	r.combine()
}

func (s *splitWatermarks[T]) Collect(v T) { s.CollectWithTimestamp(v, runtime.NoTimestamp) }

func (s *splitWatermarks[T]) CollectWithTimestamp(v T, ts int64) {
	r := s.r
	if r.strategy.ingestion {
		ts = r.now
	}
	if r.strategy.assign != nil {
		ts = r.strategy.assign(v, ts)
	}
	s.lastRecord = r.now
	// The record first, then what it tells the generator, as Flink's
	// SourceOutputWithWatermarks does; what the generator emits in
	// OnEvent goes out at once (Flink's immediate output of the split),
	// so that a watermark the record advanced never overtakes it, and a
	// generator that emits on events (a SQL table's WATERMARK FOR) is not
	// held until the end of the Poll.
	r.out.CollectWithTimestamp(v, ts)
	// A record makes an idle split active again.
	before, wasIdle := s.wm, s.idle
	s.idle = false
	s.gen.OnEvent(v, ts, s)
	if r.strategy.perEvent {
		s.gen.OnPeriodicEmit(s)
	}
	if s.wm > before || s.idle != wasIdle {
		r.combine()
	}
}

// EmitWatermark implements WatermarkOutput for one split.
func (s *splitWatermarks[T]) EmitWatermark(wm int64) {
	if wm > s.wm {
		s.wm = wm
	}
	s.idle = false
}

// MarkIdle implements WatermarkOutput for one split.
func (s *splitWatermarks[T]) MarkIdle() { s.idle = true }

// combine emits the minimum watermark over the active splits when it
// advanced, and the subtask's idleness when every split is idle.
func (r *watermarkedReader[T]) combine() {
	min, active := runtime.MaxWatermark, false
	for _, s := range r.splits {
		if s.idle {
			continue
		}
		active = true
		if s.wm < min {
			min = s.wm
		}
	}
	allIdle := !active && len(r.splits) > 0
	if allIdle != r.idle {
		r.idle = allIdle
		r.task.EmitWatermarkStatus(allIdle)
	}
	if active && min > r.current {
		r.current = min
		r.task.EmitWatermark(min)
	}
}
