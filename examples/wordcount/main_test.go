package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/examples/wordcount/wc"
)

// mixedText generates a text of many scripts and of everything that is not
// a word: Latin with accents (precomposed and combining), Greek, Cyrillic,
// CJK, Arabic-Indic digits, emoji, punctuation, mixed case, CRLF line ends,
// invalid UTF-8 and a literal U+FFFD.
func mixedText(lines int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	vocab := []string{
		"Straße", "café", "cafe\u0301", "Æsir", "İstanbul", "naïve", "ÉCOLE", "Ωμέγα", "ΣΟΦΊΑ", "σοφία",
		"Москва", "москва", "ЁЖИК", "東京", "日本語", "北京市", "한국어", "٣٤٥", "x²", "2024", "v1.2.3",
		"don't", "e-mail", "the", "The", "THE", "and", "a", "ǅemal", "ﬁne", "Ⅻ", "\xff\xfe", "\uFFFD",
	}
	seps := []string{" ", "  ", ", ", ". ", "!", "?", "—", "-", "_", "🙂", "👍🏽", "\t", "（", "」", "…", "\u00a0", "'", "\"", "/", "\r"}
	var b strings.Builder
	for i := 0; i < lines; i++ {
		n := rng.IntN(12)
		for j := 0; j < n; j++ {
			b.WriteString(vocab[rng.IntN(len(vocab))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		if rng.IntN(10) == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// reference counts words the obvious way: lowercase everything, split at
// every rune that is neither a letter nor a digit.
func reference(text string) map[string]int64 {
	counts := make(map[string]int64)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		counts[w]++
	}
	return counts
}

func parseCounts(t *testing.T, out string) map[string]int64 {
	t.Helper()
	counts := make(map[string]int64)
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("malformed output line %q", line)
		}
		if _, dup := counts[line[:i]]; dup {
			t.Fatalf("word %q printed twice", line[:i])
		}
		counts[line[:i]] = n
	}
	return counts
}

func diff(got, want map[string]int64) string {
	var out []string
	for w, n := range want {
		if got[w] != n {
			out = append(out, fmt.Sprintf("%q: got %d, want %d", w, got[w], n))
		}
	}
	for w, n := range got {
		if _, ok := want[w]; !ok {
			out = append(out, fmt.Sprintf("%q: got %d, want none", w, n))
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], "...")
	}
	return strings.Join(out, "\n")
}

func TestTokenizeAgreesWithReference(t *testing.T) {
	text := mixedText(5000, 7)
	got := make(map[string]int64)
	for _, line := range strings.Split(text, "\n") {
		wc.Tokenize(line, func(w string) { got[w]++ })
	}
	if d := diff(got, reference(text)); d != "" {
		t.Fatal(d)
	}
}

func FuzzTokenize(f *testing.F) {
	f.Add("Hello, Wörld! 東京 ٣٤٥ \xff")
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsRune(line, '\n') {
			return
		}
		got := make(map[string]int64)
		wc.Tokenize(line, func(w string) { got[w]++ })
		if d := diff(got, reference(line)); d != "" {
			t.Fatalf("%q: %s", line, d)
		}
	})
}

// TestWordCountProgram runs the example binary on a large mixed-script
// file at several parallelisms, printing to stdout and writing files, and
// compares with the reference count.
func TestWordCountProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example binary")
	}
	dir := t.TempDir()
	bin := buildExample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	text := mixedText(150_000, 42)
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want := reference(text)
	t.Logf("input: %d bytes, %d distinct words", len(text), len(want))
	for _, p := range []string{"1", "2", "4"} {
		var stdout, stderr bytes.Buffer
		args := []string{"--input", input, "-p", p}
		if p == "4" {
			// Push every exchange through the record codecs, as the
			// network will.
			args = append(args, "-D", "pipeline.force-serialization=true")
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("p=%s: %v\n%s", p, err, stderr.String())
		}
		if d := diff(parseCounts(t, stdout.String()), want); d != "" {
			t.Fatalf("stdout at parallelism %s differs from the reference:\n%s", p, d)
		}

		outDir := filepath.Join(dir, "out-"+p)
		cmd = exec.CommandContext(ctx, bin, "--input", input, "--output", outDir, "--parallelism", p)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("p=%s --output: %v\n%s", p, err, out)
		}
		lines, err := file.ReadLines(outDir)
		if err != nil {
			t.Fatal(err)
		}
		if d := diff(parseCounts(t, strings.Join(lines, "\n")), want); d != "" {
			t.Fatalf("--output at parallelism %s differs from the reference:\n%s", p, d)
		}
		parts, _ := filepath.Glob(filepath.Join(outDir, "part-*"))
		if n, _ := strconv.Atoi(p); len(parts) != n {
			t.Fatalf("--output at parallelism %s wrote %d part files", p, len(parts))
		}
	}
}

func TestWordCountRejectsBadSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example binary")
	}
	dir := t.TempDir()
	bin := buildExample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conf := filepath.Join(dir, "conf.yaml")
	os.WriteFile(conf, []byte("parallelism.default: 2\nexecution.buffer-timeout: soon\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-D", "no.such.option=1"}, `unknown key "no.such.option"`},
		{[]string{"-D", "parallelism.default=many"}, `invalid value "many" for "parallelism.default"`},
		{[]string{"-D", "novalue"}, "novalue"},
		{[]string{"--config", conf}, `"execution.buffer-timeout"`},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"--parallelism", "x"}, "parallelism"},
		{[]string{"--input", filepath.Join(dir, "nope.txt")}, "nope.txt"},
		{[]string{"--bogus"}, "bogus"},
		{[]string{"--mode", "stream"}, "want batch or streaming"},
		{[]string{"--mode", "streaming", "-D", "execution.runtime-mode=BATCH"}, "conflicts with execution.runtime-mode=BATCH"},
		{[]string{"--rate", "-5"}, "--rate"},
		{[]string{"--socket", "localhost:9999", "--input", "x.txt"}, "--socket and --input exclude each other"},
		{[]string{"--socket", "localhost:9999", "--mode", "batch"}, "--socket needs --mode streaming"},
		{[]string{"--socket", "no-port"}, `address "no-port"`},
		{[]string{"--checkpoint-mode", "sometimes"}, "want exactly-once or at-least-once"},
		{[]string{"--state-backend", "rocksdb"}, "want hashmap or pebble"},
		{[]string{"--checkpoint-interval", "soon"}, "checkpoint-interval"},
		{[]string{"--mode", "streaming", "--from-savepoint", filepath.Join(dir, "chk-404")}, "chk-404"},
	}
	for _, c := range cases {
		out, err := exec.CommandContext(ctx, bin, c.args...).CombinedOutput()
		if err == nil {
			t.Errorf("%v: succeeded, want an error mentioning %q", c.args, c.want)
			continue
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%v: output %q does not mention %q", c.args, out, c.want)
		}
	}
}

var built struct {
	sync.Once
	dir, bin string
	err      error
	out      []byte
}

// buildExample builds the example binary once for all tests of the
// package; TestMain removes it.
func buildExample(t *testing.T) string {
	t.Helper()
	built.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "wordcount-test-")
		if built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "wordcount")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		built.out, built.err = exec.CommandContext(ctx, "go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
