// Package state holds the keyed state of user functions: values, lists and
// maps scoped to the key of the record being processed.
//
// State lives in key groups (see internal/runtime/keygroups.go) so that
// the fault-tolerance work can snapshot and rescale it; this package holds
// the heap implementation, keyed by the Go key itself.
package state

// ValueState is one value per key.
type ValueState[T any] interface {
	// Value returns the current key's value, or the default and false.
	Value() (T, bool)
	// Update sets the current key's value.
	Update(v T)
	// Clear removes the current key's value.
	Clear()
}

// ListState is a list per key.
type ListState[T any] interface {
	// Get returns the current key's list; the caller must not modify it.
	Get() []T
	Add(v T)
	Update(vs []T)
	Clear()
}

// MapState is a map per key.
type MapState[MK comparable, MV any] interface {
	Get(k MK) (MV, bool)
	Put(k MK, v MV)
	Remove(k MK)
	Contains(k MK) bool
	// All returns the current key's entries; the caller must not modify it.
	All() map[MK]MV
	Clear()
}

// Backend is the keyed state of one operator subtask: it knows the current
// key and creates the state handles.
type Backend[K comparable] struct {
	current  K
	states   map[string]any
	restored map[string][]byte
}

// NewBackend returns an empty heap backend.
func NewBackend[K comparable]() *Backend[K] { return &Backend[K]{states: make(map[string]any)} }

// SetCurrentKey scopes every state handle to key; the operator calls it
// before each record and timer.
func (b *Backend[K]) SetCurrentKey(key K) { b.current = key }

// CurrentKey returns the current key.
func (b *Backend[K]) CurrentKey() K { return b.current }

// Len returns the number of keys with state, over all registered states.
func (b *Backend[K]) Len() int {
	n := 0
	for _, s := range b.states {
		n += s.(interface{ keys() int }).keys()
	}
	return n
}

// Value returns the value state registered under name, creating it on first
// use. Asking for one name with two different types panics.
func Value[T any, K comparable](b *Backend[K], name string, def T) ValueState[T] {
	if s, ok := b.states[name]; ok {
		return s.(*valueState[K, T])
	}
	s := &valueState[K, T]{b: b, m: make(map[K]T), def: def}
	b.register(name, s)
	return s
}

// List returns the list state registered under name.
func List[T any, K comparable](b *Backend[K], name string) ListState[T] {
	if s, ok := b.states[name]; ok {
		return s.(*listState[K, T])
	}
	s := &listState[K, T]{b: b, m: make(map[K][]T)}
	b.register(name, s)
	return s
}

// Map returns the map state registered under name.
func Map[MK comparable, MV any, K comparable](b *Backend[K], name string) MapState[MK, MV] {
	if s, ok := b.states[name]; ok {
		return s.(*mapState[K, MK, MV])
	}
	s := &mapState[K, MK, MV]{b: b, m: make(map[K]map[MK]MV)}
	b.register(name, s)
	return s
}

type valueState[K comparable, T any] struct {
	b   *Backend[K]
	m   map[K]T
	def T
}

func (s *valueState[K, T]) Value() (T, bool) {
	v, ok := s.m[s.b.current]
	if !ok {
		return s.def, false
	}
	return v, true
}
func (s *valueState[K, T]) Update(v T) { s.m[s.b.current] = v }
func (s *valueState[K, T]) Clear()     { delete(s.m, s.b.current) }
func (s *valueState[K, T]) keys() int  { return len(s.m) }

type listState[K comparable, T any] struct {
	b *Backend[K]
	m map[K][]T
}

func (s *listState[K, T]) Get() []T     { return s.m[s.b.current] }
func (s *listState[K, T]) Add(v T)      { s.m[s.b.current] = append(s.m[s.b.current], v) }
func (s *listState[K, T]) Update(v []T) { s.m[s.b.current] = append([]T(nil), v...) }
func (s *listState[K, T]) Clear()       { delete(s.m, s.b.current) }

type mapState[K, MK comparable, MV any] struct {
	b *Backend[K]
	m map[K]map[MK]MV
}

func (s *mapState[K, MK, MV]) Get(k MK) (MV, bool) {
	v, ok := s.m[s.b.current][k]
	return v, ok
}

func (s *mapState[K, MK, MV]) Put(k MK, v MV) {
	m := s.m[s.b.current]
	if m == nil {
		m = make(map[MK]MV)
		s.m[s.b.current] = m
	}
	m[k] = v
}

func (s *mapState[K, MK, MV]) Remove(k MK) {
	if m := s.m[s.b.current]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(s.m, s.b.current)
		}
	}
}

func (s *mapState[K, MK, MV]) Contains(k MK) bool {
	_, ok := s.m[s.b.current][k]
	return ok
}

func (s *mapState[K, MK, MV]) All() map[MK]MV { return s.m[s.b.current] }
func (s *mapState[K, MK, MV]) Clear()         { delete(s.m, s.b.current) }
func (s *mapState[K, MK, MV]) keys() int      { return len(s.m) }
