package sqlgen

import (
	"fmt"
)

// expr is an expression of class c over scope sc; in an aggregating
// SELECT (ac != nil) its leaves are group keys and aggregates. depth is
// the query's nesting (it bounds subqueries), level the expression's.
func (g *Gen) expr(c Class, sc *scope, ac *aggCtx, depth, level int) pair {
	// Mostly shallow: deep constant trees test little and are hard to read.
	if level >= 3 || g.r.IntN(5) < 2+level {
		return g.leaf(c, sc, ac, depth)
	}
	level++
	sub := func(c Class) pair { return g.expr(c, sc, ac, depth, level) }
	// Subqueries only outside aggregating contexts and not too deep.
	subq := ac == nil && depth < 2 && g.budget > 0
	switch g.r.IntN(3) {
	case 0: // shapes that every class has
		switch g.r.IntN(4) {
		case 0:
			return cat("CASE WHEN ", sub(Bool), " THEN ", sub(c), " ELSE ", sub(c), " END")
		case 1:
			if g.coin(2) {
				return cat("CASE WHEN ", sub(Bool), " THEN ", sub(c), " END")
			}
			// The simple CASE: its operand and values of one class.
			k := g.comparable()
			return cat("CASE ", sub(k), " WHEN ", sub(k), " THEN ", sub(c), " WHEN ", sub(k), " THEN ", sub(c), " ELSE ", sub(c), " END")
		case 2:
			return cat("COALESCE(", sub(c), ", ", sub(c), ")")
		default:
			if c == Bool {
				break
			}
			return cat("NULLIF(", sub(c), ", ", sub(c), ")")
		}
	}
	if subq && c != Bool && g.coin(5) {
		return g.scalarSubquery(c, sc, depth)
	}
	switch c {
	case Int:
		switch g.r.IntN(9) {
		case 0:
			return cat("(", sub(Int), " + ", sub(Int), ")")
		case 1:
			return cat("(", sub(Int), " - ", sub(Int), ")")
		case 2:
			// Multiplication only by a small constant: Flink's INT
			// wraps around where SQLite's integers are 64 bits.
			return cat("(", sub(Int), fmt.Sprintf(" * %d)", 1+g.r.IntN(3)))
		case 3:
			// Integer division by a positive constant: both truncate
			// toward zero; a zero divisor is an error in Flink and NULL
			// in SQLite, so there is none.
			return cat("(", sub(Int), fmt.Sprintf(" / %d)", 2+g.r.IntN(3)))
		case 4:
			n := 2 + g.r.IntN(3)
			x := sub(Int)
			return pair{fmt.Sprintf("MOD(%s, %d)", x.w, n), fmt.Sprintf("(%s %% %d)", x.l, n)}
		case 5:
			return cat("ABS(", sub(Int), ")")
		case 6:
			// -(x), not -x: a negative literal after - would be a comment.
			return cat("(-(", sub(Int), "))")
		case 7:
			// Both truncate a double toward zero. To BIGINT, because the
			// doubles exceed INT's range, where Flink saturates and
			// SQLite (64-bit integers only) does not.
			return cat("CAST(", sub(Double), " AS BIGINT)")
		default:
			x := sub(String)
			return pair{"CHAR_LENGTH(" + x.w + ")", "LENGTH(" + x.l + ")"}
		}
	case Double:
		switch g.r.IntN(6) {
		case 0:
			return cat("(", sub(Double), " + ", sub(Double), ")")
		case 1:
			return cat("(", sub(Double), " - ", sub(Int), ")")
		case 2:
			return cat("(", sub(Double), " * ", sub(Double), ")")
		case 3:
			return cat("ABS(", sub(Double), ")")
		case 4:
			return cat("(", sub(Double), " / 2.0E0)")
		default:
			return cat("CAST(", sub(Int), " AS DOUBLE)")
		}
	case String:
		switch g.r.IntN(5) {
		case 0:
			return cat("(", sub(String), " || ", sub(String), ")")
		case 1:
			return cat([]string{"UPPER(", "LOWER("}[g.r.IntN(2)], sub(String), ")")
		case 2:
			x := sub(String)
			a, b := 1+g.r.IntN(3), g.r.IntN(3)
			return pair{fmt.Sprintf("SUBSTRING(%s, %d, %d)", x.w, a, b), fmt.Sprintf("SUBSTR(%s, %d, %d)", x.l, a, b)}
		case 3:
			// Integers only: Flink and SQLite print doubles differently.
			x := sub(Int)
			return pair{"CAST(" + x.w + " AS STRING)", "CAST(" + x.l + " AS TEXT)"}
		default:
			return cat("TRIM(", sub(String), ")")
		}
	case Date:
		return g.leaf(c, sc, ac, depth)
	case Bool:
		return g.boolExpr(sc, ac, depth, level)
	}
	return g.leaf(c, sc, ac, depth)
}

