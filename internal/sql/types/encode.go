package types

import (
	"encoding/binary"
	"math"
	"math/big"
)

// The value encoding is compact and not order-preserving (see AppendKey for
// that): integers are zigzag varints, floats little-endian IEEE, strings
// and binary strings length-prefixed, DECIMAL a tag byte then a varint
// (unscaled fits int64) or a length-prefixed magnitude, TIMESTAMP a varint
// of millis and one of nanos. ARRAY, MAP and ROW carry a null bitmap and
// then their non-null members. The encoding depends on the type, which
// both sides know; it carries no type information itself.

// AppendValue appends v (of type t, or nil) with a leading presence byte.
// v must have the Go representation of t (see the package doc); another
// Go type is a programming error and panics.
func AppendValue(buf []byte, t DataType, v any) []byte {
	if v == nil {
		return append(buf, 0)
	}
	buf = append(buf, 1)
	return appendBody(buf, t, v)
}

// DecodeValue decodes one value written by AppendValue and returns the rest
// of b. Malformed input gives an error wrapping ErrCorrupt, never a panic.
func DecodeValue(t DataType, b []byte) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, corrupt("%s: no bytes left", t)
	}
	switch b[0] {
	case 0:
		return nil, b[1:], nil
	case 1:
		return decodeBody(t, b[1:])
	}
	return nil, nil, corrupt("%s: bad presence byte %#x", t, b[0])
}

// AppendRow appends a row of the given field types: a null bitmap, then
// the non-null fields. It is the encoding of rows in state and on the wire.
func AppendRow(buf []byte, fields []DataType, r Row) []byte {
	nb := (len(fields) + 7) / 8
	start := len(buf)
	for i := 0; i < nb; i++ {
		buf = append(buf, 0)
	}
	for i, t := range fields {
		var v any
		if i < len(r) {
			v = r[i]
		}
		if v == nil {
			buf[start+i/8] |= 1 << (i % 8)
			continue
		}
		buf = appendBody(buf, t, v)
	}
	return buf
}

// DecodeRow decodes a row written by AppendRow and returns the rest of b.
func DecodeRow(fields []DataType, b []byte) (Row, []byte, error) {
	nb := (len(fields) + 7) / 8
	if len(b) < nb {
		return nil, nil, corrupt("row of %d fields: null bitmap truncated", len(fields))
	}
	bitmap, rest := b[:nb], b[nb:]
	r := make(Row, len(fields))
	for i, t := range fields {
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		var err error
		if r[i], rest, err = decodeBody(t, rest); err != nil {
			return nil, nil, err
		}
	}
	// Bits past the last field must be zero, so every row has one encoding.
	if extra := len(fields) % 8; extra != 0 && bitmap[nb-1]>>extra != 0 {
		return nil, nil, corrupt("row of %d fields: stray null bits", len(fields))
	}
	return r, rest, nil
}

// AppendRecord appends a record: its row kind byte, then AppendRow.
func AppendRecord(buf []byte, fields []DataType, rec Record) []byte {
	buf = append(buf, byte(rec.Kind))
	return AppendRow(buf, fields, rec.Row)
}

// DecodeRecord decodes a record written by AppendRecord.
func DecodeRecord(fields []DataType, b []byte) (Record, []byte, error) {
	if len(b) == 0 {
		return Record{}, nil, corrupt("record: empty")
	}
	k := RowKind(b[0])
	if k > Delete {
		return Record{}, nil, corrupt("record: bad row kind %d", b[0])
	}
	r, rest, err := DecodeRow(fields, b[1:])
	if err != nil {
		return Record{}, nil, err
	}
	return Record{Kind: k, Row: r}, rest, nil
}

func appendZig(buf []byte, v int64) []byte { return binary.AppendVarint(buf, v) }

