package planner

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/types"
)

// 'format' = 'parquet' of the filesystem connector. Rows are written with
// a schema derived from the table's columns, as Flink's parquet format
// maps them:
//
//	BOOLEAN boolean; TINYINT INT32 INT(8); SMALLINT INT32 INT(16); INT INT32
//	BIGINT INT64; FLOAT float; DOUBLE double
//	CHAR/VARCHAR/STRING BYTE_ARRAY STRING; BINARY/VARBINARY/BYTES BYTE_ARRAY
//	DECIMAL(p, s) DECIMAL(p, s) over INT64 (p <= 18) or FIXED_LEN_BYTE_ARRAY(16)
//	DATE INT32 DATE; TIME INT32 TIME(MILLIS)
//	TIMESTAMP(p) INT64 TIMESTAMP(MICROS or NANOS for p > 6, not adjusted to UTC)
//	TIMESTAMP_LTZ(p) INT64 TIMESTAMP(MICROS or NANOS, adjusted to UTC)
//	ROW<...> a group; ARRAY<scalar> a 3-level LIST
//
// Nullable columns are optional, NOT NULL ones required. Reading goes by
// column name in the file's schema (a column the file lacks is NULL), and
// also takes INT96 and millisecond timestamps, INT32, INT64, fixed-length
// and variable-length decimals, as other writers (Flink, Spark, Hive)
// produce them. MAP, MULTISET, ARRAY of ARRAY, ROW or MAP, and intervals
// are refused with an error that names the column.

// parquetFormat reads and writes the data columns of a table.
type parquetFormat struct {
	cols   []*pqCol // one per data column, in order
	schema *pq.Schema
	opts   []pq.WriterOption
	leaves int
	width  int // columns of the table's rows
	pos    []int
}

// pqCol is a column (or a field, or an element) in the written schema.
type pqCol struct {
	name     string
	t        types.DataType
	optional bool
	leaf     int      // scalars: the column index in the written schema
	fields   []*pqCol // ROW
	elem     *pqCol   // ARRAY
	leafIdx  []int    // every leaf below, in order
	repLevel int      // the repetition level of an ARRAY's elements
	node     pq.Node  // the schema node
	path     []string // from the root
}

func newParquetFormat(t *catalog.Table, data []int) (*parquetFormat, error) {
	f := &parquetFormat{width: len(t.Columns), pos: data}
	group := pq.Group{}
	for _, i := range data {
		c := t.Columns[i]
		pc, err := pqColumn(c.Name, c.Type, []string{c.Name}, 0)
		if err != nil {
			return nil, fmt.Errorf("table %s: 'format' = 'parquet': column %s: %w", t.Path, c.Name, err)
		}
		group[c.Name] = pc.node
		f.cols = append(f.cols, pc)
	}
	f.schema = pq.NewSchema("weir", group)
	// Leaves are numbered in the schema's order (a group sorts its fields
	// by name).
	for _, pc := range f.cols {
		if err := f.number(pc); err != nil {
			return nil, fmt.Errorf("table %s: 'format' = 'parquet': %w", t.Path, err)
		}
	}
	codec := compress.Codec(&pq.Snappy)
	switch c := strings.ToLower(t.Options["parquet.compression"]); c {
	case "", "snappy":
	case "none", "uncompressed":
		codec = &pq.Uncompressed
	case "gzip":
		codec = &pq.Gzip
	case "zstd":
		codec = &pq.Zstd
	default:
		return nil, optionError(t, "parquet.compression", "%q is not supported (snappy, gzip, zstd, uncompressed)", c)
	}
	f.opts = []pq.WriterOption{f.schema, pq.Compression(codec)}
	return f, nil
}

