package types

import (
	"strconv"
	"strings"
	"unicode"
)

// ParseDataType parses a type in Flink's SQL syntax, including everything
// String prints, so that types round-trip through text (a persisted
// catalog): INT, INTEGER NOT NULL, DECIMAL(10, 2), DEC, NUMERIC, STRING,
// VARCHAR(n), CHAR, BYTES, TIMESTAMP(3), TIMESTAMP(3) WITH LOCAL TIME ZONE,
// TIMESTAMP_LTZ(3), TIMESTAMP(3) *ROWTIME*, INTERVAL DAY(2) TO SECOND(3),
// ARRAY<T>, MAP<K, V>, MULTISET<T>, ROW<`a` INT, b STRING> and ROW(a INT).
// Errors say what was expected at which offset.
func ParseDataType(s string) (DataType, error) {
	p := &typeParser{s: s}
	t, err := p.parse(0)
	if err != nil {
		return DataType{}, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return DataType{}, p.errf("unexpected %q after the type", p.rest())
	}
	return t, nil
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) errf(format string, args ...any) error {
	return errorf("type %q, offset %d: "+format, append([]any{p.s, p.i}, args...)...)
}

func (p *typeParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *typeParser) skipSpace() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

// word reads an identifier-like keyword (letters, digits, _), upper-cased.
func (p *typeParser) word() string {
	p.skipSpace()
	j := p.i
	for j < len(p.s) && (p.s[j] == '_' || p.s[j] < 0x80 && (unicode.IsLetter(rune(p.s[j])) || unicode.IsDigit(rune(p.s[j])))) {
		j++
	}
	w := strings.ToUpper(p.s[p.i:j])
	p.i = j
	return w
}

func (p *typeParser) peekWord() string {
	save := p.i
	w := p.word()
	p.i = save
	return w
}

func (p *typeParser) accept(c byte) bool {
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *typeParser) expect(c byte) error {
	if !p.accept(c) {
		return p.errf("expected %q", string(c))
	}
	return nil
}

func (p *typeParser) acceptWords(ws ...string) bool {
	save := p.i
	for _, w := range ws {
		if p.word() != w {
			p.i = save
			return false
		}
	}
	return true
}

func (p *typeParser) int() (int, error) {
	p.skipSpace()
	j := p.i
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(p.s[p.i:j])
	if err != nil || j-p.i > 10 {
		return 0, p.errf("expected a number")
	}
	p.i = j
	return n, nil
}

// optParams reads an optional (a[, b]) list.
func (p *typeParser) optParams(max int) ([]int, error) {
	if !p.accept('(') {
		return nil, nil
	}
	var ns []int
	for {
		n, err := p.int()
		if err != nil {
			return nil, err
		}
		ns = append(ns, n)
		if !p.accept(',') {
			break
		}
	}
	if len(ns) > max {
		return nil, p.errf("too many parameters")
	}
	return ns, p.expect(')')
}

func (p *typeParser) fieldName() (string, error) {
	p.skipSpace()
	if p.accept('`') {
		var b strings.Builder
		for p.i < len(p.s) {
			c := p.s[p.i]
			p.i++
			if c == '`' {
				if p.i < len(p.s) && p.s[p.i] == '`' {
					b.WriteByte('`')
					p.i++
					continue
				}
				return b.String(), nil
			}
			b.WriteByte(c)
		}
		return "", p.errf("unterminated `name`")
	}
	save := p.i
	w := p.word()
	if w == "" {
		return "", p.errf("expected a field name")
	}
	return p.s[save:p.i][len(p.s[save:p.i])-len(w):], nil
}

