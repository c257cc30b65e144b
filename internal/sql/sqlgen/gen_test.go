package sqlgen

import (
	"strings"
	"testing"
)

// The generator is deterministic in (seed, index), and its two spellings
// differ only where the dialects do.
func TestGenerateDeterministic(t *testing.T) {
	for i := range uint64(200) {
		a, b := Generate(7, i), Generate(7, i)
		if a != b {
			t.Fatalf("query %d differs between two runs:\n%s\n%s", i, a.Weir, b.Weir)
		}
		if a.Weir == "" || a.Lite == "" || !strings.HasPrefix(a.Weir, "SELECT") {
			t.Fatalf("query %d: %q / %q", i, a.Weir, a.Lite)
		}
	}
}

// Every construct the generator promises appears in a bounded run, in
// both spellings where they are the same.
func TestGenerateCoverage(t *testing.T) {
	constructs := []string{
		"UNION ALL", "UNION SELECT", "INTERSECT", "EXCEPT", " JOIN ", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN",
		"RIGHT JOIN", "FULL JOIN", "FULL OUTER JOIN", "CROSS JOIN", "USING (", " ON ", "(SELECT ", "FROM (",
		" IN (SELECT", "NOT IN (SELECT", "EXISTS (", "NOT EXISTS (", "COUNT(*)", "COUNT(DISTINCT", "SUM(",
		"SUM(DISTINCT", "MIN(", "MAX(", "AVG(", "GROUP BY", "HAVING", "SELECT DISTINCT", "CASE WHEN", "CASE q",
		"CAST(", "IS NULL", "IS NOT NULL", "COALESCE(", "NULLIF(", "BETWEEN", "LIKE", "ORDER BY", "NULLS FIRST",
		"NULLS LAST", "LIMIT", "OFFSET", "DATE '", "TRUE", "||",
	}
	seen := map[string]int{}
	for i := range uint64(1000) {
		q := Generate(1, i)
		for _, c := range constructs {
			if strings.Contains(q.Weir, c) {
				seen[c]++
			}
		}
	}
	for _, c := range constructs {
		if seen[c] < 3 {
			t.Errorf("%q appears in %d of 1000 queries", c, seen[c])
		}
	}
	streaming := []string{"TUMBLE(", "HOP(", "CUMULATE(", "SESSION(", "PARTITION BY k,", "ROW_NUMBER()", " OVER (PARTITION BY k ORDER BY ts", "window_time", " JOIN ("}
	seen = map[string]int{}
	for i := range uint64(300) {
		q := GenerateStreaming(1, i)
		for _, c := range streaming {
			if strings.Contains(q, c) {
				seen[c]++
			}
		}
	}
	for _, c := range streaming {
		if seen[c] < 3 {
			t.Errorf("streaming: %q appears in %d of 300 queries", c, seen[c])
		}
	}
}