// pqColumn maps a SQL type to a schema node; rep is the number of
// repeated nodes above.
func pqColumn(name string, t types.DataType, path []string, rep int) (*pqCol, error) {
	pc := &pqCol{name: name, t: t, optional: t.IsNullable(), path: path}
	var n pq.Node
	switch t.Kind {
	case types.KindBoolean:
		n = pq.Leaf(pq.BooleanType)
	case types.KindTinyInt:
		n = pq.Int(8)
	case types.KindSmallInt:
		n = pq.Int(16)
	case types.KindInt:
		n = pq.Int(32)
	case types.KindBigInt:
		n = pq.Int(64)
	case types.KindFloat:
		n = pq.Leaf(pq.FloatType)
	case types.KindDouble:
		n = pq.Leaf(pq.DoubleType)
	case types.KindChar, types.KindVarChar:
		n = pq.String()
	case types.KindBinary, types.KindVarBinary:
		n = pq.Leaf(pq.ByteArrayType)
	case types.KindDecimal:
		if t.Precision <= 18 {
			n = pq.Decimal(t.Scale, t.Precision, pq.Int64Type)
		} else {
			n = pq.Decimal(t.Scale, t.Precision, pq.FixedLenByteArrayType(16))
		}
	case types.KindDate:
		n = pq.Date()
	case types.KindTime:
		n = pq.Time(pq.Millisecond)
	case types.KindTimestamp, types.KindTimestampLTZ:
		unit := pq.TimeUnit(pq.Microsecond)
		if t.Precision > 6 {
			unit = pq.Nanosecond
		}
		n = pq.TimestampAdjusted(unit, t.Kind == types.KindTimestampLTZ)
	case types.KindRow:
		g := pq.Group{}
		for _, fl := range t.Fields {
			fc, err := pqColumn(fl.Name, fl.Type, append(append([]string(nil), path...), fl.Name), rep)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", fl.Name, err)
			}
			g[fl.Name] = fc.node
			pc.fields = append(pc.fields, fc)
		}
		n = g
	case types.KindArray:
		et := t.ElemType()
		switch et.Kind {
		case types.KindArray, types.KindMap, types.KindMultiset, types.KindRow:
			return nil, fmt.Errorf("type %s: ARRAY of %s is not supported by the parquet format yet", t, et.Kind)
		}
		if rep > 0 {
			return nil, fmt.Errorf("type %s: an ARRAY inside an ARRAY is not supported by the parquet format yet", t)
		}
		ec, err := pqColumn("element", et, append(append([]string(nil), path...), "list", "element"), rep+1)
		if err != nil {
			return nil, fmt.Errorf("element: %w", err)
		}
		pc.elem, pc.repLevel = ec, rep+1
		n = pq.List(ec.node)
	default:
		return nil, fmt.Errorf("type %s is not supported by the parquet format", t)
	}
	if pc.optional {
		n = pq.Optional(n)
	} else {
		n = pq.Required(n)
	}
	pc.node = n
	return pc, nil
}

// number finds the column index of every leaf below pc.
func (f *parquetFormat) number(pc *pqCol) error {
	switch {
	case pc.fields != nil:
		for _, fc := range pc.fields {
			if err := f.number(fc); err != nil {
				return err
			}
			pc.leafIdx = append(pc.leafIdx, fc.leafIdx...)
		}
		return nil
	case pc.elem != nil:
		if err := f.number(pc.elem); err != nil {
			return err
		}
		pc.leafIdx = pc.elem.leafIdx
		return nil
	}
	lc, ok := f.schema.Lookup(pc.path...)
	if !ok {
		return fmt.Errorf("column %s: no leaf in the schema", strings.Join(pc.path, "."))
	}
	pc.leaf = lc.ColumnIndex
	pc.leafIdx = []int{lc.ColumnIndex}
	f.leaves = max(f.leaves, lc.ColumnIndex+1)
	return nil
}

func (f *parquetFormat) Extension() string { return ".parquet" }
func (f *parquetFormat) Bulk() bool        { return true }

// NewEncoder writes rows that hold the data columns in order.
func (f *parquetFormat) NewEncoder(w io.Writer) (file.Encoder[types.Record], error) {
	return &pqEncoder{f: f, w: pq.NewWriter(w, f.opts...), cols: make([][]pq.Value, f.leaves)}, nil
}

type pqEncoder struct {
	f    *parquetFormat
	w    *pq.Writer
	cols [][]pq.Value
	rows []pq.Row
}