// comparable is a class that compares, for a simple CASE or an equality.
func (g *Gen) comparable() Class {
	return []Class{Int, Int, Double, String, Date, Bool}[g.r.IntN(6)]
}

func (g *Gen) boolExpr(sc *scope, ac *aggCtx, depth, level int) pair {
	sub := func(c Class) pair { return g.expr(c, sc, ac, depth, level) }
	subq := ac == nil && depth < 2 && g.budget > 0
	switch g.r.IntN(12) {
	case 0, 1:
		k := g.comparable()
		op := []string{"=", "<>", "<", "<=", ">", ">="}[g.r.IntN(6)]
		if k == Bool {
			op = []string{"=", "<>"}[g.r.IntN(2)]
		}
		return cat("(", sub(k), " "+op+" ", sub(k), ")")
	case 2:
		return cat("(", sub(Bool), " AND ", sub(Bool), ")")
	case 3:
		return cat("(", sub(Bool), " OR ", sub(Bool), ")")
	case 4:
		return cat("(NOT ", sub(Bool), ")")
	case 5:
		return cat("(", sub(Class(g.r.IntN(int(numClasses)))), []string{" IS NULL)", " IS NOT NULL)"}[g.r.IntN(2)])
	case 6:
		not := []string{"", "NOT "}[g.r.IntN(2)]
		k := []Class{Int, Double, String, Date}[g.r.IntN(4)]
		return cat("(", sub(k), " "+not+"BETWEEN ", g.leaf(k, sc, ac, depth), " AND ", g.leaf(k, sc, ac, depth), ")")
	case 7:
		not := []string{"", "NOT "}[g.r.IntN(2)]
		k := []Class{Int, String}[g.r.IntN(2)]
		list := []pair{g.literal(k, false), g.literal(k, false)}
		if g.coin(2) {
			list = append(list, g.literal(k, false))
		}
		return cat("(", sub(k), " "+not+"IN (", join(list, ", "), "))")
	case 8:
		not := []string{"", "NOT "}[g.r.IntN(2)]
		pat := []string{"'a%'", "'%b'", "'_'", "'%a%'", "'A_'", "''"}[g.r.IntN(6)]
		return cat("(", sub(String), " "+not+"LIKE "+pat+")")
	case 9, 10:
		if subq {
			return g.subqueryPredicate(sc, depth, level)
		}
	}
	return g.leaf(Bool, sc, ac, depth)
}

// subqueryPredicate is [NOT] IN (subquery) or [NOT] EXISTS (subquery),
// either of which may be correlated.
func (g *Gen) subqueryPredicate(sc *scope, depth, level int) pair {
	g.budget--
	not := []string{"", "NOT "}[g.r.IntN(2)]
	if g.coin(2) {
		k := g.comparable()
		return cat("(", g.expr(k, sc, nil, depth, level), " "+not+"IN (", g.query([]Class{k}, sc, depth+1), "))")
	}
	return cat("("+not+"EXISTS (", g.query(g.shape(), sc, depth+1), "))")
}

// scalarSubquery is a subquery of one row: an aggregate without GROUP BY
// (Flink fails at run time on a scalar subquery of several rows, where
// SQLite takes the first). It may be correlated.
func (g *Gen) scalarSubquery(c Class, outer *scope, depth int) pair {
	g.budget--
	from, sc := g.fromItem(depth + 1)
	sc.outer = outer
	q := cat("(SELECT ", g.aggCall(c, sc, depth+1), " AS c0 FROM ", from)
	if g.coin(2) {
		q = cat(q, " WHERE ", g.expr(Bool, sc, nil, depth+1, 1))
	}
	return cat(q, ")")
}

