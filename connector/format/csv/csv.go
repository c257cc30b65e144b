// Package csv is the CSV format of the file connector (RFC 4180, through
// encoding/csv).
//
// A record type is either []string (the fields as they are) or a struct,
// whose exported fields are the columns, in order. A field's column is
// named by its `csv:"name"` tag or by the field's name; `csv:"-"` leaves
// it out. Supported field types are strings, booleans, integers, floats,
// time.Time (RFC 3339 with nanoseconds), []byte (base64), types that
// implement encoding.TextMarshaler and TextUnmarshaler, and pointers to
// them, which are nullable. A nested struct (or a pointer to one) adds its
// columns under "parent.child" names; slices, maps and arrays are written
// as JSON text in one column.
//
// Null is the NullLiteral, by default the empty field: so a nil *string
// and a pointer to "" are the same in a file unless NullLiteral is set
// (to `\N`, say, as MySQL and Hive write it).
package csv

import (
	"encoding"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"

	"github.com/weirproject/weir/connector/file"
)

// Format reads and writes records of type T as CSV. The zero value
// writes and expects a header row and uses ',' between fields.
type Format[T any] struct {
	// Comma separates fields (default ',').
	Comma rune
	// NullLiteral is the text of a null (default "").
	NullLiteral string
	// NoHeader: files have no header row, columns are matched by position.
	// With a header, columns are matched by name: a header column that T
	// lacks is ignored, a column of T that the header lacks stays zero.
	NoHeader bool
	// Header is the header row written for []string records, which do
	// not name their columns; it must be set unless NoHeader is.
	Header []string
}

var (
	_ file.Encoding[[]string] = Format[[]string]{}
	_ file.Decoding[[]string] = Format[[]string]{}
)

// Extension is ".csv".
func (Format[T]) Extension() string { return ".csv" }

// Bulk is false: a CSV file can be cut after any record.
func (Format[T]) Bulk() bool { return false }

func (f Format[T]) comma() rune {
	if f.Comma == 0 {
		return ','
	}
	return f.Comma
}

// NewEncoder returns an encoder that writes the header row, unless
// NoHeader, and then a row per record.
func (f Format[T]) NewEncoder(w io.Writer) (file.Encoder[T], error) {
	p, err := planFor[T]()
	if err != nil {
		return nil, err
	}
	cw := csv.NewWriter(w)
	cw.Comma = f.comma()
	e := &encoder[T]{f: f, p: p, w: cw}
	if !f.NoHeader {
		header := f.Header
		if p.cols != nil {
			header = p.names()
		} else if len(header) == 0 {
			return nil, errors.New("csv: []string records need a Header to write, or NoHeader")
		}
		if err := cw.Write(header); err != nil {
			return nil, err
		}
	}
	return e, nil
}

type encoder[T any] struct {
	f   Format[T]
	p   *plan
	w   *csv.Writer
	row []string
}

func (e *encoder[T]) Encode(v T) error {
	if e.p.cols == nil {
		return e.w.Write(any(v).([]string))
	}
	e.row = e.row[:0]
	rv := reflect.ValueOf(&v).Elem()
	for _, c := range e.p.cols {
		fv, ok := c.get(rv)
		if !ok {
			e.row = append(e.row, e.f.NullLiteral)
			continue
		}
		s, err := format(fv, e.f.NullLiteral)
		if err != nil {
			return fmt.Errorf("column %q: %w", c.name, err)
		}
		e.row = append(e.row, s)
	}
	return e.w.Write(e.row)
}

func (e *encoder[T]) Flush() error {
	e.w.Flush()
	return e.w.Error()
}

func (e *encoder[T]) Close() error { return e.Flush() }

// NewDecoder reads records from byte offset pos on; with a header, it
// reads the header row at the start of the file first.
func (f Format[T]) NewDecoder(in file.Input, pos int64) (file.Decoder[T], error) {
	p, err := planFor[T]()
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos > in.Size {
		return nil, fmt.Errorf("csv: position %d outside the file's %d bytes", pos, in.Size)
	}
	d := &decoder[T]{f: f, p: p, base: pos}
	// fieldOf maps a field of the file to a column of T (-1: ignored).
	if p.cols != nil {
		d.fieldOf = make([]int, len(p.cols))
		for i := range d.fieldOf {
			d.fieldOf[i] = i
		}
	}
	if !f.NoHeader {
		hr := d.reader(io.NewSectionReader(in.R, 0, in.Size))
		header, err := hr.Read()
		if err == io.EOF {
			return nil, errors.New("csv: the file has no header row")
		}
		if err != nil {
			return nil, fmt.Errorf("csv: header row: %w", err)
		}
		if pos == 0 {
			pos = hr.InputOffset()
			d.base = pos
		}
		if p.cols != nil {
			if d.fieldOf, err = p.match(header); err != nil {
				return nil, err
			}
		}
	}
	d.r = d.reader(io.NewSectionReader(in.R, pos, in.Size-pos))
	if p.cols != nil {
		d.r.FieldsPerRecord = len(d.fieldOf)
	}
	return d, nil
}

type decoder[T any] struct {
	f       Format[T]
	p       *plan
	r       *csv.Reader
	base    int64 // file offset of r's start
	fieldOf []int
}

func (d *decoder[T]) reader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.Comma = d.f.comma()
	cr.ReuseRecord = d.p.cols != nil
	return cr
}

