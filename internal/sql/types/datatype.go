package types

import (
	"strconv"
	"strings"
)

// Kind is the root of a logical type (Flink's LogicalTypeRoot).
type Kind uint8

// The kinds of logical types. The order groups families so that range checks
// (IsNumeric, IsIntegral) stay cheap.
const (
	KindNull Kind = iota // the type of an untyped NULL literal
	KindBoolean
	KindTinyInt
	KindSmallInt
	KindInt
	KindBigInt
	KindDecimal
	KindFloat
	KindDouble
	KindChar
	KindVarChar
	KindBinary
	KindVarBinary
	KindDate
	KindTime
	KindTimestamp
	KindTimestampLTZ
	KindIntervalYearMonth
	KindIntervalDayTime
	KindArray
	KindMultiset
	KindMap
	KindRow
	numKinds
)

var kindNames = [...]string{
	KindNull: "NULL", KindBoolean: "BOOLEAN", KindTinyInt: "TINYINT", KindSmallInt: "SMALLINT",
	KindInt: "INT", KindBigInt: "BIGINT", KindDecimal: "DECIMAL", KindFloat: "FLOAT",
	KindDouble: "DOUBLE", KindChar: "CHAR", KindVarChar: "VARCHAR", KindBinary: "BINARY",
	KindVarBinary: "VARBINARY", KindDate: "DATE", KindTime: "TIME", KindTimestamp: "TIMESTAMP",
	KindTimestampLTZ: "TIMESTAMP_LTZ", KindIntervalYearMonth: "INTERVAL_YEAR_MONTH",
	KindIntervalDayTime: "INTERVAL_DAY_TIME", KindArray: "ARRAY", KindMultiset: "MULTISET",
	KindMap: "MAP", KindRow: "ROW",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// IsIntegral reports TINYINT, SMALLINT, INT or BIGINT.
func (k Kind) IsIntegral() bool { return k >= KindTinyInt && k <= KindBigInt }

// IsExactNumeric reports the integral kinds and DECIMAL.
func (k Kind) IsExactNumeric() bool { return k >= KindTinyInt && k <= KindDecimal }

// IsApproxNumeric reports FLOAT or DOUBLE.
func (k Kind) IsApproxNumeric() bool { return k == KindFloat || k == KindDouble }

// IsNumeric reports the exact and approximate numeric kinds.
func (k Kind) IsNumeric() bool { return k >= KindTinyInt && k <= KindDouble }

// IsCharacterString reports CHAR or VARCHAR.
func (k Kind) IsCharacterString() bool { return k == KindChar || k == KindVarChar }

// IsBinaryString reports BINARY or VARBINARY.
func (k Kind) IsBinaryString() bool { return k == KindBinary || k == KindVarBinary }

// IsDatetime reports DATE, TIME, TIMESTAMP or TIMESTAMP_LTZ.
func (k Kind) IsDatetime() bool { return k >= KindDate && k <= KindTimestampLTZ }

// IsTimestamp reports TIMESTAMP or TIMESTAMP_LTZ.
func (k Kind) IsTimestamp() bool { return k == KindTimestamp || k == KindTimestampLTZ }

// IsInterval reports the two interval kinds.
func (k Kind) IsInterval() bool { return k == KindIntervalYearMonth || k == KindIntervalDayTime }

// IsConstructed reports ARRAY, MULTISET, MAP and ROW.
func (k Kind) IsConstructed() bool { return k >= KindArray }

// Limits of the parameterised types, as Flink's.
const (
	MaxLength           = 2147483647 // CHAR, VARCHAR, BINARY, VARBINARY
	MaxDecimalPrecision = 38
	MaxTimePrecision    = 9
	DefaultDecimalPrec  = 10
	DefaultTimestampP   = 6
)

// TimeAttr marks a TIMESTAMP or TIMESTAMP_LTZ column as a time attribute
// (Flink shows it as `TIMESTAMP(3) *ROWTIME*`). It does not take part in
// Equal: a rowtime column holds ordinary timestamps.
type TimeAttr uint8

// Time attribute markers.
const (
	TimeAttrNone TimeAttr = iota
	TimeAttrRowtime
	TimeAttrProctime
)

// IntervalRes is the resolution of an interval type (which fields it has).
type IntervalRes uint8

// Interval resolutions. Year-month ones first, then day-time ones, each in
// Flink's order from coarse to fine.
const (
	ResYear IntervalRes = iota
	ResYearToMonth
	ResMonth
	ResDay
	ResDayToHour
	ResDayToMinute
	ResDayToSecond
	ResHour
	ResHourToMinute
	ResHourToSecond
	ResMinute
	ResMinuteToSecond
	ResSecond
)

// Field is one field of a ROW type.
type Field struct {
	Name string
	Type DataType
}

// DataType is a logical type: a kind plus its parameters and nullability.
// The zero value is the nullable NULL type. DataType values are immutable by
// convention: the constructors and the With/Nullable/NotNull methods return
// copies, and the element pointers are never written through.
type DataType struct {
	Kind    Kind
	notNull bool
	// Length of CHAR, VARCHAR, BINARY and VARBINARY.
	Length int
	// Precision of DECIMAL, TIME, TIMESTAMP and TIMESTAMP_LTZ; the
	// fractional-second precision of day-time intervals.
	Precision int
	// Scale of DECIMAL.
	Scale int
	// Interval resolution and leading-field precision (YEAR(p), DAY(p)).
	Res         IntervalRes
	LeadingPrec int
	TimeAttr    TimeAttr
	// Elem is the element type of ARRAY and MULTISET.
	Elem *DataType
	// Key and Value are the types of a MAP.
	Key, Value *DataType
	// Fields of a ROW.
	Fields []Field
}

// Constructors. All return nullable types; call NotNull() for NOT NULL.

func Null() DataType     { return DataType{Kind: KindNull} }
func Boolean() DataType  { return DataType{Kind: KindBoolean} }
func TinyInt() DataType  { return DataType{Kind: KindTinyInt} }
func SmallInt() DataType { return DataType{Kind: KindSmallInt} }
func Int() DataType      { return DataType{Kind: KindInt} }
func BigInt() DataType   { return DataType{Kind: KindBigInt} }
func Float() DataType    { return DataType{Kind: KindFloat} }
func Double() DataType   { return DataType{Kind: KindDouble} }
func DateType() DataType { return DataType{Kind: KindDate} }

// DecimalType is DECIMAL(p, s); named so that it does not clash with the
// value type Decimal.
func DecimalType(p, s int) DataType { return DataType{Kind: KindDecimal, Precision: p, Scale: s} }

func Char(n int) DataType      { return DataType{Kind: KindChar, Length: n} }
func VarChar(n int) DataType   { return DataType{Kind: KindVarChar, Length: n} }
func String() DataType         { return VarChar(MaxLength) }
func Binary(n int) DataType    { return DataType{Kind: KindBinary, Length: n} }
func VarBinary(n int) DataType { return DataType{Kind: KindVarBinary, Length: n} }
func Bytes() DataType          { return VarBinary(MaxLength) }

// TimeType is TIME(p); Flink's SQL TIME without precision is TIME(0).
func TimeType(p int) DataType { return DataType{Kind: KindTime, Precision: p} }

// TimestampType is TIMESTAMP(p); TIMESTAMP without precision is TIMESTAMP(6).
func TimestampType(p int) DataType { return DataType{Kind: KindTimestamp, Precision: p} }

// TimestampLTZType is TIMESTAMP_LTZ(p) (TIMESTAMP(p) WITH LOCAL TIME ZONE).
func TimestampLTZType(p int) DataType { return DataType{Kind: KindTimestampLTZ, Precision: p} }

// IntervalYearMonth is INTERVAL YEAR(2) TO MONTH, the type Flink gives
// year-month interval literals.
func IntervalYearMonth() DataType {
	return DataType{Kind: KindIntervalYearMonth, Res: ResYearToMonth, LeadingPrec: 2}
}

// IntervalDayTime is INTERVAL DAY(2) TO SECOND(3), the type Flink gives
// day-time interval literals.
func IntervalDayTime() DataType {
	return DataType{Kind: KindIntervalDayTime, Res: ResDayToSecond, LeadingPrec: 2, Precision: 3}
}

// Interval builds an interval type of the given resolution; lead is the
// leading precision (YEAR(p)/DAY(p), default 2) and frac the fractional
// second precision (default 6).
func Interval(res IntervalRes, lead, frac int) DataType {
	if res <= ResMonth {
		return DataType{Kind: KindIntervalYearMonth, Res: res, LeadingPrec: lead}
	}
	return DataType{Kind: KindIntervalDayTime, Res: res, LeadingPrec: lead, Precision: frac}
}

func Array(elem DataType) DataType    { return DataType{Kind: KindArray, Elem: &elem} }
func Multiset(elem DataType) DataType { return DataType{Kind: KindMultiset, Elem: &elem} }
func MapType(k, v DataType) DataType  { return DataType{Kind: KindMap, Key: &k, Value: &v} }

// RowType builds ROW<...> from fields.
func RowType(fields ...Field) DataType {
	return DataType{Kind: KindRow, Fields: append([]Field(nil), fields...)}
}

// F is shorthand for a Field.
func F(name string, t DataType) Field { return Field{Name: name, Type: t} }

// Nullable returns a copy that admits NULL.
func (t DataType) Nullable() DataType { t.notNull = false; return t }

// NotNull returns a copy that does not admit NULL.
func (t DataType) NotNull() DataType { t.notNull = true; return t }

// WithNullable returns a copy with the given nullability.
func (t DataType) WithNullable(nullable bool) DataType { t.notNull = !nullable; return t }

// IsNullable reports whether the type admits NULL.
func (t DataType) IsNullable() bool { return !t.notNull }

// WithTimeAttr returns a copy marked as a time attribute.
func (t DataType) WithTimeAttr(a TimeAttr) DataType { t.TimeAttr = a; return t }

// ElemType returns the element type of an ARRAY or MULTISET.
func (t DataType) ElemType() DataType {
	if t.Elem == nil {
		return Null()
	}
	return *t.Elem
}

// KeyType and ValueType return a MAP's types.
func (t DataType) KeyType() DataType {
	if t.Key == nil {
		return Null()
	}
	return *t.Key
}

func (t DataType) ValueType() DataType {
	if t.Value == nil {
		return Null()
	}
	return *t.Value
}

// Equal reports whether two types are the same, nullability and parameters
// included; field names of rows count, time attribute markers do not.
func (t DataType) Equal(o DataType) bool { return t.equal(o, true) }

// EqualIgnoringNull is Equal without looking at the top-level nullability.
func (t DataType) EqualIgnoringNull(o DataType) bool { return t.equal(o, false) }

func (t DataType) equal(o DataType, nullability bool) bool {
	if t.Kind != o.Kind || (nullability && t.notNull != o.notNull) {
		return false
	}
	switch t.Kind {
	case KindChar, KindVarChar, KindBinary, KindVarBinary:
		return t.Length == o.Length
	case KindDecimal:
		return t.Precision == o.Precision && t.Scale == o.Scale
	case KindTime, KindTimestamp, KindTimestampLTZ:
		return t.Precision == o.Precision
	case KindIntervalYearMonth:
		return t.Res == o.Res && t.LeadingPrec == o.LeadingPrec
	case KindIntervalDayTime:
		return t.Res == o.Res && t.LeadingPrec == o.LeadingPrec && t.Precision == o.Precision
	case KindArray, KindMultiset:
		return t.ElemType().Equal(o.ElemType())
	case KindMap:
		return t.KeyType().Equal(o.KeyType()) && t.ValueType().Equal(o.ValueType())
	case KindRow:
		if len(t.Fields) != len(o.Fields) {
			return false
		}
		for i := range t.Fields {
			if t.Fields[i].Name != o.Fields[i].Name || !t.Fields[i].Type.Equal(o.Fields[i].Type) {
				return false
			}
		}
	}
	return true
}

// String renders the type as Flink's DESCRIBE and type summaries do:
// `INT NOT NULL`, `STRING`, `DECIMAL(10, 2)`, `TIMESTAMP(3) *ROWTIME*`,
// `ROW<`a` INT, `b` STRING>`, `INTERVAL DAY(2) TO SECOND(3)`.
func (t DataType) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t DataType) write(b *strings.Builder) {
	switch t.Kind {
	case KindChar:
		b.WriteString("CHAR(")
		b.WriteString(strconv.Itoa(t.Length))
		b.WriteByte(')')
	case KindVarChar:
		if t.Length == MaxLength {
			b.WriteString("STRING")
		} else {
			b.WriteString("VARCHAR(")
			b.WriteString(strconv.Itoa(t.Length))
			b.WriteByte(')')
		}
	case KindBinary:
		b.WriteString("BINARY(")
		b.WriteString(strconv.Itoa(t.Length))
		b.WriteByte(')')
	case KindVarBinary:
		if t.Length == MaxLength {
			b.WriteString("BYTES")
		} else {
			b.WriteString("VARBINARY(")
			b.WriteString(strconv.Itoa(t.Length))
			b.WriteByte(')')
		}
	case KindDecimal:
		b.WriteString("DECIMAL(")
		b.WriteString(strconv.Itoa(t.Precision))
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(t.Scale))
		b.WriteByte(')')
	case KindTime, KindTimestamp, KindTimestampLTZ:
		b.WriteString(t.Kind.String())
		b.WriteByte('(')
		b.WriteString(strconv.Itoa(t.Precision))
		b.WriteByte(')')
		switch t.TimeAttr {
		case TimeAttrRowtime:
			b.WriteString(" *ROWTIME*")
		case TimeAttrProctime:
			b.WriteString(" *PROCTIME*")
		}
	case KindIntervalYearMonth, KindIntervalDayTime:
		b.WriteString(intervalString(t))
	case KindArray, KindMultiset:
		b.WriteString(t.Kind.String())
		b.WriteByte('<')
		t.ElemType().write(b)
		b.WriteByte('>')
	case KindMap:
		b.WriteString("MAP<")
		t.KeyType().write(b)
		b.WriteString(", ")
		t.ValueType().write(b)
		b.WriteByte('>')
	case KindRow:
		b.WriteString("ROW<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('`')
			b.WriteString(strings.ReplaceAll(f.Name, "`", "``"))
			b.WriteString("` ")
			f.Type.write(b)
		}
		b.WriteByte('>')
	default:
		b.WriteString(t.Kind.String())
	}
	if t.notNull && t.Kind != KindNull {
		b.WriteString(" NOT NULL")
	}
}

