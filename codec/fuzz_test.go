package codec

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

// fuzzRecord has no maps, so its encoding is deterministic and decoding
// followed by re-encoding must reproduce the consumed input exactly.
type fuzzRecord struct {
	Word   Word
	Count  int64
	U      uint32
	I16    int16
	B      bool
	F      float64
	Tags   []string
	Next   *fuzzRecord
	Pairs  []KV[int8, *uint]
	Fixed  [3]uint16
	Raw    []byte
	When   time.Time
	Nested []Pair[string, []int32]
}

// fuzzWithMaps exercises the map paths; it is only checked for safety.
type fuzzWithMaps struct {
	M    map[string][]int
	Kids map[int32]*fuzzWithMaps
	S    []fuzzRecord
}

func FuzzDecodeStruct(f *testing.F) {
	rc := MustFor[fuzzRecord]()
	mc := MustFor[fuzzWithMaps]()
	seeds := []fuzzRecord{
		{},
		{Word: "w", Count: -1, U: math.MaxUint32, I16: math.MinInt16, B: true, F: math.NaN(),
			Tags: []string{"a", "\xff"}, Pairs: []KV[int8, *uint]{{1, nil}, {-1, ptr(uint(7))}},
			Fixed: [3]uint16{1, 2, 3}, Raw: []byte{0}, When: time.Unix(1, 2),
			Nested: []Pair[string, []int32]{{"x", []int32{-5}}}},
		{Next: &fuzzRecord{Next: &fuzzRecord{Word: "deep"}}},
	}
	for _, s := range seeds {
		f.Add(rc.Append(nil, s))
	}
	f.Add(mc.Append(nil, fuzzWithMaps{M: map[string][]int{"a": {1}}, Kids: map[int32]*fuzzWithMaps{1: {}, 2: nil}, S: seeds[1:2]}))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 32))

	f.Fuzz(func(t *testing.T, data []byte) {
		v, n, err := rc.Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			if n != 0 {
				t.Fatalf("n=%d with error", n)
			}
		} else {
			if n < 0 || n > len(data) {
				t.Fatalf("consumed %d of %d bytes", n, len(data))
			}
			// Re-encoding reproduces the canonical form; decoding that
			// is stable.
			enc := rc.Append(nil, v)
			v2, n2, err := rc.Decode(enc)
			if err != nil || n2 != len(enc) {
				t.Fatalf("re-decode: n=%d/%d err=%v", n2, len(enc), err)
			}
			if enc2 := rc.Append(nil, v2); !bytes.Equal(enc, enc2) {
				t.Fatalf("encoding not stable:\n%x\n%x", enc, enc2)
			}
		}

		if _, n, err := mc.Decode(data); err != nil && (!errors.Is(err, ErrCorrupt) || n != 0) {
			t.Fatalf("maps: n=%d err=%v", n, err)
		} else if err == nil && (n < 0 || n > len(data)) {
			t.Fatalf("maps: consumed %d of %d bytes", n, len(data))
		}
		if _, n, err := DecodeSlice(rc, nil, data); err != nil && (!errors.Is(err, ErrCorrupt) || n != 0) {
			t.Fatalf("batch: n=%d err=%v", n, err)
		}
	})
}
