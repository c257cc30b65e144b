package sqlgen

import (
	"strings"
	"testing"
)

// The generator is deterministic in (seed, index), and its two spellings
// differ only where the dialects do.
func TestGenerateDeterministic(t *testing.T) {
	for i := range uint64(200) {
		a, b := Generate(7, i), Generate(7, i)
		if a != b {
			t.Fatalf("query %d differs between two runs:\n%s\n%s", i, a.Weir, b.Weir)
		}
		if a.Weir == "" || a.Lite == "" || !strings.HasPrefix(a.Weir, "SELECT") {
			t.Fatalf("query %d: %q / %q", i, a.Weir, a.Lite)
		}
	}
}
