// Package jsonl is the JSON lines format of the file connector: one JSON
// value per line, encoded and decoded with encoding/json, so that a
// record type's json tags, pointers (null), nested structs, slices and
// maps work as they do there.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/weirproject/weir/connector/file"
)

// Format reads and writes records of type T as JSON lines. The zero value
// is ready to use.
type Format[T any] struct {
	// DisallowUnknownFields makes a line with a field that T lacks an
	// error, instead of ignoring the field.
	DisallowUnknownFields bool
}

var (
	_ file.Encoding[int] = Format[int]{}
	_ file.Decoding[int] = Format[int]{}
)

// Extension is ".jsonl".
func (Format[T]) Extension() string { return ".jsonl" }

// Bulk is false: a JSON lines file can be cut after any line.
func (Format[T]) Bulk() bool { return false }

// NewEncoder returns an encoder that writes a line per record. HTML
// characters are not escaped: the files are data, not web pages.
func (Format[T]) NewEncoder(w io.Writer) (file.Encoder[T], error) {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	return &encoder[T]{e: e}, nil
}

type encoder[T any] struct{ e *json.Encoder }

// Encode writes the record and its "\n" to the writer at once.
func (e *encoder[T]) Encode(v T) error { return e.e.Encode(v) }
func (e *encoder[T]) Flush() error     { return nil }
func (e *encoder[T]) Close() error     { return nil }

// NewDecoder reads the lines from byte offset pos on. Blank lines are
// skipped; a last line without "\n" is read.
func (f Format[T]) NewDecoder(in file.Input, pos int64) (file.Decoder[T], error) {
	if pos < 0 || pos > in.Size {
		return nil, fmt.Errorf("jsonl: position %d outside the file's %d bytes", pos, in.Size)
	}
	return &decoder[T]{
		br:     bufio.NewReaderSize(io.NewSectionReader(in.R, pos, in.Size-pos), 64<<10),
		pos:    pos,
		strict: f.DisallowUnknownFields,
	}, nil
}

type decoder[T any] struct {
	br     *bufio.Reader
	pos    int64 // offset of the next line
	line   []byte
	strict bool
}

func (d *decoder[T]) Next() (T, error) {
	var zero T
	for {
		start := d.pos
		d.line = d.line[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = d.br.ReadSlice('\n')
			d.line = append(d.line, chunk...)
			d.pos += int64(len(chunk))
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return zero, fmt.Errorf("read at byte offset %d: %w", d.pos, err)
		}
		if len(bytes.TrimSpace(d.line)) == 0 {
			if err == io.EOF {
				return zero, io.EOF
			}
			continue
		}
		var v T
		dec := json.NewDecoder(bytes.NewReader(d.line))
		if d.strict {
			dec.DisallowUnknownFields()
		}
		if derr := dec.Decode(&v); derr != nil {
			return zero, fmt.Errorf("line at byte offset %d: %w", start, derr)
		}
		if dec.More() {
			return zero, fmt.Errorf("line at byte offset %d: more than one JSON value", start)
		}
		return v, nil
	}
}

func (d *decoder[T]) Pos() int64   { return d.pos }
func (d *decoder[T]) Close() error { return nil }
