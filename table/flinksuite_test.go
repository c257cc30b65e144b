package table_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// The Flink-derived suite: the input rows, the queries and the expected
// rows of Flink's own tests (the planner's ITCases, the built-in
// functions' expression tests) and of the examples in Flink's SQL
// documentation, re-expressed as datadriven files under
// testdata/flink/<area>/. Each case names where its facts come from
// (source=(File, testMethod)); the rows are Flink's, not a model's.
//
// Directives:
//
//	table name=T
//	<column definitions, as in CREATE TABLE, on one line>
//	<rows, fields separated by '|', \N for NULL>
//	----
//
// writes the rows to a CSV file and declares T as a filesystem table over
// it (WATERMARK clauses included in the columns line);
//
//	exec
//	<statements, each ending with ';' at a line's end>
//	----
//
// runs DDL or SET statements as they are;
//
//	query [mode=batch|streaming] [parallelism=N] [ordered] [changelog] [plus]
//	<SQL>
//	----
//	<Flink's expected rows>
//
// runs the query and compares its rows with Flink's: the final table, or
// with changelog every record with its kind (+I(a,b), or +I[a, b] with
// plus), as a multiset unless ordered; rows print as Flink's Row.toString
// does, fields joined by ',' (or as +I[a, b] with plus);
//
//	eval [from=T]
//	<expression>
//	----
//	<Flink's result, as CAST(... AS STRING), or NULL>
//
// evaluates SELECT <expression> [FROM T] in batch mode, as Flink's
// expression tests do over their one row of test data. With
// flink-error=(what), Flink refuses the case (its message is the expected
// output) and weir must refuse it too.
//
// Cases weir does not pass yet stay in the files, marked: expect-error=(s)
// says the case is refused with an error containing s; expect-wrong=(why)
// says it runs but its rows differ from Flink's. The runner checks that a
// marked case still fails that way, so a fix shows up as a failure that
// asks for the mark to go; skip=(why) is for a case whose outcome is not
// deterministic in weir (it is counted as not passing). Run with
// -flinksuite.report to print the per-area table of docs/sql.md, and with
// -flinksuite.write-docs to put it there.

var (
	flinkReport = flag.Bool("flinksuite.report", false, "print the Flink-derived suite's table (for docs/sql.md)")
	// flinkTriage lists unmarked failures, one a line, instead of failing:
	// for marking new cases.
	flinkTriage = flag.Bool("flinksuite.triage", false, "list the Flink-derived cases that fail and are not marked")
	// flinkWriteDocs puts a full run's table into docs/sql.md.
	flinkWriteDocs = flag.Bool("flinksuite.write-docs", false, "write the Flink-derived suite's table into docs/sql.md")
)

// flinkCase is one case's outcome, for the report.
type flinkCase struct {
	area, pos, source, status, reason string
}

var (
	flinkMu    sync.Mutex
	flinkCases []flinkCase
)

func TestFlinkSuite(t *testing.T) {
	root := filepath.Join("testdata", "flink")
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".txt") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	flinkMu.Lock()
	flinkCases = nil
	flinkMu.Unlock()
	ran := 0
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		t.Run(rel, func(t *testing.T) {
			ran++
			r := newFlinkRunner(t, filepath.Dir(rel))
			datadriven.RunTest(t, f, r.run)
		})
	}
	table := flinkSuiteTable()
	if *flinkReport {
		fmt.Print(table)
	}
	// docs/sql.md holds the table of a full run: a case that is added, or
	// that starts or stops passing, shows here until the docs say so.
	if ran == len(files) && !t.Failed() && !*flinkTriage {
		path := filepath.Join("..", "docs", "sql.md")
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		const begin, end = "<!-- flinksuite:begin -->\n", "<!-- flinksuite:end -->"
		before, after, ok1 := strings.Cut(string(doc), begin)
		inDoc, rest, ok2 := strings.Cut(after, end)
		switch {
		case !ok1 || !ok2:
			t.Fatalf("docs/sql.md has no %q ... %q section for the suite's table", begin, end)
		case *flinkWriteDocs:
			if err := os.WriteFile(path, []byte(before+begin+table+end+rest), 0o644); err != nil {
				t.Fatal(err)
			}
		case inDoc != table:
			t.Errorf("docs/sql.md's table of the Flink-derived suite is out of date; rewrite it with\n" +
				"  go test ./table -run 'TestFlinkSuite$' -count=1 -flinksuite.write-docs")
		}
	}
}

