package state

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// listMerger concatenates the merge operands of a list state, oldest
// first. Pebble's default merger prepends each older operand by copying
// everything gathered so far, quadratic in a list's operands; this one
// copies each operand once and joins them in Finish.
var listMerger = &pebble.Merger{
	Name: "weir.list.concat",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &concatMerger{}
		m.newer = append(m.newer, value...)
		return m, nil
	},
}

type concatMerger struct {
	older [][]byte // newest first: the order they arrive in
	newer []byte   // the first operand and every newer one, in order
}

func (m *concatMerger) MergeNewer(value []byte) error {
	m.newer = append(m.newer, value...)
	return nil
}

func (m *concatMerger) MergeOlder(value []byte) error {
	m.older = append(m.older, append([]byte(nil), value...))
	return nil
}

func (m *concatMerger) Finish(bool) ([]byte, io.Closer, error) {
	if len(m.older) == 0 {
		return m.newer, nil, nil
	}
	n := len(m.newer)
	for _, o := range m.older {
		n += len(o)
	}
	out := make([]byte, 0, n)
	for i := len(m.older) - 1; i >= 0; i-- {
		out = append(out, m.older[i]...)
	}
	return append(out, m.newer...), nil, nil
}
