package functions

import (
	"regexp"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
)

// likeReference translates a LIKE pattern (escape '\') into an anchored
// regular expression: an independent implementation to check matchLike.
func likeReference(p string) (*regexp.Regexp, bool) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\\':
			if i+1 >= len(rs) || !strings.ContainsRune(`%_\`, rs[i+1]) {
				return nil, false
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '%':
			b.WriteString(`.*`)
		case '_':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	return regexp.MustCompile(b.String()), true
}

// FuzzLike checks LIKE against the regexp translation on arbitrary text.
func FuzzLike(f *testing.F) {
	f.Add("abc", "a%c")
	f.Add("a_c", `a\_c`)
	f.Add("", "%%")
	f.Add("héllo wörld", "h_llo%w_rld")
	f.Fuzz(func(t *testing.T, s, p string) {
		if !utf8Valid(s) || !utf8Valid(p) {
			return
		}
		ref, ok := likeReference(p)
		got, _, err := call(t, "LIKE", S(s), S(p), S(`\`))
		if !ok {
			if err == nil {
				t.Fatalf("LIKE accepted the bad escape in %q", p)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q LIKE %q: %v", s, p, err)
		}
		if got != ref.MatchString(s) {
			t.Fatalf("%q LIKE %q = %v, regexp says %v", s, p, got, !got.(bool))
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// FuzzStringFunctions feeds arbitrary text to every function that parses
// a string argument (patterns, formats, JSON, paths, URLs, numbers): no
// panics, errors only as values.
func FuzzStringFunctions(f *testing.F) {
	f.Add("2020-04-15 08:05:00", "yyyy-MM-dd HH:mm:ss")
	f.Add(`{"a":[1,{"b":2}]}`, "$.a[1].b")
	f.Add("http://x.com/p?q=1#r", "QUERY")
	f.Add("a=1,b=2", "[")
	f.Add("abc", "(a|b)*")
	reg := Builtins()
	var two []*Scalar
	for _, name := range reg.Names() {
		s, err := reg.Lookup(name, []types.DataType{types.String(), types.String()})
		if err == nil {
			two = append(two, s)
		}
	}
	one := []string{"TO_TIMESTAMP", "TO_DATE", "UNIX_TIMESTAMP", "FROM_BASE64", "IS JSON", "IS_DECIMAL", "STR_TO_MAP"}
	f.Fuzz(func(t *testing.T, x, y string) {
		for _, s := range two {
			_, _ = s.Eval(testCtx, []any{x, y})
			_, _ = s.Eval(testCtx, []any{y, x})
		}
		for _, n := range one {
			s, err := reg.Lookup(n, []types.DataType{types.String()})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = s.Eval(testCtx, []any{x})
		}
		for _, n := range []string{"SUBSTRING", "LEFT", "RIGHT", "REPEAT"} {
			s, err := reg.Lookup(n, []types.DataType{types.String(), types.Int()})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = s.Eval(testCtx, []any{x, int32(len(y) - 3)})
		}
	})
}
