// Package table is weir's Table API and SQL entry point: an Environment
// holds a catalog of tables and views and the session's settings, and
// runs SQL statements (DDL, SET, SHOW, DESCRIBE, EXPLAIN, INSERT INTO and
// queries) by planning them onto the DataStream runtime of package
// stream, so that SQL jobs get the same checkpoints, savepoints, sinks and
// cluster as DataStream jobs.
//
//	tenv := table.NewEnvironment()
//	_, err := tenv.ExecuteSQL(ctx, `CREATE TABLE clicks (user STRING, url STRING) WITH ('connector' = 'filesystem', 'path' = 'clicks.csv', 'format' = 'csv')`)
//	res, err := tenv.ExecuteSQL(ctx, `SELECT user, COUNT(*) FROM clicks GROUP BY user`)
package table

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// Environment is a SQL session: a catalog, settings and functions.
type Environment struct {
	cat   *catalog.Catalog
	funcs *functions.Registry
	conns *planner.Connectors

	mu       sync.Mutex
	settings map[string]string
	// base is the configuration every job starts from (flags, a config
	// file); SET adds to it.
	base *config.Configuration
	// streams, when set, is the stream environment whose job SQLQuery's
	// tables become part of (NewStreamEnvironment).
	streams *stream.Environment
	// submit, when set, sends INSERT jobs to a cluster (WithJobSubmitter).
	submit JobSubmitter
	// clock, when set, is the processing-time clock of every job
	// (WithClock).
	clock runtime.Clock
}

// Option configures an Environment.
type Option func(*Environment)

// WithCatalog uses a catalog, such as one persisted in a file
// (catalog.Load).
func WithCatalog(c *catalog.Catalog) Option { return func(e *Environment) { e.cat = c } }

// WithConfig starts every job from a configuration (parallelism,
// checkpoints, state backend); SET statements override its keys.
func WithConfig(c *config.Configuration) Option { return func(e *Environment) { e.base = c } }

// WithPrintOutput sends the print connector's rows to w.
func WithPrintOutput(w io.Writer) Option { return func(e *Environment) { e.conns.Print = w } }

// WithFilePacer paces the reading of the filesystem tables whose 'path'
// is path (file.RatePacer for a rate, or a test's own Pacer).
func WithFilePacer(path string, p file.Pacer) Option {
	return func(e *Environment) {
		if e.conns.Pacers == nil {
			e.conns.Pacers = map[string]file.Pacer{}
		}
		e.conns.Pacers[path] = p
	}
}

// WithClock runs every job on a processing-time clock of its own
// (runtime.NewManualClock in tests).
func WithClock(c runtime.Clock) Option { return func(e *Environment) { e.clock = c } }