func appendBody(buf []byte, t DataType, v any) []byte {
	switch t.Kind {
	case KindBoolean:
		if v.(bool) {
			return append(buf, 1)
		}
		return append(buf, 0)
	case KindTinyInt:
		return append(buf, byte(v.(int8)))
	case KindSmallInt, KindInt, KindBigInt, KindDate, KindIntervalYearMonth, KindIntervalDayTime, KindTime:
		return appendZig(buf, asInt64(v))
	case KindFloat:
		return binary.LittleEndian.AppendUint32(buf, math.Float32bits(v.(float32)))
	case KindDouble:
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(v.(float64)))
	case KindDecimal:
		d := v.(Decimal).Rescale(t.Scale)
		if u, ok := d.UnscaledInt64(); ok {
			buf = append(buf, 0)
			return appendZig(buf, u)
		}
		mag := new(big.Int).Abs(d.big).Bytes()
		if d.big.Sign() < 0 {
			buf = append(buf, 2)
		} else {
			buf = append(buf, 1)
		}
		buf = binary.AppendUvarint(buf, uint64(len(mag)))
		return append(buf, mag...)
	case KindChar, KindVarChar:
		s := v.(string)
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		return append(buf, s...)
	case KindBinary, KindVarBinary:
		s := v.([]byte)
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		return append(buf, s...)
	case KindTimestamp:
		ts := v.(Timestamp)
		buf = appendZig(buf, ts.Millis)
		return binary.AppendUvarint(buf, uint64(ts.NanoOfMilli))
	case KindTimestampLTZ:
		ts := v.(TimestampLTZ)
		buf = appendZig(buf, ts.Millis)
		return binary.AppendUvarint(buf, uint64(ts.NanoOfMilli))
	case KindArray:
		return appendList(buf, t.ElemType(), v.([]any))
	case KindMap, KindMultiset:
		m := v.(*Map)
		kt, vt := mapTypes(t)
		buf = appendList(buf, kt, m.Keys)
		// The values' count equals the keys'; write them without a count.
		return appendMembers(buf, vt, m.Values)
	case KindRow:
		fs := make([]DataType, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = f.Type
		}
		return AppendRow(buf, fs, v.(Row))
	}
	panic(errorf("AppendValue: unsupported type %s", t))
}

func appendList(buf []byte, et DataType, xs []any) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(xs)))
	return appendMembers(buf, et, xs)
}

func appendMembers(buf []byte, et DataType, xs []any) []byte {
	nb := (len(xs) + 7) / 8
	start := len(buf)
	for i := 0; i < nb; i++ {
		buf = append(buf, 0)
	}
	for i, x := range xs {
		if x == nil {
			buf[start+i/8] |= 1 << (i % 8)
			continue
		}
		buf = appendBody(buf, et, x)
	}
	return buf
}

func readZig(t DataType, b []byte) (int64, []byte, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, corrupt("%s: bad varint", t)
	}
	return v, b[n:], nil
}

func readUvarint(t DataType, b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, corrupt("%s: bad varint", t)
	}
	return v, b[n:], nil
}

