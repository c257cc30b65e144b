package parser

import "testing"

var queryTests = []struct {
	in, want string
}{
	// Select lists and clauses.
	{"SELECT 1", "(SELECT integer:1)"},
	{"SELECT a, b AS x, c y, * FROM t", "(SELECT a b@x c@y * FROM t)"},
	{"SELECT t.*, u.a FROM t, u", "(SELECT t.* u.a FROM (COMMA t u))"},
	{"SELECT DISTINCT a FROM t", "(SELECT DISTINCT a FROM t)"},
	{"SELECT ALL a FROM t", "(SELECT a FROM t)"},
	{"SELECT a FROM cat.db.t WHERE a > 1", "(SELECT a FROM cat.db.t WHERE (> a integer:1))"},
	{"SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1", "(SELECT a (call COUNT *) FROM t GROUP a HAVING (> (call COUNT *) integer:1))"},
	{"select A from T", "(SELECT A FROM T)"},
	{"SELECT /*+ BROADCAST(t1, db.t2) */ a FROM t1", "(SELECT hints=[BROADCAST(t1,db.t2)] a FROM t1)"},

	// Grouping sets.
	{"SELECT a, b FROM t GROUP BY GROUPING SETS ((a, b), (a), ())", "(SELECT a b FROM t GROUP (GROUPING_SETS (ROW a b) a (ROW)))"},
	{"SELECT a FROM t GROUP BY ROLLUP(a, b)", "(SELECT a FROM t GROUP (ROLLUP a b))"},
	{"SELECT a FROM t GROUP BY CUBE(a, (b, c))", "(SELECT a FROM t GROUP (CUBE a (ROW b c)))"},
	{"SELECT a FROM t GROUP BY x, ROLLUP(a), GROUPING SETS (CUBE(b), c)", "(SELECT a FROM t GROUP x (ROLLUP a) (GROUPING_SETS (CUBE b) c))"},
	{"SELECT a FROM t GROUP BY ()", "(SELECT a FROM t GROUP (ROW))"},
	{"SELECT GROUPING(a) FROM t GROUP BY a", "(SELECT (call GROUPING a) FROM t GROUP a)"},

	// Named windows.
	{"SELECT SUM(x) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts)", "(SELECT (call SUM x over {ref=w}) FROM t WINDOW w={partition=k; order=[ts]})"},

	// ORDER BY, LIMIT, OFFSET, FETCH.
	{"SELECT a FROM t ORDER BY a DESC NULLS FIRST, b ASC NULLS LAST LIMIT 10", "(QUERY (SELECT a FROM t) ORDER [a DESC NULLS_FIRST, b NULLS_LAST] LIMIT integer:10)"},
	{"SELECT a FROM t LIMIT 10 OFFSET 5", "(QUERY (SELECT a FROM t) LIMIT integer:10 OFFSET integer:5)"},
	{"SELECT a FROM t OFFSET 5 ROWS FETCH FIRST 10 ROWS ONLY", "(QUERY (SELECT a FROM t) LIMIT integer:10 OFFSET integer:5)"},
	{"SELECT a FROM t FETCH NEXT 3 ROWS ONLY", "(QUERY (SELECT a FROM t) LIMIT integer:3)"},
	{"SELECT a FROM t FETCH FIRST ROW ONLY", "(QUERY (SELECT a FROM t) LIMIT integer:1)"},
	{"SELECT a FROM t LIMIT ALL", "(SELECT a FROM t)"},

	// Set operations: INTERSECT binds tighter, all left-associative.
	{"SELECT 1 UNION SELECT 2 UNION ALL SELECT 3", "(UNION_ALL (UNION (SELECT integer:1) (SELECT integer:2)) (SELECT integer:3))"},
	{"SELECT 1 UNION SELECT 2 INTERSECT SELECT 3", "(UNION (SELECT integer:1) (INTERSECT (SELECT integer:2) (SELECT integer:3)))"},
	{"SELECT 1 INTERSECT ALL SELECT 2 EXCEPT SELECT 3", "(EXCEPT (INTERSECT_ALL (SELECT integer:1) (SELECT integer:2)) (SELECT integer:3))"},
	{"SELECT 1 MINUS SELECT 2", "(EXCEPT (SELECT integer:1) (SELECT integer:2))"},
	{"SELECT 1 EXCEPT ALL SELECT 2", "(EXCEPT_ALL (SELECT integer:1) (SELECT integer:2))"},
	{"SELECT 1 UNION DISTINCT SELECT 2", "(UNION (SELECT integer:1) (SELECT integer:2))"},
	{"(SELECT 1 UNION SELECT 2) INTERSECT SELECT 3", "(INTERSECT (UNION (SELECT integer:1) (SELECT integer:2)) (SELECT integer:3))"},
	{"SELECT 1 EXCEPT (SELECT 2 EXCEPT SELECT 3)", "(EXCEPT (SELECT integer:1) (EXCEPT (SELECT integer:2) (SELECT integer:3)))"},
	{"SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", "(QUERY (UNION (SELECT a FROM t) (SELECT b FROM u)) ORDER [integer:1])"},
	{"(SELECT a FROM t ORDER BY a LIMIT 1) UNION ALL SELECT b FROM u", "(UNION_ALL (QUERY (SELECT a FROM t) ORDER [a] LIMIT integer:1) (SELECT b FROM u))"},

	// VALUES.
	{"VALUES (1, 'a'), (2, 'b')", "(VALUES [integer:1 str:'a'] [integer:2 str:'b'])"},
	{"VALUES 1, 2", "(VALUES [integer:1] [integer:2])"},
	{"VALUES ROW(1, 2)", "(VALUES [integer:1 integer:2])"},
	{"VALUES ((1, 2))", "(VALUES [(ROW integer:1 integer:2)])"},
	{"SELECT * FROM (VALUES (1), (2)) AS t(x)", "(SELECT * FROM (DERIVED (VALUES [integer:1] [integer:2]) AS t(x)))"},

	// WITH.
	{"WITH a AS (SELECT 1 AS x), b (y) AS (SELECT x FROM a) SELECT y FROM b", "(QUERY (WITH a (SELECT integer:1@x)) (WITH b(y) (SELECT x FROM a)) (SELECT y FROM b))"},

	// Joins.
	{"SELECT * FROM a JOIN b ON a.id = b.id", "(SELECT * FROM (INNER a b ON (= a.id b.id)))"},
	{"SELECT * FROM a INNER JOIN b USING (id, k)", "(SELECT * FROM (INNER a b USING id,k))"},
	{"SELECT * FROM a LEFT JOIN b ON x LEFT OUTER JOIN c ON y", "(SELECT * FROM (LEFT (LEFT a b ON x) c ON y))"},
	{"SELECT * FROM a RIGHT OUTER JOIN b ON x FULL JOIN c ON y", "(SELECT * FROM (FULL (RIGHT a b ON x) c ON y))"},
	{"SELECT * FROM a CROSS JOIN b, c", "(SELECT * FROM (COMMA (CROSS a b) c))"},
	{"SELECT * FROM a NATURAL JOIN b", "(SELECT * FROM (INNER NATURAL a b))"},
	{"SELECT * FROM a JOIN (b JOIN c ON y) ON x", "(SELECT * FROM (INNER a (INNER b c ON y) ON x))"},
	{"SELECT * FROM auction AS A, bid B WHERE A.id = B.auction", "(SELECT * FROM (COMMA auction AS A bid AS B) WHERE (= A.id B.auction))"},
	{"SELECT * FROM (SELECT 1) AS q(x), LATERAL (SELECT x) y", "(SELECT * FROM (COMMA (DERIVED (SELECT integer:1) AS q(x)) (LATERAL (SELECT x) AS y)))"},
	{"SELECT * FROM (SELECT * FROM bid)", "(SELECT * FROM (DERIVED (SELECT * FROM bid)))"},

	// Table functions, UNNEST, temporal joins, hints.
	{"SELECT s, w FROM t, LATERAL TABLE(split(s)) AS T(w, n)", "(SELECT s w FROM (COMMA t (LATERAL_TABLEFUNC (call split s) AS T(w,n))))"},
	{"SELECT * FROM t LEFT JOIN LATERAL TABLE(split(s)) AS T(w) ON TRUE", "(SELECT * FROM (LEFT t (LATERAL_TABLEFUNC (call split s) AS T(w)) ON TRUE))"},
	{"SELECT * FROM TABLE(gen(1, 2)) g", "(SELECT * FROM (TABLEFUNC (call gen integer:1 integer:2) AS g))"},
	{"SELECT * FROM t CROSS JOIN UNNEST(t.arr) AS u(x)", "(SELECT * FROM (CROSS t (UNNEST t.arr AS u(x))))"},
	{"SELECT * FROM UNNEST(ARRAY[1, 2]) WITH ORDINALITY AS u(x, i)", "(SELECT * FROM (UNNEST (ARRAY integer:1 integer:2) ordinality AS u(x,i)))"},
	{"SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.proctime AS c ON o.k = c.k", "(SELECT * FROM (INNER o r asof=o.proctime AS c ON (= o.k c.k)))"},
	{"SELECT * FROM o JOIN cat.db.r FOR SYSTEM_TIME AS OF o.ts ON o.k = r.k", "(SELECT * FROM (INNER o cat.db.r asof=o.ts ON (= o.k r.k)))"},
	{"SELECT * FROM t /*+ OPTIONS('scan.startup.mode' = 'earliest-offset', 'k'='v') */ AS x", "(SELECT * FROM t hints=[OPTIONS(scan.startup.mode=earliest-offset,k=v)] AS x)"},
	{"SELECT * FROM o JOIN c /*+ LOOKUP('table'='c', 'retry-predicate'='lookup_miss') */ FOR SYSTEM_TIME AS OF o.pt ON TRUE", "(SELECT * FROM (INNER o c hints=[LOOKUP(table=c,retry-predicate=lookup_miss)] asof=o.pt ON TRUE))"},

	// Window TVFs, positional and named.
	{"SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))",
		"(SELECT * FROM (TUMBLE data=bid timecol=dateTime size=(interval '10' SECOND)))"},
	{"SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' MINUTES, INTERVAL '1' MINUTE)) AS w",
		"(SELECT * FROM (TUMBLE data=bid timecol=ts size=(interval '10' MINUTE) offset=(interval '1' MINUTE) AS w))"},
	{"SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SIZE => INTERVAL '10' MINUTES))",
		"(SELECT * FROM (TUMBLE data=Bid timecol=bidtime size=(interval '10' MINUTE)))"},
	{"SELECT * FROM TABLE(tumble(size => INTERVAL '1' HOUR, data => TABLE t, offset => INTERVAL '5' MINUTE, timecol => DESCRIPTOR(ts)))",
		"(SELECT * FROM (TUMBLE data=t timecol=ts size=(interval '1' HOUR) offset=(interval '5' MINUTE)))"},
	{"SELECT * FROM TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))",
		"(SELECT * FROM (HOP data=bid timecol=ts size=(interval '10' SECOND) slide=(interval '2' SECOND)))"},
	{"SELECT * FROM TABLE(HOP(DATA => TABLE bid, TIMECOL => DESCRIPTOR(ts), SLIDE => INTERVAL '5' MINUTES, SIZE => INTERVAL '10' MINUTES))",
		"(SELECT * FROM (HOP data=bid timecol=ts size=(interval '10' MINUTE) slide=(interval '5' MINUTE)))"},
	{"SELECT * FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))",
		"(SELECT * FROM (CUMULATE data=bid timecol=ts size=(interval '10' MINUTE) step=(interval '2' MINUTE)))"},
	{"SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY item, DESCRIPTOR(ts), INTERVAL '5' MINUTES))",
		"(SELECT * FROM (SESSION data=bid timecol=ts partition=item gap=(interval '5' MINUTE)))"},
	{"SELECT * FROM TABLE(SESSION(DATA => TABLE bid PARTITION BY (a, b), TIMECOL => DESCRIPTOR(ts), GAP => INTERVAL '5' MINUTES))",
		"(SELECT * FROM (SESSION data=bid timecol=ts partition=a b gap=(interval '5' MINUTE)))"},
	{"SELECT * FROM TABLE(TUMBLE((SELECT * FROM bid WHERE price > 1), DESCRIPTOR(ts), INTERVAL '1' SECOND))",
		"(SELECT * FROM (TUMBLE data=(DERIVED (SELECT * FROM bid WHERE (> price integer:1))) timecol=ts size=(interval '1' SECOND)))"},

	// Subqueries in expressions.
	{"SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k) AND a NOT IN (SELECT b FROM v)",
		"(SELECT * FROM t WHERE (AND (EXISTS (SELECT integer:1 FROM u WHERE (= u.k t.k))) (NOT IN a (SELECT b FROM v))))"},
}

func TestParseQuery(t *testing.T) {
	for _, tc := range queryTests {
		s, err := ParseStatement(tc.in)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tc.in, err)
			continue
		}
		qs, ok := s.(*QueryStatement)
		if !ok {
			t.Errorf("ParseStatement(%q) = %T, want *QueryStatement", tc.in, s)
			continue
		}
		if got := sx(qs.Query); got != tc.want {
			t.Errorf("ParseStatement(%q)\n got  %s\n want %s", tc.in, got, tc.want)
		}
		checkRoundTrip(t, s)
	}
}