// NewEnvironment returns a session with an empty in-memory catalog.
func NewEnvironment(opts ...Option) *Environment {
	e := &Environment{
		cat:      catalog.New(),
		funcs:    functions.NewRegistry(),
		conns:    &planner.Connectors{},
		settings: map[string]string{},
		base:     config.New(),
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Catalog returns the session's catalog.
func (e *Environment) Catalog() *catalog.Catalog { return e.cat }

// Functions returns the session's function registry, where Go functions
// are registered for SQL (RegisterScalar, RegisterFunc, RegisterAggregate,
// RegisterTableFunc).
func (e *Environment) Functions() *functions.Registry { return e.funcs }

// Setting returns a session setting and whether it is set.
func (e *Environment) Setting(key string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.settings[key]
	if !ok {
		v, ok = e.base.Map()[key]
	}
	return v, ok
}

// ResultKind says what a statement returned.
type ResultKind int

const (
	// ResultOK is a statement that only changed the session or catalog.
	ResultOK ResultKind = iota
	// ResultRows carries rows (SHOW, DESCRIBE, a query).
	ResultRows
	// ResultJob is a job that was submitted (INSERT INTO).
	ResultJob
	// ResultText is text to print as is (EXPLAIN).
	ResultText
)

// Column is a column of a result.
type Column struct {
	Name string
	Type types.DataType
}

// Result is what a statement returned.
type Result struct {
	Kind    ResultKind
	Columns []Column
	// Rows of SHOW and DESCRIBE, or the records of a query, as the query
	// produced them (a changelog when it updates).
	Rows []types.Record
	// Updating says whether Rows is a changelog with updates.
	Updating bool
	Text     string
	Job      *stream.JobClient
	// JobID is the cluster's ID of a job submitted to a remote cluster
	// (WithJobSubmitter); Job is nil then.
	JobID string
	// Stream delivers a running query's records as they come; it is
	// closed when the query ends. Set for queries run with Stream.
	Stream <-chan types.Record
	loc    *time.Location
}

func okResult() *Result { return &Result{Kind: ResultOK} }

func stringRows(name string, vals []string) *Result {
	r := &Result{Kind: ResultRows, Columns: []Column{{Name: name, Type: types.String().NotNull()}}}
	for _, v := range vals {
		r.Rows = append(r.Rows, types.Record{Kind: types.Insert, Row: types.Row{v}})
	}
	return r
}

// ExecuteSQL runs one statement. Queries and INSERT INTO run as jobs: a
// query's rows are returned when it ends (use Query for an unbounded one);
// INSERT INTO returns once the job is submitted, or once it has finished
// when 'table.dml-sync' is true.
func (e *Environment) ExecuteSQL(ctx context.Context, sql string) (*Result, error) {
	st, err := parser.ParseStatement(sql)
	if err != nil {
		return nil, err
	}
	return e.Execute(ctx, st)
}

// Execute runs a parsed statement; see ExecuteSQL.
func (e *Environment) Execute(ctx context.Context, st parser.Statement) (*Result, error) {
	switch s := st.(type) {
	case *parser.CreateTable:
		return e.createTable(s)
	case *parser.CreateView:
		return e.createView(s)
	case *parser.CreateFunction:
		return e.createFunction(s)
	case *parser.CreateDatabase:
		return okResult(), e.cat.CreateDatabase("", s.Name.Parts[len(s.Name.Parts)-1], s.Comment, s.IfNotExists)
	case *parser.CreateCatalog:
		return okResult(), e.cat.CreateCatalog(s.Name, s.IfNotExists)
	case *parser.Drop:
		if s.Kind == parser.ObjDatabase || s.Kind == parser.ObjCatalog {
			return nil, fmt.Errorf("DROP %s is not supported yet", s.Kind)
		}
		p, err := e.cat.Resolve(s.Name.Parts)
		if err != nil {
			return nil, err
		}
		return okResult(), e.cat.Drop(string(s.Kind), p, s.IfExists)
	case *parser.AlterTable:
		return e.alterTable(s)
	case *parser.Show:
		return e.show(s)
	case *parser.Describe:
		return e.describe(s.Name)
	case *parser.Use:
		if s.Catalog {
			return okResult(), e.cat.UseCatalog(s.Name.Parts[0])
		}
		return okResult(), e.cat.UseDatabase(s.Name.Parts)
	case *parser.Set:
		return e.set(s)
	case *parser.Reset:
		e.mu.Lock()
		if s.HasKey {
			delete(e.settings, s.Key)
		} else {
			clear(e.settings)
		}
		e.mu.Unlock()
		return okResult(), nil
	case *parser.Explain:
		return e.explain(s)
	case *parser.Insert:
		return e.insert(ctx, []*parser.Insert{s}, s.SourceText())
	case *parser.StatementSet:
		return e.insert(ctx, s.Inserts, s.SourceText())
	case *parser.QueryStatement:
		return e.query(ctx, s)
	}
	return nil, fmt.Errorf("line %d, column %d: %T statements are not supported yet", st.Pos().Line, st.Pos().Column, st)
}

func (e *Environment) set(s *parser.Set) (*Result, error) {
	if !s.HasKey {
		e.mu.Lock()
		keys := slices.Sorted(maps.Keys(e.settings))
		r := &Result{Kind: ResultRows, Columns: []Column{{"key", types.String()}, {"value", types.String()}}}
		for _, k := range keys {
			r.Rows = append(r.Rows, types.Record{Row: types.Row{k, e.settings[k]}})
		}
		e.mu.Unlock()
		return r, nil
	}
	// Keys of the runtime are checked now, so that a typo fails at SET.
	if !sessionOnly(s.Key) {
		if err := config.New().Set(s.Key, s.Value); err != nil {
			return nil, err
		}
	}
	if err := planner.CheckExecOption(s.Key, s.Value); err != nil {
		return nil, err
	}
	if s.Key == "table.local-time-zone" {
		if _, err := time.LoadLocation(s.Value); err != nil {
			return nil, fmt.Errorf("table.local-time-zone: %q is not a time zone: %w", s.Value, err)
		}
	}
	e.mu.Lock()
	e.settings[s.Key] = s.Value
	e.mu.Unlock()
	return okResult(), nil
}

// sessionOnly keys belong to the SQL layer, not to the runtime's
// configuration.
func sessionOnly(key string) bool {
	return strings.HasPrefix(key, "table.") || strings.HasPrefix(key, "sql-client.") || key == "pipeline.name" ||
		key == "execution.savepoint.path" || key == "execution.savepoint.ignore-unclaimed-state"
}

func (e *Environment) createTable(s *parser.CreateTable) (*Result, error) {
	if s.AsQuery != nil || s.Like != nil {
		return nil, fmt.Errorf("line %d, column %d: CREATE TABLE ... AS and LIKE are not supported yet", s.Pos().Line, s.Pos().Column)
	}
	p, err := e.cat.Resolve(s.Name.Parts)
	if err != nil {
		return nil, err
	}
	t := &catalog.Table{Path: p, Options: map[string]string{}, Comment: s.Comment, Temporary: s.Temporary, PartitionBy: s.PartitionBy}
	for _, c := range s.Schema.Columns {
		col, err := column(c)
		if err != nil {
			return nil, err
		}
		if t.Column(col.Name) >= 0 {
			return nil, fmt.Errorf("line %d, column %d: column %s is defined twice", c.Pos().Line, c.Pos().Column, c.Name)
		}
		t.Columns = append(t.Columns, col)
	}
	if w := s.Schema.Watermark; w != nil {
		t.Watermark = &catalog.Watermark{Column: w.Column.Parts[len(w.Column.Parts)-1], Expr: parser.Format(w.Expr)}
	}
	if pk := s.Schema.PrimaryKey; pk != nil {
		if !pk.NotEnforced {
			return nil, fmt.Errorf("line %d, column %d: Flink doesn't support ENFORCED mode for PRIMARY KEY constraint. ENFORCED/NOT ENFORCED controls if the constraint checks are performed on the incoming/outgoing data. Flink does not own the data therefore the only supported mode is the NOT ENFORCED mode", pk.Pos().Line, pk.Pos().Column)
		}
		for _, c := range pk.Columns {
			i := t.Column(c)
			if i < 0 {
				return nil, fmt.Errorf("line %d, column %d: primary key column %s is not a column of the table", pk.Pos().Line, pk.Pos().Column, c)
			}
			t.Columns[i].Type = t.Columns[i].Type.NotNull()
		}
		t.PrimaryKey = pk.Columns
	}
	for _, o := range s.Options {
		t.Options[o.Key] = o.Value
	}
	// Plan a scan now, so that a bad computed column or watermark fails
	// at CREATE TABLE rather than at the first query.
	if _, err := e.planner().PlanQuery(&parser.Select{Items: []*parser.SelectItem{{Expr: &parser.Star{}}}, From: &parser.TableName{Name: s.Name}}); err != nil && !strings.Contains(err.Error(), "not found") {
		// The table is not in the catalog yet; validate against a
		// scratch copy.
		_ = err
	}
	if err := e.cat.CreateTable(t, s.IfNotExists, s.OrReplace); err != nil {
		return nil, err
	}
	if _, err := e.planner().PlanQuery(&parser.Select{Items: []*parser.SelectItem{{Expr: &parser.Star{}}}, From: &parser.TableName{Name: s.Name}}); err != nil {
		_ = e.cat.Drop("TABLE", p, true)
		return nil, err
	}
	return okResult(), nil
}

func column(c *parser.ColumnDef) (catalog.Column, error) {
	col := catalog.Column{Name: c.Name, Comment: c.Comment, MetadataKey: c.MetadataKey, Virtual: c.Virtual}
	switch c.Kind {
	case parser.ComputedColumn:
		col.Kind = catalog.Computed
		col.Expr = parser.Format(c.Expr)
		return col, nil
	case parser.MetadataColumn:
		col.Kind = catalog.Metadata
	}
	t, err := catalog.DataTypeOf(c.Type)
	if err != nil {
		return col, err
	}
	col.Type = t
	return col, nil
}

func (e *Environment) createView(s *parser.CreateView) (*Result, error) {
	p, err := e.cat.Resolve(s.Name.Parts)
	if err != nil {
		return nil, err
	}
	plan, err := e.planner().PlanQuery(s.Query)
	if err != nil {
		return nil, err
	}
	if len(s.Columns) > 0 && len(s.Columns) != len(plan.Fields()) {
		return nil, fmt.Errorf("view %s: %d column names for a query of %d columns", p, len(s.Columns), len(plan.Fields()))
	}
	v := &catalog.View{Path: p, Query: parser.Format(s.Query), Columns: s.Columns, Comment: s.Comment, Temporary: s.Temporary}
	return okResult(), e.cat.CreateView(v, s.IfNotExists)
}

func (e *Environment) createFunction(s *parser.CreateFunction) (*Result, error) {
	p, err := e.cat.Resolve(s.Name.Parts)
	if err != nil {
		return nil, err
	}
	if s.Language != "" && s.Language != "GO" {
		return nil, fmt.Errorf("CREATE FUNCTION ... LANGUAGE %s: weir runs functions written in Go, registered with the Table API", s.Language)
	}
	return okResult(), e.cat.CreateFunction(&catalog.Function{Path: p, Identifier: s.Identifier, Temporary: s.Temporary}, s.IfNotExists)
}

func (e *Environment) alterTable(s *parser.AlterTable) (*Result, error) {
	p, err := e.cat.Resolve(s.Name.Parts)
	if err != nil {
		return nil, err
	}
	t, err := e.cat.Table(p)
	if err != nil {
		if s.IfExists {
			return okResult(), nil
		}
		return nil, err
	}
	c := *t
	c.Options = maps.Clone(t.Options)
	c.Columns = slices.Clone(t.Columns)
	switch s.Action {
	case parser.AlterRename:
		return okResult(), e.cat.RenameTable(p, s.NewName.Parts[len(s.NewName.Parts)-1])
	case parser.AlterSet:
		for _, o := range s.Options {
			c.Options[o.Key] = o.Value
		}
	case parser.AlterReset:
		for _, k := range s.Keys {
			delete(c.Options, k)
		}
	case parser.AlterAdd:
		for _, cd := range s.Schema.Columns {
			col, err := column(cd)
			if err != nil {
				return nil, err
			}
			if c.Column(col.Name) >= 0 {
				return nil, fmt.Errorf("table %s already has a column %s", p, col.Name)
			}
			c.Columns = append(c.Columns, col)
		}
		if w := s.Schema.Watermark; w != nil {
			c.Watermark = &catalog.Watermark{Column: w.Column.Parts[len(w.Column.Parts)-1], Expr: parser.Format(w.Expr)}
		}
	case parser.AlterDropColumns:
		for _, name := range s.Columns {
			i := c.Column(name)
			if i < 0 {
				return nil, fmt.Errorf("table %s has no column %s", p, name)
			}
			c.Columns = slices.Delete(c.Columns, i, i+1)
		}
	case parser.AlterDropWatermark:
		c.Watermark = nil
	case parser.AlterRenameColumn:
		i := c.Column(s.Column)
		if i < 0 {
			return nil, fmt.Errorf("table %s has no column %s", p, s.Column)
		}
		c.Columns[i].Name = s.NewColumn
	default:
		return nil, fmt.Errorf("ALTER TABLE ... %s is not supported yet", s.Action)
	}
	return okResult(), e.cat.AlterTable(&c)
}

func (e *Environment) show(s *parser.Show) (*Result, error) {
	switch s.Kind {
	case parser.ShowTables:
		return stringRows("table name", like(e.cat.Names("TABLE"), s.Like)), nil
	case parser.ShowViews:
		return stringRows("view name", like(e.cat.Names("VIEW"), s.Like)), nil
	case parser.ShowFunctions, parser.ShowUserFunctions:
		return stringRows("function name", like(e.cat.Names("FUNCTION"), s.Like)), nil
	case parser.ShowDatabases:
		return stringRows("database name", e.cat.Databases()), nil
	case parser.ShowCatalogs:
		return stringRows("catalog name", e.cat.Catalogs()), nil
	case parser.ShowCurrentCatalog:
		c, _ := e.cat.Current()
		return stringRows("current catalog name", []string{c}), nil
	case parser.ShowCurrentDatabase:
		_, d := e.cat.Current()
		return stringRows("current database name", []string{d}), nil
	case parser.ShowColumns:
		return e.describe(s.Name)
	case parser.ShowCreateTable:
		p, err := e.cat.Resolve(s.Name.Parts)
		if err != nil {
			return nil, err
		}
		t, err := e.cat.Table(p)
		if err != nil {
			return nil, err
		}
		return &Result{Kind: ResultText, Text: ShowCreateTable(t)}, nil
	}
	return nil, fmt.Errorf("SHOW %s is not supported yet", s.Kind)
}

// like filters names by a SHOW ... LIKE pattern (% and _).
func like(names []string, l *parser.ShowLike) []string {
	if l == nil {
		return names
	}
	var out []string
	for _, n := range names {
		a, b := n, l.Pattern
		if l.ILike {
			a, b = strings.ToLower(a), strings.ToLower(b)
		}
		if matchLike(a, b) != l.Not {
			out = append(out, n)
		}
	}
	return out
}

func matchLike(s, p string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if matchLike(s[i:], p[1:]) {
				return true
			}
		}
		return false
	case '_':
		return s != "" && matchLike(s[1:], p[1:])
	}
	return s != "" && s[0] == p[0] && matchLike(s[1:], p[1:])
}

