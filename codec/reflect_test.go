package codec

import (
	"errors"
	"math"
	"net/netip"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

type KV[K comparable, V any] struct {
	Key   K
	Value V
}

type Pair[A, B any] struct {
	First  A
	Second B
}

type Inner struct {
	Name  string
	Tags  []string
	Score float64
}

type Record struct {
	ID       uint64
	Word     Word
	Count    int64
	Ok       bool
	Small    int8
	U16      uint16
	F32      float32
	C128     complex128
	Ptr      *int
	Inner    Inner
	InnerPtr *Inner
	Items    []Inner
	Matrix   [2][3]int16
	Hash     [4]byte
	Counts   map[string]int
	Nested   map[Word][]KV[string, *Inner]
	When     time.Time
	Took     time.Duration
	Blob     []byte
	Addr     netip.Addr
	Empty    struct{}
	Uptr     uintptr
}

type Node struct {
	Value int
	Next  *Node
}

type Tree struct {
	Label    string
	Children []Tree
	Index    map[string]*Tree
}

func ptr[T any](v T) *T { return &v }

func TestStructRoundTrip(t *testing.T) {
	c, err := For[Record]()
	if err != nil {
		t.Fatal(err)
	}
	full := Record{
		ID: math.MaxUint64, Word: "w\xff", Count: math.MinInt64, Ok: true, Small: -1, U16: 65535,
		F32: 1.5, C128: complex(1, -2), Ptr: ptr(42),
		Inner:    Inner{Name: "in", Tags: []string{"a", ""}, Score: math.Inf(-1)},
		InnerPtr: &Inner{Name: "p"},
		Items:    []Inner{{Name: "x"}, {Tags: []string{"t"}}},
		Matrix:   [2][3]int16{{1, 2, 3}, {-4, math.MinInt16, math.MaxInt16}},
		Hash:     [4]byte{0xde, 0xad, 0xbe, 0xef},
		Counts:   map[string]int{"one": 1},
		Nested:   map[Word][]KV[string, *Inner]{"k": {{Key: "a", Value: &Inner{Name: "deep"}}, {Key: "b"}}},
		When:     time.Date(2023, 7, 1, 2, 3, 4, 5, time.UTC),
		Took:     -time.Second,
		Blob:     []byte{0, 1, 2},
		Addr:     netip.MustParseAddr("2001:db8::1"),
		Uptr:     12345,
	}
	roundTrip(t, c, full, full, nil)
	roundTrip(t, c, Record{}, Record{}, nil)

	// Empty (non-nil) slices and maps decode as nil.
	withEmpty := Record{Items: []Inner{}, Counts: map[string]int{}, Blob: []byte{}}
	roundTrip(t, c, withEmpty, Record{}, nil)

	// Maps with several entries (encoding order varies, decoding must not).
	m := Record{Counts: map[string]int{}}
	for i := range 100 {
		m.Counts[strings.Repeat("k", i)] = i - 50
	}
	roundTrip(t, c, m, m, nil)
}

func TestGenericStructs(t *testing.T) {
	roundTrip(t, MustFor[KV[string, int64]](), KV[string, int64]{"a", -7}, KV[string, int64]{"a", -7}, nil)
	type Deep = Pair[KV[Word, []int], map[int32]Pair[string, *float64]]
	v := Deep{
		First:  KV[Word, []int]{Key: "k", Value: []int{1, math.MinInt}},
		Second: map[int32]Pair[string, *float64]{-1: {"x", ptr(2.5)}, 7: {"y", nil}},
	}
	roundTrip(t, MustFor[Deep](), v, v, nil)
	roundTrip(t, MustFor[[]KV[string, int64]](), []KV[string, int64]{{"a", 1}, {"b", 2}}, []KV[string, int64]{{"a", 1}, {"b", 2}}, nil)
}

func TestPointers(t *testing.T) {
	c := MustFor[*int]()
	roundTrip(t, c, nil, nil, nil)
	roundTrip(t, c, ptr(0), ptr(0), nil)
	roundTrip(t, c, ptr(-99), ptr(-99), nil)
	if b := c.Append(nil, nil); len(b) != 1 || b[0] != 0 {
		t.Fatalf("nil pointer encoded as %x", b)
	}
	cc := MustFor[**string]()
	roundTrip(t, cc, ptr((*string)(nil)), ptr((*string)(nil)), nil)
	roundTrip(t, cc, ptr(ptr("s")), ptr(ptr("s")), nil)
	if _, _, err := c.Decode([]byte{2, 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad pointer flag: %v", err)
	}
	// Decoded pointers point to fresh memory.
	a, _, _ := c.Decode(c.Append(nil, ptr(1)))
	b, _, _ := c.Decode(c.Append(nil, ptr(1)))
	if a == b {
		t.Fatal("decoded pointers alias")
	}
}

func TestMapsAndSlices(t *testing.T) {
	roundTrip(t, MustFor[map[string]int](), nil, nil, nil)
	roundTrip(t, MustFor[map[string]int](), map[string]int{"a": 1, "b": 2, "": 0}, map[string]int{"a": 1, "b": 2, "": 0}, nil)
	type Key struct {
		A int
		B string
	}
	mk := map[Key][]*Key{{1, "x"}: {{2, "y"}, nil}, {}: nil}
	roundTrip(t, MustFor[map[Key][]*Key](), mk, mk, nil)
	ma := map[[2]int8]bool{{1, 2}: true, {-1, -2}: false}
	roundTrip(t, MustFor[map[[2]int8]bool](), ma, ma, nil)
	mz := map[struct{}]struct{}{{}: {}}
	roundTrip(t, MustFor[map[struct{}]struct{}](), mz, mz, nil)

	roundTrip(t, MustFor[[]int](), []int{1, -2, 3}, []int{1, -2, 3}, nil)
	roundTrip(t, MustFor[[][]string](), [][]string{{"a"}, nil, {"b", "c"}}, [][]string{{"a"}, nil, {"b", "c"}}, nil)
	roundTrip(t, MustFor[[]struct{}](), make([]struct{}, 5), make([]struct{}, 5), nil)
	roundTrip(t, MustFor[[3]string](), [3]string{"a", "", "c"}, [3]string{"a", "", "c"}, nil)
	roundTrip(t, MustFor[[0]int](), [0]int{}, [0]int{}, nil)
	roundTrip(t, MustFor[[]Word](), []Word{"x", "y"}, []Word{"x", "y"}, nil)
	// A literal -0.0 is +0 in Go; Copysign makes a real negative zero, and
	// the comparison checks the sign bit, which == would ignore.
	negZero := math.Copysign(0, -1)
	roundTrip(t, MustFor[[]float64](), []float64{math.Pi, negZero}, []float64{math.Pi, negZero}, func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return true
	})
	roundTrip(t, MustFor[[16]byte](), [16]byte{1, 2, 3, 15: 16}, [16]byte{1, 2, 3, 15: 16}, nil)
}

func TestRecursiveTypes(t *testing.T) {
	c := MustFor[*Node]()
	var list *Node
	for i := range 50 {
		list = &Node{Value: i, Next: list}
	}
	roundTrip(t, c, list, list, nil)
	roundTrip(t, MustFor[Node](), Node{Value: 1}, Node{Value: 1}, nil)

	tree := Tree{Label: "root", Children: []Tree{{Label: "a"}, {Label: "b", Children: []Tree{{Label: "c"}}}}}
	tree.Index = map[string]*Tree{"c": &Tree{Label: "c"}, "nil": nil}
	roundTrip(t, MustFor[Tree](), tree, tree, nil)
}

func TestDepthLimit(t *testing.T) {
	c := MustFor[*Node]()
	// Each level is "1" (pointer flag) + "0" (Value); a hostile input nests
	// far deeper than the limit.
	deep := make([]byte, 0, 2*(maxDepth+10)+1)
	for range maxDepth + 10 {
		deep = append(deep, 1, 0)
	}
	deep = append(deep, 0)
	if _, _, err := c.Decode(deep); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("over-deep input: %v", err)
	}
	// A list well within the limit works.
	var list *Node
	for i := range maxDepth / 2 {
		list = &Node{Value: i, Next: list}
	}
	got, _, err := c.Decode(c.Append(nil, list))
	if err != nil || got.Value != list.Value {
		t.Fatalf("long list: %v", err)
	}
}

