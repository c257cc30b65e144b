package parser

import (
	"fmt"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of expressions, queries and types, so that
// hostile input gets an error instead of exhausting the stack.
const maxDepth = 500

type parser struct {
	src     string
	toks    []token
	i       int
	prevEnd int
	depth   int
}

// bailout carries a syntax error up the recursive descent; the entry points
// recover it. Nothing else is recovered, so bugs still crash loudly.
type bailout struct{ err *Error }

func newParser(src string) (*parser, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	return &parser{src: src, toks: toks}, nil
}

func (p *parser) recover(err *error) {
	if r := recover(); r != nil {
		b, ok := r.(bailout)
		if !ok {
			panic(r)
		}
		*err = b.err
	}
}

// ParseScript parses statements separated by ';'. Empty statements are
// skipped. Each statement keeps its position and exact source text.
func ParseScript(src string) (stmts []Statement, err error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	defer p.recover(&err)
	for {
		for p.acceptPunct(";") {
		}
		if p.peek().kind == tEOF {
			return stmts, nil
		}
		stmts = append(stmts, p.parseStatement())
		if !p.isPunct(";") && p.peek().kind != tEOF {
			p.expected("';' or end of input")
		}
	}
}

// ParseStatement parses exactly one statement, optionally followed by ';'.
func ParseStatement(src string) (s Statement, err error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	defer p.recover(&err)
	for p.acceptPunct(";") {
	}
	if p.peek().kind == tEOF {
		p.expected("a statement")
	}
	s = p.parseStatement()
	if !p.isPunct(";") && p.peek().kind != tEOF {
		p.expected("';' or end of input")
	}
	for p.acceptPunct(";") {
	}
	if p.peek().kind != tEOF {
		p.expected("end of input")
	}
	return s, nil
}

// ParseExpr parses a single scalar expression.
func ParseExpr(src string) (e Expr, err error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	defer p.recover(&err)
	e = p.parseExpr()
	if p.peek().kind != tEOF {
		p.expected("end of input")
	}
	return e, nil
}

// ParseType parses a data type such as DECIMAL(10, 2) or
// ROW<a INT, b ARRAY<STRING>> NOT NULL.
func ParseType(src string) (t *TypeName, err error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	defer p.recover(&err)
	t = p.parseType()
	if p.peek().kind != tEOF {
		p.expected("end of input")
	}
	return t, nil
}

// ---------------------------------------------------------------------------
// Token helpers

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
		p.prevEnd = t.end
	}
	return t
}

func (p *parser) isWord(kw string) bool {
	t := p.toks[p.i]
	return t.kind == tWord && t.val == kw
}

func (p *parser) isWordAt(n int, kw string) bool {
	t := p.peekAt(n)
	return t.kind == tWord && t.val == kw
}

func (p *parser) acceptWord(kw string) bool {
	if p.isWord(kw) {
		p.next()
		return true
	}
	return false
}

// acceptWords consumes the sequence of keywords if all of them follow.
func (p *parser) acceptWords(kws ...string) bool {
	for n, kw := range kws {
		if !p.isWordAt(n, kw) {
			return false
		}
	}
	for range kws {
		p.next()
	}
	return true
}

func (p *parser) expectWord(kw string) token {
	if !p.isWord(kw) {
		p.expected("'" + kw + "'")
	}
	return p.next()
}

func (p *parser) isPunct(s string) bool {
	t := p.toks[p.i]
	return t.kind == tPunct && t.val == s
}

func (p *parser) isPunctAt(n int, s string) bool {
	t := p.peekAt(n)
	return t.kind == tPunct && t.val == s
}

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(s) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectPunct(s string) token {
	if !p.isPunct(s) {
		p.expected("'" + s + "'")
	}
	return p.next()
}

// raw is the token's exact source text.
func (p *parser) raw(t token) string { return p.src[t.pos.Offset:t.end] }

// describe names a token for an error message.
func (p *parser) describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tHintStart:
		return "hint '/*+'"
	case tString, tBinString:
		return "string " + truncate(p.raw(t))
	}
	return "'" + truncate(p.raw(t)) + "'"
}

func truncate(s string) string {
	if len(s) > 40 {
		cut := 37
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return s[:cut] + "..."
	}
	return s
}

