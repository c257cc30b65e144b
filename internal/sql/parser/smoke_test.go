package parser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSmoke(t *testing.T) {
	files, _ := filepath.Glob("testdata/nexmark/*.sql")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		src := strings.ReplaceAll(string(b), "${NEXMARK_TABLE}", "datagen")
		stmts, err := ParseScript(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, s := range stmts {
			out := Format(s)
			s2, err := ParseStatement(out)
			if err != nil {
				t.Errorf("%s: reparse %v\n%s", f, err, out)
				continue
			}
			if !Equal(s, s2) {
				t.Errorf("%s: not equal\n%s\n%s", f, out, Format(s2))
			}
		}
	}
}

func TestSmokePrint(t *testing.T) {
	for _, f := range []string{"q5", "q13", "ddl_gen", "q6", "q15"} {
		b, _ := os.ReadFile("testdata/nexmark/" + f + ".sql")
		stmts, _ := ParseScript(string(b))
		for _, s := range stmts {
			t.Log(Format(s))
		}
	}
}