func TestMarshalerTypes(t *testing.T) {
	for _, a := range []netip.Addr{{}, netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("fe80::1%eth0")} {
		roundTrip(t, MustFor[netip.Addr](), a, a, nil)
	}
	u, _ := url.Parse("https://user:pw@example.com:8080/a/b?q=1#frag")
	roundTrip(t, MustFor[*url.URL](), u, u, nil)
	roundTrip(t, MustFor[*url.URL](), nil, nil, nil)

	// Payloads longer than 127 bytes need a longer length prefix.
	long := Blob{Data: strings.Repeat("z", 300)}
	roundTrip(t, MustFor[[]Blob](), []Blob{{"a"}, long, {}}, []Blob{{"a"}, long, {}}, nil)
	roundTrip(t, MustFor[MarshalOnly](), MarshalOnly{secret: "s"}, MarshalOnly{secret: "s"}, nil)

	// Unmarshal errors are reported as corrupt input.
	if _, _, err := MustFor[netip.Addr]().Decode([]byte{3, 1, 2, 3}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad addr: %v", err)
	}
}

// Blob implements BinaryAppender (value receiver) and BinaryUnmarshaler.
type Blob struct{ Data string }

func (b Blob) AppendBinary(dst []byte) ([]byte, error) { return append(dst, b.Data...), nil }
func (b *Blob) UnmarshalBinary(p []byte) error         { b.Data = string(p); return nil }