func (e *pqEncoder) Encode(r types.Record) error {
	for i := range e.cols {
		e.cols[i] = e.cols[i][:0]
	}
	for i, pc := range e.f.cols {
		if err := pc.write(e.cols, r.Row[i], 0, 0); err != nil {
			return fmt.Errorf("column %s: %w", pc.name, err)
		}
	}
	var row pq.Row
	for _, vs := range e.cols {
		row = append(row, vs...)
	}
	e.rows = append(e.rows, row)
	if len(e.rows) >= 128 {
		return e.write()
	}
	return nil
}

func (e *pqEncoder) write() error {
	if len(e.rows) == 0 {
		return nil
	}
	_, err := e.w.WriteRows(e.rows)
	clear(e.rows)
	e.rows = e.rows[:0]
	return err
}

func (e *pqEncoder) Flush() error {
	if err := e.write(); err != nil {
		return err
	}
	return e.w.Flush()
}

func (e *pqEncoder) Close() error {
	if err := e.write(); err != nil {
		return err
	}
	return e.w.Close()
}

// write appends the values of v at repetition level r, with the
// definition level d of the parents that are present.
func (pc *pqCol) write(out [][]pq.Value, v any, r, d int) error {
	if v == nil {
		if !pc.optional {
			return errors.New("NULL in a NOT NULL column")
		}
		for _, l := range pc.leafIdx {
			out[l] = append(out[l], pq.NullValue().Level(r, d, l))
		}
		return nil
	}
	if pc.optional {
		d++
	}
	switch {
	case pc.fields != nil:
		row := v.(types.Row)
		for i, fc := range pc.fields {
			if err := fc.write(out, row[i], r, d); err != nil {
				return err
			}
		}
		return nil
	case pc.elem != nil:
		arr := v.([]any)
		if len(arr) == 0 {
			for _, l := range pc.leafIdx {
				out[l] = append(out[l], pq.NullValue().Level(r, d, l))
			}
			return nil
		}
		for i, e := range arr {
			rr := r
			if i > 0 {
				rr = pc.repLevel
			}
			if err := pc.elem.write(out, e, rr, d+1); err != nil {
				return err
			}
		}
		return nil
	}
	pv, err := toParquet(v, pc.t)
	if err != nil {
		return err
	}
	out[pc.leaf] = append(out[pc.leaf], pv.Level(r, d, pc.leaf))
	return nil
}

func toParquet(v any, t types.DataType) (pq.Value, error) {
	switch x := v.(type) {
	case bool:
		return pq.BooleanValue(x), nil
	case int8:
		return pq.Int32Value(int32(x)), nil
	case int16:
		return pq.Int32Value(int32(x)), nil
	case int32:
		return pq.Int32Value(x), nil
	case int64:
		return pq.Int64Value(x), nil
	case float32:
		return pq.FloatValue(x), nil
	case float64:
		return pq.DoubleValue(x), nil
	case string:
		return pq.ByteArrayValue([]byte(x)), nil
	case []byte:
		return pq.ByteArrayValue(x), nil
	case types.Date:
		return pq.Int32Value(int32(x)), nil
	case types.Time:
		return pq.Int32Value(int32(int64(x) / 1e6)), nil
	case types.Timestamp:
		return pq.Int64Value(timestampUnits(x.Millis, x.NanoOfMilli, t.Precision)), nil
	case types.TimestampLTZ:
		return pq.Int64Value(timestampUnits(x.Millis, x.NanoOfMilli, t.Precision)), nil
	case types.Decimal:
		u := x.Unscaled()
		if s := x.Scale(); s != t.Scale {
			// Values of a DECIMAL(p, s) column have scale s; rescale
			// anything else exactly, or refuse.
			if s > t.Scale {
				return pq.Value{}, fmt.Errorf("decimal %v has scale %d, more than the column's %d", x, s, t.Scale)
			}
			u.Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale-s)), nil))
		}
		if t.Precision <= 18 {
			if !u.IsInt64() {
				return pq.Value{}, fmt.Errorf("decimal %v does not fit DECIMAL(%d, %d)", x, t.Precision, t.Scale)
			}
			return pq.Int64Value(u.Int64()), nil
		}
		b, err := twosComplement(u, 16)
		if err != nil {
			return pq.Value{}, fmt.Errorf("decimal %v: %w", x, err)
		}
		return pq.FixedLenByteArrayValue(b), nil
	}
	return pq.Value{}, fmt.Errorf("value %v (%T) of type %s", v, v, t)
}

