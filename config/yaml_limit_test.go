package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadFileBounded: a configuration file is read up to 1 MiB, and a
// device such as /dev/zero, which never ends, or a directory is refused
// at once with the file's name, rather than read until memory runs out.
func TestLoadFileBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	line := "# " + strings.Repeat("x", 1021) + "\n" // 1 KiB
	if err := os.WriteFile(big, []byte(strings.Repeat(line, 1024)+"parallelism.default: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exact := filepath.Join(t.TempDir(), "exact.yaml")
	head := "parallelism.default: 2\n"
	if err := os.WriteFile(exact, []byte(head+strings.Repeat(line, 1023)+"#"+strings.Repeat("x", 1024-len(head)-2)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		path, want string
	}{
		{"/dev/zero", "config file /dev/zero is not a regular file"},
		{dir, "config file " + dir + " is not a regular file"},
		{big, "config file " + big + " is larger than 1 MiB"},
	} {
		start := time.Now()
		_, err := LoadFile(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadFile(%s) = %v, want %q", tc.path, err, tc.want)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("LoadFile(%s) took %v", tc.path, took)
		}
	}
	if fi, err := os.Stat(exact); err != nil || fi.Size() != MaxFileSize {
		t.Fatalf("%s: %v, %v; want %d bytes", exact, fi, err, MaxFileSize)
	}
	c, err := LoadFile(exact)
	if err != nil {
		t.Fatalf("LoadFile of a file of exactly 1 MiB: %v", err)
	}
	if got := Parallelism.Get(c); got != 2 {
		t.Errorf("parallelism.default = %d, want 2", got)
	}
}
