package parser

import (
	"os"
	"testing"
)

// FuzzParse checks that no input makes the parser panic, and that whatever
// parses prints as SQL that parses back to the same tree.
func FuzzParse(f *testing.F) {
	for _, tc := range exprTests {
		f.Add(tc.in)
	}
	for _, tc := range queryTests {
		f.Add(tc.in)
	}
	for _, tc := range matchTests {
		f.Add(tc.in)
	}
	for _, tc := range errorTests {
		f.Add(tc.in)
	}
	files := nexmarkFiles()
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		if stmts, err := ParseScript(src); err == nil {
			for _, s := range stmts {
				checkRoundTrip(t, s)
			}
		} else if _, ok := err.(*Error); !ok {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if e, err := ParseExpr(src); err == nil {
			checkRoundTrip(t, e)
		}
		if ty, err := ParseType(src); err == nil {
			checkRoundTrip(t, ty)
		}
	})
}
