package parser

// Operator precedence, loosest first, as in Calcite (Flink's parser):
//
//	OR < AND < NOT < comparison, IS, IN < LIKE, SIMILAR, BETWEEN
//	   < + - < * / % || < unary + - < [index] .field
//
// Each level's parseXRest function continues from an operand already parsed
// at the tighter level, so a special form that has read its first argument
// at a tight level can fall back to an ordinary expression.

func (p *parser) parseExpr() Expr {
	p.enter()
	defer p.leave()
	return p.parseOr()
}

func (p *parser) parseOr() Expr { return p.parseOrRest(p.parseAnd()) }

func (p *parser) parseOrRest(left Expr) Expr {
	for p.isWord("OR") {
		p.next()
		right := p.parseAnd()
		left = &Binary{node: node{left.Pos()}, Op: OpOr, Left: left, Right: right}
	}
	return left
}

func (p *parser) parseAnd() Expr { return p.parseAndRest(p.parseNot()) }

func (p *parser) parseAndRest(left Expr) Expr {
	for p.isWord("AND") {
		p.next()
		right := p.parseNot()
		left = &Binary{node: node{left.Pos()}, Op: OpAnd, Left: left, Right: right}
	}
	return left
}

func (p *parser) parseNot() Expr {
	if p.isWord("NOT") {
		t := p.next()
		p.enter()
		defer p.leave()
		return &Unary{node: node{t.pos}, Op: OpNot, Expr: p.parseNot()}
	}
	return p.parseCmpRest(p.parseLikeRest(p.parseAdditive()))
}

var cmpOps = map[string]BinaryOp{"=": OpEq, "<>": OpNe, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe}

func (p *parser) parseCmpRest(left Expr) Expr {
	for {
		t := p.peek()
		switch {
		case t.kind == tPunct && cmpOps[t.val] != "":
			p.next()
			right := p.parseLikeRest(p.parseAdditive())
			left = &Binary{node: node{left.Pos()}, Op: cmpOps[t.val], Left: left, Right: right}
		case p.isWord("IS"):
			p.next()
			not := p.acceptWord("NOT")
			w := p.peek()
			switch {
			case p.acceptWord("DISTINCT"):
				p.expectWord("FROM")
				right := p.parseLikeRest(p.parseAdditive())
				op := OpIsDistinctFrom
				if not {
					op = OpIsNotDistinctFrom
				}
				left = &Binary{node: node{left.Pos()}, Op: op, Left: left, Right: right}
			case w.kind == tWord && (w.val == "NULL" || w.val == "TRUE" || w.val == "FALSE" || w.val == "UNKNOWN"):
				p.next()
				left = &Is{node: node{left.Pos()}, Expr: left, Not: not, What: IsWhat(w.val)}
			default:
				p.expected("'NULL', 'TRUE', 'FALSE', 'UNKNOWN' or 'DISTINCT FROM'")
			}
		case p.isWord("IN"), p.isWord("NOT") && p.isWordAt(1, "IN"):
			in := &In{node: node{left.Pos()}, Expr: left}
			if p.acceptWord("NOT") {
				in.Not = true
			}
			p.next()
			if !p.isPunct("(") {
				p.expected("'('")
			}
			var qerr *Error
			if p.startsQuery(1) {
				qerr = p.try(func() {
					p.next()
					q := p.parseQuery()
					p.expectPunct(")")
					in.Query = q
				})
			}
			if in.Query == nil {
				eerr := p.try(func() {
					p.next()
					list := p.parseExprList()
					p.expectPunct(")")
					in.List = list
				})
				if eerr != nil {
					p.rethrow(qerr, eerr)
				}
			}
			left = in
		default:
			return left
		}
	}
}

// try runs f, undoing its token consumption and returning its error if it
// fails.
func (p *parser) try(f func()) (err *Error) {
	i, prevEnd, depth := p.i, p.prevEnd, p.depth
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			p.i, p.prevEnd, p.depth = i, prevEnd, depth
			err = b.err
		}
	}()
	f()
	return nil
}

// rethrow fails with whichever of two alternative parses got further.
func (p *parser) rethrow(a, b *Error) {
	if a != nil && (b == nil || a.Offset > b.Offset) {
		panic(bailout{a})
	}
	panic(bailout{b})
}

