package state

import (
	"encoding/json"
	"fmt"

	"github.com/weirproject/weir/codec"
)

// snapshotter is implemented by every state kind: it encodes all keys'
// values, and decodes them back.
type snapshotter interface {
	snapshot() ([]byte, error)
	restore(data []byte) error
}

// Snapshot encodes every registered state of every key, by state name.
func (b *Backend[K]) Snapshot() ([]byte, error) {
	out := make(map[string][]byte, len(b.states)+len(b.restored))
	// States restored but not registered again by this run stay in the
	// snapshot, so that a function that registers them lazily loses
	// nothing.
	for name, data := range b.restored {
		out[name] = data
	}
	for name, s := range b.states {
		data, err := s.(snapshotter).snapshot()
		if err != nil {
			return nil, fmt.Errorf("state %q: %w", name, err)
		}
		out[name] = data
	}
	return json.Marshal(out)
}

// Restore loads a snapshot. States are decoded when they are registered
// (Value, List, Map), which happens after the restore.
func (b *Backend[K]) Restore(data []byte) error {
	var in map[string][]byte
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("state: decode snapshot: %w", err)
	}
	b.restored = in
	for name, s := range b.states {
		if d, ok := in[name]; ok {
			if err := s.(snapshotter).restore(d); err != nil {
				return fmt.Errorf("state %q: %w", name, err)
			}
			delete(b.restored, name)
		}
	}
	return nil
}

// register adds a state and loads its restored data, if any.
func (b *Backend[K]) register(name string, s snapshotter) {
	b.states[name] = s
	if d, ok := b.restored[name]; ok {
		if err := s.restore(d); err != nil {
			panic(fmt.Errorf("state %q: restore: %w", name, err))
		}
		delete(b.restored, name)
	}
}

// encodeMap writes a map with the key and value codecs of its types.
func encodeMap[K comparable, V any](m map[K]V) ([]byte, error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, err
	}
	vc, err := codec.For[V]()
	if err != nil {
		return nil, err
	}
	buf := codec.Uint64.Append(nil, uint64(len(m)))
	for k, v := range m {
		buf = kc.Append(buf, k)
		buf = vc.Append(buf, v)
	}
	return buf, nil
}

func decodeMap[K comparable, V any](data []byte, into map[K]V) error {
	kc, err := codec.For[K]()
	if err != nil {
		return err
	}
	vc, err := codec.For[V]()
	if err != nil {
		return err
	}
	n, used, err := codec.Uint64.Decode(data)
	if err != nil {
		return err
	}
	data = data[used:]
	for i := uint64(0); i < n; i++ {
		k, m, err := kc.Decode(data)
		if err != nil {
			return err
		}
		data = data[m:]
		v, m, err := vc.Decode(data)
		if err != nil {
			return err
		}
		data = data[m:]
		into[k] = v
	}
	return nil
}

func (s *valueState[K, T]) snapshot() ([]byte, error)    { return encodeMap(s.m) }
func (s *valueState[K, T]) restore(data []byte) error    { return decodeMap(data, s.m) }
func (s *listState[K, T]) snapshot() ([]byte, error)     { return encodeMap(s.m) }
func (s *listState[K, T]) restore(data []byte) error     { return decodeMap(data, s.m) }
func (s *mapState[K, MK, MV]) snapshot() ([]byte, error) { return encodeMap(s.m) }
func (s *mapState[K, MK, MV]) restore(data []byte) error { return decodeMap(data, s.m) }
