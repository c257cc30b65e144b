package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMarkersOfTheRepository parses the markers of README.md and
// docs/*.md: every skip carries a category and a reason, every marker is
// a known directive on a shell block. It runs nothing, so it is cheap
// enough for ./test.sh; docs/run-docs.sh runs the blocks.
func TestMarkersOfTheRepository(t *testing.T) {
	files, err := defaultFiles(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		bs, err := parseFile(f)
		if err != nil {
			t.Error(err)
		}
		for _, b := range bs {
			for _, k := range sortedKeys(b.Background) {
				if k > len(b.commands()) {
					t.Errorf("%s:%d: background %d, but the block has %d commands", f, b.Line, k, len(b.commands()))
				}
			}
			for _, k := range waitAfters(b) {
				if k > len(b.commands()) {
					t.Errorf("%s:%d: wait after command %d, but the block has %d commands", f, b.Line, k, len(b.commands()))
				}
			}
		}
		n += len(bs)
	}
	if n < 20 {
		t.Fatalf("found %d shell blocks in README.md and docs/*.md; the scanner misses some", n)
	}
}

func TestMarkerErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"skip without reason", "<!-- rundocs: skip external -->\n```sh\nls\n```\n", "needs a category and a reason"},
		{"skip with empty reason", "<!-- rundocs: skip external: -->\n```sh\nls\n```\n", "needs a category and a reason"},
		{"unknown directive", "<!-- rundocs: sikp x: y -->\n```sh\nls\n```\n", "unknown directive"},
		{"marker on a go block", "<!-- rundocs: skip a: b -->\n```go\nx\n```\n", "only sh, bash"},
		{"marker before prose", "<!-- rundocs: skip a: b -->\ntext\n```sh\nls\n```\n", "not followed by a code block"},
		{"marker at the end", "```sh\nls\n```\n<!-- rundocs: skip a: b -->\n", "not followed by a code block"},
		{"marker inside a line", "see <!-- rundocs: skip a: b --> here\n```sh\nls\n```\n", "a line of its own"},
		{"unclosed block", "```sh\nls\n", "never closed"},
		{"bad timeout", "<!-- rundocs: timeout soon -->\n```sh\nls\n```\n", "positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("x.md", tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "x.md:") {
				t.Errorf("error %q does not name the file and line", err)
			}
		})
	}
}

func TestCommandsAndScript(t *testing.T) {
	doc := "intro\n\n" +
		"<!-- rundocs: background 1 -->\n" +
		"<!-- rundocs: wait 1 127.0.0.1:8081 -->\n" +
		"<!-- rundocs: with FILE=in.txt -->\n" +
		"```sh\n" +
		"weir jobmanager   # REST on 8081\n" +
		"# a comment line\n" +
		"\n" +
		"weir run --input FILE \\\n" +
		"    --output /tmp/out   # '#' in a comment\n" +
		"cat > /tmp/q.sql <<'SQL'\n" +
		"SELECT '#', 1;\n" +
		"\n" +
		"SQL\n" +
		"echo 'a # b' done &\n" +
		"```\n"
	bs, err := parse("x.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Line != 6 {
		t.Fatalf("blocks %+v, want one at line 6", bs)
	}
	b := bs[0]
	cmds := b.commands()
	if len(cmds) != 4 {
		t.Fatalf("%d commands, want 4: %q", len(cmds), cmds)
	}
	if len(cmds[1].Lines) != 2 || len(cmds[2].Lines) != 4 {
		t.Errorf("continuation or here-document split wrongly: %q", cmds)
	}
	r := &runner{tmp: "/scratch", self: "/bin/rundocs"}
	got := r.script(b)
	want := "set -eo pipefail\n" +
		"weir jobmanager &   # REST on 8081\n" +
		"\"/bin/rundocs\" wait \"127.0.0.1:8081\" \"\"\n" +
		"weir run --input in.txt \\\n    --output /scratch/out   # '#' in a comment\n" +
		"cat > /scratch/q.sql <<'SQL'\nSELECT '#', 1;\n\nSQL\n" +
		"echo 'a # b' done &\n"
	if got != want {
		t.Errorf("script\n%s\nwant\n%s", got, want)
	}
}

func TestStripComment(t *testing.T) {
	for in, want := range map[string]string{
		"a # b":            "a ",
		"a#b":              "a#b",
		"echo '#' x # c":   "echo '#' x ",
		`echo "\"#" # c`:   `echo "\"#" `,
		"curl -s url":      "curl -s url",
		"# only":           "",
		`printf 'a\n' # x`: `printf 'a\n' `,
	} {
		if got := stripComment(in); got != want {
			t.Errorf("stripComment(%q) = %q, want %q", in, got, want)
		}
	}
}
