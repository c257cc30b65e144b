package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A block is one fenced shell block of a markdown file with the rundocs
// markers (HTML comments) written right before it.
type block struct {
	File string
	Line int    // line of the opening fence, 1-based
	Lang string // sh, bash, console, shell
	Text []string

	Skip        string // "category: reason"; empty runs the block
	Cluster     bool   // start weir cluster around the block
	ClusterArgs []string
	Timeout     time.Duration
	Expect      []string          // texts the output must contain
	Absent      []string          // texts the output must not contain
	With        map[string]string // placeholder -> value
	WithOrder   []string
	Before      []string // setup commands the text implies (a file to read, ...)
	After       []string // checks of what the text says the block made (a file, ...)
	Background  map[int]bool
	Waits       []wait
	Omit        []omit
}

type wait struct {
	After  int // command number (1-based) after which to wait
	Target string
	Text   string
}

type omit struct {
	Substring, Reason string
}

var (
	markerRe = regexp.MustCompile(`^\s*<!--\s*rundocs:\s*(.*?)\s*-->\s*$`)
	fenceRe  = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")
)

// shellLangs are the info strings of the blocks a reader types into a
// shell. Blocks of other languages (go, sql, yaml, plain output) are
// never run and may carry no markers.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// parseFile returns the shell blocks of a markdown file. A marker that
// is malformed, that a non-shell block carries, or that no block follows
// is an error naming the file and line: a marker must never be dropped
// silently, or a block meant to be skipped would run (or the reverse).
func parseFile(path string) ([]*block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, string(data))
}

func parse(path, text string) ([]*block, error) {
	lines := strings.Split(text, "\n")
	var blocks []*block
	type pending struct {
		line int
		text string
	}
	var markers []pending
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := markerRe.FindStringSubmatch(line); m != nil {
			markers = append(markers, pending{i + 1, m[1]})
			continue
		}
		if strings.Contains(line, "rundocs:") && strings.Contains(line, "<!--") {
			return nil, fmt.Errorf("%s:%d: a rundocs marker must be a line of its own: <!-- rundocs: DIRECTIVE -->", path, i+1)
		}
		f := fenceRe.FindStringSubmatch(line)
		if f == nil {
			if strings.TrimSpace(line) != "" && len(markers) > 0 {
				return nil, fmt.Errorf("%s:%d: rundocs marker %q is not followed by a code block", path, markers[0].line, markers[0].text)
			}
			continue
		}
		indent, fence, lang := f[1], f[2], strings.ToLower(f[3])
		start := i + 1
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			t := strings.TrimSpace(lines[i])
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: code block is never closed", path, start)
		}
		if !shellLangs[lang] {
			if len(markers) > 0 {
				return nil, fmt.Errorf("%s:%d: rundocs marker %q is on a %q block; only sh, bash, shell and console blocks run", path, markers[0].line, markers[0].text, lang)
			}
			continue
		}
		b := &block{File: path, Line: start, Lang: lang, Text: body, With: map[string]string{}, Background: map[int]bool{}}
		for _, m := range markers {
			if err := b.directive(m.text); err != nil {
				return nil, fmt.Errorf("%s:%d: rundocs marker: %v", path, m.line, err)
			}
		}
		markers = nil
		blocks = append(blocks, b)
	}
	if len(markers) > 0 {
		return nil, fmt.Errorf("%s:%d: rundocs marker %q is not followed by a code block", path, markers[0].line, markers[0].text)
	}
	return blocks, nil
}

