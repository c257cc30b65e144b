package config

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestUnknownKey(t *testing.T) {
	tests := []struct {
		key, source, want string
	}{
		{"paralelism.default", "conf.yaml:3",
			`config: unknown key "paralelism.default" (conf.yaml:3); did you mean "parallelism.default"?`},
		{"execution.buffer-timout", "-D",
			`config: unknown key "execution.buffer-timout" (-D); did you mean "execution.buffer-timeout"?`},
		{"taskmanager.numberoftaskslots", "",
			`config: unknown key "taskmanager.numberoftaskslots"; did you mean "taskmanager.numberOfTaskSlots"?`},
		{"buffer-timeout", "-D",
			`config: unknown key "buffer-timeout" (-D); did you mean "execution.buffer-timeout"?`},
		{"state.backend", "-D",
			`config: unknown key "state.backend" (-D); did you mean "state.backend.type"?`},
		{"completely.unrelated.thing", "-D",
			`config: unknown key "completely.unrelated.thing" (-D)`},
	}
	for _, tt := range tests {
		err := New().SetFrom(tt.source, tt.key, "1")
		if err == nil || err.Error() != tt.want {
			t.Errorf("SetFrom(%q, %q) error = %v, want %s", tt.source, tt.key, err, tt.want)
		}
	}
}

func TestParseDefinition(t *testing.T) {
	tests := []struct {
		in, key, value string
		wantErr        bool
	}{
		{"parallelism.default=4", "parallelism.default", "4", false},
		{" execution.buffer-timeout = 10 ms ", "execution.buffer-timeout", "10 ms", false},
		{"pipeline.name=a=b", "pipeline.name", "a=b", false},
		{"pipeline.name=", "pipeline.name", "", false},
		{"parallelism.default", "", "", true},
		{"=4", "", "", true},
		{"", "", "", true},
	}
	for _, tt := range tests {
		k, v, err := ParseDefinition(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseDefinition(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if k != tt.key || v != tt.value {
			t.Errorf("ParseDefinition(%q) = %q, %q, want %q, %q", tt.in, k, v, tt.key, tt.value)
		}
	}
	if _, _, err := ParseDefinition("oops"); err == nil || err.Error() != `config: invalid definition "oops": expected key=value` {
		t.Errorf("error = %v", err)
	}
}

func TestZeroValueAndNil(t *testing.T) {
	var zero Configuration
	if err := zero.Set("parallelism.default", "3"); err != nil {
		t.Fatal(err)
	}
	if Parallelism.Get(&zero) != 3 {
		t.Errorf("zero value configuration did not store the value")
	}

	var c *Configuration
	if c.IsSet("parallelism.default") || c.Keys() != nil || len(c.Map()) != 0 {
		t.Errorf("nil configuration is not empty")
	}
	if cl := c.Clone(); cl == nil || len(cl.Keys()) != 0 {
		t.Errorf("Clone of nil = %v", cl)
	}
	New().Merge(nil)
}

func TestKeysAndIsSet(t *testing.T) {
	c := New()
	for _, kv := range [][2]string{
		{"state.backend.type", "pebble"},
		{"execution.buffer-timeout", "5ms"},
		{"parallelism.default", "2"},
	} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"execution.buffer-timeout", "parallelism.default", "state.backend.type"}
	if got := c.Keys(); !slices.Equal(got, want) {
		t.Errorf("Keys() = %v, want %v", got, want)
	}
	if !c.IsSet("parallelism.default") || c.IsSet("pipeline.name") {
		t.Errorf("IsSet wrong")
	}
	// Setting a key to its default still counts as set.
	if err := c.Set("pipeline.name", ""); err != nil || !c.IsSet("pipeline.name") {
		t.Errorf("IsSet after setting the default: %v", err)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	a := New()
	Parallelism.Set(a, 2)
	b := a.Clone()
	Parallelism.Set(b, 5)
	BufferTimeout.Set(b, 0)
	Parallelism.Set(a, 3)
	if got := Parallelism.Get(a); got != 3 {
		t.Errorf("a parallelism = %d, want 3", got)
	}
	if got := Parallelism.Get(b); got != 5 {
		t.Errorf("b parallelism = %d, want 5", got)
	}
	if a.IsSet(BufferTimeout.Key) {
		t.Errorf("setting the clone changed the original")
	}
}

func TestMerge(t *testing.T) {
	file := New()
	Parallelism.Set(file, 2)
	BufferTimeout.Set(file, 50*time.Millisecond)
	flags := New()
	Parallelism.Set(flags, 8)
	StateBackend.Set(flags, StateBackendPebble)

	file.Merge(flags)
	want := map[string]string{
		"parallelism.default":      "8",
		"execution.buffer-timeout": "50 ms",
		"state.backend.type":       "pebble",
	}
	if got := file.Map(); !maps.Equal(got, want) {
		t.Errorf("merged = %v, want %v", got, want)
	}
	// The merged configuration does not alias other.
	Parallelism.Set(flags, 16)
	if got := Parallelism.Get(file); got != 8 {
		t.Errorf("changing other after Merge changed the result: %d", got)
	}
	file.Merge(file) // no deadlock
}

func TestMapRoundTrip(t *testing.T) {
	a := New()
	for k, v := range map[string]string{
		"execution.buffer-timeout":               "1m30s",
		"taskmanager.network.memory.buffer-size": "64 KiB",
		"execution.runtime-mode":                 "batch",
		"pipeline.name":                          "job",
	} {
		if err := a.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	m := a.Map()
	b := New()
	for k, v := range m {
		if err := b.Set(k, v); err != nil {
			t.Fatalf("canonical value does not parse: %v", err)
		}
	}
	if !maps.Equal(b.Map(), m) {
		t.Errorf("round trip: %v != %v", b.Map(), m)
	}
	if BufferTimeout.Get(b) != 90*time.Second || NetworkBufferSize.Get(b) != 64<<10 {
		t.Errorf("round trip changed values")
	}
	m["pipeline.name"] = "changed"
	if PipelineName.Get(a) != "job" {
		t.Errorf("Map aliases the configuration")
	}
}

// TestConcurrentUse shares configurations between goroutines that set,
// read, clone and merge them (the race detector runs it in CI): every
// read sees a value some goroutine set, never a torn or missing one.
func TestConcurrentUse(t *testing.T) {
	a, b := New(), New()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	report := func(format string, args ...any) {
		select {
		case errs <- fmt.Sprintf(format, args...):
		default:
		}
	}
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				Parallelism.Set(a, i+1)
				if p := Parallelism.Get(a); p < 1 || p > 8 {
					report("parallelism %d, want one of the values set (1..8)", p)
				}
				if d := BufferTimeout.Get(a); d != BufferTimeout.Default {
					report("buffer timeout %v, never set, want the default %v", d, BufferTimeout.Default)
				}
				if !slices.Contains(a.Keys(), Parallelism.Key) || a.Map()[Parallelism.Key] == "" {
					report("keys %v lack %s after it was set", a.Keys(), Parallelism.Key)
				}
				if p := Parallelism.Get(a.Clone()); p < 1 || p > 8 {
					report("a clone holds parallelism %d", p)
				}
				if j%2 == 0 {
					a.Merge(b)
				} else {
					b.Merge(a)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if p := Parallelism.Get(b); p < 1 || p > 8 {
		t.Errorf("after the merges b holds parallelism %d, want one of the values set", p)
	}
}
