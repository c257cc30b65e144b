package sqlgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Query is one generated query in both spellings.
type Query struct {
	Seed, Index uint64
	Weir, Lite  string
	// Ordered: the query orders its rows completely (by every output
	// column), so its rows compare in order; otherwise as multisets.
	Ordered bool
}

// pair is a fragment of SQL in both spellings.
type pair struct{ w, l string }

func same(s string) pair { return pair{s, s} }

func cat(parts ...any) pair {
	var w, l strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			w.WriteString(p)
			l.WriteString(p)
		case pair:
			w.WriteString(p.w)
			l.WriteString(p.l)
		default:
			panic(fmt.Sprintf("sqlgen: cat of %T", p))
		}
	}
	return pair{w.String(), l.String()}
}

// col is a column in scope: its qualified name and class.
type col struct {
	alias, name string
	class       Class
}

func (c col) ref() string { return c.alias + "." + c.name }

// scope is what an expression may reference: the columns of its FROM, and
// (in a subquery) those of the enclosing query, for correlation.
type scope struct {
	cols  []col
	outer *scope
}

func (s *scope) ofClass(c Class) []col {
	var out []col
	for _, x := range s.cols {
		if x.class == c {
			out = append(out, x)
		}
	}
	return out
}

// aggCtx is the context of an aggregating SELECT's items and HAVING: the
// leaves are group keys or aggregate calls over the rows' scope.
type aggCtx struct {
	keys []col
	rows *scope
}

// Gen generates queries from one random stream.
type Gen struct {
	r      *rand.Rand
	tables []Table
	alias  int
	// budget bounds the number of subqueries and joins of one query, so
	// that the queries stay small enough to read and fast to run.
	budget int
}

// Generate returns the index-th query of seed.
func Generate(seed, index uint64) Query {
	g := &Gen{r: rand.New(rand.NewPCG(seed, index)), tables: Tables(), budget: 4}
	shape := g.shape()
	q := g.query(shape, nil, 0)
	out := Query{Seed: seed, Index: index}
	if g.r.IntN(4) == 0 {
		// ORDER BY every output column, with the NULLs' place spelled out
		// (Flink and SQLite put NULLs at different ends by default), then
		// LIMIT: the rows are determined, so they compare in order.
		var keys []string
		for i := range shape {
			dir := []string{"ASC", "DESC"}[g.r.IntN(2)]
			nulls := []string{"NULLS FIRST", "NULLS LAST"}[g.r.IntN(2)]
			keys = append(keys, fmt.Sprintf("c%d %s %s", i, dir, nulls))
		}
		lim := fmt.Sprintf(" LIMIT %d", 1+g.r.IntN(8))
		if g.r.IntN(4) == 0 {
			lim += fmt.Sprintf(" OFFSET %d", g.r.IntN(4))
		}
		q = cat("SELECT * FROM (", q, ") AS q ORDER BY "+strings.Join(keys, ", ")+lim)
		out.Ordered = true
	}
	out.Weir, out.Lite = q.w, q.l
	return out
}

func (g *Gen) coin(n int) bool { return g.r.IntN(n) == 0 }

func (g *Gen) newAlias() string {
	g.alias++
	return fmt.Sprintf("q%d", g.alias)
}

func (g *Gen) shape() []Class {
	n := 1 + g.r.IntN(3)
	s := make([]Class, n)
	for i := range s {
		s[i] = Class(g.r.IntN(int(numClasses)))
	}
	return s
}

// query is a SELECT or a set operation of two, giving columns c0..cn of
// the shape's classes.
func (g *Gen) query(shape []Class, outer *scope, depth int) pair {
	if depth < 2 && g.budget > 0 && g.coin(4) {
		g.budget--
		// SQLite has no parentheses around the members of a compound
		// SELECT and gives its operators one precedence (Flink binds
		// INTERSECT tighter), so a nested set operation is a subquery.
		op := []string{"UNION", "UNION ALL", "INTERSECT", "EXCEPT"}[g.r.IntN(4)]
		return cat(liteWrap(g.member(shape, outer, depth)), " "+op+" ", liteWrap(g.member(shape, outer, depth)))
	}
	return g.selectQ(shape, outer, depth)
}

