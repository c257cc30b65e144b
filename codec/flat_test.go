package codec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// flatRec is a flat struct: every field is of a basic kind or a nested
// struct of them, so it takes the fast path.
type flatRec struct {
	S     string
	I     int
	I64   int64
	W     Word
	I8    int8
	I16   int16
	I32   int32
	U     uint
	U8    uint8
	U16   uint16
	U32   uint32
	U64   uint64
	B     bool
	F32   float32
	F64   float64
	C64   complex64
	Raw   []byte
	When  time.Time
	Empty struct{}
	In    struct {
		T string
		N namedInt
		P Pair[string, int64]
	}
}

func TestFlatStructsUseFastPath(t *testing.T) {
	for name, n := range map[string]*node{
		"wordCount":          MustFor[wordCount]().(reflectCodec[wordCount]).n,
		"flatRec":            MustFor[flatRec]().(reflectCodec[flatRec]).n,
		"Pair[string,int64]": MustFor[Pair[string, int64]]().(reflectCodec[Pair[string, int64]]).n,
	} {
		if n.flat == nil {
			t.Errorf("%s: no fast path", name)
		}
	}
	for name, n := range map[string]*node{
		"Record":           MustFor[Record]().(reflectCodec[Record]).n,
		"KV[[4]byte,*int]": MustFor[KV[[4]byte, *int64]]().(reflectCodec[KV[[4]byte, *int64]]).n,
		"Blob":             MustFor[Blob]().(reflectCodec[Blob]).n,
		"struct{}":         MustFor[struct{}]().(reflectCodec[struct{}]).n,
	} {
		if n.flat != nil {
			t.Errorf("%s: fast path for a struct that is not flat", name)
		}
	}
	// Offsets of nested fields add up.
	fs := MustFor[flatRec]().(reflectCodec[flatRec]).n.flat
	var v flatRec
	last := fs[len(fs)-1]
	if want := unsafe.Offsetof(v.In) + unsafe.Offsetof(v.In.P) + unsafe.Offsetof(v.In.P.Second); last.off != want || last.k != kInt64 {
		t.Fatalf("last flat field %+v, want offset %d kind int64", last, want)
	}
}

