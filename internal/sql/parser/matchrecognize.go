package parser

import "strconv"

// MatchRecognize is input MATCH_RECOGNIZE (...) [AS alias]: row pattern
// recognition, as Flink parses it (Calcite's grammar). The clauses keep
// their source order: PARTITION BY, ORDER BY, MEASURES, rows per match,
// AFTER MATCH SKIP, PATTERN, WITHIN, SUBSET, DEFINE.
type MatchRecognize struct {
	node
	Input       TableRef
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Measures    []*MatchMeasure
	// RowsPerMatch is "" (not given; ONE ROW PER MATCH is the default),
	// "ONE ROW PER MATCH", or "ALL ROWS PER MATCH" with its option
	// ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", ...).
	RowsPerMatch string
	Skip         *MatchSkip // nil: not given
	StrictStart  bool       // PATTERN (^ ...)
	StrictEnd    bool       // PATTERN (... $)
	Pattern      PatternTerm
	Within       Expr // an interval literal, or nil
	Subsets      []*MatchSubset
	Defines      []*MatchDefine
	Alias        *TableAlias
}

// MatchMeasure is [RUNNING | FINAL] expr AS name in MEASURES.
type MatchMeasure struct {
	node
	Semantics string // "", "RUNNING" or "FINAL"
	Expr      Expr
	Alias     string
}

// MatchSkip is AFTER MATCH SKIP ...; Kind is "PAST LAST ROW", "TO NEXT
// ROW", "TO FIRST" or "TO LAST" (SKIP TO v is TO LAST v, as in the SQL
// standard), Var the variable of the last two.
type MatchSkip struct {
	node
	Kind string
	Var  string
}

// MatchSubset is SUBSET name = (v, ...).
type MatchSubset struct {
	node
	Name string
	Vars []string
}

// MatchDefine is DEFINE var AS condition.
type MatchDefine struct {
	node
	Var  string
	Cond Expr
}

// PatternTerm is a row pattern: *PatternVar, *PatternConcat, *PatternAlt,
// *PatternQuant, *PatternPermute or *PatternExclude.
type PatternTerm interface {
	Node
	patternNode()
}

// PatternVar is a pattern variable.
type PatternVar struct {
	node
	Name string
}

// PatternConcat is a sequence of terms (a b c).
type PatternConcat struct {
	node
	Items []PatternTerm
}

// PatternAlt is alternation (a | b).
type PatternAlt struct {
	node
	Alts []PatternTerm
}

// PatternQuant is a quantified term: * is {0,}, + {1,}, ? {0,1}; Max is -1
// when unbounded. Reluctant is the trailing '?' (*?, +?, {n,m}?).
type PatternQuant struct {
	node
	Term      PatternTerm
	Min, Max  int
	Reluctant bool
}

// PatternPermute is PERMUTE(a, b, ...).
type PatternPermute struct {
	node
	Items []PatternTerm
}

// PatternExclude is {- term -}.
type PatternExclude struct {
	node
	Term PatternTerm
}

func (*MatchRecognize) tableRefNode() {}

func (*PatternVar) patternNode()     {}
func (*PatternConcat) patternNode()  {}
func (*PatternAlt) patternNode()     {}
func (*PatternQuant) patternNode()   {}
func (*PatternPermute) patternNode() {}
func (*PatternExclude) patternNode() {}

