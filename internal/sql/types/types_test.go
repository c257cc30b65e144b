package types

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Type strings as Flink's DESCRIBE / LogicalType#asSummaryString print them
// (flink-table-common LogicalType subclasses; "Data Types" docs page).
func TestDataTypeString(t *testing.T) {
	cases := []struct {
		t    DataType
		want string
	}{
		{Int().NotNull(), "INT NOT NULL"},
		{Int(), "INT"},
		{String(), "STRING"},
		{VarChar(10), "VARCHAR(10)"},
		{Char(1), "CHAR(1)"},
		{Bytes(), "BYTES"},
		{VarBinary(3), "VARBINARY(3)"},
		{DecimalType(10, 2), "DECIMAL(10, 2)"},
		{TimestampType(3), "TIMESTAMP(3)"},
		{TimestampLTZType(3), "TIMESTAMP_LTZ(3)"},
		{TimestampType(3).WithTimeAttr(TimeAttrRowtime), "TIMESTAMP(3) *ROWTIME*"},
		{TimestampLTZType(3).WithTimeAttr(TimeAttrProctime).NotNull(), "TIMESTAMP_LTZ(3) *PROCTIME* NOT NULL"},
		{TimeType(0), "TIME(0)"},
		{DateType(), "DATE"},
		{RowType(F("a", Int()), F("b", String())), "ROW<`a` INT, `b` STRING>"},
		{Array(Int().NotNull()).NotNull(), "ARRAY<INT NOT NULL> NOT NULL"},
		{MapType(String(), BigInt()), "MAP<STRING, BIGINT>"},
		{Multiset(Int()), "MULTISET<INT>"},
		{IntervalDayTime(), "INTERVAL DAY(2) TO SECOND(3)"},
		{IntervalYearMonth(), "INTERVAL YEAR(2) TO MONTH"},
		{Interval(ResSecond, 2, 9), "INTERVAL SECOND(9)"},
		{Interval(ResMonth, 2, 6), "INTERVAL MONTH"},
		{Null(), "NULL"},
		{Boolean(), "BOOLEAN"},
	}
	for _, c := range cases {
		if got := c.t.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestDataTypeEqualAndValidate(t *testing.T) {
	if !Array(Int()).Equal(Array(Int())) || Array(Int()).Equal(Array(BigInt())) {
		t.Error("ARRAY equality")
	}
	if Int().Equal(Int().NotNull()) || !Int().EqualIgnoringNull(Int().NotNull()) {
		t.Error("nullability in equality")
	}
	if !TimestampType(3).Equal(TimestampType(3).WithTimeAttr(TimeAttrRowtime)) {
		t.Error("time attribute must not affect equality")
	}
	for _, bad := range []DataType{DecimalType(39, 0), DecimalType(5, 6), VarChar(0), TimestampType(10),
		RowType(F("a", Int()), F("a", Int()))} {
		if bad.Validate() == nil {
			t.Errorf("%s validated", bad)
		}
	}
	for _, tt := range testTypes {
		if err := tt.Validate(); err != nil {
			t.Errorf("%s: %v", tt, err)
		}
	}
}

// Result types per Flink's LogicalTypeMerging (find{Addition,Multiplication,
// Division,Modulo}DecimalType, adjustPrecisionScale — the SQL Server rules
// of "Precision, scale, and length (Transact-SQL)") and Calcite's
// least-restrictive rule for the rest.
func TestArithmeticType(t *testing.T) {
	d := DecimalType
	cases := []struct {
		op   ArithOp
		a, b DataType
		want string
	}{
		{OpAdd, Int(), Int(), "INT"},
		{OpDiv, Int(), Int(), "INT"},
		{OpAdd, Int(), BigInt(), "BIGINT"},
		{OpMul, TinyInt(), SmallInt(), "SMALLINT"},
		{OpMod, BigInt(), Int(), "INT"},
		{OpAdd, Int().NotNull(), Int().NotNull(), "INT NOT NULL"},
		{OpAdd, d(10, 2), d(5, 3), "DECIMAL(12, 3)"},
		{OpSub, d(10, 2), d(5, 3), "DECIMAL(12, 3)"},
		{OpMul, d(10, 2), d(5, 3), "DECIMAL(16, 5)"},
		{OpDiv, d(10, 2), d(5, 3), "DECIMAL(19, 8)"},
		{OpMod, d(10, 2), d(5, 3), "DECIMAL(5, 3)"},
		{OpAdd, Int(), d(10, 2), "DECIMAL(13, 2)"},
		{OpMul, d(38, 10), d(38, 10), "DECIMAL(38, 6)"},
		{OpDiv, d(38, 0), d(38, 0), "DECIMAL(38, 6)"},
		{OpAdd, d(38, 2), d(38, 2), "DECIMAL(38, 2)"},
		{OpAdd, d(38, 10), d(38, 0), "DECIMAL(38, 6)"},
		{OpAdd, Double(), Int(), "DOUBLE"},
		{OpAdd, Float(), Int(), "FLOAT"},
		{OpAdd, Float(), d(5, 2), "DOUBLE"},
		{OpAdd, TimestampType(3), IntervalDayTime(), "TIMESTAMP(3)"},
		{OpSub, DateType(), IntervalYearMonth(), "DATE"},
		{OpAdd, IntervalDayTime(), TimestampLTZType(3), "TIMESTAMP_LTZ(3)"},
		{OpMul, IntervalDayTime(), Int(), "INTERVAL DAY(2) TO SECOND(3)"},
	}
	for _, c := range cases {
		got, ok := ArithmeticType(c.op, c.a, c.b)
		if !ok || got.String() != c.want {
			t.Errorf("%s %c %s = %s (%v), want %s", c.a, c.op, c.b, got, ok, c.want)
		}
	}
	if _, ok := ArithmeticType(OpAdd, String(), Int()); ok {
		t.Error("STRING + INT must not type")
	}
	if got := SumType(d(10, 2)); got.String() != "DECIMAL(38, 2)" {
		t.Errorf("SUM(DECIMAL(10, 2)) = %s", got)
	}
	if got := AvgType(d(10, 2)); got.String() != "DECIMAL(38, 6)" {
		t.Errorf("AVG(DECIMAL(10, 2)) = %s", got)
	}
	if got := AvgType(d(20, 8)); got.String() != "DECIMAL(38, 8)" {
		t.Errorf("AVG(DECIMAL(20, 8)) = %s", got)
	}
	if got := AvgType(Int().NotNull()); got.String() != "INT" {
		t.Errorf("AVG(INT) = %s", got)
	}
}

func TestLeastRestrictive(t *testing.T) {
	cases := []struct {
		in   []DataType
		want string
	}{
		{[]DataType{Int(), BigInt()}, "BIGINT"},
		{[]DataType{Int().NotNull(), Null()}, "INT"},
		{[]DataType{Int().NotNull(), SmallInt().NotNull()}, "INT NOT NULL"},
		// FLINK-9559: CHARs of different lengths meet in VARCHAR (no padding).
		{[]DataType{Char(2), Char(5)}, "VARCHAR(5)"},
		{[]DataType{Char(5), Char(5)}, "CHAR(5)"},
		{[]DataType{Char(3), VarChar(2)}, "VARCHAR(3)"},
		{[]DataType{DecimalType(10, 2), Int()}, "DECIMAL(12, 2)"},
		{[]DataType{DecimalType(10, 2), Double()}, "DOUBLE"},
		{[]DataType{DateType(), TimestampType(3)}, "TIMESTAMP(3)"},
		{[]DataType{Array(Int()), Array(BigInt())}, "ARRAY<BIGINT>"},
		{[]DataType{Null(), Null()}, "NULL"},
	}
	for _, c := range cases {
		got, ok := LeastRestrictive(c.in...)
		if !ok || got.String() != c.want {
			t.Errorf("LeastRestrictive(%v) = %s (%v), want %s", c.in, got, ok, c.want)
		}
	}
	if _, ok := LeastRestrictive(String(), Int()); ok {
		t.Error("STRING and INT have no common type in Flink")
	}
}

// Entries of the cast matrix on Flink's "Data Types" page, section Casting;
// implicit rules as LogicalTypeCasts (DECIMAL is implicit from every NUMERIC).
func TestCastMatrix(t *testing.T) {
	yes := [][2]DataType{
		{String(), Int()}, {String(), Bytes()}, {Bytes(), String()}, {Boolean(), Int()},
		{Int(), Boolean()}, {DecimalType(5, 2), BigInt()}, {Double(), DecimalType(10, 2)},
		{DateType(), TimestampType(3)}, {TimestampType(3), TimeType(0)}, {TimestampLTZType(3), DateType()},
		{Int(), IntervalYearMonth()}, {BigInt(), IntervalDayTime()}, {IntervalDayTime(), BigInt()},
		{Array(Int()), Array(String())}, {RowType(F("a", Int())), String()}, {Null(), Int()},
	}
	no := [][2]DataType{
		{Bytes(), Int()}, {Double(), Boolean()}, {Int(), TimestampType(3)}, {BigInt(), TimestampLTZType(3)},
		{String(), IntervalDayTime()}, {DateType(), TimeType(0)}, {TimeType(0), DateType()},
		{Array(Int()), MapType(Int(), Int())}, {Int(), Array(Int())}, {Float(), IntervalYearMonth()},
	}
	for _, c := range yes {
		if !ExplicitCastable(c[0], c[1]) {
			t.Errorf("CAST(%s AS %s) should be allowed", c[0], c[1])
		}
	}
	for _, c := range no {
		if ExplicitCastable(c[0], c[1]) {
			t.Errorf("CAST(%s AS %s) should be refused", c[0], c[1])
		}
		if _, err := Cast(int32(1), c[0], c[1]); err == nil && c[0].Kind == KindInt {
			t.Errorf("Cast %s -> %s did not fail", c[0], c[1])
		}
	}
	if !ImplicitCastable(Int(), BigInt()) || ImplicitCastable(BigInt(), Int()) ||
		!ImplicitCastable(BigInt(), DecimalType(5, 0)) || !ImplicitCastable(Double(), DecimalType(38, 10)) || ImplicitCastable(String(), Int()) {
		t.Error("implicit cast rules")
	}
}

func mustDec(s string) Decimal {
	d, err := ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestCastValues(t *testing.T) {
	sh, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	ts := MakeTimestamp(2020, 4, 15, 8, 5, 0, 123456789)
	cases := []struct {
		v        any
		from, to DataType
		want     any // string of CastToString of the result, or nil for NULL
	}{
		// "Data Types" docs, Casting: CAST('42' AS INT) = 42.
		{"42", String(), Int(), "42"},
		{" 42 ", String(), Int(), "42"},
		{"-2147483648", String(), Int(), "-2147483648"},
		// Java narrowing, which Flink's generated code uses.
		{int32(300), Int(), TinyInt(), "44"},
		{int64(-129), BigInt(), TinyInt(), "127"},
		{1e20, Double(), Int(), "2147483647"},
		{-1.9, Double(), Int(), "-1"},
		{math.NaN(), Double(), BigInt(), "0"},
		{mustDec("-12.99"), DecimalType(4, 2), Int(), "-12"},
		// DECIMAL rounding HALF_UP; overflow is NULL (DecimalData.fromBigDecimal).
		{mustDec("12.345"), DecimalType(5, 3), DecimalType(4, 2), "12.35"},
		{mustDec("-12.345"), DecimalType(5, 3), DecimalType(4, 2), "-12.35"},
		{mustDec("12.344"), DecimalType(5, 3), DecimalType(4, 2), "12.34"},
		{int32(12345), Int(), DecimalType(3, 0), nil},
		{"99.995", String(), DecimalType(4, 2), nil},
		{0.1, Double(), DecimalType(10, 2), "0.10"},
		{" 1.5E2 ", String(), DecimalType(10, 1), "150.0"},
		{mustDec("1.50"), DecimalType(3, 2), String(), "1.50"},
		// Java Double.toString / Float.toString.
		{1.0e10, Double(), String(), "1.0E10"},
		{100.0, Double(), String(), "100.0"},
		{0.001, Double(), String(), "0.001"},
		{0.0001, Double(), String(), "1.0E-4"},
		{1234567.0, Double(), String(), "1234567.0"},
		{1.0e7, Double(), String(), "1.0E7"},
		{-1.5e-7, Double(), String(), "-1.5E-7"},
		{float32(0.1), Float(), String(), "0.1"},
		{float32(0.1), Float(), Double(), "0.10000000149011612"},
		{math.Inf(-1), Double(), String(), "-Infinity"},
		{"1e3", String(), Double(), "1000.0"},
		// Booleans: Flink ≥ 1.15 prints TRUE/FALSE.
		{true, Boolean(), String(), "TRUE"},
		{"TRUE", String(), Boolean(), "TRUE"},
		{" yes", String(), Boolean(), "TRUE"},
		{"0", String(), Boolean(), "FALSE"},
		{int32(-3), Int(), Boolean(), "TRUE"},
		{true, Boolean(), DecimalType(3, 1), "1.0"},
		// Strings are padded/truncated to CHAR(n)/VARCHAR(n).
		{"abc", String(), Char(5), "abc  "},
		{"abcdef", String(), VarChar(3), "abc"},
		{"中文字", String(), VarChar(2), "中文"},
		{int32(12345), Int(), VarChar(3), "123"},
		{"hé", String(), Bytes(), "hé"},
		// Temporal: the string forms Flink casts print.
		{"2020-01-01 00:00:00", String(), TimestampType(3), "2020-01-01 00:00:00.000"},
		{"2020-04-15T08:05:00.123456", String(), TimestampType(3), "2020-04-15 08:05:00.123"},
		{"2020-04-15", String(), TimestampType(0), "2020-04-15 00:00:00"},
		{"2020-1-5", String(), DateType(), "2020-01-05"},
		{"2020-01-05 10:00:00", String(), DateType(), "2020-01-05"},
		{"12:34:56.789", String(), TimeType(0), "12:34:56"},
		{ts, TimestampType(9), TimestampType(3), "2020-04-15 08:05:00.123"},
		{ts, TimestampType(9), DateType(), "2020-04-15"},
		{ts, TimestampType(9), TimeType(0), "08:05:00"},
		{MakeDate(2020, 2, 29), DateType(), TimestampType(3), "2020-02-29 00:00:00.000"},
		{int32(14), Int(), IntervalYearMonth(), "+1-02"},
		{int64(2 * 86400000), BigInt(), IntervalDayTime(), "+2 00:00:00.000"},
		{IntervalMillis(-90061001), IntervalDayTime(), String(), "-1 01:01:01.001"},
		{IntervalMonths(14), IntervalYearMonth(), Int(), "14"},
		// Constructed types.
		{[]any{int32(1), nil, int32(3)}, Array(Int()), String(), "[1, NULL, 3]"},
		{[]any{int32(1), int32(2)}, Array(Int()), Array(String()), "[1, 2]"},
		{Row{int32(1), "a"}, RowType(F("a", Int()), F("b", String())), String(), "(1, a)"},
		{&Map{Keys: []any{"k"}, Values: []any{int64(1)}}, MapType(String(), BigInt()), String(), "{k=1}"},
	}
	for _, c := range cases {
		got, err := CastIn(c.v, c.from, c.to, sh)
		if err != nil {
			t.Errorf("CAST(%v AS %s) from %s: %v", c.v, c.to, c.from, err)
			continue
		}
		if c.want == nil {
			if got != nil {
				t.Errorf("CAST(%v AS %s) = %v, want NULL", c.v, c.to, got)
			}
			continue
		}
		if s := CastToString(got, c.to, sh); s != c.want {
			t.Errorf("CAST(%v AS %s) from %s = %q, want %q", c.v, c.to, c.from, s, c.want)
		}
	}
	// TIMESTAMP ↔ TIMESTAMP_LTZ through the session zone (UTC+8).
	ltz, err := CastIn(MakeTimestamp(2020, 1, 1, 0, 0, 0, 0), TimestampType(3), TimestampLTZType(3), sh)
	if err != nil || ltz.(TimestampLTZ).ToTime().UTC().Format(time.RFC3339) != "2019-12-31T16:00:00Z" {
		t.Errorf("TIMESTAMP → TIMESTAMP_LTZ in Asia/Shanghai = %v, %v", ltz, err)
	}
	if s := FormatIn(ltz, TimestampLTZType(3), sh); s != "2020-01-01 00:00:00.000" {
		t.Errorf("LTZ shown in session zone = %q", s)
	}
	if s := Format(ltz, TimestampLTZType(3)); s != "2019-12-31 16:00:00.000" {
		t.Errorf("LTZ shown in UTC = %q", s)
	}
}

func TestCastErrors(t *testing.T) {
	bad := []struct {
		v  string
		to DataType
	}{
		{"non-number", Int()}, {"abc", BigInt()}, {"2147483648", Int()}, {"128", TinyInt()},
		{"", Int()}, {"1x", Double()}, {"maybe", Boolean()}, {"abc", DecimalType(5, 2)},
		{"2020-13-01", DateType()}, {"2020-02-30", DateType()}, {"25:00:00", TimeType(0)},
		{"2020-01-01 12:61:00", TimestampType(3)}, {"x", TimestampLTZType(3)},
	}
	for _, c := range bad {
		_, err := Cast(c.v, String(), c.to)
		if err == nil || !errors.Is(err, ErrCast) {
			t.Errorf("CAST(%q AS %s): err = %v, want ErrCast", c.v, c.to, err)
		}
		if TryCastIn(c.v, String(), c.to, nil) != nil {
			t.Errorf("TRY_CAST(%q AS %s) not NULL", c.v, c.to)
		}
	}
	if v, err := Cast(nil, Int(), String()); v != nil || err != nil {
		t.Error("CAST(NULL) must be NULL")
	}
}

// Every scalar type survives value → STRING → value.
func TestCastStringRoundTrip(t *testing.T) {
	scalar := []DataType{Boolean(), TinyInt(), SmallInt(), Int(), BigInt(), Float(), Double(),
		DecimalType(5, 2), DecimalType(38, 10), DateType(), TimeType(0), TimeType(9),
		TimestampType(0), TimestampType(3), TimestampType(9), TimestampLTZType(6)}
	for _, typ := range scalar {
		typ := typ
		t.Run(typ.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				v := genValue(typ, false).Draw(rt, "v")
				s, err := Cast(v, typ, String())
				if err != nil {
					rt.Fatalf("to string: %v", err)
				}
				back, err := Cast(s, String(), typ)
				if err != nil {
					rt.Fatalf("CAST(%q AS %s): %v", s, typ, err)
				}
				if !Equal(v, back, typ) {
					rt.Fatalf("%v → %q → %v", v, s, back)
				}
			})
		})
	}
}