func (d *decoder[T]) Next() (T, error) {
	var v T
	at := d.Pos()
	rec, err := d.r.Read()
	if err == io.EOF {
		return v, io.EOF
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return v, fmt.Errorf("record at byte offset %d: %w", at, pe.Err)
		}
		return v, fmt.Errorf("record at byte offset %d: %w", at, err)
	}
	if d.p.cols == nil {
		return any(rec).(T), nil
	}
	rv := reflect.ValueOf(&v).Elem()
	for i, s := range rec {
		ci := d.fieldOf[i]
		if ci < 0 || s == d.f.NullLiteral && d.p.cols[ci].nullable {
			continue
		}
		c := d.p.cols[ci]
		if err := parse(c.set(rv), s); err != nil {
			return v, fmt.Errorf("record at byte offset %d, column %q: %w", at, c.name, err)
		}
	}
	return v, nil
}

func (d *decoder[T]) Pos() int64   { return d.base + d.r.InputOffset() }
func (d *decoder[T]) Close() error { return nil }

// plan is how a struct type maps to columns; nil cols: T is []string.
type plan struct{ cols []column }

// column is one leaf field, reached from the record through path: field
// indices, each possibly through a pointer.
type column struct {
	name     string
	path     []int
	nullable bool // the leaf or a struct on the way is a pointer
}

func (p *plan) names() []string {
	out := make([]string, len(p.cols))
	for i, c := range p.cols {
		out[i] = c.name
	}
	return out
}

func (p *plan) match(header []string) ([]int, error) {
	byName := make(map[string]int, len(p.cols))
	for i, c := range p.cols {
		byName[c.name] = i
	}
	out := make([]int, len(header))
	seen := make(map[string]bool, len(header))
	for i, h := range header {
		if seen[h] {
			return nil, fmt.Errorf("csv: header row names column %q twice", h)
		}
		seen[h] = true
		if ci, ok := byName[h]; ok {
			out[i] = ci
		} else {
			out[i] = -1
		}
	}
	return out, nil
}

// get follows the column's path; ok is false at a nil pointer (null).
func (c *column) get(v reflect.Value) (reflect.Value, bool) {
	for _, i := range c.path {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return v, false
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return v, false
		}
		v = v.Elem()
	}
	return v, true
}

// set follows the column's path, allocating pointers on the way, and
// returns the settable leaf (not a pointer).
func (c *column) set(v reflect.Value) reflect.Value {
	for _, i := range c.path {
		v = deref(v)
		v = v.Field(i)
	}
	return deref(v)
}

func deref(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	return v
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	textMarshaler     = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerPt = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func planFor[T any]() (*plan, error) {
	t := reflect.TypeFor[T]()
	if t == reflect.TypeFor[[]string]() {
		return &plan{}, nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("csv: record type %v is not a struct or []string", t)
	}
	p := &plan{}
	if err := p.add(t, "", nil, false, 0); err != nil {
		return nil, err
	}
	if len(p.cols) == 0 {
		return nil, fmt.Errorf("csv: record type %v has no exported fields", t)
	}
	return p, nil
}

func (p *plan) add(t reflect.Type, prefix string, path []int, nullable bool, depth int) error {
	if depth > 16 {
		return fmt.Errorf("csv: %v nests too deeply (a recursive type?)", t)
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("csv"); ok {
			if tag == "-" {
				continue
			}
			if tag != "" {
				name = tag
			}
		}
		name = prefix + name
		fpath := append(append([]int(nil), path...), i)
		ft, fnull := f.Type, nullable
		if ft.Kind() == reflect.Pointer {
			ft, fnull = ft.Elem(), true
		}
		if ft.Kind() == reflect.Struct && ft != timeType && !isText(ft) {
			if err := p.add(ft, name+".", fpath, fnull, depth+1); err != nil {
				return err
			}
			continue
		}
		if !supported(ft) {
			return fmt.Errorf("csv: field %s of type %v is not supported", name, f.Type)
		}
		// A nil slice or map is a null too.
		fnull = fnull || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map
		p.cols = append(p.cols, column{name: name, path: fpath, nullable: fnull})
	}
	return nil
}

func isText(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(textUnmarshalerPt) && (t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler))
}

func supported(t reflect.Type) bool {
	if t == timeType || isText(t) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64,
		reflect.Slice, reflect.Map, reflect.Array:
		return true
	}
	return false
}

// format renders a non-null leaf value.
func format(v reflect.Value, null string) (string, error) {
	t := v.Type()
	switch {
	case t == timeType:
		return v.Interface().(time.Time).Format(time.RFC3339Nano), nil
	case isText(t):
		var m encoding.TextMarshaler
		if t.Implements(textMarshaler) {
			m = v.Interface().(encoding.TextMarshaler)
		} else {
			pv := reflect.New(t)
			pv.Elem().Set(v)
			m = pv.Interface().(encoding.TextMarshaler)
		}
		b, err := m.MarshalText()
		return string(b), err
	}
	switch t.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 32), nil
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if v.IsNil() {
				return null, nil
			}
			return base64.StdEncoding.EncodeToString(v.Bytes()), nil
		}
		if v.IsNil() {
			return null, nil
		}
	case reflect.Map:
		if v.IsNil() {
			return null, nil
		}
	}
	b, err := json.Marshal(v.Interface())
	return string(b), err
}

// parse sets a leaf from its text.
func parse(v reflect.Value, s string) error {
	t := v.Type()
	switch {
	case t == timeType:
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(tm))
		return nil
	case isText(t):
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
		return nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not a boolean", s)
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return fmt.Errorf("%q is not an integer of %d bits", s, t.Bits())
		}
		v.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return fmt.Errorf("%q is not an unsigned integer of %d bits", s, t.Bits())
		}
		v.SetUint(n)
		return nil
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, t.Bits())
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(n)
		return nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return fmt.Errorf("%q is not base64", s)
			}
			v.SetBytes(b)
			return nil
		}
	}
	return json.Unmarshal([]byte(s), v.Addr().Interface())
}
