package table_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/internal/sql/sqlgen"
	"github.com/weirproject/weir/table"
)

// Random queries (internal/sql/sqlgen) run on weir in batch mode and on
// SQLite over the same rows: each must give SQLite's rows or be refused
// with an error that names a line and a column. The streaming-only shapes
// (window TVFs) must run or be refused cleanly. A panic, a hang, a wrong
// result or an error without a position is a finding.
//
// By default a fixed seed and a bounded number of queries run (./test.sh
// runs this). The environment changes that, for replaying and for the
// longer run of bench/sqlrandom/run.sh:
//
//	WEIR_SQLGEN_SEED=n       the seed (default 1)
//	WEIR_SQLGEN_QUERIES=n    batch queries per seed (default 400, 100 under -race)
//	WEIR_SQLGEN_INDEX=i      run only query i of the seed (a replay)
//	WEIR_SQLGEN_DURATION=d   run seeds SEED, SEED+1, ... for d (e.g. 30m);
//	                         findings are counted, not fatal one by one
//	WEIR_SQLGEN_OUT=dir      write each finding to dir/seed-S-query-I.txt

// Outcomes of one generated query.
const (
	outMatched  = "matched SQLite"
	outRefused  = "refused cleanly"
	outRan      = "ran (streaming)"
	outMismatch = "mismatch"
	outPanic    = "panic"
	outHang     = "hang"
	outUnclear  = "error without position"
	outLite     = "SQLite refused (generator bug)"
)

func isFinding(o string) bool {
	return o != outMatched && o != outRefused && o != outRan
}

// cleanError: weir's planner and parser errors start with the position.
var cleanError = regexp.MustCompile(`^line \d+, column \d+: `)

// errorClass names an error's kind for the counts: its message without
// the position, numbers and quoted names.
func errorClass(msg string) string {
	msg = cleanError.ReplaceAllString(msg, "")
	msg = regexp.MustCompile(`'[^']*'|"[^"]*"|\x60[^\x60]*\x60`).ReplaceAllString(msg, "_")
	msg = regexp.MustCompile(`\b[qt]\d+\.\w+|\bc\d+\b|\d+`).ReplaceAllString(msg, "_")
	if i := strings.IndexAny(msg, ":\n"); i > 0 {
		msg = msg[:i]
	}
	w := strings.Fields(msg)
	if len(w) > 9 {
		w = w[:9]
	}
	return strings.Join(w, " ")
}

type sqlgenConfig struct {
	seed, queries uint64
	index         int64 // -1: all
	duration      time.Duration
	out           string
}

func sqlgenEnv(t *testing.T) sqlgenConfig {
	c := sqlgenConfig{seed: 1, queries: 400, index: -1}
	if raceEnabled {
		c.queries = 100
	}
	num := func(k string, dst *uint64) {
		if v := os.Getenv(k); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", k, v, err)
			}
			*dst = n
		}
	}
	num("WEIR_SQLGEN_SEED", &c.seed)
	num("WEIR_SQLGEN_QUERIES", &c.queries)
	if v := os.Getenv("WEIR_SQLGEN_INDEX"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("WEIR_SQLGEN_INDEX=%q: %v", v, err)
		}
		c.index = n
	}
	if v := os.Getenv("WEIR_SQLGEN_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("WEIR_SQLGEN_DURATION=%q: %v", v, err)
		}
		c.duration = d
	}
	c.out = os.Getenv("WEIR_SQLGEN_OUT")
	return c
}

