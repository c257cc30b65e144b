package parser

import "testing"

// Expected shapes follow Calcite's operator precedences (Flink's parser):
// OR 22 < AND 24 < NOT 26 < IS 28 < comparison and IN 30 < LIKE, BETWEEN 32
// < + - 40 < * / % || 60 < unary + - 80 < . [] 100.
var exprTests = []struct {
	in, want string
}{
	// Precedence and associativity.
	{"a OR b AND NOT c = d", "(OR a (AND b (NOT (= c d))))"},
	{"a AND b OR c", "(OR (AND a b) c)"},
	{"NOT a AND b", "(AND (NOT a) b)"},
	{"NOT NOT a", "(NOT (NOT a))"},
	{"-x.y[1]", "(- ([] x.y integer:1))"},
	{"-a * b", "(* (- a) b)"},
	{"- - a", "(- (- a))"},
	{"+a", "(+ a)"},
	{"a - b - c", "(- (- a b) c)"},
	{"a - (b - c)", "(- a (- b c))"},
	{"a + b * c", "(+ a (* b c))"},
	{"a / b % c", "(% (/ a b) c)"},
	// || binds like * (60), tighter than + (40).
	{"a || b + c", "(+ (|| a b) c)"},
	{"a + b || c", "(+ a (|| b c))"},
	{"a * b || c", "(|| (* a b) c)"},
	{"a = b = c", "(= (= a b) c)"},
	{"a <> b", "(<> a b)"},
	{"a != b", "(<> a b)"},
	{"a <= b AND a >= c AND a < d AND a > e", "(AND (AND (AND (<= a b) (>= a c)) (< a d)) (> a e))"},
	// IS binds looser than comparison, LIKE/BETWEEN tighter.
	{"a = b IS NULL", "(IS NULL (= a b))"},
	{"a IS NULL = b", "(= (IS NULL a) b)"},
	{"NOT a IS NULL", "(NOT (IS NULL a))"},
	{"a IS NOT NULL", "(IS NOT NULL a)"},
	{"a IS TRUE OR b IS NOT FALSE", "(OR (IS TRUE a) (IS NOT FALSE b))"},
	{"a IS UNKNOWN", "(IS UNKNOWN a)"},
	{"a IS DISTINCT FROM b + 1", "(IS DISTINCT FROM a (+ b integer:1))"},
	{"a IS NOT DISTINCT FROM b", "(IS NOT DISTINCT FROM a b)"},
	{"a = b LIKE c", "(= a (LIKE b c))"},
	{"a LIKE b = c", "(= (LIKE a b) c)"},
	{"a LIKE 'x%' ESCAPE '!'", "(LIKE a str:'x%' escape str:'!')"},
	{"a NOT LIKE b || '%'", "(NOT LIKE a (|| b str:'%'))"},
	{"a SIMILAR TO 'a|b'", "(SIMILAR a str:'a|b')"},
	{"a NOT SIMILAR TO b", "(NOT SIMILAR a b)"},
	{"a BETWEEN 1 AND 2", "(BETWEEN a integer:1 integer:2)"},
	{"a BETWEEN b - 1 AND c + 1 AND d", "(AND (BETWEEN a (- b integer:1) (+ c integer:1)) d)"},
	{"a NOT BETWEEN SYMMETRIC 1 AND 2", "(NOT BETWEEN SYMMETRIC a integer:1 integer:2)"},
	{"a BETWEEN ASYMMETRIC 1 AND 2", "(BETWEEN a integer:1 integer:2)"},
	{"a = b BETWEEN c AND d", "(= a (BETWEEN b c d))"},
	{"a IN (1, 2, 3)", "(IN a [integer:1 integer:2 integer:3])"},
	{"a NOT IN ('x')", "(NOT IN a [str:'x'])"},
	{"a IN (SELECT b FROM t)", "(IN a (SELECT b FROM t))"},
	{"a IN ((SELECT 1), 2)", "(IN a [(SUBQUERY (SELECT integer:1)) integer:2])"},
	{"lower(c) IN ('a', 'b') OR x", "(OR (IN (call lower c) [str:'a' str:'b']) x)"},
	{"a = 1 AND (b = 2 OR c = 3)", "(AND (= a integer:1) (OR (= b integer:2) (= c integer:3)))"},

	// Literals.
	{"123", "integer:123"},
	{"12345678901234567890", "integer:12345678901234567890"},
	{"1.5", "decimal:1.5"},
	{".5", "decimal:.5"},
	{"1.", "decimal:1."},
	{"1e3", "approximate:1e3"},
	{"1.5E-3", "approximate:1.5E-3"},
	{"'it''s'", "str:'it's'"},
	{"''", "str:''"},
	{"_UTF16'abc'", "str:UTF16:'abc'"},
	{`U&'\0041\+00263A'`, "str:'A☺'"},
	{"X'0aFF'", "binary:'0aFF'"},
	{"TRUE", "TRUE"},
	{"false", "FALSE"},
	{"UNKNOWN", "UNKNOWN"},
	{"null", "NULL"},
	{"DATE '2020-01-01'", "date:'2020-01-01'"},
	{"TIME '12:00:00'", "time:'12:00:00'"},
	{"TIMESTAMP '2020-01-01 12:00:00.123'", "timestamp:'2020-01-01 12:00:00.123'"},
	{"TIMESTAMP WITH LOCAL TIME ZONE '2020-01-01 12:00:00'", "timestamp_ltz:'2020-01-01 12:00:00'"},

	// Interval literals.
	{"INTERVAL '5' SECOND", "(interval '5' SECOND)"},
	{"INTERVAL '10' MINUTES", "(interval '10' MINUTE)"},
	{"INTERVAL '2' hours", "(interval '2' HOUR)"},
	{"INTERVAL '3' DAYS", "(interval '3' DAY)"},
	{"INTERVAL '1' MONTHS", "(interval '1' MONTH)"},
	{"INTERVAL '1' YEARS", "(interval '1' YEAR)"},
	{"INTERVAL '1-2' YEAR TO MONTH", "(interval '1-2' YEAR TO MONTH)"},
	{"INTERVAL '1 02:03:04.5' DAY TO SECOND", "(interval '1 02:03:04.5' DAY TO SECOND)"},
	{"INTERVAL '10' DAY(3)", "(interval '10' DAY(3))"},
	{"INTERVAL '1 02:03:04.567' DAY(2) TO SECOND(3)", "(interval '1 02:03:04.567' DAY(2) TO SECOND frac=3)"},
	{"INTERVAL '1.5' SECOND(2, 3)", "(interval '1.5' SECOND(2) frac=3)"},
	{"INTERVAL -'5' SECOND", "(interval -'5' SECOND)"},
	{"ts - INTERVAL '4' SECOND", "(- ts (interval '4' SECOND))"},
	{"-INTERVAL '4' SECOND", "(- (interval '4' SECOND))"},

	// Names.
	{"a", "a"},
	{"MyCol", "MyCol"},
	{"`dateTime`", "dateTime"},
	{"`a``b`", "a`b"},
	{"`select`", "select"},
	{"cat.db.tbl.col", "cat.db.tbl.col"},
	{"t.`value`", "t.value"},
	{"key", "key"},
	{"(a).b", "(. a b)"},
	{"f(x).b.c", "(. (. (call f x) b) c)"},
	{"arr[1][2]", "([] ([] arr integer:1) integer:2)"},
	{"m['k'].f", "(. ([] m str:'k') f)"},
	{"ROW(1, 'a').f0", "(. (ROW integer:1 str:'a') f0)"},

	// Function calls.
	{"f()", "(call f)"},
	{"f(a, b)", "(call f a b)"},
	{"db.fn(a)", "(call db.fn a)"},
	{"COUNT(*)", "(call COUNT *)"},
	{"count(DISTINCT x)", "(call count distinct x)"},
	{"SUM(ALL x)", "(call SUM x)"},
	{"count(*) FILTER (WHERE price < 10)", "(call count * filter (< price integer:10))"},
	{"count(DISTINCT bidder) filter (where price >= 10000 and price < 1000000)", "(call count distinct bidder filter (AND (>= price integer:10000) (< price integer:1000000)))"},
	{"LISTAGG(x, ',')", "(call LISTAGG x str:',')"},
	{"LISTAGG(x) WITHIN GROUP (ORDER BY y DESC)", "(call LISTAGG x within [y DESC])"},
	{"ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY c DESC, d ASC)", "(call ROW_NUMBER over {partition=a b; order=[c DESC, d]})"},
	{"SUM(x) OVER w", "(call SUM x over {ref=w})"},
	{"SUM(x) OVER (w ORDER BY t)", "(call SUM x over {ref=w; order=[t]})"},
	{"AVG(p) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)", "(call AVG p over {partition=s; order=[t]; ROWS integer:10 PRECEDING .. CURRENT ROW})"},
	{"SUM(x) OVER (ORDER BY t RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)", "(call SUM x over {order=[t]; RANGE (interval '1' HOUR) PRECEDING .. CURRENT ROW})"},
	{"SUM(x) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING)", "(call SUM x over {order=[t]; ROWS UNBOUNDED PRECEDING})"},
	{"SUM(x) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)", "(call SUM x over {order=[t]; ROWS UNBOUNDED PRECEDING .. UNBOUNDED FOLLOWING})"},
	{"SUM(x) OVER (ORDER BY t NULLS LAST ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING)", "(call SUM x over {order=[t NULLS_LAST]; ROWS CURRENT ROW .. integer:2 FOLLOWING})"},
	{"CURRENT_TIMESTAMP", "(call CURRENT_TIMESTAMP noparens)"},
	{"current_date", "(call CURRENT_DATE noparens)"},
	{"LOCALTIMESTAMP", "(call LOCALTIMESTAMP noparens)"},
	{"LOCALTIME", "(call LOCALTIME noparens)"},
	{"CURRENT_TIME", "(call CURRENT_TIME noparens)"},
	{"CURRENT_ROW_TIMESTAMP()", "(call CURRENT_ROW_TIMESTAMP)"},
	{"PROCTIME()", "(call PROCTIME)"},
	{"LEFT(s, 2)", "(call LEFT s integer:2)"},
	{"IF(a, 1, 2)", "(call IF a integer:1 integer:2)"},
	{"HOUR(`dateTime`) >= 8", "(>= (call HOUR dateTime) integer:8)"},
	{"f(name => 1, `other` => 'x')", "(call f (=> name integer:1) (=> other str:'x'))"},
	{"f(TABLE t, DESCRIPTOR(a, b))", "(call f (TABLE t) (DESCRIPTOR a b))"},
	{"f(TABLE t PARTITION BY k)", "(call f (TABLE t partition=k))"},
	{"f(TABLE t PARTITION BY (k1, k2))", "(call f (TABLE t partition=k1 k2))"},

	// Special forms.
	{"CAST(x AS INT)", "(CAST x INT)"},
	{"CAST(x AS DECIMAL(10, 2) NOT NULL)", "(CAST x DECIMAL(10,2)!)"},
	{"TRY_CAST(s AS TIMESTAMP(3))", "(TRY_CAST s TIMESTAMP(3))"},
	{"CASE WHEN a = 0 THEN 'x' WHEN a = 1 THEN 'y' ELSE 'z' END", "(CASE (WHEN (= a integer:0) str:'x') (WHEN (= a integer:1) str:'y') (ELSE str:'z'))"},
	{"CASE a WHEN 1 THEN 2 END", "(CASE a (WHEN integer:1 integer:2))"},
	{"EXTRACT(DAY FROM ts)", "(EXTRACT DAY ts)"},
	{"extract(hour from ts)", "(EXTRACT HOUR ts)"},
	{"EXTRACT(DOW FROM ts)", "(EXTRACT DOW ts)"},
	{"POSITION('a' IN s)", "(POSITION str:'a' s)"},
	{"POSITION('a' || b IN s FROM 2)", "(POSITION (|| str:'a' b) s integer:2)"},
	{"TRIM(s)", "(TRIM - nil s)"},
	{"TRIM(BOTH ' ' FROM s)", "(TRIM BOTH str:' ' s)"},
	{"TRIM(LEADING FROM s)", "(TRIM LEADING nil s)"},
	{"TRIM(TRAILING 'x' FROM s)", "(TRIM TRAILING str:'x' s)"},
	{"TRIM('x' FROM s)", "(TRIM - str:'x' s)"},
	{"SUBSTRING(s FROM 2)", "(SUBSTRING s integer:2 nil)"},
	{"SUBSTRING(s FROM 2 FOR 3)", "(SUBSTRING s integer:2 integer:3)"},
	{"SUBSTRING(s, 2, 3)", "(SUBSTRING s integer:2 integer:3)"},
	{"substring(s, 2)", "(SUBSTRING s integer:2 nil)"},
	{"OVERLAY(s PLACING 'ab' FROM 2 FOR 3)", "(OVERLAY s str:'ab' integer:2 integer:3)"},
	{"OVERLAY(s PLACING 'ab' FROM 2)", "(OVERLAY s str:'ab' integer:2 nil)"},
	{"FLOOR(ts TO HOUR)", "(FLOOR ts HOUR)"},
	{"CEIL(ts TO DAY)", "(CEIL ts DAY)"},
	{"FLOOR(x)", "(call FLOOR x)"},
	{"ceil(x + 1)", "(call ceil (+ x integer:1))"},
	{"TIMESTAMPADD(DAY, 1, ts)", "(TIMESTAMPADD DAY integer:1 ts)"},
	{"TIMESTAMPDIFF(SECOND, a, b)", "(TIMESTAMPDIFF SECOND a b)"},
	{"ARRAY[1, 2]", "(ARRAY integer:1 integer:2)"},
	{"MAP['a', 1, 'b', 2]", "(MAP str:'a':integer:1 str:'b':integer:2)"},
	{"ROW(a, b)", "(ROW a b)"},
	{"ROW()", "(ROW)"},
	{"(a, b)", "(ROW a b)"},
	{"(a)", "a"},
	{"EXISTS (SELECT 1)", "(EXISTS (SELECT integer:1))"},
	{"NOT EXISTS (SELECT 1)", "(NOT (EXISTS (SELECT integer:1)))"},
	{"(SELECT MAX(x) FROM t) + 1", "(+ (SUBQUERY (SELECT (call MAX x) FROM t)) integer:1)"},
	{"((SELECT 1) + 1)", "(+ (SUBQUERY (SELECT integer:1)) integer:1)"},
	{"REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null", "(IS NOT NULL (call REGEXP_EXTRACT url str:'(&|^)channel_id=([^&]*)' integer:2))"},
}

