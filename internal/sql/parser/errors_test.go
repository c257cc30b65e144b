package parser

import (
	"strings"
	"testing"
)

var errorTests = []struct {
	in        string
	line, col int
	msg       string
}{
	{"SELECT a FROM t WHERE (a = 1", 1, 29, "expected ')' but found end of input"},
	{"SELECT a,\n  b\nFROM t\nWHERE f(a FROM", 4, 11, "expected ')' but found 'FROM'"},
	{"SELECT FROM t", 1, 8, "expected an expression but found 'FROM'"},
	{"SELEC a FROM t", 1, 1, "expected a statement but found 'SELEC'"},
	{"SELECT a FROM t x y", 1, 19, "expected ';' or end of input but found 'y'"},
	{"SELECT 'abc", 1, 8, "unterminated string literal"},
	{"SELECT a /* comment", 1, 10, "unterminated comment: missing '*/'"},
	{"SELECT \"a\" FROM t", 1, 8, "double-quoted identifiers are not supported; quote identifiers with backquotes (`name`)"},
	{"SELECT a FROM t WHERE a = #", 1, 27, "unexpected character '#'"},
	{"SELECT 12abc", 1, 8, "invalid number \"12a\": a number must not be followed directly by a letter"},
	{"CREATE TABLE t (a INT,) WITH ('x' = 'y')", 1, 23, "expected an identifier but found ')'"},
	{"CREATE TABLE t (a INT) WITH ('connector' 'kafka')", 1, 42, "expected '=' but found string 'kafka'"},
	{"CREATE TABLE t (a FOO)", 1, 19, "expected a data type but found 'FOO'"},
	{"CREATE TABLE t (\n  a INT,\n  WATERMARK FOR a AS a - INTERVAL '1' SECOND,\n  WATERMARK FOR a AS a\n)", 4, 3, "a table can have only one WATERMARK"},
	{"CREATE VIEW v SELECT 1", 1, 15, "expected 'AS' but found 'SELECT'"},
	{"SELECT CAST(a INT)", 1, 15, "expected 'AS' but found 'INT'"},
	{"SELECT INTERVAL '1' FORTNIGHT", 1, 21, "expected a time unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, ...) but found 'FORTNIGHT'"},
	{"SELECT INTERVAL '1' SECOND TO DAY", 1, 21, "invalid interval qualifier SECOND TO DAY"},
	{"SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts)))", 1, 21, "TUMBLE needs a SIZE argument"},
	{"SELECT * FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), SIZE => INTERVAL '1' SECOND))", 1, 50, "cannot mix named and positional arguments in HOP"},
	{"SELECT * FROM TABLE(TUMBLE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), WIDTH => INTERVAL '1' SECOND))", 1, 72, "TUMBLE has no parameter WIDTH (it has DATA, TIMECOL, SIZE, OFFSET)"},
	{"SELECT * FROM TABLE(TUMBLE(TABLE t, ts, INTERVAL '1' SECOND))", 1, 37, "the TIMECOL argument of TUMBLE must be DESCRIPTOR(column)"},
	{"SELECT * FROM TABLE(TUMBLE(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' SECOND))", 1, 28, "PARTITION BY is only allowed in SESSION windows"},
	{"SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY a)", 1, 48, "expected 'PATTERN' but found ')'"},
	{"INSERT t SELECT 1", 1, 8, "expected 'INTO' but found 't'"},
	{"SET 'k' = ", 1, 11, "expected a string literal but found end of input"},
	{"SET k = 'v'", 1, 5, "expected a quoted key ('key' = 'value') or end of statement but found 'k'"},
	{"EXECUTE STATEMENT SET BEGIN SELECT 1; END", 1, 29, "expected 'INSERT' or 'END' but found 'SELECT'"},
	{"SELECT a FROM t JOIN u", 1, 23, "expected 'ON' or 'USING' but found end of input"},
	{"SELECT CASE WHEN a THEN b", 1, 26, "expected 'END' but found end of input"},
	{"SELECT a IS 5", 1, 13, "expected 'NULL', 'TRUE', 'FALSE', 'UNKNOWN' or 'DISTINCT FROM' but found '5'"},
	{"SELECT ARRAY<INT>[1]", 1, 13, "expected '[' but found '<'"},
	{"", 1, 1, "expected a statement but found end of input"},
	{"DROP TEMPORARY DATABASE d", 1, 16, "expected 'TABLE', 'VIEW', 'FUNCTION' or 'SYSTEM' but found 'DATABASE'"},
	{"SELECT X'0a1' FROM t", 1, 8, "invalid binary literal: odd number of hexadecimal digits"},
	{"SELECT `` FROM t", 1, 8, "empty quoted identifier"},
	{"SELECT ? FROM t", 1, 8, "parameters ('?') are not supported"},
	{"SELECT * FROM t /*+ OPTIONS('a'='b') ", 1, 17, "unterminated hint: missing '*/'"},
}

func TestErrors(t *testing.T) {
	for _, tc := range errorTests {
		_, err := ParseStatement(tc.in)
		if err == nil {
			t.Errorf("ParseStatement(%q) succeeded, want an error", tc.in)
			continue
		}
		pe, ok := err.(*Error)
		if !ok {
			t.Errorf("ParseStatement(%q) error %T, want *Error", tc.in, err)
			continue
		}
		if pe.Line != tc.line || pe.Column != tc.col || pe.Msg != tc.msg {
			t.Errorf("ParseStatement(%q)\n got  line %d, column %d: %s\n want line %d, column %d: %s", tc.in, pe.Line, pe.Column, pe.Msg, tc.line, tc.col, tc.msg)
		}
	}
}

func TestErrorString(t *testing.T) {
	_, err := ParseScript("CREATE TABLE t (a INT);\nSELECT a,\n  b FROM t WHERE (a = 1")
	want := "line 3, column 24: expected ')' but found end of input"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestDeepNesting(t *testing.T) {
	deep := strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000)
	_, err := ParseExpr(deep)
	if err == nil || !strings.Contains(err.Error(), "nesting is deeper than 500 levels") {
		t.Errorf("deep parentheses: %v", err)
	}
	_, err = ParseExpr(strings.Repeat("NOT ", 100000) + "a")
	if err == nil || !strings.Contains(err.Error(), "nesting is deeper than 500 levels") {
		t.Errorf("deep NOT: %v", err)
	}
	_, err = ParseStatement(strings.Repeat("SELECT * FROM (", 10000) + "SELECT 1" + strings.Repeat(")", 10000))
	if err == nil || !strings.Contains(err.Error(), "nesting is deeper than 500 levels") {
		t.Errorf("deep subqueries: %v", err)
	}
	_, err = ParseType(strings.Repeat("ARRAY<", 10000) + "INT" + strings.Repeat(">", 10000))
	if err == nil || !strings.Contains(err.Error(), "nesting is deeper than 500 levels") {
		t.Errorf("deep types: %v", err)
	}
	// Moderate nesting is fine.
	e, err := ParseExpr(strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100))
	if err != nil || sx(e) != "integer:1" {
		t.Errorf("100 parentheses: %v %v", e, err)
	}
}
