package jdbc

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/stream"
)

// TestRangeSplits: the ranges cover [lo, hi] exactly, in order, and their
// sizes differ by at most one.
func TestRangeSplits(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int64
		n      int
	}{
		{0, 99, 4}, {1, 10, 3}, {-5, 5, 2}, {7, 7, 3}, {0, 2, 8},
		{math.MinInt64, math.MaxInt64, 3}, {math.MaxInt64 - 10, math.MaxInt64, 4}, {math.MinInt64, math.MinInt64 + 4, 5},
	} {
		splits := rangeSplits(tc.lo, tc.hi, tc.n)
		if len(splits) == 0 || len(splits) > tc.n {
			t.Fatalf("%+v: %d splits", tc, len(splits))
		}
		next := tc.lo
		var sizes []uint64
		for i, sp := range splits {
			r := sp.(*RangeSplit)
			if r.Lo != next || r.Hi < r.Lo {
				t.Fatalf("%+v: split %d is [%d, %d], want it to start at %d", tc, i, r.Lo, r.Hi, next)
			}
			sizes = append(sizes, uint64(r.Hi)-uint64(r.Lo))
			next = r.Hi + 1
			if i == len(splits)-1 && r.Hi != tc.hi {
				t.Fatalf("%+v: the last split ends at %d", tc, r.Hi)
			}
		}
		if slices.Max(sizes)-slices.Min(sizes) > 1 {
			t.Fatalf("%+v: sizes %v", tc, sizes)
		}
	}
}

type person struct {
	ID   int64
	Name string
}

func scanPerson(scan func(...any) error) (person, error) {
	var p person
	err := scan(&p.ID, &p.Name)
	return p, err
}

// sourceTable fills table people with n rows whose ids repeat (three rows
// an id) and a few with NULL ids, and returns the rows with an id.
func sourceTable(t *testing.T, n int) (string, []string) {
	t.Helper()
	dsn, db := setup(t, "CREATE TABLE people (id BIGINT, name VARCHAR(64) NOT NULL)")
	var want, values []string
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		values = append(values, fmt.Sprintf("(%d,'%s')", i/3-50, name))
		want = append(want, fmt.Sprintf("%d %s", i/3-50, name))
	}
	values = append(values, "(NULL,'nobody')", "(NULL,'nobody2')")
	if _, err := db.Exec("INSERT INTO people VALUES " + strings.Join(values, ",")); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	return dsn, want
}

func format(ps []person) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%d %s", p.ID, p.Name)
	}
	slices.Sort(out)
	return out
}

type collector struct{ got []person }

func (c *collector) Collect(p person)                       { c.got = append(c.got, p) }
func (c *collector) CollectWithTimestamp(p person, _ int64) { c.got = append(c.got, p) }