// liteWrap puts a member of a set operation that has a RIGHT or FULL
// JOIN in a subquery, for SQLite only: SQLite 3.40 repeats rows of the
// earlier member when a later one has such a join and the set operation
// is itself a subquery (SELECT * FROM (SELECT 1 FROM a UNION ALL SELECT 1
// FROM b RIGHT JOIN c USING (k)) gives the first member's row once for
// every row of the whole).
func liteWrap(m pair) pair {
	if strings.Contains(m.l, "RIGHT JOIN") || strings.Contains(m.l, "FULL JOIN") || strings.Contains(m.l, "FULL OUTER JOIN") {
		m.l = "SELECT * FROM (" + m.l + ")"
	}
	return m
}

func (g *Gen) member(shape []Class, outer *scope, depth int) pair {
	if g.coin(4) {
		return cat("SELECT * FROM (", g.query(shape, outer, depth+1), ") AS "+g.newAlias())
	}
	return g.selectQ(shape, outer, depth)
}

// selectQ is one SELECT ... FROM ... [WHERE] [GROUP BY [HAVING]].
func (g *Gen) selectQ(shape []Class, outer *scope, depth int) pair {
	from, sc := g.from(depth)
	// Outer columns (correlation) mostly in WHERE, where weir plans them;
	// sometimes elsewhere too, where it refuses them.
	wsc := &scope{cols: sc.cols, outer: outer}
	if g.coin(8) {
		sc.outer = outer
	}
	var items []pair
	where := pair{}
	switch {
	case depth < 2 && g.budget > 0 && g.coin(4):
		// A subquery predicate as a conjunct of WHERE, where weir plans
		// it (as a semi or anti join); elsewhere it may be refused.
		where = cat(" WHERE ", g.subqueryPredicate(wsc, depth, 1))
		if g.coin(2) {
			where = cat(where, " AND ", g.expr(Bool, wsc, nil, depth, 1))
		}
	case g.coin(2):
		where = cat(" WHERE ", g.expr(Bool, wsc, nil, depth, 0))
	}
	if g.coin(3) {
		return g.aggSelect(shape, from, sc, where, depth)
	}
	for i, c := range shape {
		items = append(items, cat(g.expr(c, sc, nil, depth, 0), fmt.Sprintf(" AS c%d", i)))
	}
	distinct := ""
	if g.coin(6) {
		distinct = "DISTINCT "
	}
	return cat("SELECT "+distinct, join(items, ", "), " FROM ", from, where)
}

func (g *Gen) aggSelect(shape []Class, from pair, sc *scope, where pair, depth int) pair {
	ac := &aggCtx{rows: sc}
	for range g.r.IntN(3) {
		c := sc.cols[g.r.IntN(len(sc.cols))]
		dup := false
		for _, k := range ac.keys {
			dup = dup || k == c
		}
		if !dup {
			ac.keys = append(ac.keys, c)
		}
	}
	var items []pair
	for i, c := range shape {
		items = append(items, cat(g.expr(c, sc, ac, depth, 0), fmt.Sprintf(" AS c%d", i)))
	}
	q := cat("SELECT ", join(items, ", "), " FROM ", from, where)
	if len(ac.keys) > 0 {
		var ks []string
		for _, k := range ac.keys {
			ks = append(ks, k.ref())
		}
		q = cat(q, " GROUP BY "+strings.Join(ks, ", "))
	}
	// SQLite refuses a HAVING without GROUP BY when no SELECT item
	// aggregates; Flink takes it. Only with GROUP BY, then.
	if len(ac.keys) > 0 && g.coin(3) {
		q = cat(q, " HAVING ", g.expr(Bool, sc, ac, depth, 0))
	}
	return q
}

