package functions

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/weirproject/weir/internal/sql/types"
)

// strFn resolves a function over string and integer parameters: kinds is a
// string of 's' (STRING) and 'i' (BIGINT-readable integer) per parameter.
func strFn(kinds string, result types.DataType, fn EvalFunc) Resolver {
	return func(args []types.DataType) (*Scalar, error) {
		if len(args) != len(kinds) {
			return nil, nil
		}
		params := make([]types.DataType, len(args))
		for i, k := range kinds {
			switch k {
			case 's':
				if !isString(args[i]) {
					return nil, nil
				}
				params[i] = tString
			case 'i':
				if !isIntegral(args[i]) {
					return nil, nil
				}
				params[i] = args[i]
			case 'b':
				if !args[i].Kind.IsBinaryString() && args[i].Kind != types.KindNull {
					return nil, nil
				}
				params[i] = tBytes
			}
		}
		return bind(args, params, result, true, fn), nil
	}
}

// runeIndex returns the byte offset of the n-th code point (0-based),
// clamped to len(s).
func runeIndex(s string, n int) int {
	if n <= 0 {
		return 0
	}
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return i
}

// substringSQL is SUBSTRING(s FROM pos [FOR len]) on code points, as
// Flink's BinaryStringData.substringSQL: pos 1 is the first character, 0 is
// treated as 1, a negative pos counts from the end.
func substringSQL(s string, pos, length int64, hasLen bool) string {
	n := int64(utf8.RuneCountInString(s))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := n
	if hasLen {
		if length < 0 {
			return ""
		}
		end = start + length
	}
	if start < 0 {
		start = 0
	}
	if end > n {
		end = n
	}
	if start >= end {
		return ""
	}
	return s[runeIndex(s, int(start)):runeIndex(s, int(end))]
}

func positionOf(sub, s string, from int) int32 {
	// from is the 1-based code point to start at.
	if from < 1 {
		return 0
	}
	off := runeIndex(s, from-1)
	if off > len(s) {
		return 0
	}
	i := strings.Index(s[off:], sub)
	if i < 0 {
		return 0
	}
	return int32(from + utf8.RuneCountInString(s[off:off+i]))
}

func trimChars(s, chars string, left, right bool) string {
	if left {
		s = strings.TrimLeft(s, chars)
	}
	if right {
		s = strings.TrimRight(s, chars)
	}
	return s
}

// regexCache caches compiled patterns: functions get the same (usually
// literal) pattern on every row. It is safe for concurrent use.
var regexCache sync.Map

func compileRegex(p string) (*regexp.Regexp, error) {
	if re, ok := regexCache.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	regexCache.Store(p, re)
	return re, nil
}

// javaReplacement turns a Java replaceAll replacement ($1, \$) into Go's.
func javaReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case c == '$':
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// maxPadLength bounds LPAD/RPAD results so that a bad length cannot make
// one row allocate gigabytes.
const maxPadLength = 1 << 26

func pad(s string, n int64, p string, left bool) any {
	if n < 0 || p == "" || n > maxPadLength {
		return nil
	}
	cnt := int64(utf8.RuneCountInString(s))
	if n <= cnt {
		return s[:runeIndex(s, int(n))]
	}
	need := n - cnt
	pr := []rune(p)
	var b strings.Builder
	for i := int64(0); i < need; i++ {
		b.WriteRune(pr[i%int64(len(pr))])
	}
	if left {
		return b.String() + s
	}
	return s + b.String()
}

