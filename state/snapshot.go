package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/weirproject/weir/codec"
)

// Snapshot format (the same for both implementations):
//
//	"WKS1"
//	uvarint  number of states
//	per state, sorted by name:
//	  uvarint len, name
//	  byte     kind (1 value, 2 list, 3 map)
//	  uvarint  number of entries
//	  per entry: uvarint len, encoded key K; uvarint len, value
//
// The value of a value kind (Value, Reducing, Aggregating) is the codec
// encoding of the value (of the accumulator for Aggregating); of a list,
// the concatenated encodings of its elements; of a map, a uvarint count and
// per entry the uvarint length and bytes of the encoded map key and of the
// encoded value. Keys carry no key group: the restoring backend computes it.
const snapshotMagic = "WKS1"

// stateWriter collects the entries of one state.
type stateWriter struct {
	buf    []byte
	n      int
	kb, vb []byte // scratch for callers
}

func (w *stateWriter) entry(k, v []byte) {
	w.buf = appendLenPrefixed(w.buf, k)
	w.buf = appendLenPrefixed(w.buf, v)
	w.n++
}

func appendState(dst []byte, name string, k kind, w *stateWriter) []byte {
	dst = appendLenPrefixed(dst, []byte(name))
	dst = append(dst, byte(k))
	dst = binary.AppendUvarint(dst, uint64(w.n))
	return append(dst, w.buf...)
}

// rawKV is one snapshot entry, undecoded.
type rawKV struct{ k, v []byte }

// rawState is a heap state restored but not registered yet.
type rawState[K comparable] struct {
	kind    kind
	entries []rawEntry[K]
}

type rawEntry[K comparable] struct {
	key   K
	kb    []byte
	value []byte
}

type snapState struct {
	name    string
	kind    kind
	entries []rawKV
}

var errSnapshot = errors.New("state: corrupt snapshot")

func parseSnapshot(data []byte) ([]snapState, error) {
	if !bytes.HasPrefix(data, []byte(snapshotMagic)) {
		return nil, fmt.Errorf("%w: bad magic (written by an older version?)", errSnapshot)
	}
	data = data[len(snapshotMagic):]
	uv := func() (uint64, bool) {
		n, m := binary.Uvarint(data)
		if m <= 0 {
			return 0, false
		}
		data = data[m:]
		return n, true
	}
	bs := func() ([]byte, bool) {
		l, ok := uv()
		if !ok || uint64(len(data)) < l {
			return nil, false
		}
		b := data[:l:l]
		data = data[l:]
		return b, true
	}
	ns, ok := uv()
	if !ok || ns > uint64(len(data)) {
		return nil, errSnapshot
	}
	out := make([]snapState, 0, ns)
	for range ns {
		name, ok := bs()
		if !ok || len(data) < 1 {
			return nil, errSnapshot
		}
		st := snapState{name: string(name), kind: kind(data[0])}
		data = data[1:]
		if st.kind < kindValue || st.kind > kindMap {
			return nil, fmt.Errorf("%w: state %q has unknown kind %d", errSnapshot, st.name, st.kind)
		}
		ne, ok := uv()
		if !ok || ne > uint64(len(data)) {
			return nil, errSnapshot
		}
		st.entries = make([]rawKV, 0, ne)
		for range ne {
			k, ok1 := bs()
			v, ok2 := bs()
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("%w: state %q truncated", errSnapshot, st.name)
			}
			st.entries = append(st.entries, rawKV{k, v})
		}
		out = append(out, st)
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes", errSnapshot)
	}
	return out, nil
}

func (b *Backend[K]) keyCodec() (codec.Codec[K], error) {
	if b.kc == nil {
		kc, err := codec.For[K]()
		if err != nil {
			return nil, fmt.Errorf("state: key codec: %w", err)
		}
		b.kc = kc
	}
	return b.kc, nil
}

// Snapshot encodes every state of every key, registered or restored and
// not registered again (so that a function that registers state lazily
// loses nothing), in a format that both implementations restore. It first
// removes the expired entries of TTL states from the backend.
func (b *Backend[K]) Snapshot() ([]byte, error) {
	if err := b.dropExpired(); err != nil {
		return nil, err
	}
	if b.p != nil {
		return b.p.snapshot()
	}
	finish, err := b.snapshotHeap()
	if err != nil {
		return nil, err
	}
	return finish()
}

// heapPart is one state's part of a heap snapshot: its entries encoded
// in the synchronous part, or a function that encodes a copy later.
type heapPart[K comparable] struct {
	name  string
	kind  kind
	w     *stateWriter
	later func(kc codec.Codec[K], w *stateWriter) error
}

