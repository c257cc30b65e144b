package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// binDir holds the example binary, built once for all tests.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "windowcount-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary builds the example once and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the example binary")
	}
	bin := filepath.Join(binDir, "windowcount")
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	bin := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("windowcount %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("windowcount %s: timed out", strings.Join(args, " "))
	}
	return res
}

// lines splits output into its lines.
func lines(out string) []string {
	out = strings.TrimSuffix(out, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// multisetDiff describes how got differs from want as multisets of lines,
// or returns "" when they are equal.
func multisetDiff(got, want []string) string {
	count := make(map[string]int)
	for _, l := range want {
		count[l]++
	}
	for _, l := range got {
		count[l]--
	}
	var missing, extra []string
	for l, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, l)
		}
		for ; n < 0; n++ {
			extra = append(extra, l)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	slices.Sort(missing)
	slices.Sort(extra)
	show := func(s []string) string {
		if len(s) > 15 {
			return strings.Join(s[:15], "\n  ") + fmt.Sprintf("\n  ... (%d more)", len(s)-15)
		}
		return strings.Join(s, "\n  ")
	}
	return fmt.Sprintf("%d lines, want %d; %d missing:\n  %s\n%d unexpected:\n  %s",
		len(got), len(want), len(missing), show(missing), len(extra), show(extra))
}

// inputShape says what genInput generates.
type inputShape struct {
	lines    int
	keys     int   // some much more frequent than others
	start    int64 // the first timestamp, roughly
	step     int64 // event time advances by up to step per line
	disorder int64 // most elements are up to disorder out of order
	far      int64 // one in 40 is up to far out of order
}

// genInput generates a CSV with timestamps that are mostly a little out
// of order, now and then far out of order (so that some elements are late
// whatever the bound), and with jumps in event time. Some lines carry a
// value, some have spaces around the fields, and a few are blank.
func genInput(seed uint64, sh inputShape) (csv string, recs []record) {
	rng := rand.New(rand.NewPCG(seed, 99))
	clock := sh.start
	var b strings.Builder
	for range sh.lines {
		switch rng.IntN(400) {
		case 0:
			b.WriteString("\n")
			continue
		case 1:
			b.WriteString("   \n")
			continue
		}
		clock += rng.Int64N(sh.step)
		if rng.IntN(300) == 0 {
			clock += 40*sh.step + rng.Int64N(120*sh.step)
		}
		ts := clock - rng.Int64N(sh.disorder)
		if rng.IntN(40) == 0 {
			ts = clock - rng.Int64N(sh.far)
		}
		key := fmt.Sprintf("key%02d", int(rng.ExpFloat64()*float64(sh.keys)/5)%sh.keys)
		recs = append(recs, record{key, ts})
		switch rng.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "%s,%d,%d\n", key, ts, rng.IntN(1000))
		case 1:
			fmt.Fprintf(&b, " %s , %d ,%.2f\n", key, ts, rng.Float64()*100)
		default:
			fmt.Fprintf(&b, "%s,%d\n", key, ts)
		}
	}
	return b.String(), recs
}

// defaultShape is an input of a few thousand elements over 30 keys in
// about two minutes of event time.
var defaultShape = inputShape{lines: 4000, keys: 30, start: 1_700_000_000_000, step: 25, disorder: 300, far: 5000}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// args returns the command-line flags for sp.
func (sp spec) args() []string {
	ms := func(v int64) string { return strconv.FormatInt(v, 10) + "ms" }
	var a []string
	switch sp.kind {
	case tumbling:
		a = []string{"--window", ms(sp.size)}
	case sliding:
		a = []string{"--window", ms(sp.size), "--slide", ms(sp.slide)}
	case session:
		a = []string{"--session-gap", ms(sp.gap)}
	}
	return append(a, "--out-of-orderness", ms(sp.outOfOrderness), "--allowed-lateness", ms(sp.lateness))
}

// specs returns every combination of the window kinds (with the given
// sizes) with the out-of-orderness and allowed lateness values.
func specs(size, slide, gap int64, ooos, latenesses []int64) []spec {
	var out []spec
	for _, base := range []spec{
		{kind: tumbling, size: size, slide: size},
		{kind: sliding, size: size, slide: slide},
		{kind: session, gap: gap},
	} {
		for _, ooo := range ooos {
			for _, lateness := range latenesses {
				sp := base
				sp.outOfOrderness, sp.lateness = ooo, lateness
				out = append(out, sp)
			}
		}
	}
	return out
}

