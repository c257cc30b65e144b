package state

import (
	"encoding/binary"
	"fmt"

	"github.com/weirproject/weir/codec"
)

// ValueSnapshot encodes per-key values as the full snapshot of a backend
// holding one value state called name. Operators that keep their values
// in structures of their own (the heap Reduce keeps a dense slice) write
// it, so that their checkpoints restore into either backend, and the
// backends' checkpoints into them.
func ValueSnapshot[K comparable, T any](name string, each func(yield func(K, T) bool)) ([]byte, error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("state: key codec: %w", err)
	}
	vc, err := codec.For[T]()
	if err != nil {
		return nil, fmt.Errorf("state: value codec: %w", err)
	}
	var w stateWriter
	each(func(k K, v T) bool {
		w.kb = kc.Append(w.kb[:0], k)
		w.vb = vc.Append(w.vb[:0], v)
		w.entry(w.kb, w.vb)
		return true
	})
	out := binary.AppendUvarint([]byte(snapshotMagic), 1)
	return appendState(out, name, kindValue, &w), nil
}

// RestoreValues calls fn with every value of the value state called name
// in a snapshot of either backend (full, or incremental with files), for
// the keys that keep accepts (all with a nil keep).
func RestoreValues[K comparable, T any](data []byte, name string, files RestoreFiles, keep func(K) bool, fn func(K, T)) error {
	b := NewBackend[K]()
	b.SetRestoreFiles(files)
	if err := b.Restore(data, keep); err != nil {
		return err
	}
	s, ok := Value[T](b, name, *new(T)).(*valueState[K, T])
	if !ok {
		return fmt.Errorf("state %q: not a value state", name)
	}
	for k, v := range s.m {
		fn(k, v)
	}
	return nil
}