func TestDecimalArithmetic(t *testing.T) {
	// 0.1 + 0.2 = 0.3 exactly.
	if s := mustDec("0.1").Add(mustDec("0.2")).String(); s != "0.3" {
		t.Errorf("0.1 + 0.2 = %s", s)
	}
	if s := mustDec("1.10").Mul(mustDec("-2.5")).String(); s != "-2.750" {
		t.Errorf("1.10 * -2.5 = %s", s)
	}
	q, _ := mustDec("1").Quo(mustDec("3"), 6)
	if q.String() != "0.333333" {
		t.Errorf("1/3 = %s", q)
	}
	q, _ = mustDec("2").Quo(mustDec("3"), 6)
	if q.String() != "0.666667" {
		t.Errorf("2/3 = %s", q)
	}
	if _, err := mustDec("1").Quo(MakeDecimal(0, 2), 2); err == nil {
		t.Error("division by zero")
	}
	r, _ := mustDec("-7.5").Rem(mustDec("2"))
	if r.String() != "-1.5" {
		t.Errorf("-7.5 %% 2 = %s", r)
	}
	if p := mustDec("-0.00123").Precision(); p != 3 {
		t.Errorf("precision = %d", p)
	}
	if s := mustDec("1.5E3").String(); s != "1500" {
		t.Errorf("1.5E3 = %s", s)
	}
	if s := mustDec("-1.25E-2").String(); s != "-0.0125" {
		t.Errorf("-1.25E-2 = %s", s)
	}
	// Against math/big.Rat on random operands, across the int64/big boundary.
	rapid.Check(t, func(rt *rapid.T) {
		a := genDecimal(38, rapid.IntRange(0, 10).Draw(rt, "sa")).Draw(rt, "a")
		b := genDecimal(19, rapid.IntRange(0, 10).Draw(rt, "sb")).Draw(rt, "b")
		ra, rb := decRat(a), decRat(b)
		check := func(op string, got Decimal, want *big.Rat) {
			if decRat(got).Cmp(want) != 0 {
				rt.Fatalf("%s %s %s = %s, want %s", a, op, b, got, want.FloatString(20))
			}
		}
		check("+", a.Add(b), new(big.Rat).Add(ra, rb))
		check("-", a.Sub(b), new(big.Rat).Sub(ra, rb))
		check("*", a.Mul(b), new(big.Rat).Mul(ra, rb))
		if c := a.Cmp(b); c != ra.Cmp(rb) {
			rt.Fatalf("Cmp(%s, %s) = %d", a, b, c)
		}
		s := rapid.IntRange(0, 12).Draw(rt, "s")
		check("rescale", a.Rescale(s), ratHalfUp(ra, s))
		if !b.IsZero() {
			q, err := a.Quo(b, s)
			if err != nil {
				rt.Fatal(err)
			}
			check("/", q, ratHalfUp(new(big.Rat).Quo(ra, rb), s))
		}
		if back := mustDec(a.String()); !back.Equal(a) || back.Scale() != a.Scale() {
			rt.Fatalf("String round trip %s → %s", a, back)
		}
	})
}

