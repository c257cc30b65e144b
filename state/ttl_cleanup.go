package state

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirproject/weir/codec"
)

// Expired TTL state leaves the store in two ways. Reads remove what they
// find expired, which bounds state that is read; state that is never read
// again (a key that stops occurring) is removed when a snapshot is taken,
// like Flink's cleanupFullSnapshot, except that the store is cleaned too
// and not only the snapshot, and that incremental snapshots clean as well:
// Pebble has no compaction filter to drop them otherwise. The cost is a
// scan of the TTL states (not of the others) per snapshot.

// onSnapshot registers the function that removes the expired entries of
// the TTL state name from the whole store; one per name, the latest wins.
func (b *Backend[K]) onSnapshot(name string, fn func() error) {
	if b.ttlCleanup == nil {
		b.ttlCleanup = make(map[string]func() error)
	}
	b.ttlCleanup[name] = fn
}

// dropExpired removes the expired entries of every TTL state.
func (b *Backend[K]) dropExpired() error {
	names := make([]string, 0, len(b.ttlCleanup))
	for name := range b.ttlCleanup {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := b.ttlCleanup[name](); err != nil {
			return fmt.Errorf("state %q: remove expired entries: %w", name, err)
		}
	}
	return nil
}

func dropExpiredValues[K comparable, T any](m map[K]Expiring[T], now int64) {
	for k, e := range m {
		if expired(now, e.Expires) {
			delete(m, k)
		}
	}
}

func dropExpiredElements[K comparable, T any](m map[K][]Expiring[T], now int64) {
	for k, es := range m {
		live := 0
		for _, e := range es {
			if !expired(now, e.Expires) {
				live++
			}
		}
		switch {
		case live == 0:
			delete(m, k)
		case live < len(es):
			kept := make([]Expiring[T], 0, live)
			for _, e := range es {
				if !expired(now, e.Expires) {
					kept = append(kept, e)
				}
			}
			m[k] = kept
		}
	}
}

func dropExpiredEntries[K, MK comparable, MV any](m map[K]map[MK]Expiring[MV], now int64) {
	for k, mm := range m {
		for mk, e := range mm {
			if expired(now, e.Expires) {
				delete(mm, mk)
			}
		}
		if len(mm) == 0 {
			delete(m, k)
		}
	}
}

// sweep rewrites the store entries of one state: rewrite returns an
// entry's new value and whether it changed; a changed entry with an empty
// value is deleted. Value and map states store one Expiring per store
// entry (a map, one per map key), list states a key's whole list.
func (h *pHandle[K]) sweep(rewrite func(v []byte) ([]byte, bool, error)) error {
	// The sweep rewrites the store under the cache.
	if err := h.p.dropCache(); err != nil {
		return err
	}
	db := h.p.db
	lo, hi := idBounds(h.m.id)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	batch := db.NewBatch()
	defer func() { batch.Close() }()
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		nv, changed, err := rewrite(v)
		if err != nil {
			return err
		}
		switch {
		case !changed:
			continue
		case len(nv) == 0:
			err = batch.Delete(it.Key(), nil)
		default:
			err = batch.Set(it.Key(), nv, nil)
		}
		if err != nil {
			return err
		}
		if batch.Len() > 4<<20 {
			if err := batch.Commit(pebble.NoSync); err != nil {
				return err
			}
			batch.Close()
			batch = db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return batch.Commit(pebble.NoSync)
}

// sweepExpiring deletes the store entries of a value or map state whose
// Expiring value expired.
func sweepExpiring[K comparable, T any](h *pHandle[K], c codec.Codec[Expiring[T]], now int64) error {
	return h.sweep(func(v []byte) ([]byte, bool, error) {
		e, err := decodeAll(c, v)
		if err != nil {
			return nil, false, err
		}
		return nil, expired(now, e.Expires), nil
	})
}

// sweepExpiredElements removes the expired elements of every list.
func sweepExpiredElements[K comparable, T any](s *pList[K, Expiring[T]], now int64) error {
	var buf []byte
	return s.sweep(func(v []byte) ([]byte, bool, error) {
		es, err := decodeList(s.c, v)
		if err != nil {
			return nil, false, err
		}
		kept := slices.DeleteFunc(es, func(e Expiring[T]) bool { return expired(now, e.Expires) })
		if len(kept) == len(es) && len(es) > 0 {
			return nil, false, nil
		}
		buf = appendList(buf[:0], s.c, kept)
		return buf, true, nil
	})
}
