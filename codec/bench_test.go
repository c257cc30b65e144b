package codec

import (
	"testing"
)

type wordCount struct {
	Word  string
	Count int64
}

var benchSink []byte

func BenchmarkStringAppend(b *testing.B) {
	buf := make([]byte, 0, 64)
	s := "the quick brown fox"
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = String.Append(buf[:0], s)
	}
	benchSink = buf
}

func BenchmarkStringDecode(b *testing.B) {
	enc := String.Append(nil, "the quick brown fox")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := String.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInt64Append(b *testing.B) {
	buf := make([]byte, 0, 16)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = Int64.Append(buf[:0], int64(i)*7919)
	}
	benchSink = buf
}

func BenchmarkStructAppend(b *testing.B) {
	c := MustFor[wordCount]()
	v := wordCount{Word: "weir", Count: 12345}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = c.Append(buf[:0], v)
	}
	benchSink = buf
}

func BenchmarkStructDecode(b *testing.B) {
	c := MustFor[wordCount]()
	enc := c.Append(nil, wordCount{Word: "weir", Count: 12345})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStructRoundTrip(b *testing.B) {
	c := MustFor[wordCount]()
	v := wordCount{Word: "weir", Count: 12345}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = c.Append(buf[:0], v)
		got, _, err := c.Decode(buf)
		if err != nil || got.Count != v.Count {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatchRoundTrip(b *testing.B) {
	c := MustFor[wordCount]()
	batch := make([]wordCount, 256)
	for i := range batch {
		batch[i] = wordCount{Word: "word", Count: int64(i)}
	}
	buf := make([]byte, 0, 4096)
	dst := make([]wordCount, 0, len(batch))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendSlice(c, buf[:0], batch)
		var err error
		if dst, _, err = DecodeSlice(c, dst[:0], buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordRoundTrip(b *testing.B) {
	c := MustFor[Record]()
	v := Record{
		ID: 1, Word: "w", Count: 3, Inner: Inner{Name: "in", Tags: []string{"a", "b"}},
		Items: []Inner{{Name: "x"}}, Counts: map[string]int{"one": 1},
	}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = c.Append(buf[:0], v)
		if _, _, err := c.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendDoesNotAllocate pins the zero-allocation Append path of the
// built-in codecs, named basic types and simple structs.
func TestAppendDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	buf := make([]byte, 0, 256)
	wc := MustFor[wordCount]()
	word := MustFor[Word]()
	kv := MustFor[KV[[4]byte, *int64]]()
	n := int64(5)
	s := "a string of some length"
	checks := map[string]func(){
		"String":   func() { buf = String.Append(buf[:0], s) },
		"Bytes":    func() { buf = Bytes.Append(buf[:0], someBytes) },
		"Bool":     func() { buf = Bool.Append(buf[:0], true) },
		"Int":      func() { buf = Int.Append(buf[:0], -1<<30) },
		"Int8":     func() { buf = Int8.Append(buf[:0], -3) },
		"Int16":    func() { buf = Int16.Append(buf[:0], -3) },
		"Int32":    func() { buf = Int32.Append(buf[:0], -3) },
		"Int64":    func() { buf = Int64.Append(buf[:0], -3) },
		"Uint":     func() { buf = Uint.Append(buf[:0], 3) },
		"Uint8":    func() { buf = Uint8.Append(buf[:0], 3) },
		"Uint16":   func() { buf = Uint16.Append(buf[:0], 3) },
		"Uint32":   func() { buf = Uint32.Append(buf[:0], 3) },
		"Uint64":   func() { buf = Uint64.Append(buf[:0], 3) },
		"Float32":  func() { buf = Float32.Append(buf[:0], 3) },
		"Float64":  func() { buf = Float64.Append(buf[:0], 3) },
		"Time":     func() { buf = Time.Append(buf[:0], someTime) },
		"Duration": func() { buf = Duration.Append(buf[:0], 3) },
		"Word":     func() { buf = word.Append(buf[:0], "w") },
		"struct":   func() { buf = wc.Append(buf[:0], wordCount{Word: s, Count: 1}) },
		"generic":  func() { buf = kv.Append(buf[:0], KV[[4]byte, *int64]{Value: &n}) },
	}
	for name, f := range checks {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: Append allocated %v times", name, a)
		}
	}
	if a := testing.AllocsPerRun(100, func() {
		v, _, err := wc.Decode(buf[:0:0])
		_, _ = v, err
	}); a != 0 {
		t.Errorf("failed struct Decode allocated %v times", a)
	}
}

// wordBatch is a buffer's worth of WordCount records: words of 3 to 10
// letters and small counts, as the WordCount shuffle carries.
func wordBatch(n int) []wordCount {
	batch := make([]wordCount, n)
	for i := range batch {
		w := make([]byte, 3+i*7%8)
		for j := range w {
			w[j] = byte('a' + (i*31+j*7)%26)
		}
		batch[i] = wordCount{Word: string(w), Count: int64(1 + i*13%1000)}
	}
	return batch
}

// BenchmarkBatchAppend and BenchmarkBatchDecode encode and decode a
// network buffer's worth (1024) of WordCount records, as encodeBuffer and
// decodeBuffer do; ns/record is ns/op per record.
func BenchmarkBatchAppend(b *testing.B) {
	c := MustFor[wordCount]()
	batch := wordBatch(1024)
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendSlice(c, buf[:0], batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(batch)), "ns/record")
	benchSink = buf
}

func BenchmarkBatchDecode(b *testing.B) {
	c := MustFor[wordCount]()
	batch := wordBatch(1024)
	enc := AppendSlice(c, nil, batch)
	dst := make([]wordCount, 0, len(batch))
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		var err error
		if dst, _, err = DecodeSlice(c, dst[:0], enc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(batch)), "ns/record")
}