// TestAgainstModel runs the example on random inputs for every window
// kind, with and without out-of-orderness and allowed lateness, at
// parallelism 1, 2 and 4, and compares its output with the model's.
func TestAgainstModel(t *testing.T) {
	inputs := []struct {
		name  string
		shape inputShape
		specs []spec
	}{
		{"epoch", defaultShape, specs(1000, 250, 200, []int64{0, 250}, []int64{0, 400})},
		// Around time 0 (negative timestamps), more keys, windows small
		// next to the disorder.
		{"zero", inputShape{lines: 3000, keys: 60, start: -20_000, step: 15, disorder: 400, far: 3000},
			specs(200, 100, 60, []int64{0, 150, 1000}, []int64{0, 1500})},
	}
	var total modelStats
	for i, in := range inputs {
		csv, recs := genInput(uint64(i+1), in.shape)
		input := writeFile(t, in.name+".csv", csv)
		for _, sp := range in.specs {
			want, st := model(recs, sp)
			t.Logf("%s, %v: %d lines, %+v", in.name, sp, len(want), st)
			total.late += st.late
			total.refirings += st.refirings
			total.merges += st.merges
			total.absorbedLate += st.absorbedLate
			total.touching += st.touching
			for _, p := range []string{"1", "2", "4"} {
				args := append([]string{"--input", input, "-p", p}, sp.args()...)
				if p == "4" {
					// Every exchange through the record codecs, as over
					// the network.
					args = append(args, "-D", "pipeline.force-serialization=true")
				}
				res := run(t, args...)
				if res.code != 0 {
					t.Fatalf("%s, %v at -p %s: exit %d\n%s", in.name, sp, p, res.code, res.stderr)
				}
				if d := multisetDiff(lines(res.stdout), want); d != "" {
					t.Errorf("%s, %v at -p %s (windowcount %s) differs from the model: %s", in.name, sp, p, strings.Join(args, " "), d)
				}
			}
		}
	}
	// The inputs must exercise what the test is about.
	if total.late == 0 || total.refirings == 0 || total.merges == 0 || total.absorbedLate == 0 || total.touching == 0 {
		t.Errorf("the inputs exercise too little: %+v", total)
	}
}

// TestEmbeddedSample runs the example without flags, on its embedded
// sample.
func TestEmbeddedSample(t *testing.T) {
	var recs []record
	for i, line := range strings.Split(sample, "\n") {
		ev, ok, err := parseLine(line)
		if err != nil {
			t.Fatalf("sample line %d: %v", i+1, err)
		}
		if ok {
			recs = append(recs, record{ev.Key, ev.Timestamp})
		}
	}
	for _, sp := range []spec{
		{kind: tumbling, size: defaultWindow.Milliseconds(), slide: defaultWindow.Milliseconds()},
		{kind: session, gap: 30_000, outOfOrderness: 5_000},
	} {
		want, st := model(recs, sp)
		var args []string
		if sp.kind != tumbling {
			args = sp.args()
		}
		res := run(t, args...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d\n%s", sp, res.code, res.stderr)
		}
		if d := multisetDiff(lines(res.stdout), want); d != "" {
			t.Errorf("sample, %v: differs from the model: %s", sp, d)
		}
		if st.late == 0 {
			t.Errorf("sample, %v: no late element", sp)
		}
	}
}

// withMalformed inserts malformed lines into a generated input and
// returns the text, the valid records and the line numbers of the
// malformed lines.
func withMalformed(seed uint64) (string, []record, []int) {
	csv, recs := genInput(seed, inputShape{lines: 2000, keys: 30, start: 1_700_000_000_000, step: 25, disorder: 300, far: 5000})
	ls := lines(csv)
	bad := []string{"key01", "key01,12x", ",1700000000000", "key01,1700000000000,3,4", "key01,1700000000000,lots", "key01;1700000000000"}
	var at []int
	for i, b := range bad {
		pos := 150 + i*300 + i*i // 0-based index of the malformed line
		ls = slices.Insert(ls, pos, b)
		at = append(at, pos+1)
	}
	return strings.Join(ls, "\n") + "\n", recs, at
}