func intervalString(t DataType) string {
	p1 := strconv.Itoa(t.LeadingPrec)
	p2 := strconv.Itoa(t.Precision)
	switch t.Res {
	case ResYear:
		return "INTERVAL YEAR(" + p1 + ")"
	case ResYearToMonth:
		return "INTERVAL YEAR(" + p1 + ") TO MONTH"
	case ResMonth:
		return "INTERVAL MONTH"
	case ResDay:
		return "INTERVAL DAY(" + p1 + ")"
	case ResDayToHour:
		return "INTERVAL DAY(" + p1 + ") TO HOUR"
	case ResDayToMinute:
		return "INTERVAL DAY(" + p1 + ") TO MINUTE"
	case ResDayToSecond:
		return "INTERVAL DAY(" + p1 + ") TO SECOND(" + p2 + ")"
	case ResHour:
		return "INTERVAL HOUR"
	case ResHourToMinute:
		return "INTERVAL HOUR TO MINUTE"
	case ResHourToSecond:
		return "INTERVAL HOUR TO SECOND(" + p2 + ")"
	case ResMinute:
		return "INTERVAL MINUTE"
	case ResMinuteToSecond:
		return "INTERVAL MINUTE TO SECOND(" + p2 + ")"
	default:
		return "INTERVAL SECOND(" + p2 + ")"
	}
}

