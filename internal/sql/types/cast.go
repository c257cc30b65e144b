package types

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Cast converts v of type from to type to with Flink's CAST semantics
// (Flink ≥ 1.15, table.exec.legacy-cast-behaviour disabled), using UTC as
// the session time zone. See CastIn.
func Cast(v any, from, to DataType) (any, error) { return CastIn(v, from, to, time.UTC) }

// CastIn converts v of type from to type to; loc is the session time zone
// (for TIMESTAMP ↔ TIMESTAMP_LTZ and the string forms of TIMESTAMP_LTZ).
//
// NULL gives NULL. A value that cannot be converted (CAST('abc' AS INT)) is
// an error wrapping ErrCast; TRY_CAST turns that into NULL. Numeric
// narrowing wraps as Java's primitive casts do (CAST(300 AS TINYINT) = 44,
// CAST(1e20 AS INT) = 2147483647, DECIMAL and DOUBLE truncate towards zero);
// a number that does not fit DECIMAL(p, s) after HALF_UP rounding gives NULL,
// as Flink's DecimalData; strings are padded or truncated to CHAR(n) and
// truncated to VARCHAR(n).
func CastIn(v any, from, to DataType, loc *time.Location) (any, error) {
	if v == nil || from.Kind == KindNull {
		return nil, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	if !ExplicitCastable(from, to) {
		return nil, castErr("cannot cast %s to %s", from, to)
	}
	f := from.Kind
	switch to.Kind {
	case KindChar, KindVarChar:
		var s string
		if f.IsCharacterString() {
			s = v.(string)
		} else {
			s = CastToString(v, from, loc)
		}
		return fitString(s, to), nil
	case KindBinary, KindVarBinary:
		var b []byte
		if f.IsCharacterString() {
			b = []byte(v.(string))
		} else {
			b = v.([]byte)
		}
		return fitBytes(b, to), nil
	case KindBoolean:
		switch {
		case f == KindBoolean:
			return v, nil
		case f.IsCharacterString():
			return ParseBool(v.(string))
		case f == KindDecimal:
			return !v.(Decimal).IsZero(), nil
		case f.IsIntegral():
			return asInt64(v) != 0, nil
		case f.IsApproxNumeric():
			return toFloat64(v) != 0, nil
		}
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt:
		return castToIntegral(v, from, to)
	case KindFloat:
		x, err := castToFloat64(v, from)
		if err != nil {
			return nil, err
		}
		return float32(x), nil
	case KindDouble:
		return castToFloat64(v, from)
	case KindDecimal:
		return castToDecimal(v, from, to)
	case KindDate:
		switch f {
		case KindDate:
			return v, nil
		case KindTimestamp:
			return v.(Timestamp).Date(), nil
		case KindTimestampLTZ:
			return v.(TimestampLTZ).ToTimestamp(loc).Date(), nil
		case KindChar, KindVarChar:
			return ParseDate(v.(string))
		}
	case KindTime:
		switch f {
		case KindTime:
			return TruncateTime(v.(Time), to.Precision), nil
		case KindTimestamp:
			return TruncateTime(v.(Timestamp).TimeOfDay(), to.Precision), nil
		case KindTimestampLTZ:
			return TruncateTime(v.(TimestampLTZ).ToTimestamp(loc).TimeOfDay(), to.Precision), nil
		case KindChar, KindVarChar:
			return ParseTime(v.(string), to.Precision)
		}
	case KindTimestamp, KindTimestampLTZ:
		var ts Timestamp
		switch f {
		case KindDate:
			ts = v.(Date).Timestamp()
		case KindTime:
			ts = Timestamp{}.AddNanos(int64(v.(Time)))
		case KindTimestamp:
			ts = v.(Timestamp)
		case KindTimestampLTZ:
			if to.Kind == KindTimestampLTZ {
				return TimestampLTZ(TruncateTimestamp(Timestamp(v.(TimestampLTZ)), to.Precision)), nil
			}
			ts = v.(TimestampLTZ).ToTimestamp(loc)
		case KindChar, KindVarChar:
			var err error
			if ts, err = ParseTimestamp(v.(string), 9); err != nil {
				return nil, err
			}
		default:
			return nil, castErr("cannot cast %s to %s", from, to)
		}
		if err := checkTimestampRange(ts); err != nil {
			return nil, err
		}
		if to.Kind == KindTimestamp {
			return TruncateTimestamp(ts, to.Precision), nil
		}
		return TimestampLTZ(TruncateTimestamp(Timestamp(ts.ToLTZ(loc)), to.Precision)), nil
	case KindIntervalYearMonth:
		if f == KindIntervalYearMonth {
			return v, nil
		}
		return IntervalMonths(asInt64(v)), nil
	case KindIntervalDayTime:
		if f == KindIntervalDayTime {
			return v, nil
		}
		return IntervalMillis(asInt64(v)), nil
	case KindArray, KindMultiset, KindMap, KindRow:
		return castConstructed(v, from, to, loc)
	case KindNull:
		return nil, nil
	}
	if to.Kind == KindIntervalYearMonth || to.Kind == KindIntervalDayTime {
		return nil, castErr("cannot cast %s to %s", from, to)
	}
	if f == KindIntervalYearMonth || f == KindIntervalDayTime {
		return castToIntegral(asInt64(v), BigInt(), to)
	}
	return nil, castErr("cannot cast %s to %s", from, to)
}

// TryCastIn is TRY_CAST: like CastIn, but a failed conversion gives NULL.
func TryCastIn(v any, from, to DataType, loc *time.Location) any {
	r, err := CastIn(v, from, to, loc)
	if err != nil {
		return nil
	}
	return r
}

var (
	minTimestampMillis = MakeDate(0, 1, 1).Timestamp().Millis
	maxTimestampMillis = MakeDate(9999, 12, 31).Timestamp().Millis + millisPerDay - 1
)

func checkTimestampRange(ts Timestamp) error {
	if ts.Millis < minTimestampMillis || ts.Millis > maxTimestampMillis {
		return castErr("timestamp out of range 0000-01-01 00:00:00 .. 9999-12-31 23:59:59.999999999")
	}
	return nil
}

// fitString pads or truncates s to CHAR(n)/VARCHAR(n) by code points.
func fitString(s string, t DataType) string {
	n := t.Length
	if n <= 0 || n >= MaxLength {
		return s
	}
	cnt := utf8.RuneCountInString(s)
	if cnt > n {
		i := 0
		for k := 0; k < n; k++ {
			_, sz := utf8.DecodeRuneInString(s[i:])
			i += sz
		}
		return s[:i]
	}
	if t.Kind == KindChar && cnt < n {
		return s + strings.Repeat(" ", n-cnt)
	}
	return s
}

func fitBytes(b []byte, t DataType) []byte {
	n := t.Length
	if n <= 0 || n >= MaxLength {
		return b
	}
	if len(b) > n {
		return append([]byte(nil), b[:n]...)
	}
	if t.Kind == KindBinary && len(b) < n {
		out := make([]byte, n)
		copy(out, b)
		return out
	}
	return b
}

func toFloat64(v any) float64 {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	case Decimal:
		return x.Float64()
	}
	return float64(asInt64(v))
}