func decRat(d Decimal) *big.Rat {
	return new(big.Rat).SetFrac(d.Unscaled(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale())), nil))
}

// ratHalfUp rounds r to s digits, half away from zero.
func ratHalfUp(r *big.Rat, s int) *big.Rat {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(scale))
	neg := x.Sign() < 0
	x.Abs(x)
	x.Add(x, big.NewRat(1, 2))
	q := new(big.Int).Quo(x.Num(), x.Denom())
	if neg {
		q.Neg(q)
	}
	return new(big.Rat).SetFrac(q, scale)
}

func TestDecimalNoAlloc(t *testing.T) {
	a, b := MakeDecimal(12345, 2), MakeDecimal(-678, 1)
	var sink Decimal
	var c int
	n := testing.AllocsPerRun(100, func() {
		sink = a.Add(b)
		sink = sink.Mul(b)
		c = a.Cmp(b)
		sink = sink.Rescale(2)
	})
	if n != 0 {
		t.Errorf("compact decimal ops allocate %.1f times", n)
	}
	_, _ = sink, c
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// Compare, AppendKey and Hash agree; encoding round-trips; for every type
// including nested ARRAY<ROW<...>>, MAP and NULLs at every level.
func TestCompareKeyHashEncode(t *testing.T) {
	for _, typ := range testTypes {
		typ := typ
		t.Run(typ.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				a := genValue(typ, true).Draw(rt, "a")
				b := genValue(typ, true).Draw(rt, "b")
				c := Compare(a, b, typ)
				if -sign(Compare(b, a, typ)) != sign(c) {
					rt.Fatalf("Compare not antisymmetric")
				}
				ka, kb := AppendKey(nil, typ, a), AppendKey(nil, typ, b)
				if sign(bytes.Compare(ka, kb)) != sign(c) {
					rt.Fatalf("Compare(%v, %v) = %d but keys compare %d", a, b, c, bytes.Compare(ka, kb))
				}
				if c == 0 && Hash(a, typ) != Hash(b, typ) {
					rt.Fatalf("equal values hash differently")
				}
				enc := AppendValue([]byte{0xAA}, typ, a)
				got, rest, err := DecodeValue(typ, enc[1:])
				if err != nil || len(rest) != 0 {
					rt.Fatalf("decode: %v, %d bytes left", err, len(rest))
				}
				if Compare(a, got, typ) != 0 || !bytes.Equal(AppendKey(nil, typ, got), ka) {
					rt.Fatalf("round trip %v → %v", a, got)
				}
			})
		})
	}
	// Composite keys order column by column.
	rapid.Check(t, func(rt *rapid.T) {
		s1, s2 := genValue(String(), true).Draw(rt, "s1"), genValue(String(), true).Draw(rt, "s2")
		i1, i2 := genValue(BigInt(), true).Draw(rt, "i1"), genValue(BigInt(), true).Draw(rt, "i2")
		k1 := AppendKey(AppendKey(nil, String(), s1), BigInt(), i1)
		k2 := AppendKey(AppendKey(nil, String(), s2), BigInt(), i2)
		want := Compare(s1, s2, String())
		if want == 0 {
			want = Compare(i1, i2, BigInt())
		}
		if sign(bytes.Compare(k1, k2)) != sign(want) {
			rt.Fatalf("composite key order")
		}
	})
}