// from is a FROM clause: a table, a subquery, or joins of them.
func (g *Gen) from(depth int) (pair, *scope) {
	f, sc := g.fromItem(depth)
	for g.budget > 0 && g.coin(3) {
		g.budget--
		r, rs := g.fromItem(depth)
		both := &scope{cols: append(append([]col{}, sc.cols...), rs.cols...)}
		kind := []string{"JOIN", "INNER JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "FULL OUTER JOIN", "LEFT OUTER JOIN", "CROSS JOIN", ","}[g.r.IntN(9)]
		switch {
		case kind == ",":
			// A JOIN after a comma binds tighter in Flink (the standard)
			// than in SQLite: a comma ends the chain.
			return cat(f, ", ", r), both
		case kind == "CROSS JOIN":
			f = cat(f, " CROSS JOIN ", r)
		default:
			if u, ok := g.using(sc, rs); ok && g.coin(3) {
				f = cat(f, " "+kind+" ", r, " USING ("+u+")")
			} else {
				f = cat(f, " "+kind+" ", r, " ON ", g.joinCond(sc, rs, both))
			}
		}
		sc = both
	}
	return f, sc
}

// using finds a column name that both sides have with one class.
func (g *Gen) using(l, r *scope) (string, bool) {
	var names []string
	for _, a := range l.cols {
		for _, b := range r.cols {
			if a.name == b.name && a.class == b.class {
				// A name must be unique on each side for USING.
				if count(l, a.name) == 1 && count(r, a.name) == 1 {
					names = append(names, a.name)
				}
			}
		}
	}
	if len(names) == 0 {
		return "", false
	}
	return names[g.r.IntN(len(names))], true
}

func count(s *scope, name string) int {
	n := 0
	for _, c := range s.cols {
		if c.name == name {
			n++
		}
	}
	return n
}

func (g *Gen) joinCond(l, r, both *scope) pair {
	// An equality of two columns of one class, one from each side, and
	// sometimes more; without such a pair, a condition over both.
	//
	// SQLite 3.40 loses the rows of a later RIGHT or FULL JOIN's right side
	// when an earlier INNER JOIN's ON has a constant conjunct that is
	// false (a JOIN b ON a.x = b.x AND FALSE FULL JOIN c ON ...): so no
	// conjunct of ON is constant, each is ORed with a column's test.
	nonConst := func(e pair) pair {
		c := both.cols[g.r.IntN(len(both.cols))]
		return cat("(", e, " OR "+c.ref()+" IS NULL)")
	}
	for range 5 {
		a := l.cols[g.r.IntN(len(l.cols))]
		bs := r.ofClass(a.class)
		if len(bs) == 0 {
			continue
		}
		b := bs[g.r.IntN(len(bs))]
		c := same(a.ref() + " = " + b.ref())
		if g.coin(3) {
			c = cat(c, " AND ", nonConst(g.expr(Bool, both, nil, 3, 2)))
		}
		return c
	}
	return nonConst(g.expr(Bool, both, nil, 3, 1))
}

func (g *Gen) fromItem(depth int) (pair, *scope) {
	a := g.newAlias()
	if depth < 2 && g.budget > 0 && g.coin(4) {
		g.budget--
		shape := g.shape()
		q := g.query(shape, nil, depth+1)
		sc := &scope{}
		for i, c := range shape {
			sc.cols = append(sc.cols, col{a, fmt.Sprintf("c%d", i), c})
		}
		return cat("(", q, ") AS "+a), sc
	}
	t := g.tables[g.r.IntN(len(g.tables))]
	sc := &scope{}
	for _, c := range t.Cols {
		sc.cols = append(sc.cols, col{a, c.Name, c.Class})
	}
	return same(t.Name + " AS " + a), sc
}

func join(ps []pair, sep string) pair {
	var w, l []string
	for _, p := range ps {
		w = append(w, p.w)
		l = append(l, p.l)
	}
	return pair{strings.Join(w, sep), strings.Join(l, sep)}
}
