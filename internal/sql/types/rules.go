package types

// Type rules after Flink's LogicalTypeCasts / LogicalTypeMerging and the
// Calcite return-type inference Flink's planner applies to operators.

// integralDecimal returns the DECIMAL an integral kind widens to when it
// meets a DECIMAL (TINYINT = DECIMAL(3, 0) ... BIGINT = DECIMAL(19, 0)).
func integralDecimal(k Kind) (p, s int) {
	switch k {
	case KindTinyInt:
		return 3, 0
	case KindSmallInt:
		return 5, 0
	case KindInt:
		return 10, 0
	case KindBigInt:
		return 19, 0
	}
	return 0, 0
}

// AsDecimal returns the DECIMAL type of an exact numeric type.
func AsDecimal(t DataType) DataType {
	if t.Kind == KindDecimal {
		return t
	}
	p, s := integralDecimal(t.Kind)
	return DataType{Kind: KindDecimal, Precision: p, Scale: s, notNull: t.notNull}
}

// ImplicitCastable reports whether a value of type from widens to type to
// without loss (Flink's supportsImplicitCast), ignoring nullability.
func ImplicitCastable(from, to DataType) bool {
	if from.Kind == KindNull {
		return true
	}
	if from.EqualIgnoringNull(to) {
		return true
	}
	f, t := from.Kind, to.Kind
	switch {
	case f.IsConstructed() || t.IsConstructed():
		return constructedCastable(from, to, false)
	}
	switch t {
	case KindChar:
		return f == KindChar
	case KindVarChar:
		return f.IsCharacterString()
	case KindBoolean:
		return f == KindBoolean
	case KindBinary:
		return f == KindBinary
	case KindVarBinary:
		return f.IsBinaryString()
	case KindDecimal:
		return f.IsNumeric()
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt:
		return f.IsIntegral() && f <= t
	case KindFloat:
		return f.IsExactNumeric() || f == KindFloat
	case KindDouble:
		return f.IsNumeric()
	case KindDate:
		return f == KindDate || f == KindTimestamp
	case KindTime:
		return f == KindTime || f == KindTimestamp
	case KindTimestamp:
		return f == KindTimestamp
	case KindTimestampLTZ:
		return f == KindTimestampLTZ
	case KindIntervalYearMonth, KindIntervalDayTime:
		return f == t
	}
	return false
}

func constructedCastable(from, to DataType, explicit bool) bool {
	if from.Kind != to.Kind {
		return false
	}
	can := ImplicitCastable
	if explicit {
		can = ExplicitCastable
	}
	switch from.Kind {
	case KindArray, KindMultiset:
		return can(from.ElemType(), to.ElemType())
	case KindMap:
		return can(from.KeyType(), to.KeyType()) && can(from.ValueType(), to.ValueType())
	case KindRow:
		if len(from.Fields) != len(to.Fields) {
			return false
		}
		for i := range from.Fields {
			if !can(from.Fields[i].Type, to.Fields[i].Type) {
				return false
			}
		}
		return true
	}
	return false
}

// ExplicitCastable reports whether CAST(from AS to) is allowed, per the
// cast matrix of Flink's "Data Types" page (section "Casting"; Flink ≥ 1.15).
func ExplicitCastable(from, to DataType) bool {
	if ImplicitCastable(from, to) {
		return true
	}
	f, t := from.Kind, to.Kind
	if t.IsCharacterString() {
		return true // every type casts to a string
	}
	if f.IsConstructed() || t.IsConstructed() {
		return constructedCastable(from, to, true)
	}
	switch {
	case f.IsCharacterString():
		return !t.IsInterval()
	case f.IsBinaryString():
		return t.IsBinaryString()
	case f == KindBoolean:
		return t == KindBoolean || t.IsNumeric()
	case f.IsNumeric():
		if t.IsNumeric() {
			return true
		}
		if t == KindBoolean {
			return f.IsIntegral() || f == KindDecimal
		}
		if t == KindIntervalYearMonth {
			return f == KindInt
		}
		if t == KindIntervalDayTime {
			return f == KindBigInt
		}
		return false
	case f == KindDate:
		return t == KindDate || t.IsTimestamp()
	case f == KindTime:
		return t == KindTime || t.IsTimestamp()
	case f.IsTimestamp():
		return t.IsDatetime()
	case f == KindIntervalYearMonth:
		return t == KindInt || t == f
	case f == KindIntervalDayTime:
		return t == KindBigInt || t == f
	}
	return false
}

