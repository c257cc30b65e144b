package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/parser"
)

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		stmts []string
		rest  string
	}{
		{"one", "SELECT 1;", []string{"SELECT 1;"}, ""},
		{"unfinished", "SELECT 1", nil, "SELECT 1"},
		{"multi-line", "SELECT a,\n  b\nFROM t\n;", []string{"SELECT a,\n  b\nFROM t\n;"}, ""},
		{"two on a line and a rest", "SELECT 1; SELECT 2;\nSELECT", []string{"SELECT 1;", "SELECT 2;"}, "\nSELECT"},
		{"semicolon in a string", "SELECT 'a;b', 'it''s;' FROM t;", []string{"SELECT 'a;b', 'it''s;' FROM t;"}, ""},
		{"open string", "SELECT 'a;\nb", nil, "SELECT 'a;\nb"},
		{"semicolon in a quoted name", "SELECT `a;b` FROM t;", []string{"SELECT `a;b` FROM t;"}, ""},
		{"semicolon in a line comment", "SELECT 1 -- no; not yet\n, 2;", []string{"SELECT 1 -- no; not yet\n, 2;"}, ""},
		{"semicolon in a block comment", "SELECT /* a; b */ 1;", []string{"SELECT /* a; b */ 1;"}, ""},
		{"open block comment", "SELECT /* a;", nil, "SELECT /* a;"},
		{"hint", "SELECT /*+ OPTIONS('a'=';') */ 1;", []string{"SELECT /*+ OPTIONS('a'=';') */ 1;"}, ""},
		{"empty statements", " ;; -- c\n;", nil, ""},
		{"comment only rest", "SELECT 1; -- done", []string{"SELECT 1;"}, ""},
		{"client command", "quit;", []string{"quit;"}, ""},
		{"statement set", "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\n",
			nil, "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\n"},
		{"statement set ends", "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END; SELECT 3;",
			[]string{"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END;", "SELECT 3;"}, ""},
		{"client statement set", "BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nEND;",
			[]string{"BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nEND;"}, ""},
		{"end in a string", "BEGIN STATEMENT SET; INSERT INTO a SELECT 'END';", nil, "BEGIN STATEMENT SET; INSERT INTO a SELECT 'END';"},
		{"non-ASCII", "SELECT 'ü;' AS `ä`, 名前 FROM t;", []string{"SELECT 'ü;' AS `ä`, 名前 FROM t;"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmts, rest := splitStatements(tc.in)
			if !reflect.DeepEqual(stmts, tc.stmts) || rest != tc.rest {
				t.Fatalf("splitStatements(%q) = %q, %q; want %q, %q", tc.in, stmts, rest, tc.stmts, tc.rest)
			}
		})
	}
}

// TestSplitStatementsAgainstParser checks the client's splitting against
// the SQL parser's: fed line by line, a script gives the statements
// ParseScript finds, with the same text.
func TestSplitStatementsAgainstParser(t *testing.T) {
	script := `-- a script as a user would type it
CREATE TABLE t (
  a INT,  -- the key; an int
  b STRING /* free text; any */,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'datagen', 'fields.b.length' = '3');
SET 'sql-client.execution.result-mode' = 'tableau';
SELECT a, 'x;y' AS ` + "`c;d`" + `, COUNT(*) FROM t
  WHERE b <> ';' GROUP BY a; SELECT 1;
EXECUTE STATEMENT SET
BEGIN
  INSERT INTO s SELECT a FROM t;
  INSERT INTO s SELECT a + 1 FROM t;
END;
EXPLAIN SELECT * FROM t;
`
	want, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	buf := ""
	for _, line := range strings.SplitAfter(script, "\n") {
		var stmts []string
		stmts, buf = splitStatements(buf + line)
		got = append(got, stmts...)
	}
	if buf != "" {
		t.Fatalf("rest %q", buf)
	}
	if len(got) != len(want) {
		t.Fatalf("%d statements, the parser finds %d: %q", len(got), len(want), got)
	}
	for i, st := range want {
		// The parser's text of a statement leaves out the ';' and the
		// comments before it.
		g := strings.TrimSuffix(got[i], ";")
		if !strings.HasSuffix(strings.TrimSpace(g), strings.TrimSpace(st.SourceText())) {
			t.Errorf("statement %d: %q, the parser's is %q", i, got[i], st.SourceText())
		}
		if _, err := parser.ParseStatement(got[i]); err != nil {
			t.Errorf("statement %d: %q does not parse alone: %v", i, got[i], err)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT a,\n  b -- the b; column\nFROM t;", "SELECT a, b FROM t;"},
		{"SELECT 'a  --  b',\n\t`x  y` FROM t;", "SELECT 'a  --  b', `x  y` FROM t;"},
		{"SELECT /* two\n lines */ 1;", "SELECT /* two lines */ 1;"},
		{"  SELECT 1;  ", "SELECT 1;"},
	} {
		got := oneLine(tc.in)
		if got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// On one line it is still the same statement.
		a, err1 := parser.ParseStatement(tc.in)
		b, err2 := parser.ParseStatement(got)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: %v; %q: %v", tc.in, err1, got, err2)
		}
		if !parser.Equal(a, b) {
			t.Errorf("oneLine(%q) = %q parses differently", tc.in, got)
		}
	}
}