func decodeCharset(b []byte, cs string) (string, error) {
	switch strings.ToUpper(cs) {
	case "UTF-8", "UTF8":
		return string(b), nil
	case "US-ASCII", "ASCII", "ISO-8859-1", "LATIN1":
		r := make([]rune, len(b))
		for i, c := range b {
			if c > 127 && strings.HasPrefix(strings.ToUpper(cs), "US") || c > 127 && strings.ToUpper(cs) == "ASCII" {
				r[i] = utf8.RuneError
			} else {
				r[i] = rune(c)
			}
		}
		return string(r), nil
	case "UTF-16BE", "UTF-16LE", "UTF-16":
		le := strings.ToUpper(cs) == "UTF-16LE"
		if strings.ToUpper(cs) == "UTF-16" && len(b) >= 2 {
			if b[0] == 0xFF && b[1] == 0xFE {
				le, b = true, b[2:]
			} else if b[0] == 0xFE && b[1] == 0xFF {
				b = b[2:]
			}
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			if le {
				u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
			} else {
				u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
			}
		}
		return string(utf16.Decode(u)), nil
	}
	return "", fmt.Errorf("unsupported charset %q (supported: US-ASCII, ISO-8859-1, UTF-8, UTF-16BE, UTF-16LE, UTF-16)", cs)
}

