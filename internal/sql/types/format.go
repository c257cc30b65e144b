package types

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
)

// AppendJavaFloat appends f as Java's Double.toString (bitSize 64) or
// Float.toString (32) writes it, which is how Flink casts FLOAT/DOUBLE to
// STRING: plain notation with at least one fraction digit for
// 10^-3 ≤ |f| < 10^7 ("100.0", "0.001"), otherwise "1.0E10", "1.234E-5";
// "NaN", "Infinity", "-Infinity". Digits are the shortest that round-trip.
func AppendJavaFloat(buf []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(buf, "-0.0"...)
		}
		return append(buf, "0.0"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, bitSize) // -d.ddde±XX
	neg := e[0] == '-'
	if neg {
		e = e[1:]
		buf = append(buf, '-')
	}
	ep := 0
	for ep < len(e) && e[ep] != 'e' {
		ep++
	}
	mant := e[:ep]
	exp, _ := strconv.Atoi(string(e[ep+1:]))
	digits := make([]byte, 0, 20)
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		if exp >= 0 {
			intLen := exp + 1
			for len(digits) < intLen {
				digits = append(digits, '0')
			}
			buf = append(buf, digits[:intLen]...)
			buf = append(buf, '.')
			if len(digits) > intLen {
				return append(buf, digits[intLen:]...)
			}
			return append(buf, '0')
		}
		buf = append(buf, '0', '.')
		for i := 0; i < -exp-1; i++ {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	buf = append(buf, digits[0], '.')
	if len(digits) > 1 {
		buf = append(buf, digits[1:]...)
	} else {
		buf = append(buf, '0')
	}
	buf = append(buf, 'E')
	return strconv.AppendInt(buf, int64(exp), 10)
}

func appendPadded(buf []byte, v int64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// AppendDate appends yyyy-MM-dd.
func AppendDate(buf []byte, d Date) []byte {
	y, m, dd := d.YMD()
	if y < 0 {
		buf = append(buf, '-')
		y = -y
	}
	buf = appendPadded(buf, int64(y), 4)
	buf = append(buf, '-')
	buf = appendPadded(buf, int64(m), 2)
	buf = append(buf, '-')
	return appendPadded(buf, int64(dd), 2)
}

func appendFraction(buf []byte, nanos int64, p int) []byte {
	if p <= 0 {
		return buf
	}
	if p > 9 {
		p = 9
	}
	buf = append(buf, '.')
	var tmp [9]byte
	for i := 8; i >= 0; i-- {
		tmp[i] = byte('0' + nanos%10)
		nanos /= 10
	}
	return append(buf, tmp[:p]...)
}

// AppendTime appends HH:mm:ss with p fraction digits.
func AppendTime(buf []byte, t Time, p int) []byte {
	n := int64(t)
	buf = appendPadded(buf, n/3600e9, 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, n/60e9%60, 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, n/1e9%60, 2)
	return appendFraction(buf, n%1e9, p)
}

// AppendTimestamp appends yyyy-MM-dd HH:mm:ss with exactly p fraction
// digits, as Flink casts TIMESTAMP(p) to STRING ("2020-04-15 08:05:00.000"
// for p = 3).
func AppendTimestamp(buf []byte, ts Timestamp, p int) []byte {
	buf = AppendDate(buf, ts.Date())
	buf = append(buf, ' ')
	return AppendTime(buf, ts.TimeOfDay(), p)
}

// AppendIntervalMonths appends +Y-MM (Flink/Calcite's year-month form).
func AppendIntervalMonths(buf []byte, v IntervalMonths) []byte {
	n := int64(v)
	if n < 0 {
		buf = append(buf, '-')
		n = -n
	} else {
		buf = append(buf, '+')
	}
	buf = strconv.AppendInt(buf, n/12, 10)
	buf = append(buf, '-')
	return appendPadded(buf, n%12, 2)
}

// AppendIntervalMillis appends +D HH:mm:ss.fff (Flink's day-time form).
func AppendIntervalMillis(buf []byte, v IntervalMillis) []byte {
	n := int64(v)
	if n < 0 {
		buf = append(buf, '-')
		n = -n
	} else {
		buf = append(buf, '+')
	}
	buf = strconv.AppendInt(buf, n/millisPerDay, 10)
	buf = append(buf, ' ')
	return AppendTime(buf, Time((n%millisPerDay)*nanosPerMilli), 3)
}

// CastToString renders v the way Flink's CAST(v AS STRING) does
// (BOOLEAN as TRUE/FALSE, DOUBLE as Java's Double.toString, DECIMAL with
// its scale, TIMESTAMP(p) with p fraction digits, ARRAY as [1, 2], MAP as
// {a=1}, ROW as (1, a), nested NULL as NULL). TIMESTAMP_LTZ is shown in loc.
func CastToString(v any, t DataType, loc *time.Location) string {
	return string(appendString(nil, v, t, loc, false))
}

// Format renders a value as Flink's SQL client prints it in tableau mode:
// NULL as <NULL>, binary strings as x'0a1b', everything else as
// CastToString. TIMESTAMP_LTZ is shown in UTC; use FormatIn for a session
// zone.
func Format(v any, t DataType) string { return FormatIn(v, t, time.UTC) }

// NullText is how the SQL client prints a NULL.
const NullText = "<NULL>"

// FormatIn is Format with the session time zone.
func FormatIn(v any, t DataType, loc *time.Location) string {
	if v == nil {
		return NullText
	}
	return string(appendString(nil, v, t, loc, true))
}

func appendString(buf []byte, v any, t DataType, loc *time.Location, printing bool) []byte {
	if v == nil {
		return append(buf, "NULL"...)
	}
	if loc == nil {
		loc = time.UTC
	}
	switch t.Kind {
	case KindBoolean:
		if v.(bool) {
			return append(buf, "TRUE"...)
		}
		return append(buf, "FALSE"...)
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt:
		return strconv.AppendInt(buf, asInt64(v), 10)
	case KindFloat:
		return AppendJavaFloat(buf, float64(v.(float32)), 32)
	case KindDouble:
		return AppendJavaFloat(buf, v.(float64), 64)
	case KindDecimal:
		return v.(Decimal).Append(buf)
	case KindChar, KindVarChar:
		return append(buf, v.(string)...)
	case KindBinary, KindVarBinary:
		if printing {
			buf = append(buf, "x'"...)
			buf = hex.AppendEncode(buf, v.([]byte))
			return append(buf, '\'')
		}
		return append(buf, v.([]byte)...)
	case KindDate:
		return AppendDate(buf, v.(Date))
	case KindTime:
		return AppendTime(buf, v.(Time), t.Precision)
	case KindTimestamp:
		return AppendTimestamp(buf, v.(Timestamp), t.Precision)
	case KindTimestampLTZ:
		return AppendTimestamp(buf, v.(TimestampLTZ).ToTimestamp(loc), t.Precision)
	case KindIntervalYearMonth:
		return AppendIntervalMonths(buf, v.(IntervalMonths))
	case KindIntervalDayTime:
		return AppendIntervalMillis(buf, v.(IntervalMillis))
	case KindArray:
		buf = append(buf, '[')
		for i, e := range v.([]any) {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = appendString(buf, e, t.ElemType(), loc, printing)
		}
		return append(buf, ']')
	case KindMap, KindMultiset:
		m := v.(*Map)
		kt, vt := t.KeyType(), t.ValueType()
		if t.Kind == KindMultiset {
			kt, vt = t.ElemType(), Int()
		}
		buf = append(buf, '{')
		for i := range m.Keys {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = appendString(buf, m.Keys[i], kt, loc, printing)
			buf = append(buf, '=')
			buf = appendString(buf, m.Values[i], vt, loc, printing)
		}
		return append(buf, '}')
	case KindRow:
		r := v.(Row)
		buf = append(buf, '(')
		for i, f := range t.Fields {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			if i < len(r) {
				buf = appendString(buf, r[i], f.Type, loc, printing)
			}
		}
		return append(buf, ')')
	}
	return append(buf, "?"...)
}

// asInt64 widens any Go integer to int64.
func asInt64(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	case IntervalMonths:
		return int64(x)
	case IntervalMillis:
		return int64(x)
	case Date:
		return int64(x)
	case Time:
		return int64(x)
	}
	panic(errorf("value %v (%T) is not an integer", v, v))
}

