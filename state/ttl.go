package state

import (
	"fmt"
	"time"
)

// TTL configures state that expires, like Flink's StateTtlConfig with
// NeverReturnExpired visibility: an expired value, list element or map
// entry reads as absent, whether or not it was removed yet. Expiry is in
// processing time: Now is the clock in milliseconds, for example
// KeyedContext.CurrentProcessingTime.
type TTL struct {
	// TTL is how long a value lives after the accesses Update names; at
	// least a millisecond.
	TTL time.Duration
	Now func() int64
	// Update says which accesses renew a value's lifetime (the zero value
	// is OnCreateAndWrite).
	Update TTLUpdate
}

// TTLUpdate says which accesses of TTL state renew a value's lifetime.
type TTLUpdate int

const (
	// OnCreateAndWrite renews a value when it is written (Flink's
	// default): state expires ttl after its last write.
	OnCreateAndWrite TTLUpdate = iota
	// OnReadAndWrite also renews what a read returns: state expires ttl
	// after its last access. Reads then write.
	OnReadAndWrite
)

func (u TTLUpdate) String() string {
	switch u {
	case OnCreateAndWrite:
		return "OnCreateAndWrite"
	case OnReadAndWrite:
		return "OnReadAndWrite"
	}
	return fmt.Sprintf("TTLUpdate(%d)", int(u))
}

func (t TTL) check() {
	if t.Now == nil {
		panic("state: TTL without a clock (Now)")
	}
	if t.TTL < time.Millisecond {
		panic(fmt.Sprintf("state: TTL %v is below the clock's resolution (1ms)", t.TTL))
	}
	if t.Update != OnCreateAndWrite && t.Update != OnReadAndWrite {
		panic(fmt.Sprintf("state: unknown TTL update type %d", t.Update))
	}
}

// expires returns the expiry of a value written or renewed at now.
func (t TTL) expires(now int64) int64 { return now + t.TTL.Milliseconds() }

// expired reports whether something that expires at exp is gone at now.
func expired(now, exp int64) bool { return now >= exp }

// Expiring is a value with the time it expires, as TTL state stores it: a
// value of ValueWithTTL, each element of ListWithTTL and each map value of
// MapWithTTL. Storing the time with each value keeps the snapshot format
// unchanged: TTL state is plain state of Expiring values, and restores
// into either backend like any other.
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
// read as absent and are removed when read, and from the whole state when
// a snapshot is taken (Snapshot, SnapshotAsync), so that state does not
// keep growing with keys nobody reads; snapshots hold no expired values.
func ValueWithTTL[T any, K comparable](b *Backend[K], name string, def T, ttl TTL) ValueState[T] {
	ttl.check()
	inner := Value[Expiring[T], K](b, name, Expiring[T]{})
	switch s := inner.(type) {
	case *valueState[K, Expiring[T]]:
		b.onSnapshot(name, func() error { dropExpiredValues(s.m, ttl.Now()); return nil })
	case *pValue[K, Expiring[T]]:
		b.onSnapshot(name, func() error { return sweepExpiring(&s.pHandle, s.c, ttl.Now()) })
	}
	return &ttlValue[T]{inner: inner, ttl: ttl, def: def}
}

func (s *ttlValue[T]) Value() (T, bool) {
	e, ok := s.inner.Value()
	if !ok {
		return s.def, false
	}
	now := s.ttl.Now()
	if expired(now, e.Expires) {
		s.inner.Clear()
		return s.def, false
	}
	if exp := s.ttl.expires(now); s.ttl.Update == OnReadAndWrite && e.Expires != exp {
		s.inner.Update(Expiring[T]{V: e.V, Expires: exp})
	}
	return e.V, true
}

func (s *ttlValue[T]) Update(v T) {
	s.inner.Update(Expiring[T]{V: v, Expires: s.ttl.expires(s.ttl.Now())})
}

func (s *ttlValue[T]) Clear() { s.inner.Clear() }