func (p *parser) failAt(pos Pos, format string, args ...any) {
	panic(bailout{&Error{Line: pos.Line, Column: pos.Column, Offset: pos.Offset, Msg: fmt.Sprintf(format, args...)}})
}

// expected fails at the current token: "expected X but found Y".
func (p *parser) expected(what string) {
	t := p.peek()
	p.failAt(t.pos, "expected %s but found %s", what, p.describe(t))
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.failAt(p.peek().pos, "nesting is deeper than %d levels", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// isIdentToken reports whether the current token can be an identifier.
func (p *parser) isIdentAt(n int) bool {
	t := p.peekAt(n)
	return t.kind == tQIdent || t.kind == tWord && !reserved[t.val]
}

// ident parses an identifier, keeping its case.
func (p *parser) ident() string {
	t := p.peek()
	switch {
	case t.kind == tQIdent:
		p.next()
		return t.val
	case t.kind == tWord && !reserved[t.val]:
		p.next()
		return p.raw(t)
	}
	p.expected("an identifier")
	return ""
}

// compoundIdent parses name[.name...].
func (p *parser) compoundIdent() *Ident {
	pos := p.peek().pos
	parts := []string{p.ident()}
	for p.isPunct(".") {
		p.next()
		parts = append(parts, p.ident())
	}
	return &Ident{node: node{pos}, Parts: parts}
}

// identList parses (a, b, ...).
func (p *parser) parenIdentList() []string {
	p.expectPunct("(")
	var out []string
	for {
		out = append(out, p.ident())
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(")")
	return out
}

func (p *parser) stringLit() string {
	t := p.peek()
	if t.kind != tString {
		p.expected("a string literal")
	}
	p.next()
	return t.val
}

func (p *parser) intLit() int {
	t := p.peek()
	if t.kind != tInt {
		p.expected("an integer")
	}
	v, err := strconv.Atoi(t.val)
	if err != nil || v > 1<<31-1 {
		p.failAt(t.pos, "integer %s is out of range", t.val)
	}
	p.next()
	return v
}

// ---------------------------------------------------------------------------
// Statements

func (p *parser) parseStatement() Statement {
	p.enter()
	defer p.leave()
	start := p.peek()
	var s Statement
	if start.kind == tWord {
		switch start.val {
		case "CREATE":
			s = p.parseCreate()
		case "DROP":
			s = p.parseDrop()
		case "ALTER":
			s = p.parseAlter()
		case "SHOW":
			s = p.parseShow()
		case "DESCRIBE", "DESC":
			p.next()
			d := &Describe{}
			d.Extended = p.acceptWord("EXTENDED")
			d.Name = p.compoundIdent()
			s = d
		case "USE":
			p.next()
			u := &Use{}
			u.Catalog = p.acceptWord("CATALOG")
			u.Name = p.compoundIdent()
			s = u
		case "SET":
			p.next()
			st := &Set{}
			if p.peek().kind == tString {
				st.HasKey = true
				st.Key = p.stringLit()
				p.expectPunct("=")
				st.Value = p.stringLit()
			} else if p.peek().kind != tEOF && !p.isPunct(";") {
				p.expected("a quoted key ('key' = 'value') or end of statement")
			}
			s = st
		case "RESET":
			p.next()
			r := &Reset{}
			if p.peek().kind == tString {
				r.HasKey = true
				r.Key = p.stringLit()
			} else if p.peek().kind != tEOF && !p.isPunct(";") {
				p.expected("a quoted key or end of statement")
			}
			s = r
		case "INSERT":
			s = p.parseInsert()
		case "EXECUTE":
			p.next()
			if p.isWord("STATEMENT") {
				s = p.parseStatementSet(false)
			} else if p.isWord("INSERT") {
				s = p.parseInsert()
			} else {
				p.expected("'STATEMENT SET' or 'INSERT'")
			}
		case "BEGIN":
			p.next()
			s = p.parseStatementSet(true)
		case "EXPLAIN":
			s = p.parseExplain()
		case "STOP":
			p.next()
			p.expectWord("JOB")
			sj := &StopJob{JobID: p.stringLit()}
			for p.isWord("WITH") {
				switch {
				case p.acceptWords("WITH", "SAVEPOINT"):
					sj.WithSavepoint = true
				case p.acceptWords("WITH", "DRAIN"):
					sj.WithDrain = true
				default:
					p.next()
					p.expected("'SAVEPOINT' or 'DRAIN'")
				}
			}
			s = sj
		case "SELECT", "WITH", "VALUES":
			s = &QueryStatement{Query: p.parseQuery()}
		case "MATCH_RECOGNIZE":
			p.failAt(start.pos, "MATCH_RECOGNIZE must follow a table in FROM")
		}
	} else if start.kind == tPunct && start.val == "(" {
		s = &QueryStatement{Query: p.parseQuery()}
	}
	if s == nil {
		p.expected("a statement")
	}
	b := s.base()
	b.At = start.pos
	b.Text = p.src[start.pos.Offset:p.prevEnd]
	return s
}

func (p *parser) parseCreate() Statement {
	p.expectWord("CREATE")
	orReplace := p.acceptWords("OR", "REPLACE")
	temporary := p.acceptWord("TEMPORARY")
	system := temporary && p.acceptWord("SYSTEM")
	t := p.peek()
	if t.kind != tWord {
		p.expected("'TABLE', 'VIEW', 'FUNCTION', 'DATABASE' or 'CATALOG'")
	}
	if system && t.val != "FUNCTION" {
		p.expected("'FUNCTION'")
	}
	if orReplace && t.val != "TABLE" {
		p.expected("'TABLE'")
	}
	switch t.val {
	case "TABLE":
		p.next()
		return p.parseCreateTable(orReplace, temporary)
	case "VIEW":
		p.next()
		v := &CreateView{Temporary: temporary}
		v.IfNotExists = p.acceptWords("IF", "NOT", "EXISTS")
		v.Name = p.compoundIdent()
		if p.isPunct("(") {
			v.Columns = p.parenIdentList()
		}
		if p.acceptWord("COMMENT") {
			v.Comment = p.stringLit()
		}
		p.expectWord("AS")
		v.Query = p.parseQuery()
		return v
	case "FUNCTION":
		p.next()
		f := &CreateFunction{Temporary: temporary, System: system}
		f.IfNotExists = p.acceptWords("IF", "NOT", "EXISTS")
		f.Name = p.compoundIdent()
		p.expectWord("AS")
		f.Identifier = p.stringLit()
		if p.acceptWord("LANGUAGE") {
			t := p.peek()
			if t.kind != tWord {
				p.expected("a language name")
			}
			p.next()
			f.Language = t.val
		}
		if p.isWord("USING") {
			p.failAt(p.peek().pos, "CREATE FUNCTION ... USING JAR is not supported")
		}
		return f
	case "DATABASE":
		if temporary {
			p.expected("'TABLE', 'VIEW' or 'FUNCTION'")
		}
		p.next()
		d := &CreateDatabase{}
		d.IfNotExists = p.acceptWords("IF", "NOT", "EXISTS")
		d.Name = p.compoundIdent()
		if p.acceptWord("COMMENT") {
			d.Comment = p.stringLit()
		}
		if p.acceptWord("WITH") {
			d.Options = p.parseProperties()
		}
		return d
	case "CATALOG":
		if temporary {
			p.expected("'TABLE', 'VIEW' or 'FUNCTION'")
		}
		p.next()
		c := &CreateCatalog{}
		c.IfNotExists = p.acceptWords("IF", "NOT", "EXISTS")
		c.Name = p.ident()
		if p.acceptWord("COMMENT") {
			c.Comment = p.stringLit()
		}
		p.expectWord("WITH")
		c.Options = p.parseProperties()
		return c
	}
	p.expected("'TABLE', 'VIEW', 'FUNCTION', 'DATABASE' or 'CATALOG'")
	return nil
}

// parseProperties parses ('k' = 'v', ...).
func (p *parser) parseProperties() []*Property {
	p.expectPunct("(")
	var out []*Property
	if p.acceptPunct(")") {
		return out
	}
	for {
		pos := p.peek().pos
		k := p.stringLit()
		p.expectPunct("=")
		v := p.stringLit()
		out = append(out, &Property{node: node{pos}, Key: k, Value: v})
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(")")
	return out
}

func (p *parser) parseCreateTable(orReplace, temporary bool) *CreateTable {
	ct := &CreateTable{OrReplace: orReplace, Temporary: temporary}
	ct.IfNotExists = p.acceptWords("IF", "NOT", "EXISTS")
	ct.Name = p.compoundIdent()
	if p.isPunct("(") {
		p.next()
		for {
			p.parseSchemaElement(&ct.Schema, false)
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
	}
	if p.acceptWord("COMMENT") {
		ct.Comment = p.stringLit()
	}
	if p.acceptWord("PARTITIONED") {
		p.expectWord("BY")
		ct.PartitionBy = p.parenIdentList()
	}
	if p.acceptWord("WITH") {
		ct.Options = p.parseProperties()
	}
	if p.isWord("LIKE") {
		like := &TableLike{node: node{p.next().pos}}
		like.Name = p.compoundIdent()
		if p.acceptPunct("(") {
			for {
				t := p.peek()
				if t.kind != tWord || (t.val != "INCLUDING" && t.val != "EXCLUDING" && t.val != "OVERWRITING") {
					p.expected("'INCLUDING', 'EXCLUDING' or 'OVERWRITING'")
				}
				p.next()
				f := p.peek()
				switch f.val {
				case "ALL", "CONSTRAINTS", "PARTITIONS", "GENERATED", "OPTIONS", "WATERMARKS", "METADATA":
				default:
					p.expected("one of ALL, CONSTRAINTS, PARTITIONS, GENERATED, OPTIONS, WATERMARKS, METADATA")
				}
				if f.kind != tWord {
					p.expected("a LIKE option")
				}
				p.next()
				like.Options = append(like.Options, LikeOption{Strategy: t.val, Feature: f.val})
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct(")")
		}
		ct.Like = like
	}
	if p.acceptWord("AS") {
		if ct.Like != nil {
			p.failAt(p.toks[p.i-1].pos, "CREATE TABLE ... AS SELECT cannot have a LIKE clause")
		}
		ct.AsQuery = p.parseQuery()
	}
	return ct
}

// parseSchemaElement parses a column, watermark or primary key into s. In
// ALTER TABLE, columns may end with FIRST or AFTER col.
func (p *parser) parseSchemaElement(s *TableSchema, alter bool) {
	t := p.peek()
	switch {
	case p.isWord("WATERMARK") && p.isWordAt(1, "FOR"):
		p.next()
		p.next()
		w := &Watermark{node: node{t.pos}}
		w.Column = p.compoundIdent()
		p.expectWord("AS")
		w.Expr = p.parseExpr()
		if s.Watermark != nil {
			p.failAt(t.pos, "a table can have only one WATERMARK")
		}
		s.Watermark = w
		return
	case p.isWord("PRIMARY") && p.isWordAt(1, "KEY"),
		p.isWord("CONSTRAINT") && p.isIdentAt(1) && p.isWordAt(2, "PRIMARY"):
		pk := &PrimaryKey{node: node{t.pos}}
		if p.acceptWord("CONSTRAINT") {
			pk.Name = p.ident()
		}
		p.expectWord("PRIMARY")
		p.expectWord("KEY")
		pk.Columns = p.parenIdentList()
		pk.NotEnforced = p.acceptWords("NOT", "ENFORCED")
		p.setPrimaryKey(s, pk)
		return
	case p.isWord("UNIQUE"), p.isWord("CONSTRAINT") && p.isIdentAt(1) && p.isWordAt(2, "UNIQUE"):
		p.failAt(t.pos, "UNIQUE constraints are not supported")
	}
	col := &ColumnDef{node: node{t.pos}}
	col.Name = p.ident()
	if p.acceptWord("AS") {
		col.Kind = ComputedColumn
		col.Expr = p.parseExpr()
	} else {
		col.Type = p.parseType()
		if p.acceptWord("METADATA") {
			col.Kind = MetadataColumn
			if p.acceptWord("FROM") {
				col.MetadataKey = p.stringLit()
			}
			col.Virtual = p.acceptWord("VIRTUAL")
		}
		if p.isWord("PRIMARY") || p.isWord("CONSTRAINT") {
			pk := &PrimaryKey{node: node{p.peek().pos}, Columns: []string{col.Name}}
			if p.acceptWord("CONSTRAINT") {
				pk.Name = p.ident()
			}
			p.expectWord("PRIMARY")
			p.expectWord("KEY")
			pk.NotEnforced = p.acceptWords("NOT", "ENFORCED")
			p.setPrimaryKey(s, pk)
		}
	}
	if p.acceptWord("COMMENT") {
		col.Comment = p.stringLit()
	}
	if alter {
		if p.acceptWord("FIRST") {
			col.First = true
		} else if p.acceptWord("AFTER") {
			col.After = p.ident()
		}
	}
	s.Columns = append(s.Columns, col)
}

func (p *parser) setPrimaryKey(s *TableSchema, pk *PrimaryKey) {
	if s.PrimaryKey != nil {
		p.failAt(pk.At, "a table can have only one PRIMARY KEY")
	}
	s.PrimaryKey = pk
}

func (p *parser) parseDrop() Statement {
	p.expectWord("DROP")
	d := &Drop{}
	d.Temporary = p.acceptWord("TEMPORARY")
	d.System = d.Temporary && p.acceptWord("SYSTEM")
	t := p.peek()
	switch {
	case t.kind == tWord && (t.val == "TABLE" || t.val == "VIEW" || t.val == "FUNCTION") && (!d.System || t.val == "FUNCTION"):
	case t.kind == tWord && (t.val == "DATABASE" || t.val == "CATALOG") && !d.Temporary:
	default:
		switch {
		case d.System:
			p.expected("'FUNCTION'")
		case d.Temporary:
			p.expected("'TABLE', 'VIEW', 'FUNCTION' or 'SYSTEM'")
		default:
			p.expected("'TABLE', 'VIEW', 'FUNCTION', 'DATABASE' or 'CATALOG'")
		}
	}
	p.next()
	d.Kind = ObjectKind(t.val)
	d.IfExists = p.acceptWords("IF", "EXISTS")
	d.Name = p.compoundIdent()
	if d.Kind == ObjDatabase {
		if p.acceptWord("CASCADE") {
			d.Cascade = true
		} else {
			p.acceptWord("RESTRICT")
		}
	}
	return d
}

func (p *parser) parseAlter() Statement {
	p.expectWord("ALTER")
	if p.acceptWord("VIEW") {
		v := &AlterView{Name: p.compoundIdent()}
		if p.acceptWord("RENAME") {
			p.expectWord("TO")
			v.NewName = p.compoundIdent()
		} else if p.acceptWord("AS") {
			v.Query = p.parseQuery()
		} else {
			p.expected("'RENAME' or 'AS'")
		}
		return v
	}
	if !p.acceptWord("TABLE") {
		p.expected("'TABLE' or 'VIEW'")
	}
	a := &AlterTable{}
	a.IfExists = p.acceptWords("IF", "EXISTS")
	a.Name = p.compoundIdent()
	t := p.peek()
	if t.kind != tWord {
		p.expected("'RENAME', 'SET', 'RESET', 'ADD', 'MODIFY' or 'DROP'")
	}
	switch t.val {
	case "RENAME":
		p.next()
		if p.acceptWord("TO") {
			a.Action = AlterRename
			a.NewName = p.compoundIdent()
		} else {
			a.Action = AlterRenameColumn
			a.Column = p.ident()
			p.expectWord("TO")
			a.NewColumn = p.ident()
		}
	case "SET":
		p.next()
		a.Action = AlterSet
		a.Options = p.parseProperties()
	case "RESET":
		p.next()
		a.Action = AlterReset
		p.expectPunct("(")
		for {
			a.Keys = append(a.Keys, p.stringLit())
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
	case "ADD", "MODIFY":
		p.next()
		a.Action = AlterTableAction(t.val)
		if p.acceptPunct("(") {
			for {
				p.parseSchemaElement(&a.Schema, true)
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct(")")
		} else {
			p.parseSchemaElement(&a.Schema, true)
		}
	case "DROP":
		p.next()
		switch {
		case p.acceptWords("PRIMARY", "KEY"):
			a.Action = AlterDropPrimaryKey
		case p.isWord("WATERMARK") && !p.isIdentAt(1) && !p.isPunctAt(1, "."):
			p.next()
			a.Action = AlterDropWatermark
		case p.isWord("CONSTRAINT") && p.isIdentAt(1):
			p.next()
			a.Action = AlterDropConstraint
			a.Constraint = p.ident()
		case p.isPunct("("):
			a.Action = AlterDropColumns
			a.Columns = p.parenIdentList()
		default:
			a.Action = AlterDropColumns
			a.Columns = []string{p.ident()}
		}
	default:
		p.expected("'RENAME', 'SET', 'RESET', 'ADD', 'MODIFY' or 'DROP'")
	}
	return a
}

func (p *parser) parseShow() Statement {
	p.expectWord("SHOW")
	s := &Show{}
	t := p.peek()
	if t.kind != tWord {
		p.expected("what to show")
	}
	fromAllowed, likeAllowed := false, false
	switch {
	case p.acceptWord("TABLES"):
		s.Kind, fromAllowed, likeAllowed = ShowTables, true, true
	case p.acceptWord("VIEWS"):
		s.Kind, fromAllowed, likeAllowed = ShowViews, true, true
	case p.acceptWord("FUNCTIONS"):
		s.Kind, fromAllowed, likeAllowed = ShowFunctions, true, true
	case p.acceptWords("USER", "FUNCTIONS"):
		s.Kind, fromAllowed, likeAllowed = ShowUserFunctions, true, true
	case p.acceptWord("DATABASES"):
		s.Kind, fromAllowed, likeAllowed = ShowDatabases, true, true
	case p.acceptWord("CATALOGS"):
		s.Kind, likeAllowed = ShowCatalogs, true
	case p.acceptWord("MODULES"):
		s.Kind = ShowModules
	case p.acceptWords("FULL", "MODULES"):
		s.Kind = ShowFullModules
	case p.acceptWord("JOBS"):
		s.Kind = ShowJobs
	case p.acceptWord("JOB"):
		s.Kind = ShowJob
		s.JobID = p.stringLit()
	case p.acceptWords("CURRENT", "CATALOG"):
		s.Kind = ShowCurrentCatalog
	case p.acceptWords("CURRENT", "DATABASE"):
		s.Kind = ShowCurrentDatabase
	case p.acceptWords("CREATE", "TABLE"):
		s.Kind = ShowCreateTable
		s.Name = p.compoundIdent()
	case p.acceptWords("CREATE", "VIEW"):
		s.Kind = ShowCreateView
		s.Name = p.compoundIdent()
	case p.acceptWord("COLUMNS"):
		s.Kind, likeAllowed = ShowColumns, true
		if !p.acceptWord("FROM") && !p.acceptWord("IN") {
			p.expected("'FROM' or 'IN'")
		}
		s.Name = p.compoundIdent()
	default:
		p.expected("one of TABLES, VIEWS, FUNCTIONS, USER FUNCTIONS, DATABASES, CATALOGS, MODULES, JOBS, JOB, CURRENT, CREATE, COLUMNS")
	}
	if fromAllowed && (p.acceptWord("FROM") || p.acceptWord("IN")) {
		s.Name = p.compoundIdent()
	}
	if likeAllowed {
		not := p.isWord("NOT") && (p.isWordAt(1, "LIKE") || p.isWordAt(1, "ILIKE"))
		if not {
			p.next()
		}
		if p.isWord("LIKE") || p.isWord("ILIKE") {
			ilike := p.next().val == "ILIKE"
			s.Like = &ShowLike{Not: not, ILike: ilike, Pattern: p.stringLit()}
		}
	}
	return s
}

func (p *parser) parseInsert() *Insert {
	p.expectWord("INSERT")
	ins := &Insert{}
	if p.acceptWord("OVERWRITE") {
		ins.Overwrite = true
	} else {
		p.expectWord("INTO")
	}
	ins.Table = p.compoundIdent()
	if p.peek().kind == tHintStart {
		ins.Hints = p.parseHints()
	}
	if p.acceptWord("PARTITION") {
		p.expectPunct("(")
		for {
			pos := p.peek().pos
			col := p.ident()
			p.expectPunct("=")
			v := p.parseExpr()
			ins.Partition = append(ins.Partition, &PartitionValue{node: node{pos}, Column: col, Value: v})
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
	}
	if p.isPunct("(") && !p.startsQuery(1) {
		ins.Columns = p.parenIdentList()
	}
	ins.Query = p.parseQuery()
	return ins
}

// startsQuery reports whether the token n ahead, after any '(', starts a
// query.
func (p *parser) startsQuery(n int) bool {
	// Beyond maxDepth parentheses the nesting check fails anyway; stopping
	// there keeps hostile input from making this scan quadratic.
	for i := 0; p.isPunctAt(n, "(") && i < maxDepth; i++ {
		n++
	}
	t := p.peekAt(n)
	return t.kind == tWord && (t.val == "SELECT" || t.val == "WITH" || t.val == "VALUES")
}

// parseStatementSet parses STATEMENT SET BEGIN insert; ... END (clientForm:
// STATEMENT SET; insert; ... END, after BEGIN).
func (p *parser) parseStatementSet(clientForm bool) *StatementSet {
	p.expectWord("STATEMENT")
	p.expectWord("SET")
	if clientForm {
		p.expectPunct(";")
	} else {
		p.expectWord("BEGIN")
	}
	ss := &StatementSet{}
	for {
		for p.acceptPunct(";") {
		}
		if p.acceptWord("END") {
			break
		}
		if !p.isWord("INSERT") {
			p.expected("'INSERT' or 'END'")
		}
		ins := p.parseStatement().(*Insert)
		ss.Inserts = append(ss.Inserts, ins)
		if !p.isWord("END") {
			p.expectPunct(";")
		}
	}
	if len(ss.Inserts) == 0 {
		p.failAt(p.toks[p.i-1].pos, "a statement set must contain at least one INSERT")
	}
	return ss
}

var explainDetails = map[string]bool{"ESTIMATED_COST": true, "CHANGELOG_MODE": true, "JSON_EXECUTION_PLAN": true, "PLAN_ADVICE": true}

func (p *parser) parseExplain() *Explain {
	p.expectWord("EXPLAIN")
	e := &Explain{}
	if !p.acceptWords("PLAN", "FOR") {
		for p.peek().kind == tWord && explainDetails[p.peek().val] {
			e.Details = append(e.Details, p.next().val)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	start := p.peek()
	switch {
	case p.isWord("STATEMENT"):
		ss := p.parseStatementSet(false)
		ss.At = start.pos
		ss.Text = p.src[start.pos.Offset:p.prevEnd]
		e.Statement = ss
	case p.isWord("INSERT"), p.isWord("EXECUTE"), p.isWord("SELECT"), p.isWord("WITH"), p.isWord("VALUES"), p.isPunct("("):
		e.Statement = p.parseStatement()
	default:
		p.expected("a query, INSERT or STATEMENT SET")
	}
	return e
}

// parseHints parses /*+ NAME(...), ... */.
func (p *parser) parseHints() []*Hint {
	if p.peek().kind != tHintStart {
		p.expected("'/*+'")
	}
	p.next()
	var hints []*Hint
	for {
		t := p.peek()
		if t.kind != tWord && t.kind != tQIdent {
			p.expected("a hint name")
		}
		p.next()
		h := &Hint{node: node{t.pos}, Name: upper(t.val)}
		if t.kind == tWord {
			h.Name = t.val
		}
		if p.acceptPunct("(") {
			if p.peek().kind == tString && p.isPunctAt(1, "=") || p.isIdentAt(0) && p.isPunctAt(1, "=") {
				for {
					pos := p.peek().pos
					var k string
					if p.peek().kind == tString {
						k = p.stringLit()
					} else {
						k = p.ident()
					}
					p.expectPunct("=")
					v := p.stringLit()
					h.Options = append(h.Options, &Property{node: node{pos}, Key: k, Value: v})
					if !p.acceptPunct(",") {
						break
					}
				}
			} else if !p.isPunct(")") {
				for {
					if p.peek().kind == tString {
						h.Args = append(h.Args, p.stringLit())
					} else {
						h.Args = append(h.Args, strings.Join(p.compoundIdent().Parts, "."))
					}
					if !p.acceptPunct(",") {
						break
					}
				}
			}
			p.expectPunct(")")
		}
		hints = append(hints, h)
		if !p.acceptPunct(",") {
			break
		}
	}
	if p.peek().kind != tHintEnd {
		p.expected("'*/'")
	}
	p.next()
	return hints
}
