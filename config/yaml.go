package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// LoadFile reads a YAML configuration file. Keys may be written flat
// ("execution.buffer-timeout: 100 ms"), nested ("execution:" followed by an
// indented "buffer-timeout: 100 ms"), or mixed; nested maps are flattened to
// dotted keys. Leaves must be scalars. Every value is validated as by
// [Configuration.SetFrom] with "FILE:LINE" as its source; all problems are
// reported together. A key given twice, also once flat and once nested, is
// an error. An empty file yields an empty configuration.
func LoadFile(path string) (*Configuration, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := New()
	if err := c.loadYAML(path, data); err != nil {
		return nil, err
	}
	return c, nil
}

// MaxFileSize bounds a configuration file. Real ones are a few KiB; the
// bound keeps a wrong path (a log, a device such as /dev/zero) from
// exhausting memory before any line is parsed.
const MaxFileSize = 1 << 20

// ReadFile reads the configuration file at path, at most MaxFileSize
// bytes. It refuses anything but a regular file or a pipe: a device,
// directory or socket is never a configuration, and /dev/zero or
// /dev/urandom would never end. A pipe is allowed for shells' process
// substitution (--config <(...)); the size bound holds for it too.
// Errors name the file.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if m := fi.Mode(); !m.IsRegular() && m&os.ModeNamedPipe == 0 {
		return nil, fmt.Errorf("config: config file %s is not a regular file (mode %s); --config takes a YAML file", path, m)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("config: config file %s is larger than 1 MiB; is it the right file?", path)
	}
	return data, nil
}

// loadYAML sets the options of the YAML document data, naming the file
// name in errors.
func (c *Configuration) loadYAML(name string, data []byte) error {
	return ReadYAML(name, data, c.SetFrom)
}

// ReadYAML reads the single YAML document data as LoadFile does: nested
// mappings flatten to dotted keys, and set gets each key with its value
// and its source ("file:line"). Errors name the file and line; name is
// the file's name for them. A loader of other keys besides the catalog's
// (a deployment's own options) passes its own set.
func ReadYAML(name string, data []byte, set func(source, key, value string) error) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("config: %s: %w", name, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("config: %s: %w", name, err)
		}
		return fmt.Errorf("config: %s:%d: a second YAML document; expected a single mapping of options", name, next.Line)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil // a document holding only "~" or "null"
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config: %s:%d: expected a mapping of option keys to values", name, root.Line)
	}
	l := loader{set: set, name: name, lines: make(map[string]int)}
	l.mapping("", root)
	return errors.Join(l.errs...)
}

// maxKeys bounds the keys of one file, counted as the loader visits them:
// every option fits many times over, and aliases of nested mappings
// ("a: &a {...}", "b: {x: *a, y: *a}", ...) cannot make a small file cost
// exponential time.
const maxKeys = 1000

type loader struct {
	set   func(source, key, value string) error
	name  string
	lines map[string]int // line where each key was set, to report duplicates
	errs  []error
	keys  int // keys visited, up to maxKeys
}

func (l *loader) errorf(line int, format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf("config: %s:%d: %s", l.name, line, fmt.Sprintf(format, args...)))
}

// mapping flattens the mapping n, whose keys are below prefix.
func (l *loader) mapping(prefix string, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if l.keys++; l.keys > maxKeys {
			if l.keys == maxKeys+1 {
				l.errorf(k.Line, "more than %d keys (aliases expanding mappings?); giving up", maxKeys)
			}
			return
		}
		if k.Kind != yaml.ScalarNode {
			l.errorf(k.Line, "expected a key, got a complex key")
			continue
		}
		if k.Tag == "!!merge" {
			l.errorf(k.Line, "merge keys (<<) are not supported")
			continue
		}
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch v.Kind {
		case yaml.MappingNode:
			l.mapping(key, v)
		case yaml.ScalarNode:
			source := fmt.Sprintf("%s:%d", l.name, k.Line)
			if first, dup := l.lines[key]; dup {
				l.errs = append(l.errs, fmt.Errorf("config: duplicate key %q (%s), first set on line %d", key, source, first))
				continue
			}
			l.lines[key] = k.Line
			value := v.Value
			if v.Tag == "!!null" {
				value = "" // "key:" with nothing after it, or "~"
			}
			if err := l.set(source, key, value); err != nil {
				l.errs = append(l.errs, err)
			}
		default:
			// No option is a list yet. Report an unknown key as such first;
			// that is the likelier mistake.
			source := fmt.Sprintf("%s:%d", l.name, k.Line)
			if _, known := catalogIndex[key]; !known {
				if err := l.set(source, key, ""); err != nil {
					l.errs = append(l.errs, err)
					continue
				}
			}
			l.errs = append(l.errs, fmt.Errorf("config: invalid value for %q (%s): expected a single value, not a list", key, source))
		}
	}
}