// ---- parsing ----

func parseUint(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// ParseDate parses a DATE as Flink's CAST does: "yyyy-MM-dd" (one- or
// two-digit month and day are accepted), "yyyy-MM", "yyyy", and a
// timestamp string whose time part is dropped. Surrounding whitespace is
// ignored.
func ParseDate(s string) (Date, error) {
	s = strings.TrimSpace(s)
	orig := s
	if i := strings.IndexAny(s, " T"); i > 0 {
		s = s[:i]
	}
	parts := strings.Split(s, "-")
	if len(parts) > 3 {
		return 0, castErr("invalid DATE %q", orig)
	}
	ymd := [3]int{0, 1, 1}
	for i, p := range parts {
		n, ok := parseUint(p)
		if !ok {
			return 0, castErr("invalid DATE %q", orig)
		}
		ymd[i] = n
	}
	if ymd[0] > 9999 || ymd[1] < 1 || ymd[1] > 12 || ymd[2] < 1 || ymd[2] > daysInMonth(ymd[0], ymd[1]) {
		return 0, castErr("invalid DATE %q: field out of range", orig)
	}
	return MakeDate(ymd[0], ymd[1], ymd[2]), nil
}

// ParseTime parses HH:mm[:ss[.fffffffff]] and truncates to precision p.
func ParseTime(s string, p int) (Time, error) {
	s = strings.TrimSpace(s)
	t, ok := parseClock(s)
	if !ok {
		return 0, castErr("invalid TIME %q", s)
	}
	return TruncateTime(t, p), nil
}

func parseClock(s string) (Time, bool) {
	frac := ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s, frac = s[:i], s[i+1:]
		if frac == "" || len(frac) > 9 {
			return 0, false
		}
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || (frac != "" && len(parts) != 3) {
		return 0, false
	}
	var hms [3]int
	for i, p := range parts {
		n, ok := parseUint(p)
		if !ok || len(p) > 2 {
			return 0, false
		}
		hms[i] = n
	}
	if hms[0] > 23 || hms[1] > 59 || hms[2] > 59 {
		return 0, false
	}
	nanos := 0
	if frac != "" {
		n, ok := parseUint(frac)
		if !ok {
			return 0, false
		}
		for i := len(frac); i < 9; i++ {
			n *= 10
		}
		nanos = n
	}
	return MakeTime(hms[0], hms[1], hms[2], nanos), true
}

// ParseTimestamp parses "yyyy-MM-dd[( |T)HH:mm[:ss[.f...]]]" and truncates
// to precision p, as Flink's CAST(string AS TIMESTAMP(p)).
func ParseTimestamp(s string, p int) (Timestamp, error) {
	s = strings.TrimSpace(s)
	datePart, clock := s, ""
	if i := strings.IndexAny(s, " T"); i > 0 {
		datePart, clock = s[:i], strings.TrimLeft(s[i+1:], " ")
	}
	parts := strings.Split(datePart, "-")
	if len(parts) != 3 {
		return Timestamp{}, castErr("invalid TIMESTAMP %q", s)
	}
	d, err := ParseDate(datePart)
	if err != nil {
		return Timestamp{}, castErr("invalid TIMESTAMP %q", s)
	}
	var t Time
	if clock != "" {
		var ok bool
		if t, ok = parseClock(clock); !ok {
			return Timestamp{}, castErr("invalid TIMESTAMP %q", s)
		}
	}
	return TruncateTimestamp(d.Timestamp().AddNanos(int64(t)), p), nil
}

// TruncateTimestamp drops fraction digits beyond precision p.
func TruncateTimestamp(ts Timestamp, p int) Timestamp {
	if p >= 9 {
		return ts
	}
	tod := int64(ts.TimeOfDay())
	unit := int64(pow10[9-p])
	return ts.AddNanos(-(tod % unit))
}

// TruncateTime drops fraction digits beyond precision p.
func TruncateTime(t Time, p int) Time {
	if p >= 9 {
		return t
	}
	unit := Time(pow10[9-p])
	return t - t%unit
}

// ParseJavaDouble parses a float the way Java's Double.parseDouble does for
// the forms SQL users write ("1.5", "-2e10", "NaN", "Infinity"); whitespace
// around it is ignored.
func ParseJavaDouble(s string) (float64, error) {
	t := strings.TrimSpace(s)
	switch strings.TrimPrefix(strings.TrimPrefix(t, "+"), "-") {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	if t == "" || strings.ContainsAny(t, "_xXpPnNiI") {
		return 0, castErr("invalid number %q", s)
	}
	t = strings.TrimRight(t, "dDfF")
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, nil // Java rounds to ±Infinity or 0
		}
		return 0, castErr("invalid number %q", s)
	}
	return f, nil
}

