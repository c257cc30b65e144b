// Package parquet is the Apache Parquet format of the file connector,
// through github.com/parquet-go/parquet-go. A record type is a struct
// whose schema parquet-go derives from its fields and `parquet` tags:
// pointers are optional (null) columns, nested structs are groups, slices
// are repeated fields and maps are key-value groups.
//
// Parquet is a bulk format: a file is complete only with its footer, so
// the part-file sink rolls Parquet files on every checkpoint, as Flink
// does, and a checkpoint of the source records a row number.
package parquet

import (
	"fmt"
	"io"

	pq "github.com/parquet-go/parquet-go"

	"github.com/weirproject/weir/connector/file"
)

// Format reads and writes records of type T as Parquet files. The zero
// value writes with parquet-go's defaults (no compression).
type Format[T any] struct {
	// WriterOptions are passed to parquet.NewGenericWriter: a
	// compression codec (parquet.Compression(&parquet.Snappy)), the row
	// group size, and so on.
	WriterOptions []pq.WriterOption
}

var (
	_ file.Encoding[struct{}] = Format[struct{}]{}
	_ file.Decoding[struct{}] = Format[struct{}]{}
)

// Extension is ".parquet".
func (Format[T]) Extension() string { return ".parquet" }

// Bulk is true: a Parquet file ends with a footer that describes it all.
func (Format[T]) Bulk() bool { return true }

// batch is how many records the encoder and the decoder hand to
// parquet-go at once: its per-call costs are high next to one row's.
const batch = 128

// NewEncoder returns an encoder that writes a Parquet file to w.
func (f Format[T]) NewEncoder(w io.Writer) (enc file.Encoder[T], err error) {
	defer func() {
		// parquet-go panics on record types it cannot map.
		if r := recover(); r != nil {
			enc, err = nil, fmt.Errorf("parquet: record type %T: %v", *new(T), r)
		}
	}()
	e := &encoder[T]{cw: countingWriter{w: w}}
	e.w = pq.NewGenericWriter[T](&e.cw, f.WriterOptions...)
	return e, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type encoder[T any] struct {
	w    *pq.GenericWriter[T]
	cw   countingWriter
	rows []T
}

func (e *encoder[T]) Encode(v T) error {
	e.rows = append(e.rows, v)
	if len(e.rows) >= batch {
		return e.write()
	}
	return nil
}

func (e *encoder[T]) write() error {
	if len(e.rows) == 0 {
		return nil
	}
	_, err := e.w.Write(e.rows)
	clear(e.rows)
	e.rows = e.rows[:0]
	return err
}

// Flush ends the current row group.
func (e *encoder[T]) Flush() error {
	if err := e.write(); err != nil {
		return err
	}
	return e.w.Flush()
}

// Close writes the last row group and the footer.
func (e *encoder[T]) Close() error {
	if err := e.write(); err != nil {
		return err
	}
	return e.w.Close()
}

// Buffered estimates the bytes parquet-go holds in memory, for rolling on
// size.
func (e *encoder[T]) Buffered() int64 {
	return max(e.w.Size()-e.cw.n, 0) + int64(len(e.rows))*16
}

// NewDecoder opens the file and starts at row pos.
func (f Format[T]) NewDecoder(in file.Input, pos int64) (dec file.Decoder[T], err error) {
	pf, err := pq.OpenFile(in.R, in.Size)
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	if pos < 0 || pos > pf.NumRows() {
		return nil, fmt.Errorf("parquet: row %d outside the file's %d rows", pos, pf.NumRows())
	}
	defer func() {
		// parquet-go panics when the file's schema does not convert to
		// T's.
		if r := recover(); r != nil {
			dec, err = nil, fmt.Errorf("parquet: read the file as %T: %v", *new(T), r)
		}
	}()
	r := pq.NewGenericReader[T](pf)
	if pos > 0 {
		if err := r.SeekToRow(pos); err != nil {
			r.Close()
			return nil, fmt.Errorf("parquet: seek to row %d: %w", pos, err)
		}
	}
	return &decoder[T]{r: r, pos: pos}, nil
}

type decoder[T any] struct {
	r    *pq.GenericReader[T]
	pos  int64 // row of rows[next]
	rows []T
	next int
	eof  bool
}

func (d *decoder[T]) Next() (T, error) {
	var zero T
	if d.next == len(d.rows) {
		if d.eof {
			return zero, io.EOF
		}
		if d.rows == nil {
			d.rows = make([]T, batch)
		}
		d.rows = d.rows[:cap(d.rows)]
		clear(d.rows)
		n, err := d.r.Read(d.rows)
		d.rows, d.next = d.rows[:n], 0
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			return zero, fmt.Errorf("row %d: %w", d.pos, err)
		}
		if n == 0 {
			d.eof = true
			return zero, io.EOF
		}
	}
	v := d.rows[d.next]
	d.next++
	d.pos++
	return v, nil
}

func (d *decoder[T]) Pos() int64   { return d.pos }
func (d *decoder[T]) Close() error { return d.r.Close() }