// flinkSuiteTable renders the counts per area and the failing cases.
func flinkSuiteTable() string {
	flinkMu.Lock()
	defer flinkMu.Unlock()
	type counts struct{ n, pass, fail, skip int }
	per := map[string]*counts{}
	var total counts
	for _, c := range flinkCases {
		a := per[c.area]
		if a == nil {
			a = &counts{}
			per[c.area] = a
		}
		for _, x := range []*counts{a, &total} {
			x.n++
			switch c.status {
			case "pass":
				x.pass++
			case "skip":
				x.skip++
			default:
				x.fail++
			}
		}
	}
	var b strings.Builder
	b.WriteString("| area | cases | pass | fail | skipped |\n|---|---:|---:|---:|---:|\n")
	areas := slices.Sorted(func(yield func(string) bool) {
		for a := range per {
			if !yield(a) {
				return
			}
		}
	})
	for _, a := range areas {
		c := per[a]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", a, c.n, c.pass, c.fail, c.skip)
	}
	fmt.Fprintf(&b, "| **total** | **%d** | **%d** | **%d** | **%d** |\n", total.n, total.pass, total.fail, total.skip)
	// The failing cases, those of one test and one reason on one line
	// (most run at two parallelisms).
	b.WriteString("\n| cases (file:line) | from | status | why |\n|---|---|---|---|\n")
	type group struct{ file, source, status, reason string }
	var order []group
	lines := map[group][]string{}
	for _, c := range flinkCases {
		if c.status == "pass" {
			continue
		}
		file, line, _ := strings.Cut(strings.TrimPrefix(c.pos, "testdata/flink/"), ":")
		g := group{file, c.source, c.status, c.reason}
		if _, ok := lines[g]; !ok {
			order = append(order, g)
		}
		lines[g] = append(lines[g], line)
	}
	for _, g := range order {
		fmt.Fprintf(&b, "| %s:%s | %s | %s | %s |\n", g.file, strings.Join(lines[g], ", "), g.source, g.status, strings.ReplaceAll(g.reason, "|", "\\|"))
	}
	return b.String()
}

type flinkRunner struct {
	area string
	dir  string
	tenv *table.Environment
}

func newFlinkRunner(t *testing.T, area string) *flinkRunner {
	r := &flinkRunner{area: area, dir: t.TempDir(), tenv: table.NewEnvironment()}
	r.exec(t, "SET 'table.local-time-zone' = 'UTC'")
	return r
}

func (r *flinkRunner) exec(t *testing.T, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.tenv.ExecuteSQL(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func argVal(d *datadriven.TestData, key string) (string, bool) {
	a, ok := d.Arg(key)
	if !ok {
		return "", false
	}
	return strings.Join(a.Vals, ", "), true
}

func (r *flinkRunner) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "table":
		r.table(t, d)
		return ""
	case "exec":
		for _, s := range splitStatements(d.Input) {
			r.exec(t, s)
		}
		return ""
	case "query", "eval":
		return r.check(t, d)
	}
	t.Fatalf("%s: unknown directive %q", d.Pos, d.Cmd)
	return ""
}