// timestampUnits is a timestamp in microseconds, or nanoseconds for a
// precision above 6.
func timestampUnits(millis int64, nanoOfMilli int32, precision int) int64 {
	if precision > 6 {
		return millis*1e6 + int64(nanoOfMilli)
	}
	return millis*1e3 + int64(nanoOfMilli)/1e3
}

// twosComplement is u as a big-endian two's complement of n bytes.
func twosComplement(u *big.Int, n int) ([]byte, error) {
	b := make([]byte, n)
	v := new(big.Int).Set(u)
	if v.Sign() < 0 {
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	if v.Sign() < 0 || v.BitLen() > 8*n {
		return nil, fmt.Errorf("does not fit %d bytes", n)
	}
	v.FillBytes(b)
	return b, nil
}

func fromTwosComplement(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// NewDecoder reads a file's rows by column name, from row pos on.
func (f *parquetFormat) NewDecoder(in file.Input, pos int64) (file.Decoder[types.Record], error) {
	pf, err := pq.OpenFile(in.R, in.Size)
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	if pos < 0 || pos > pf.NumRows() {
		return nil, fmt.Errorf("parquet: row %d outside the file's %d rows", pos, pf.NumRows())
	}
	d := &pqDecoder{f: f, pos: pos}
	for _, pc := range f.cols {
		rc, err := readerColumn(pf.Schema(), pc, []string{pc.name}, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("parquet: column %s: %w", pc.name, err)
		}
		d.cols = append(d.cols, rc)
	}
	d.r = pq.NewReader(pf, pf.Schema())
	if pos > 0 {
		if err := d.r.SeekToRow(pos); err != nil {
			d.r.Close()
			return nil, fmt.Errorf("parquet: seek to row %d: %w", pos, err)
		}
	}
	return d, nil
}

// readCol is a column to read in a file's schema: its definition level
// when present (def), and for leaves the column index and the physical
// and logical types.
type readCol struct {
	t       types.DataType
	missing bool
	def     int // the definition level at which the value is present
	leaf    int
	first   int // the first leaf below, whose level tells a NULL group
	fields  []*readCol
	elem    *readCol
	node    pq.Node
}

// readerColumn finds a column in the file's schema; def and rep count the
// optional and repeated nodes above.
func readerColumn(schema *pq.Schema, pc *pqCol, path []string, def, rep int) (*readCol, error) {
	var node pq.Node = schema
	for _, p := range path {
		var next pq.Node
		for _, fl := range node.Fields() {
			if fl.Name() == p {
				next = fl
			}
		}
		if next == nil {
			return &readCol{t: pc.t, missing: true}, nil
		}
		node = next
	}
	rc := &readCol{t: pc.t, node: node}
	if node.Optional() {
		def++
	}
	if node.Repeated() {
		return nil, errors.New("a repeated field where the table has no ARRAY")
	}
	rc.def = def
	switch {
	case pc.fields != nil:
		if node.Leaf() {
			return nil, fmt.Errorf("a %s, where the table has %s", node.Type(), pc.t)
		}
		rc.first = -1
		for _, fc := range pc.fields {
			c, err := readerColumn(schema, fc, append(append([]string(nil), path...), fc.name), def, rep)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", fc.name, err)
			}
			if rc.first < 0 && !c.missing {
				rc.first = c.first
			}
			rc.fields = append(rc.fields, c)
		}
		if rc.first < 0 {
			rc.missing = true
		}
		return rc, nil
	case pc.elem != nil:
		// The 3-level list: <name> (LIST) { repeated group list { element } }.
		lc, ok := schema.Lookup(append(append([]string(nil), path...), "list", "element")...)
		if !ok || node.Leaf() {
			return nil, errors.New("not a 3-level LIST (<name> { repeated group list { element } })")
		}
		ec := &readCol{t: pc.elem.t, leaf: lc.ColumnIndex, first: lc.ColumnIndex, def: lc.MaxDefinitionLevel, node: lc.Node}
		rc.elem, rc.first = ec, lc.ColumnIndex
		return rc, nil
	}
	if !node.Leaf() {
		return nil, fmt.Errorf("a group, where the table has %s", pc.t)
	}
	lc, ok := schema.Lookup(path...)
	if !ok {
		return nil, errors.New("no such leaf")
	}
	rc.leaf, rc.first = lc.ColumnIndex, lc.ColumnIndex
	return rc, nil
}

type pqDecoder struct {
	f    *parquetFormat
	r    *pq.Reader
	cols []*readCol
	pos  int64
	buf  []pq.Row
	next int
	eof  bool
	// byLeaf holds the current row's values per column index.
	byLeaf [][]pq.Value
}

func (d *pqDecoder) Next() (types.Record, error) {
	if d.next == len(d.buf) {
		if d.eof {
			return types.Record{}, io.EOF
		}
		if d.buf == nil {
			d.buf = make([]pq.Row, 128)
		}
		d.buf = d.buf[:cap(d.buf)]
		n, err := d.r.ReadRows(d.buf)
		d.buf, d.next = d.buf[:n], 0
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			return types.Record{}, fmt.Errorf("row %d: %w", d.pos, err)
		}
		if n == 0 {
			d.eof = true
			return types.Record{}, io.EOF
		}
	}
	row := d.buf[d.next]
	d.next++
	for i := range d.byLeaf {
		d.byLeaf[i] = d.byLeaf[i][:0]
	}
	for _, v := range row {
		c := v.Column()
		for c >= len(d.byLeaf) {
			d.byLeaf = append(d.byLeaf, nil)
		}
		d.byLeaf[c] = append(d.byLeaf[c], v)
	}
	out := make(types.Row, d.f.width)
	for i, rc := range d.cols {
		v, err := rc.read(d.byLeaf)
		if err != nil {
			return types.Record{}, fmt.Errorf("row %d, column %s: %w", d.pos, d.f.cols[i].name, err)
		}
		out[d.f.pos[i]] = v
	}
	d.pos++
	return types.Record{Kind: types.Insert, Row: out}, nil
}