// MarshalOnly has unexported state but marshals itself (pointer receivers).
type MarshalOnly struct{ secret string }

func (m *MarshalOnly) MarshalBinary() ([]byte, error) { return []byte(m.secret), nil }
func (m *MarshalOnly) UnmarshalBinary(p []byte) error { m.secret = string(p); return nil }

func TestUnsupported(t *testing.T) {
	type hidden struct {
		Public  int
		private int
	}
	type Outer struct {
		A  int
		In []map[string]hidden
	}
	cases := []struct {
		err  error
		want []string
	}{
		{errOf[any](), []string{"interface {}"}},
		{errOf[func()](), []string{"func()"}},
		{errOf[chan int](), []string{"chan int"}},
		{errOf[map[string]any](), []string{"interface {}", "map[string]interface {}"}},
		{errOf[struct{ F func() }](), []string{"func()", ".F"}},
		{errOf[hidden](), []string{"codec.hidden", "private"}},
		{errOf[Outer](), []string{"codec.hidden", "private", "codec.Outer", ".In[][value]"}},
		{errOf[*KV[string, chan int]](), []string{"chan int", "*.Value"}},
		{errOf[[2]error](), []string{"error"}},
		{errOf[struct{ P unsafe.Pointer }](), []string{"unsafe.Pointer"}},
	}
	for i, c := range cases {
		if !errors.Is(c.err, ErrUnsupported) {
			t.Errorf("case %d: %v does not wrap ErrUnsupported", i, c.err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(c.err.Error(), w) {
				t.Errorf("case %d: %q does not mention %q", i, c.err, w)
			}
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("MustFor of unsupported type did not panic")
			}
		}()
		MustFor[chan int]()
	}()

	// A failed compilation leaves no half-built state: the element type
	// alone still compiles fine and the failing one still fails.
	if _, err := For[[]Outer](); err == nil {
		t.Fatal("[]Outer compiled")
	}
	if _, err := For[[]map[string]int](); err != nil {
		t.Fatal(err)
	}
}