func splitStatements(s string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(s, "\n") {
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out
}

func (r *flinkRunner) table(t *testing.T, d *datadriven.TestData) {
	name, ok := argVal(d, "name")
	if !ok {
		t.Fatalf("%s: table needs name=", d.Pos)
	}
	lines := strings.Split(d.Input, "\n")
	dir := filepath.Join(r.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var data strings.Builder
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) != "" {
			data.WriteString(l)
			data.WriteByte('\n')
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data.csv"), []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r.exec(t, fmt.Sprintf("DROP TABLE IF EXISTS %s", name))
	r.exec(t, fmt.Sprintf(`CREATE TABLE %s (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv',
		'csv.field-delimiter' = '|', 'csv.null-literal' = '\N')`, name, lines[0], dir))
}

// check runs a query or an expression and compares it with Flink's rows.
func (r *flinkRunner) check(t *testing.T, d *datadriven.TestData) string {
	source, _ := argVal(d, "source")
	c := flinkCase{area: r.area, pos: d.Pos, source: source}
	if source == "" {
		t.Errorf("%s: a case must say where it comes from (source=...)", d.Pos)
	}
	record := func() {
		flinkMu.Lock()
		flinkCases = append(flinkCases, c)
		flinkMu.Unlock()
	}
	defer record()
	if why, ok := argVal(d, "skip"); ok {
		c.status, c.reason = "skip", why
		return d.Expected
	}
	got, err := r.runCase(d)
	want := strings.TrimSuffix(d.Expected, "\n")
	ordered := d.HasArg("ordered")
	same := err == nil && sameRows(got, want, ordered)
	if flinkErr, ok := argVal(d, "flink-error"); ok {
		// Flink refuses the statement (its message is the expected output):
		// weir passes when it refuses it too, whatever its words.
		same = err != nil
		if same {
			err = nil
		} else {
			err = fmt.Errorf("runs (giving %q) where Flink refuses it: %s", got, flinkErr)
		}
	}
	if sub, ok := argVal(d, "expect-error"); ok {
		c.status, c.reason = "fail", "error: "+sub
		switch {
		case err == nil && same:
			t.Errorf("%s: passes now: drop expect-error", d.Pos)
		case err == nil:
			t.Errorf("%s: marked expect-error=(%s) but runs, with rows that differ from Flink's:\n%s", d.Pos, sub, got)
		case !strings.Contains(err.Error(), sub):
			t.Errorf("%s: marked expect-error=(%s) but fails with: %v", d.Pos, sub, err)
		}
		return d.Expected
	}
	if why, ok := argVal(d, "expect-wrong"); ok {
		c.status, c.reason = "fail", "wrong rows: "+why+"; Flink: "+firstLine(want)
		switch {
		case err != nil:
			t.Errorf("%s: marked expect-wrong but fails with: %v", d.Pos, err)
		case same:
			t.Errorf("%s: passes now: drop expect-wrong", d.Pos)
		}
		return d.Expected
	}
	if *flinkTriage && (err != nil || !same) {
		msg := "wrong\t" + strings.ReplaceAll(got, "\n", " ; ")
		if err != nil {
			msg = "error\t" + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		fmt.Printf("TRIAGE\t%s\t%s\n", d.Pos, msg)
		c.status = "fail"
		return d.Expected
	}
	if err != nil {
		c.status, c.reason = "fail", "error: "+err.Error()
		t.Errorf("%s (%s): %v", d.Pos, source, err)
		return d.Expected
	}
	if same {
		c.status = "pass"
		return d.Expected
	}
	c.status, c.reason = "fail", "wrong rows"
	if !ordered {
		got = sortedLines(got)
	}
	return got + "\n"
}

// firstLine shortens expected rows for the report.
func firstLine(s string) string {
	l, _, more := strings.Cut(s, "\n")
	if len(l) > 60 {
		l, more = l[:60], true
	}
	if l == "" {
		l = "(no rows)"
	}
	if more {
		l += " ..."
	}
	return "`" + l + "`"
}

func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

func sameRows(got, want string, ordered bool) bool {
	if ordered {
		return got == want
	}
	return sortedLines(got) == sortedLines(want)
}

// runCase runs one case and renders its rows, one a line.
func (r *flinkRunner) runCase(d *datadriven.TestData) (string, error) {
	mode, p := "batch", "1"
	if v, ok := argVal(d, "mode"); ok {
		mode = v
	}
	if v, ok := argVal(d, "parallelism"); ok {
		p = v
	}
	sql := strings.TrimSpace(d.Input)
	if d.Cmd == "eval" {
		mode, sql = "batch", "SELECT "+sql
		if from, ok := argVal(d, "from"); ok {
			sql += " FROM " + from
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range []string{
		"SET 'execution.runtime-mode' = '" + mode + "'",
		"SET 'parallelism.default' = '" + p + "'",
	} {
		if _, err := r.tenv.ExecuteSQL(ctx, s); err != nil {
			return "", err
		}
	}
	res, err := r.tenv.ExecuteSQL(ctx, sql)
	if err != nil {
		return "", err
	}
	if d.Cmd == "eval" {
		if len(res.Rows) != 1 || len(res.Rows[0].Row) != 1 {
			return "", fmt.Errorf("an expression gave %d rows", len(res.Rows))
		}
		v := res.Rows[0].Row[0]
		if v == nil {
			return "NULL", nil
		}
		return types.CastToString(v, res.Columns[0].Type, time.UTC), nil
	}
	plus := d.HasArg("plus")
	var lines []string
	if d.HasArg("changelog") {
		for _, rec := range res.Rows {
			if plus {
				lines = append(lines, javaRow(res, rec.Row, rec.Kind.String(), true))
			} else {
				lines = append(lines, rec.Kind.String()+"("+javaRow(res, rec.Row, "", false)+")")
			}
		}
		return strings.Join(lines, "\n"), nil
	}
	var rows []types.Row
	for _, rec := range res.Rows {
		if rec.Kind.IsAccumulate() {
			rows = append(rows, rec.Row)
			continue
		}
		k := javaRow(res, rec.Row, "", false)
		i := len(rows) - 1
		for i >= 0 && javaRow(res, rows[i], "", false) != k {
			i--
		}
		if i < 0 {
			return "", fmt.Errorf("%s of a row the result does not hold", rec)
		}
		rows = append(rows[:i], rows[i+1:]...)
	}
	for _, row := range rows {
		lines = append(lines, javaRow(res, row, "+I", plus))
	}
	return strings.Join(lines, "\n"), nil
}

// javaRow renders a row as Flink's Row.toString: "+I[a, b]" with plus,
// otherwise the fields joined by ',' (the form of the older ITCases).
func javaRow(res *table.Result, row types.Row, kind string, plus bool) string {
	f := make([]string, len(row))
	for i, v := range row {
		f[i] = javaValue(v, res.Columns[i].Type)
	}
	if plus {
		return kind + "[" + strings.Join(f, ", ") + "]"
	}
	return strings.Join(f, ",")
}

// javaValue renders a field as Java's toString of Flink's external type
// does: null, true/false, LocalDateTime as 2020-10-10T00:00:05 (seconds
// left out when they and the fraction are zero, the fraction in groups of
// three digits), Instant with a trailing Z.
func javaValue(v any, t types.DataType) string {
	if v == nil {
		return "null"
	}
	switch t.Kind {
	case types.KindBoolean:
		if v.(bool) {
			return "true"
		}
		return "false"
	case types.KindTimestamp, types.KindTimestampLTZ:
		t9 := t
		t9.Precision = 9
		s := types.CastToString(v, t9, time.UTC)
		s = s[:10] + "T" + javaTime(s[11:])
		if t.Kind == types.KindTimestampLTZ {
			s += "Z"
		}
		return s
	case types.KindTime:
		t9 := t
		t9.Precision = 9
		return javaTime(types.CastToString(v, t9, time.UTC))
	}
	return types.CastToString(v, t, time.UTC)
}

// javaTime shortens HH:mm:ss.nnnnnnnnn as LocalTime.toString does.
func javaTime(s string) string {
	hm, sec, frac := s[:5], s[6:8], s[9:]
	switch {
	case strings.TrimRight(frac, "0") == "":
		if sec == "00" {
			return hm
		}
		return hm + ":" + sec
	case frac[3:] == "000000":
		return hm + ":" + sec + "." + frac[:3]
	case frac[6:] == "000":
		return hm + ":" + sec + "." + frac[:6]
	}
	return hm + ":" + sec + "." + frac
}
