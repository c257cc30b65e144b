package functions

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
)

func TestArithmetic(t *testing.T) {
	runCases(t, []fcase{
		{"+", a(I(1), I(2)), "3"},
		// INT / INT is INT, truncating (Calcite/Java integer division).
		{"/", a(I(7), I(2)), "3"},
		{"/", a(I(-7), I(2)), "-3"},
		{"%", a(I(-7), I(2)), "-1"},
		{"MOD", a(I(7), I(-2)), "1"},
		{"*", a(I(2), BI(3)), "6"},
		// Java wrap-around on overflow.
		{"+", a(BI(math.MaxInt64), BI(1)), "-9223372036854775808"},
		{"*", a(I(math.MaxInt32), I(2)), "-2"},
		{"-", a(I(5)), "-5"},
		// DECIMAL is exact: 0.1 + 0.2 = 0.3.
		{"+", a(Dec("0.1", 2, 1), Dec("0.2", 2, 1)), "0.3"},
		{"-", a(Dec("1.00", 3, 2), Dec("0.005", 4, 3)), "0.995"},
		{"*", a(Dec("1.10", 3, 2), Dec("2.5", 2, 1)), "2.750"},
		{"/", a(Dec("1.00", 10, 2), I(3)), "0.3333333333333"}, // DECIMAL(21, 13)
		{"/", a(Dec("2", 10, 0), Dec("3", 10, 0)), "0.66666666667"},
		{"%", a(Dec("7.5", 3, 1), I(2)), "1.5"},
		{"+", a(I(1), Dec("0.25", 3, 2)), "1.25"},
		// DOUBLE is IEEE: 0.1 + 0.2 != 0.3.
		{"+", a(D(0.1), D(0.2)), "0.30000000000000004"},
		{"+", a(I(1), D(0.5)), "1.5"},
		{"/", a(D(1), D(0)), "Infinity"},
		{"+", a(I(1), N(types.Int())), "NULL"},
		{"+", a(N(types.Null()), N(types.Null())), "NULL"},
		// Temporal arithmetic.
		{"+", a(Ts("2020-01-31 10:00:00"), lit{types.IntervalYearMonth(), types.IntervalMonths(1)}), "2020-02-29 10:00:00.000"},
		{"+", a(Ts("2020-01-01 00:00:00"), lit{types.IntervalDayTime(), types.IntervalMillis(90061001)}), "2020-01-02 01:01:01.001"},
		{"-", a(Dt("2020-03-01"), lit{types.IntervalDayTime(), types.IntervalMillis(86400000)}), "2020-02-29"},
		{"+", a(Tm("23:30:00"), lit{types.IntervalDayTime(), types.IntervalMillis(3600000)}), "00:30:00"},
		{"*", a(lit{types.IntervalDayTime(), types.IntervalMillis(1000)}, I(3)), "+0 00:00:03.000"},
	})
	for _, div := range []string{"/", "%"} {
		if _, _, err := call(t, div, I(1), I(0)); !errors.Is(err, ErrDivisionByZero) {
			t.Errorf("1 %s 0: %v", div, err)
		}
		if _, _, err := call(t, div, Dec("1", 3, 0), Dec("0", 3, 1)); !errors.Is(err, ErrDivisionByZero) {
			t.Errorf("1.0 %s 0.0: %v", div, err)
		}
	}
	// DECIMAL overflow is NULL, as Flink's DecimalData.
	if got := str(t, "*", Dec("99999999999999999999999999999999999999", 38, 0), I(10)); got != "NULL" {
		t.Errorf("DECIMAL overflow = %s", got)
	}
	_, s, _ := call(t, "+", Dec("1", 10, 2), Dec("1", 5, 3))
	if s.Result.String() != "DECIMAL(12, 3) NOT NULL" {
		t.Errorf("DECIMAL(10,2)+DECIMAL(5,3) typed %s", s.Result)
	}
	if _, err := Lookup("+", []types.DataType{types.String(), types.Int()}); err == nil {
		t.Error("STRING + INT resolved")
	}
}