func TestMalformedLineFails(t *testing.T) {
	csv, _, at := withMalformed(2)
	input := writeFile(t, "bad.csv", csv)
	for _, p := range []string{"1", "3"} {
		res := run(t, "--input", input, "-p", p)
		if res.code != 1 {
			t.Fatalf("-p %s: exit %d, want 1\nstderr: %s", p, res.code, res.stderr)
		}
		want := fmt.Sprintf("line %d:", at[0])
		if !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "bad.csv") {
			t.Errorf("-p %s: stderr does not name the file and %q:\n%s", p, want, res.stderr)
		}
	}
}

func TestSkipMalformed(t *testing.T) {
	csv, recs, at := withMalformed(3)
	input := writeFile(t, "bad.csv", csv)
	sp := spec{kind: sliding, size: 1000, slide: 500, outOfOrderness: 100, lateness: 200}
	want, _ := model(recs, sp)
	for _, p := range []string{"1", "3"} {
		res := run(t, append([]string{"--input", input, "--skip-malformed", "-p", p}, sp.args()...)...)
		if res.code != 0 {
			t.Fatalf("-p %s: exit %d\n%s", p, res.code, res.stderr)
		}
		if d := multisetDiff(lines(res.stdout), want); d != "" {
			t.Errorf("-p %s: differs from the model: %s", p, d)
		}
		if msg := fmt.Sprintf("skipped %d malformed lines\n", len(at)); !strings.Contains(res.stderr, msg) {
			t.Errorf("-p %s: stderr does not say %q:\n%s", p, msg, res.stderr)
		}
	}
}

func TestBadFlags(t *testing.T) {
	input := writeFile(t, "in.csv", "a,1\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--slide", "5s"}, "--slide needs --window"},
		{[]string{"--window", "10s", "--session-gap", "5s"}, "--session-gap cannot be combined"},
		{[]string{"--slide", "1s", "--session-gap", "5s"}, "--session-gap cannot be combined"},
		{[]string{"--window", "0s"}, "--window 0s must be positive"},
		{[]string{"--session-gap", "-1s"}, "--session-gap -1s must be positive"},
		{[]string{"--window", "10s", "--slide", "0s"}, "--slide 0s must be positive"},
		{[]string{"--window", "1s", "--slide", "2s"}, "--slide 2s is longer than --window 1s"},
		{[]string{"--out-of-orderness", "-1ms"}, "--out-of-orderness -1ms must not be negative"},
		{[]string{"--allowed-lateness", "-5s"}, "--allowed-lateness -5s must not be negative"},
		{[]string{"--window", "1500us"}, "not a whole number of milliseconds"},
		{[]string{"--window", "ten"}, `invalid value "ten" for flag -window`},
		{[]string{"--input", input, "extra.csv"}, `unexpected argument "extra.csv"`},
		{[]string{"--bogus"}, "bogus"},
		{[]string{"-p", "0x"}, "parallelism"},
	}
	for _, c := range cases {
		res := run(t, c.args...)
		if res.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", c.args, res.code, res.stderr)
			continue
		}
		if !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: stderr does not mention %q:\n%s", c.args, c.want, res.stderr)
		}
	}
	res := run(t, "--input", filepath.Join(t.TempDir(), "missing.csv"))
	if res.code != 1 || !strings.Contains(res.stderr, "missing.csv") {
		t.Errorf("missing input: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestParseLine(t *testing.T) {
	good := []struct {
		line string
		want Event
	}{
		{"a,1", Event{Key: "a", Timestamp: 1}},
		{" user 7 , -1700000000000 , 2.5", Event{Key: "user 7", Timestamp: -1700000000000, Value: 2.5}},
		{"k,4611686018427387904,0", Event{Key: "k", Timestamp: 1 << 62}},
	}
	for _, c := range good {
		ev, ok, err := parseLine(c.line)
		if err != nil || !ok || ev != c.want {
			t.Errorf("parseLine(%q) = %+v, %v, %v; want %+v", c.line, ev, ok, err, c.want)
		}
	}
	for _, blank := range []string{"", "  ", "\t"} {
		if _, ok, err := parseLine(blank); ok || err != nil {
			t.Errorf("parseLine(%q) = %v, %v; want a blank line", blank, ok, err)
		}
	}
	for _, bad := range []string{"a", "a,", ",1", " ,1", "a,1,2,3", "a,1.5", "a,1,x", "a,1,", "a,4611686018427387905", "a,99999999999999999999"} {
		if _, _, err := parseLine(bad); err == nil {
			t.Errorf("parseLine(%q) succeeded, want an error", bad)
		}
	}
}
