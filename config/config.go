// Package config holds a job's configuration: Flink-style dotted keys such
// as "execution.buffer-timeout", read from a YAML file and overridden by
// "-D key=value" flags.
//
// Every key is declared once, as a typed [Option] in this package's catalog
// (options.go). The catalog is what makes the configuration strict: a key
// that is not in it, or a value its option cannot parse, is rejected when it
// is set, with the source (file and line, or -D) in the error, instead of
// being silently ignored at the point where some operator happens to read it.
// The same catalog generates docs/configuration.md, so the reference cannot
// drift from the code.
//
// Other packages read options through the typed handles:
//
//	timeout := config.BufferTimeout.Get(cfg) // time.Duration, default if unset
package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Configuration holds validated option values. Each value is kept both as
// the parsed value that [Option.Get] returns and as its canonical string,
// which [Configuration.Map] hands out so that a configuration can be shipped
// to another process and set there again with identical results.
//
// The zero value is an empty configuration ready to use. All methods are
// safe for concurrent use; read methods also accept a nil receiver, which
// behaves like an empty configuration. A Configuration must not be copied
// after first use; use [Configuration.Clone].
type Configuration struct {
	mu     sync.RWMutex
	values map[string]entry
}

type entry struct {
	text  string // canonical string form
	value any    // parsed value, of the option's type T
}

// New returns an empty configuration.
func New() *Configuration { return &Configuration{} }

// Set validates value against the option registered as key and stores it.
// An unknown key or an unparsable value is an error naming the key and the
// value; for an unknown key the error suggests the closest known key.
func (c *Configuration) Set(key, value string) error {
	return c.SetFrom("", key, value)
}

// SetFrom is [Configuration.Set] with the value's origin, such as "-D" or
// "conf.yaml:12", included in any error so that users can find the
// offending line.
func (c *Configuration) SetFrom(source, key, value string) error {
	opt, ok := catalogIndex[key]
	if !ok {
		msg := fmt.Sprintf("config: unknown key %q%s", key, where(source))
		if s := suggest(key); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return errors.New(msg)
	}
	text, v, err := opt.parseValue(value)
	if err != nil {
		return fmt.Errorf("config: invalid value %q for %q%s: %w", value, key, where(source), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.values == nil {
		c.values = make(map[string]entry)
	}
	c.values[key] = entry{text: text, value: v}
	return nil
}

func where(source string) string {
	if source == "" {
		return ""
	}
	return " (" + source + ")"
}

// IsSet reports whether key has been set explicitly, as opposed to falling
// back to its option's default.
func (c *Configuration) IsSet(key string) bool {
	_, ok := c.lookup(key)
	return ok
}

func (c *Configuration) lookup(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.values[key]
	return e.value, ok
}

// Clone returns an independent copy: setting keys on either configuration
// afterwards does not affect the other.
func (c *Configuration) Clone() *Configuration {
	return &Configuration{values: c.snapshot()}
}

// snapshot returns a copy of the values taken under the read lock. Stored
// values are immutable, so a shallow copy is independent.
func (c *Configuration) snapshot() map[string]entry {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.values)
}

// Merge sets every key that is set in other to other's value; keys set only
// in c are kept. It is how flags are layered over a file: file.Merge(flags).
func (c *Configuration) Merge(other *Configuration) {
	if other == nil || other == c {
		return
	}
	// Copy first so that the two locks are never held together; a.Merge(b)
	// racing with b.Merge(a) cannot deadlock.
	src := other.snapshot()
	if len(src) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.values == nil {
		c.values = make(map[string]entry, len(src))
	}
	maps.Copy(c.values, src)
}

// Keys returns the keys that are set, sorted.
func (c *Configuration) Keys() []string {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.values))
}

// Map returns the set keys with their canonical string values, for shipping
// a configuration to another process: calling Set with each pair there
// reproduces an equal configuration. The map is a fresh copy.
func (c *Configuration) Map() map[string]string {
	m := make(map[string]string)
	if c == nil {
		return m
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for k, e := range c.values {
		m[k] = e.text
	}
	return m
}

// ParseDefinition splits a "-D" flag argument of the form "key=value" at the
// first '='. Surrounding white space is trimmed from key and value; the
// value may be empty and may itself contain '='. Whether the key exists is
// checked later by [Configuration.SetFrom].
func ParseDefinition(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("config: invalid definition %q: expected key=value", s)
	}
	return k, strings.TrimSpace(v), nil
}

// suggest returns the known key closest to an unknown one, or "" when none
// is close enough to be a plausible typo. A key that is the tail or the head
// of a known key ("buffer-timeout" for "execution.buffer-timeout",
// "state.backend" for "state.backend.type") also counts, since leaving out a
// part is a common slip.
func suggest(key string) string {
	lk := strings.ToLower(key)
	limit := max(2, len(key)/3)
	best, bestDist := "", -1
	for _, k := range catalogKeys {
		lo := strings.ToLower(k)
		d := levenshtein(lk, lo)
		if d > limit && !strings.HasSuffix(lo, "."+lk) && !strings.HasPrefix(lo, lk+".") {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// levenshtein returns the edit distance between a and b.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