// LeastRestrictive returns the common type of ts (for UNION, CASE,
// COALESCE, IN lists and comparisons), as Calcite's leastRestrictive with
// Flink's additions; ok is false when there is none (e.g. STRING and INT).
// The result is nullable if any input is.
func LeastRestrictive(ts ...DataType) (DataType, bool) {
	nullable := false
	var res DataType
	have := false
	for _, t := range ts {
		if t.IsNullable() {
			nullable = true
		}
		if t.Kind == KindNull {
			continue
		}
		if !have {
			res, have = t, true
			continue
		}
		var ok bool
		res, ok = common2(res, t)
		if !ok {
			return DataType{}, false
		}
	}
	if !have {
		return Null(), true
	}
	return res.WithNullable(nullable), true
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func common2(a, b DataType) (DataType, bool) {
	ak, bk := a.Kind, b.Kind
	n := a.IsNullable() || b.IsNullable()
	out := func(t DataType) (DataType, bool) { return t.WithNullable(n), true }
	switch {
	case a.EqualIgnoringNull(b):
		return out(a)
	case ak.IsCharacterString() && bk.IsCharacterString():
		// CHARs of different lengths meet in VARCHAR, not in a padded
		// CHAR: Flink's rule since FLINK-9559, so that CASE WHEN .. THEN
		// 'a' ELSE 'bbb' END gives 'a', not 'a  '.
		l := maxInt(a.Length, b.Length)
		return out(VarChar(l))
	case ak.IsBinaryString() && bk.IsBinaryString():
		l := maxInt(a.Length, b.Length)
		if ak == KindBinary && bk == KindBinary {
			return out(Binary(l))
		}
		return out(VarBinary(l))
	case ak.IsNumeric() && bk.IsNumeric():
		switch {
		case ak == KindDouble || bk == KindDouble:
			return out(Double())
		case ak == KindFloat || bk == KindFloat:
			if ak == KindDecimal || bk == KindDecimal {
				return out(Double())
			}
			return out(Float())
		case ak == KindDecimal || bk == KindDecimal:
			da, db := AsDecimal(a), AsDecimal(b)
			s := maxInt(da.Scale, db.Scale)
			intd := maxInt(da.Precision-da.Scale, db.Precision-db.Scale)
			p := intd + s
			if p > MaxDecimalPrecision {
				p = MaxDecimalPrecision
				s = maxInt(0, MaxDecimalPrecision-intd)
			}
			return out(DecimalType(p, s))
		default:
			if ak > bk {
				return out(a)
			}
			return out(b)
		}
	case ak.IsDatetime() && bk.IsDatetime():
		switch {
		case ak == KindTime && bk == KindTime:
			return out(TimeType(maxInt(a.Precision, b.Precision)))
		case ak == KindTime || bk == KindTime:
			return DataType{}, false
		}
		p := maxInt(tsPrecision(a), tsPrecision(b))
		if ak == KindTimestampLTZ || bk == KindTimestampLTZ {
			return out(TimestampLTZType(p))
		}
		return out(TimestampType(p))
	case ak == bk && ak.IsInterval():
		r := a
		r.LeadingPrec = maxInt(a.LeadingPrec, b.LeadingPrec)
		r.Precision = maxInt(a.Precision, b.Precision)
		if a.Res != b.Res {
			if ak == KindIntervalYearMonth {
				r.Res = ResYearToMonth
			} else {
				r.Res = ResDayToSecond
			}
		}
		return out(r)
	case ak == bk && (ak == KindArray || ak == KindMultiset):
		e, ok := LeastRestrictive(a.ElemType(), b.ElemType())
		if !ok {
			return DataType{}, false
		}
		r := a
		r.Elem = &e
		return out(r)
	case ak == KindMap && bk == KindMap:
		k, ok1 := LeastRestrictive(a.KeyType(), b.KeyType())
		v, ok2 := LeastRestrictive(a.ValueType(), b.ValueType())
		if !ok1 || !ok2 {
			return DataType{}, false
		}
		return out(MapType(k, v))
	case ak == KindRow && bk == KindRow && len(a.Fields) == len(b.Fields):
		fs := make([]Field, len(a.Fields))
		for i := range fs {
			t, ok := LeastRestrictive(a.Fields[i].Type, b.Fields[i].Type)
			if !ok {
				return DataType{}, false
			}
			fs[i] = Field{Name: a.Fields[i].Name, Type: t}
		}
		return out(RowType(fs...))
	}
	return DataType{}, false
}

func tsPrecision(t DataType) int {
	if t.Kind == KindDate {
		return 0
	}
	return t.Precision
}

// adjustDecimal caps a derived DECIMAL at precision 38 the way Flink does
// (LogicalTypeMerging.adjustPrecisionScale, after SQL Server): integer
// digits are kept and the scale shrinks, but not below min(scale, 6).
func adjustDecimal(p, s int) DataType {
	if p <= MaxDecimalPrecision {
		return DecimalType(p, s)
	}
	intd := p - s
	minScale := minInt(s, 6)
	s = maxInt(MaxDecimalPrecision-intd, minScale)
	return DecimalType(MaxDecimalPrecision, s)
}

// DecimalSumType is DECIMAL(p1,s1) + or - DECIMAL(p2,s2).
func DecimalSumType(p1, s1, p2, s2 int) DataType {
	s := maxInt(s1, s2)
	return adjustDecimal(maxInt(p1-s1, p2-s2)+s+1, s)
}

// DecimalProductType is DECIMAL(p1,s1) * DECIMAL(p2,s2).
func DecimalProductType(p1, s1, p2, s2 int) DataType {
	return adjustDecimal(p1+p2+1, s1+s2)
}

// DecimalQuotientType is DECIMAL(p1,s1) / DECIMAL(p2,s2).
func DecimalQuotientType(p1, s1, p2, s2 int) DataType {
	s := maxInt(6, s1+p2+1)
	return adjustDecimal(p1-s1+s2+s, s)
}

// DecimalModType is MOD(DECIMAL(p1,s1), DECIMAL(p2,s2)).
func DecimalModType(p1, s1, p2, s2 int) DataType {
	s := maxInt(s1, s2)
	return adjustDecimal(minInt(p1-s1, p2-s2)+s, s)
}

// SumType is the result type of SUM over t (SUM of INT is INT, of
// DECIMAL(p, s) is DECIMAL(38, s)); nullable.
func SumType(t DataType) DataType {
	if t.Kind == KindDecimal {
		return DecimalType(MaxDecimalPrecision, t.Scale)
	}
	return t.Nullable()
}

// AvgType is the result type of AVG (and STDDEV/VAR) over t: the input
// type for integral and approximate numbers (Flink's integer average), and
// DECIMAL(38, max(6, s)) for DECIMAL(p, s); nullable.
func AvgType(t DataType) DataType {
	if t.Kind == KindDecimal {
		return DecimalQuotientType(38, t.Scale, 20, 0).Nullable()
	}
	return t.Nullable()
}

// ArithOp is a binary arithmetic operator.
type ArithOp byte

// Arithmetic operators.
const (
	OpAdd ArithOp = '+'
	OpSub ArithOp = '-'
	OpMul ArithOp = '*'
	OpDiv ArithOp = '/'
	OpMod ArithOp = '%'
)

// ArithmeticType returns the result type of a op b, or ok=false when the
// operator does not apply to the pair. Numeric rules: INT op BIGINT is
// BIGINT, INT / INT is INT, MOD takes the type of its second argument for
// integers, DECIMAL results per Flink's precision/scale rules (capped at
// 38), anything with DOUBLE is DOUBLE, FLOAT with an integer is FLOAT and
// FLOAT with DECIMAL is DOUBLE. Temporal rules: TIMESTAMP/DATE/TIME ±
// INTERVAL keeps the temporal type, INTERVAL ± INTERVAL, INTERVAL × or /
// a number, number × INTERVAL.
func ArithmeticType(op ArithOp, a, b DataType) (DataType, bool) {
	n := a.IsNullable() || b.IsNullable()
	ak, bk := a.Kind, b.Kind
	if ak == KindNull && bk == KindNull {
		return Null(), true
	}
	if ak == KindNull {
		a, ak = b, bk
	}
	if bk == KindNull {
		b, bk = a, ak
	}
	res := func(t DataType) (DataType, bool) { return t.WithNullable(n), true }
	if ak.IsNumeric() && bk.IsNumeric() {
		if ak.IsApproxNumeric() || bk.IsApproxNumeric() {
			t, _ := common2(a, b)
			return res(t)
		}
		if ak == KindDecimal || bk == KindDecimal {
			da, db := AsDecimal(a), AsDecimal(b)
			p1, s1, p2, s2 := da.Precision, da.Scale, db.Precision, db.Scale
			switch op {
			case OpAdd, OpSub:
				return res(DecimalSumType(p1, s1, p2, s2))
			case OpMul:
				return res(DecimalProductType(p1, s1, p2, s2))
			case OpDiv:
				return res(DecimalQuotientType(p1, s1, p2, s2))
			case OpMod:
				return res(DecimalModType(p1, s1, p2, s2))
			}
			return DataType{}, false
		}
		if op == OpMod {
			return res(b)
		}
		if ak > bk {
			return res(a)
		}
		return res(b)
	}
	switch op {
	case OpAdd, OpSub:
		switch {
		case (ak == KindTimestamp || ak == KindTimestampLTZ || ak == KindDate) && bk.IsInterval():
			return res(a)
		case ak == KindTime && bk == KindIntervalDayTime:
			return res(a)
		case op == OpAdd && ak.IsInterval() && (bk.IsTimestamp() || bk == KindDate || (bk == KindTime && ak == KindIntervalDayTime)):
			return res(b)
		case ak.IsInterval() && ak == bk:
			t, _ := common2(a, b)
			return res(t)
		}
	case OpMul:
		if ak.IsInterval() && bk.IsNumeric() {
			return res(a)
		}
		if bk.IsInterval() && ak.IsNumeric() {
			return res(b)
		}
	case OpDiv:
		if ak.IsInterval() && bk.IsNumeric() {
			return res(a)
		}
	}
	return DataType{}, false
}

// Comparable reports whether values of a and b can be compared with = and
// < after implicit widening to their common type.
func Comparable(a, b DataType) bool {
	_, ok := LeastRestrictive(a, b)
	return ok
}