func encodeCharset(s, cs string) ([]byte, error) {
	switch strings.ToUpper(cs) {
	case "UTF-8", "UTF8":
		return []byte(s), nil
	case "US-ASCII", "ASCII", "ISO-8859-1", "LATIN1":
		limit := rune(255)
		if u := strings.ToUpper(cs); u == "US-ASCII" || u == "ASCII" {
			limit = 127
		}
		var out []byte
		for _, r := range s {
			if r > limit {
				out = append(out, '?')
			} else {
				out = append(out, byte(r))
			}
		}
		return out, nil
	case "UTF-16BE", "UTF-16LE", "UTF-16":
		u := utf16.Encode([]rune(s))
		var out []byte
		if strings.ToUpper(cs) == "UTF-16" {
			out = append(out, 0xFE, 0xFF)
		}
		for _, c := range u {
			if strings.ToUpper(cs) == "UTF-16LE" {
				out = append(out, byte(c), byte(c>>8))
			} else {
				out = append(out, byte(c>>8), byte(c))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported charset %q", cs)
}

func initcap(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start {
				b.WriteRune(unicode.ToUpper(r))
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
			start = false
		} else {
			b.WriteRune(r)
			start = true
		}
	}
	return b.String()
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func registerStrings(r *Registry) {
	intNN := tInt.NotNull()
	r.add("CHAR_LENGTH|CHARACTER_LENGTH", "$(<STRING>)", strFn("s", intNN, func(_ *Context, a []any) (any, error) {
		return int32(utf8.RuneCountInString(a[0].(string))), nil
	}))
	r.add("UPPER", "UPPER(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
		return strings.ToUpper(a[0].(string)), nil
	}))
	r.add("LOWER", "LOWER(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
		return strings.ToLower(a[0].(string)), nil
	}))
	// POSITION(sub IN s) is called as POSITION(sub, s).
	r.add("POSITION", "POSITION(<STRING>, <STRING>)", strFn("ss", intNN, func(_ *Context, a []any) (any, error) {
		return positionOf(a[0].(string), a[1].(string), 1), nil
	}))
	r.add("LOCATE", "LOCATE(<STRING>, <STRING>)", strFn("ss", intNN, func(_ *Context, a []any) (any, error) {
		return positionOf(a[0].(string), a[1].(string), 1), nil
	}))
	r.add("LOCATE", "LOCATE(<STRING>, <STRING>, <INTEGER>)", strFn("ssi", intNN, func(_ *Context, a []any) (any, error) {
		return positionOf(a[0].(string), a[1].(string), int(toInt64(a[2]))), nil
	}))
	r.add("INSTR", "INSTR(<STRING>, <STRING>)", strFn("ss", intNN, func(_ *Context, a []any) (any, error) {
		return positionOf(a[1].(string), a[0].(string), 1), nil
	}))
	// TRIM(s) trims spaces; TRIM(spec, chars, s) is TRIM([BOTH|LEADING|TRAILING] chars FROM s).
	r.add("TRIM", "TRIM(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
		return trimChars(a[0].(string), " ", true, true), nil
	}))
	r.add("TRIM", "TRIM(<'BOTH'|'LEADING'|'TRAILING'>, <STRING>, <STRING>)", strFn("sss", sNN, func(_ *Context, a []any) (any, error) {
		spec := strings.ToUpper(a[0].(string))
		if spec != "BOTH" && spec != "LEADING" && spec != "TRAILING" {
			return nil, fmt.Errorf("TRIM: unknown specification %q (want BOTH, LEADING or TRAILING)", a[0])
		}
		return trimChars(a[2].(string), a[1].(string), spec != "TRAILING", spec != "LEADING"), nil
	}))
	for _, t := range []struct {
		name        string
		left, right bool
	}{{"LTRIM", true, false}, {"RTRIM", false, true}, {"BTRIM", true, true}} {
		t := t
		r.add(t.name, "$(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
			return trimChars(a[0].(string), " ", t.left, t.right), nil
		}))
		r.add(t.name, "$(<STRING>, <STRING>)", strFn("ss", sNN, func(_ *Context, a []any) (any, error) {
			return trimChars(a[0].(string), a[1].(string), t.left, t.right), nil
		}))
	}
	r.add("REPEAT", "REPEAT(<STRING>, <INTEGER>)", strFn("si", sNN, func(_ *Context, a []any) (any, error) {
		n := toInt64(a[1])
		if n <= 0 {
			return "", nil
		}
		if int64(len(a[0].(string)))*n > 1<<30 {
			return nil, fmt.Errorf("REPEAT: result of %d × %d bytes is too large", n, len(a[0].(string)))
		}
		return strings.Repeat(a[0].(string), int(n)), nil
	}))
	r.add("REPLACE", "REPLACE(<STRING>, <STRING>, <STRING>)", strFn("sss", sNN, func(_ *Context, a []any) (any, error) {
		return strings.ReplaceAll(a[0].(string), a[1].(string), a[2].(string)), nil
	}))
	r.add("REGEXP", "REGEXP(<STRING>, <STRING>)", strFn("ss", tBool, func(_ *Context, a []any) (any, error) {
		re, err := compileRegex(a[1].(string))
		if err != nil {
			return nil, nil // Flink returns NULL for an invalid pattern
		}
		return re.MatchString(a[0].(string)), nil
	}))
	extract := func(_ *Context, a []any) (any, error) {
		re, err := compileRegex(a[1].(string))
		if err != nil {
			return nil, nil
		}
		idx := 0
		if len(a) > 2 {
			idx = int(toInt64(a[2]))
		}
		m := re.FindStringSubmatch(a[0].(string))
		if m == nil || idx < 0 || idx >= len(m) {
			return nil, nil
		}
		return m[idx], nil
	}
	r.add("REGEXP_EXTRACT", "REGEXP_EXTRACT(<STRING>, <STRING> [, <INTEGER>])", strFn("ss", tString.Nullable(), extract))
	r.add("REGEXP_EXTRACT", "", strFn("ssi", tString.Nullable(), extract))
	r.add("REGEXP_REPLACE", "REGEXP_REPLACE(<STRING>, <STRING>, <STRING>)", strFn("sss", tString.Nullable(), func(_ *Context, a []any) (any, error) {
		re, err := compileRegex(a[1].(string))
		if err != nil {
			return nil, nil
		}
		return re.ReplaceAllString(a[0].(string), javaReplacement(a[2].(string))), nil
	}))
	overlay := func(_ *Context, a []any) (any, error) {
		s, p := a[0].(string), a[1].(string)
		pos := toInt64(a[2])
		l := int64(utf8.RuneCountInString(p))
		if len(a) > 3 {
			l = toInt64(a[3])
		}
		return substringSQL(s, 1, pos-1, true) + p + substringSQL(s, pos+l, 0, false), nil
	}
	r.add("OVERLAY", "OVERLAY(<STRING>, <STRING>, <INTEGER> [, <INTEGER>])", strFn("ssi", sNN, overlay))
	r.add("OVERLAY", "", strFn("ssii", sNN, overlay))
	sub := func(_ *Context, a []any) (any, error) {
		if len(a) > 2 {
			return substringSQL(a[0].(string), toInt64(a[1]), toInt64(a[2]), true), nil
		}
		return substringSQL(a[0].(string), toInt64(a[1]), 0, false), nil
	}
	r.add("SUBSTRING|SUBSTR", "$(<STRING>, <INTEGER> [, <INTEGER>])", strFn("si", sNN, sub))
	r.add("SUBSTRING|SUBSTR", "", strFn("sii", sNN, sub))
	r.add("INITCAP", "INITCAP(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
		return initcap(a[0].(string)), nil
	}))
	r.add("CONCAT", "CONCAT(<STRING>...)", func(args []types.DataType) (*Scalar, error) {
		if len(args) == 0 {
			return nil, nil
		}
		params := make([]types.DataType, len(args))
		for i, a := range args {
			if !isString(a) {
				return nil, nil
			}
			params[i] = tString
		}
		return bind(args, params, sNN, true, func(_ *Context, a []any) (any, error) {
			var b strings.Builder
			for _, v := range a {
				b.WriteString(v.(string))
			}
			return b.String(), nil
		}), nil
	})
	r.add("CONCAT_WS", "CONCAT_WS(<STRING>, <STRING>...)", func(args []types.DataType) (*Scalar, error) {
		if len(args) < 2 {
			return nil, nil
		}
		params := make([]types.DataType, len(args))
		for i, a := range args {
			if !isString(a) {
				return nil, nil
			}
			params[i] = tString
		}
		s := bind(args, params, tString.WithNullable(args[0].IsNullable()), false, func(_ *Context, a []any) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			var parts []string
			for _, v := range a[1:] {
				if v != nil { // CONCAT_WS skips NULL arguments
					parts = append(parts, v.(string))
				}
			}
			return strings.Join(parts, a[0].(string)), nil
		})
		return s, nil
	})
	r.add("LPAD", "LPAD(<STRING>, <INTEGER>, <STRING>)", strFn("sis", tString.Nullable(), func(_ *Context, a []any) (any, error) {
		return pad(a[0].(string), toInt64(a[1]), a[2].(string), true), nil
	}))
	r.add("RPAD", "RPAD(<STRING>, <INTEGER>, <STRING>)", strFn("sis", tString.Nullable(), func(_ *Context, a []any) (any, error) {
		return pad(a[0].(string), toInt64(a[1]), a[2].(string), false), nil
	}))
	r.add("FROM_BASE64", "FROM_BASE64(<STRING>)", strFn("s", tString.Nullable(), func(_ *Context, a []any) (any, error) {
		b, err := base64.StdEncoding.DecodeString(a[0].(string))
		if err != nil {
			return nil, nil
		}
		return string(b), nil
	}))
	r.add("TO_BASE64", "TO_BASE64(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
		return base64.StdEncoding.EncodeToString([]byte(a[0].(string))), nil
	}))
	r.add("ASCII", "ASCII(<STRING>)", strFn("s", intNN, func(_ *Context, a []any) (any, error) {
		s := a[0].(string)
		if s == "" {
			return int32(0), nil
		}
		return int32(s[0]), nil
	}))
	r.add("CHR", "CHR(<INTEGER>)", strFn("i", tString.Nullable(), func(_ *Context, a []any) (any, error) {
		n := toInt64(a[0])
		if n < 0 {
			return nil, nil
		}
		return string(rune(n % 256)), nil
	}))
	r.add("DECODE", "DECODE(<BINARY>, <STRING>)", strFn("bs", sNN, func(_ *Context, a []any) (any, error) {
		return decodeCharset(a[0].([]byte), a[1].(string))
	}))
	r.add("ENCODE", "ENCODE(<STRING>, <STRING>)", strFn("ss", tBytes.NotNull(), func(_ *Context, a []any) (any, error) {
		return encodeCharset(a[0].(string), a[1].(string))
	}))
	r.add("LEFT", "LEFT(<STRING>, <INTEGER>)", strFn("si", sNN, func(_ *Context, a []any) (any, error) {
		n := toInt64(a[1])
		if n <= 0 {
			return "", nil
		}
		s := a[0].(string)
		return s[:runeIndex(s, int(min(n, int64(len(s)))))], nil
	}))
	r.add("RIGHT", "RIGHT(<STRING>, <INTEGER>)", strFn("si", sNN, func(_ *Context, a []any) (any, error) {
		n := toInt64(a[1])
		s := a[0].(string)
		cnt := int64(utf8.RuneCountInString(s))
		if n <= 0 {
			return "", nil
		}
		if n >= cnt {
			return s, nil
		}
		return s[runeIndex(s, int(cnt-n)):], nil
	}))
	r.add("REVERSE", "REVERSE(<STRING>)", strFn("s", sNN, func(_ *Context, a []any) (any, error) {
		return reverse(a[0].(string)), nil
	}))
	r.add("SPLIT_INDEX", "SPLIT_INDEX(<STRING>, <STRING>, <INTEGER>)", strFn("ssi", tString.Nullable(), func(_ *Context, a []any) (any, error) {
		idx := toInt64(a[2])
		sep := a[1].(string)
		if idx < 0 || sep == "" {
			return nil, nil
		}
		parts := strings.Split(a[0].(string), sep)
		if idx >= int64(len(parts)) {
			return nil, nil
		}
		return parts[idx], nil
	}))
	strMap := types.MapType(tString, tString)
	str2map := func(_ *Context, a []any) (any, error) {
		listSep, kvSep := ",", "="
		if len(a) > 1 {
			listSep, kvSep = a[1].(string), a[2].(string)
		}
		lre, err := compileRegex(listSep)
		if err != nil {
			return nil, fmt.Errorf("STR_TO_MAP: bad delimiter %q: %v", listSep, err)
		}
		kre, err := compileRegex(kvSep)
		if err != nil {
			return nil, fmt.Errorf("STR_TO_MAP: bad delimiter %q: %v", kvSep, err)
		}
		m := &types.Map{}
		index := map[string]int{}
		for _, kv := range lre.Split(a[0].(string), -1) {
			p := kre.Split(kv, 2)
			var v any
			if len(p) == 2 {
				v = p[1]
			}
			if i, ok := index[p[0]]; ok {
				m.Values[i] = v // a later duplicate key wins
				continue
			}
			index[p[0]] = len(m.Keys)
			m.Keys = append(m.Keys, p[0])
			m.Values = append(m.Values, v)
		}
		return m, nil
	}
	r.add("STR_TO_MAP", "STR_TO_MAP(<STRING> [, <STRING>, <STRING>])", strFn("s", strMap.NotNull(), str2map))
	r.add("STR_TO_MAP", "", strFn("sss", strMap.NotNull(), str2map))
	parse := func(_ *Context, a []any) (any, error) {
		u, err := url.Parse(a[0].(string))
		if err != nil {
			return nil, nil
		}
		part := strings.ToUpper(a[1].(string))
		var v string
		switch part {
		case "HOST":
			v = u.Hostname()
		case "PATH":
			v = u.EscapedPath()
		case "QUERY":
			if len(a) > 2 {
				vals, ok := u.Query()[a[2].(string)]
				if !ok || len(vals) == 0 {
					return nil, nil
				}
				return vals[0], nil
			}
			v = u.RawQuery
		case "REF":
			v = u.Fragment
		case "PROTOCOL":
			v = u.Scheme
		case "FILE":
			v = u.EscapedPath()
			if u.RawQuery != "" {
				v += "?" + u.RawQuery
			}
		case "AUTHORITY":
			v = u.Host
			if u.User != nil {
				v = u.User.String() + "@" + v
			}
		case "USERINFO":
			if u.User == nil {
				return nil, nil
			}
			v = u.User.String()
		default:
			return nil, nil
		}
		if v == "" {
			return nil, nil
		}
		return v, nil
	}
	r.add("PARSE_URL", "PARSE_URL(<STRING>, <STRING> [, <STRING>])", strFn("ss", tString.Nullable(), parse))
	r.add("PARSE_URL", "", strFn("sss", tString.Nullable(), parse))
}