func TestParseExpr(t *testing.T) {
	for _, tc := range exprTests {
		e, err := ParseExpr(tc.in)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tc.in, err)
			continue
		}
		if got := sx(e); got != tc.want {
			t.Errorf("ParseExpr(%q)\n got  %s\n want %s", tc.in, got, tc.want)
		}
		checkRoundTrip(t, e)
	}
}

func TestExprPositions(t *testing.T) {
	e, err := ParseExpr("a +\n  f(b,\n\tc)")
	if err != nil {
		t.Fatal(err)
	}
	bin := e.(*Binary)
	if p := bin.Pos(); p != (Pos{Line: 1, Column: 1, Offset: 0}) {
		t.Errorf("binary at %+v", p)
	}
	call := bin.Right.(*FuncCall)
	if p := call.Pos(); p != (Pos{Line: 2, Column: 3, Offset: 6}) {
		t.Errorf("call at %+v", p)
	}
	if p := call.Args[1].Pos(); p != (Pos{Line: 3, Column: 2, Offset: 12}) {
		t.Errorf("c at %+v", p)
	}
	// Columns count characters, not bytes.
	e, err = ParseExpr("'é' || x")
	if err != nil {
		t.Fatal(err)
	}
	if p := e.(*Binary).Right.Pos(); p != (Pos{Line: 1, Column: 8, Offset: 8}) {
		t.Errorf("x at %+v", p)
	}
}

