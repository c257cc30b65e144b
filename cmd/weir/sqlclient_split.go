package main

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// splitStatements cuts the client's input into the statements it
// completes and the rest, which is still being typed. A statement ends at
// a ';' outside string literals ('...'), quoted identifiers (`...`,
// "..."), and comments (-- to the end of the line, /* ... */), except in a
// statement set (EXECUTE STATEMENT SET BEGIN ... END; or BEGIN STATEMENT
// SET; ... END;), whose inner statements end with ';' too: it ends at the
// ';' after END. Statements that hold only space and comments are
// dropped, and so is such a rest.
func splitStatements(src string) (stmts []string, rest string) {
	var (
		start   int      // offset of the current statement
		content bool     // the current statement has more than space and comments
		words   []string // its first words, upper case, to spot a statement set
		last    string   // its last token: a word in upper case, or a punctuation mark
	)
	endStatement := func(end int) {
		if content {
			stmts = append(stmts, strings.TrimSpace(src[start:end]))
		}
		start, content, words, last = end, false, words[:0], ""
	}
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			nl := strings.IndexByte(src[i:], '\n')
			if nl < 0 {
				i = len(src)
			} else {
				i += nl + 1
			}
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				// An open comment: the statement goes on.
				return stmts, src[start:]
			}
			i += 2 + end + 2
		case c == '\'' || c == '`' || c == '"':
			end, ok := closingQuote(src, i)
			if !ok {
				return stmts, src[start:]
			}
			content, last = true, string(c)
			i = end
		case c == ';':
			if inStatementSet(words) && last != "END" {
				last = ";"
				i++
				continue
			}
			i++
			endStatement(i)
		case c < utf8.RuneSelf && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'):
			i++
		default:
			r, size := utf8.DecodeRuneInString(src[i:])
			if isWordRune(r) {
				j := i
				for j < len(src) {
					r, size := utf8.DecodeRuneInString(src[j:])
					if !isWordRune(r) {
						break
					}
					j += size
				}
				last = strings.ToUpper(src[i:j])
				if len(words) < 4 {
					words = append(words, last)
				}
				i = j
			} else if unicode.IsSpace(r) {
				i += size
				continue
			} else {
				last = string(r)
				i += size
			}
			content = true
		}
	}
	if !content {
		return stmts, ""
	}
	return stmts, src[start:]
}

// closingQuote returns the offset after the quote that closes the one at
// i; a doubled quote stands for one quote inside.
func closingQuote(src string, i int) (int, bool) {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		if src[j] == q {
			if j+1 < len(src) && src[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

func isWordRune(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// inStatementSet reports whether a statement's first words open a
// statement set, whose inner ';' do not end it.
func inStatementSet(words []string) bool {
	is := func(want ...string) bool {
		if len(words) < len(want) {
			return false
		}
		for i, w := range want {
			if words[i] != w {
				return false
			}
		}
		return true
	}
	return is("EXECUTE", "STATEMENT", "SET", "BEGIN") || is("BEGIN", "STATEMENT", "SET")
}

// oneLine puts a statement on one line for the history file, which holds
// a line an entry: runs of space outside quotes become one space and
// line comments go (joined to the next line they would swallow it).
func oneLine(stmt string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(stmt); {
		c := stmt[i]
		switch {
		case c == '-' && strings.HasPrefix(stmt[i:], "--"):
			nl := strings.IndexByte(stmt[i:], '\n')
			if nl < 0 {
				i = len(stmt)
			} else {
				i += nl
			}
			space = true
			continue
		case c == '\'' || c == '`' || c == '"':
			end, ok := closingQuote(stmt, i)
			if !ok {
				end = len(stmt)
			}
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteString(stmt[i:end])
			i = end
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			space = true
			i++
			continue
		case c == '/' && strings.HasPrefix(stmt[i:], "/*"):
			end := strings.Index(stmt[i+2:], "*/")
			if end < 0 {
				end = len(stmt)
			} else {
				end += i + 4
			}
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteString(strings.Join(strings.Fields(stmt[i:end]), " "))
			i = end
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteByte(c)
		i++
	}
	return b.String()
}
