package parser

import (
	"fmt"
	"strings"
	"testing"
)

func sxMatch(m *MatchRecognize) string {
	s := "(MATCH " + sx(m.Input)
	if m.PartitionBy != nil {
		s += " partition=" + sxList(m.PartitionBy)
	}
	if m.OrderBy != nil {
		s += " order=" + sxOrder(m.OrderBy)
	}
	for _, ms := range m.Measures {
		s += " measure=" + orDash(ms.Semantics) + ":" + sx(ms.Expr) + "@" + ms.Alias
	}
	if m.RowsPerMatch != "" {
		s += " rows=" + strings.ReplaceAll(m.RowsPerMatch, " ", "_")
	}
	if m.Skip != nil {
		s += " skip=" + strings.ReplaceAll(m.Skip.Kind, " ", "_")
		if m.Skip.Var != "" {
			s += ":" + m.Skip.Var
		}
	}
	s += " pattern="
	if m.StrictStart {
		s += "^"
	}
	s += sxPattern(m.Pattern)
	if m.StrictEnd {
		s += "$"
	}
	if m.Within != nil {
		s += " within=" + sx(m.Within)
	}
	for _, ss := range m.Subsets {
		s += " subset=" + ss.Name + "(" + strings.Join(ss.Vars, ",") + ")"
	}
	for _, d := range m.Defines {
		s += " define=" + d.Var + ":" + sx(d.Cond)
	}
	return s + sxAlias(m.Alias) + ")"
}

func sxPattern(t PatternTerm) string {
	var parts []string
	switch t := t.(type) {
	case *PatternVar:
		return t.Name
	case *PatternConcat:
		for _, it := range t.Items {
			parts = append(parts, sxPattern(it))
		}
		return "(seq " + strings.Join(parts, " ") + ")"
	case *PatternAlt:
		for _, it := range t.Alts {
			parts = append(parts, sxPattern(it))
		}
		return "(alt " + strings.Join(parts, " ") + ")"
	case *PatternPermute:
		for _, it := range t.Items {
			parts = append(parts, sxPattern(it))
		}
		return "(permute " + strings.Join(parts, " ") + ")"
	case *PatternExclude:
		return "(exclude " + sxPattern(t.Term) + ")"
	case *PatternQuant:
		r := ""
		if t.Reluctant {
			r = "?"
		}
		return fmt.Sprintf("(%s{%d,%d}%s)", sxPattern(t.Term), t.Min, t.Max, r)
	}
	return fmt.Sprintf("<%T>", t)
}

var matchTests = []struct{ in, want string }{
	// Flink's documentation example.
	{`SELECT * FROM Ticker
    MATCH_RECOGNIZE (
        PARTITION BY symbol
        ORDER BY rowtime
        MEASURES
            START_ROW.rowtime AS start_tstamp,
            LAST(PRICE_DOWN.rowtime) AS bottom_tstamp,
            LAST(PRICE_UP.rowtime) AS end_tstamp
        ONE ROW PER MATCH
        AFTER MATCH SKIP TO LAST PRICE_UP
        PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
        DEFINE
            PRICE_DOWN AS
                (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) OR
                    PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
            PRICE_UP AS
                PRICE_UP.price > LAST(PRICE_DOWN.price, 1)
    ) MR`,
		"(SELECT * FROM (MATCH Ticker partition=symbol order=[rowtime] measure=-:START_ROW.rowtime@start_tstamp measure=-:(call LAST PRICE_DOWN.rowtime)@bottom_tstamp measure=-:(call LAST PRICE_UP.rowtime)@end_tstamp rows=ONE_ROW_PER_MATCH skip=TO_LAST:PRICE_UP pattern=(seq START_ROW (PRICE_DOWN{1,-1}) PRICE_UP) define=PRICE_DOWN:(OR (AND (IS NULL (call LAST PRICE_DOWN.price integer:1)) (< PRICE_DOWN.price START_ROW.price)) (< PRICE_DOWN.price (call LAST PRICE_DOWN.price integer:1))) define=PRICE_UP:(> PRICE_UP.price (call LAST PRICE_DOWN.price integer:1)) AS MR))"},
	{"SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS a > 1)",
		"(SELECT * FROM (MATCH t pattern=A define=A:(> a integer:1)))"},
	{"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES FINAL LAST(A.x) AS lx, RUNNING FIRST(B.x) AS fx ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A B*? C+? D?? E{2} F{2,} G{,3} H{1,4}?) WITHIN INTERVAL '1' HOUR DEFINE A AS A.x > 0) AS T",
		"(SELECT * FROM (MATCH t order=[ts] measure=FINAL:(call LAST A.x)@lx measure=RUNNING:(call FIRST B.x)@fx rows=ALL_ROWS_PER_MATCH skip=TO_NEXT_ROW pattern=(seq A (B{0,-1}?) (C{1,-1}?) (D{0,1}?) (E{2,2}) (F{2,-1}) (G{0,3}) (H{1,4}?)) within=(interval '1' HOUR) define=A:(> A.x integer:0) AS T))"},
	{"SELECT * FROM t MATCH_RECOGNIZE (AFTER MATCH SKIP PAST LAST ROW PATTERN (^ (A | B C) (D E)+ | PERMUTE(X, Y) {- Z -} $) SUBSET S = (A, B), U = (C) DEFINE A AS TRUE)",
		"(SELECT * FROM (MATCH t skip=PAST_LAST_ROW pattern=^(alt (seq (alt A (seq B C)) ((seq D E){1,-1})) (seq (permute X Y) (exclude Z)))$ subset=S(A,B) subset=U(C) define=A:TRUE))"},
	{"SELECT * FROM t MATCH_RECOGNIZE (AFTER MATCH SKIP TO FIRST b PATTERN ((A B) C) DEFINE A AS TRUE)",
		"(SELECT * FROM (MATCH t skip=TO_FIRST:b pattern=(seq (seq A B) C) define=A:TRUE))"},
	{"SELECT * FROM t MATCH_RECOGNIZE (AFTER MATCH SKIP TO b PATTERN ((A?)* (B | C) | D) DEFINE A AS TRUE)",
		"(SELECT * FROM (MATCH t skip=TO_LAST:b pattern=(alt (seq ((A{0,1}){0,-1}) (alt B C)) D) define=A:TRUE))"},
	{"SELECT * FROM (SELECT * FROM t) AS s MATCH_RECOGNIZE (PARTITION BY k, j MEASURES MATCH_ROWTIME() AS mt, AVG(A.x) AS ax PATTERN (A) DEFINE A AS PREV(A.x) < A.x)",
		"(SELECT * FROM (MATCH (DERIVED (SELECT * FROM t) AS s) partition=k j measure=-:(call MATCH_ROWTIME)@mt measure=-:(call AVG A.x)@ax pattern=A define=A:(< (call PREV A.x) A.x)))"},
	{"SELECT * FROM t MATCH_RECOGNIZE (MEASURES running + 1 AS r PATTERN (A) DEFINE A AS TRUE)",
		"(SELECT * FROM (MATCH t measure=-:(+ running integer:1)@r pattern=A define=A:TRUE))"},
}

