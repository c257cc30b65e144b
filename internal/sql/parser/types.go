package parser

// parseType parses a data type with its nullability and postfix ARRAY /
// MULTISET constructors (INT NOT NULL ARRAY).
func (p *parser) parseType() *TypeName {
	p.enter()
	defer p.leave()
	t := p.parseBaseType()
	p.parseNullability(t)
	for p.isWord("ARRAY") || p.isWord("MULTISET") {
		tok := p.next()
		t = &TypeName{node: node{t.At}, Name: tok.val, Elem: t}
		p.parseNullability(t)
	}
	return t
}

func (p *parser) parseNullability(t *TypeName) {
	if p.acceptWords("NOT", "NULL") {
		t.NotNull = true
	} else {
		p.acceptWord("NULL")
	}
}

// typeParams says how many numeric parameters each type takes (min, max).
var typeParams = map[string][2]int{
	"BOOLEAN": {0, 0}, "TINYINT": {0, 0}, "SMALLINT": {0, 0}, "INT": {0, 0},
	"BIGINT": {0, 0}, "FLOAT": {0, 0}, "REAL": {0, 0}, "DOUBLE": {0, 0},
	"DECIMAL": {0, 2}, "CHAR": {0, 1}, "VARCHAR": {0, 1}, "STRING": {0, 0},
	"BINARY": {0, 1}, "VARBINARY": {0, 1}, "BYTES": {0, 0}, "DATE": {0, 0},
	"TIME": {0, 1}, "TIMESTAMP": {0, 1}, "TIMESTAMP_LTZ": {0, 1},
}

var typeSynonyms = map[string]string{
	"INTEGER": "INT", "DEC": "DECIMAL", "NUMERIC": "DECIMAL", "CHARACTER": "CHAR",
}

func (p *parser) parseBaseType() *TypeName {
	tok := p.peek()
	if tok.kind != tWord {
		p.expected("a data type")
	}
	name := tok.val
	if s, ok := typeSynonyms[name]; ok {
		name = s
	}
	t := &TypeName{node: node{tok.pos}, Name: name}
	switch name {
	case "ARRAY", "MULTISET":
		p.next()
		p.expectPunct("<")
		t.Elem = p.parseType()
		p.expectPunct(">")
		return t
	case "MAP":
		p.next()
		p.expectPunct("<")
		t.Key = p.parseType()
		p.expectPunct(",")
		t.Value = p.parseType()
		p.expectPunct(">")
		return t
	case "ROW":
		p.next()
		switch {
		case p.isPunct("<>"):
			p.next()
			t.Fields = []*RowField{}
		case p.isPunct("<"):
			p.next()
			t.Fields = p.parseRowFields(">")
		case p.isPunct("("):
			p.next()
			t.Fields = p.parseRowFields(")")
		default:
			p.expected("'<' or '('")
		}
		return t
	case "RAW":
		p.next()
		p.expectPunct("(")
		t.RawArgs = []string{p.stringLit()}
		if p.acceptPunct(",") {
			t.RawArgs = append(t.RawArgs, p.stringLit())
		}
		p.expectPunct(")")
		return t
	case "INTERVAL":
		p.next()
		q := p.parseIntervalQualifier()
		t.Interval = &q
		return t
	case "DOUBLE":
		p.next()
		p.acceptWord("PRECISION")
		return t
	}
	limits, ok := typeParams[name]
	if !ok {
		p.expected("a data type")
	}
	p.next()
	if name == "CHAR" && p.acceptWord("VARYING") {
		t.Name = "VARCHAR"
	}
	if name == "BINARY" && p.acceptWord("VARYING") {
		t.Name = "VARBINARY"
	}
	if limits[1] > 0 && p.isPunct("(") {
		p.next()
		for {
			t.Params = append(t.Params, p.intLit())
			if len(t.Params) == limits[1] || !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
	}
	switch name {
	case "TIME":
		if p.isWord("WITH") && p.isWordAt(1, "LOCAL") {
			p.failAt(p.peek().pos, "TIME WITH LOCAL TIME ZONE is not supported")
		}
		p.acceptWords("WITHOUT", "TIME", "ZONE")
	case "TIMESTAMP":
		if p.acceptWords("WITH", "LOCAL", "TIME", "ZONE") {
			t.Name = "TIMESTAMP_LTZ"
		} else if p.isWord("WITH") && p.isWordAt(1, "TIME") {
			p.failAt(p.peek().pos, "TIMESTAMP WITH TIME ZONE is not supported; use TIMESTAMP WITH LOCAL TIME ZONE or TIMESTAMP_LTZ")
		} else {
			p.acceptWords("WITHOUT", "TIME", "ZONE")
		}
	}
	return t
}

// parseRowFields parses name TYPE ['description'], ... up to the closer.
func (p *parser) parseRowFields(closer string) []*RowField {
	fields := []*RowField{}
	if p.acceptPunct(closer) {
		return fields
	}
	for {
		f := &RowField{node: node{p.peek().pos}}
		f.Name = p.ident()
		f.Type = p.parseType()
		if p.peek().kind == tString {
			f.Description = p.stringLit()
		}
		fields = append(fields, f)
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(closer)
	return fields
}