// ShowCreateTable renders a table's DDL.
func ShowCreateTable(t *catalog.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", t.Path)
	var lines []string
	for _, c := range t.Columns {
		switch c.Kind {
		case catalog.Computed:
			lines = append(lines, fmt.Sprintf("  `%s` AS %s", c.Name, c.Expr))
		case catalog.Metadata:
			l := fmt.Sprintf("  `%s` %s METADATA", c.Name, c.Type)
			if c.MetadataKey != "" {
				l += fmt.Sprintf(" FROM '%s'", c.MetadataKey)
			}
			if c.Virtual {
				l += " VIRTUAL"
			}
			lines = append(lines, l)
		default:
			lines = append(lines, fmt.Sprintf("  `%s` %s", c.Name, c.Type))
		}
	}
	if t.Watermark != nil {
		lines = append(lines, fmt.Sprintf("  WATERMARK FOR `%s` AS %s", t.Watermark.Column, t.Watermark.Expr))
	}
	if len(t.PrimaryKey) > 0 {
		lines = append(lines, fmt.Sprintf("  PRIMARY KEY (`%s`) NOT ENFORCED", strings.Join(t.PrimaryKey, "`, `")))
	}
	b.WriteString(strings.Join(lines, ",\n"))
	b.WriteString("\n)")
	if t.Comment != "" {
		fmt.Fprintf(&b, "\nCOMMENT '%s'", strings.ReplaceAll(t.Comment, "'", "''"))
	}
	if len(t.PartitionBy) > 0 {
		fmt.Fprintf(&b, "\nPARTITIONED BY (`%s`)", strings.Join(t.PartitionBy, "`, `"))
	}
	b.WriteString(" WITH (\n")
	keys := slices.Sorted(maps.Keys(t.Options))
	for i, k := range keys {
		sep := ","
		if i == len(keys)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  '%s' = '%s'%s\n", k, strings.ReplaceAll(t.Options[k], "'", "''"), sep)
	}
	b.WriteString(")\n")
	return b.String()
}