func TestComparisonAndLogic(t *testing.T) {
	runCases(t, []fcase{
		{"=", a(I(1), Dec("1.0", 2, 1)), "TRUE"},
		{"<", a(I(1), BI(2)), "TRUE"},
		{"<>", a(S("a"), S("b")), "TRUE"},
		{"<", a(S("B"), S("a")), "TRUE"},
		{">=", a(Ts("2020-01-01 00:00:00"), Dt("2020-01-01")), "TRUE"},
		{"=", a(D(math.NaN()), D(math.NaN())), "FALSE"},
		{"<>", a(D(math.NaN()), D(math.NaN())), "TRUE"},
		{"=", a(D(0), D(math.Copysign(0, -1))), "TRUE"},
		{"=", a(I(1), N(types.Int())), "NULL"},
		{"IS DISTINCT FROM", a(I(1), N(types.Int())), "TRUE"},
		{"IS NOT DISTINCT FROM", a(N(types.Int()), N(types.Int())), "TRUE"},
		{"IS DISTINCT FROM", a(I(1), BI(1)), "FALSE"},
		{"||", a(S("ab"), S("cd")), "abcd"},
		{"||", a(S("ab"), N(types.String())), "NULL"},
		{"BETWEEN", a(I(2), I(1), I(3)), "TRUE"},
		{"BETWEEN", a(I(0), I(1), N(types.Int())), "FALSE"},
		{"BETWEEN", a(I(5), I(1), N(types.Int())), "NULL"},
		{"BETWEEN", a(I(2), I(1), N(types.Int())), "NULL"},
		{"NOT BETWEEN", a(I(5), I(1), I(3)), "TRUE"},
		// x IN (list): TRUE on a match, else NULL if any NULL, else FALSE.
		{"IN", a(I(1), I(2), I(1)), "TRUE"},
		{"IN", a(I(1), I(2), N(types.Int())), "NULL"},
		{"IN", a(I(1), I(1), N(types.Int())), "TRUE"},
		{"IN", a(N(types.Int()), I(1)), "NULL"},
		{"NOT IN", a(I(3), I(1), I(2)), "TRUE"},
		{"NOT IN", a(I(3), I(1), N(types.Int())), "NULL"},
		{"IN", a(S("b"), S("a"), S("b")), "TRUE"},
		{"IS NULL", a(N(types.Int())), "TRUE"},
		{"IS NOT NULL", a(I(1)), "TRUE"},
		{"IS TRUE", a(N(types.Boolean())), "FALSE"},
		{"IS NOT FALSE", a(N(types.Boolean())), "TRUE"},
		{"IS UNKNOWN", a(N(types.Boolean())), "TRUE"},
		{"NOT", a(N(types.Boolean())), "NULL"},
	})
	// SQL's three-valued AND/OR truth tables (SQL:2016 Part 2, 6.39).
	vals := []lit{B(true), B(false), N(types.Boolean())}
	name := []string{"TRUE", "FALSE", "NULL"}
	andT := [3][3]string{{"TRUE", "FALSE", "NULL"}, {"FALSE", "FALSE", "FALSE"}, {"NULL", "FALSE", "NULL"}}
	orT := [3][3]string{{"TRUE", "TRUE", "TRUE"}, {"TRUE", "FALSE", "NULL"}, {"TRUE", "NULL", "NULL"}}
	for i := range vals {
		for j := range vals {
			if got := str(t, "AND", vals[i], vals[j]); got != andT[i][j] {
				t.Errorf("%s AND %s = %s", name[i], name[j], got)
			}
			if got := str(t, "OR", vals[i], vals[j]); got != orT[i][j] {
				t.Errorf("%s OR %s = %s", name[i], name[j], got)
			}
		}
	}
	if _, err := Lookup("=", []types.DataType{types.String(), types.Int()}); err == nil {
		t.Error("STRING = INT resolved (Flink refuses it)")
	}
}