func (p *parser) parseLikeRest(left Expr) Expr {
	for {
		not := false
		if p.isWord("NOT") && (p.isWordAt(1, "LIKE") || p.isWordAt(1, "SIMILAR") || p.isWordAt(1, "BETWEEN")) {
			p.next()
			not = true
		}
		switch {
		case p.isWord("LIKE"), p.isWord("SIMILAR"):
			l := &Like{node: node{left.Pos()}, Expr: left, Not: not}
			if p.next().val == "SIMILAR" {
				l.Similar = true
				p.expectWord("TO")
			}
			l.Pattern = p.parseAdditive()
			if p.acceptWord("ESCAPE") {
				l.Escape = p.parseAdditive()
			}
			left = l
		case p.isWord("BETWEEN"):
			p.next()
			b := &Between{node: node{left.Pos()}, Expr: left, Not: not}
			if p.acceptWord("SYMMETRIC") {
				b.Symmetric = true
			} else {
				p.acceptWord("ASYMMETRIC")
			}
			b.Low = p.parseAdditive()
			p.expectWord("AND")
			b.High = p.parseAdditive()
			left = b
		default:
			return left
		}
	}
}

func (p *parser) parseAdditive() Expr {
	left := p.parseMul()
	for p.isPunct("+") || p.isPunct("-") {
		op := BinaryOp(p.next().val)
		right := p.parseMul()
		left = &Binary{node: node{left.Pos()}, Op: op, Left: left, Right: right}
	}
	return left
}

func (p *parser) parseMul() Expr {
	left := p.parseUnary()
	for p.isPunct("*") || p.isPunct("/") || p.isPunct("%") || p.isPunct("||") {
		op := BinaryOp(p.next().val)
		right := p.parseUnary()
		left = &Binary{node: node{left.Pos()}, Op: op, Left: left, Right: right}
	}
	return left
}

func (p *parser) parseUnary() Expr {
	if p.isPunct("-") || p.isPunct("+") {
		t := p.next()
		p.enter()
		defer p.leave()
		return &Unary{node: node{t.pos}, Op: UnaryOp(t.val), Expr: p.parseUnary()}
	}
	return p.parsePostfix(p.parsePrimary())
}

func (p *parser) parsePostfix(e Expr) Expr {
	for {
		switch {
		case p.isPunct("["):
			p.next()
			idx := p.parseExpr()
			p.expectPunct("]")
			e = &Index{node: node{e.Pos()}, Expr: e, Index: idx}
		case p.isPunct("."):
			p.next()
			e = &FieldAccess{node: node{e.Pos()}, Expr: e, Field: p.ident()}
		default:
			return e
		}
	}
}

// niladic functions may be written without parentheses.
var niladic = map[string]bool{
	"CURRENT_DATE": true, "CURRENT_TIME": true, "CURRENT_TIMESTAMP": true,
	"LOCALTIME": true, "LOCALTIMESTAMP": true,
}

