package functions

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/weirproject/weir/internal/sql/types"
)

// Java SimpleDateFormat / DateTimeFormatter patterns, as Flink's DATE_FORMAT,
// TO_TIMESTAMP, TO_DATE, FROM_UNIXTIME and UNIX_TIMESTAMP take them. The
// letters supported are y M d H h k K m s S a E D and quoted literals.

type fmtTok struct {
	letter byte // 0 for a literal
	n      int
	lit    string
}

func parseJavaPattern(p string) ([]fmtTok, error) {
	var toks []fmtTok
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			j := i + 1
			var lit strings.Builder
			for j < len(p) {
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						lit.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				lit.WriteByte(p[j])
				j++
			}
			if i+1 == j && j < len(p) { // '' is a quote
				lit.WriteByte('\'')
			}
			toks = append(toks, fmtTok{lit: lit.String()})
			i = j + 1
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			if !strings.ContainsRune("yMdHhkKmsSaEDuYn", rune(c)) {
				return nil, fmt.Errorf("unsupported date format letter %q in %q", c, p)
			}
			toks = append(toks, fmtTok{letter: c, n: j - i})
			i = j
		default:
			toks = append(toks, fmtTok{lit: string(c)})
			i++
		}
	}
	return toks, nil
}

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dayNames = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

func pad2(b []byte, v int64, n int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < n; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// formatJava renders a TIMESTAMP with a Java pattern.
func formatJava(ts types.Timestamp, pattern string) (string, error) {
	toks, err := parseJavaPattern(pattern)
	if err != nil {
		return "", err
	}
	d := ts.Date()
	y, mo, day := d.YMD()
	tod := int64(ts.TimeOfDay())
	h, mi, s, ns := tod/3600e9, tod/60e9%60, tod/1e9%60, tod%1e9
	var b []byte
	for _, t := range toks {
		switch t.letter {
		case 0:
			b = append(b, t.lit...)
		case 'y', 'u', 'Y':
			if t.n == 2 {
				b = pad2(b, int64(y%100), 2)
			} else {
				b = pad2(b, int64(y), t.n)
			}
		case 'M':
			switch {
			case t.n >= 4:
				b = append(b, monthNames[mo-1]...)
			case t.n == 3:
				b = append(b, monthNames[mo-1][:3]...)
			default:
				b = pad2(b, int64(mo), t.n)
			}
		case 'd':
			b = pad2(b, int64(day), t.n)
		case 'D':
			b = pad2(b, int64(d-types.MakeDate(y, 1, 1))+1, t.n)
		case 'H':
			b = pad2(b, h, t.n)
		case 'k':
			hh := h
			if hh == 0 {
				hh = 24
			}
			b = pad2(b, hh, t.n)
		case 'K':
			b = pad2(b, h%12, t.n)
		case 'h':
			hh := h % 12
			if hh == 0 {
				hh = 12
			}
			b = pad2(b, hh, t.n)
		case 'm':
			b = pad2(b, mi, t.n)
		case 's':
			b = pad2(b, s, t.n)
		case 'S', 'n':
			frac := fmt.Sprintf("%09d", ns)
			if t.n <= 9 {
				b = append(b, frac[:t.n]...)
			} else {
				b = append(b, frac...)
				b = append(b, strings.Repeat("0", t.n-9)...)
			}
		case 'a':
			if h < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'E':
			wd := (int(d)%7 + 7 + 3) % 7 // 1970-01-01 was a Thursday (index 3)
			if t.n >= 4 {
				b = append(b, dayNames[wd]...)
			} else {
				b = append(b, dayNames[wd][:3]...)
			}
		}
	}
	return string(b), nil
}

// parseJava parses s with a Java pattern into a TIMESTAMP. Numeric fields
// take up to their pattern width digits when followed by another numeric
// field and any number of digits otherwise (as SimpleDateFormat's lenient
// adjacent-value parsing). ok is false when s does not match.
func parseJava(s, pattern string) (types.Timestamp, bool) {
	toks, err := parseJavaPattern(pattern)
	if err != nil {
		return types.Timestamp{}, false
	}
	y, mo, d, h, mi, sec, ns := 1970, 1, 1, 0, 0, 0, 0
	pm, has12 := false, false
	i := 0
	for k, t := range toks {
		if t.letter == 0 {
			if !strings.HasPrefix(s[i:], t.lit) {
				return types.Timestamp{}, false
			}
			i += len(t.lit)
			continue
		}
		if t.letter == 'a' {
			switch {
			case strings.HasPrefix(strings.ToUpper(s[i:]), "AM"):
			case strings.HasPrefix(strings.ToUpper(s[i:]), "PM"):
				pm = true
			default:
				return types.Timestamp{}, false
			}
			i += 2
			continue
		}
		if t.letter == 'M' && t.n >= 3 || t.letter == 'E' {
			matched := false
			names := monthNames
			if t.letter == 'E' {
				names = dayNames
			}
			for idx, name := range names {
				for _, cand := range []string{name, name[:3]} {
					if strings.HasPrefix(strings.ToLower(s[i:]), strings.ToLower(cand)) {
						if t.letter == 'M' {
							mo = idx + 1
						}
						i += len(cand)
						matched = true
						break
					}
				}
				if matched {
					break
				}
			}
			if !matched {
				return types.Timestamp{}, false
			}
			continue
		}
		maxDigits := 10
		if k+1 < len(toks) && toks[k+1].letter != 0 && toks[k+1].letter != 'a' {
			maxDigits = t.n
		}
		if t.letter == 'S' {
			maxDigits = min(maxDigits, 9)
		}
		j := i
		for j < len(s) && j-i < maxDigits && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			return types.Timestamp{}, false
		}
		v, _ := strconv.Atoi(s[i:j])
		switch t.letter {
		case 'y', 'u', 'Y':
			y = v
			if t.n == 2 && j-i == 2 {
				y += 2000
			}
		case 'M':
			mo = v
		case 'd':
			d = v
		case 'D':
			mo, d = 1, v
		case 'H', 'k':
			h = v % 24
		case 'h', 'K':
			h, has12 = v%12, true
		case 'm':
			mi = v
		case 's':
			sec = v
		case 'S', 'n':
			digits := j - i
			for ; digits < 9; digits++ {
				v *= 10
			}
			ns = v
		}
		i = j
	}
	if i != len(s) {
		return types.Timestamp{}, false
	}
	if pm && has12 || pm && h < 12 {
		h += 12
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 || mi > 59 || sec > 59 || y > 9999 {
		return types.Timestamp{}, false
	}
	if day := types.MakeDate(y, mo, 1).AddMonths(1) - types.MakeDate(y, mo, 1); d > int(day) {
		return types.Timestamp{}, false
	}
	return types.MakeTimestamp(y, mo, d, h, mi, sec, ns), true
}
