package stream

import (
	"bytes"
	"fmt"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/runtime"
)

// SortMergeJoin joins two bounded keyed streams on equal keys, as a
// batch join: each input is sorted by key, in memory while it fits its
// share of taskmanager.memory.managed.size and in sorted runs on disk
// past it, and when both inputs ended the sorted inputs are merged: fn
// gets every pair of records with the same key (an inner join). The
// records of one key on the right side are held in memory together.
// The result comes at the end of the input, in key order per subtask.
func SortMergeJoin[K comparable, A, B, O any](left *KeyedStream[K, A], right *KeyedStream[K, B], fn func(a A, b B, out Collector[O]) error) *Stream[O] {
	return TransformTwoInput(Connect(left.s, right.s), "sort-merge-join", "SortMergeJoin", func(oc *runtime.OperatorContext, out runtime.Output[O]) (runtime.TwoInput[A, B], error) {
		kc, err := codec.For[K]()
		if err != nil {
			return nil, fmt.Errorf("SortMergeJoin: key codec: %w", err)
		}
		l, err := newSortedInput(oc, kc, left.key)
		if err != nil {
			return nil, err
		}
		r, err := newSortedInput(oc, kc, right.key)
		if err != nil {
			return nil, err
		}
		op := &sortMergeJoinOp[K, A, B, O]{oc: oc, left: l, right: r, fn: fn, col: collector[O]{oc: oc, out: out, ts: runtime.NoTimestamp}}
		oc.Register(op)
		return op, nil
	})
}

// sortedInput gathers one input of a batch operator, sorted by encoded
// key at the end, spilling sorted runs past its memory share.
type sortedInput[K comparable, T any] struct {
	oc   *runtime.OperatorContext
	mem  *managedMemory
	kc   codec.Codec[K]
	tc   codec.Codec[T]
	key  func(T) K
	recs encodedRecords
	used int64
	runs *runSet
}

func newSortedInput[K comparable, T any](oc *runtime.OperatorContext, kc codec.Codec[K], key func(T) K) (*sortedInput[K, T], error) {
	tc, err := codec.For[T]()
	if err != nil {
		return nil, fmt.Errorf("record codec: %w", err)
	}
	return newSortedInputWith(oc, kc, tc, key), nil
}

func newSortedInputWith[K comparable, T any](oc *runtime.OperatorContext, kc codec.Codec[K], tc codec.Codec[T], key func(T) K) *sortedInput[K, T] {
	s := &sortedInput[K, T]{oc: oc, mem: managedMemoryOf(oc), kc: kc, tc: tc, key: key, runs: newRunSet(oc)}
	s.mem.register(oc)
	return s
}

// add encodes v once: the encoded record is what it holds, sorts and
// spills.
func (s *sortedInput[K, T]) add(v T) {
	s.used += int64(appendRecord(&s.recs, s.kc, s.tc, s.key, v)) + entryOverhead
	if s.used > s.mem.share() {
		if err := s.runs.write(s.recs.sorted()); err != nil {
			s.oc.Fail(err)
		}
		s.recs.reset()
		s.used = 0
	}
}

// sorted returns the input in key order.
func (s *sortedInput[K, T]) sorted() (*runMerger, error) {
	mem := s.recs.sorted()
	s.recs.reset()
	return s.runs.merged(mem)
}

type sortMergeJoinOp[K comparable, A, B, O any] struct {
	oc    *runtime.OperatorContext
	left  *sortedInput[K, A]
	right *sortedInput[K, B]
	fn    func(A, B, Collector[O]) error
	col   collector[O]
}

func (j *sortMergeJoinOp[K, A, B, O]) Emit1(v A, _ int64)  { j.left.add(v) }
func (j *sortMergeJoinOp[K, A, B, O]) Emit2(v B, _ int64)  { j.right.add(v) }
func (j *sortMergeJoinOp[K, A, B, O]) EmitWatermark(int64) {}
func (j *sortMergeJoinOp[K, A, B, O]) Open() error         { return nil }
func (j *sortMergeJoinOp[K, A, B, O]) Close() error        { return nil }

// Finish merges the two sorted inputs.
func (j *sortMergeJoinOp[K, A, B, O]) Finish() error {
	lm, err := j.left.sorted()
	if err != nil {
		return err
	}
	rm, err := j.right.sorted()
	if err != nil {
		return err
	}
	lk, lv, lok, err := lm.next()
	if err != nil {
		return err
	}
	rk, rv, rok, err := rm.next()
	if err != nil {
		return err
	}
	var group []B
	var groupKey []byte
	for lok && rok {
		switch c := bytes.Compare(lk, rk); {
		case c < 0:
			if lk, lv, lok, err = lm.next(); err != nil {
				return err
			}
		case c > 0:
			if rk, rv, rok, err = rm.next(); err != nil {
				return err
			}
		default:
			// Gather the right side's records of this key, then pair
			// every left record of it with them.
			groupKey = append(groupKey[:0], rk...)
			group = group[:0]
			for rok && bytes.Equal(rk, groupKey) {
				b, _, err := j.right.tc.Decode(rv)
				if err != nil {
					return fmt.Errorf("SortMergeJoin: read right input: %w", err)
				}
				group = append(group, b)
				if rk, rv, rok, err = rm.next(); err != nil {
					return err
				}
			}
			for lok && bytes.Equal(lk, groupKey) {
				a, _, err := j.left.tc.Decode(lv)
				if err != nil {
					return fmt.Errorf("SortMergeJoin: read left input: %w", err)
				}
				for _, b := range group {
					j.oc.Enter()
					if err := j.fn(a, b, &j.col); err != nil {
						return err
					}
				}
				if lk, lv, lok, err = lm.next(); err != nil {
					return err
				}
			}
		}
	}
	j.left.runs.remove()
	j.right.runs.remove()
	return nil
}