func (p *parser) parsePrimary() Expr {
	t := p.peek()
	switch t.kind {
	case tInt, tDecimal, tApprox:
		p.next()
		kind := IntegerLit
		if t.kind == tDecimal {
			kind = DecimalLit
		} else if t.kind == tApprox {
			kind = ApproxLit
		}
		return &Literal{node: node{t.pos}, Kind: kind, Text: t.val}
	case tString:
		p.next()
		return &Literal{node: node{t.pos}, Kind: StringLit, Text: t.val, Charset: t.charset}
	case tBinString:
		p.next()
		return &Literal{node: node{t.pos}, Kind: BinaryLit, Text: t.val}
	case tQIdent:
		return p.parseNameOrCall()
	case tPunct:
		if t.val == "(" {
			return p.parseParenExpr()
		}
		if t.val == "?" {
			p.failAt(t.pos, "parameters ('?') are not supported")
		}
	case tWord:
		switch t.val {
		case "TRUE", "FALSE":
			p.next()
			return &Literal{node: node{t.pos}, Kind: BooleanLit, Text: t.val}
		case "UNKNOWN":
			p.next()
			return &Literal{node: node{t.pos}, Kind: UnknownLit, Text: t.val}
		case "NULL":
			p.next()
			return &Literal{node: node{t.pos}, Kind: NullLit, Text: t.val}
		case "DATE", "TIME", "TIMESTAMP":
			p.next()
			kind := map[string]LiteralKind{"DATE": DateLit, "TIME": TimeLit, "TIMESTAMP": TimestampLit}[t.val]
			if t.val == "TIMESTAMP" && p.acceptWords("WITH", "LOCAL", "TIME", "ZONE") {
				kind = TimestampLTZLit
			}
			if p.peek().kind != tString {
				p.expected("a string literal after " + t.val)
			}
			return &Literal{node: node{t.pos}, Kind: kind, Text: p.next().val}
		case "INTERVAL":
			return p.parseIntervalLiteral()
		case "CASE":
			return p.parseCase()
		case "CAST":
			return p.parseCast(false)
		case "EXISTS":
			p.next()
			p.expectPunct("(")
			e := &Exists{node: node{t.pos}, Query: p.parseQuery()}
			p.expectPunct(")")
			return e
		case "ROW":
			p.next()
			r := &RowExpr{node: node{t.pos}, Items: []Expr{}}
			p.expectPunct("(")
			if !p.isPunct(")") {
				r.Items = p.parseExprList()
			}
			p.expectPunct(")")
			return r
		case "ARRAY":
			p.next()
			if !p.isPunct("[") {
				p.expected("'['")
			}
			p.next()
			a := &ArrayCtor{node: node{t.pos}, Elems: p.parseExprList()}
			p.expectPunct("]")
			return a
		case "MAP":
			p.next()
			if !p.isPunct("[") {
				p.expected("'['")
			}
			p.next()
			m := &MapCtor{node: node{t.pos}}
			for {
				m.Keys = append(m.Keys, p.parseExpr())
				p.expectPunct(",")
				m.Values = append(m.Values, p.parseExpr())
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct("]")
			return m
		case "MATCH_RECOGNIZE":
			p.failAt(t.pos, "MATCH_RECOGNIZE must follow a table in FROM")
		}
		if niladic[t.val] {
			p.next()
			f := &FuncCall{node: node{t.pos}, Name: []string{t.val}, NoParens: true}
			if p.isPunct("(") {
				f.NoParens = false
				p.parseCallArgs(f)
			}
			return f
		}
		if !reserved[t.val] || callableReserved[t.val] && p.isPunctAt(1, "(") {
			return p.parseNameOrCall()
		}
	}
	p.expected("an expression")
	return nil
}

func (p *parser) parseExprList() []Expr {
	var out []Expr
	for {
		out = append(out, p.parseExpr())
		if !p.acceptPunct(",") {
			return out
		}
	}
}

// parseParenExpr parses (query), (expr) or (expr, expr, ...).
func (p *parser) parseParenExpr() Expr {
	t := p.peek()
	var qerr *Error
	if p.startsQuery(1) {
		var e Expr
		qerr = p.try(func() {
			p.next()
			q := p.parseQuery()
			p.expectPunct(")")
			e = &Subquery{node: node{t.pos}, Query: q}
		})
		if qerr == nil {
			return e
		}
	}
	var e Expr
	eerr := p.try(func() {
		p.next()
		first := p.parseExpr()
		if p.isPunct(",") {
			p.next()
			r := &RowExpr{node: node{t.pos}, Items: []Expr{first}}
			r.Items = append(r.Items, p.parseExprList()...)
			e = r
		} else {
			e = first
		}
		p.expectPunct(")")
	})
	if eerr != nil {
		p.rethrow(qerr, eerr)
	}
	return e
}

// parseNameOrCall parses a name, qualified name, t.*, or a function call.
func (p *parser) parseNameOrCall() Expr {
	t := p.peek()
	if t.kind == tWord && p.isPunctAt(1, "(") {
		if e := p.parseSpecialCall(t); e != nil {
			return e
		}
	}
	var parts []string
	if t.kind == tWord && reserved[t.val] {
		p.next()
		parts = []string{p.raw(t)} // LEFT( / RIGHT(
	} else {
		parts = []string{p.ident()}
	}
	for p.isPunct(".") {
		p.next()
		if p.isPunct("*") {
			p.next()
			return &Star{node: node{t.pos}, Qualifier: parts}
		}
		parts = append(parts, p.ident())
	}
	if !p.isPunct("(") {
		return &Ident{node: node{t.pos}, Parts: parts}
	}
	f := &FuncCall{node: node{t.pos}, Name: parts}
	p.parseCallArgs(f)
	p.parseCallSuffix(f)
	return f
}

// parseCallArgs parses ([DISTINCT|ALL] args) into f.
func (p *parser) parseCallArgs(f *FuncCall) {
	p.expectPunct("(")
	if p.acceptPunct(")") {
		return
	}
	if p.acceptWord("DISTINCT") {
		f.Distinct = true
	} else {
		p.acceptWord("ALL")
	}
	if p.isPunct("*") && p.isPunctAt(1, ")") {
		f.Args = []Expr{&Star{node: node{p.next().pos}}}
		p.next()
		return
	}
	for {
		f.Args = append(f.Args, p.parseArg())
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(")")
}

// parseArg parses a function argument: [name =>] (TABLE t [PARTITION BY ..]
// | expr).
func (p *parser) parseArg() Expr {
	t := p.peek()
	if (t.kind == tWord || t.kind == tQIdent) && p.isPunctAt(1, "=>") {
		p.next()
		p.next()
		name := p.raw(t)
		if t.kind == tQIdent {
			name = t.val
		}
		return &NamedArg{node: node{t.pos}, Name: name, Value: p.parseArgValue()}
	}
	return p.parseArgValue()
}

func (p *parser) parseArgValue() Expr {
	t := p.peek()
	if !p.isWord("TABLE") {
		return p.parseExpr()
	}
	p.next()
	ta := &TableArg{node: node{t.pos}, Name: p.compoundIdent()}
	if p.acceptWord("PARTITION") {
		p.expectWord("BY")
		if p.isPunct("(") {
			p.next()
			ta.PartitionBy = p.parseExprList()
			p.expectPunct(")")
		} else {
			ta.PartitionBy = []Expr{p.parseExpr()}
		}
	}
	return ta
}

// parseCallSuffix parses WITHIN GROUP (...), FILTER (WHERE ...) and OVER.
func (p *parser) parseCallSuffix(f *FuncCall) {
	if p.isWord("WITHIN") {
		p.next()
		p.expectWord("GROUP")
		p.expectPunct("(")
		p.expectWord("ORDER")
		p.expectWord("BY")
		f.WithinGroup = p.parseOrderItems()
		p.expectPunct(")")
	}
	if p.isWord("FILTER") {
		p.next()
		p.expectPunct("(")
		p.expectWord("WHERE")
		f.Filter = p.parseExpr()
		p.expectPunct(")")
	}
	if p.isWord("OVER") {
		t := p.next()
		if p.isPunct("(") {
			f.Over = p.parseWindowSpecParens()
		} else {
			f.Over = &WindowSpec{node: node{t.pos}, Ref: p.ident()}
		}
	}
}

// parseSpecialCall parses the functions with keyword syntax inside their
// parentheses. It returns nil, consuming nothing, when t does not start one.
func (p *parser) parseSpecialCall(t token) Expr {
	pos := t.pos
	switch t.val {
	case "TRY_CAST":
		return p.parseCast(true)
	case "DESCRIPTOR":
		p.next()
		return &Descriptor{node: node{pos}, Columns: p.parenIdentList()}
	case "EXTRACT":
		u := p.peekAt(2)
		if u.kind != tWord || timeUnits[u.val] == "" || !p.isWordAt(3, "FROM") {
			return nil
		}
		p.next()
		p.next()
		p.next()
		p.next()
		e := &Extract{node: node{pos}, Unit: timeUnits[u.val], Expr: p.parseExpr()}
		p.expectPunct(")")
		return e
	case "TIMESTAMPADD", "TIMESTAMPDIFF":
		u := p.peekAt(2)
		if u.kind != tWord || timeUnits[u.val] == "" || !p.isPunctAt(3, ",") {
			return nil
		}
		p.next()
		p.next()
		p.next()
		p.next()
		a := p.parseExpr()
		p.expectPunct(",")
		b := p.parseExpr()
		p.expectPunct(")")
		if t.val == "TIMESTAMPADD" {
			return &TimestampAdd{node: node{pos}, Unit: timeUnits[u.val], Count: a, Timestamp: b}
		}
		return &TimestampDiff{node: node{pos}, Unit: timeUnits[u.val], Start: a, End: b}
	case "TRIM":
		p.next()
		p.next()
		tr := &Trim{node: node{pos}}
		if w := p.peek(); w.kind == tWord && (w.val == "BOTH" || w.val == "LEADING" || w.val == "TRAILING") {
			p.next()
			tr.Mode = w.val
		}
		if p.acceptWord("FROM") {
			tr.Expr = p.parseExpr()
		} else {
			x := p.parseExpr()
			if p.acceptWord("FROM") {
				tr.Chars = x
				tr.Expr = p.parseExpr()
			} else if tr.Mode != "" {
				p.expected("'FROM'")
			} else {
				tr.Expr = x
			}
		}
		p.expectPunct(")")
		return tr
	case "SUBSTRING":
		p.next()
		p.next()
		s := &Substring{node: node{pos}, Expr: p.parseExpr()}
		if p.acceptWord("FROM") {
			s.Start = p.parseExpr()
			if p.acceptWord("FOR") {
				s.Length = p.parseExpr()
			}
		} else {
			p.expectPunct(",")
			s.Start = p.parseExpr()
			if p.acceptPunct(",") {
				s.Length = p.parseExpr()
			}
		}
		p.expectPunct(")")
		return s
	case "OVERLAY":
		p.next()
		p.next()
		o := &Overlay{node: node{pos}, Expr: p.parseExpr()}
		p.expectWord("PLACING")
		o.Repl = p.parseExpr()
		p.expectWord("FROM")
		o.Start = p.parseExpr()
		if p.acceptWord("FOR") {
			o.Length = p.parseExpr()
		}
		p.expectPunct(")")
		return o
	case "POSITION":
		p.next()
		p.next()
		first := p.parseAdditive()
		if !p.acceptWord("IN") {
			return p.finishCall(t, first)
		}
		ps := &Position{node: node{pos}, Sub: first, Str: p.parseAdditive()}
		if p.acceptWord("FROM") {
			ps.Start = p.parseExpr()
		}
		p.expectPunct(")")
		return ps
	case "FLOOR", "CEIL", "CEILING":
		p.next()
		p.next()
		first := p.parseExpr()
		if !p.acceptWord("TO") {
			return p.finishCall(t, first)
		}
		u := p.peek()
		if u.kind != tWord || timeUnits[u.val] == "" {
			p.expected("a time unit")
		}
		p.next()
		p.expectPunct(")")
		return &FloorCeil{node: node{pos}, Ceil: t.val != "FLOOR", Expr: first, Unit: timeUnits[u.val]}
	}
	return nil
}

// finishCall turns a special form that turned out to be an ordinary call
// back into a *FuncCall, given its first argument, parsed at the additive
// level or tighter.
func (p *parser) finishCall(name token, first Expr) Expr {
	f := &FuncCall{node: node{name.pos}, Name: []string{p.raw(name)}}
	first = p.parseOrRest(p.parseAndRest(p.parseCmpRest(p.parseLikeRest(first))))
	f.Args = []Expr{first}
	for p.acceptPunct(",") {
		f.Args = append(f.Args, p.parseArg())
	}
	p.expectPunct(")")
	p.parseCallSuffix(f)
	return f
}

func (p *parser) parseCast(try bool) Expr {
	t := p.next()
	p.expectPunct("(")
	c := &Cast{node: node{t.pos}, Try: try, Expr: p.parseExpr()}
	p.expectWord("AS")
	c.Type = p.parseType()
	p.expectPunct(")")
	return c
}

func (p *parser) parseCase() Expr {
	c := &Case{node: node{p.next().pos}}
	if !p.isWord("WHEN") {
		c.Operand = p.parseExpr()
	}
	if !p.isWord("WHEN") {
		p.expected("'WHEN'")
	}
	for p.isWord("WHEN") {
		w := &When{node: node{p.next().pos}}
		w.Cond = p.parseExpr()
		p.expectWord("THEN")
		w.Result = p.parseExpr()
		c.Whens = append(c.Whens, w)
	}
	if p.acceptWord("ELSE") {
		c.Else = p.parseExpr()
	}
	p.expectWord("END")
	return c
}

func (p *parser) parseIntervalLiteral() Expr {
	t := p.expectWord("INTERVAL")
	il := &IntervalLiteral{node: node{t.pos}}
	if p.acceptPunct("-") {
		il.Negative = true
	} else {
		p.acceptPunct("+")
	}
	if p.peek().kind != tString {
		p.expected("a string literal after INTERVAL")
	}
	il.Value = p.next().val
	il.Qualifier = p.parseIntervalQualifier()
	return il
}

// parseIntervalQualifier parses unit [(p [, q])] [TO unit [(q)]].
func (p *parser) parseIntervalQualifier() IntervalQualifier {
	q := IntervalQualifier{FracPrecision: -1}
	unit := func() (TimeUnit, token) {
		t := p.peek()
		u := timeUnits[t.val]
		if t.kind != tWord || intervalUnitRank[u] == 0 {
			p.expected("a time unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, ...)")
		}
		p.next()
		return u, t
	}
	start, st := unit()
	q.Start = start
	if p.acceptPunct("(") {
		q.Precision = p.intLit()
		if q.Precision < 1 {
			p.failAt(p.toks[p.i-1].pos, "interval precision must be at least 1")
		}
		if start == "SECOND" && p.acceptPunct(",") {
			q.FracPrecision = p.intLit()
		}
		p.expectPunct(")")
	}
	if p.isWord("TO") {
		p.next()
		end, et := unit()
		if !validIntervalRanges[[2]TimeUnit{start, end}] {
			p.failAt(st.pos, "invalid interval qualifier %s TO %s", start, end)
		}
		if q.FracPrecision >= 0 {
			p.failAt(et.pos, "only the end field of %s TO %s may have a fractional precision", start, end)
		}
		q.End = end
		if end == "SECOND" && p.acceptPunct("(") {
			q.FracPrecision = p.intLit()
			p.expectPunct(")")
		}
	}
	return q
}
