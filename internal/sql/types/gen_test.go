package types

import (
	"math"
	"math/big"

	"pgregory.net/rapid"
)

// testTypes covers every kind, with nesting and NULLs at every level.
var testTypes = []DataType{
	Boolean(), TinyInt(), SmallInt(), Int(), BigInt(), Float(), Double(),
	DecimalType(5, 2), DecimalType(18, 4), DecimalType(38, 10), DecimalType(38, 0),
	String(), VarChar(10), Char(3), Bytes(), Binary(4),
	DateType(), TimeType(0), TimeType(9), TimestampType(3), TimestampType(9), TimestampLTZType(3),
	IntervalYearMonth(), IntervalDayTime(),
	Array(Int()),
	Array(RowType(F("a", Int()), F("b", String()), F("c", Array(Double())))),
	MapType(String(), Array(BigInt())),
	Multiset(String()),
	RowType(F("x", DecimalType(38, 10)), F("y", TimestampType(9)), F("z", MapType(Int(), String()))),
}

func genDecimal(p, s int) *rapid.Generator[Decimal] {
	return rapid.Custom(func(t *rapid.T) Decimal {
		digits := rapid.IntRange(1, p).Draw(t, "digits")
		u := new(big.Int)
		for i := 0; i < digits; i++ {
			u.Mul(u, big.NewInt(10))
			u.Add(u, big.NewInt(int64(rapid.IntRange(0, 9).Draw(t, "d"))))
		}
		if rapid.Bool().Draw(t, "neg") {
			u.Neg(u)
		}
		return DecimalFromBig(u, s)
	})
}

func genTimestamp(p int) *rapid.Generator[Timestamp] {
	return rapid.Custom(func(t *rapid.T) Timestamp {
		ms := rapid.Int64Range(minTimestampMillis, maxTimestampMillis).Draw(t, "ms")
		ns := int32(rapid.IntRange(0, 999999).Draw(t, "ns"))
		return TruncateTimestamp(Timestamp{Millis: ms, NanoOfMilli: ns}, p)
	})
}

func genFloat() *rapid.Generator[float64] {
	return rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1, -1, 0.1}))
}

// genValue draws a value of type t; NULL with some probability when
// nullable.
func genValue(t DataType, nullable bool) *rapid.Generator[any] {
	return rapid.Custom(func(rt *rapid.T) any {
		if nullable && rapid.IntRange(0, 5).Draw(rt, "null") == 0 {
			return nil
		}
		switch t.Kind {
		case KindBoolean:
			return rapid.Bool().Draw(rt, "b")
		case KindTinyInt:
			return rapid.Int8().Draw(rt, "i8")
		case KindSmallInt:
			return rapid.Int16().Draw(rt, "i16")
		case KindInt:
			return rapid.Int32().Draw(rt, "i32")
		case KindBigInt:
			return rapid.Int64().Draw(rt, "i64")
		case KindFloat:
			return float32(genFloat().Draw(rt, "f32"))
		case KindDouble:
			return genFloat().Draw(rt, "f64")
		case KindDecimal:
			return genDecimal(t.Precision, t.Scale).Draw(rt, "dec")
		case KindChar, KindVarChar:
			s := rapid.StringOfN(rapid.RuneFrom([]rune{'a', 'b', 0, 'é', '中', 0xffff, 'z'}), 0, 6, -1).Draw(rt, "s")
			return fitString(s, t)
		case KindBinary, KindVarBinary:
			return fitBytes(rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(rt, "bs"), t)
		case KindDate:
			return Date(rapid.Int32Range(int32(MakeDate(0, 1, 1)), int32(MakeDate(9999, 12, 31))).Draw(rt, "date"))
		case KindTime:
			return TruncateTime(Time(rapid.Int64Range(0, nanosPerDay-1).Draw(rt, "time")), t.Precision)
		case KindTimestamp:
			return genTimestamp(t.Precision).Draw(rt, "ts")
		case KindTimestampLTZ:
			return TimestampLTZ(genTimestamp(t.Precision).Draw(rt, "ltz"))
		case KindIntervalYearMonth:
			return IntervalMonths(rapid.Int32().Draw(rt, "months"))
		case KindIntervalDayTime:
			return IntervalMillis(rapid.Int64().Draw(rt, "millis"))
		case KindArray:
			n := rapid.IntRange(0, 4).Draw(rt, "n")
			xs := make([]any, n)
			for i := range xs {
				xs[i] = genValue(t.ElemType(), true).Draw(rt, "e")
			}
			return xs
		case KindMap, KindMultiset:
			kt, vt := mapTypes(t)
			n := rapid.IntRange(0, 4).Draw(rt, "n")
			m := &Map{}
		outer:
			for i := 0; i < n; i++ {
				k := genValue(kt, true).Draw(rt, "k")
				for _, old := range m.Keys {
					if Equal(old, k, kt) {
						continue outer
					}
				}
				m.Keys = append(m.Keys, k)
				if t.Kind == KindMultiset {
					m.Values = append(m.Values, int32(rapid.IntRange(1, 5).Draw(rt, "cnt")))
				} else {
					m.Values = append(m.Values, genValue(vt, true).Draw(rt, "v"))
				}
			}
			return m
		case KindRow:
			r := make(Row, len(t.Fields))
			for i, f := range t.Fields {
				r[i] = genValue(f.Type, true).Draw(rt, f.Name)
			}
			return r
		}
		return nil
	})
}