func castToFloat64(v any, from DataType) (float64, error) {
	switch f := from.Kind; {
	case f == KindBoolean:
		if v.(bool) {
			return 1, nil
		}
		return 0, nil
	case f.IsCharacterString():
		return ParseJavaDouble(v.(string))
	case f.IsNumeric():
		return toFloat64(v), nil
	}
	return 0, castErr("cannot cast %s to DOUBLE", from)
}

// javaDoubleToLong is Java's (long) d: truncation, saturation, NaN → 0.
func javaDoubleToLong(d float64) int64 {
	switch {
	case math.IsNaN(d):
		return 0
	case d >= 9.223372036854775807e18:
		return math.MaxInt64
	case d <= -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(d)
}

// javaDoubleToInt is Java's (int) d.
func javaDoubleToInt(d float64) int32 {
	switch {
	case math.IsNaN(d):
		return 0
	case d >= math.MaxInt32:
		return math.MaxInt32
	case d <= math.MinInt32:
		return math.MinInt32
	}
	return int32(d)
}

// NarrowInt converts an int64 to the Go type of an integral kind, wrapping
// as Java's narrowing casts do.
func NarrowInt(x int64, k Kind) any {
	switch k {
	case KindTinyInt:
		return int8(x)
	case KindSmallInt:
		return int16(x)
	case KindInt:
		return int32(x)
	}
	return x
}

func intRange(k Kind) (int64, int64) {
	switch k {
	case KindTinyInt:
		return math.MinInt8, math.MaxInt8
	case KindSmallInt:
		return math.MinInt16, math.MaxInt16
	case KindInt:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func castToIntegral(v any, from, to DataType) (any, error) {
	var x int64
	switch f := from.Kind; {
	case f == KindBoolean:
		if v.(bool) {
			x = 1
		}
	case f.IsIntegral():
		x = asInt64(v)
	case f == KindDecimal:
		x = v.(Decimal).Int64()
	case f.IsApproxNumeric():
		d := toFloat64(v)
		if to.Kind == KindBigInt {
			x = javaDoubleToLong(d)
		} else {
			x = int64(javaDoubleToInt(d))
		}
	case f.IsCharacterString():
		lo, hi := intRange(to.Kind)
		var err error
		if x, err = ParseIntegral(v.(string), lo, hi); err != nil {
			return nil, err
		}
	case f.IsInterval():
		x = asInt64(v)
	default:
		return nil, castErr("cannot cast %s to %s", from, to)
	}
	return NarrowInt(x, to.Kind), nil
}

func castToDecimal(v any, from, to DataType) (any, error) {
	var d Decimal
	switch f := from.Kind; {
	case f == KindBoolean:
		if v.(bool) {
			d = DecimalFromInt64(1)
		}
	case f.IsIntegral():
		d = DecimalFromInt64(asInt64(v))
	case f == KindDecimal:
		d = v.(Decimal)
	case f == KindFloat:
		var err error
		if d, err = DecimalFromFloat64(float64(v.(float32))); err != nil {
			return nil, err
		}
	case f == KindDouble:
		var err error
		if d, err = DecimalFromFloat64(v.(float64)); err != nil {
			return nil, err
		}
	case f.IsCharacterString():
		var err error
		if d, err = ParseDecimal(strings.TrimSpace(v.(string))); err != nil {
			return nil, castErr("invalid DECIMAL %q", v.(string))
		}
	default:
		return nil, castErr("cannot cast %s to %s", from, to)
	}
	r, ok := d.ToType(to.Precision, to.Scale)
	if !ok {
		return nil, nil // Flink: a decimal overflow is NULL
	}
	return r, nil
}

func castConstructed(v any, from, to DataType, loc *time.Location) (any, error) {
	switch to.Kind {
	case KindArray:
		in := v.([]any)
		out := make([]any, len(in))
		for i, e := range in {
			c, err := CastIn(e, from.ElemType(), to.ElemType(), loc)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case KindMap, KindMultiset:
		m := v.(*Map)
		kf, kt, vf, vt := from.KeyType(), to.KeyType(), from.ValueType(), to.ValueType()
		if to.Kind == KindMultiset {
			kf, kt, vf, vt = from.ElemType(), to.ElemType(), Int(), Int()
		}
		out := &Map{Keys: make([]any, len(m.Keys)), Values: make([]any, len(m.Values))}
		for i := range m.Keys {
			k, err := CastIn(m.Keys[i], kf, kt, loc)
			if err != nil {
				return nil, err
			}
			val, err := CastIn(m.Values[i], vf, vt, loc)
			if err != nil {
				return nil, err
			}
			out.Keys[i], out.Values[i] = k, val
		}
		return out, nil
	case KindRow:
		in := v.(Row)
		out := make(Row, len(to.Fields))
		for i := range to.Fields {
			if i >= len(in) {
				break
			}
			c, err := CastIn(in[i], from.Fields[i].Type, to.Fields[i].Type, loc)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return nil, castErr("cannot cast %s to %s", from, to)
}
