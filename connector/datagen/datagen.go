// Package datagen is a source of generated records for trials without any
// external system, like Flink's DataGeneratorSource and its datagen SQL
// connector: record i is Fn(i, r), with i a sequence number and r a random
// generator seeded from i, so that the records, random fields included,
// depend only on their index. A checkpoint records the next index of
// every split, and a job restored from it goes on with exactly the
// records that follow, the same as before the failure.
package datagen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/weirproject/weir/connector"
)

// Source generates records. Build it with New.
type Source[T any] struct {
	fn    func(i int64, r *rand.Rand) T
	count int64 // < 0: unbounded
	rate  float64
	seed  uint64
}

var (
	_ connector.Source[int]     = (*Source[int])(nil)
	_ connector.SplitSerializer = (*Source[int])(nil)
)

// New returns an unbounded source of fn(0, r), fn(1, r), ... where r is
// seeded from the seed (see Seed) and the index. fn must not keep r.
func New[T any](fn func(i int64, r *rand.Rand) T) *Source[T] {
	return &Source[T]{fn: fn, count: -1}
}

// Count bounds the source to the indices 0..n-1; n < 0 makes it
// unbounded. It returns s.
func (s *Source[T]) Count(n int64) *Source[T] {
	s.count = max(n, -1)
	return s
}

// RatePerSecond limits the source to about r records a second in all,
// r/parallelism for each subtask, as Flink's RateLimiterStrategy.perSecond
// does; r <= 0 means no limit. It returns s.
func (s *Source[T]) RatePerSecond(r float64) *Source[T] {
	s.rate = max(r, 0)
	return s
}

// Seed sets the seed of the random generators (default 0). It returns s.
func (s *Source[T]) Seed(seed uint64) *Source[T] {
	s.seed = seed
	return s
}

// Boundedness reports Bounded with a Count.
func (s *Source[T]) Boundedness() connector.Boundedness {
	if s.count >= 0 {
		return connector.Bounded
	}
	return connector.Unbounded
}

// Split is a part of the index sequence: Next, Next+Stride, ... below End
// (no end if End < 0).
type Split struct {
	ID     int
	Next   int64
	Stride int64
	End    int64
}

// SplitID names the split.
func (s *Split) SplitID() string { return fmt.Sprintf("datagen-%d", s.ID) }

// Splits interleaves the indices over one split per subtask.
func (s *Source[T]) Splits(_ context.Context, parallelism int) ([]connector.Split, error) {
	if s.fn == nil {
		return nil, errors.New("datagen: no generator function")
	}
	if parallelism < 1 {
		return nil, fmt.Errorf("datagen: parallelism %d, want at least 1", parallelism)
	}
	out := make([]connector.Split, parallelism)
	for i := range out {
		out[i] = &Split{ID: i, Next: int64(i), Stride: int64(parallelism), End: s.count}
	}
	return out, nil
}

// NewReader returns the reader of one subtask.
func (s *Source[T]) NewReader(_ context.Context, sc connector.SplitContext) (connector.SplitReader[T], error) {
	r := &reader[T]{s: s, pcg: rand.NewPCG(0, 0)}
	r.rng = rand.New(r.pcg)
	if s.rate > 0 {
		r.perSecond = s.rate / float64(max(sc.Parallelism, 1))
	}
	return r, nil
}

// batch bounds the records of one Poll.
const batch = 1024

type reader[T any] struct {
	s         *Source[T]
	splits    []*Split
	pcg       *rand.PCG
	rng       *rand.Rand
	perSecond float64
	start     time.Time // of the rate limit, at the first Poll
	emitted   int64     // since start
}

func (r *reader[T]) AddSplits(splits []connector.Split) error {
	for _, s := range splits {
		ds, ok := s.(*Split)
		if !ok || ds == nil {
			return fmt.Errorf("datagen: split %T: %w", s, connector.ErrUnsupportedSplit)
		}
		if ds.Stride < 1 || ds.Next < 0 {
			return fmt.Errorf("datagen: invalid split %+v", *ds)
		}
		cp := *ds
		r.splits = append(r.splits, &cp)
	}
	return nil
}

// Poll emits up to batch records of the first unfinished split, fewer
// when the rate limit says so.
func (r *reader[T]) Poll(_ context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	for len(r.splits) > 0 && r.splits[0].End >= 0 && r.splits[0].Next >= r.splits[0].End {
		r.splits = r.splits[1:]
	}
	if len(r.splits) == 0 {
		return connector.EndOfInput, nil
	}
	n := int64(batch)
	if r.perSecond > 0 {
		now := time.Now()
		if r.start.IsZero() {
			r.start = now
		}
		// One record of burst: the first goes out at once.
		allowed := int64(now.Sub(r.start).Seconds()*r.perSecond) + 1 - r.emitted
		if allowed <= 0 {
			return connector.NothingAvailable, nil
		}
		n = min(n, allowed)
	}
	s := r.splits[0]
	for ; n > 0 && (s.End < 0 || s.Next < s.End); n-- {
		r.pcg.Seed(r.s.seed, uint64(s.Next))
		out.Collect(r.s.fn(s.Next, r.rng))
		s.Next += s.Stride
		r.emitted++
	}
	return connector.MoreAvailable, nil
}

func (r *reader[T]) Snapshot() ([]connector.Split, error) {
	out := make([]connector.Split, 0, len(r.splits))
	for _, s := range r.splits {
		cp := *s
		out = append(out, &cp)
	}
	return out, nil
}

func (r *reader[T]) Close() error { return nil }

// EncodeSplits implements connector.SplitSerializer.
func (s *Source[T]) EncodeSplits(splits []connector.Split) ([]byte, error) {
	out := make([]*Split, len(splits))
	for i, sp := range splits {
		ds, ok := sp.(*Split)
		if !ok {
			return nil, fmt.Errorf("datagen: split %q: %w", sp.SplitID(), connector.ErrUnsupportedSplit)
		}
		out[i] = ds
	}
	return json.Marshal(out)
}

// DecodeSplits implements connector.SplitSerializer.
func (s *Source[T]) DecodeSplits(data []byte) ([]connector.Split, error) {
	var in []*Split
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("datagen: decode splits: %w", err)
	}
	out := make([]connector.Split, len(in))
	for i, sp := range in {
		if sp == nil || sp.Stride < 1 || sp.Next < 0 {
			return nil, fmt.Errorf("datagen: decode splits: invalid split %d", i)
		}
		out[i] = sp
	}
	return out, nil
}

// String returns n random letters and digits, for random text fields.
func String(r *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}
