package state

import "time"

// TTL configures state that expires: a value is gone once ttl has passed
// since it was last written (Flink's OnCreateAndWrite update type and
// NeverReturnExpired visibility). Now is the processing-time clock in
// milliseconds, for example KeyedContext.CurrentProcessingTime.
type TTL struct {
	TTL time.Duration
	Now func() int64
}

// Expiring is a value with the time it expires, as stored by ValueWithTTL.
type Expiring[T any] struct {
	V       T
	Expires int64
}

type ttlValue[T any] struct {
	inner ValueState[Expiring[T]]
	ttl   TTL
	def   T
}

// ValueWithTTL returns a value state whose values expire. Expired values
// read as absent and are removed when read, so that state does not keep
// growing with keys nobody updates; they also stay out of snapshots taken
// after such a read.
func ValueWithTTL[T any, K comparable](b *Backend[K], name string, def T, ttl TTL) ValueState[T] {
	return &ttlValue[T]{inner: Value[Expiring[T], K](b, name, Expiring[T]{}), ttl: ttl, def: def}
}

func (s *ttlValue[T]) Value() (T, bool) {
	e, ok := s.inner.Value()
	if !ok {
		return s.def, false
	}
	if s.ttl.Now() >= e.Expires {
		s.inner.Clear()
		return s.def, false
	}
	return e.V, true
}

func (s *ttlValue[T]) Update(v T) {
	s.inner.Update(Expiring[T]{V: v, Expires: s.ttl.Now() + s.ttl.TTL.Milliseconds()})
}

func (s *ttlValue[T]) Clear() { s.inner.Clear() }