// ParseIntegral parses an integer as Flink's string-to-integer cast does:
// surrounding whitespace ignored, optional sign, digits, and an optional
// fraction that is truncated ("1.9" → 1). Out of [min, max] is an error.
func ParseIntegral(s string, min, max int64) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, castErr("invalid integer %q", s)
	}
	i := 0
	neg := false
	if t[0] == '+' || t[0] == '-' {
		neg = t[0] == '-'
		i++
	}
	if i == len(t) {
		return 0, castErr("invalid integer %q", s)
	}
	var n uint64
	digits := 0
	for ; i < len(t) && t[i] != '.'; i++ {
		c := t[i]
		if c < '0' || c > '9' {
			return 0, castErr("invalid integer %q", s)
		}
		digits++
		if n > (math.MaxUint64-9)/10 {
			return 0, castErr("integer %q out of range", s)
		}
		n = n*10 + uint64(c-'0')
	}
	if i < len(t) { // fraction: digits only, dropped
		i++
		for ; i < len(t); i++ {
			if t[i] < '0' || t[i] > '9' {
				return 0, castErr("invalid integer %q", s)
			}
		}
	}
	if digits == 0 {
		return 0, castErr("invalid integer %q", s)
	}
	var v int64
	if neg {
		if n > uint64(math.MaxInt64)+1 {
			return 0, castErr("integer %q out of range", s)
		}
		v = int64(-n)
	} else {
		if n > math.MaxInt64 {
			return 0, castErr("integer %q out of range", s)
		}
		v = int64(n)
	}
	if v < min || v > max {
		return 0, castErr("integer %q out of range [%d, %d]", s, min, max)
	}
	return v, nil
}

// ParseBool parses a BOOLEAN as Flink's cast: true for 'true', 't', 'yes',
// 'y', '1' and false for 'false', 'f', 'no', 'n', '0' (any case, trimmed).
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "t", "yes", "y", "1":
		return true, nil
	case "false", "f", "no", "n", "0":
		return false, nil
	}
	return false, castErr("invalid BOOLEAN %q", s)
}
