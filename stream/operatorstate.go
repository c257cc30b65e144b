package stream

import (
	"encoding/json"
	"fmt"

	"github.com/weirproject/weir/codec"
)

// Redistribution says how operator list state is split when a job
// resumes at another parallelism.
type Redistribution int

const (
	// RedistributeEvenSplit concatenates the lists of all old subtasks and deals the
	// entries out evenly, each to one new subtask (Kafka offsets, file
	// positions).
	RedistributeEvenSplit Redistribution = iota
	// RedistributeUnion gives every new subtask all entries of all old subtasks
	// (broadcast-like configuration).
	RedistributeUnion
)

// OperatorListState is non-keyed state of one parallel subtask of a
// (non-keyed) process function: a list that is checkpointed with the
// operator and redistributed on rescaling.
type OperatorListState[T any] struct {
	values []T
	mode   Redistribution
	codec  codec.Codec[T]
}

// Get returns the list; the caller must not modify it.
func (s *OperatorListState[T]) Get() []T { return s.values }

// Add appends a value.
func (s *OperatorListState[T]) Add(v T) { s.values = append(s.values, v) }

// Update replaces the list.
func (s *OperatorListState[T]) Update(vs []T) { s.values = append(s.values[:0], vs...) }

// Clear empties the list.
func (s *OperatorListState[T]) Clear() { s.values = s.values[:0] }

func (s *OperatorListState[T]) encode() []byte { return codec.AppendSlice(s.codec, nil, s.values) }

// operatorState holds a subtask's operator list states and what a restore
// handed over before the function registered them.
type operatorState struct {
	states   map[string]interface{ encode() []byte }
	modes    map[string]Redistribution
	restored map[string][][]byte // by state name: one piece per old subtask
	rescaled bool
	subtask  int
	parallel int
}

type operatorStatePiece struct {
	Mode Redistribution
	Data []byte
}

// GetOperatorListState returns the subtask's operator list state of that
// name, with the entries restored from a checkpoint; call it in Open.
func GetOperatorListState[T any](ctx *Context, name string, mode Redistribution) (*OperatorListState[T], error) {
	os := ctx.opState
	if os == nil {
		return nil, fmt.Errorf("operator state %q: only process functions have operator state", name)
	}
	c, err := codec.For[T]()
	if err != nil {
		return nil, fmt.Errorf("operator state %q: %w", name, err)
	}
	if s, ok := os.states[name]; ok {
		typed, ok := s.(*OperatorListState[T])
		if !ok {
			return nil, fmt.Errorf("operator state %q was registered with another type", name)
		}
		return typed, nil
	}
	s := &OperatorListState[T]{mode: mode, codec: c}
	// Restored entries: every old subtask's list after a rescale, in old
	// subtask order; EvenSplit deals them out, Union keeps them all.
	index := 0
	for _, data := range os.restored[name] {
		vs, _, err := codec.DecodeSlice(c, nil, data)
		if err != nil {
			return nil, fmt.Errorf("operator state %q: %w", name, err)
		}
		for _, v := range vs {
			if !os.rescaled || mode == RedistributeUnion || index%os.parallel == os.subtask {
				s.values = append(s.values, v)
			}
			index++
		}
	}
	delete(os.restored, name)
	os.states[name] = s
	os.modes[name] = mode
	return s, nil
}

func newOperatorState(subtask, parallelism int) *operatorState {
	return &operatorState{states: map[string]interface{ encode() []byte }{}, modes: map[string]Redistribution{},
		restored: map[string][][]byte{}, subtask: subtask, parallel: parallelism}
}

func (o *operatorState) snapshot() ([]byte, error) {
	if len(o.states) == 0 && len(o.restored) == 0 {
		return nil, nil
	}
	out := make(map[string]operatorStatePiece, len(o.states))
	for name, s := range o.states {
		out[name] = operatorStatePiece{Mode: o.modes[name], Data: s.encode()}
	}
	if len(o.restored) > 0 {
		return nil, fmt.Errorf("operator state %v was restored but not registered again in Open", keysOf(o.restored))
	}
	return json.Marshal(out)
}

func (o *operatorState) restore(data []byte, rescaled bool) error {
	var in map[string]operatorStatePiece
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("decode operator state: %w", err)
	}
	o.rescaled = rescaled
	for name, p := range in {
		o.restored[name] = append(o.restored[name], p.Data)
	}
	return nil
}

func keysOf(m map[string][][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