// describe lists a table's or view's columns as Flink's DESCRIBE does.
func (e *Environment) describe(name *parser.Ident) (*Result, error) {
	s := types.String()
	r := &Result{Kind: ResultRows, Columns: []Column{{"name", s}, {"type", s}, {"null", types.Boolean()}, {"key", s}, {"extras", s}, {"watermark", s}}}
	p, err := e.cat.Resolve(name.Parts)
	if err != nil {
		return nil, err
	}
	t, err := e.cat.Table(p)
	if err != nil {
		plan, perr := e.planner().PlanQuery(&parser.Select{Items: []*parser.SelectItem{{Expr: &parser.Star{}}}, From: &parser.TableName{Name: name}})
		if perr != nil {
			return nil, err
		}
		for _, f := range plan.Fields() {
			r.Rows = append(r.Rows, types.Record{Row: types.Row{f.Name, typeName(f.Type), f.Type.IsNullable(), nil, nil, nil}})
		}
		return r, nil
	}
	plan, err := e.planner().PlanQuery(&parser.Select{Items: []*parser.SelectItem{{Expr: &parser.Star{}}}, From: &parser.TableName{Name: name}})
	if err != nil {
		return nil, err
	}
	fields := plan.Fields()
	for i, c := range t.Columns {
		var key, extras, wm any
		if slices.Contains(t.PrimaryKey, c.Name) {
			key = "PRI(" + strings.Join(t.PrimaryKey, ", ") + ")"
		}
		switch c.Kind {
		case catalog.Computed:
			extras = "AS " + c.Expr
		case catalog.Metadata:
			x := "METADATA"
			if c.MetadataKey != "" {
				x += " FROM '" + c.MetadataKey + "'"
			}
			if c.Virtual {
				x += " VIRTUAL"
			}
			extras = x
		}
		if t.Watermark != nil && t.Watermark.Column == c.Name {
			wm = t.Watermark.Expr
		}
		r.Rows = append(r.Rows, types.Record{Row: types.Row{c.Name, typeName(fields[i].Type), fields[i].Type.IsNullable(), key, extras, wm}})
	}
	return r, nil
}

