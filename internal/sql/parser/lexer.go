package parser

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is a syntax error at a position of the source.
type Error struct {
	Line   int
	Column int
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

type tokKind uint8

const (
	tEOF       tokKind = iota
	tWord              // unquoted identifier or keyword
	tQIdent            // `quoted identifier`
	tString            // 'string', _charset'string', U&'string'
	tBinString         // X'0aff'
	tInt               // 123
	tDecimal           // 1.5
	tApprox            // 1e5
	tPunct             // operators and punctuation
	tHintStart         // /*+
	tHintEnd           // */ closing a hint
)

type token struct {
	kind tokKind
	// val is the upper-cased word for tWord, the decoded value for tQIdent
	// and tString, the hex digits for tBinString, the operator for tPunct.
	val     string
	charset string
	pos     Pos
	end     int // byte offset just past the token
}

type lexer struct {
	src     string
	off     int
	line    int
	col     int
	toks    []token
	inHint  bool
	hintPos Pos
}

func (l *lexer) pos() Pos { return Pos{Line: l.line, Column: l.col, Offset: l.off} }

func (l *lexer) errAt(p Pos, format string, args ...any) *Error {
	return &Error{Line: p.Line, Column: p.Column, Offset: p.Offset, Msg: fmt.Sprintf(format, args...)}
}

// advance moves past n bytes, all of which are known to be on one line.
func (l *lexer) advanceASCII(n int) {
	l.off += n
	l.col += n
}

// advanceRune moves past one rune, tracking lines.
func (l *lexer) advanceRune() {
	r, size := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += size
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
}

func (l *lexer) peekByte(i int) byte {
	if l.off+i < len(l.src) {
		return l.src[l.off+i]
	}
	return 0
}

func isIdentStart(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80 && unicode.IsLetter(r)
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || r >= '0' && r <= '9' || r == '$' || r >= 0x80 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isHex(b byte) bool {
	return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

// lex splits src into tokens, ending with a tEOF token.
func lex(src string) ([]token, error) {
	// Nexmark's scripts average about 9 bytes a token, comments included;
	// sizing the slice up front saves most of the lexer's allocations.
	l := &lexer{src: src, line: 1, col: 1, toks: make([]token, 0, len(src)/8+16)}
	if err := l.run(); err != nil {
		return nil, err
	}
	return l.toks, nil
}

func (l *lexer) emit(kind tokKind, start Pos, val string) {
	l.toks = append(l.toks, token{kind: kind, val: val, pos: start, end: l.off})
}

func (l *lexer) run() error {
	for {
		if err := l.skipSpaceAndComments(); err != nil {
			return err
		}
		start := l.pos()
		if l.off >= len(l.src) {
			if l.inHint {
				return l.errAt(l.hintPos, "unterminated hint: missing '*/'")
			}
			l.toks = append(l.toks, token{kind: tEOF, pos: start, end: l.off})
			return nil
		}
		c := l.src[l.off]
		switch {
		case l.inHint && c == '*' && l.peekByte(1) == '/':
			l.advanceASCII(2)
			l.inHint = false
			l.emit(tHintEnd, start, "*/")
		case c == '\'':
			s, err := l.lexString(start)
			if err != nil {
				return err
			}
			l.emit(tString, start, s)
		case c == '`':
			if err := l.lexQuoted(start); err != nil {
				return err
			}
		case c == '"':
			return l.errAt(start, "double-quoted identifiers are not supported; quote identifiers with backquotes (`name`)")
		case isDigit(c) || c == '.' && isDigit(l.peekByte(1)):
			if err := l.lexNumber(start); err != nil {
				return err
			}
		case (c == 'x' || c == 'X') && l.peekByte(1) == '\'':
			l.advanceASCII(1)
			s, err := l.lexString(l.pos())
			if err != nil {
				return err
			}
			for i := 0; i < len(s); i++ {
				if !isHex(s[i]) {
					return l.errAt(start, "invalid binary literal: %q is not a hexadecimal digit", s[i])
				}
			}
			if len(s)%2 != 0 {
				return l.errAt(start, "invalid binary literal: odd number of hexadecimal digits")
			}
			l.emit(tBinString, start, s)
		case (c == 'u' || c == 'U') && l.peekByte(1) == '&' && l.peekByte(2) == '\'':
			l.advanceASCII(2)
			s, err := l.lexString(l.pos())
			if err != nil {
				return err
			}
			dec, err := decodeUnicodeEscapes(s)
			if err != nil {
				return l.errAt(start, "%s", err.Error())
			}
			l.emit(tString, start, dec)
		default:
			r, size := utf8.DecodeRuneInString(l.src[l.off:])
			if r == utf8.RuneError && size == 1 {
				return l.errAt(start, "invalid UTF-8 in input")
			}
			if isIdentStart(r) {
				l.lexWord(start)
				continue
			}
			if err := l.lexPunct(start); err != nil {
				return err
			}
		}
	}
}

func (l *lexer) skipSpaceAndComments() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.advanceASCII(1)
		case c == '\n':
			l.advanceRune()
		case c == '-' && l.peekByte(1) == '-':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advanceRune()
			}
		case c == '/' && l.peekByte(1) == '*' && !l.inHint:
			start := l.pos()
			if l.peekByte(2) == '+' {
				l.advanceASCII(3)
				l.inHint = true
				l.hintPos = start
				l.emit(tHintStart, start, "/*+")
				continue
			}
			l.advanceASCII(2)
			for {
				if l.off >= len(l.src) {
					return l.errAt(start, "unterminated comment: missing '*/'")
				}
				if l.src[l.off] == '*' && l.peekByte(1) == '/' {
					l.advanceASCII(2)
					break
				}
				l.advanceRune()
			}
		default:
			if c >= 0x80 {
				r, _ := utf8.DecodeRuneInString(l.src[l.off:])
				if unicode.IsSpace(r) {
					l.advanceRune()
					continue
				}
			}
			return nil
		}
	}
	return nil
}