// directive applies one marker's text to the block.
func (b *block) directive(text string) error {
	verb, rest, _ := strings.Cut(strings.TrimSpace(text), " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "skip":
		cat, reason, ok := strings.Cut(rest, ":")
		if !ok || strings.TrimSpace(cat) == "" || strings.Contains(strings.TrimSpace(cat), " ") || strings.TrimSpace(reason) == "" {
			return fmt.Errorf("skip needs a category and a reason: <!-- rundocs: skip external: needs a Kafka broker -->, got %q", rest)
		}
		b.Skip = strings.TrimSpace(cat) + ": " + strings.TrimSpace(reason)
	case "cluster":
		args, err := words(rest)
		if err != nil {
			return err
		}
		b.Cluster, b.ClusterArgs = true, args
	case "timeout":
		d, err := time.ParseDuration(rest)
		if err != nil || d <= 0 {
			return fmt.Errorf("timeout needs a positive duration such as 5m, got %q", rest)
		}
		b.Timeout = d
	case "expect", "absent":
		args, err := words(rest)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return fmt.Errorf("%s needs one or more quoted texts", verb)
		}
		if verb == "expect" {
			b.Expect = append(b.Expect, args...)
		} else {
			b.Absent = append(b.Absent, args...)
		}
	case "with":
		args, err := words(rest)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return fmt.Errorf("with needs NAME=VALUE pairs")
		}
		for _, a := range args {
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				return fmt.Errorf("with needs NAME=VALUE pairs, got %q", a)
			}
			if _, dup := b.With[k]; !dup {
				b.WithOrder = append(b.WithOrder, k)
			}
			b.With[k] = v
		}
	case "before", "after":
		args, err := words(rest)
		if err != nil {
			return err
		}
		if len(args) != 1 {
			return fmt.Errorf("%s needs one quoted command, got %q", verb, rest)
		}
		if verb == "before" {
			b.Before = append(b.Before, args[0])
		} else {
			b.After = append(b.After, args[0])
		}
	case "background":
		args, err := words(rest)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return fmt.Errorf("background needs the numbers of the commands to run in the background")
		}
		for _, a := range args {
			n, err := strconv.Atoi(a)
			if err != nil || n < 1 {
				return fmt.Errorf("background needs command numbers from 1, got %q", a)
			}
			b.Background[n] = true
		}
	case "wait":
		args, err := words(rest)
		if err != nil {
			return err
		}
		if len(args) < 2 || len(args) > 3 {
			return fmt.Errorf(`wait needs a command number, a host:port or URL and optionally a quoted text: wait 1 http://127.0.0.1:8081/overview "taskmanagers\":2", got %q`, rest)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 1 {
			return fmt.Errorf("wait needs a command number from 1, got %q", args[0])
		}
		w := wait{After: n, Target: args[1]}
		if len(args) == 3 {
			w.Text = args[2]
		}
		b.Waits = append(b.Waits, w)
	case "omit":
		args, err := words(rest)
		if err != nil {
			return err
		}
		if len(args) < 2 {
			return fmt.Errorf(`omit needs a quoted text and a reason: omit "./test.sh" the whole test suite, got %q`, rest)
		}
		b.Omit = append(b.Omit, omit{args[0], strings.Join(args[1:], " ")})
	default:
		return fmt.Errorf("unknown directive %q (skip, cluster, timeout, expect, absent, with, before, after, background, wait, omit)", verb)
	}
	return nil
}

// words splits a marker's arguments at spaces, keeping double-quoted
// texts (Go syntax, so \" is a quote) together.
func words(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("bad quoted text in %q: %v", s, err)
			}
			u, _ := strconv.Unquote(q)
			out = append(out, u)
			s = s[len(q):]
			continue
		}
		w, r, _ := strings.Cut(s, " ")
		out = append(out, w)
		s = r
	}
	return out, nil
}

// A command is one logical command of a block: its physical lines joined
// by backslash continuations, with the body of a here-document.
type command struct {
	Lines []string
}

var heredocRe = regexp.MustCompile(`<<(-?)\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// commands splits the block's text into commands. Blank lines and
// comment-only lines are not commands. A console block's commands are
// its lines starting with "$ "; the other lines are output.
func (b *block) commands() []command {
	var out []command
	lines := b.Text
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if b.Lang == "console" {
			if !strings.HasPrefix(line, "$ ") {
				continue
			}
			line = strings.TrimPrefix(line, "$ ")
		}
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := command{Lines: []string{line}}
		for strings.HasSuffix(strings.TrimRight(stripComment(c.Lines[len(c.Lines)-1]), " \t"), "\\") && i+1 < len(lines) {
			i++
			c.Lines = append(c.Lines, lines[i])
		}
		if m := heredocRe.FindStringSubmatch(strings.Join(c.Lines, "\n")); m != nil {
			for i+1 < len(lines) {
				i++
				c.Lines = append(c.Lines, lines[i])
				end := lines[i]
				if m[1] == "-" {
					end = strings.TrimLeft(end, "\t")
				}
				if end == m[2] {
					break
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// stripComment drops a shell comment ("#" after white space, outside
// quotes) from a line, so that "&" can be put before it.
func stripComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}