// Validate checks the parameters against Flink's limits.
func (t DataType) Validate() error {
	switch t.Kind {
	case KindChar, KindVarChar, KindBinary, KindVarBinary:
		if t.Length < 1 || t.Length > MaxLength {
			return errorf("%s length must be between 1 and %d (both inclusive), got %d", t.Kind, MaxLength, t.Length)
		}
	case KindDecimal:
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision {
			return errorf("decimal precision must be between 1 and %d (both inclusive), got %d", MaxDecimalPrecision, t.Precision)
		}
		if t.Scale < 0 || t.Scale > t.Precision {
			return errorf("decimal scale must be between 0 and the precision %d (both inclusive), got %d", t.Precision, t.Scale)
		}
	case KindTime, KindTimestamp, KindTimestampLTZ:
		if t.Precision < 0 || t.Precision > MaxTimePrecision {
			return errorf("%s precision must be between 0 and 9 (both inclusive), got %d", t.Kind, t.Precision)
		}
	case KindArray, KindMultiset:
		if t.Elem == nil {
			return errorf("%s without an element type", t.Kind)
		}
		return t.Elem.Validate()
	case KindMap:
		if t.Key == nil || t.Value == nil {
			return errorf("MAP without key or value type")
		}
		if err := t.Key.Validate(); err != nil {
			return err
		}
		return t.Value.Validate()
	case KindRow:
		seen := map[string]bool{}
		for _, f := range t.Fields {
			if seen[f.Name] {
				return errorf("ROW field names must be unique, %q repeats", f.Name)
			}
			seen[f.Name] = true
			if err := f.Type.Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}