// typeName is a type as DESCRIBE shows it: without NOT NULL (a column of
// its own), with Flink's *ROWTIME* marker.
func typeName(t types.DataType) string {
	s := t.Nullable().String()
	switch t.TimeAttr {
	case types.TimeAttrRowtime:
		s += " *ROWTIME*"
	case types.TimeAttrProctime:
		s += " *PROCTIME*"
	}
	return s
}

func (e *Environment) location() *time.Location {
	if tz, ok := e.Setting("table.local-time-zone"); ok {
		if l, err := time.LoadLocation(tz); err == nil {
			return l
		}
	}
	return time.Local
}

func (e *Environment) planner() *planner.Planner {
	return &planner.Planner{Catalog: e.cat, Funcs: e.funcs, Ctx: &functions.Context{Loc: e.location(), Now: time.Now()}}
}

// Batch reports whether the session runs queries in batch mode
// ('execution.runtime-mode' = 'batch').
func (e *Environment) Batch() bool { return e.batch() }

func (e *Environment) batch() bool {
	v, _ := e.Setting("execution.runtime-mode")
	return strings.EqualFold(v, "batch")
}

func (e *Environment) explain(s *parser.Explain) (*Result, error) {
	var q parser.QueryExpr
	switch st := s.Statement.(type) {
	case *parser.QueryStatement:
		q = st.Query
	case *parser.Insert:
		q = st.Query
	default:
		return nil, fmt.Errorf("EXPLAIN of %T is not supported", st)
	}
	plan, err := e.planner().PlanQuery(q)
	if err != nil {
		return nil, err
	}
	opts, err := e.execOptions()
	if err != nil {
		return nil, err
	}
	text := "== Optimized Logical Plan ==\n" + planner.ExplainWith(plan, opts, e.batch())
	if slices.Contains(s.Details, "CHANGELOG_MODE") {
		mode := "[I]"
		if planner.Updating(plan, e.batch()) {
			mode = "[I,UB,UA,D]"
		}
		text += "\nchangelogMode=" + mode + "\n"
	}
	return &Result{Kind: ResultText, Text: text}, nil
}

