package state

import "errors"

// ErrReadOnlyBroadcastState is the error of a write to broadcast state
// from the non-broadcast side: only broadcast elements, which every
// subtask sees, may change it, or the subtasks' copies would diverge.
var ErrReadOnlyBroadcastState = errors.New("state: broadcast state is read-only while processing non-broadcast elements")

// Broadcast holds the broadcast state of one operator subtask: maps, not
// scoped to a key, that every subtask keeps identically.
type Broadcast struct {
	states   map[string]any
	readOnly bool
}

// NewBroadcast returns empty broadcast state.
func NewBroadcast() *Broadcast { return &Broadcast{states: make(map[string]any)} }

// SetReadOnly switches between the broadcast side (writable) and the
// regular side (read-only).
func (b *Broadcast) SetReadOnly(ro bool) { b.readOnly = ro }

// BroadcastMap returns the broadcast map registered under name. A write
// while read-only panics with ErrReadOnlyBroadcastState, which the task
// reports as the operator's failure.
func BroadcastMap[MK comparable, MV any](b *Broadcast, name string) MapState[MK, MV] {
	if s, ok := b.states[name]; ok {
		return s.(*broadcastMap[MK, MV])
	}
	s := &broadcastMap[MK, MV]{b: b, m: make(map[MK]MV)}
	b.states[name] = s
	return s
}

type broadcastMap[MK comparable, MV any] struct {
	b *Broadcast
	m map[MK]MV
}

func (s *broadcastMap[MK, MV]) check() {
	if s.b.readOnly {
		panic(ErrReadOnlyBroadcastState)
	}
}

func (s *broadcastMap[MK, MV]) Get(k MK) (MV, bool) {
	v, ok := s.m[k]
	return v, ok
}
func (s *broadcastMap[MK, MV]) Put(k MK, v MV)     { s.check(); s.m[k] = v }
func (s *broadcastMap[MK, MV]) Remove(k MK)        { s.check(); delete(s.m, k) }
func (s *broadcastMap[MK, MV]) Contains(k MK) bool { _, ok := s.m[k]; return ok }
func (s *broadcastMap[MK, MV]) All() map[MK]MV     { return s.m }
func (s *broadcastMap[MK, MV]) Range(fn func(MK, MV) bool) {
	for k, v := range s.m {
		if !fn(k, v) {
			return
		}
	}
}
func (s *broadcastMap[MK, MV]) Clear() { s.check(); clear(s.m) }
