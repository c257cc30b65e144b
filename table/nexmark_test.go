package table_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	sqlnexmark "github.com/weirproject/weir/internal/sql/connectors/nexmark"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/table"
)

// nexmarkPlanErrors are the reference queries that do not run yet, with
// the planner's error for each (a part of it): such a query must fail
// with it. When the planner learns what a query needs, its entry goes
// and the query must then give the DataStream query's results.
var nexmarkPlanErrors = map[string]string{
	// The reference's WHERE refers to rownum, an alias of the same
	// SELECT: Flink refuses it too (see nexmark.Q6).
	"q6": "Column 'rownum' not found in any table",
}

// The test's events: 100,000 (issue 32 asks for the reference SQL's
// final tables on that many) at 1,000 a second of event time, so that no
// two share a millisecond (ORDER BY dateTime has no ties), from 2 s
// before a midnight, so that the daily reports see two days.
const nexmarkTestEvents = 100_000

// nexmarkEventsOverride is NEXMARK_EVENTS, the number of events to run
// every query on instead (a longer check than the suite's), or 0.
func nexmarkEventsOverride(t *testing.T) int64 {
	s := os.Getenv("NEXMARK_EVENTS")
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		t.Fatalf("NEXMARK_EVENTS=%q: want a positive number of events", s)
	}
	return n
}

func nexmarkTestSource() sqlnexmark.Source {
	c := nexmark.DefaultConfig()
	c.FirstEventRate = 1000
	c.BaseTime = time.Date(2023, 11, 14, 23, 59, 58, 0, time.UTC).UnixMilli()
	return sqlnexmark.Source{Config: c, Events: nexmarkTestEvents}
}

// collected holds the records of the test's result tables, by the
// 'id' option of their 'nexmark-test-collect' connector.
var collected = struct {
	sync.Mutex
	records map[string][]types.Record
}{records: map[string][]types.Record{}}

func init() {
	planner.RegisterSink("nexmark-test-collect", func(c *planner.TableContext, in *planner.Rows, _ []planner.Field, _ bool) error {
		if err := c.CheckOptions([]string{"id"}); err != nil {
			return err
		}
		id, _ := c.Option("id")
		stream.SinkTo(in, collectSink{id: id}, "Sink: collect").UID(c.UID("collect"))
		return nil
	})
}

type collectSink struct{ id string }

func (s collectSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[types.Record], error) {
	return s, nil
}

func (s collectSink) Write(r types.Record, _ int64) error {
	collected.Lock()
	defer collected.Unlock()
	collected.records[s.id] = append(collected.records[s.id], r)
	return nil
}

func (collectSink) Flush() error { return nil }
func (collectSink) Close() error { return nil }

// runNexmarkSQL runs a reference query's script at parallelism p and
// returns its result table's changelog.
func runNexmarkSQL(ctx context.Context, q string, src sqlnexmark.Source, p int, sideInput string) ([]types.Record, error) {
	tenv := table.NewEnvironment()
	if err := sqlnexmark.RegisterFunctions(tenv.Functions()); err != nil {
		return nil, err
	}
	script, err := sqlnexmark.Script(q, sqlnexmark.ScriptOptions{Source: src, SideInput: sideInput,
		Sink: map[string]string{"connector": "nexmark-test-collect", "id": q}})
	if err != nil {
		return nil, err
	}
	stmts, err := parser.ParseScript(script)
	if err != nil {
		return nil, err
	}
	for _, s := range []string{"SET 'parallelism.default' = '" + itoa(p) + "'", "SET 'table.local-time-zone' = 'UTC'"} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			return nil, err
		}
	}
	collected.Lock()
	delete(collected.records, q)
	collected.Unlock()
	for _, st := range stmts {
		res, err := tenv.Execute(ctx, st)
		if err != nil {
			return nil, err
		}
		if res.Job != nil {
			if err := res.Job.Wait(); err != nil {
				return nil, err
			}
		}
	}
	collected.Lock()
	defer collected.Unlock()
	return collected.records[q], nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// runNexmarkDataStream runs the nexmark package's query on the same
// events at parallelism p and returns its final table.
func runNexmarkDataStream(ctx context.Context, q string, src sqlnexmark.Source, p int) ([][]any, error) {
	cfg := config.New()
	config.Parallelism.Set(cfg, p)
	env := stream.NewEnvironmentWithConfig(cfg)
	rows := sqlnexmark.DataStreams[q].Attach(nexmark.Events(env, src.Config, src.Events))
	if err := env.Execute(ctx, "nexmark-"+q); err != nil {
		return nil, err
	}
	return rows(), nil
}

// TestNexmarkSQLMatchesDataStream runs the reference suite's SQL for q0
// to q22 (nexmark-flink's DDL, views and query files, adapted only in
// their connectors' options) on the nexmark connector, and the nexmark
// package's DataStream query on the same events, both at parallelism 2,
// and compares the SQL's final table (its changelog applied) with the
// DataStream query's results. Queries the planner cannot run yet must
// fail with the error nexmarkPlanErrors records.
func TestNexmarkSQLMatchesDataStream(t *testing.T) {
	const p = 2
	src := nexmarkTestSource()
	side := filepath.Join(t.TempDir(), "side_input.csv")
	if err := sqlnexmark.WriteSideInput(side); err != nil {
		t.Fatal(err)
	}
	for _, q := range sqlnexmark.QueryNames() {
		t.Run(q, func(t *testing.T) {
			if only := os.Getenv("NEXMARK_QUERY"); only != "" && only != q {
				t.Skip("NEXMARK_QUERY=" + only)
			}
			timeout := time.Minute
			src := src
			if n := nexmarkEventsOverride(t); n > 0 {
				src.Events, timeout = n, 30*time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			changelog, err := runNexmarkSQL(ctx, q, src, p, side)
			if wantErr, ok := nexmarkPlanErrors[q]; ok {
				switch {
				case err == nil:
					t.Fatalf("%s ran, but nexmarkPlanErrors says it fails with %q: compare its results (remove its entry)", q, wantErr)
				case !strings.Contains(err.Error(), wantErr):
					t.Fatalf("%s: error %q, want one with %q", q, err, wantErr)
				}
				t.Logf("%s does not run yet: %v", q, err)
				return
			}
			if err != nil {
				t.Fatalf("SQL: %v", err)
			}
			sqlTook := time.Since(start)
			got, err := sqlnexmark.FinalTable(changelog)
			if err != nil {
				t.Fatalf("SQL changelog: %v", err)
			}
			ds := sqlnexmark.DataStreams[q]
			start = time.Now()
			want, err := runNexmarkDataStream(ctx, q, src, p)
			if err != nil {
				t.Fatalf("DataStream: %v", err)
			}
			if ds.Normalize != nil {
				got, want = ds.Normalize(got), ds.Normalize(want)
			}
			if len(want) == 0 {
				t.Fatalf("the DataStream query gave no results: the test would compare nothing")
			}
			diff := sqlnexmark.Compare(got, want, 1e-9)
			switch {
			case diff != "" && ds.Differs == "":
				t.Errorf("SQL final table differs from the DataStream query's: %s", diff)
			case diff == "" && ds.Differs != "":
				t.Errorf("SQL final table equals the DataStream query's, which should differ (%s): update DataStreams", ds.Differs)
			}
			t.Logf("%d changes, %d final rows, as the DataStream query (SQL %v, DataStream %v)", len(changelog), len(got), sqlTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		})
	}
}
