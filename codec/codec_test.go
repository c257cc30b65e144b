package codec

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func floatEq64(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
func floatEq32(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// each runs a round trip of every value through c, and through the codec For
// returns for T, which must be the built-in one.
func each[T any](t *testing.T, c Codec[T], eq func(a, b T) bool, vs ...T) {
	t.Helper()
	fc, err := For[T]()
	if err != nil {
		t.Fatalf("For[%T]: %v", *new(T), err)
	}
	if fc != c {
		t.Fatalf("For[%T] = %T, want the built-in codec %T", *new(T), fc, c)
	}
	for _, v := range vs {
		roundTrip(t, c, v, v, eq)
	}
}

func TestBuiltinRoundTrip(t *testing.T) {
	nan32 := math.Float32frombits(0x7fc00001)
	nanPayload := math.Float64frombits(0x7ff8dead_beef0001)
	t.Run("String", func(t *testing.T) {
		each(t, String, nil, "", "a", "hello, world", strings.Repeat("x", 127), strings.Repeat("y", 128),
			strings.Repeat("z", 70000), "héllo 世界", "\xff\xfe\x00invalid\xc3(", "\x00")
	})
	t.Run("Bytes", func(t *testing.T) {
		each(t, Bytes, nil, []byte{0}, []byte("abc"), bytes.Repeat([]byte{0xff}, 300))
		// Empty and nil both decode as nil.
		roundTrip(t, Bytes, []byte{}, nil, nil)
		roundTrip(t, Bytes, nil, nil, nil)
	})
	t.Run("Bool", func(t *testing.T) { each(t, Bool, nil, false, true) })
	t.Run("Int", func(t *testing.T) { each(t, Int, nil, 0, 1, -1, 63, -64, 64, -65, math.MaxInt, math.MinInt) })
	t.Run("Int8", func(t *testing.T) { each(t, Int8, nil, 0, 1, -1, math.MaxInt8, math.MinInt8) })
	t.Run("Int16", func(t *testing.T) { each(t, Int16, nil, 0, 1, -1, math.MaxInt16, math.MinInt16) })
	t.Run("Int32", func(t *testing.T) { each(t, Int32, nil, 0, 1, -1, math.MaxInt32, math.MinInt32) })
	t.Run("Int64", func(t *testing.T) { each(t, Int64, nil, 0, 1, -1, math.MaxInt64, math.MinInt64) })
	t.Run("Uint", func(t *testing.T) { each(t, Uint, nil, 0, 1, 127, 128, math.MaxUint) })
	t.Run("Uint8", func(t *testing.T) { each(t, Uint8, nil, 0, 1, 127, 128, math.MaxUint8) })
	t.Run("Uint16", func(t *testing.T) { each(t, Uint16, nil, 0, 1, 128, math.MaxUint16) })
	t.Run("Uint32", func(t *testing.T) { each(t, Uint32, nil, 0, 1, 128, math.MaxUint32) })
	t.Run("Uint64", func(t *testing.T) { each(t, Uint64, nil, 0, 1, 128, math.MaxUint64) })
	t.Run("Float32", func(t *testing.T) {
		each(t, Float32, floatEq32, 0, float32(math.Copysign(0, -1)), 1.5, -3.25, math.MaxFloat32,
			math.SmallestNonzeroFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), nan32)
	})
	t.Run("Float64", func(t *testing.T) {
		each(t, Float64, floatEq64, 0, math.Copysign(0, -1), 1.5, -3.25, math.MaxFloat64,
			math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(), nanPayload)
	})
	t.Run("Duration", func(t *testing.T) {
		each(t, Duration, nil, 0, time.Nanosecond, -time.Hour, math.MaxInt64, math.MinInt64)
	})
	t.Run("Time", func(t *testing.T) {
		timeEq := func(a, b time.Time) bool { return a.Equal(b) && a.Location() == time.UTC && a == b }
		for _, v := range []time.Time{
			{}, // the zero Time is outside the UnixNano range
			time.Unix(0, 0).UTC(),
			time.Unix(-1, 999_999_999).UTC(),
			time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
			time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		} {
			roundTrip(t, Time, v, v, timeEq)
		}
		// Location and monotonic reading are dropped; the instant is kept.
		loc := time.FixedZone("X", 5*3600)
		v := time.Date(2020, 5, 6, 7, 8, 9, 10, loc)
		roundTrip(t, Time, v, v.UTC(), timeEq)
		now := time.Now()
		roundTrip(t, Time, now, now.Round(0).UTC(), timeEq)
		if got, _, _ := Time.Decode(Time.Append(nil, time.Time{})); got != (time.Time{}) || !got.IsZero() {
			t.Fatalf("zero Time decoded as %v", got)
		}
	})
}

func TestVarintEncoding(t *testing.T) {
	cases := []struct {
		got, want []byte
	}{
		{Int64.Append(nil, 0), []byte{0}},
		{Int64.Append(nil, -1), []byte{1}},
		{Int64.Append(nil, 1), []byte{2}},
		{Int64.Append(nil, -64), []byte{0x7f}},
		{Int64.Append(nil, 64), []byte{0x80, 0x01}},
		{Uint64.Append(nil, 300), []byte{0xac, 0x02}},
		{Int8.Append(nil, -1), []byte{0xff}},
		{Uint8.Append(nil, 200), []byte{200}},
		{String.Append(nil, "ab"), []byte{2, 'a', 'b'}},
		{Float32.Append(nil, 1), []byte{0, 0, 0x80, 0x3f}},
		{Float64.Append(nil, 1), []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{Bool.Append(nil, true), []byte{1}},
		{AppendSlice(Int, nil, []int{1, -1}), []byte{2, 2, 1}},
	}
	for i, c := range cases {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("case %d: got %x, want %x", i, c.got, c.want)
		}
	}
}

func TestMalformed(t *testing.T) {
	overflow := bytes.Repeat([]byte{0xff}, 11)
	cases := []struct {
		name string
		err  error
	}{
		{"bool 2", decodeErr(Bool, []byte{2})},
		{"int16 range", decodeErr(Int16, Int64.Append(nil, math.MaxInt16+1))},
		{"int32 range", decodeErr(Int32, Int64.Append(nil, math.MinInt32-1))},
		{"uint16 range", decodeErr(Uint16, Uint64.Append(nil, math.MaxUint16+1))},
		{"uint32 range", decodeErr(Uint32, Uint64.Append(nil, math.MaxUint32+1))},
		{"varint overflow", decodeErr(Uint64, overflow)},
		{"int overflow", decodeErr(Int, overflow)},
		{"string huge length", decodeErr(String, Uint64.Append(nil, math.MaxUint64))},
		{"string length past end", decodeErr(String, []byte{5, 'a', 'b'})},
		{"bytes huge length", decodeErr(Bytes, Uint64.Append(nil, 1<<62))},
		{"time nanos", decodeErr(Time, append(Int64.Append(nil, 0), Uint64.Append(nil, 1e9)...))},
		{"empty", decodeErr(Int, nil)},
	}
	for _, c := range cases {
		if c.err == nil || !errors.Is(c.err, ErrCorrupt) {
			t.Errorf("%s: got error %v, want one wrapping ErrCorrupt", c.name, c.err)
		}
	}
}

func decodeErr[T any](c Codec[T], b []byte) error {
	_, n, err := c.Decode(b)
	if err != nil && n != 0 {
		return errors.New("non-zero n with error")
	}
	return err
}

type (
	Word    string
	Count   int64
	Small   int8
	Flag    bool
	Ratio   float32
	Raw     []byte
	Port    uint16
	Stamp   time.Time
	Timeout time.Duration
)

func TestNamedBasicTypes(t *testing.T) {
	roundTrip(t, MustFor[Word](), "hello", "hello", nil)
	roundTrip(t, MustFor[Word](), "\xff\x00", "\xff\x00", nil)
	roundTrip(t, MustFor[Count](), math.MinInt64, math.MinInt64, nil)
	roundTrip(t, MustFor[Small](), -128, -128, nil)
	roundTrip(t, MustFor[Flag](), true, true, nil)
	roundTrip(t, MustFor[Ratio](), 0.25, 0.25, nil)
	roundTrip(t, MustFor[Raw](), Raw("raw"), Raw("raw"), nil)
	roundTrip(t, MustFor[Port](), 65535, 65535, nil)
	roundTrip(t, MustFor[Timeout](), Timeout(time.Minute), Timeout(time.Minute), nil)
	st := Stamp(time.Date(2021, 1, 2, 3, 4, 5, 6, time.UTC))
	roundTrip(t, MustFor[Stamp](), st, st, nil)

	// Named types share the encoding of their underlying type.
	if a, b := MustFor[Word]().Append(nil, "xy"), String.Append(nil, "xy"); !bytes.Equal(a, b) {
		t.Fatalf("Word encoding %x differs from string encoding %x", a, b)
	}
	if _, ok := MustFor[Word]().(castCodec[Word, string, stringCodec]); !ok {
		t.Fatalf("For[Word] = %T, want the unsafe cast of the string codec", MustFor[Word]())
	}
}

func TestForIsCached(t *testing.T) {
	type S struct{ A int }
	a, b := MustFor[S](), MustFor[S]()
	if a != b {
		t.Fatal("For returned different codecs for the same type")
	}
	_, err1 := For[chan int]()
	_, err2 := For[chan int]()
	if err1 == nil || err1 != err2 {
		t.Fatalf("errors not cached: %v, %v", err1, err2)
	}
}

func TestFunc(t *testing.T) {
	// A fixed-width big-endian uint32 codec.
	c := Func(func(dst []byte, v uint32) []byte {
		return append(dst, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}, func(src []byte) (uint32, int, error) {
		if len(src) < 4 {
			return 0, 0, ErrCorrupt
		}
		return uint32(src[0])<<24 | uint32(src[1])<<16 | uint32(src[2])<<8 | uint32(src[3]), 4, nil
	})
	roundTrip(t, c, 0xdeadbeef, 0xdeadbeef, nil)

	// A decoder that lies about what it consumed is caught.
	bad := Func(func(dst []byte, v int) []byte { return dst }, func(src []byte) (int, int, error) { return 0, 99, nil })
	if _, _, err := bad.Decode([]byte{1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad consumed length: got %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Func(nil, nil) did not panic")
		}
	}()
	Func[int](nil, nil)
}

func TestSliceBatch(t *testing.T) {
	words := []string{"a", "", "ccc", "\xff"}
	buf := AppendSlice(String, []byte{0xEE}, words)
	if buf[0] != 0xEE {
		t.Fatal("AppendSlice clobbered dst")
	}
	buf = buf[1:]

	dst := make([]string, 1, 16)
	dst[0] = "keep"
	got, n, err := DecodeSlice(String, dst, buf)
	if err != nil || n != len(buf) {
		t.Fatalf("DecodeSlice: n=%d err=%v", n, err)
	}
	want := append([]string{"keep"}, words...)
	if strings.Join(got, ",") != strings.Join(want, ",") || len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if &got[0] != &dst[0] {
		t.Fatal("DecodeSlice did not reuse the capacity of dst")
	}

	// Empty batch.
	got, n, err = DecodeSlice(String, nil, AppendSlice(String, nil, nil))
	if err != nil || n != 1 || len(got) != 0 {
		t.Fatalf("empty batch: %v %d %v", got, n, err)
	}

	// Every truncation fails and leaves dst's length alone.
	for i := range len(buf) {
		got, n, err := DecodeSlice(String, dst[:1], buf[:i:i])
		if !errors.Is(err, ErrCorrupt) || n != 0 || len(got) != 1 || got[0] != "keep" {
			t.Fatalf("prefix %d: got %q n=%d err=%v", i, got, n, err)
		}
	}

	// A bogus count is rejected before allocating.
	huge := Uint64.Append(nil, 1<<60)
	allocs := testing.AllocsPerRun(10, func() {
		if _, _, err := DecodeSlice(Int64, nil, huge); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("huge count: %v", err)
		}
	})
	if allocs != 0 {
		t.Fatalf("huge count allocated %v times", allocs)
	}

	// Batches of structs through a reflection codec, and of a zero-size type.
	type P struct {
		X, Y int32
	}
	pc := MustFor[P]()
	ps := []P{{1, 2}, {-3, 4}}
	got2, _, err := DecodeSlice(pc, nil, AppendSlice(pc, nil, ps))
	if err != nil || len(got2) != 2 || got2[1] != ps[1] {
		t.Fatalf("struct batch: %v %v", got2, err)
	}
	ec := MustFor[struct{}]()
	got3, n, err := DecodeSlice(ec, nil, Uint64.Append(nil, 1<<30))
	if err != nil || len(got3) != 1<<30 || n != 5 {
		t.Fatalf("zero-size batch: len=%d n=%d err=%v", len(got3), n, err)
	}
}

var someTime = time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
var someBytes = []byte("some bytes")
