// Package checksum frames the files of checkpoints and savepoints with
// CRC32C checksums, so that a byte that rots, or a file cut short, fails
// a restore instead of restoring wrong state.
//
// A framed file is its data followed by a trailer:
//
//	data            n bytes, unchanged (a Pebble SST stays an SST)
//	block table     4 bytes per block of BlockSize bytes of data (the last
//	                block may be short; none when n is 0): the CRC32C of
//	                each block, little-endian
//	footer          FooterSize bytes, little-endian:
//	                  0  uint64  n, the length of the data
//	                  8  uint32  BlockSize
//	                 12  uint32  CRC32C of the whole data
//	                 16  uint32  format version (1)
//	                 20  uint32  CRC32C of the block table and footer bytes 0–19
//	                 24  [8]byte Magic
//
// The trailer goes at the end so that the data can be written as it is
// streamed, and so that stripping it gives back the file as it was. A
// reader that knows the framed file's size knows where the data ends (the
// block size is fixed per format version), so it streams the data to its
// destination and verifies at the end, in one pass and one request.
//
// CRC32C (Castagnoli) is what hash/crc32 accelerates in hardware (SSE 4.2,
// ARMv8); per-block sums say where damage starts. Checksums detect rot
// and accidents, not an attacker: anyone who can write the file can
// recompute them.
package checksum

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

const (
	// BlockSize is the amount of data each block checksum covers.
	BlockSize = 64 << 10
	// FooterSize is the fixed part at the very end of a framed file.
	FooterSize = 32
	// Version is the footer's format version.
	Version = 1
)

// Magic ends every framed file.
const Magic = "weirCRC\x01"

var table = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error that says a framed file is not as
// it was written: a block's checksum differs, the trailer is damaged, or
// the file was truncated or extended.
var ErrCorrupt = errors.New("checksum mismatch")

// CorruptError says where a framed file first differs from what was
// written: bytes From to To (inclusive) of the framed file.
type CorruptError struct {
	From, To int64
	// Block is the data block whose checksum differs, or -1 when the
	// damage is in the trailer or the file's length.
	Block int64
	// Reason describes damage other than a block's checksum.
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Block >= 0 {
		return fmt.Sprintf("checksum mismatch in bytes %d–%d (block %d)", e.From, e.To, e.Block)
	}
	return fmt.Sprintf("%s (bytes %d–%d)", e.Reason, e.From, e.To)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Sum identifies a framed file's data: its length and CRC32C. A
// checkpoint's _metadata records it for each state file, so that a file
// swapped for another consistent one is caught too.
type Sum struct {
	Size   int64
	CRC32C uint32
}

// FramedSize is the size of a framed file holding n bytes of data.
func FramedSize(n int64) int64 { return n + 4*blocks(n) + FooterSize }

func blocks(n int64) int64 { return (n + BlockSize - 1) / BlockSize }

// dataSize is the length of the data of a framed file of size total, and
// false when no framed file has that size (it was truncated or extended).
func dataSize(total int64) (int64, bool) {
	m := total - FooterSize
	if m < 0 {
		return 0, false
	}
	// m = n + 4*ceil(n/BlockSize), which grows strictly with n.
	k := (m + BlockSize + 4 - 1) / (BlockSize + 4)
	n := m - 4*k
	return n, n >= 0 && blocks(n) == k
}

// Writer frames what is written through it; Close appends the trailer.
// It does not close the underlying writer.
type Writer struct {
	w      io.Writer
	sums   blockSums
	closed bool
}

// blockSums computes, as data streams by, the checksum of each block of
// BlockSize bytes and of the whole: the Writer to write them into the
// trailer, the verifier to compare them with it.
type blockSums struct {
	n       int64    // bytes seen
	sums    []uint32 // of the complete blocks, and of the last after end
	block   uint32   // running CRC of the current block
	inBlock int
	whole   uint32
}

func (b *blockSums) add(p []byte) {
	b.whole = crc32.Update(b.whole, table, p)
	b.n += int64(len(p))
	for len(p) > 0 {
		k := min(len(p), BlockSize-b.inBlock)
		b.block = crc32.Update(b.block, table, p[:k])
		b.inBlock += k
		p = p[k:]
		if b.inBlock == BlockSize {
			b.sums = append(b.sums, b.block)
			b.block, b.inBlock = 0, 0
		}
	}
}

// end adds the checksum of a last, short block.
func (b *blockSums) end() {
	if b.inBlock > 0 {
		b.sums = append(b.sums, b.block)
		b.block, b.inBlock = 0, 0
	}
}

// NewWriter returns a Writer that writes a framed file to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write passes p through and adds it to the checksums.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errors.New("checksum: write after close")
	}
	n, err := w.w.Write(p)
	w.sums.add(p[:n])
	return n, err
}

