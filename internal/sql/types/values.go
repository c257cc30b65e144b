package types

import (
	"fmt"
	"time"
)

// Date is a DATE value: days since 1970-01-01 (Flink's int representation).
type Date int32

// Time is a TIME(p) value: nanoseconds since midnight.
type Time int64

// Timestamp is a TIMESTAMP(p) value without a time zone, as Flink's
// TimestampData: milliseconds since 1970-01-01 00:00:00 plus the nanoseconds
// within that millisecond (0..999999).
type Timestamp struct {
	Millis      int64
	NanoOfMilli int32
}

// TimestampLTZ is a TIMESTAMP_LTZ(p) value: an instant, shown in the session
// time zone. Same layout as Timestamp; Millis are since the Unix epoch (UTC).
type TimestampLTZ struct {
	Millis      int64
	NanoOfMilli int32
}

// IntervalMonths is an INTERVAL YEAR TO MONTH value: a number of months.
type IntervalMonths int32

// IntervalMillis is an INTERVAL DAY TO SECOND value: milliseconds, as Flink.
type IntervalMillis int64

// Map is a MAP or MULTISET value: ordered entries. For a MULTISET, Values
// hold int32 counts. Keys are distinct (by Equal).
type Map struct {
	Keys   []any
	Values []any
}

// Len returns the number of entries.
func (m *Map) Len() int { return len(m.Keys) }

// Row is a ROW value (and the fields of a top-level record).
type Row []any

// RowKind is the change a record carries in a changelog.
type RowKind byte

// Row kinds, with Flink's byte values.
const (
	Insert       RowKind = 0 // +I
	UpdateBefore RowKind = 1 // -U
	UpdateAfter  RowKind = 2 // +U
	Delete       RowKind = 3 // -D
)

func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", byte(k))
}

// IsAccumulate reports +I and +U (the kinds that add a row to a result).
func (k RowKind) IsAccumulate() bool { return k == Insert || k == UpdateAfter }

// ParseRowKind parses "+I", "-U", "+U" or "-D".
func ParseRowKind(s string) (RowKind, error) {
	switch s {
	case "+I":
		return Insert, nil
	case "-U":
		return UpdateBefore, nil
	case "+U":
		return UpdateAfter, nil
	case "-D":
		return Delete, nil
	}
	return 0, errorf("unknown row kind %q (want +I, -U, +U or -D)", s)
}

// Record is a top-level changelog record: a row and the change it carries.
// The kind is kept beside the row, not inside it, so that a Row can be used
// for nested ROW values and for append-only streams alike.
type Record struct {
	Kind RowKind
	Row  Row
}

func (r Record) String() string { return fmt.Sprintf("%s%v", r.Kind, []any(r.Row)) }

const (
	millisPerDay  = 86400000
	nanosPerMilli = 1000000
	nanosPerDay   = 86400 * int64(time.Second)
)

// ToTime returns the wall-clock reading as a time.Time in UTC.
func (t Timestamp) ToTime() time.Time {
	return time.UnixMilli(t.Millis).UTC().Add(time.Duration(t.NanoOfMilli))
}

// TimestampFromTime takes the wall-clock reading of tm (its zone's local
// date and time) as a TIMESTAMP.
func TimestampFromTime(tm time.Time) Timestamp {
	y, mo, d := tm.Date()
	h, mi, s := tm.Clock()
	days := daysFromCivil(int64(y), int(mo), d)
	nanos := int64(h)*3600e9 + int64(mi)*60e9 + int64(s)*1e9 + int64(tm.Nanosecond())
	return Timestamp{Millis: days*millisPerDay + nanos/nanosPerMilli, NanoOfMilli: int32(nanos % nanosPerMilli)}
}

// ToTime returns the instant.
func (t TimestampLTZ) ToTime() time.Time {
	return time.UnixMilli(t.Millis).Add(time.Duration(t.NanoOfMilli))
}

// TimestampLTZFromTime returns the instant of tm.
func TimestampLTZFromTime(tm time.Time) TimestampLTZ {
	ns := tm.UnixNano()
	if tm.Year() < 1678 || tm.Year() > 2261 { // outside UnixNano's range
		ms := tm.UnixMilli()
		return TimestampLTZ{Millis: ms, NanoOfMilli: int32(tm.Nanosecond() % nanosPerMilli)}
	}
	ms := floorDiv(ns, nanosPerMilli)
	return TimestampLTZ{Millis: ms, NanoOfMilli: int32(ns - ms*nanosPerMilli)}
}

// ToLTZ interprets the wall-clock reading in loc.
func (t Timestamp) ToLTZ(loc *time.Location) TimestampLTZ {
	y, mo, d, h, mi, s, ns := t.fields()
	return TimestampLTZFromTime(time.Date(y, time.Month(mo), d, h, mi, s, ns, loc))
}