// lexString reads a quoted string starting at the quote; a doubled quote
// inside stands for one quote.
func (l *lexer) lexString(start Pos) (string, error) {
	l.advanceASCII(1)
	var b strings.Builder
	from := l.off
	for {
		if l.off >= len(l.src) {
			return "", l.errAt(start, "unterminated string literal")
		}
		c := l.src[l.off]
		if c == '\'' {
			if l.peekByte(1) == '\'' {
				b.WriteString(l.src[from : l.off+1])
				l.advanceASCII(2)
				from = l.off
				continue
			}
			b.WriteString(l.src[from:l.off])
			l.advanceASCII(1)
			return b.String(), nil
		}
		l.advanceRune()
	}
}

func (l *lexer) lexQuoted(start Pos) error {
	l.advanceASCII(1)
	var b strings.Builder
	from := l.off
	for {
		if l.off >= len(l.src) {
			return l.errAt(start, "unterminated quoted identifier")
		}
		if l.src[l.off] == '`' {
			if l.peekByte(1) == '`' {
				b.WriteString(l.src[from : l.off+1])
				l.advanceASCII(2)
				from = l.off
				continue
			}
			b.WriteString(l.src[from:l.off])
			l.advanceASCII(1)
			if b.Len() == 0 {
				return l.errAt(start, "empty quoted identifier")
			}
			l.emit(tQIdent, start, b.String())
			return nil
		}
		l.advanceRune()
	}
}

func (l *lexer) lexNumber(start Pos) error {
	kind := tInt
	for isDigit(l.peekByte(0)) {
		l.advanceASCII(1)
	}
	if l.peekByte(0) == '.' {
		kind = tDecimal
		l.advanceASCII(1)
		for isDigit(l.peekByte(0)) {
			l.advanceASCII(1)
		}
	}
	if c := l.peekByte(0); c == 'e' || c == 'E' {
		kind = tApprox
		l.advanceASCII(1)
		if c := l.peekByte(0); c == '+' || c == '-' {
			l.advanceASCII(1)
		}
		if !isDigit(l.peekByte(0)) {
			return l.errAt(start, "invalid number %q: missing exponent digits", l.src[start.Offset:l.off])
		}
		for isDigit(l.peekByte(0)) {
			l.advanceASCII(1)
		}
	}
	if l.off < len(l.src) {
		r, _ := utf8.DecodeRuneInString(l.src[l.off:])
		if isIdentPart(r) {
			return l.errAt(start, "invalid number %q: a number must not be followed directly by a letter", l.src[start.Offset:l.off+utf8.RuneLen(r)])
		}
	}
	raw := l.src[start.Offset:l.off]
	l.emit(kind, start, raw)
	return nil
}

func (l *lexer) lexWord(start Pos) {
	for l.off < len(l.src) {
		r, size := utf8.DecodeRuneInString(l.src[l.off:])
		if !isIdentPart(r) {
			break
		}
		l.off += size
		l.col++
	}
	raw := l.src[start.Offset:l.off]
	// _charset'string'
	if raw[0] == '_' && len(raw) > 1 && l.peekByte(0) == '\'' {
		s, err := l.lexString(l.pos())
		if err == nil {
			l.toks = append(l.toks, token{kind: tString, val: s, charset: strings.ToUpper(raw[1:]), pos: start, end: l.off})
			return
		}
		// Leave the unterminated string for the next round to report.
	}
	l.emit(tWord, start, upper(raw))
}

// upper returns s in upper case, without allocating when it already is.
func upper(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 0x80 {
			return strings.ToUpper(s)
		}
	}
	return s
}

var puncts2 = []string{"<>", "!=", "<=", ">=", "||", "=>"}

func (l *lexer) lexPunct(start Pos) error {
	rest := l.src[l.off:]
	for _, p := range puncts2 {
		if strings.HasPrefix(rest, p) {
			l.advanceASCII(2)
			l.emit(tPunct, start, p)
			return nil
		}
	}
	// '$' ends a MATCH_RECOGNIZE pattern; "${" is an unsubstituted
	// template variable, reported as the unexpected character it is.
	if rest[0] == '$' && strings.HasPrefix(rest, "${") {
		return l.errAt(start, "unexpected character '$'")
	}
	switch c := rest[0]; c {
	case '(', ')', '[', ']', ',', ';', '.', '=', '<', '>', '+', '-', '*', '/', '%', '?',
		'{', '}', '|', '^', '$': // the last five: MATCH_RECOGNIZE patterns
		l.advanceASCII(1)
		l.emit(tPunct, start, rest[:1])
		return nil
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return l.errAt(start, "unexpected character %q", r)
}

// decodeUnicodeEscapes decodes the \XXXX and \+XXXXXX escapes of U&'...'.
func decodeUnicodeEscapes(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\\' {
			b.WriteByte('\\')
			i++
			continue
		}
		n := 4
		j := i + 1
		if j < len(s) && s[j] == '+' {
			n = 6
			j++
		}
		if j+n > len(s) {
			return "", fmt.Errorf("invalid unicode escape in U&'...' string")
		}
		var v rune
		for k := j; k < j+n; k++ {
			c := s[k]
			if !isHex(c) {
				return "", fmt.Errorf("invalid unicode escape in U&'...' string")
			}
			v = v*16 + rune(hexVal(c))
		}
		if !utf8.ValidRune(v) {
			return "", fmt.Errorf("invalid unicode code point in U&'...' string")
		}
		b.WriteRune(v)
		i = j + n - 1
	}
	return b.String(), nil
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}
