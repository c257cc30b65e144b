package state

type ttlList[K comparable, T any] struct {
	inner ListState[Expiring[T]]
	// heap is inner on the heap backend, where reading the list is free.
	heap *listState[K, Expiring[T]]
	ttl  TTL
}

// ListWithTTL returns a list state whose elements expire one by one: each
// element has its own expiry, set when it is added (Add, Update) and, with
// OnReadAndWrite, renewed when Get returns it. Get leaves expired elements
// out and removes them from the store; on the heap, Add also drops them
// once the oldest one expired, while Pebble appends without reading the
// list. A snapshot (Snapshot, SnapshotAsync) removes expired elements
// from every key first, so that keys nobody reads do not keep growing.
func ListWithTTL[T any, K comparable](b *Backend[K], name string, ttl TTL) ListState[T] {
	ttl.check()
	s := &ttlList[K, T]{inner: List[Expiring[T], K](b, name), ttl: ttl}
	switch in := s.inner.(type) {
	case *listState[K, Expiring[T]]:
		s.heap = in
		b.onSnapshot(name, func() error { dropExpiredElements(in.m, ttl.Now()); return nil })
	case *pList[K, Expiring[T]]:
		b.onSnapshot(name, func() error { return sweepExpiredElements(in, ttl.Now()) })
	}
	return s
}

func (s *ttlList[K, T]) Get() []T {
	es := s.inner.Get()
	if len(es) == 0 {
		return nil
	}
	now := s.ttl.Now()
	exp := s.ttl.expires(now)
	renew := false
	live := 0
	for _, e := range es {
		if !expired(now, e.Expires) {
			live++
			renew = renew || (s.ttl.Update == OnReadAndWrite && e.Expires != exp)
		}
	}
	if live == 0 {
		s.inner.Clear()
		return nil
	}
	out := make([]T, 0, live)
	if live == len(es) && !renew {
		for _, e := range es {
			out = append(out, e.V)
		}
		return out
	}
	kept := make([]Expiring[T], 0, live)
	for _, e := range es {
		if expired(now, e.Expires) {
			continue
		}
		if s.ttl.Update == OnReadAndWrite {
			e.Expires = exp
		}
		kept = append(kept, e)
		out = append(out, e.V)
	}
	s.inner.Update(kept)
	return out
}

// Add appends v. On the heap it first drops expired elements when the
// oldest one expired: elements are appended in the order of their expiry
// as long as the clock does not go back, so checking the first one is
// enough to keep lists of appends bounded without scanning on each Add.
func (s *ttlList[K, T]) Add(v T) {
	now := s.ttl.Now()
	e := Expiring[T]{V: v, Expires: s.ttl.expires(now)}
	if s.heap != nil {
		if es := s.heap.Get(); len(es) > 0 && expired(now, es[0].Expires) {
			kept := make([]Expiring[T], 0, len(es)+1)
			for _, old := range es {
				if !expired(now, old.Expires) {
					kept = append(kept, old)
				}
			}
			s.inner.Update(append(kept, e))
			return
		}
	}
	s.inner.Add(e)
}

func (s *ttlList[K, T]) Update(vs []T) {
	if len(vs) == 0 {
		s.inner.Clear()
		return
	}
	exp := s.ttl.expires(s.ttl.Now())
	es := make([]Expiring[T], len(vs))
	for i, v := range vs {
		es[i] = Expiring[T]{V: v, Expires: exp}
	}
	s.inner.Update(es)
}

func (s *ttlList[K, T]) Clear() { s.inner.Clear() }

type ttlMap[K, MK comparable, MV any] struct {
	inner MapState[MK, Expiring[MV]]
	ttl   TTL
}

// MapWithTTL returns a map state whose entries expire one by one: each
// entry has its own expiry, set by Put and, with OnReadAndWrite, renewed
// by the reads that return it (Get, Contains, All, and Range for the
// entries it passes to fn). Reads skip expired entries and remove those
// they come across; a snapshot (Snapshot, SnapshotAsync) removes expired
// entries from every key first. Range's fn must not modify the state;
// with OnReadAndWrite Range writes while it iterates.
func MapWithTTL[MK comparable, MV any, K comparable](b *Backend[K], name string, ttl TTL) MapState[MK, MV] {
	ttl.check()
	s := &ttlMap[K, MK, MV]{inner: Map[MK, Expiring[MV], K](b, name), ttl: ttl}
	switch in := s.inner.(type) {
	case *mapState[K, MK, Expiring[MV]]:
		b.onSnapshot(name, func() error { dropExpiredEntries(in.m, ttl.Now()); return nil })
	case *pMap[K, MK, Expiring[MV]]:
		b.onSnapshot(name, func() error { return sweepExpiring(&in.pHandle, in.vc, ttl.Now()) })
	}
	return s
}

func (s *ttlMap[K, MK, MV]) Get(k MK) (MV, bool) {
	var zero MV
	e, ok := s.inner.Get(k)
	if !ok {
		return zero, false
	}
	now := s.ttl.Now()
	if expired(now, e.Expires) {
		s.inner.Remove(k)
		return zero, false
	}
	if exp := s.ttl.expires(now); s.ttl.Update == OnReadAndWrite && e.Expires != exp {
		s.inner.Put(k, Expiring[MV]{V: e.V, Expires: exp})
	}
	return e.V, true
}

func (s *ttlMap[K, MK, MV]) Put(k MK, v MV) {
	s.inner.Put(k, Expiring[MV]{V: v, Expires: s.ttl.expires(s.ttl.Now())})
}

func (s *ttlMap[K, MK, MV]) Remove(k MK) { s.inner.Remove(k) }

// Contains is a read (as in Flink): it removes an expired entry and, with
// OnReadAndWrite, renews a live one.
func (s *ttlMap[K, MK, MV]) Contains(k MK) bool {
	_, ok := s.Get(k)
	return ok
}

func (s *ttlMap[K, MK, MV]) All() map[MK]MV {
	var m map[MK]MV
	s.Range(func(k MK, v MV) bool {
		if m == nil {
			m = make(map[MK]MV)
		}
		m[k] = v
		return true
	})
	return m
}

// Range removes and renews entries while the inner state iterates: a Go
// map may have its visited entries deleted or overwritten during a range,
// and a Pebble iterator reads a fixed view of the store, so neither
// iteration is disturbed, and Range needs no memory for what it changes.
func (s *ttlMap[K, MK, MV]) Range(fn func(MK, MV) bool) {
	now := s.ttl.Now()
	exp := s.ttl.expires(now)
	s.inner.Range(func(k MK, e Expiring[MV]) bool {
		if expired(now, e.Expires) {
			s.inner.Remove(k)
			return true
		}
		if s.ttl.Update == OnReadAndWrite && e.Expires != exp {
			s.inner.Put(k, Expiring[MV]{V: e.V, Expires: exp})
		}
		return fn(k, e.V)
	})
}

func (s *ttlMap[K, MK, MV]) Clear() { s.inner.Clear() }