func TestLikeSimilar(t *testing.T) {
	cases := []struct {
		s, p, esc string
		want      bool
	}{
		{"abc", "a%", "", true},
		{"abc", "%c", "", true},
		{"abc", "a_c", "", true},
		{"abc", "A%", "", false}, // case-sensitive, as Flink
		{"abc", "%", "", true},
		{"", "%", "", true},
		{"", "_", "", false},
		{"a_c", `a\_c`, `\`, true},
		{"abc", `a\_c`, `\`, false},
		{"100%", `100!%`, "!", true},
		{"héllo", "h_llo", "", true},
		{"aaaaaaaaaaaaaaaaaaaaab", "%a%a%a%a%a%a%c", "", false},
		{"mississippi", "%iss%pi", "", true},
		{"line1\nline2", "line1%", "", true},
	}
	for _, c := range cases {
		args := a(S(c.s), S(c.p))
		if c.esc != "" {
			args = append(args, S(c.esc))
		}
		want := "FALSE"
		if c.want {
			want = "TRUE"
		}
		if got := str(t, "LIKE", args...); got != want {
			t.Errorf("%q LIKE %q ESCAPE %q = %s", c.s, c.p, c.esc, got)
		}
	}
	if got := str(t, "LIKE", S("a"), S("a"), S("ab")); !strings.HasPrefix(got, "ERROR") {
		t.Errorf("two-character escape accepted: %s", got)
	}
	runCases(t, []fcase{
		{"SIMILAR TO", a(S("abc"), S("(a|b)%")), "TRUE"},
		{"SIMILAR TO", a(S("abc"), S("a.c")), "FALSE"}, // . is literal in SIMILAR TO
		{"SIMILAR TO", a(S("a.c"), S("a.c")), "TRUE"},
		{"SIMILAR TO", a(S("aaa"), S("a+")), "TRUE"},
		{"SIMILAR TO", a(S("ab"), S("[a-c]_")), "TRUE"},
		{"NOT SIMILAR TO", a(S("xyz"), S("x%")), "FALSE"},
	})
}

func TestLookupErrors(t *testing.T) {
	_, err := Lookup("substring", []types.DataType{types.Int()})
	if err == nil || !strings.HasPrefix(err.Error(), "No match found for function signature SUBSTRING(<INT>)") ||
		!strings.Contains(err.Error(), "SUBSTRING(<STRING>, <INTEGER> [, <INTEGER>])") {
		t.Errorf("error = %v", err)
	}
	if _, err := Lookup("NO_SUCH_FN", nil); err == nil {
		t.Error("unknown function resolved")
	}
	// Names are case-insensitive.
	if _, err := Lookup("upper", []types.DataType{types.String()}); err != nil {
		t.Error(err)
	}
	if err := Builtins().RegisterFunc("X", func(int64) int64 { return 0 }); !errors.Is(err, ErrReadOnly) {
		t.Errorf("built-ins accepted a registration: %v", err)
	}
}

// argSets are candidate argument type lists for probing every function.
var argSets = [][]types.DataType{
	{}, {types.Int()}, {types.String()}, {types.Double()}, {types.DecimalType(10, 2)}, {types.Boolean()},
	{types.TimestampType(3)}, {types.DateType()}, {types.TimeType(0)}, {types.Bytes()},
	{types.Array(types.Int())}, {types.MapType(types.String(), types.Int())},
	{types.Int(), types.Int()}, {types.String(), types.String()}, {types.String(), types.Int()},
	{types.Double(), types.Double()}, {types.Boolean(), types.Boolean()}, {types.String(), types.TimestampType(3)},
	{types.TimestampType(3), types.String()}, {types.Bytes(), types.String()}, {types.Array(types.Int()), types.Int()},
	{types.Int(), types.String()}, {types.String(), types.String(), types.String()}, {types.String(), types.Int(), types.Int()},
	{types.String(), types.Int(), types.String()}, {types.Int(), types.Int(), types.Int()},
	{types.String(), types.Int(), types.TimestampType(3)}, {types.String(), types.TimestampType(3), types.TimestampType(3)},
	{types.Boolean(), types.Int(), types.Int()}, {types.String(), types.String(), types.Int()},
	{types.TimestampType(3), types.IntervalDayTime()}, {types.String(), types.String(), types.String(), types.String()},
}

// Functions that do not return NULL for all-NULL arguments, with why.
var nullExceptions = map[string]bool{
	"IS NULL": true, "IS_NULL": true, "IS NOT NULL": true, "IS_NOT_NULL": true, "IS TRUE": true, "IS_TRUE": true,
	"IS NOT TRUE": true, "IS_NOT_TRUE": true, "IS FALSE": true, "IS_FALSE": true, "IS NOT FALSE": true,
	"IS_NOT_FALSE": true, "IS UNKNOWN": true, "IS_UNKNOWN": true, "IS NOT UNKNOWN": true, "IS_NOT_UNKNOWN": true,
	"IS DISTINCT FROM": true, "IS_DISTINCT_FROM": true, "IS NOT DISTINCT FROM": true, "IS_NOT_DISTINCT_FROM": true,
	"IS_ALPHA": true, "IS_DIGIT": true, "IS_DECIMAL": true, "IS JSON": true, "IS_JSON": true,
	"JSON_OBJECT": true, "JSON_ARRAY": true, "TYPEOF": true, "ARRAY": true, "MAP": true, "ROW": true,
	"RAND": true, // RAND(NULL seed) is unseeded in Flink too... we give NULL only for a seeded NULL
}

// Every function resolvable on some probe gives NULL for NULL arguments
// (SQL's rule), except the listed null-aware ones.
func TestNullPropagation(t *testing.T) {
	reg := Builtins()
	probed := 0
	for _, name := range reg.Names() {
		for _, set := range argSets {
			if len(set) == 0 {
				continue
			}
			s, err := reg.Lookup(name, set)
			if err != nil || s == nil {
				continue
			}
			probed++
			args := make([]any, len(set))
			v, err := s.Eval(testCtx, args)
			if err != nil {
				if name != "JSON_OBJECT" { // a NULL key is an error in Flink
					t.Errorf("%s%v on NULLs: error %v", name, set, err)
				}
				continue
			}
			if v != nil && !nullExceptions[name] {
				t.Errorf("%s%v on NULLs = %v, want NULL", name, set, v)
			}
			if v == nil && !s.Result.IsNullable() {
				t.Errorf("%s%v returned NULL but is typed %s", name, set, s.Result)
			}
		}
	}
	if probed < 150 {
		t.Errorf("only %d function/argument combinations probed", probed)
	}
}

func TestUserFunctions(t *testing.T) {
	reg := NewRegistry()
	if err := reg.RegisterFunc("plus_one", func(x int64) int64 { return x + 1 }); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterFunc("greet", func(ctx *Context, s string, n int32) (string, error) {
		if n < 0 {
			return "", errors.New("negative")
		}
		return strings.Repeat(s, int(n)), nil
	}); err != nil {
		t.Fatal(err)
	}
	s, err := reg.Lookup("PLUS_ONE", []types.DataType{types.Int().NotNull()})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Eval(testCtx, []any{int32(41)}); v != int64(42) || s.Result.String() != "BIGINT NOT NULL" {
		t.Errorf("PLUS_ONE(41) = %v : %s", v, s.Result)
	}
	s, _ = reg.Lookup("greet", []types.DataType{types.String(), types.Int()})
	if v, _ := s.Eval(testCtx, []any{"ab", int32(2)}); v != "abab" {
		t.Errorf("greet = %v", v)
	}
	if v, _ := s.Eval(testCtx, []any{nil, int32(2)}); v != nil || !s.Result.IsNullable() {
		t.Errorf("greet(NULL) = %v : %s", v, s.Result)
	}
	if _, err := s.Eval(testCtx, []any{"x", int32(-1)}); err == nil {
		t.Error("error result lost")
	}
	if err := reg.RegisterFunc("bad", func(x chan int) int { return 0 }); err == nil {
		t.Error("unsupported parameter type accepted")
	}
	if _, err := Lookup("PLUS_ONE", []types.DataType{types.Int()}); err == nil {
		t.Error("user function leaked into the built-ins")
	}
	// Declared-type registration with an overload.
	if err := reg.RegisterScalar("twice", ScalarFunc{Args: []types.DataType{types.String()}, Result: types.String(), NullOnNull: true,
		Eval: func(_ *Context, a []any) (any, error) { return a[0].(string) + a[0].(string), nil }}); err != nil {
		t.Fatal(err)
	}
	s, err = reg.Lookup("TWICE", []types.DataType{types.VarChar(3)})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Eval(testCtx, []any{"ab"}); v != "abab" {
		t.Errorf("TWICE = %v", v)
	}
}

func BenchmarkEvalPlusBigInt(b *testing.B) {
	s, _ := Lookup("+", []types.DataType{types.BigInt().NotNull(), types.BigInt().NotNull()})
	args := make([]any, 2)
	var x, y any = int64(1000), int64(2000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args[0], args[1] = x, y
		if _, err := s.Eval(nil, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvalPlusDecimal(b *testing.B) {
	t := types.DecimalType(10, 2).NotNull()
	s, _ := Lookup("+", []types.DataType{t, t})
	args := make([]any, 2)
	var x, y any = types.MakeDecimal(12345, 2), types.MakeDecimal(67890, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args[0], args[1] = x, y
		if _, err := s.Eval(nil, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvalEqualsString(b *testing.B) {
	s, _ := Lookup("=", []types.DataType{types.String(), types.String()})
	args := make([]any, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args[0], args[1] = "auction-1", "auction-2"
		if _, err := s.Eval(nil, args); err != nil {
			b.Fatal(err)
		}
	}
}