// ToTimestamp returns the wall-clock reading of the instant in loc.
func (t TimestampLTZ) ToTimestamp(loc *time.Location) Timestamp {
	return TimestampFromTime(t.ToTime().In(loc))
}

func (t Timestamp) fields() (y, mo, d, h, mi, s, ns int) {
	days := floorDiv(t.Millis, millisPerDay)
	msOfDay := t.Millis - days*millisPerDay
	yy, mm, dd := civilFromDays(days)
	nanos := msOfDay*nanosPerMilli + int64(t.NanoOfMilli)
	return int(yy), mm, dd, int(nanos / 3600e9), int(nanos / 60e9 % 60), int(nanos / 1e9 % 60), int(nanos % 1e9)
}

// Date returns the date part.
func (t Timestamp) Date() Date { return Date(floorDiv(t.Millis, millisPerDay)) }

// TimeOfDay returns the time part.
func (t Timestamp) TimeOfDay() Time {
	ms := t.Millis - floorDiv(t.Millis, millisPerDay)*millisPerDay
	return Time(ms*nanosPerMilli + int64(t.NanoOfMilli))
}

// Timestamp returns midnight of the date.
func (d Date) Timestamp() Timestamp { return Timestamp{Millis: int64(d) * millisPerDay} }

// YMD returns the civil date.
func (d Date) YMD() (year, month, day int) {
	y, m, dd := civilFromDays(int64(d))
	return int(y), m, dd
}

// MakeDate builds a Date from a civil date (no range check).
func MakeDate(year, month, day int) Date { return Date(daysFromCivil(int64(year), month, day)) }

// MakeTimestamp builds a Timestamp from civil fields (no range check).
func MakeTimestamp(year, month, day, hour, min, sec, nano int) Timestamp {
	days := daysFromCivil(int64(year), month, day)
	nanos := int64(hour)*3600e9 + int64(min)*60e9 + int64(sec)*1e9 + int64(nano)
	ms := days*millisPerDay + floorDiv(nanos, nanosPerMilli)
	return Timestamp{Millis: ms, NanoOfMilli: int32(nanos - floorDiv(nanos, nanosPerMilli)*nanosPerMilli)}
}

// MakeTime builds a Time of day.
func MakeTime(hour, min, sec, nano int) Time {
	return Time(int64(hour)*3600e9 + int64(min)*60e9 + int64(sec)*1e9 + int64(nano))
}

// Compare orders timestamps.
func (t Timestamp) Compare(o Timestamp) int {
	switch {
	case t.Millis < o.Millis:
		return -1
	case t.Millis > o.Millis:
		return 1
	case t.NanoOfMilli < o.NanoOfMilli:
		return -1
	case t.NanoOfMilli > o.NanoOfMilli:
		return 1
	}
	return 0
}

// Compare orders instants.
func (t TimestampLTZ) Compare(o TimestampLTZ) int { return Timestamp(t).Compare(Timestamp(o)) }

// AddNanos shifts a timestamp (interval arithmetic).
func (t Timestamp) AddNanos(n int64) Timestamp {
	total := int64(t.NanoOfMilli) + n%nanosPerMilli
	ms := t.Millis + n/nanosPerMilli + floorDiv(total, nanosPerMilli)
	return Timestamp{Millis: ms, NanoOfMilli: int32(total - floorDiv(total, nanosPerMilli)*nanosPerMilli)}
}

// AddMonths shifts by calendar months, clamping the day to the month's end
// (2020-01-31 + 1 month = 2020-02-29), as Flink/Calcite.
func (t Timestamp) AddMonths(n int) Timestamp {
	days := floorDiv(t.Millis, millisPerDay)
	d := Date(days).AddMonths(n)
	return Timestamp{Millis: int64(d)*millisPerDay + (t.Millis - days*millisPerDay), NanoOfMilli: t.NanoOfMilli}
}

// AddMonths shifts a date by calendar months, clamping the day.
func (d Date) AddMonths(n int) Date {
	y, m, dd := d.YMD()
	total := y*12 + (m - 1) + n
	ny := floorDivInt(total, 12)
	nm := total - ny*12 + 1
	if last := daysInMonth(ny, nm); dd > last {
		dd = last
	}
	return MakeDate(ny, nm, dd)
}

func daysInMonth(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorDivInt(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// daysFromCivil converts a proleptic Gregorian date to days since 1970-01-01
// (Howard Hinnant's algorithm: exact for every year, no tables).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := int64((153*mp+2)/5 + d - 1)
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civilFromDays(z int64) (int64, int, int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := int(doy - (153*mp+2)/5 + 1)
	m := int(mp + 3)
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
