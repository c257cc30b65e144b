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

// checkBuiltin decodes data with one built-in codec: an error wraps
// ErrCorrupt and consumes nothing; a value consumes part of data, and its
// re-encoding decodes to the same value (compared by a second re-encoding,
// which also covers NaNs) and consumes all of it.
func checkBuiltin[T any](t *testing.T, data []byte) {
	t.Helper()
	c := MustFor[T]()
	v, n, err := c.Decode(data)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) || n != 0 {
			t.Fatalf("%T: n=%d err=%v", v, n, err)
		}
		return
	}
	if n <= 0 || n > len(data) {
		t.Fatalf("%T: consumed %d of %d bytes", v, n, len(data))
	}
	enc := c.Append(nil, v)
	if len(enc) > n {
		t.Fatalf("%T: %d bytes re-encode to %d", v, n, len(enc))
	}
	v2, n2, err := c.Decode(enc)
	if err != nil || n2 != len(enc) {
		t.Fatalf("%T: re-decode %x: n=%d/%d err=%v", v, enc, n2, len(enc), err)
	}
	if enc2 := c.Append(nil, v2); !bytes.Equal(enc, enc2) {
		t.Fatalf("%T: encoding not stable:\n%x\n%x", v, enc, enc2)
	}
}

type namedString string
type namedInt int32

// FuzzDecodeBuiltin feeds arbitrary bytes to every built-in codec.
func FuzzDecodeBuiltin(f *testing.F) {
	f.Add(MustFor[string]().Append(nil, "héllo"))
	f.Add(MustFor[[]byte]().Append(nil, []byte{0, 1, 2}))
	f.Add(MustFor[int64]().Append(nil, math.MinInt64))
	f.Add(MustFor[uint64]().Append(nil, math.MaxUint64))
	f.Add(MustFor[float64]().Append(nil, math.Inf(-1)))
	f.Add(MustFor[time.Time]().Append(nil, time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC)))
	f.Add(MustFor[complex128]().Append(nil, complex(1, -1)))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, 'a'})

	f.Fuzz(func(t *testing.T, data []byte) {
		checkBuiltin[bool](t, data)
		checkBuiltin[int](t, data)
		checkBuiltin[int8](t, data)
		checkBuiltin[int16](t, data)
		checkBuiltin[int32](t, data)
		checkBuiltin[int64](t, data)
		checkBuiltin[uint](t, data)
		checkBuiltin[uint8](t, data)
		checkBuiltin[uint16](t, data)
		checkBuiltin[uint32](t, data)
		checkBuiltin[uint64](t, data)
		checkBuiltin[uintptr](t, data)
		checkBuiltin[float32](t, data)
		checkBuiltin[float64](t, data)
		checkBuiltin[complex64](t, data)
		checkBuiltin[complex128](t, data)
		checkBuiltin[string](t, data)
		checkBuiltin[[]byte](t, data)
		checkBuiltin[time.Time](t, data)
		checkBuiltin[Word](t, data)
		checkBuiltin[namedString](t, data)
		checkBuiltin[namedInt](t, data)
		checkBuiltin[[]string](t, data)
		checkBuiltin[[]int64](t, data)
		checkBuiltin[*uint16](t, data)
		checkBuiltin[[2]float32](t, data)

		if _, n, err := DecodeSlice(MustFor[string](), nil, data); err != nil && (!errors.Is(err, ErrCorrupt) || n != 0) {
			t.Fatalf("batch: n=%d err=%v", n, err)
		} else if err == nil && (n < 0 || n > len(data)) {
			t.Fatalf("batch: consumed %d of %d bytes", n, len(data))
		}
	})
}
