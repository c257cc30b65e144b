package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
)

// FromSource adds a source to the job. Its subtasks read the source's
// splits in parallel; split i goes to subtask i mod parallelism.
func FromSource[T any](env *Environment, src connector.Source[T], name string) *Stream[T] {
	info := &runtime.OperatorInfo{}
	n := env.graph.AddNode(&graph.StreamNode{
		Kind:    "source",
		Name:    name,
		Bounded: src.Boundedness() == connector.Bounded,
	})
	info.Node, info.Kind = n.ID, n.Kind
	n.Ops = &runtime.NodeOps{
		NewOperator: func(oc *runtime.OperatorContext, out any) (any, error) {
			o, _ := out.(runtime.Output[T])
			if o == nil {
				o = discardOutput[T]{}
			}
			return &runtime.SourceHead[T]{Source: src, Out: o, Info: oc.Info}, nil
		},
		RunHead: func(t *runtime.Task, head any, _ [2]any) error {
			return runtime.RunSource(t, head.(*runtime.SourceHead[T]))
		},
		Splits: src.Splits,
	}
	return newStream[T](env, n)
}

// FromSlice is a bounded source of the given values, split into contiguous
// ranges that the source subtasks read in parallel.
func FromSlice[T any](env *Environment, values []T) *Stream[T] {
	return FromSource[T](env, &Generator[T]{Count: int64(len(values)), Fn: func(i int64) T { return values[i] }, Contiguous: true}, "Collection")
}

// Generator is a source of Fn(0), Fn(1), ... up to Count values, or
// without end when Count is negative. It is deterministic, parallel and
// restartable, which makes it the source of choice for tests and
// benchmarks.
type Generator[T any] struct {
	Count int64
	Fn    func(i int64) T
	// Contiguous splits the index space into one contiguous range per
	// subtask (keeping order within a range) instead of interleaving.
	Contiguous bool
	// Timestamps, if set, gives each record an event timestamp.
	Timestamps func(i int64) int64
	// Rate, if positive, paces the records: record i is due Rate records
	// a second after the first, across all subtasks. A reader ahead of
	// its schedule yields (NothingAvailable) rather than sleeping, so that
	// checkpoints and timers are never held up by the pacing.
	Rate float64
}

// GeneratorSplit is the position of one generator split: it produces the
// indices Next, Next+Stride, ... below End.
type GeneratorSplit struct {
	ID     int
	Next   int64
	Stride int64
	End    int64 // exclusive; negative: unbounded
}

// SplitID names the split.
func (s *GeneratorSplit) SplitID() string { return fmt.Sprintf("generator-%d", s.ID) }

// Boundedness implements connector.Source.
func (g *Generator[T]) Boundedness() connector.Boundedness {
	if g.Count < 0 {
		return connector.Unbounded
	}
	return connector.Bounded
}

// Splits implements connector.Source: one split per subtask.
func (g *Generator[T]) Splits(_ context.Context, parallelism int) ([]connector.Split, error) {
	out := make([]connector.Split, parallelism)
	for i := range out {
		s := &GeneratorSplit{ID: i, Next: int64(i), Stride: int64(parallelism), End: g.Count}
		if g.Contiguous && g.Count >= 0 {
			s.Next = g.Count * int64(i) / int64(parallelism)
			s.End = g.Count * int64(i+1) / int64(parallelism)
			s.Stride = 1
		}
		out[i] = s
	}
	return out, nil
}

// NewReader implements connector.Source.
func (g *Generator[T]) NewReader(context.Context, connector.SplitContext) (connector.SplitReader[T], error) {
	return &generatorReader[T]{g: g}, nil
}

type generatorReader[T any] struct {
	g      *Generator[T]
	splits []*GeneratorSplit
	// start is when index 0 was (or would have been) due, set at the
	// first Poll from the first split's position, so that a restored
	// reader goes on at the rate instead of catching up.
	start time.Time
}

func (r *generatorReader[T]) AddSplits(splits []connector.Split) error {
	for _, s := range splits {
		gs, ok := s.(*GeneratorSplit)
		if !ok {
			return fmt.Errorf("generator: split %q: %w", s.SplitID(), connector.ErrUnsupportedSplit)
		}
		cp := *gs
		r.splits = append(r.splits, &cp)
	}
	return nil
}

const generatorBatch = 1024

// Poll emits up to generatorBatch records of the first unfinished split.
func (r *generatorReader[T]) Poll(_ context.Context, sourceOut connector.Output[T]) (connector.ReadStatus, error) {
	if len(r.splits) > 0 {
		s := r.splits[0]
		out := sourceOut
		perSplit, _ := sourceOut.(connector.SplitOutputs[T])
		if perSplit != nil {
			out = perSplit.ForSplit(s.SplitID())
		}
		var due time.Time
		if r.g.Rate > 0 {
			if r.start.IsZero() {
				r.start = time.Now().Add(-time.Duration(float64(s.Next) / r.g.Rate * float64(time.Second)))
			}
			// Emit what is due now, and no more than a batch.
			due = r.start.Add(time.Duration(float64(s.Next) / r.g.Rate * float64(time.Second)))
			if time.Now().Before(due) {
				return connector.NothingAvailable, nil
			}
		}
		for n := 0; n < generatorBatch; n++ {
			if r.g.Rate > 0 && n > 0 {
				due = r.start.Add(time.Duration(float64(s.Next) / r.g.Rate * float64(time.Second)))
				if time.Now().Before(due) {
					break
				}
			}
			if s.End >= 0 && s.Next >= s.End {
				r.splits = r.splits[1:]
				if perSplit != nil {
					perSplit.SplitFinished(s.SplitID())
				}
				break
			}
			if r.g.Timestamps != nil {
				out.CollectWithTimestamp(r.g.Fn(s.Next), r.g.Timestamps(s.Next))
			} else {
				out.Collect(r.g.Fn(s.Next))
			}
			s.Next += s.Stride
		}
		return connector.MoreAvailable, nil
	}
	return connector.EndOfInput, nil
}

func (r *generatorReader[T]) Snapshot() ([]connector.Split, error) {
	out := make([]connector.Split, len(r.splits))
	for i, s := range r.splits {
		cp := *s
		out[i] = &cp
	}
	return out, nil
}

func (r *generatorReader[T]) Close() error { return nil }

// EncodeSplits implements connector.SplitSerializer.
func (g *Generator[T]) EncodeSplits(splits []connector.Split) ([]byte, error) {
	out := make([]*GeneratorSplit, len(splits))
	for i, s := range splits {
		gs, ok := s.(*GeneratorSplit)
		if !ok {
			return nil, fmt.Errorf("generator: split %q: %w", s.SplitID(), connector.ErrUnsupportedSplit)
		}
		out[i] = gs
	}
	return json.Marshal(out)
}

// DecodeSplits implements connector.SplitSerializer.
func (g *Generator[T]) DecodeSplits(data []byte) ([]connector.Split, error) {
	var in []*GeneratorSplit
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("generator: decode splits: %w", err)
	}
	out := make([]connector.Split, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out, nil
}