func TestRowEncoding(t *testing.T) {
	fields := []DataType{BigInt(), String(), DecimalType(10, 2), TimestampType(3), Array(Int())}
	rapid.Check(t, func(rt *rapid.T) {
		r := make(Row, len(fields))
		for i, f := range fields {
			r[i] = genValue(f, true).Draw(rt, "f")
		}
		kind := RowKind(rapid.IntRange(0, 3).Draw(rt, "kind"))
		b := AppendRecord(nil, fields, Record{Kind: kind, Row: r})
		got, rest, err := DecodeRecord(fields, b)
		if err != nil || len(rest) != 0 || got.Kind != kind {
			rt.Fatalf("decode: %v", err)
		}
		for i, f := range fields {
			if Compare(r[i], got.Row[i], f) != 0 {
				rt.Fatalf("field %d: %v → %v", i, r[i], got.Row[i])
			}
		}
	})
	if _, _, err := DecodeRow(fields, []byte{0x00, 0x80}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated row: %v", err)
	}
	for k, s := range map[RowKind]string{Insert: "+I", UpdateBefore: "-U", UpdateAfter: "+U", Delete: "-D"} {
		if k.String() != s {
			t.Errorf("%d.String() = %s", k, k)
		}
		if p, err := ParseRowKind(s); err != nil || p != k {
			t.Errorf("ParseRowKind(%s)", s)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := []struct {
		v    any
		t    DataType
		want string
	}{
		{nil, Int(), "<NULL>"},
		{MakeTimestamp(2020, 4, 15, 8, 5, 0, 0), TimestampType(3), "2020-04-15 08:05:00.000"},
		{[]byte("hi"), Bytes(), "x'6869'"},
		{true, Boolean(), "TRUE"},
		{[]any{"a", nil}, Array(String()), "[a, NULL]"},
		{MakeDate(1, 2, 3), DateType(), "0001-02-03"},
	}
	for _, c := range cases {
		if got := Format(c.v, c.t); got != c.want {
			t.Errorf("Format(%v, %s) = %q, want %q", c.v, c.t, got, c.want)
		}
	}
}

func TestCivilDates(t *testing.T) {
	// Against the time package over the whole supported range.
	for d := MakeDate(0, 1, 1); d <= MakeDate(9999, 12, 31); d += 97 {
		y, m, dd := d.YMD()
		tm := time.Unix(int64(d)*86400, 0).UTC()
		if tm.Year() != y || int(tm.Month()) != m || tm.Day() != dd {
			t.Fatalf("day %d: %d-%d-%d, time says %s", d, y, m, dd, tm)
		}
	}
	if got := MakeDate(2020, 1, 31).AddMonths(1); got != MakeDate(2020, 2, 29) {
		t.Errorf("2020-01-31 + 1 month = %v", got)
	}
}

func FuzzCastFromString(f *testing.F) {
	for _, s := range []string{"42", " -1.5 ", "1e400", "2020-01-01 00:00:00.123", "12:00", "TRUE", "", "9999999999999999999999999999999999999999", "\x00"} {
		f.Add(s)
	}
	targets := []DataType{TinyInt(), Int(), BigInt(), Float(), Double(), DecimalType(10, 2), DecimalType(38, 18),
		Boolean(), DateType(), TimeType(3), TimestampType(3), TimestampLTZType(6), Char(3), Bytes()}
	f.Fuzz(func(t *testing.T, s string) {
		for _, to := range targets {
			v, err := Cast(s, String(), to)
			if err != nil {
				if !errors.Is(err, ErrCast) {
					t.Fatalf("CAST(%q AS %s): error without ErrCast: %v", s, to, err)
				}
				continue
			}
			if v == nil {
				continue
			}
			str, err := Cast(v, to, String())
			if err != nil {
				t.Fatalf("back to string: %v", err)
			}
			if to.Kind == KindChar || to.Kind == KindVarBinary {
				continue
			}
			again, err := Cast(str, String(), to)
			if err != nil || !Equal(v, again, to) {
				t.Fatalf("CAST(%q AS %s) = %v prints %q which reads back as %v (%v)", s, to, v, str, again, err)
			}
		}
	})
}

func FuzzDecodeValue(f *testing.F) {
	nested := RowType(F("a", Array(RowType(F("x", Int()), F("y", String())))), F("m", MapType(String(), DecimalType(38, 4))),
		F("d", DecimalType(10, 2)), F("t", TimestampType(9)), F("b", Boolean()), F("f", Double()))
	f.Add(AppendValue(nil, nested, Row{[]any{Row{int32(1), "a"}, nil}, &Map{Keys: []any{"k"}, Values: []any{mustDec("1.0000")}}, nil, Timestamp{}, true, 1.5}))
	f.Add([]byte{1, 0, 5, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, err := DecodeValue(nested, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error without ErrCorrupt: %v", err)
			}
			return
		}
		enc := AppendValue(nil, nested, v)
		again, _, err := DecodeValue(nested, enc)
		if err != nil || Compare(v, again, nested) != 0 {
			t.Fatalf("re-encode round trip: %v", err)
		}
	})
}

func BenchmarkCompareBigInt(b *testing.B) {
	var x, y any = int64(5), int64(7)
	t := BigInt()
	for i := 0; i < b.N; i++ {
		Compare(x, y, t)
	}
}

func BenchmarkCompareDecimal(b *testing.B) {
	var x, y any = MakeDecimal(12345, 2), MakeDecimal(12346, 2)
	t := DecimalType(10, 2)
	for i := 0; i < b.N; i++ {
		Compare(x, y, t)
	}
}

var benchFields = []DataType{BigInt(), String(), DecimalType(10, 2), TimestampType(3), Double()}
var benchRow = Row{int64(42), "some auction name", MakeDecimal(123456, 2), MakeTimestamp(2020, 4, 15, 8, 5, 0, 0), 3.25}

func BenchmarkAppendRow5(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = AppendRow(buf[:0], benchFields, benchRow)
	}
}