// environment makes the stream environment of a job from the base
// configuration and the session's settings.
func (e *Environment) environment() (*stream.Environment, error) {
	cfg := e.base.Clone()
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range e.settings {
		if sessionOnly(k) {
			continue
		}
		if err := cfg.Set(k, v); err != nil {
			return nil, err
		}
	}
	env := stream.NewEnvironmentWithConfig(cfg)
	if e.clock != nil {
		env.SetClock(e.clock)
	}
	// Flink's keys for starting a job from a savepoint or a retained
	// checkpoint; the SQL operators' UIDs derive from the statement, so the
	// same statement finds its state.
	if path := e.settings["execution.savepoint.path"]; path != "" {
		env.RestoreFrom(path, e.settings["execution.savepoint.ignore-unclaimed-state"] == "true")
	}
	return env, nil
}

// execOptions reads the table.exec.* options of the session's settings.
func (e *Environment) execOptions() (planner.ExecOptions, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return planner.ParseExecOptions(e.settings)
}

func (e *Environment) jobName(text string) string {
	if n, ok := e.Setting("pipeline.name"); ok {
		return n
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > 80 {
		text = text[:80] + "…"
	}
	return text
}

func (e *Environment) insert(ctx context.Context, inserts []*parser.Insert, text string) (*Result, error) {
	env, err := e.environment()
	if err != nil {
		return nil, err
	}
	pl := e.planner()
	tr := planner.NewTranslator(env, strings.Join(strings.Fields(text), " "), e.batch(), e.conns, e.funcs, pl.Ctx)
	if tr.Opts, err = e.execOptions(); err != nil {
		return nil, err
	}
	for _, ins := range inserts {
		if err := e.planInsert(pl, tr, ins); err != nil {
			return nil, err
		}
	}
	if e.submit != nil {
		return e.submitRemote(ctx, env, text)
	}
	job, err := env.ExecuteAsync(ctx, e.jobName(text))
	if err != nil {
		return nil, err
	}
	if sync, _ := e.Setting("table.dml-sync"); sync == "true" {
		if err := job.Wait(); err != nil {
			return nil, err
		}
	}
	return &Result{Kind: ResultJob, Job: job}, nil
}

func (e *Environment) planInsert(pl *planner.Planner, tr *planner.Translator, ins *parser.Insert) error {
	if len(ins.Partition) > 0 || ins.Overwrite {
		return fmt.Errorf("line %d, column %d: INSERT OVERWRITE and PARTITION are not supported yet", ins.Pos().Line, ins.Pos().Column)
	}
	p, err := e.cat.Resolve(ins.Table.Parts)
	if err != nil {
		return err
	}
	t, err := e.cat.Table(p)
	if err != nil {
		return fmt.Errorf("line %d, column %d: %w", ins.Table.Pos().Line, ins.Table.Pos().Column, err)
	}
	plan, err := pl.PlanQuery(ins.Query)
	if err != nil {
		return err
	}
	plan, err = planner.CastToSink(plan, t, ins.Columns)
	if err != nil {
		return fmt.Errorf("line %d, column %d: %w", ins.Pos().Line, ins.Pos().Column, err)
	}
	rows, err := tr.Translate(plan)
	if err != nil {
		return err
	}
	return e.conns.Sink(tr, t, rows, plan.Fields(), planner.Updating(plan, tr.Batch), planner.ProducerOfUpdates(plan, tr.Batch))
}

// query runs a query to its end and returns its rows.
func (e *Environment) query(ctx context.Context, s *parser.QueryStatement) (*Result, error) {
	res, err := e.Query(ctx, s)
	if err != nil {
		return nil, err
	}
	for r := range res.Stream {
		res.Rows = append(res.Rows, r)
	}
	if err := res.Job.Wait(); err != nil {
		return nil, err
	}
	res.Stream = nil
	return res, nil
}

// Query starts a query and returns at once with its columns, its job and
// a channel of its records; the channel closes when the job ends. Cancel
// the job to stop an unbounded query.
func (e *Environment) Query(ctx context.Context, s *parser.QueryStatement) (*Result, error) {
	if e.submit != nil {
		return nil, errRemoteQuery(s.Pos().Line, s.Pos().Column)
	}
	pl := e.planner()
	plan, err := pl.PlanQuery(s.Query)
	if err != nil {
		return nil, err
	}
	env, err := e.environment()
	if err != nil {
		return nil, err
	}
	tr := planner.NewTranslator(env, strings.Join(strings.Fields(s.SourceText()), " "), e.batch(), e.conns, e.funcs, pl.Ctx)
	if tr.Opts, err = e.execOptions(); err != nil {
		return nil, err
	}
	rows, err := tr.Translate(plan)
	if err != nil {
		return nil, err
	}
	ch := make(chan types.Record, 1024)
	sink := &channelSink{ch: ch}
	stream.SinkTo(rows, sink, tr.OpName("collect")).SetParallelism(1)
	job, err := env.ExecuteAsync(ctx, e.jobName(s.SourceText()))
	if err != nil {
		return nil, err
	}
	go func() {
		// The sink's writers are gone once the job is done; the channel
		// closes then, whatever the outcome.
		<-job.Done()
		sink.close()
	}()
	res := &Result{Kind: ResultRows, Job: job, Stream: ch, Updating: planner.Updating(plan, tr.Batch), loc: pl.Ctx.Loc}
	for _, f := range plan.Fields() {
		res.Columns = append(res.Columns, Column{Name: f.Name, Type: f.Type})
	}
	return res, nil
}

// channelSink hands a query's records to the client as they arrive.
type channelSink struct {
	mu     sync.Mutex
	ch     chan types.Record
	closed bool
}

func (s *channelSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[types.Record], error) {
	return s, nil
}

func (s *channelSink) Write(r types.Record, _ int64) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		s.ch <- r
	}
	return nil
}

func (s *channelSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

func (s *channelSink) Flush() error { return nil }
func (s *channelSink) Close() error { return nil }

var (
	_ = os.Stdout
	_ = strconv.Itoa
)
