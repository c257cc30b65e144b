package parser

import "strings"

// parseQuery parses [WITH ...] set-expression [ORDER BY ...] [LIMIT ...]
// [OFFSET ...] [FETCH ...].
func (p *parser) parseQuery() QueryExpr {
	p.enter()
	defer p.leave()
	start := p.peek().pos
	q := &Query{node: node{start}}
	if p.acceptWord("WITH") {
		for {
			cte := &CTE{node: node{p.peek().pos}}
			cte.Name = p.ident()
			if p.isPunct("(") {
				cte.Columns = p.parenIdentList()
			}
			p.expectWord("AS")
			p.expectPunct("(")
			cte.Query = p.parseQuery()
			p.expectPunct(")")
			q.With = append(q.With, cte)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	q.Body = p.parseSetExpr()
	if p.acceptWord("ORDER") {
		p.expectWord("BY")
		q.OrderBy = p.parseOrderItems()
	}
	if p.acceptWord("LIMIT") {
		if !p.acceptWord("ALL") {
			q.Limit = p.parseExpr()
		}
	}
	if p.acceptWord("OFFSET") {
		q.Offset = p.parseExpr()
		if !p.acceptWord("ROWS") {
			p.acceptWord("ROW")
		}
	}
	if p.isWord("FETCH") {
		t := p.next()
		if q.Limit != nil {
			p.failAt(t.pos, "cannot have both LIMIT and FETCH")
		}
		if !p.acceptWord("FIRST") && !p.acceptWord("NEXT") {
			p.expected("'FIRST' or 'NEXT'")
		}
		if p.isWord("ROW") || p.isWord("ROWS") {
			q.Limit = &Literal{node: node{p.peek().pos}, Kind: IntegerLit, Text: "1"}
		} else {
			q.Limit = p.parseExpr()
		}
		if !p.acceptWord("ROWS") && !p.acceptWord("ROW") {
			p.expected("'ROWS'")
		}
		p.expectWord("ONLY")
	}
	if q.With == nil && q.OrderBy == nil && q.Limit == nil && q.Offset == nil {
		return q.Body
	}
	return q
}

// parseSetExpr parses UNION/EXCEPT chains of INTERSECT chains: INTERSECT
// binds tighter, all are left-associative.
func (p *parser) parseSetExpr() QueryExpr {
	left := p.parseIntersect()
	for {
		var op SetOpKind
		switch {
		case p.isWord("UNION"):
			op = Union
		case p.isWord("EXCEPT"), p.isWord("MINUS"):
			op = Except
		default:
			return left
		}
		p.next()
		all := p.acceptWord("ALL")
		if !all {
			p.acceptWord("DISTINCT")
		}
		right := p.parseIntersect()
		left = &SetOp{node: node{left.Pos()}, Op: op, All: all, Left: left, Right: right}
	}
}

func (p *parser) parseIntersect() QueryExpr {
	left := p.parseQueryPrimary()
	for p.isWord("INTERSECT") {
		p.next()
		all := p.acceptWord("ALL")
		if !all {
			p.acceptWord("DISTINCT")
		}
		right := p.parseQueryPrimary()
		left = &SetOp{node: node{left.Pos()}, Op: Intersect, All: all, Left: left, Right: right}
	}
	return left
}

func (p *parser) parseQueryPrimary() QueryExpr {
	t := p.peek()
	switch {
	case p.isWord("SELECT"):
		return p.parseSelect()
	case p.isWord("VALUES"):
		return p.parseValues()
	case p.isPunct("("):
		p.next()
		q := p.parseQuery()
		p.expectPunct(")")
		return q
	case p.isWord("MATCH_RECOGNIZE"):
		p.failAt(t.pos, "MATCH_RECOGNIZE must follow a table in FROM")
	}
	p.expected("'SELECT', 'VALUES' or '('")
	return nil
}

func (p *parser) parseValues() *Values {
	v := &Values{node: node{p.expectWord("VALUES").pos}}
	for {
		var row []Expr
		switch {
		case p.isPunct("("):
			p.next()
			for {
				row = append(row, p.parseExpr())
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct(")")
		case p.isWord("ROW") && p.isPunctAt(1, "("):
			p.next()
			p.next()
			if !p.isPunct(")") {
				for {
					row = append(row, p.parseExpr())
					if !p.acceptPunct(",") {
						break
					}
				}
			}
			p.expectPunct(")")
			if row == nil {
				row = []Expr{}
			}
		default:
			row = []Expr{p.parseExpr()}
		}
		v.Rows = append(v.Rows, row)
		if !p.acceptPunct(",") {
			return v
		}
	}
}

func (p *parser) parseOrderItems() []*OrderItem {
	var items []*OrderItem
	for {
		it := &OrderItem{node: node{p.peek().pos}}
		it.Expr = p.parseExpr()
		if p.acceptWord("DESC") {
			it.Desc = true
		} else {
			p.acceptWord("ASC")
		}
		if p.acceptWord("NULLS") {
			switch {
			case p.acceptWord("FIRST"):
				it.Nulls = NullsFirst
			case p.acceptWord("LAST"):
				it.Nulls = NullsLast
			default:
				p.expected("'FIRST' or 'LAST'")
			}
		}
		items = append(items, it)
		if !p.acceptPunct(",") {
			return items
		}
	}
}

func (p *parser) parseSelect() *Select {
	s := &Select{node: node{p.expectWord("SELECT").pos}}
	if p.peek().kind == tHintStart {
		s.Hints = p.parseHints()
	}
	if p.acceptWord("DISTINCT") {
		s.Distinct = true
	} else {
		p.acceptWord("ALL")
	}
	for {
		s.Items = append(s.Items, p.parseSelectItem())
		if !p.acceptPunct(",") {
			break
		}
	}
	if p.acceptWord("FROM") {
		s.From = p.parseTableRefs()
	}
	if p.acceptWord("WHERE") {
		s.Where = p.parseExpr()
	}
	if p.isWord("GROUP") {
		p.next()
		p.expectWord("BY")
		for {
			s.GroupBy = append(s.GroupBy, p.parseGroupingElement())
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptWord("HAVING") {
		s.Having = p.parseExpr()
	}
	if p.acceptWord("WINDOW") {
		for {
			w := &NamedWindow{node: node{p.peek().pos}}
			w.Name = p.ident()
			p.expectWord("AS")
			w.Spec = p.parseWindowSpecParens()
			s.Windows = append(s.Windows, w)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.isWord("MATCH_RECOGNIZE") {
		p.failAt(p.peek().pos, "MATCH_RECOGNIZE must follow a table in FROM")
	}
	return s
}

func (p *parser) parseSelectItem() *SelectItem {
	it := &SelectItem{node: node{p.peek().pos}}
	if p.isPunct("*") {
		it.Expr = &Star{node: node{p.next().pos}}
		return it
	}
	it.Expr = p.parseExpr()
	if p.acceptWord("AS") {
		it.Alias = p.ident()
	} else if p.isIdentAt(0) {
		it.Alias = p.ident()
	}
	return it
}

func (p *parser) parseGroupingElement() Expr {
	t := p.peek()
	switch {
	case p.isWord("GROUPING") && p.isWordAt(1, "SETS"):
		p.next()
		p.next()
		gs := &GroupingSets{node: node{t.pos}}
		p.expectPunct("(")
		for {
			gs.Sets = append(gs.Sets, p.parseGroupingElement())
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
		return gs
	case (p.isWord("ROLLUP") || p.isWord("CUBE")) && p.isPunctAt(1, "("):
		p.next()
		p.next()
		var items []Expr
		for {
			items = append(items, p.parseGroupingElement())
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
		if t.val == "ROLLUP" {
			return &Rollup{node: node{t.pos}, Items: items}
		}
		return &Cube{node: node{t.pos}, Items: items}
	case p.isPunct("(") && p.isPunctAt(1, ")"):
		p.next()
		p.next()
		return &RowExpr{node: node{t.pos}, Items: []Expr{}}
	}
	return p.parseExpr()
}

// parseWindowSpecParens parses ([ref] [PARTITION BY ..] [ORDER BY ..] [frame]).
func (p *parser) parseWindowSpecParens() *WindowSpec {
	ws := &WindowSpec{node: node{p.expectPunct("(").pos}}
	if p.isIdentAt(0) && !p.isWord("ROWS") && !p.isWord("RANGE") {
		ws.Ref = p.ident()
	}
	if p.acceptWord("PARTITION") {
		p.expectWord("BY")
		for {
			ws.PartitionBy = append(ws.PartitionBy, p.parseExpr())
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptWord("ORDER") {
		p.expectWord("BY")
		ws.OrderBy = p.parseOrderItems()
	}
	if p.isWord("ROWS") || p.isWord("RANGE") {
		f := &WindowFrame{Rows: p.next().val == "ROWS"}
		if p.acceptWord("BETWEEN") {
			f.Start = p.parseFrameBound()
			p.expectWord("AND")
			end := p.parseFrameBound()
			f.End = &end
		} else {
			f.Start = p.parseFrameBound()
		}
		ws.Frame = f
	}
	p.expectPunct(")")
	return ws
}

func (p *parser) parseFrameBound() FrameBound {
	switch {
	case p.acceptWords("UNBOUNDED", "PRECEDING"):
		return FrameBound{Kind: UnboundedPreceding}
	case p.acceptWords("UNBOUNDED", "FOLLOWING"):
		return FrameBound{Kind: UnboundedFollowing}
	case p.acceptWords("CURRENT", "ROW"):
		return FrameBound{Kind: CurrentRow}
	}
	e := p.parseAdditive()
	switch {
	case p.acceptWord("PRECEDING"):
		return FrameBound{Kind: Preceding, Offset: e}
	case p.acceptWord("FOLLOWING"):
		return FrameBound{Kind: Following, Offset: e}
	}
	p.expected("'PRECEDING' or 'FOLLOWING'")
	return FrameBound{}
}

// ---------------------------------------------------------------------------
// FROM

func (p *parser) parseTableRefs() TableRef {
	p.enter()
	defer p.leave()
	left := p.parseTablePrimary()
	for {
		t := p.peek()
		if p.acceptPunct(",") {
			right := p.parseTablePrimary()
			left = &Join{node: node{t.pos}, Type: CommaJoin, Left: left, Right: right}
			continue
		}
		natural := p.isWord("NATURAL")
		if natural {
			p.next()
		}
		var typ JoinType
		switch {
		case p.acceptWord("JOIN"):
			typ = InnerJoin
		case p.acceptWords("INNER", "JOIN"):
			typ = InnerJoin
		case p.isWord("LEFT") || p.isWord("RIGHT") || p.isWord("FULL"):
			typ = JoinType(p.next().val)
			p.acceptWord("OUTER")
			p.expectWord("JOIN")
		case p.acceptWord("CROSS"):
			typ = CrossJoin
			p.expectWord("JOIN")
		default:
			if natural {
				p.expected("'JOIN'")
			}
			return left
		}
		j := &Join{node: node{t.pos}, Type: typ, Natural: natural, Left: left}
		j.Right = p.parseTablePrimary()
		if typ != CrossJoin && !natural {
			switch {
			case p.acceptWord("ON"):
				j.On = p.parseExpr()
			case p.acceptWord("USING"):
				j.Using = p.parenIdentList()
			default:
				p.expected("'ON' or 'USING'")
			}
		}
		left = j
	}
}

func (p *parser) parseTablePrimary() TableRef {
	t := p.peek()
	var ref TableRef
	switch {
	case p.isWord("LATERAL"):
		p.next()
		switch {
		case p.isWord("TABLE"):
			ref = p.parseTableFunction(true, t.pos)
		case p.isPunct("("):
			p.next()
			d := &DerivedTable{node: node{t.pos}, Lateral: true}
			d.Query = p.parseQuery()
			p.expectPunct(")")
			d.Alias = p.parseAlias()
			ref = d
		default:
			p.expected("'TABLE' or '('")
		}
	case p.isWord("TABLE"):
		ref = p.parseTableFunction(false, t.pos)
	case p.isWord("UNNEST"):
		p.next()
		u := &Unnest{node: node{t.pos}}
		p.expectPunct("(")
		for {
			u.Exprs = append(u.Exprs, p.parseExpr())
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
		u.WithOrdinality = p.acceptWords("WITH", "ORDINALITY")
		u.Alias = p.parseAlias()
		ref = u
	case p.isPunct("("):
		if p.startsQuery(1) {
			p.next()
			d := &DerivedTable{node: node{t.pos}}
			d.Query = p.parseQuery()
			p.expectPunct(")")
			d.Alias = p.parseAlias()
			ref = d
		} else {
			p.next()
			ref = p.parseTableRefs()
			p.expectPunct(")")
		}
	default:
		if !p.isIdentAt(0) {
			p.expected("a table name")
		}
		tn := &TableName{node: node{t.pos}}
		tn.Name = p.compoundIdent()
		if p.peek().kind == tHintStart {
			tn.Hints = p.parseHints()
		}
		if p.isWord("FOR") {
			p.next()
			p.expectWord("SYSTEM_TIME")
			p.expectWord("AS")
			p.expectWord("OF")
			tn.SystemTime = p.parseExpr()
		}
		tn.Alias = p.parseAlias()
		ref = tn
	}
	if p.isWord("MATCH_RECOGNIZE") {
		ref = p.parseMatchRecognize(ref)
	}
	return ref
}

// parseAlias parses [AS] name [(col, ...)].
func (p *parser) parseAlias() *TableAlias {
	var a *TableAlias
	if p.acceptWord("AS") {
		a = &TableAlias{Name: p.ident()}
	} else if p.isIdentAt(0) {
		a = &TableAlias{Name: p.ident()}
	} else {
		return nil
	}
	if p.isPunct("(") {
		a.Columns = p.parenIdentList()
	}
	return a
}

func (p *parser) parseTableFunction(lateral bool, pos Pos) TableRef {
	p.expectWord("TABLE")
	p.expectPunct("(")
	callPos := p.peek().pos
	name := p.compoundIdent()
	if !p.isPunct("(") {
		p.expected("'('")
	}
	call := &FuncCall{node: node{callPos}, Name: name.Parts}
	p.parseCallArgs(call)
	p.expectPunct(")")
	alias := p.parseAlias()
	if len(name.Parts) == 1 && !lateral {
		switch kind := WindowKind(strings.ToUpper(name.Parts[0])); kind {
		case Tumble, Hop, Cumulate, Session:
			w := p.windowTVF(kind, call)
			w.At = pos
			w.Alias = alias
			return w
		}
	}
	return &TableFunc{node: node{pos}, Lateral: lateral, Call: call, Alias: alias}
}

// windowParams lists each window TVF's parameters in positional order;
// those after the first optional one may be left out.
var windowParams = map[WindowKind][]string{
	Tumble:   {"DATA", "TIMECOL", "SIZE", "OFFSET"},
	Hop:      {"DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"},
	Cumulate: {"DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"},
	Session:  {"DATA", "TIMECOL", "GAP"},
}

func (p *parser) windowTVF(kind WindowKind, call *FuncCall) *WindowTVF {
	params := windowParams[kind]
	args := map[string]Expr{}
	named := len(call.Args) > 0 && isNamedArg(call.Args[0])
	if call.Distinct {
		p.failAt(call.At, "%s does not take DISTINCT", kind)
	}
	for i, a := range call.Args {
		if isNamedArg(a) != named {
			p.failAt(a.Pos(), "cannot mix named and positional arguments in %s", kind)
		}
		if !named {
			if i >= len(params) {
				p.failAt(a.Pos(), "too many arguments for %s: it takes at most %d", kind, len(params))
			}
			args[params[i]] = a
			continue
		}
		na := a.(*NamedArg)
		name := strings.ToUpper(na.Name)
		known := false
		for _, q := range params {
			known = known || q == name
		}
		if !known {
			p.failAt(na.At, "%s has no parameter %s (it has %s)", kind, na.Name, strings.Join(params, ", "))
		}
		if args[name] != nil {
			p.failAt(na.At, "parameter %s of %s given twice", name, kind)
		}
		args[name] = na.Value
	}
	for _, q := range params {
		if q != "OFFSET" && args[q] == nil {
			p.failAt(call.At, "%s needs a %s argument", kind, q)
		}
	}
	w := &WindowTVF{Kind: kind, Size: args["SIZE"], Slide: args["SLIDE"], Step: args["STEP"], Gap: args["GAP"], Offset: args["OFFSET"]}
	switch d := args["DATA"].(type) {
	case *TableArg:
		if d.PartitionBy != nil && kind != Session {
			p.failAt(d.At, "PARTITION BY is only allowed in SESSION windows")
		}
		w.Data = &TableName{node: d.node, Name: d.Name}
		w.PartitionBy = d.PartitionBy
	case *Subquery:
		w.Data = &DerivedTable{node: d.node, Query: d.Query}
	default:
		p.failAt(d.Pos(), "the DATA argument of %s must be TABLE name or a subquery", kind)
	}
	desc, ok := args["TIMECOL"].(*Descriptor)
	if !ok || len(desc.Columns) != 1 {
		p.failAt(args["TIMECOL"].Pos(), "the TIMECOL argument of %s must be DESCRIPTOR(column)", kind)
	}
	w.TimeCol = desc.Columns[0]
	for _, q := range params[2:] {
		switch args[q].(type) {
		case *TableArg, *Descriptor:
			p.failAt(args[q].Pos(), "the %s argument of %s must be a scalar expression", q, kind)
		}
	}
	return w
}

func isNamedArg(e Expr) bool {
	_, ok := e.(*NamedArg)
	return ok
}
