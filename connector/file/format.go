package file

import (
	"io"
)

// Encoding writes records of type T into files: it is what the part-file
// sink (Sink) needs from a file format. The formats live in packages of
// their own (connector/format/csv, .../jsonl, .../parquet), so that a job
// links only the format libraries it uses.
type Encoding[T any] interface {
	// Extension is the suffix of the part files, with its dot: ".csv".
	Extension() string
	// Bulk reports a format that can only write a file in one go (a
	// Parquet footer describes the whole file): its part files roll on
	// every checkpoint and are never resumed after a failure. Row formats
	// (CSV, JSON lines) can keep a part file open across checkpoints.
	Bulk() bool
	// NewEncoder starts a new file that the encoder writes to w.
	NewEncoder(w io.Writer) (Encoder[T], error)
}

// Encoder writes the records of one part file. Its methods are called from
// one goroutine.
type Encoder[T any] interface {
	// Encode adds a record. It may buffer.
	Encode(v T) error
	// Flush writes everything buffered to the writer, so that the bytes
	// the writer got so far form a valid file prefix that ends after the
	// last record. For a bulk format it may end a row group.
	Flush() error
	// Close completes the file (a footer, say) and writes out the rest;
	// it does not close the writer.
	Close() error
}

// BufferedSizer is implemented by encoders that hold much data in memory
// before they write it (Parquet buffers a whole row group): Buffered is an
// estimate of those bytes, which rolling on size adds to the bytes already
// written.
type BufferedSizer interface {
	Buffered() int64
}

// Decoding reads records of type T from files: it is what the format
// source (Source) needs from a file format.
type Decoding[T any] interface {
	// NewDecoder starts reading a file at pos: 0, the start, or a value
	// Pos returned for the same file, to resume after a checkpoint.
	NewDecoder(in Input, pos int64) (Decoder[T], error)
}

// Input is a file to decode.
type Input struct {
	// R reads the file's bytes; formats that read sequentially wrap it in
	// an io.SectionReader.
	R io.ReaderAt
	// Size is the file's length in bytes.
	Size int64
	// Path names the file in error messages.
	Path string
}

// Decoder reads the records of one file. Its methods are called from one
// goroutine.
type Decoder[T any] interface {
	// Next returns the next record, or io.EOF after the last one. Any
	// other error says where in the file it is (a byte offset, a line, a
	// row); the caller adds the file's path.
	Next() (T, error)
	// Pos is the position after the record Next returned last: a decoder
	// started there continues with the record after it. The meaning is
	// the format's own (a byte offset, a row number), but it grows with
	// every record.
	Pos() int64
	// Close releases the decoder; it does not close Input.R.
	Close() error
}