// sqlgenTables writes the generator's tables as CSV files and into
// SQLite and returns the weir DDL.
func sqlgenTables(t *testing.T, dir string) []string {
	var lite strings.Builder
	var ddl []string
	write := func(tb sqlgen.Table, extra string) {
		if err := os.MkdirAll(filepath.Join(dir, tb.Name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, tb.Name, "data.csv"), []byte(tb.CSV()), 0o644); err != nil {
			t.Fatal(err)
		}
		ddl = append(ddl, fmt.Sprintf("CREATE TABLE %s (%s%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'csv.null-literal' = '\\N')",
			tb.Name, tb.WeirColumns(), extra, filepath.Join(dir, tb.Name)))
	}
	for _, tb := range sqlgen.Tables() {
		write(tb, "")
		lite.WriteString(tb.LiteScript())
	}
	write(sqlgen.StreamTable(), ", WATERMARK FOR ts AS ts - INTERVAL '1' SECOND")
	runLite(t, filepath.Join(dir, "lite.db"), "BEGIN; "+lite.String()+" COMMIT")
	return ddl
}

// sqlgenRunner runs generated queries on one batch and one streaming
// environment.
type sqlgenRunner struct {
	batch, streaming *table.Environment
	db               string
	counts           map[string]int
	refusals         map[string]int
	findings         []string
}

func newSQLGenRunner(t *testing.T) *sqlgenRunner {
	dir := t.TempDir()
	ddl := sqlgenTables(t, dir)
	r := &sqlgenRunner{db: filepath.Join(dir, "lite.db"), counts: map[string]int{}, refusals: map[string]int{}}
	for _, mode := range []string{"batch", "streaming"} {
		env := table.NewEnvironment()
		for _, s := range append([]string{"SET 'execution.runtime-mode' = '" + mode + "'", "SET 'parallelism.default' = '2'"}, ddl...) {
			if _, err := env.ExecuteSQL(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if mode == "batch" {
			r.batch = env
		} else {
			r.streaming = env
		}
	}
	return r
}

// execute runs one statement, turning a panic into an outcome and bounding
// its time.
func execute(env *table.Environment, sql string) (res *table.Result, err error, outcome, detail string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type answer struct {
		res   *table.Result
		err   error
		panic string
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- answer{panic: fmt.Sprintf("%v\n%s", p, debug.Stack())}
			}
		}()
		res, err := env.ExecuteSQL(ctx, sql)
		done <- answer{res: res, err: err}
	}()
	select {
	case a := <-done:
		if a.panic != "" {
			return nil, nil, outPanic, a.panic
		}
		if a.err != nil {
			var pe *runtime.PanicError
			if errors.As(a.err, &pe) {
				return nil, a.err, outPanic, a.err.Error()
			}
			if errors.Is(a.err, context.DeadlineExceeded) {
				return nil, a.err, outHang, a.err.Error()
			}
			if !cleanError.MatchString(a.err.Error()) {
				return nil, a.err, outUnclear, a.err.Error()
			}
			return nil, a.err, outRefused, ""
		}
		return a.res, nil, "", ""
	case <-time.After(90 * time.Second):
		return nil, nil, outHang, "no answer in 90 s"
	}
}

// batchOne runs one generated batch query on both engines.
func (r *sqlgenRunner) batchOne(t *testing.T, q sqlgen.Query) (outcome, detail string) {
	want, lerr := liteRows(r.db, q.Lite)
	res, err, outcome, detail := execute(r.batch, q.Weir)
	switch {
	case outcome == outRefused:
		r.refusals[errorClass(err.Error())]++
		return outcome, ""
	case outcome != "":
		return outcome, detail
	case lerr != nil:
		return outLite, lerr.Error()
	}
	if d := diffRows(resultRows(t, res), want, q.Ordered); d != "" {
		return outMismatch, d
	}
	return outMatched, ""
}

func (r *sqlgenRunner) streamingOne(sql string) (outcome, detail string) {
	_, err, outcome, detail := execute(r.streaming, sql)
	switch outcome {
	case outRefused:
		r.refusals["(streaming) "+errorClass(err.Error())]++
		return outcome, ""
	case "":
		return outRan, ""
	}
	return outcome, detail
}