func (d *pqDecoder) Pos() int64   { return d.pos }
func (d *pqDecoder) Close() error { return d.r.Close() }

// read rebuilds a column's value from the row's values by leaf.
func (rc *readCol) read(byLeaf [][]pq.Value) (any, error) {
	if rc.missing {
		return nil, nil
	}
	first := leafValues(byLeaf, rc.first)
	if len(first) == 0 || first[0].DefinitionLevel() < rc.def {
		return nil, nil
	}
	switch {
	case rc.fields != nil:
		row := make(types.Row, len(rc.fields))
		for i, fc := range rc.fields {
			v, err := fc.read(byLeaf)
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		return row, nil
	case rc.elem != nil:
		vals := leafValues(byLeaf, rc.elem.leaf)
		// Present but with no element: an empty array.
		if len(vals) == 1 && vals[0].DefinitionLevel() == rc.def {
			return []any{}, nil
		}
		arr := make([]any, len(vals))
		for i, v := range vals {
			if v.DefinitionLevel() < rc.elem.def || v.IsNull() {
				continue
			}
			x, err := fromParquet(v, rc.elem.node, rc.elem.t)
			if err != nil {
				return nil, err
			}
			arr[i] = x
		}
		return arr, nil
	}
	if first[0].IsNull() {
		return nil, nil
	}
	return fromParquet(first[0], rc.node, rc.t)
}

func leafValues(byLeaf [][]pq.Value, i int) []pq.Value {
	if i < 0 || i >= len(byLeaf) {
		return nil
	}
	return byLeaf[i]
}

// fromParquet converts a leaf's value to the column's type, by the
// file's physical and logical types.
func fromParquet(v pq.Value, node pq.Node, t types.DataType) (any, error) {
	var lt *format.LogicalType
	if node != nil && node.Type() != nil {
		lt = node.Type().LogicalType()
	}
	switch t.Kind {
	case types.KindDecimal:
		scale := t.Scale
		if lt != nil {
			if dt, ok := lt.Value.(*format.DecimalType); ok {
				scale = int(dt.Scale)
			}
		}
		var u *big.Int
		switch v.Kind() {
		case pq.Int32:
			u = big.NewInt(int64(v.Int32()))
		case pq.Int64:
			u = big.NewInt(v.Int64())
		case pq.ByteArray, pq.FixedLenByteArray:
			u = fromTwosComplement(v.ByteArray())
		default:
			return nil, fmt.Errorf("a %s value for %s", v.Kind(), t)
		}
		d := types.DecimalFromBig(u, scale)
		if scale == t.Scale {
			return d, nil
		}
		return types.Cast(d, types.DecimalType(max(t.Precision, d.Precision()), scale), t)
	case types.KindTimestamp, types.KindTimestampLTZ:
		var millis int64
		var nano int32
		switch v.Kind() {
		case pq.Int96:
			i := v.Int96()
			nanosOfDay := int64(uint64(i[1])<<32 | uint64(i[0]))
			days := int64(i[2]) - 2440588
			millis = days*86400000 + nanosOfDay/1e6
			nano = int32(nanosOfDay % 1e6)
		case pq.Int64:
			n := v.Int64()
			unit := "micros"
			if lt != nil {
				if ts, ok := lt.Value.(*format.TimestampType); ok {
					switch ts.Unit.Value.(type) {
					case *format.MilliSeconds:
						unit = "millis"
					case *format.NanoSeconds:
						unit = "nanos"
					}
				}
			}
			switch unit {
			case "millis":
				millis = n
			case "micros":
				millis, nano = floorDivMod(n, 1e3)
				nano *= 1e3
			case "nanos":
				millis, nano = floorDivMod(n, 1e6)
			}
		default:
			return nil, fmt.Errorf("a %s value for %s", v.Kind(), t)
		}
		if t.Kind == types.KindTimestamp {
			return types.Timestamp{Millis: millis, NanoOfMilli: nano}, nil
		}
		return types.TimestampLTZ{Millis: millis, NanoOfMilli: nano}, nil
	case types.KindTime:
		if v.Kind() == pq.Int64 { // TIME(MICROS) or TIME(NANOS)
			n := v.Int64()
			if lt != nil {
				if tt, ok := lt.Value.(*format.TimeType); ok {
					if _, ok := tt.Unit.Value.(*format.NanoSeconds); ok {
						return types.Time(n), nil
					}
				}
			}
			return types.Time(n * 1e3), nil
		}
		return types.Time(int64(v.Int32()) * 1e6), nil
	case types.KindDate:
		return types.Date(v.Int32()), nil
	}
	var x any
	switch v.Kind() {
	case pq.Boolean:
		x = v.Boolean()
	case pq.Int32:
		x = v.Int32()
	case pq.Int64:
		x = v.Int64()
	case pq.Float:
		x = v.Float()
	case pq.Double:
		x = v.Double()
	case pq.ByteArray, pq.FixedLenByteArray:
		b := append([]byte(nil), v.ByteArray()...)
		if t.Kind.IsCharacterString() {
			x = string(b)
		} else {
			return b, nil
		}
	default:
		return nil, fmt.Errorf("a %s value for %s", v.Kind(), t)
	}
	from := types.Boolean()
	switch x.(type) {
	case int32:
		from = types.Int()
	case int64:
		from = types.BigInt()
	case float32:
		from = types.Float()
	case float64:
		from = types.Double()
	case string:
		from = types.String()
	}
	if from.Kind == t.Kind {
		return x, nil
	}
	return types.Cast(x, from, t)
}

func floorDivMod(n, d int64) (int64, int32) {
	q, r := n/d, n%d
	if r < 0 {
		q--
		r += d
	}
	return q, int32(r)
}