// Close writes the trailer.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.sums.end()
	_, err := w.w.Write(trailer(w.sums.sums, w.sums.n, w.sums.whole))
	return err
}

// Sum is the data's length and checksum, complete after Close.
func (w *Writer) Sum() Sum { return Sum{Size: w.sums.n, CRC32C: w.sums.whole} }

// Size is the number of framed bytes written, complete after Close.
func (w *Writer) Size() int64 { return FramedSize(w.sums.n) }

// trailer is the block table of sums followed by the footer.
func trailer(sums []uint32, n int64, whole uint32) []byte {
	t := make([]byte, 0, 4*len(sums)+FooterSize)
	for _, s := range sums {
		t = binary.LittleEndian.AppendUint32(t, s)
	}
	t = binary.LittleEndian.AppendUint64(t, uint64(n))
	t = binary.LittleEndian.AppendUint32(t, BlockSize)
	t = binary.LittleEndian.AppendUint32(t, whole)
	t = binary.LittleEndian.AppendUint32(t, Version)
	t = binary.LittleEndian.AppendUint32(t, crc32.Checksum(t, table))
	return append(t, Magic...)
}

// Frame returns data followed by its trailer. It copies data; to frame a
// large buffer without copying it, write it through a Writer.
func Frame(data []byte) []byte {
	var b bytes.Buffer
	b.Grow(int(FramedSize(int64(len(data)))))
	w := NewWriter(&b)
	_, _ = w.Write(data)
	_ = w.Close()
	return b.Bytes()
}

// HasMagic reports whether b ends with the magic of a framed file. A
// framed file whose magic is damaged does not; a caller that knows the
// file must be framed (the checkpoint's _metadata says so) must not take
// it for an unframed one.
func HasMagic(b []byte) bool { return bytes.HasSuffix(b, []byte(Magic)) }

// Unframe verifies a framed file held in memory and returns its data, a
// subslice of b.
func Unframe(b []byte) ([]byte, Sum, error) {
	n, ok := dataSize(int64(len(b)))
	if !ok {
		return nil, Sum{}, sizeError(int64(len(b)))
	}
	v := newVerifier(n)
	v.add(b[:n])
	sum, err := v.check(b[n:])
	if err != nil {
		return nil, Sum{}, err
	}
	return b[:n], sum, nil
}