func TestEqualAndInspect(t *testing.T) {
	a, _ := ParseExpr("DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')")
	b, _ := ParseExpr("DATE_FORMAT(\n  dateTime,'yyyy-MM-dd' )")
	c, _ := ParseExpr("DATE_FORMAT(dateTime, 'HH:mm')")
	if !Equal(a, b) {
		t.Error("same expression at other positions is not Equal")
	}
	if Equal(a, c) {
		t.Error("different literals are Equal")
	}
	e, _ := ParseExpr("f(a, g(b)) + CASE WHEN c THEN d END")
	var names []string
	Inspect(e, func(n Node) bool {
		if id, ok := n.(*Ident); ok {
			names = append(names, id.Parts[0])
		}
		return true
	})
	if got := sxNames(names); got != "a b c d" {
		t.Errorf("Inspect visited %s", got)
	}
	// Returning false prunes the subtree.
	names = nil
	Inspect(e, func(n Node) bool {
		if id, ok := n.(*Ident); ok {
			names = append(names, id.Parts[0])
		}
		_, isCall := n.(*FuncCall)
		return !isCall
	})
	if got := sxNames(names); got != "c d" {
		t.Errorf("pruned Inspect visited %s", got)
	}
}

func sxNames(ns []string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += " "
		}
		s += n
	}
	return s
}
