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
//
// each must yield exactly n entries: the count leads the entries.
// Entries are encoded into blocks of a megabyte, joined once at the end:
// growing one buffer of hundreds of megabytes by appending copied it
// over and over, and took longer than encoding.
func ValueSnapshot[K comparable, T any](name string, n int, each func(yield func(K, T) bool)) ([]byte, error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("state: key codec: %w", err)
	}
	vc, err := codec.For[T]()
	if err != nil {
		return nil, fmt.Errorf("state: value codec: %w", err)
	}
	head := append([]byte(snapshotMagic), 1)
	head = appendLenPrefixed(head, []byte(name))
	head = append(head, byte(kindValue))
	head = binary.AppendUvarint(head, uint64(n))
	const blockSize = 1 << 20
	var blocks [][]byte
	cur := make([]byte, 0, blockSize)
	var kb, vb []byte
	got, total := 0, len(head)
	each(func(k K, v T) bool {
		kb = kc.Append(kb[:0], k)
		vb = vc.Append(vb[:0], v)
		if need := len(kb) + len(vb) + 2*binary.MaxVarintLen64; len(cur)+need > cap(cur) {
			blocks = append(blocks, cur)
			total += len(cur)
			cur = make([]byte, 0, max(blockSize, need))
		}
		cur = appendLenPrefixed(cur, kb)
		cur = appendLenPrefixed(cur, vb)
		got++
		return true
	})
	if got != n {
		return nil, fmt.Errorf("state %q: %d entries announced, %d written", name, n, got)
	}
	blocks = append(blocks, cur)
	total += len(cur)
	out := make([]byte, 0, total)
	out = append(out, head...)
	for i, b := range blocks {
		out = append(out, b...)
		blocks[i] = nil
	}
	return out, nil
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
