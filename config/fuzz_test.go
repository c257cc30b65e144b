package config

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzLoadYAML feeds arbitrary bytes to the YAML configuration loader. A
// file that loads must give values in canonical form: written back as
// YAML and loaded again, the configuration is the same.
func FuzzLoadYAML(f *testing.F) {
	f.Add([]byte("execution.buffer-timeout: 100 ms\nparallelism.default: 4\n"))
	f.Add([]byte("execution:\n  buffer-timeout: 1min\n  checkpointing:\n    interval: 10 s\nstate.backend.type: rocksdb\n"))
	f.Add([]byte("taskmanager.memory.network.fraction: 0.1\npipeline.force-serialization: TRUE\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"))
	f.Add([]byte("~\n"))
	f.Add([]byte("--- 1\n--- 2\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		c := New()
		if err := c.loadYAML("fuzz.yaml", data); err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error without the config: prefix: %v", err)
			}
			return
		}
		m := c.Map()
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		c2 := New()
		if err := c2.loadYAML("again.yaml", out); err != nil {
			t.Fatalf("reload of\n%s: %v", out, err)
		}
		if m2 := c2.Map(); !maps.Equal(m, m2) {
			t.Fatalf("not stable:\n%v\n%v", m, m2)
		}
	})
}

// FuzzDefinition feeds arbitrary strings to the parsing of "-D key=value"
// flags and of the value by the key's option. A value that is accepted
// has a canonical form that is accepted again unchanged.
func FuzzDefinition(f *testing.F) {
	for _, o := range Options() {
		f.Add(o.Key + "=" + o.Default)
	}
	f.Add("execution.buffer-timeout = -1")
	f.Add("taskmanager.memory.process.size=9223372036854775807 bytes")
	f.Add("execution.buffer-timeout=9223372036854775807ns")
	f.Add("=x")
	f.Add("parallelism.defualt=2")

	f.Fuzz(func(t *testing.T, s string) {
		key, value, err := ParseDefinition(s)
		if err != nil {
			return
		}
		if k2, v2, err := ParseDefinition(key + "=" + value); err != nil || k2 != key || v2 != value {
			t.Fatalf("%q -> %q=%q -> %q=%q %v", s, key, value, k2, v2, err)
		}
		c := New()
		if err := c.SetFrom("-D", key, value); err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error without the config: prefix: %v", err)
			}
			return
		}
		text := c.Map()[key]
		c2 := New()
		if err := c2.Set(key, text); err != nil {
			t.Fatalf("canonical %q of %q rejected: %v", text, value, err)
		}
		if got := c2.Map()[key]; got != text {
			t.Fatalf("canonical form not stable: %q -> %q -> %q", value, text, got)
		}
	})
}

// TestLoadYAMLAliasBomb: nested aliases doubling at each level used to
// make the loader visit 2^21 keys (and compute a suggestion for each);
// the key budget ends it with an error.
func TestLoadYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 {a: 1, b: 2}\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "l%d: &l%d {a: *l%d, b: *l%d}\n", i, i, i-1, i-1)
	}
	err := New().loadYAML("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 1000 keys") {
		t.Fatalf("got %v", err)
	}
}