// TestSourceSnapshotRestore reads a query in 3 splits with small polls,
// takes a snapshot after every poll, and resumes a new reader from each
// of them: what the first reader emitted up to the snapshot plus what the
// resumed reader emits is every row exactly once.
func TestSourceSnapshotRestore(t *testing.T) {
	dsn, want := sourceTable(t, 300)
	src, err := NewSource(SourceOptions{DSN: dsn, Query: "SELECT id, name FROM people", SplitColumn: "id", Splits: 3, PollRows: 10}, scanPerson)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	splits, err := src.Splits(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(splits) != 3 {
		t.Fatalf("%d splits, want 3", len(splits))
	}
	r, err := src.NewReader(ctx, connector.SplitContext{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.AddSplits(splits); err != nil {
		t.Fatal(err)
	}
	var out collector
	resumes := 0
	for {
		status, err := r.Poll(ctx, &out)
		if err != nil {
			t.Fatal(err)
		}
		if status == connector.EndOfInput {
			break
		}
		snap, err := r.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if resumes%7 == 0 { // resuming after every poll would be slow
			data, err := src.EncodeSplits(snap)
			if err != nil {
				t.Fatal(err)
			}
			restored, err := src.DecodeSplits(data)
			if err != nil {
				t.Fatal(err)
			}
			r2, _ := src.NewReader(ctx, connector.SplitContext{Parallelism: 1})
			r2.AddSplits(restored)
			rest := collector{got: slices.Clone(out.got)}
			for {
				st, err := r2.Poll(ctx, &rest)
				if err != nil {
					t.Fatal(err)
				}
				if st == connector.EndOfInput {
					break
				}
			}
			r2.Close()
			if d := diffLines(format(rest.got), want); d != "" {
				t.Fatalf("resumed after %d rows: %s", len(out.got), d)
			}
		}
		resumes++
	}
	if d := diffLines(format(out.got), want); d != "" {
		t.Fatal(d)
	}
	if resumes < 20 {
		t.Fatalf("only %d polls: the test did not resume in the middle of splits", resumes)
	}
}

// TestSourceJob reads a table with a job at parallelism 2 and with given
// bounds.
func TestSourceJob(t *testing.T) {
	dsn, want := sourceTable(t, 1000)
	src, err := NewSource(SourceOptions{DSN: dsn, Query: "SELECT id, name FROM people", SplitColumn: "id", PollRows: 50}, scanPerson)
	if err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironmentWithConfig(nil).SetParallelism(2)
	got := stream.Collect(stream.FromSource(env, src, "people"))
	if err := env.Execute(context.Background(), "read"); err != nil {
		t.Fatal(err)
	}
	if d := diffLines(format(got.Values()), want); d != "" {
		t.Fatal(d)
	}

	lo, hi := int64(0), int64(9)
	src, err = NewSource(SourceOptions{DSN: dsn, Query: "SELECT id, name FROM people WHERE name <> 'p0'", SplitColumn: "id", Lower: &lo, Upper: &hi, Splits: 4}, scanPerson)
	if err != nil {
		t.Fatal(err)
	}
	env = stream.NewEnvironmentWithConfig(nil).SetParallelism(2)
	got = stream.Collect(stream.FromSource(env, src, "people"))
	if err := env.Execute(context.Background(), "read"); err != nil {
		t.Fatal(err)
	}
	var bounded []string
	for _, w := range want {
		var id int64
		fmt.Sscan(w, &id)
		if id >= lo && id <= hi {
			bounded = append(bounded, w)
		}
	}
	if d := diffLines(format(got.Values()), bounded); d != "" {
		t.Fatal(d)
	}
}

func TestSourceErrors(t *testing.T) {
	scan := scanPerson
	lo, hi := int64(5), int64(1)
	for _, tc := range []struct {
		opts SourceOptions
		want string
	}{
		{SourceOptions{Query: "SELECT 1", SplitColumn: "id"}, "no DSN"},
		{SourceOptions{DSN: "u@tcp(h:1)/d", SplitColumn: "id"}, "no query"},
		{SourceOptions{DSN: "u@tcp(h:1)/d", Query: "SELECT 1"}, "no split column"},
		{SourceOptions{DSN: "u@tcp(h:1)/d", Query: "SELECT 1", SplitColumn: "id", Lower: &lo, Upper: &hi}, "are empty"},
	} {
		if _, err := NewSource(tc.opts, scan); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.opts, err, tc.want)
		}
	}
	dsn, _ := sourceTable(t, 10)
	src, err := NewSource(SourceOptions{DSN: dsn, Query: "SELECT id, name FROM people", SplitColumn: "nope"}, scan)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Splits(context.Background(), 2); err == nil || !strings.Contains(err.Error(), "split column nope") {
		t.Fatalf("got %v", err)
	}
}

// diffLines reports how two sorted multisets of lines differ.
func diffLines(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	seen := make(map[string]int)
	for _, g := range got {
		seen[g]++
	}
	for _, w := range want {
		seen[w]--
	}
	var extra, missing []string
	for k, n := range seen {
		for ; n > 0; n-- {
			extra = append(extra, k)
		}
		for ; n < 0; n++ {
			missing = append(missing, k)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return fmt.Sprintf("%d rows, want %d: extra %q, missing %q", len(got), len(want), extra[:min(5, len(extra))], missing[:min(5, len(missing))])
}