func TestParseMatchRecognize(t *testing.T) {
	for _, tc := range matchTests {
		s, err := ParseStatement(tc.in)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tc.in, err)
			continue
		}
		if got := sx(s.(*QueryStatement).Query); got != tc.want {
			t.Errorf("ParseStatement(%q)\n got  %s\n want %s", tc.in, got, tc.want)
		}
		checkRoundTrip(t, s)
	}
}

var matchErrorTests = []struct {
	in        string
	line, col int
	msg       string
}{
	{"SELECT * FROM t MATCH_RECOGNIZE (DEFINE A AS TRUE)", 1, 34, "expected 'PATTERN' but found 'DEFINE'"},
	{"SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A B))", 1, 47, "expected 'DEFINE' but found ')'"},
	{"SELECT * FROM t MATCH_RECOGNIZE (\n  PATTERN (A{3,2}) DEFINE A AS TRUE)", 2, 13, "invalid quantifier {3,2}: the maximum is smaller than the minimum"},
	{"SELECT * FROM t MATCH_RECOGNIZE (PATTERN () DEFINE A AS TRUE)", 1, 43, "expected a pattern variable or '(' but found ')'"},
	{"SELECT * FROM t MATCH_RECOGNIZE (AFTER MATCH SKIP PAST ROW PATTERN (A) DEFINE A AS TRUE)", 1, 51, "expected 'PAST LAST ROW', 'TO NEXT ROW', 'TO FIRST', 'TO LAST' or 'TO' but found 'PAST'"},
	{"SELECT * FROM t MATCH_RECOGNIZE (MEASURES A.x PATTERN (A) DEFINE A AS TRUE)", 1, 47, "expected 'AS' but found 'PATTERN'"},
	{"SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) WITHIN 5 DEFINE A AS TRUE)", 1, 53, "expected an interval literal (WITHIN INTERVAL '10' SECOND) but found '5'"},
	{"SELECT MATCH_RECOGNIZE FROM t", 1, 8, "MATCH_RECOGNIZE must follow a table in FROM"},
}

func TestMatchRecognizeErrors(t *testing.T) {
	for _, tc := range matchErrorTests {
		_, err := ParseStatement(tc.in)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("ParseStatement(%q) = %v, want a *Error", tc.in, err)
			continue
		}
		if e.Line != tc.line || e.Column != tc.col || e.Msg != tc.msg {
			t.Errorf("ParseStatement(%q)\n got  %d:%d %s\n want %d:%d %s", tc.in, e.Line, e.Column, e.Msg, tc.line, tc.col, tc.msg)
		}
	}
}