func (p *typeParser) parse(depth int) (DataType, error) {
	if depth > 100 {
		return DataType{}, p.errf("type nested too deeply")
	}
	start := p.i
	w := p.word()
	var t DataType
	param := func(def int, max int) (int, error) {
		ns, err := p.optParams(max)
		if err != nil || len(ns) == 0 {
			return def, err
		}
		return ns[0], nil
	}
	var err error
	switch w {
	case "BOOLEAN", "BOOL":
		t = Boolean()
	case "TINYINT":
		t = TinyInt()
	case "SMALLINT":
		t = SmallInt()
	case "INT", "INTEGER":
		t = Int()
	case "BIGINT":
		t = BigInt()
	case "FLOAT", "REAL":
		t = Float()
	case "DOUBLE":
		p.acceptWords("PRECISION")
		t = Double()
	case "DECIMAL", "DEC", "NUMERIC":
		ns, err2 := p.optParams(2)
		if err2 != nil {
			return t, err2
		}
		t = DecimalType(DefaultDecimalPrec, 0)
		if len(ns) > 0 {
			t.Precision = ns[0]
		}
		if len(ns) > 1 {
			t.Scale = ns[1]
		}
	case "STRING":
		t = String()
	case "BYTES":
		t = Bytes()
	case "CHAR", "CHARACTER":
		if p.acceptWords("VARYING") {
			n, err2 := param(1, 1)
			t, err = VarChar(n), err2
			break
		}
		n, err2 := param(1, 1)
		t, err = Char(n), err2
	case "VARCHAR":
		n, err2 := param(1, 1)
		t, err = VarChar(n), err2
	case "BINARY":
		if p.acceptWords("VARYING") {
			n, err2 := param(1, 1)
			t, err = VarBinary(n), err2
			break
		}
		n, err2 := param(1, 1)
		t, err = Binary(n), err2
	case "VARBINARY":
		n, err2 := param(1, 1)
		t, err = VarBinary(n), err2
	case "DATE":
		t = DateType()
	case "TIME":
		n, err2 := param(0, 1)
		t, err = TimeType(n), err2
		p.acceptWords("WITHOUT", "TIME", "ZONE")
	case "TIMESTAMP":
		n, err2 := param(DefaultTimestampP, 1)
		if err2 != nil {
			return t, err2
		}
		switch {
		case p.acceptWords("WITH", "LOCAL", "TIME", "ZONE"):
			t = TimestampLTZType(n)
		case p.acceptWords("WITHOUT", "TIME", "ZONE"):
			t = TimestampType(n)
		case p.peekWord() == "WITH":
			return t, p.errf("TIMESTAMP WITH TIME ZONE is not supported")
		default:
			t = TimestampType(n)
		}
	case "TIMESTAMP_LTZ":
		n, err2 := param(DefaultTimestampP, 1)
		t, err = TimestampLTZType(n), err2
	case "INTERVAL":
		t, err = p.interval()
	case "ARRAY", "MULTISET":
		if err := p.expect('<'); err != nil {
			return t, err
		}
		e, err2 := p.parse(depth + 1)
		if err2 != nil {
			return t, err2
		}
		if err := p.expect('>'); err != nil {
			return t, err
		}
		if w == "ARRAY" {
			t = Array(e)
		} else {
			t = Multiset(e)
		}
	case "MAP":
		if err := p.expect('<'); err != nil {
			return t, err
		}
		k, err2 := p.parse(depth + 1)
		if err2 != nil {
			return t, err2
		}
		if err := p.expect(','); err != nil {
			return t, err
		}
		v, err2 := p.parse(depth + 1)
		if err2 != nil {
			return t, err2
		}
		if err := p.expect('>'); err != nil {
			return t, err
		}
		t = MapType(k, v)
	case "ROW":
		close := byte('>')
		if p.accept('(') {
			close = ')'
		} else if err := p.expect('<'); err != nil {
			return t, err
		}
		var fs []Field
		if !p.accept(close) {
			for {
				name, err2 := p.fieldName()
				if err2 != nil {
					return t, err2
				}
				ft, err2 := p.parse(depth + 1)
				if err2 != nil {
					return t, err2
				}
				p.skipSpace()
				if strings.HasPrefix(p.s[p.i:], "'") { // a field description: skip it
					end := strings.IndexByte(p.s[p.i+1:], '\'')
					if end < 0 {
						return t, p.errf("unterminated field description")
					}
					p.i += end + 2
				}
				fs = append(fs, Field{Name: name, Type: ft})
				if p.accept(close) {
					break
				}
				if err := p.expect(','); err != nil {
					return t, err
				}
			}
		}
		t = RowType(fs...)
	case "NULL":
		t = Null()
	case "":
		p.i = start
		return t, p.errf("expected a type name")
	default:
		p.i = start
		return t, p.errf("unknown type %s", w)
	}
	if err != nil {
		return t, err
	}
	// Suffixes: T ARRAY / T MULTISET (SQL-standard collection syntax),
	// time attribute markers and NOT NULL / NULL.
	for {
		p.skipSpace()
		switch {
		case strings.HasPrefix(p.s[p.i:], "*ROWTIME*"):
			p.i += len("*ROWTIME*")
			t.TimeAttr = TimeAttrRowtime
			continue
		case strings.HasPrefix(p.s[p.i:], "*PROCTIME*"):
			p.i += len("*PROCTIME*")
			t.TimeAttr = TimeAttrProctime
			continue
		case p.acceptWords("NOT", "NULL"):
			t.notNull = true
			continue
		case p.peekWord() == "NULL":
			p.word()
			t.notNull = false
			continue
		case p.peekWord() == "ARRAY":
			p.word()
			t = Array(t)
			continue
		case p.peekWord() == "MULTISET":
			p.word()
			t = Multiset(t)
			continue
		}
		break
	}
	if err := t.Validate(); err != nil {
		return DataType{}, p.errf("%v", err)
	}
	return t, nil
}

