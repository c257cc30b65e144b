package nexmark_test

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The two directories that hold the reference suite's SQL files: the ones
// the connector runs, and the parser's test data (the Kafka and v2
// variants and q23, which the connector does not run).
var upstreamDirs = []string{"queries", "../../parser/testdata/nexmark"}

// gitBlobID is the id git gives a file's content: SHA-1 of "blob <len>\0"
// and the bytes. Comparing it with the upstream tree's listing checks the
// copies byte for byte without holding a second copy of the text.
func gitBlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// TestFilesAreUpstream checks that every SQL file of nexmark-flink's
// queries directory is held here unchanged (issue 32: the official SQL,
// byte for byte, with only the connectors' options adapted at run time by
// Script), and that no SQL file here claims to be upstream's without being
// in its listing.
func TestFilesAreUpstream(t *testing.T) {
	f, err := os.Open("queries/UPSTREAM")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, name, ok := strings.Cut(line, "  ")
		if !ok || len(id) != 40 {
			t.Fatalf("queries/UPSTREAM: malformed line %q", line)
		}
		want[name] = id
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) < 29 {
		t.Fatalf("queries/UPSTREAM lists %d files, want nexmark-flink's 29", len(want))
	}
	found := map[string]string{}
	for _, dir := range upstreamDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			name := filepath.Base(path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if prev, ok := found[name]; ok {
				t.Errorf("%s is held twice (%s and %s)", name, prev, path)
			}
			found[name] = path
			id, ok := want[name]
			switch {
			case !ok:
				t.Errorf("%s is not a file of nexmark-flink's queries directory", path)
			case gitBlobID(b) != id:
				t.Errorf("%s differs from upstream (git blob %s, upstream %s): the reference SQL must be unchanged", path, gitBlobID(b), id)
			}
		}
	}
	for name := range want {
		if _, ok := found[name]; !ok {
			t.Errorf("upstream's %s is not held here", name)
		}
	}
}