// Copy reads a framed file of size bytes from r, writes its data to dst
// and verifies it; the trailer does not go to dst. dst has seen all of
// the data, unverified, when an error says the file is corrupt: a caller
// must discard what it wrote.
func Copy(dst io.Writer, r io.Reader, size int64) (Sum, error) {
	n, ok := dataSize(size)
	if !ok {
		return Sum{}, sizeError(size)
	}
	v := newVerifier(n)
	buf := make([]byte, 256<<10)
	copied, err := io.CopyBuffer(io.MultiWriter(dst, v), io.LimitReader(r, n), buf)
	if err != nil {
		return Sum{}, err
	}
	if copied < n {
		return Sum{}, &CorruptError{From: copied, To: size - 1, Block: -1, Reason: fmt.Sprintf("truncated: ended after %d of %d bytes", copied, size)}
	}
	rest := make([]byte, size-n)
	if k, err := io.ReadFull(r, rest); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return Sum{}, &CorruptError{From: n + int64(k), To: size - 1, Block: -1, Reason: fmt.Sprintf("truncated: ended after %d of %d bytes", n+int64(k), size)}
		}
		return Sum{}, err
	}
	// More than size bytes: the object changed while it was read.
	if k, _ := r.Read(make([]byte, 1)); k > 0 {
		return Sum{}, &CorruptError{From: size, To: size, Block: -1, Reason: fmt.Sprintf("longer than its %d bytes", size)}
	}
	return v.check(rest)
}

func sizeError(size int64) error {
	if size < FooterSize {
		return &CorruptError{From: 0, To: max(size-1, 0), Block: -1,
			Reason: fmt.Sprintf("no checksum trailer: %d bytes, shorter than the %d-byte footer (truncated)", size, FooterSize)}
	}
	return &CorruptError{From: 0, To: size - 1, Block: -1,
		Reason: fmt.Sprintf("no framed file is %d bytes long: truncated or extended", size)}
}

// verifier computes the block checksums of n bytes of data as they
// stream by.
type verifier struct {
	want int64 // the length of the data, from the framed file's size
	blockSums
}

func newVerifier(n int64) *verifier {
	return &verifier{want: n, blockSums: blockSums{sums: make([]uint32, 0, blocks(n))}}
}

func (v *verifier) Write(p []byte) (int, error) { v.add(p); return len(p), nil }

// check compares the data's checksums with the trailer: rest, the bytes
// after the data. The trailer is checked first, so that a damaged table
// is reported as such rather than as damaged data.
func (v *verifier) check(rest []byte) (Sum, error) {
	v.end()
	n := v.want
	size := n + int64(len(rest))
	footer := rest[len(rest)-FooterSize:]
	if !bytes.Equal(footer[24:], []byte(Magic)) {
		return Sum{}, &CorruptError{From: size - 8, To: size - 1, Block: -1, Reason: "no checksum trailer: its magic is damaged or the file truncated"}
	}
	covered := rest[:len(rest)-FooterSize+20]
	if got, want := crc32.Checksum(covered, table), binary.LittleEndian.Uint32(footer[20:]); got != want {
		return Sum{}, &CorruptError{From: n, To: size - 1, Block: -1, Reason: "checksum trailer damaged"}
	}
	if got := binary.LittleEndian.Uint64(footer[0:]); got != uint64(n) {
		return Sum{}, &CorruptError{From: n, To: size - 1, Block: -1,
			Reason: fmt.Sprintf("the trailer says %d bytes of data, the file holds %d: truncated or extended", got, n)}
	}
	if got := binary.LittleEndian.Uint32(footer[8:]); got != BlockSize {
		return Sum{}, &CorruptError{From: n, To: size - 1, Block: -1, Reason: fmt.Sprintf("block size %d, not %d", got, BlockSize)}
	}
	if got := binary.LittleEndian.Uint32(footer[16:]); got != Version {
		return Sum{}, &CorruptError{From: n, To: size - 1, Block: -1, Reason: fmt.Sprintf("checksum format version %d, not %d", got, Version)}
	}
	for i, s := range v.sums {
		if want := binary.LittleEndian.Uint32(rest[4*i:]); s != want {
			from := int64(i) * BlockSize
			return Sum{}, &CorruptError{From: from, To: min(from+BlockSize, n) - 1, Block: int64(i)}
		}
	}
	if want := binary.LittleEndian.Uint32(footer[12:]); v.whole != want {
		return Sum{}, &CorruptError{From: 0, To: max(n-1, 0), Block: -1, Reason: "checksum of the whole data differs"}
	}
	return Sum{Size: n, CRC32C: v.whole}, nil
}
