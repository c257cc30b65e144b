package kafka

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
)

// rowFormat encodes some columns of a row as the bytes of a Kafka key or
// value, and decodes them back, as Flink's json, csv and raw formats do.
type rowFormat struct {
	kind  string // json, csv, raw
	pos   []int  // positions of the columns in the rows it encodes
	out   []int  // positions of the columns in the rows it decodes into
	names []string
	types []types.DataType
	// ignoreErrors skips records that do not parse instead of failing.
	ignoreErrors bool
	delim        rune
	nullLiteral  string
	hasNull      bool
	littleEndian bool
}

// formatOptions are the options of a format, by format name; a key or
// value format reads them with the key. or value. prefix too.
var formatOptions = map[string][]string{
	"json": {"json.ignore-parse-errors", "json.fail-on-missing-field", "json.timestamp-format.standard", "json.encode.decimal-as-plain-number"},
	"csv":  {"csv.field-delimiter", "csv.ignore-parse-errors", "csv.null-literal"},
	"raw":  {"raw.endianness", "raw.charset"},
}

// newFormat makes the format named by option key (format, key.format or
// value.format) for the given columns. prefix is "" for format, "key." or
// "value." for the others, under which the format's own options may also
// be given.
func newFormat(c *planner.TableContext, key, prefix string, names []string, ts []types.DataType) (*rowFormat, error) {
	name, _ := c.Option(key)
	f := &rowFormat{kind: name, names: names, types: ts, delim: ','}
	opt := func(o string) (string, bool) {
		if prefix != "" {
			if v, ok := c.Option(prefix + o); ok {
				return v, true
			}
		}
		return c.Option(o)
	}
	switch name {
	case "json":
		f.ignoreErrors = isTrue(opt("json.ignore-parse-errors"))
		if v, ok := opt("json.timestamp-format.standard"); ok && !strings.EqualFold(v, "SQL") {
			return nil, c.OptionError(prefix+"json.timestamp-format.standard", "%q is not supported (SQL)", v)
		}
	case "csv":
		f.ignoreErrors = isTrue(opt("csv.ignore-parse-errors"))
		if d, ok := opt("csv.field-delimiter"); ok {
			r := []rune(d)
			if d == `\t` {
				r = []rune{'\t'}
			}
			if len(r) != 1 {
				return nil, c.OptionError(prefix+"csv.field-delimiter", "%q is not a single character", d)
			}
			f.delim = r[0]
		}
		f.nullLiteral, f.hasNull = opt("csv.null-literal")
	case "raw":
		if len(names) != 1 {
			return nil, c.OptionError(key, "the raw format takes exactly one column, not %d (%s)", len(names), strings.Join(names, ", "))
		}
		switch ts[0].Kind {
		case types.KindChar, types.KindVarChar, types.KindBinary, types.KindVarBinary, types.KindBoolean,
			types.KindTinyInt, types.KindSmallInt, types.KindInt, types.KindBigInt, types.KindFloat, types.KindDouble:
		default:
			return nil, c.OptionError(key, "the raw format cannot hold column %s of type %s", names[0], ts[0])
		}
		if v, ok := opt("raw.endianness"); ok {
			switch v {
			case "big-endian":
			case "little-endian":
				f.littleEndian = true
			default:
				return nil, c.OptionError(prefix+"raw.endianness", "%q is not big-endian or little-endian", v)
			}
		}
		if v, ok := opt("raw.charset"); ok && !strings.EqualFold(v, "UTF-8") {
			return nil, c.OptionError(prefix+"raw.charset", "%q is not supported (UTF-8)", v)
		}
	case "":
		return nil, c.OptionError(key, "missing: the format of the records (json, csv or raw)")
	default:
		return nil, c.OptionError(key, "%q is not supported (json, csv, raw)", name)
	}
	return f, nil
}

func isTrue(v string, ok bool) bool { return ok && strings.EqualFold(v, "true") }

