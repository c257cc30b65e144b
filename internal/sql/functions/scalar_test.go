package functions

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
)

// Examples from Flink's "System (Built-in) Functions" page
// (docs/data/sql_functions.yml); where the page gives an example the
// expected value is the page's.
func TestStringFunctionsFlinkDocs(t *testing.T) {
	runCases(t, []fcase{
		{"REPEAT", a(S("This is a test String."), I(2)), "This is a test String.This is a test String."},
		{"REGEXP_REPLACE", a(S("foobar"), S("oo|ar"), S("")), "fb"},
		{"OVERLAY", a(S("xxxxxtest"), S("xxxx"), I(6)), "xxxxxxxxx"},
		{"OVERLAY", a(S("xxxxxtest"), S("xxxx"), I(6), I(2)), "xxxxxxxxxst"},
		{"REPLACE", a(S("hello world"), S("world"), S("flink")), "hello flink"},
		{"REPLACE", a(S("ababab"), S("abab"), S("z")), "zab"},
		{"REGEXP_EXTRACT", a(S("foothebar"), S("foo(.*?)(bar)"), I(2)), "bar"},
		{"CONCAT", a(S("AA"), S("BB"), S("CC")), "AABBCC"},
		{"CONCAT", a(S("AA"), N(types.String())), "NULL"},
		{"CONCAT_WS", a(S("~"), S("AA"), N(types.String()), S("BB"), S(""), S("CC")), "AA~BB~~CC"},
		{"CONCAT_WS", a(N(types.String()), S("AA")), "NULL"},
		{"LPAD", a(S("hi"), I(4), S("??")), "??hi"},
		{"LPAD", a(S("hi"), I(1), S("??")), "h"},
		{"RPAD", a(S("hi"), I(4), S("??")), "hi??"},
		{"RPAD", a(S("hi"), I(1), S("??")), "h"},
		{"FROM_BASE64", a(S("aGVsbG8gd29ybGQ=")), "hello world"},
		{"TO_BASE64", a(S("hello world")), "aGVsbG8gd29ybGQ="},
		{"ASCII", a(S("abc")), "97"},
		{"CHR", a(I(97)), "a"},
		{"CHR", a(I(353)), "a"},
		{"LTRIM", a(S(" This is a test String.")), "This is a test String."},
		{"RTRIM", a(S("This is a test String. ")), "This is a test String."},
		{"TRIM", a(S(" hello ")), "hello"},
		{"TRIM", a(S("LEADING"), S("x"), S("xxhixx")), "hixx"},
		{"PARSE_URL", a(S("http://facebook.com/path1/p.php?k1=v1&k2=v2#Ref1"), S("HOST")), "facebook.com"},
		{"PARSE_URL", a(S("http://facebook.com/path1/p.php?k1=v1&k2=v2#Ref1"), S("QUERY"), S("k1")), "v1"},
		{"SPLIT_INDEX", a(S("a,b,c"), S(","), I(1)), "b"},
		{"SPLIT_INDEX", a(S("a,b,c"), S(","), I(-1)), "NULL"},
		{"LEFT", a(S("hello"), I(-1)), ""},
		{"LEFT", a(S("héllo"), I(2)), "hé"},
		{"RIGHT", a(S("héllo"), I(3)), "llo"},
		{"INITCAP", a(S("hello wORLD-foo")), "Hello World-Foo"},
		{"REVERSE", a(S("héllo")), "olléh"},
		{"LOCATE", a(S("b"), S("abcb"), I(3)), "4"},
		{"INSTR", a(S("abcb"), S("cb")), "3"},
		{"POSITION", a(S("z"), S("abc")), "0"},
		{"CHAR_LENGTH", a(S("中文ab")), "4"},
		{"UPPER", a(S("héllo")), "HÉLLO"},
		{"LOWER", a(S("ÀB")), "àb"},
		{"SUBSTRING", a(S("Hello World"), I(7)), "World"},
		{"SUBSTR", a(S("Hello World"), I(0), I(5)), "Hello"},
		{"SUBSTRING", a(S("Hello"), I(-3), I(2)), "ll"},
		{"STR_TO_MAP", a(S("a=1,b=2,c")), "{a=1, b=2, c=NULL}"},
		{"DECODE", a(lit{types.Bytes(), []byte{0x68, 0xc3, 0xa9}}, S("UTF-8")), "hé"},
		{"ENCODE", a(S("hé"), S("ISO-8859-1")), "h\xe9"},
		{"REGEXP", a(S("abc123"), S("[0-9]+")), "TRUE"},
		{"REGEXP", a(S("abc"), S("(")), "NULL"},
		{"HEX", a(I(100)), "64"},
		{"HEX", a(S("hello,world")), "68656C6C6F2C776F726C64"},
		{"BIN", a(I(12)), "1100"},
		{"MD5", a(S("")), "d41d8cd98f00b204e9800998ecf8427e"},
		{"SHA1", a(S("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{"SHA256", a(S("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"SHA2", a(S("abc"), I(224)), "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"},
	})
}

func TestTemporalFunctionsFlinkDocs(t *testing.T) {
	runCases(t, []fcase{
		{"EXTRACT", a(S("DAY"), Dt("2006-06-05")), "5"},
		{"YEAR", a(Dt("1994-09-27")), "1994"},
		{"QUARTER", a(Dt("1994-09-27")), "3"},
		{"MONTH", a(Dt("1994-09-27")), "9"},
		{"WEEK", a(Dt("1994-09-27")), "39"},
		{"DAYOFYEAR", a(Dt("1994-09-27")), "270"},
		{"DAYOFMONTH", a(Dt("1994-09-27")), "27"},
		{"DAYOFWEEK", a(Dt("1994-09-27")), "3"},
		{"HOUR", a(Ts("1994-09-27 13:14:15")), "13"},
		{"MINUTE", a(Ts("1994-09-27 13:14:15")), "14"},
		{"SECOND", a(Ts("1994-09-27 13:14:15")), "15"},
		{"FLOOR", a(Tm("12:44:31"), S("MINUTE")), "12:44:00"},
		{"CEIL", a(Tm("12:44:31"), S("MINUTE")), "12:45:00"},
		{"FLOOR", a(Ts("2020-05-17 10:30:00"), S("MONTH")), "2020-05-01 00:00:00.000"},
		{"CEIL", a(Ts("2020-05-17 10:30:00"), S("YEAR")), "2021-01-01 00:00:00.000"},
		{"CEIL", a(Ts("2020-01-01 00:00:00"), S("DAY")), "2020-01-01 00:00:00.000"},
		{"CONVERT_TZ", a(S("1970-01-01 00:00:00"), S("UTC"), S("America/Los_Angeles")), "1969-12-31 16:00:00"},
		{"FROM_UNIXTIME", a(I(44)), "1970-01-01 00:00:44"},
		{"UNIX_TIMESTAMP", a(S("1970-01-01 08:00:01.001"), S("yyyy-MM-dd HH:mm:ss.SSS")), "28801"},
		{"UNIX_TIMESTAMP", a(S("not a date")), "-9223372036854775808"},
		{"TO_TIMESTAMP", a(S("2020-04-15 08:05:00")), "2020-04-15 08:05:00.000"},
		{"TO_TIMESTAMP", a(S("15/04/2020 08:05"), S("dd/MM/yyyy HH:mm")), "2020-04-15 08:05:00.000"},
		{"TO_TIMESTAMP", a(S("garbage")), "NULL"},
		{"TO_DATE", a(S("2020-04-15")), "2020-04-15"},
		{"TO_DATE", a(S("20200415"), S("yyyyMMdd")), "2020-04-15"},
		{"DATE_FORMAT", a(Ts("2020-04-15 08:05:07.123"), S("yyyy-MM-dd HH:mm:ss.SSS")), "2020-04-15 08:05:07.123"},
		{"DATE_FORMAT", a(S("2020-04-15 18:05:07"), S("EEE, d MMM yyyy hh:mm a")), "Wed, 15 Apr 2020 06:05 PM"},
		{"TO_TIMESTAMP_LTZ", a(BI(1512086400000), I(3)), "2017-12-01 00:00:00.000"},
		{"TO_TIMESTAMP_LTZ", a(BI(1512086400), I(0)), "2017-12-01 00:00:00.000"},
		// TIMESTAMPADD(WEEK, 1, DATE '2003-01-02') = 2003-01-09 and
		// TIMESTAMPDIFF(DAY, ...) from Calcite's reference, which Flink follows.
		{"TIMESTAMPADD", a(S("WEEK"), I(1), Dt("2003-01-02")), "2003-01-09"},
		{"TIMESTAMPADD", a(S("MONTH"), I(1), Ts("2020-01-31 00:00:00")), "2020-02-29 00:00:00.000"},
		{"TIMESTAMPDIFF", a(S("DAY"), Ts("2003-01-02 10:00:00"), Ts("2003-01-03 10:00:00")), "1"},
		{"TIMESTAMPDIFF", a(S("MONTH"), Ts("2020-01-31 00:00:00"), Ts("2020-02-29 00:00:00")), "0"},
		{"TIMESTAMPDIFF", a(S("YEAR"), Ts("2020-06-01 00:00:00"), Ts("2018-06-02 00:00:00")), "-1"},
		{"TIMESTAMPDIFF", a(S("SECOND"), Ts("2020-01-01 00:00:00"), Ts("2020-01-01 00:01:30")), "90"},
	})
	// CURRENT_* read the Context's clock and zone, and are not deterministic.
	v, s, _ := call(t, "CURRENT_TIMESTAMP")
	if s.Deterministic || s.Result.String() != "TIMESTAMP_LTZ(3) NOT NULL" || types.Format(v, s.Result) != "2020-04-15 08:05:00.000" {
		t.Errorf("CURRENT_TIMESTAMP = %v : %s", v, s.Result)
	}
	if got := str(t, "CURRENT_DATE"); got != "2020-04-15" {
		t.Errorf("CURRENT_DATE = %s", got)
	}
}

func TestMathConditionalJSONCollections(t *testing.T) {
	intArr := Arr(types.Int(), int32(1), nil, int32(3))
	runCases(t, []fcase{
		{"ABS", a(I(-5)), "5"},
		{"ABS", a(Dec("-1.50", 3, 2)), "1.50"},
		{"MOD", a(I(10), I(3)), "1"},
		{"POWER", a(I(2), I(10)), "1024.0"},
		{"SQRT", a(I(16)), "4.0"},
		{"LOG10", a(I(100)), "2.0"},
		{"LOG2", a(I(8)), "3.0"},
		{"LOG", a(I(2), I(8)), "3.0"},
		{"EXP", a(I(0)), "1.0"},
		{"CEIL", a(Dec("1.2", 2, 1)), "2"},
		{"FLOOR", a(Dec("-1.2", 2, 1)), "-2"},
		{"FLOOR", a(D(-1.5)), "-2.0"},
		{"ROUND", a(Dec("125.315", 6, 3), I(2)), "125.32"},
		{"ROUND", a(Dec("-125.315", 6, 3), I(2)), "-125.32"},
		{"ROUND", a(I(125), I(-1)), "130"},
		{"ROUND", a(D(2.5)), "3.0"},
		{"ROUND", a(D(2.675), I(2)), "2.67"}, // 2.675 is 2.67499999... in binary
		{"TRUNCATE", a(Dec("42.345", 5, 3), I(2)), "42.34"},
		{"TRUNCATE", a(D(-42.345), I(1)), "-42.3"},
		{"SIGN", a(D(-2.5)), "-1.0"},
		{"DEGREES", a(D(0)), "0.0"},
		{"COALESCE", a(N(types.String()), S("default")), "default"},
		{"NULLIF", a(I(5), I(5)), "NULL"},
		{"NULLIF", a(I(5), I(0)), "5"},
		{"IF", a(B(true), I(5), I(3)), "5"},
		{"IF", a(N(types.Boolean()), I(5), I(3)), "3"},
		{"IFNULL", a(N(types.Int()), I(5)), "5"},
		{"GREATEST", a(I(1), I(3), BI(2)), "3"},
		{"LEAST", a(S("b"), S("a")), "a"},
		{"GREATEST", a(I(1), N(types.Int())), "NULL"},
		{"IS_DIGIT", a(S("123")), "TRUE"},
		{"IS_DIGIT", a(S("12a")), "FALSE"},
		{"IS_ALPHA", a(S("abc")), "TRUE"},
		{"IS_DECIMAL", a(S("1.5")), "TRUE"},
		{"IS_DECIMAL", a(S("x")), "FALSE"},
		{"IS_DIGIT", a(N(types.String())), "FALSE"},
		{"TYPEOF", a(I(1)), "INT NOT NULL"},
		// JSON examples from the JSON section of Flink's functions page
		// (Flink's Jackson output is compact: '{"b":1}').
		{"IS JSON", a(S("1")), "TRUE"},
		{"IS JSON", a(S(`"abc"`)), "TRUE"},
		{"IS JSON", a(S("abc")), "FALSE"},
		{"IS JSON", a(N(types.String())), "FALSE"},
		{"IS JSON", a(S("1"), S("SCALAR")), "TRUE"},
		{"IS JSON", a(S("1"), S("ARRAY")), "FALSE"},
		{"IS JSON", a(S("{}"), S("OBJECT")), "TRUE"},
		{"IS JSON", a(S("{}"), S("SCALAR")), "FALSE"},
		{"JSON_EXISTS", a(S(`{"a": true}`), S("$.a")), "TRUE"},
		{"JSON_EXISTS", a(S(`{"a": true}`), S("$.b")), "FALSE"},
		{"JSON_EXISTS", a(S(`{"a": [{ "b": 1 }]}`), S("$.a[0].b")), "TRUE"},
		{"JSON_VALUE", a(S(`{"a": true}`), S("$.a")), "true"},
		{"JSON_VALUE", a(S(`{"a.b": [0.998,0.996]}`), S(`$.["a.b"][0]`)), "0.998"},
		{"JSON_VALUE", a(S(`{"contains blank": "right"}`), S(`strict $.['contains blank']`)), "right"},
		{"JSON_VALUE", a(S(`{"a": {"b": 1}}`), S("$.a")), "NULL"},
		{"JSON_QUERY", a(S(`{ "a": { "b": 1 } }`), S("$.a")), `{"b":1}`},
		{"JSON_QUERY", a(S("[1, 2]"), S("$")), "[1,2]"},
		{"JSON_QUERY", a(S(`{"a":[{"c":"c1"},{"c":"c2"}]}`), S("lax $.a[*].c")), `["c1","c2"]`},
		{"JSON_QUERY", a(S("1"), S("$")), "NULL"},
		{"JSON_QUERY", a(S(`{"z":1,"a":2}`), S("$")), `{"z":1,"a":2}`},
		{"JSON_STRING", a(I(1)), "1"},
		{"JSON_STRING", a(B(true)), "true"},
		{"JSON_STRING", a(S("Hello, World!")), `"Hello, World!"`},
		{"JSON_STRING", a(Arr(types.Int(), int32(1), int32(2))), "[1,2]"},
		{"JSON_STRING", a(N(types.Int())), "NULL"},
		{"JSON_OBJECT", a(), "{}"},
		{"JSON_OBJECT", a(S("K1"), S("V1"), S("K2"), S("V2")), `{"K1":"V1","K2":"V2"}`},
		{"JSON_OBJECT", a(S("K1"), N(types.String())), `{"K1":null}`},
		{"JSON_ARRAY", a(), "[]"},
		{"JSON_ARRAY", a(I(1), S("2")), `[1,"2"]`},
		{"JSON_ARRAY", a(N(types.String())), "[]"},
		{"CARDINALITY", a(intArr), "3"},
		{"ITEM", a(intArr, I(3)), "3"},
		{"ITEM", a(intArr, I(4)), "NULL"},
		{"ELEMENT", a(Arr(types.Int(), int32(7))), "7"},
		{"ELEMENT", a(Arr(types.Int())), "NULL"},
		{"ARRAY_CONTAINS", a(intArr, I(3)), "TRUE"},
		{"ARRAY_CONTAINS", a(intArr, N(types.Int())), "TRUE"},
		{"ARRAY_CONTAINS", a(intArr, BI(2)), "FALSE"},
		{"MAP_KEYS", a(lit{types.MapType(types.String(), types.Int()), &types.Map{Keys: []any{"a", "b"}, Values: []any{int32(1), int32(2)}}}), "[a, b]"},
		{"ITEM", a(lit{types.MapType(types.String(), types.Int()), &types.Map{Keys: []any{"a", "b"}, Values: []any{int32(1), int32(2)}}}, S("b")), "2"},
		{"ARRAY", a(I(1), BI(2)), "[1, 2]"},
		{"ARRAY_DISTINCT", a(Arr(types.Int(), int32(1), nil, int32(1), nil, int32(2))), "[1, NULL, 2]"},
		{"ARRAY_REVERSE", a(intArr), "[3, NULL, 1]"},
		{"ARRAY_POSITION", a(intArr, I(3)), "3"},
		{"ARRAY_POSITION", a(intArr, I(9)), "0"},
		{"ARRAY_POSITION", a(intArr, N(types.Int())), "NULL"},
		{"ARRAY_REMOVE", a(intArr, N(types.Int())), "[1, 3]"},
		{"ARRAY_REMOVE", a(intArr, I(1)), "[NULL, 3]"},
		{"MAP_FROM_ARRAYS", a(Arr(types.String(), "a", "b"), Arr(types.Int(), int32(1), int32(2))), "{a=1, b=2}"},
		{"MAP", a(S("k"), I(1), S("k"), I(2)), "{k=2}"},
		{"ROW", a(I(1), S("x")), "(1, x)"},
	})
	if _, _, err := call(t, "ELEMENT", Arr(types.Int(), int32(1), int32(2))); err == nil {
		t.Error("ELEMENT of two elements must fail")
	}
	// CAST and TRY_CAST (docs: CAST('42' AS INT) = 42; CAST('non-number'
	// AS INT) fails; TRY_CAST gives NULL).
	c, _ := CastScalar(types.String(), types.Int(), false)
	if v, err := c.Eval(testCtx, []any{"42"}); v != int32(42) || err != nil {
		t.Errorf("CAST('42' AS INT) = %v, %v", v, err)
	}
	if _, err := c.Eval(testCtx, []any{"non-number"}); err == nil {
		t.Error("CAST('non-number' AS INT) did not fail")
	}
	tc, _ := CastScalar(types.String().NotNull(), types.Int(), true)
	if v, err := tc.Eval(testCtx, []any{"non-number"}); v != nil || err != nil || !tc.Result.IsNullable() {
		t.Errorf("TRY_CAST = %v, %v : %s", v, err, tc.Result)
	}
	if _, err := CastScalar(types.TimestampType(3), types.IntervalDayTime(), false); err == nil {
		t.Error("CAST(TIMESTAMP AS INTERVAL) allowed")
	}
}

// Integer arithmetic and string functions against SQLite, an independent
// engine, on random inputs where the two agree by definition (integer
// division truncates and % takes the dividend's sign in both; SUBSTR,
// REPLACE, TRIM, UPPER/LOWER on ASCII, INSTR and LENGTH as code points).
func TestAgainstSQLite(t *testing.T) {
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 not installed")
	}
	r := rand.New(rand.NewPCG(1, 2))
	type q struct {
		sql  string
		name string
		args []lit
	}
	var qs []q
	words := []string{"abc", " pad ", "héllo", "", "aXbXc", "Flink SQL", "x"}
	for i := 0; i < 300; i++ {
		x, y := r.Int64N(2000)-1000, r.Int64N(2000)-1000
		if y == 0 {
			y = 7
		}
		w, v := words[r.IntN(len(words))], words[r.IntN(len(words))]
		p, n := r.Int64N(8)+1, r.Int64N(6)
		qs = append(qs,
			q{fmt.Sprintf("%d + %d", x, y), "+", a(BI(x), BI(y))},
			q{fmt.Sprintf("%d - %d", x, y), "-", a(BI(x), BI(y))},
			q{fmt.Sprintf("%d * %d", x, y), "*", a(BI(x), BI(y))},
			q{fmt.Sprintf("%d / %d", x, y), "/", a(BI(x), BI(y))},
			q{fmt.Sprintf("%d %% %d", x, y), "%", a(BI(x), BI(y))},
			q{fmt.Sprintf("abs(%d)", x), "ABS", a(BI(x))},
			q{fmt.Sprintf("substr('%s', %d, %d)", w, p, n), "SUBSTRING", a(S(w), BI(p), BI(n))},
			q{fmt.Sprintf("replace('%s', 'X', '%s')", w, v), "REPLACE", a(S(w), S("X"), S(v))},
			q{fmt.Sprintf("trim('%s')", w), "TRIM", a(S(w))},
			q{fmt.Sprintf("upper('%s')", strings.ReplaceAll(w, "é", "e")), "UPPER", a(S(strings.ReplaceAll(w, "é", "e")))},
			q{fmt.Sprintf("length('%s')", w), "CHAR_LENGTH", a(S(w))},
			q{fmt.Sprintf("instr('%s', '%s')", w, v), "INSTR", a(S(w), S(v))},
			q{fmt.Sprintf("'%s' || '%s'", w, v), "||", a(S(w), S(v))},
			q{fmt.Sprintf("coalesce(NULL, %d)", x), "COALESCE", a(N(types.BigInt()), BI(x))},
			q{fmt.Sprintf("%d < %d", x, y), "<", a(BI(x), BI(y))},
		)
	}
	var script strings.Builder
	for _, q := range qs {
		// A marker column keeps empty strings visible.
		script.WriteString("SELECT '>' || (" + q.sql + ");\n")
	}
	cmd := exec.Command(bin, "-batch")
	cmd.Stdin = strings.NewReader(script.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sqlite3: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	i := 0
	for sc.Scan() {
		if i >= len(qs) {
			t.Fatalf("sqlite3 printed more lines than queries")
		}
		want := strings.TrimPrefix(sc.Text(), ">")
		got := str(t, qs[i].name, qs[i].args...)
		if qs[i].name == "<" { // SQLite prints booleans as 1/0
			got = map[string]string{"TRUE": "1", "FALSE": "0"}[got]
		}
		if got != want {
			t.Errorf("%s: sqlite3 %q, weir %q", qs[i].sql, want, got)
		}
		i++
	}
	if i != len(qs) {
		t.Fatalf("sqlite3 answered %d of %d queries", i, len(qs))
	}
}