// aggCall is an aggregate of class c over the rows of sc.
func (g *Gen) aggCall(c Class, sc *scope, depth int) pair {
	// No subqueries in an aggregate's argument (depth 2 allows none), and
	// no outer columns: an aggregate of only outer columns belongs to the
	// outer query in SQL, a trap the generator need not set.
	rows := &scope{cols: sc.cols}
	arg := func(c Class) pair { return g.expr(c, rows, nil, max(depth, 2), 2) }
	distinct := func() string {
		if g.coin(4) {
			return "DISTINCT "
		}
		return ""
	}
	switch c {
	case Int:
		switch g.r.IntN(5) {
		case 0:
			return same("COUNT(*)")
		case 1:
			return cat("COUNT("+distinct(), arg(Class(g.r.IntN(int(numClasses)))), ")")
		case 2:
			return cat("SUM("+distinct(), arg(Int), ")")
		default:
			return cat([]string{"MIN(", "MAX("}[g.r.IntN(2)], arg(Int), ")")
		}
	case Double:
		switch g.r.IntN(4) {
		case 0:
			return cat("SUM(", arg(Double), ")")
		case 1:
			// AVG of doubles only: Flink's AVG of integers is an integer,
			// SQLite's a double.
			return cat("AVG("+distinct(), arg(Double), ")")
		case 2:
			return cat("AVG(CAST(", arg(Int), " AS DOUBLE))")
		default:
			return cat([]string{"MIN(", "MAX("}[g.r.IntN(2)], arg(Double), ")")
		}
	case String, Date:
		return cat([]string{"MIN(", "MAX("}[g.r.IntN(2)], arg(c), ")")
	}
	panic("sqlgen: no aggregate of class Bool")
}

// leaf is a column, a literal, or in an aggregating context a group key
// or an aggregate.
func (g *Gen) leaf(c Class, sc *scope, ac *aggCtx, depth int) pair {
	if ac != nil {
		var keys []col
		for _, k := range ac.keys {
			if k.class == c {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 && g.coin(2) {
			return same(keys[g.r.IntN(len(keys))].ref())
		}
		if c != Bool && !g.coin(5) {
			return g.aggCall(c, ac.rows, depth)
		}
		if c == Bool && !g.coin(4) {
			op := []string{"=", "<>", "<", "<=", ">", ">="}[g.r.IntN(6)]
			return cat("(", g.aggCall(Int, ac.rows, depth), " "+op+" ", g.leaf(Int, sc, ac, depth), ")")
		}
		return g.literal(c, true)
	}
	if !g.coin(6) {
		cols := sc.ofClass(c)
		// A correlated reference, sometimes.
		if sc.outer != nil && g.coin(3) {
			if oc := sc.outer.ofClass(c); len(oc) > 0 {
				cols = oc
			}
		}
		if len(cols) > 0 {
			return same(cols[g.r.IntN(len(cols))].ref())
		}
	}
	return g.literal(c, true)
}

// literal is a constant of class c, NULL sometimes when nulls is set.
// weir's NULL is typed by a CAST; a bare NULL has no type in Flink.
func (g *Gen) literal(c Class, nulls bool) pair {
	if nulls && g.coin(8) {
		t := map[Class]string{Int: "INT", Double: "DOUBLE", String: "STRING", Bool: "BOOLEAN", Date: "DATE"}[c]
		return pair{"CAST(NULL AS " + t + ")", "NULL"}
	}
	switch c {
	case Int:
		return same(fmt.Sprint(g.r.IntN(25) - 6))
	case Double:
		// A DOUBLE literal in Flink has an exponent (1.5 is a DECIMAL).
		v := float64(g.r.IntN(41)-12) / 4
		return pair{fmt.Sprintf("%gE0", v), fmt.Sprintf("%.2f", v)}
	case String:
		return same([]string{"'a'", "'b'", "'ab'", "'A'", "''", "'b a'", "'zz'", "'c'"}[g.r.IntN(8)])
	case Bool:
		return same([]string{"TRUE", "FALSE"}[g.r.IntN(2)])
	}
	d := fmt.Sprintf("'2024-01-%02d'", 1+g.r.IntN(9))
	return pair{"DATE " + d, d}
}