func BenchmarkDecodeRow5(b *testing.B) {
	enc := AppendRow(nil, benchFields, benchRow)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := DecodeRow(benchFields, enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHashString(b *testing.B) {
	var v any = "some auction name"
	for i := 0; i < b.N; i++ {
		Hash(v, String())
	}
}

func TestParseDataType(t *testing.T) {
	// Every type String prints parses back to an Equal type.
	all := append([]DataType{}, testTypes...)
	all = append(all, Int().NotNull(), TimestampType(3).WithTimeAttr(TimeAttrRowtime), Interval(ResHourToSecond, 2, 3),
		Interval(ResYear, 4, 6), RowType(F("a b`c", Int())), RowType(), Null())
	for _, typ := range all {
		got, err := ParseDataType(typ.String())
		if err != nil || !got.Equal(typ) || got.String() != typ.String() {
			t.Errorf("ParseDataType(%q) = %s, %v", typ.String(), got, err)
		}
	}
	// Flink's synonyms and defaults ("Data Types" page).
	cases := map[string]string{
		"integer not null":                  "INT NOT NULL",
		"DEC":                               "DECIMAL(10, 0)",
		"NUMERIC(5)":                        "DECIMAL(5, 0)",
		"VARCHAR":                           "VARCHAR(1)",
		"CHAR":                              "CHAR(1)",
		"TIMESTAMP":                         "TIMESTAMP(6)",
		"TIME":                              "TIME(0)",
		"TIMESTAMP(3) WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ(3)",
		"TIMESTAMP(3) WITHOUT TIME ZONE":    "TIMESTAMP(3)",
		"INT ARRAY":                         "ARRAY<INT>",
		"ROW(a INT, b STRING)":              "ROW<`a` INT, `b` STRING>",
		"ROW<a INT 'the a'>":                "ROW<`a` INT>",
		"INTERVAL DAY TO SECOND(3)":         "INTERVAL DAY(2) TO SECOND(3)",
		"INTERVAL YEAR TO MONTH":            "INTERVAL YEAR(2) TO MONTH",
		"MAP<STRING, ARRAY<INT NOT NULL>> NOT NULL": "MAP<STRING, ARRAY<INT NOT NULL>> NOT NULL",
		"DOUBLE PRECISION":                          "DOUBLE",
		"BYTES":                                     "BYTES",
	}
	for in, want := range cases {
		got, err := ParseDataType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseDataType(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "INTT", "DECIMAL(40, 2)", "ARRAY<INT", "MAP<INT>", "ROW<a>", "INTERVAL MONTH TO DAY",
		"VARCHAR(0)", "INT NOT", "TIMESTAMP(3) WITH TIME ZONE", "ROW<`a INT>"} {
		if _, err := ParseDataType(bad); err == nil {
			t.Errorf("ParseDataType(%q) accepted", bad)
		}
	}
}

func FuzzParseDataType(f *testing.F) {
	for _, typ := range testTypes {
		f.Add(typ.String())
	}
	f.Add("ROW(a INT ARRAY NOT NULL, `b``c` TIMESTAMP(3) *ROWTIME*)")
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := ParseDataType(s)
		if err != nil {
			return
		}
		again, err := ParseDataType(typ.String())
		if err != nil || !again.Equal(typ) {
			t.Fatalf("%q parses as %s, which reparses as %s (%v)", s, typ, again, err)
		}
	})
}