// snapshotHeap takes the synchronous part of a heap snapshot and returns
// the function that completes it, which may run on another goroutine.
// States whose keys and values are plain values (see plainValue) are
// copied, map for map, which costs a fraction of encoding them; the copy
// is encoded in the returned function, off the record path. Lists, maps
// and values that hold pointers are encoded at once: a shallow copy
// would share what user code changes in place.
func (b *Backend[K]) snapshotHeap() (func() ([]byte, error), error) {
	kc, err := b.keyCodec()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(b.states)+len(b.restored))
	for name := range b.states {
		names = append(names, name)
	}
	for name := range b.restored {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]heapPart[K], 0, len(names))
	for _, name := range names {
		p := heapPart[K]{name: name, w: &stateWriter{}}
		if s, ok := b.states[name]; ok {
			p.kind = b.kinds[name]
			if c, ok := s.(heapCloner[K]); ok {
				p.later = c.clone()
			}
			if p.later == nil {
				if err := s.(heapHandle[K]).snapshot(kc, p.w); err != nil {
					return nil, fmt.Errorf("state %q: %w", name, err)
				}
			}
		} else {
			raw := b.restored[name]
			p.kind = raw.kind
			for _, e := range raw.entries {
				p.w.entry(e.kb, e.value)
			}
		}
		parts = append(parts, p)
	}
	return func() ([]byte, error) {
		out := binary.AppendUvarint([]byte(snapshotMagic), uint64(len(parts)))
		for _, p := range parts {
			if p.later != nil {
				if err := p.later(kc, p.w); err != nil {
					return nil, fmt.Errorf("state %q: %w", p.name, err)
				}
			}
			out = appendState(out, p.name, p.kind, p.w)
			p.w.buf = nil
		}
		return out, nil
	}, nil
}

// Restore loads a snapshot written by Snapshot of either implementation.
// It may be called several times, for instance once per old subtask when
// the parallelism changed: entries add to (and for the same key and state,
// replace) what is there. Only keys for which keep returns true are loaded;
// no keep, or a nil one, loads all.
//
// On the heap, states are decoded when they are registered (Value, List,
// Map, ...), which may happen after the restore; Pebble writes the entries
// into the store at once.
//
// keep is variadic only so that existing one-argument callers compile;
// call Restore(data, keep) or RestoreAll(data).
func (b *Backend[K]) Restore(data []byte, keep ...func(K) bool) error {
	var kf func(K) bool
	if len(keep) > 1 {
		return errors.New("state: Restore takes at most one keep function")
	}
	if len(keep) == 1 {
		kf = keep[0]
	}
	if snap, ok, err := parseIncremental(data); ok {
		if err != nil {
			return err
		}
		return b.restoreIncremental(snap, kf)
	}
	kc, err := b.keyCodec()
	if err != nil {
		return err
	}
	states, err := parseSnapshot(data)
	if err != nil {
		return err
	}
	if b.p != nil {
		for _, st := range states {
			if err := b.p.restoreState(st, kf); err != nil {
				return fmt.Errorf("state %q: %w", st.name, err)
			}
		}
		return nil
	}
	for _, st := range states {
		if err := b.restoreHeap(kc, st, kf); err != nil {
			return fmt.Errorf("state %q: %w", st.name, err)
		}
	}
	return nil
}

// RestoreAll is Restore(data, nil): it loads every key.
func (b *Backend[K]) RestoreAll(data []byte) error { return b.Restore(data, nil) }

func (b *Backend[K]) restoreHeap(kc codec.Codec[K], st snapState, keep func(K) bool) error {
	if s, ok := b.states[st.name]; ok {
		if k := b.kinds[st.name]; k != st.kind {
			return fmt.Errorf("snapshot holds a %v state, registered as %v state", st.kind, k)
		}
		h := s.(heapHandle[K])
		for _, e := range st.entries {
			key, err := decodeAll(kc, e.k)
			if err != nil {
				return fmt.Errorf("key: %w", err)
			}
			if keep != nil && !keep(key) {
				continue
			}
			if err := h.restoreEntry(key, e.v); err != nil {
				return err
			}
		}
		return nil
	}
	raw := b.restored[st.name]
	if raw == nil {
		raw = &rawState[K]{kind: st.kind}
		b.restored[st.name] = raw
	} else if raw.kind != st.kind {
		return fmt.Errorf("snapshots disagree: %v and %v state", raw.kind, st.kind)
	}
	for _, e := range st.entries {
		key, err := decodeAll(kc, e.k)
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if keep != nil && !keep(key) {
			continue
		}
		// Kept until registration: copy out of the caller's buffer.
		raw.entries = append(raw.entries, rawEntry[K]{key: key, kb: bytes.Clone(e.k), value: bytes.Clone(e.v)})
	}
	return nil
}