func errOf[T any]() error {
	_, err := For[T]()
	return err
}

func TestConcurrentUse(t *testing.T) {
	type C struct {
		Name string
		Kids []*C
		M    map[int]string
	}
	v := C{Name: "a", Kids: []*C{{Name: "b"}}, M: map[int]string{1: "x", 2: "y"}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := MustFor[C]()
			for range 200 {
				got, _, err := c.Decode(c.Append(nil, v))
				if err != nil || !reflect.DeepEqual(got, v) {
					t.Errorf("concurrent round trip: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBogusLengthsDoNotAllocate(t *testing.T) {
	type S struct {
		L []Inner
		M map[string]string
	}
	c := MustFor[S]()
	inputs := [][]byte{
		Uint64.Append(nil, 1<<62),                                  // slice count
		append([]byte{0}, Uint64.Append(nil, math.MaxUint64)...),   // map count
		append([]byte{1, 1}, Uint64.Append(nil, math.MaxInt64)...), // nested string length
	}
	for i, in := range inputs {
		allocs := testing.AllocsPerRun(20, func() {
			if _, _, err := c.Decode(in); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("input %d: %v", i, err)
			}
		})
		if allocs > 2 {
			t.Errorf("input %d: %v allocations for a bogus length", i, allocs)
		}
	}
	// A count that fits the input bounds the allocation to a small multiple
	// of the input size.
	in := append(Uint64.Append(nil, 1000), make([]byte, 1000)...)
	dc := MustFor[[][]string]()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, err := dc.Decode(in); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 100_000 {
		t.Errorf("decoding %d bytes allocated %d bytes", len(in), d)
	}
}

// TestStackGrowth encodes and decodes on a fresh goroutine (small stack)
// values whose encoding recurses deeply, so the stack is copied while the
// compiled functions hold pointers into the frames of Append and Decode.
func TestStackGrowth(t *testing.T) {
	type Holder struct {
		Head  string
		List  *Node
		Trees []Tree
		Tail  string
	}
	var h Holder
	h.Head, h.Tail = "head", "tail"
	for i := range 3000 {
		h.List = &Node{Value: i, Next: h.List}
	}
	tr := Tree{Label: "leaf"}
	for range 500 {
		tr = Tree{Label: "x", Children: []Tree{tr}}
	}
	h.Trees = []Tree{tr}
	c := MustFor[Holder]()
	for range 3 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			enc := c.Append(nil, h)
			got, n, err := c.Decode(enc)
			if err != nil || n != len(enc) || !reflect.DeepEqual(got, h) {
				t.Errorf("deep round trip: n=%d/%d err=%v", n, len(enc), err)
			}
		}()
		<-done
	}
}

// Event embeds time.Time, whose Binary methods are promoted to Event; they
// must not be used, or Name would be silently dropped.
type Event struct {
	time.Time
	Name string
}

// AddrHolder embeds a pointer-method marshaler.
type AddrHolder struct {
	*url.URL
	Note string
}

// OwnMarshal embeds time.Time but declares its own methods, which win.
type OwnMarshal struct {
	time.Time
	Name string
}

func (o OwnMarshal) MarshalBinary() ([]byte, error)  { return []byte(o.Name), nil }
func (o *OwnMarshal) UnmarshalBinary(b []byte) error { o.Name = "own:" + string(b); return nil }

func TestPromotedMarshalersIgnored(t *testing.T) {
	e := Event{Time: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), Name: "launch"}
	roundTrip(t, MustFor[Event](), e, e, nil)
	u, _ := url.Parse("http://x/y")
	h := AddrHolder{URL: u, Note: "n"}
	roundTrip(t, MustFor[AddrHolder](), h, h, nil)
	got, _, err := MustFor[OwnMarshal]().Decode(MustFor[OwnMarshal]().Append(nil, OwnMarshal{Name: "a"}))
	if err != nil || got.Name != "own:a" {
		t.Fatalf("own methods not used: %+v %v", got, err)
	}
}
