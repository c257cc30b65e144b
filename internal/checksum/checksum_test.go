package checksum

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

func sizes() []int {
	return []int{0, 1, 100, BlockSize - 1, BlockSize, BlockSize + 1, 3*BlockSize + 17}
}

func data(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestRoundTrip frames data of sizes around block boundaries, in one
// write and in small ones, and reads it back through Unframe and Copy.
func TestRoundTrip(t *testing.T) {
	for _, n := range sizes() {
		d := data(n)
		framed := Frame(d)
		if int64(len(framed)) != FramedSize(int64(n)) {
			t.Fatalf("%d bytes: framed %d, FramedSize says %d", n, len(framed), FramedSize(int64(n)))
		}
		var b bytes.Buffer
		w := NewWriter(&b)
		for p := d; len(p) > 0; {
			k := min(len(p), 1000)
			w.Write(p[:k])
			p = p[k:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), framed) {
			t.Fatalf("%d bytes: small writes frame differently", n)
		}
		got, sum, err := Unframe(framed)
		if err != nil || !bytes.Equal(got, d) || sum != w.Sum() || sum.Size != int64(n) {
			t.Fatalf("%d bytes: Unframe: %v, equal %v, sum %+v want %+v", n, err, bytes.Equal(got, d), sum, w.Sum())
		}
		var out bytes.Buffer
		sum, err = Copy(&out, iotest.HalfReader(bytes.NewReader(framed)), int64(len(framed)))
		if err != nil || !bytes.Equal(out.Bytes(), d) || sum != w.Sum() {
			t.Fatalf("%d bytes: Copy: %v, equal %v", n, err, bytes.Equal(out.Bytes(), d))
		}
		if !HasMagic(framed) {
			t.Fatal("no magic")
		}
	}
}

// TestEveryByteFlipped flips bytes of a framed file of three blocks in
// turn (every byte of the trailer and around block boundaries, and a
// stride through the rest): every flip is an error, and a flip in the
// data names the block that holds it.
func TestEveryByteFlipped(t *testing.T) {
	n := 2*BlockSize + 1000
	framed := Frame(data(n))
	for i := range framed {
		if i < n && i%BlockSize > 8 && i%BlockSize < BlockSize-8 && i%211 != 0 {
			continue
		}
		framed[i] ^= 0x20
		_, _, err := Unframe(framed)
		_, cerr := Copy(&bytes.Buffer{}, bytes.NewReader(framed), int64(len(framed)))
		framed[i] ^= 0x20
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || cerr == nil || cerr.Error() != err.Error() {
			t.Fatalf("byte %d flipped: Unframe %v, Copy %v", i, err, cerr)
		}
		if int64(i) < ce.From || int64(i) > ce.To {
			t.Fatalf("byte %d flipped: the error names bytes %d–%d: %v", i, ce.From, ce.To, err)
		}
		if i < n && ce.Block != int64(i/BlockSize) {
			t.Fatalf("byte %d flipped: %v, want block %d", i, err, i/BlockSize)
		}
	}
}

// TestTruncatedAndExtended: a framed file cut at any length, or with
// bytes added, is an error.
func TestTruncatedAndExtended(t *testing.T) {
	framed := Frame(data(BlockSize + 10))
	for _, k := range []int{0, 1, 8, FooterSize, len(framed) - 4 - FooterSize, len(framed) - 1} {
		if _, _, err := Unframe(framed[:k]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", k, err)
		}
		// A reader that claims the full size but ends early.
		if _, err := Copy(&bytes.Buffer{}, bytes.NewReader(framed[:k]), int64(len(framed))); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("stream ending after %d bytes: %v", k, err)
		}
	}
	for _, extra := range [][]byte{{0}, []byte(Magic), make([]byte, 4)} {
		if _, _, err := Unframe(append(bytes.Clone(framed), extra...)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("extended by %d bytes: %v", len(extra), err)
		}
	}
	if _, err := Copy(&bytes.Buffer{}, bytes.NewReader(append(bytes.Clone(framed), 1)), int64(len(framed))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a stream longer than its size: %v", err)
	}
	// An unframed file is not taken for a framed one.
	if _, _, err := Unframe([]byte(`{"ID":1,"Tasks":[]}` + strings.Repeat(" ", 40))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unframed JSON: %v", err)
	}
}

// FuzzUnframe: arbitrary bytes never panic, and whatever Unframe accepts
// Copy accepts with the same data; frames of the input always verify, and
// with one byte flipped never do.
func FuzzUnframe(f *testing.F) {
	f.Add([]byte{}, uint32(0))
	f.Add(Frame([]byte("state")), uint32(3))
	f.Add(Frame(data(BlockSize+1)), uint32(BlockSize))
	f.Fuzz(func(t *testing.T, b []byte, pos uint32) {
		d, sum, err := Unframe(b)
		var out bytes.Buffer
		csum, cerr := Copy(&out, bytes.NewReader(b), int64(len(b)))
		if (err == nil) != (cerr == nil) {
			t.Fatalf("Unframe: %v, Copy: %v", err, cerr)
		}
		if err == nil && (!bytes.Equal(d, out.Bytes()) || sum != csum) {
			t.Fatal("Unframe and Copy disagree")
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("not a corruption error: %v", err)
		}
		framed := Frame(b)
		if got, _, err := Unframe(framed); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("own frame: %v", err)
		}
		i := int(pos) % len(framed)
		framed[i] ^= 1
		if _, _, err := Unframe(framed); err == nil {
			t.Fatalf("byte %d of %d flipped, and the frame verifies", i, len(framed))
		}
	})
}

// BenchmarkWriter and BenchmarkCopy give the CPU cost of the checksums
// per byte written and verified, apart from any disk (docs/benchmarks.md).
func BenchmarkWriter(b *testing.B) {
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		w := NewWriter(io.Discard)
		if _, err := w.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCopy(b *testing.B) {
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	framed := Frame(data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Copy(io.Discard, bytes.NewReader(framed), int64(len(framed))); err != nil {
			b.Fatal(err)
		}
	}
}
