package config

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conf.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadFile(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comments only", "# nothing here\n", map[string]string{}},
		{"null document", "~\n", map[string]string{}},
		{"flat", `
parallelism.default: 4
execution.buffer-timeout: 10 ms
taskmanager.network.memory.buffer-size: 64kb
`, map[string]string{
			"parallelism.default":                    "4",
			"execution.buffer-timeout":               "10 ms",
			"taskmanager.network.memory.buffer-size": "64 kb",
		}},
		{"nested", `
execution:
  buffer-timeout: 100ms
  runtime-mode: batch
  checkpointing:
    interval: 1 min
    mode: at_least_once
taskmanager:
  numberOfTaskSlots: 4
  network:
    memory: {buffers-per-channel: 4}
`, map[string]string{
			"execution.buffer-timeout":                       "100 ms",
			"execution.runtime-mode":                         "BATCH",
			"execution.checkpointing.interval":               "1 min",
			"execution.checkpointing.mode":                   "AT_LEAST_ONCE",
			"taskmanager.numberOfTaskSlots":                  "4",
			"taskmanager.network.memory.buffers-per-channel": "4",
		}},
		{"mixed", `
pipeline:
  name: "word count"
  operator-chaining: false
pipeline.force-serialization: true
execution:
  checkpointing.interval: 30 s
state.backend:
  type: pebble
`, map[string]string{
			"pipeline.name":                    "word count",
			"pipeline.operator-chaining":       "false",
			"pipeline.force-serialization":     "true",
			"execution.checkpointing.interval": "30 s",
			"state.backend.type":               "pebble",
		}},
		{"values keep their text", "parallelism.default: 8\npipeline.operator-chaining: TRUE\npipeline.name:\nexecution.buffer-timeout: -1\n",
			map[string]string{
				"parallelism.default":        "8",
				"pipeline.operator-chaining": "true",
				"pipeline.name":              "",
				"execution.buffer-timeout":   "-1 ms",
			}},
		{"alias of a scalar", "execution.checkpointing.interval: &i 10 s\npipeline.auto-watermark-interval: *i\n",
			map[string]string{"execution.checkpointing.interval": "10 s", "pipeline.auto-watermark-interval": "10 s"}},
		{"alias of a mapping", "execution: &e\n  buffer-timeout: 5 ms\n",
			map[string]string{"execution.buffer-timeout": "5 ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadFile(writeFile(t, tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Map(); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each must appear in the error, after "FILE"
	}{
		{"invalid value with line", "# comment\nexecution.runtime-mode: batch\nparallelism.default: abc\n",
			[]string{`config: invalid value "abc" for "parallelism.default" (FILE:3): expected an integer >= 0`}},
		{"nested invalid value with line", "execution:\n  runtime-mode: batch\n\n  buffer-timeout: soon\n",
			[]string{`invalid value "soon" for "execution.buffer-timeout" (FILE:4): expected a duration`}},
		{"unknown key with suggestion", "pipeline:\n  max-paralelism: 12\n",
			[]string{`config: unknown key "pipeline.max-paralelism" (FILE:2); did you mean "pipeline.max-parallelism"?`}},
		{"all errors reported", "parallelism.default: x\nfoo.bar: 1\npipeline.name: ok\n",
			[]string{`"parallelism.default" (FILE:1)`, `unknown key "foo.bar" (FILE:2)`}},
		{"duplicate flat and nested", "execution.buffer-timeout: 1 ms\nexecution:\n  buffer-timeout: 2 ms\n",
			[]string{`config: duplicate key "execution.buffer-timeout" (FILE:3), first set on line 1`}},
		{"list for a scalar option", "parallelism.default: [1, 2]\n",
			[]string{`config: invalid value for "parallelism.default" (FILE:1): expected a single value, not a list`}},
		{"list under unknown key", "sources:\n  - a\n",
			[]string{`config: unknown key "sources" (FILE:1)`}},
		{"not a mapping", "- a\n- b\n",
			[]string{`config: FILE:1: expected a mapping of option keys to values`}},
		{"syntax error", "parallelism.default: 1\n  bad: [\n",
			[]string{`config: FILE: yaml:`}},
		{"two documents", "parallelism.default: 1\n---\nparallelism.default: 2\n",
			[]string{`config: FILE:2: a second YAML document`}},
		{"merge key", "base: &b\n  name: x\npipeline:\n  <<: *b\n",
			[]string{`FILE:4: merge keys (<<) are not supported`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.yaml)
			c, err := LoadFile(path)
			if err == nil {
				t.Fatalf("no error; loaded %v", c.Map())
			}
			if c != nil {
				t.Errorf("LoadFile returned a configuration along with an error")
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "FILE", path)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	_, err := LoadFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), "config: ") || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %v, want one naming %s", err, path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error does not wrap fs.ErrNotExist: %v", err)
	}
}