// genFlat makes values with the edge cases of every field: empty, long
// (past one-byte lengths) and non-ASCII strings, extreme integers.
func genFlat(rng *rand.Rand, i int) flatRec {
	strs := []string{"", "a", "héllo wörld", "日本語", "\xff\xfe", strings.Repeat("x", 31), strings.Repeat("y", 32),
		strings.Repeat("z", 33), strings.Repeat("é", 64), strings.Repeat("w", 127), strings.Repeat("v", 128), strings.Repeat("u", 1000)}
	ints := []int64{0, 1, -1, 63, -64, 64, -65, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	pickInt := func() int64 { return ints[rng.IntN(len(ints))] }
	var v flatRec
	v.S, v.W, v.In.T, v.In.P.First = pick(), Word(pick()), pick(), pick()
	v.I, v.I64, v.In.P.Second = int(pickInt()), pickInt(), pickInt()
	v.I8, v.I16, v.I32 = int8(pickInt()), int16(pickInt()), int32(pickInt())
	v.In.N = namedInt(pickInt())
	v.U, v.U8, v.U16, v.U32, v.U64 = uint(rng.Uint64()), uint8(i), math.MaxUint16, math.MaxUint32, math.MaxUint64
	v.B = i%2 == 0
	v.F32, v.F64, v.C64 = float32(i)/3, -float64(i)*1e300, complex(1, float32(i))
	if i%3 != 0 {
		v.Raw = []byte(pick())
		if len(v.Raw) == 0 {
			v.Raw = nil // empty decodes as nil
		}
	}
	v.When = time.Unix(pickInt()/1e9, int64(i)).UTC()
	return v
}

// appendFields is the reference encoding of flatRec: each field with the
// built-in codec of its kind, in order.
func appendFields(dst []byte, v flatRec) []byte {
	dst = String.Append(dst, v.S)
	dst = Int.Append(dst, v.I)
	dst = Int64.Append(dst, v.I64)
	dst = String.Append(dst, string(v.W))
	dst = Int8.Append(dst, v.I8)
	dst = Int16.Append(dst, v.I16)
	dst = Int32.Append(dst, v.I32)
	dst = Uint.Append(dst, v.U)
	dst = Uint8.Append(dst, v.U8)
	dst = Uint16.Append(dst, v.U16)
	dst = Uint32.Append(dst, v.U32)
	dst = Uint64.Append(dst, v.U64)
	dst = Bool.Append(dst, v.B)
	dst = Float32.Append(dst, v.F32)
	dst = Float64.Append(dst, v.F64)
	dst = MustFor[complex64]().Append(dst, v.C64)
	dst = Bytes.Append(dst, v.Raw)
	dst = Time.Append(dst, v.When)
	dst = String.Append(dst, v.In.T)
	dst = Int32.Append(dst, int32(v.In.N))
	dst = String.Append(dst, v.In.P.First)
	return Int64.Append(dst, v.In.P.Second)
}

func TestFlatRoundTrip(t *testing.T) {
	c := MustFor[flatRec]()
	rng := rand.New(rand.NewPCG(7, 8))
	var batch []flatRec
	for i := range 300 {
		v := genFlat(rng, i)
		enc := roundTrip(t, c, v, v, nil)
		if want := appendFields(nil, v); !bytes.Equal(enc, want) {
			t.Fatalf("value %d: fast path encodes\n%x\nthe fields encode\n%x", i, enc, want)
		}
		batch = append(batch, v)
	}

	// A batch decodes to the same values, reusing dst and leaving its
	// prefix alone, and its strings never alias the input.
	enc := AppendSlice(c, nil, batch)
	keep := flatRec{S: "keep"}
	dst := append(make([]flatRec, 0, 4), keep)
	got, n, err := DecodeSlice(c, dst, enc)
	if err != nil || n != len(enc) {
		t.Fatalf("DecodeSlice: n=%d/%d err=%v", n, len(enc), err)
	}
	if !reflect.DeepEqual(got, append([]flatRec{keep}, batch...)) {
		t.Fatal("batch round trip mismatch")
	}
	for i := range enc {
		enc[i] = 0xAA
	}
	if !reflect.DeepEqual(got[1:], batch) {
		t.Fatal("decoded batch aliases its input")
	}
}

func TestFlatBatchMalformed(t *testing.T) {
	c := MustFor[wordCount]()
	batch := []wordCount{{"", 0}, {"a", -1}, {"héllo", math.MaxInt64}, {strings.Repeat("x", 200), math.MinInt64}, {"z", 64}}
	enc := AppendSlice(c, nil, batch)
	dst := []wordCount{{"keep", 1}}
	// Every truncation fails, wraps ErrCorrupt, consumes nothing and
	// leaves dst alone, with no zeroed or half-decoded tail beyond it.
	for i := range len(enc) {
		got, n, err := DecodeSlice(c, dst, enc[:i:i])
		if !errors.Is(err, ErrCorrupt) || n != 0 || len(got) != 1 || got[0] != dst[0] {
			t.Fatalf("prefix %d: got %v n=%d err=%v", i, got, n, err)
		}
		if tail := got[1:cap(got)]; len(tail) > 0 && tail[0] != (wordCount{}) {
			t.Fatalf("prefix %d: tail not cleared: %v", i, tail)
		}
	}
	for name, in := range map[string][]byte{
		// One record, whose word claims more bytes than follow.
		"short length":     {1, 5, 'a', 'b', 2},
		"long length":      {1, 0x80, 0x01, 'a', 2},
		"length overflows": {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"count overflows":  {1, 1, 'a', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"count missing":    {2, 1, 'a', 2, 1, 'b'},
		"more records":     {3, 0, 0, 0, 0},
	} {
		if _, n, err := DecodeSlice(c, nil, in); !errors.Is(err, ErrCorrupt) || n != 0 {
			t.Errorf("%s: n=%d err=%v", name, n, err)
		}
	}
	// An int out of range of its type.
	type small struct {
		S string
		N int8
		M int16
	}
	sc := MustFor[small]()
	in := append(AppendSlice(Int64, nil, nil)[:0], 1, 0, 1)
	in = Int64.Append(in, math.MaxInt16+1)
	if _, _, err := DecodeSlice(sc, nil, in); !errors.Is(err, errRange) {
		t.Fatalf("int16 out of range: %v", err)
	}
}

// FuzzDecodeFlat decodes arbitrary bytes as a batch of flat structs and
// checks the fast path against decoding field by field with the built-in
// codecs: the same values, the same length, or an error for both.
func FuzzDecodeFlat(f *testing.F) {
	c := MustFor[flatRec]()
	rng := rand.New(rand.NewPCG(1, 1))
	f.Add(AppendSlice(c, nil, []flatRec{genFlat(rng, 0), genFlat(rng, 1)}))
	f.Add(AppendSlice(c, nil, []flatRec{{}}))
	f.Add(c.Append(nil, genFlat(rng, 2)))
	f.Add([]byte{1, 0x80})
	f.Add(bytes.Repeat([]byte{0x7f}, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, n, err := DecodeSlice(c, nil, data)
		want, wn, werr := decodeFieldByField(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("fast path: n=%d err=%v; field by field: n=%d err=%v", n, err, wn, werr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || n != 0 || len(got) != 0 {
				t.Fatalf("error %v (n=%d, %d values) does not wrap ErrCorrupt or consumed input", err, n, len(got))
			}
			return
		}
		if n != wn || !reflect.DeepEqual(got, want) && !bytes.Equal(AppendSlice(c, nil, got), AppendSlice(c, nil, want)) {
			t.Fatalf("fast path consumed %d, field by field %d:\n%+v\n%+v", n, wn, got, want)
		}
		// Re-encoding is canonical and stable.
		enc := AppendSlice(c, nil, got)
		again, m, err := DecodeSlice(c, nil, enc)
		if err != nil || m != len(enc) || !bytes.Equal(AppendSlice(c, nil, again), enc) {
			t.Fatalf("re-decode: n=%d/%d err=%v", m, len(enc), err)
		}
	})
}

// decodeFieldByField is the reference decoder of a batch of flatRec.
func decodeFieldByField(src []byte) ([]flatRec, int, error) {
	cnt, off, err := decodeUvarint(src)
	if err != nil {
		return nil, 0, err
	}
	var out []flatRec
	for range cnt {
		var v flatRec
		steps := []func([]byte) (int, error){
			field(String, &v.S), field(Int, &v.I), field(Int64, &v.I64), field(MustFor[Word](), &v.W),
			field(Int8, &v.I8), field(Int16, &v.I16), field(Int32, &v.I32), field(Uint, &v.U),
			field(Uint8, &v.U8), field(Uint16, &v.U16), field(Uint32, &v.U32), field(Uint64, &v.U64),
			field(Bool, &v.B), field(Float32, &v.F32), field(Float64, &v.F64), field(MustFor[complex64](), &v.C64),
			field(Bytes, &v.Raw), field(Time, &v.When), field(String, &v.In.T), field(MustFor[namedInt](), &v.In.N),
			field(String, &v.In.P.First), field(Int64, &v.In.P.Second),
		}
		for _, step := range steps {
			m, err := step(src[off:])
			if err != nil {
				return nil, 0, err
			}
			off += m
		}
		out = append(out, v)
	}
	return out, off, nil
}

func field[T any](c Codec[T], p *T) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		v, n, err := c.Decode(b)
		*p = v
		return n, err
	}
}