// encode writes the format's columns of row; a row whose columns are all
// NULL in the raw format is a null value.
func (f *rowFormat) encode(row types.Row) ([]byte, error) {
	switch f.kind {
	case "json":
		var b bytes.Buffer
		b.WriteByte('{')
		for i, p := range f.pos {
			if i > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(f.names[i])
			b.Write(name)
			b.WriteByte(':')
			v, err := json.Marshal(toJSON(row[p], f.types[i]))
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.names[i], err)
			}
			b.Write(v)
		}
		b.WriteByte('}')
		return b.Bytes(), nil
	case "csv":
		rec := make([]string, len(f.pos))
		for i, p := range f.pos {
			if row[p] == nil {
				rec[i] = f.nullLiteral
				continue
			}
			if f.types[i].Kind.IsConstructed() {
				// Nested values are JSON text in one field.
				b, err := json.Marshal(toJSON(row[p], f.types[i]))
				if err != nil {
					return nil, fmt.Errorf("column %s: %w", f.names[i], err)
				}
				rec[i] = string(b)
				continue
			}
			rec[i] = toText(row[p], f.types[i])
		}
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		w.Comma = f.delim
		if err := w.Write(rec); err != nil {
			return nil, err
		}
		w.Flush()
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), w.Error()
	}
	return f.encodeRaw(row[f.pos[0]]), nil
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func (f *rowFormat) order() byteOrder {
	if f.littleEndian {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

func (f *rowFormat) encodeRaw(v any) []byte {
	if v == nil {
		return nil
	}
	o := f.order()
	switch v := v.(type) {
	case string:
		return []byte(v)
	case []byte:
		return v
	case bool:
		if v {
			return []byte{1}
		}
		return []byte{0}
	case int8:
		return []byte{byte(v)}
	case int16:
		return o.AppendUint16(nil, uint16(v))
	case int32:
		return o.AppendUint32(nil, uint32(v))
	case int64:
		return o.AppendUint64(nil, uint64(v))
	case float32:
		return o.AppendUint32(nil, math.Float32bits(v))
	case float64:
		return o.AppendUint64(nil, math.Float64bits(v))
	}
	return nil
}

// decode reads the format's columns from b into row. A nil b (a
// tombstone) leaves them NULL.
func (f *rowFormat) decode(b []byte, row types.Row) error {
	if b == nil {
		return nil
	}
	switch f.kind {
	case "json":
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return fmt.Errorf("not a JSON object: %w", err)
		}
		for i, name := range f.names {
			v, err := fromJSON(obj[name], f.types[i])
			if err != nil {
				return fmt.Errorf("field %s: %w", name, err)
			}
			row[f.out[i]] = v
		}
		return nil
	case "csv":
		r := csv.NewReader(bytes.NewReader(b))
		r.Comma = f.delim
		r.FieldsPerRecord = -1
		r.LazyQuotes = true
		vals, err := r.Read()
		if err != nil {
			return err
		}
		if len(vals) != len(f.names) {
			return fmt.Errorf("%d fields, want %d (%s)", len(vals), len(f.names), strings.Join(f.names, ", "))
		}
		for i, s := range vals {
			t := f.types[i]
			if f.hasNull && s == f.nullLiteral || s == "" && !t.Kind.IsCharacterString() && !t.Kind.IsBinaryString() {
				row[f.out[i]] = nil
				continue
			}
			var v any
			var err error
			if t.Kind.IsConstructed() {
				dec := json.NewDecoder(strings.NewReader(s))
				dec.UseNumber()
				var raw any
				if err = dec.Decode(&raw); err == nil {
					v, err = fromJSON(raw, t)
				}
			} else {
				v, err = fromText(s, t)
			}
			if err != nil {
				return fmt.Errorf("column %s: %w", f.names[i], err)
			}
			row[f.out[i]] = v
		}
		return nil
	}
	v, err := f.decodeRaw(b, f.types[0])
	if err != nil {
		return fmt.Errorf("column %s: %w", f.names[0], err)
	}
	row[f.out[0]] = v
	return nil
}

func (f *rowFormat) decodeRaw(b []byte, t types.DataType) (any, error) {
	o := f.order()
	need := map[types.Kind]int{types.KindBoolean: 1, types.KindTinyInt: 1, types.KindSmallInt: 2, types.KindInt: 4,
		types.KindBigInt: 8, types.KindFloat: 4, types.KindDouble: 8}[t.Kind]
	if need > 0 && len(b) != need {
		return nil, fmt.Errorf("%d bytes for a raw %s, want %d", len(b), t, need)
	}
	switch t.Kind {
	case types.KindChar, types.KindVarChar:
		return string(b), nil
	case types.KindBinary, types.KindVarBinary:
		return slices.Clone(b), nil
	case types.KindBoolean:
		return b[0] != 0, nil
	case types.KindTinyInt:
		return int8(b[0]), nil
	case types.KindSmallInt:
		return int16(o.Uint16(b)), nil
	case types.KindInt:
		return int32(o.Uint32(b)), nil
	case types.KindBigInt:
		return int64(o.Uint64(b)), nil
	case types.KindFloat:
		return math.Float32frombits(o.Uint32(b)), nil
	case types.KindDouble:
		return math.Float64frombits(o.Uint64(b)), nil
	}
	return nil, fmt.Errorf("the raw format cannot hold %s", t)
}

// toText writes a value as Flink's csv and json formats write it:
// timestamps in SQL form (TIMESTAMP_LTZ in UTC with a Z), bytes in
// base64, booleans in lower case.
func toText(v any, t types.DataType) string {
	switch t.Kind {
	case types.KindBoolean:
		return strconv.FormatBool(v.(bool))
	case types.KindBinary, types.KindVarBinary:
		return base64.StdEncoding.EncodeToString(v.([]byte))
	case types.KindTimestampLTZ:
		return string(types.AppendTimestamp(nil, v.(types.TimestampLTZ).ToTimestamp(time.UTC), t.Precision)) + "Z"
	case types.KindFloat, types.KindDouble:
		f := asFloat(v)
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		case t.Kind == types.KindFloat:
			return strconv.FormatFloat(f, 'g', -1, 32)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return types.FormatIn(v, t, time.UTC)
}

func asFloat(v any) float64 {
	if f, ok := v.(float32); ok {
		return float64(f)
	}
	return v.(float64)
}

// fromText reads what toText writes.
func fromText(s string, t types.DataType) (any, error) {
	switch t.Kind {
	case types.KindBinary, types.KindVarBinary:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not base64", truncate(s))
		}
		return types.CastIn(b, types.Bytes(), t, time.UTC)
	case types.KindTimestampLTZ:
		ts, err := types.ParseTimestamp(strings.TrimSuffix(strings.TrimSpace(s), "Z"), t.Precision)
		if err != nil {
			return nil, err
		}
		return ts.ToLTZ(time.UTC), nil
	case types.KindFloat, types.KindDouble:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", truncate(s))
		}
		if t.Kind == types.KindFloat {
			return float32(f), nil
		}
		return f, nil
	}
	return types.CastIn(s, types.String(), t, time.UTC)
}

