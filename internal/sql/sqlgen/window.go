package sqlgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// GenerateStreaming returns the index-th streaming-only query of seed: the
// shapes SQLite has no counterpart of (window TVFs and what is built on
// them, OVER windows on the time attribute) over StreamTable's ev. Their
// rows are not compared: each must plan and run, or be refused cleanly.
func GenerateStreaming(seed, index uint64) string {
	r := rand.New(rand.NewPCG(seed, index^0x5eed))
	g := &Gen{r: r}
	switch r.IntN(6) {
	case 0, 1:
		return g.windowAgg()
	case 2:
		// Window Top-N and deduplication.
		order := []string{"v DESC", "v", "ts", "ts DESC"}[r.IntN(4)]
		rank := []string{"ROW_NUMBER()", "RANK()", "DENSE_RANK()"}[r.IntN(3)]
		part := []string{"window_start, window_end", "window_start, window_end, k", "k, window_start, window_end"}[r.IntN(3)]
		cond := []string{"rn <= 2", "rn = 1", "rn < 3"}[r.IntN(3)]
		return fmt.Sprintf("SELECT * FROM (SELECT k, v, s, window_start, window_end, %s OVER (PARTITION BY %s ORDER BY %s) AS rn FROM TABLE(%s)) WHERE %s", rank, part, order, g.tvf(), cond)
	case 3:
		// A window join: both sides windowed alike.
		tvf := g.tvf()
		kind := []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"}[r.IntN(4)]
		return fmt.Sprintf("SELECT L.k, L.window_start, L.window_end, L.c, R.c FROM (%s) L %s (%s) R ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k",
			g.windowAggOf(tvf, true), kind, g.windowAggOf(tvf, true))
	case 4:
		// OVER on the time attribute.
		frame := []string{"ROWS BETWEEN 2 PRECEDING AND CURRENT ROW", "RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW", "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"}[r.IntN(3)]
		agg := []string{"SUM(v)", "COUNT(*)", "MAX(v)", "MIN(s)", "AVG(v)", "COUNT(DISTINCT s)"}[r.IntN(6)]
		return fmt.Sprintf("SELECT k, v, %s OVER (PARTITION BY k ORDER BY ts %s) FROM ev%s", agg, frame, g.evWhere())
	default:
		// A window aggregation under an outer query.
		outer := []string{"SELECT k, SUM(c) FROM (%s) GROUP BY k", "SELECT * FROM (%s) WHERE c > 1", "SELECT window_start, COUNT(*) FROM (%s) GROUP BY window_start"}[r.IntN(3)]
		return fmt.Sprintf(outer, g.windowAggOf(g.tvf(), true))
	}
}

func (g *Gen) evWhere() string {
	if g.coin(2) {
		return ""
	}
	return " WHERE " + []string{"v > 3", "s <> 'a'", "k IN (1, 2)", "v IS NOT NULL AND k < 3"}[g.r.IntN(4)]
}

// tvf is a windowing table function call over ev.
func (g *Gen) tvf() string {
	data := "TABLE ev"
	sec := func(lo, hi int) string { return fmt.Sprintf("INTERVAL '%d' SECOND", lo+g.r.IntN(hi-lo+1)) }
	switch g.r.IntN(4) {
	case 0:
		return fmt.Sprintf("TUMBLE(%s, DESCRIPTOR(ts), %s)", data, sec(3, 20))
	case 1:
		slide := 2 + g.r.IntN(5)
		return fmt.Sprintf("HOP(%s, DESCRIPTOR(ts), INTERVAL '%d' SECOND, INTERVAL '%d' SECOND)", data, slide, slide*(1+g.r.IntN(3)))
	case 2:
		step := 2 + g.r.IntN(5)
		return fmt.Sprintf("CUMULATE(%s, DESCRIPTOR(ts), INTERVAL '%d' SECOND, INTERVAL '%d' SECOND)", data, step, step*(1+g.r.IntN(3)))
	}
	part := ""
	if g.coin(2) {
		part = " PARTITION BY k"
	}
	return fmt.Sprintf("SESSION(%s%s, DESCRIPTOR(ts), %s)", data, part, sec(2, 8))
}

func (g *Gen) windowAgg() string { return g.windowAggOf(g.tvf(), g.coin(2)) }

// windowAggOf aggregates a window TVF per window (and per key): its
// columns are window_start, window_end, [k,] c, and more aggregates.
func (g *Gen) windowAggOf(tvf string, byKey bool) string {
	keys := []string{"window_start", "window_end"}
	if byKey {
		keys = append(keys, "k")
	}
	items := append([]string{}, keys...)
	items = append(items, "COUNT(*) AS c")
	for range g.r.IntN(3) {
		items = append(items, []string{"SUM(v)", "MAX(v)", "MIN(s)", "COUNT(DISTINCT s)", "AVG(v)", "MAX(ts)", "window_time"}[g.r.IntN(7)])
	}
	// window_time is a grouping column when it is selected.
	group := keys
	if strings.Contains(strings.Join(items, ","), "window_time") {
		group = append(append([]string{}, keys...), "window_time")
	}
	q := fmt.Sprintf("SELECT %s FROM TABLE(%s)%s GROUP BY %s", strings.Join(items, ", "), tvf, g.evWhere(), strings.Join(group, ", "))
	if g.coin(4) {
		q += " HAVING COUNT(*) > 1"
	}
	return q
}