func decodeBody(t DataType, b []byte) (any, []byte, error) {
	switch t.Kind {
	case KindBoolean:
		if len(b) < 1 || b[0] > 1 {
			return nil, nil, corrupt("BOOLEAN: bad byte")
		}
		return b[0] == 1, b[1:], nil
	case KindTinyInt:
		if len(b) < 1 {
			return nil, nil, corrupt("TINYINT: truncated")
		}
		return int8(b[0]), b[1:], nil
	case KindSmallInt, KindInt, KindBigInt, KindDate, KindIntervalYearMonth, KindIntervalDayTime, KindTime:
		x, rest, err := readZig(t, b)
		if err != nil {
			return nil, nil, err
		}
		lo, hi := intRange(t.Kind)
		switch t.Kind {
		case KindDate, KindIntervalYearMonth:
			lo, hi = math.MinInt32, math.MaxInt32
		case KindTime:
			lo, hi = 0, nanosPerDay-1
		case KindIntervalDayTime:
			lo, hi = math.MinInt64, math.MaxInt64
		}
		if x < lo || x > hi {
			return nil, nil, corrupt("%s: value %d out of range", t, x)
		}
		switch t.Kind {
		case KindSmallInt:
			return int16(x), rest, nil
		case KindInt:
			return int32(x), rest, nil
		case KindDate:
			return Date(x), rest, nil
		case KindIntervalYearMonth:
			return IntervalMonths(x), rest, nil
		case KindIntervalDayTime:
			return IntervalMillis(x), rest, nil
		case KindTime:
			return Time(x), rest, nil
		}
		return x, rest, nil
	case KindFloat:
		if len(b) < 4 {
			return nil, nil, corrupt("FLOAT: truncated")
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), b[4:], nil
	case KindDouble:
		if len(b) < 8 {
			return nil, nil, corrupt("DOUBLE: truncated")
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:], nil
	case KindDecimal:
		if len(b) < 1 {
			return nil, nil, corrupt("%s: truncated", t)
		}
		switch b[0] {
		case 0:
			u, rest, err := readZig(t, b[1:])
			if err != nil {
				return nil, nil, err
			}
			return MakeDecimal(u, t.Scale), rest, nil
		case 1, 2:
			n, rest, err := readUvarint(t, b[1:])
			if err != nil {
				return nil, nil, err
			}
			if n > 17 || n > uint64(len(rest)) {
				return nil, nil, corrupt("%s: bad magnitude length %d", t, n)
			}
			u := new(big.Int).SetBytes(rest[:n])
			if b[0] == 2 {
				u.Neg(u)
			}
			if u.IsInt64() {
				return nil, nil, corrupt("%s: non-canonical big decimal", t)
			}
			return Decimal{big: u, scale: int32(t.Scale)}, rest[n:], nil
		}
		return nil, nil, corrupt("%s: bad tag %d", t, b[0])
	case KindChar, KindVarChar, KindBinary, KindVarBinary:
		n, rest, err := readUvarint(t, b)
		if err != nil {
			return nil, nil, err
		}
		if n > uint64(len(rest)) {
			return nil, nil, corrupt("%s: length %d exceeds the %d bytes left", t, n, len(rest))
		}
		if t.Kind.IsCharacterString() {
			return string(rest[:n]), rest[n:], nil
		}
		return append([]byte{}, rest[:n]...), rest[n:], nil
	case KindTimestamp, KindTimestampLTZ:
		ms, rest, err := readZig(t, b)
		if err != nil {
			return nil, nil, err
		}
		ns, rest, err := readUvarint(t, rest)
		if err != nil {
			return nil, nil, err
		}
		if ns >= nanosPerMilli {
			return nil, nil, corrupt("%s: nano-of-milli %d out of range", t, ns)
		}
		if t.Kind == KindTimestamp {
			return Timestamp{Millis: ms, NanoOfMilli: int32(ns)}, rest, nil
		}
		return TimestampLTZ{Millis: ms, NanoOfMilli: int32(ns)}, rest, nil
	case KindArray:
		return decodeList(t.ElemType(), b)
	case KindMap, KindMultiset:
		kt, vt := mapTypes(t)
		keys, rest, err := decodeList(kt, b)
		if err != nil {
			return nil, nil, err
		}
		vals, rest, err := decodeMembers(vt, len(keys), rest)
		if err != nil {
			return nil, nil, err
		}
		return &Map{Keys: keys, Values: vals}, rest, nil
	case KindRow:
		fs := make([]DataType, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = f.Type
		}
		r, rest, err := DecodeRow(fs, b)
		if err != nil {
			return nil, nil, err
		}
		return r, rest, nil
	}
	return nil, nil, corrupt("unsupported type %s", t)
}

func decodeList(et DataType, b []byte) ([]any, []byte, error) {
	n, rest, err := readUvarint(et, b)
	if err != nil {
		return nil, nil, err
	}
	// Each member costs at least one bitmap bit, which bounds n by the
	// bytes left and keeps corrupt counts from allocating gigabytes.
	if n > uint64(len(rest))*8 {
		return nil, nil, corrupt("collection of %d members in %d bytes", n, len(rest))
	}
	return decodeMembers(et, int(n), rest)
}

func decodeMembers(et DataType, n int, b []byte) ([]any, []byte, error) {
	nb := (n + 7) / 8
	if len(b) < nb {
		return nil, nil, corrupt("collection null bitmap truncated")
	}
	bitmap, rest := b[:nb], b[nb:]
	if extra := n % 8; extra != 0 && bitmap[nb-1]>>extra != 0 {
		return nil, nil, corrupt("collection: stray null bits")
	}
	xs := make([]any, n)
	for i := range xs {
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		var err error
		if xs[i], rest, err = decodeBody(et, rest); err != nil {
			return nil, nil, err
		}
	}
	return xs, rest, nil
}