// parseMatchRecognize parses MATCH_RECOGNIZE (...) [AS alias] after input.
func (p *parser) parseMatchRecognize(input TableRef) *MatchRecognize {
	m := &MatchRecognize{node: node{p.expectWord("MATCH_RECOGNIZE").pos}, Input: input}
	p.expectPunct("(")
	if p.acceptWord("PARTITION") {
		p.expectWord("BY")
		for {
			m.PartitionBy = append(m.PartitionBy, p.parseExpr())
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptWord("ORDER") {
		p.expectWord("BY")
		m.OrderBy = p.parseOrderItems()
	}
	if p.acceptWord("MEASURES") {
		for {
			ms := &MatchMeasure{node: node{p.peek().pos}}
			if (p.isWord("RUNNING") || p.isWord("FINAL")) && p.peekAt(1).kind == tWord && p.isPunctAt(2, "(") {
				ms.Semantics = p.next().val
			}
			ms.Expr = p.parseExpr()
			p.expectWord("AS")
			ms.Alias = p.ident()
			m.Measures = append(m.Measures, ms)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	switch {
	case p.acceptWords("ONE", "ROW", "PER", "MATCH"):
		m.RowsPerMatch = "ONE ROW PER MATCH"
	case p.acceptWords("ALL", "ROWS", "PER", "MATCH"):
		m.RowsPerMatch = "ALL ROWS PER MATCH"
		switch {
		case p.acceptWords("SHOW", "EMPTY", "MATCHES"):
			m.RowsPerMatch += " SHOW EMPTY MATCHES"
		case p.acceptWords("OMIT", "EMPTY", "MATCHES"):
			m.RowsPerMatch += " OMIT EMPTY MATCHES"
		case p.acceptWords("WITH", "UNMATCHED", "ROWS"):
			m.RowsPerMatch += " WITH UNMATCHED ROWS"
		}
	}
	if p.isWord("AFTER") {
		sk := &MatchSkip{node: node{p.next().pos}}
		p.expectWord("MATCH")
		p.expectWord("SKIP")
		switch {
		case p.acceptWords("PAST", "LAST", "ROW"):
			sk.Kind = "PAST LAST ROW"
		case p.acceptWords("TO", "NEXT", "ROW"):
			sk.Kind = "TO NEXT ROW"
		case p.acceptWords("TO", "FIRST"):
			sk.Kind, sk.Var = "TO FIRST", p.ident()
		case p.acceptWords("TO", "LAST"):
			sk.Kind, sk.Var = "TO LAST", p.ident()
		case p.acceptWord("TO"):
			sk.Kind, sk.Var = "TO LAST", p.ident()
		default:
			p.expected("'PAST LAST ROW', 'TO NEXT ROW', 'TO FIRST', 'TO LAST' or 'TO'")
		}
		m.Skip = sk
	}
	if !p.isWord("PATTERN") {
		p.expected("'PATTERN'")
	}
	p.next()
	p.expectPunct("(")
	if p.acceptPunct("^") {
		m.StrictStart = true
	}
	m.Pattern = p.parsePatternAlt()
	if p.acceptPunct("$") {
		m.StrictEnd = true
	}
	p.expectPunct(")")
	if p.acceptWord("WITHIN") {
		if !p.isWord("INTERVAL") {
			p.expected("an interval literal (WITHIN INTERVAL '10' SECOND)")
		}
		m.Within = p.parseExpr()
	}
	if p.acceptWord("SUBSET") {
		for {
			s := &MatchSubset{node: node{p.peek().pos}}
			s.Name = p.ident()
			p.expectPunct("=")
			s.Vars = p.parenIdentList()
			m.Subsets = append(m.Subsets, s)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if !p.isWord("DEFINE") {
		p.expected("'DEFINE'")
	}
	p.next()
	for {
		d := &MatchDefine{node: node{p.peek().pos}}
		d.Var = p.ident()
		p.expectWord("AS")
		d.Cond = p.parseExpr()
		m.Defines = append(m.Defines, d)
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(")")
	m.Alias = p.parseAlias()
	return m
}

func (p *parser) parsePatternAlt() PatternTerm {
	p.enter()
	defer p.leave()
	first := p.parsePatternConcat()
	if !p.isPunct("|") {
		return first
	}
	alt := &PatternAlt{node: node{first.Pos()}, Alts: []PatternTerm{first}}
	for p.acceptPunct("|") {
		alt.Alts = append(alt.Alts, p.parsePatternConcat())
	}
	return alt
}

func (p *parser) startsPatternTerm() bool {
	return p.isIdentAt(0) || p.isPunct("(") || p.isPunct("{")
}

func (p *parser) parsePatternConcat() PatternTerm {
	if !p.startsPatternTerm() {
		p.expected("a pattern variable or '('")
	}
	first := p.parsePatternQuant()
	if !p.startsPatternTerm() {
		return first
	}
	c := &PatternConcat{node: node{first.Pos()}, Items: []PatternTerm{first}}
	for p.startsPatternTerm() {
		c.Items = append(c.Items, p.parsePatternQuant())
	}
	return c
}

func (p *parser) parsePatternQuant() PatternTerm {
	t := p.parsePatternPrimary()
	{
		q := &PatternQuant{node: node{t.Pos()}, Term: t}
		switch {
		case p.acceptPunct("*"):
			q.Min, q.Max = 0, -1
		case p.acceptPunct("+"):
			q.Min, q.Max = 1, -1
		case p.acceptPunct("?"):
			q.Min, q.Max = 0, 1
		case p.isPunct("{") && !p.isPunctAt(1, "-"):
			open := p.next()
			q.Min, q.Max = 0, -1
			if p.peek().kind == tInt {
				q.Min = p.intLit()
				if p.acceptPunct(",") {
					if p.peek().kind == tInt {
						q.Max = p.intLit()
					}
				} else {
					q.Max = q.Min
				}
			} else {
				p.expectPunct(",")
				q.Max = p.intLit()
			}
			p.expectPunct("}")
			if q.Max >= 0 && q.Max < q.Min {
				p.failAt(open.pos, "invalid quantifier {%d,%d}: the maximum is smaller than the minimum", q.Min, q.Max)
			}
			if q.Max == 0 {
				p.failAt(open.pos, "invalid quantifier: the maximum must be greater than 0")
			}
		default:
			return t
		}
		if p.acceptPunct("?") {
			q.Reluctant = true
		}
		return q
	}
}

func (p *parser) parsePatternPrimary() PatternTerm {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch {
	case p.isPunct("("):
		p.next()
		inner := p.parsePatternAlt()
		p.expectPunct(")")
		return inner
	case p.isPunct("{") && p.isPunctAt(1, "-"):
		p.next()
		p.next()
		e := &PatternExclude{node: node{t.pos}, Term: p.parsePatternAlt()}
		p.expectPunct("-")
		p.expectPunct("}")
		return e
	case p.isWord("PERMUTE") && p.isPunctAt(1, "("):
		p.next()
		p.next()
		pm := &PatternPermute{node: node{t.pos}}
		for {
			pm.Items = append(pm.Items, p.parsePatternAlt())
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
		return pm
	}
	return &PatternVar{node: node{t.pos}, Name: p.ident()}
}

// ---------------------------------------------------------------------------
// Printing

func (f *formatter) matchRecognize(m *MatchRecognize) {
	if _, ok := m.Input.(*Join); ok {
		f.w("(")
		f.tableRef(m.Input)
		f.w(")")
	} else {
		f.tableRef(m.Input)
	}
	f.w(" MATCH_RECOGNIZE (")
	sep := ""
	if len(m.PartitionBy) > 0 {
		f.w("PARTITION BY ")
		f.exprs(m.PartitionBy)
		sep = " "
	}
	if len(m.OrderBy) > 0 {
		f.w(sep + "ORDER BY ")
		f.orderItems(m.OrderBy)
		sep = " "
	}
	if len(m.Measures) > 0 {
		f.w(sep + "MEASURES ")
		for i, ms := range m.Measures {
			if i > 0 {
				f.w(", ")
			}
			if ms.Semantics != "" {
				f.w(ms.Semantics + " ")
			}
			f.expr(ms.Expr, 0)
			f.w(" AS ")
			f.name(ms.Alias)
		}
		sep = " "
	}
	if m.RowsPerMatch != "" {
		f.w(sep + m.RowsPerMatch)
		sep = " "
	}
	if m.Skip != nil {
		f.w(sep + "AFTER MATCH SKIP " + m.Skip.Kind)
		if m.Skip.Var != "" {
			f.w(" ")
			f.name(m.Skip.Var)
		}
		sep = " "
	}
	f.w(sep + "PATTERN (")
	f.wIf(m.StrictStart, "^ ")
	f.pattern(m.Pattern, 0)
	f.wIf(m.StrictEnd, " $")
	f.w(")")
	if m.Within != nil {
		f.w(" WITHIN ")
		f.expr(m.Within, 0)
	}
	if len(m.Subsets) > 0 {
		f.w(" SUBSET ")
		for i, s := range m.Subsets {
			if i > 0 {
				f.w(", ")
			}
			f.name(s.Name)
			f.w(" = ")
			f.names(s.Vars)
		}
	}
	f.w(" DEFINE ")
	for i, d := range m.Defines {
		if i > 0 {
			f.w(", ")
		}
		f.name(d.Var)
		f.w(" AS ")
		f.expr(d.Cond, 0)
	}
	f.w(")")
	f.alias(m.Alias)
}

// Pattern precedence: alternation < concatenation < quantified term.
func patternPrec(t PatternTerm) int {
	switch t.(type) {
	case *PatternAlt:
		return 1
	case *PatternConcat:
		return 2
	}
	return 3
}

// pattern prints t, in parentheses when it binds looser than min or is an
// alternation or sequence nested in one of its kind (the parser keeps such
// groups as written).
func (f *formatter) pattern(t PatternTerm, min int) {
	if patternPrec(t) < min {
		f.w("(")
		f.pattern(t, 0)
		f.w(")")
		return
	}
	switch t := t.(type) {
	case *PatternVar:
		f.name(t.Name)
	case *PatternConcat:
		for i, it := range t.Items {
			if i > 0 {
				f.w(" ")
			}
			f.pattern(it, 3)
		}
	case *PatternAlt:
		for i, it := range t.Alts {
			if i > 0 {
				f.w(" | ")
			}
			f.pattern(it, 2)
		}
	case *PatternQuant:
		if _, ok := t.Term.(*PatternQuant); ok {
			// (A*)? must not print as the reluctant A*?.
			f.w("(")
			f.pattern(t.Term, 0)
			f.w(")")
		} else {
			f.pattern(t.Term, 3)
		}
		switch {
		case t.Min == 0 && t.Max == -1:
			f.w("*")
		case t.Min == 1 && t.Max == -1:
			f.w("+")
		case t.Min == 0 && t.Max == 1:
			f.w("?")
		case t.Max == -1:
			f.w("{" + strconv.Itoa(t.Min) + ",}")
		case t.Min == t.Max:
			f.w("{" + strconv.Itoa(t.Min) + "}")
		default:
			f.w("{" + strconv.Itoa(t.Min) + "," + strconv.Itoa(t.Max) + "}")
		}
		f.wIf(t.Reluctant, "?")
	case *PatternPermute:
		f.w("PERMUTE(")
		for i, it := range t.Items {
			if i > 0 {
				f.w(", ")
			}
			f.pattern(it, 0)
		}
		f.w(")")
	case *PatternExclude:
		f.w("{- ")
		f.pattern(t.Term, 0)
		f.w(" -}")
	}
}