func truncate(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// toJSON is the JSON value of a SQL value: numbers as numbers (DECIMAL
// exactly as written), everything else as toText writes it, nested types
// as arrays and objects.
func toJSON(v any, t types.DataType) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case types.KindBoolean:
		return v
	case types.KindTinyInt, types.KindSmallInt, types.KindInt, types.KindBigInt, types.KindDecimal:
		return json.RawMessage(types.FormatIn(v, t, time.UTC))
	case types.KindFloat, types.KindDouble:
		if f := asFloat(v); math.IsInf(f, 0) || math.IsNaN(f) {
			return toText(v, t)
		}
		return json.RawMessage(toText(v, t))
	case types.KindArray, types.KindMultiset:
		if t.Kind == types.KindMultiset {
			break
		}
		arr := v.([]any)
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = toJSON(e, t.ElemType())
		}
		return out
	case types.KindMap:
		m := v.(*types.Map)
		out := make(map[string]any, m.Len())
		for i, k := range m.Keys {
			out[toText(k, t.KeyType())] = toJSON(m.Values[i], t.ValueType())
		}
		return out
	case types.KindRow:
		r := v.(types.Row)
		out := make(map[string]any, len(r))
		for i, f := range t.Fields {
			out[f.Name] = toJSON(r[i], f.Type)
		}
		return out
	}
	return toText(v, t)
}

var errType = errors.New("type mismatch")

// fromJSON reads what toJSON writes, and numbers and booleans given as
// strings.
func fromJSON(raw any, t types.DataType) (any, error) {
	switch x := raw.(type) {
	case nil:
		return nil, nil
	case json.Number:
		return fromText(x.String(), t)
	case string:
		return fromText(x, t)
	case bool:
		return types.CastIn(x, types.Boolean(), t, time.UTC)
	case []any:
		if t.Kind != types.KindArray {
			return nil, fmt.Errorf("%w: an array for type %s", errType, t)
		}
		out := make([]any, len(x))
		for i, e := range x {
			v, err := fromJSON(e, t.ElemType())
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case map[string]any:
		switch t.Kind {
		case types.KindRow:
			out := make(types.Row, len(t.Fields))
			for i, f := range t.Fields {
				v, err := fromJSON(x[f.Name], f.Type)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		case types.KindMap:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			m := &types.Map{}
			for _, k := range keys {
				kv, err := fromText(k, t.KeyType())
				if err != nil {
					return nil, err
				}
				vv, err := fromJSON(x[k], t.ValueType())
				if err != nil {
					return nil, err
				}
				m.Keys, m.Values = append(m.Keys, kv), append(m.Values, vv)
			}
			return m, nil
		}
		return nil, fmt.Errorf("%w: an object for type %s", errType, t)
	}
	return nil, fmt.Errorf("unexpected JSON value %v", raw)
}