func (r *sqlgenRunner) record(t *testing.T, cfg sqlgenConfig, seed, i uint64, what, weir, lite, outcome, detail string) {
	r.counts[outcome]++
	if !isFinding(outcome) {
		return
	}
	text := fmt.Sprintf("%s: %s\nreplay: WEIR_SQLGEN_SEED=%d WEIR_SQLGEN_INDEX=%d go test ./table -run TestRandomSQL -count=1 -v\nweir:   %s\nsqlite: %s\n%s\n", what, outcome, seed, i, weir, lite, detail)
	r.findings = append(r.findings, text)
	if cfg.out != "" {
		name := filepath.Join(cfg.out, fmt.Sprintf("seed-%d-%s-%d.txt", seed, what, i))
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Errorf("writing a finding: %v", err)
		}
	}
	if cfg.duration == 0 {
		t.Error(text)
	}
}

// runSeed runs a seed's batch queries, and one streaming query for every
// eight of them.
func (r *sqlgenRunner) runSeed(t *testing.T, cfg sqlgenConfig, seed uint64, deadline time.Time) {
	for i := range cfg.queries {
		if cfg.index >= 0 && i != uint64(cfg.index) {
			continue
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return
		}
		q := sqlgen.Generate(seed, i)
		if cfg.index >= 0 {
			t.Logf("weir:   %s\nsqlite: %s", q.Weir, q.Lite)
		}
		o, d := r.batchOne(t, q)
		r.record(t, cfg, seed, i, "batch", q.Weir, q.Lite, o, d)
		if i%8 == 0 || cfg.index >= 0 {
			s := sqlgen.GenerateStreaming(seed, i)
			if cfg.index >= 0 {
				t.Logf("streaming: %s", s)
			}
			o, d := r.streamingOne(s)
			r.record(t, cfg, seed, i, "streaming", s, "", o, d)
		}
	}
}

func (r *sqlgenRunner) report(t *testing.T, seeds string, took time.Duration) {
	var b strings.Builder
	total := 0
	for _, o := range []string{outMatched, outRefused, outRan, outMismatch, outPanic, outHang, outUnclear, outLite} {
		total += r.counts[o]
	}
	fmt.Fprintf(&b, "sqlgen: seeds %s, %d queries generated in %s\n", seeds, total, took.Round(time.Second))
	for _, o := range []string{outMatched, outRefused, outRan, outMismatch, outPanic, outHang, outUnclear, outLite} {
		fmt.Fprintf(&b, "  %-32s %d\n", o, r.counts[o])
	}
	classes := make([]string, 0, len(r.refusals))
	for c := range r.refusals {
		classes = append(classes, c)
	}
	slices.SortFunc(classes, func(a, b string) int { return r.refusals[b] - r.refusals[a] })
	b.WriteString("  refusals by class:\n")
	for _, c := range classes {
		fmt.Fprintf(&b, "    %5d  %s\n", r.refusals[c], c)
	}
	t.Log(b.String())
}

func TestRandomSQLAgainstSQLite(t *testing.T) {
	requireSQLite(t)
	cfg := sqlgenEnv(t)
	if cfg.out != "" {
		if err := os.MkdirAll(cfg.out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := newSQLGenRunner(t)
	start := time.Now()
	if cfg.duration == 0 {
		r.runSeed(t, cfg, cfg.seed, time.Time{})
		r.report(t, strconv.FormatUint(cfg.seed, 10), time.Since(start))
		return
	}
	deadline := start.Add(cfg.duration)
	seed := cfg.seed
	for time.Now().Before(deadline) {
		r.runSeed(t, cfg, seed, deadline)
		seed++
	}
	r.report(t, fmt.Sprintf("%d..%d", cfg.seed, seed-1), time.Since(start))
	if len(r.findings) > 0 {
		t.Errorf("%d findings (see WEIR_SQLGEN_OUT); the first:\n%s", len(r.findings), r.findings[0])
	}
}
