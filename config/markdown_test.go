package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from WriteMarkdown")

// TestMarkdownUpToDate keeps docs/configuration.md equal to the catalog.
// After changing an option, run `go generate ./config` (which runs this test
// with -update) and commit the result.
func TestMarkdownUpToDate(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "configuration.md")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run `go generate ./config` to create it", err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("%s is out of date; run `go generate ./config` to regenerate it", path)
	}
}

func TestMarkdownListsEveryOption(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	for _, o := range Options() {
		if !bytes.Contains(buf.Bytes(), []byte("| `"+o.Key+"` | "+o.Type+" | ")) {
			t.Errorf("no table row for %s", o.Key)
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte("Possible values: `STREAMING`, `BATCH`, `AUTOMATIC`.")) {
		t.Errorf("enum values missing from the table")
	}
}