func (p *typeParser) interval() (DataType, error) {
	unit := p.word()
	lead := 2
	frac := 6
	switch unit {
	case "YEAR", "DAY":
		if ns, err := p.optParams(1); err != nil {
			return DataType{}, err
		} else if len(ns) == 1 {
			lead = ns[0]
		}
	case "SECOND":
		if ns, err := p.optParams(1); err != nil {
			return DataType{}, err
		} else if len(ns) == 1 {
			frac = ns[0]
		}
		return Interval(ResSecond, lead, frac), nil
	case "MONTH":
		return Interval(ResMonth, lead, frac), nil
	case "HOUR", "MINUTE":
	default:
		return DataType{}, p.errf("expected YEAR, MONTH, DAY, HOUR, MINUTE or SECOND after INTERVAL")
	}
	if !p.acceptWords("TO") {
		switch unit {
		case "YEAR":
			return Interval(ResYear, lead, frac), nil
		case "DAY":
			return Interval(ResDay, lead, frac), nil
		case "HOUR":
			return Interval(ResHour, lead, frac), nil
		}
		return Interval(ResMinute, lead, frac), nil
	}
	to := p.word()
	if to == "SECOND" {
		if ns, err := p.optParams(1); err != nil {
			return DataType{}, err
		} else if len(ns) == 1 {
			frac = ns[0]
		}
	}
	res := map[[2]string]IntervalRes{
		{"YEAR", "MONTH"}: ResYearToMonth, {"DAY", "HOUR"}: ResDayToHour, {"DAY", "MINUTE"}: ResDayToMinute,
		{"DAY", "SECOND"}: ResDayToSecond, {"HOUR", "MINUTE"}: ResHourToMinute, {"HOUR", "SECOND"}: ResHourToSecond,
		{"MINUTE", "SECOND"}: ResMinuteToSecond,
	}
	r, ok := res[[2]string{unit, to}]
	if !ok {
		return DataType{}, p.errf("INTERVAL %s TO %s is not a valid interval", unit, to)
	}
	return Interval(r, lead, frac), nil
}
