package parser

import (
	"strings"
	"testing"
)

func id(parts ...string) *Ident { return &Ident{Parts: parts} }

func intLit(s string) *Literal { return &Literal{Kind: IntegerLit, Text: s} }

func strLit(s string) *Literal { return &Literal{Kind: StringLit, Text: s} }

func typ(name string, params ...int) *TypeName {
	t := &TypeName{Name: name}
	if params != nil {
		t.Params = params
	}
	return t
}

func props(kv ...string) []*Property {
	var out []*Property
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &Property{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func interval(v string, unit TimeUnit) *IntervalLiteral {
	return &IntervalLiteral{Value: v, Qualifier: IntervalQualifier{Start: unit, FracPrecision: -1}}
}

func mustQuery(t *testing.T, src string) QueryExpr {
	t.Helper()
	s, err := ParseStatement(src)
	if err != nil {
		t.Fatalf("ParseStatement(%q): %v", src, err)
	}
	return s.(*QueryStatement).Query
}

func TestParseStatements(t *testing.T) {
	sel1 := func(t *testing.T) QueryExpr { return mustQuery(t, "SELECT 1") }
	tests := []struct {
		in   string
		want func(t *testing.T) Statement
	}{
		{`CREATE TEMPORARY TABLE IF NOT EXISTS cat.db.orders (
			id BIGINT NOT NULL COMMENT 'the id',
			price DECIMAL(10, 2),
			total AS price * 2,
			ts TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL,
			part INT METADATA,
			WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
			CONSTRAINT pk PRIMARY KEY (id, part) NOT ENFORCED
		) COMMENT 'orders' PARTITIONED BY (part) WITH ('connector' = 'kafka', 'topic' = 'o''s')
		LIKE base (EXCLUDING ALL, INCLUDING GENERATED, OVERWRITING OPTIONS)`, func(t *testing.T) Statement {
			ty := typ("BIGINT")
			ty.NotNull = true
			return &CreateTable{
				Temporary: true, IfNotExists: true, Name: id("cat", "db", "orders"),
				Schema: TableSchema{
					Columns: []*ColumnDef{
						{Name: "id", Type: ty, Comment: "the id"},
						{Name: "price", Type: typ("DECIMAL", 10, 2)},
						{Name: "total", Kind: ComputedColumn, Expr: &Binary{Op: OpMul, Left: id("price"), Right: intLit("2")}},
						{Name: "ts", Kind: MetadataColumn, Type: typ("TIMESTAMP", 3), MetadataKey: "timestamp", Virtual: true},
						{Name: "part", Kind: MetadataColumn, Type: typ("INT")},
					},
					Watermark:  &Watermark{Column: id("ts"), Expr: &Binary{Op: OpSub, Left: id("ts"), Right: interval("5", "SECOND")}},
					PrimaryKey: &PrimaryKey{Name: "pk", Columns: []string{"id", "part"}, NotEnforced: true},
				},
				Comment:     "orders",
				PartitionBy: []string{"part"},
				Options:     props("connector", "kafka", "topic", "o's"),
				Like: &TableLike{Name: id("base"), Options: []LikeOption{
					{"EXCLUDING", "ALL"}, {"INCLUDING", "GENERATED"}, {"OVERWRITING", "OPTIONS"}}},
			}
		}},
		{"CREATE TABLE t (id INT PRIMARY KEY NOT ENFORCED, v STRING) WITH ('connector' = 'upsert-kafka')", func(t *testing.T) Statement {
			return &CreateTable{Name: id("t"), Schema: TableSchema{
				Columns:    []*ColumnDef{{Name: "id", Type: typ("INT")}, {Name: "v", Type: typ("STRING")}},
				PrimaryKey: &PrimaryKey{Columns: []string{"id"}, NotEnforced: true},
			}, Options: props("connector", "upsert-kafka")}
		}},
		{"CREATE OR REPLACE TABLE t WITH ('connector' = 'print') AS SELECT 1", func(t *testing.T) Statement {
			return &CreateTable{OrReplace: true, Name: id("t"), Options: props("connector", "print"), AsQuery: sel1(t)}
		}},
		{"CREATE VIEW IF NOT EXISTS v (a, b) COMMENT 'c' AS SELECT 1", func(t *testing.T) Statement {
			return &CreateView{IfNotExists: true, Name: id("v"), Columns: []string{"a", "b"}, Comment: "c", Query: sel1(t)}
		}},
		{"CREATE TEMPORARY VIEW v AS SELECT 1", func(t *testing.T) Statement {
			return &CreateView{Temporary: true, Name: id("v"), Query: sel1(t)}
		}},
		{"CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar'", func(t *testing.T) Statement {
			return &CreateFunction{Name: id("count_char"), Identifier: "com.github.nexmark.flink.udf.CountChar"}
		}},
		{"CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS f AS 'pkg.F' LANGUAGE go", func(t *testing.T) Statement {
			return &CreateFunction{Temporary: true, System: true, IfNotExists: true, Name: id("f"), Identifier: "pkg.F", Language: "GO"}
		}},
		{"CREATE DATABASE IF NOT EXISTS c.d COMMENT 'x' WITH ('k' = 'v')", func(t *testing.T) Statement {
			return &CreateDatabase{IfNotExists: true, Name: id("c", "d"), Comment: "x", Options: props("k", "v")}
		}},
		{"CREATE CATALOG mycat WITH ('type' = 'generic_in_memory')", func(t *testing.T) Statement {
			return &CreateCatalog{Name: "mycat", Options: props("type", "generic_in_memory")}
		}},
		{"DROP TABLE IF EXISTS db.t", func(t *testing.T) Statement {
			return &Drop{Kind: ObjTable, IfExists: true, Name: id("db", "t")}
		}},
		{"DROP TEMPORARY VIEW v", func(t *testing.T) Statement { return &Drop{Kind: ObjView, Temporary: true, Name: id("v")} }},
		{"DROP TEMPORARY SYSTEM FUNCTION f", func(t *testing.T) Statement {
			return &Drop{Kind: ObjFunction, Temporary: true, System: true, Name: id("f")}
		}},
		{"DROP DATABASE d CASCADE", func(t *testing.T) Statement { return &Drop{Kind: ObjDatabase, Name: id("d"), Cascade: true} }},
		{"DROP CATALOG c", func(t *testing.T) Statement { return &Drop{Kind: ObjCatalog, Name: id("c")} }},
		{"ALTER TABLE t RENAME TO t2", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterRename, NewName: id("t2")}
		}},
		{"ALTER TABLE IF EXISTS t RENAME a TO b", func(t *testing.T) Statement {
			return &AlterTable{IfExists: true, Name: id("t"), Action: AlterRenameColumn, Column: "a", NewColumn: "b"}
		}},
		{"ALTER TABLE t SET ('k' = 'v', 'k2' = 'v2')", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterSet, Options: props("k", "v", "k2", "v2")}
		}},
		{"ALTER TABLE t RESET ('k', 'k2')", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterReset, Keys: []string{"k", "k2"}}
		}},
		{"ALTER TABLE t ADD c INT FIRST", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterAdd, Schema: TableSchema{Columns: []*ColumnDef{{Name: "c", Type: typ("INT"), First: true}}}}
		}},
		{"ALTER TABLE t ADD (c INT AFTER b, d AS c + 1, WATERMARK FOR ts AS ts, PRIMARY KEY (c) NOT ENFORCED)", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterAdd, Schema: TableSchema{
				Columns: []*ColumnDef{
					{Name: "c", Type: typ("INT"), After: "b"},
					{Name: "d", Kind: ComputedColumn, Expr: &Binary{Op: OpAdd, Left: id("c"), Right: intLit("1")}},
				},
				Watermark:  &Watermark{Column: id("ts"), Expr: id("ts")},
				PrimaryKey: &PrimaryKey{Columns: []string{"c"}, NotEnforced: true},
			}}
		}},
		{"ALTER TABLE t MODIFY (c BIGINT COMMENT 'wider')", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterModify, Schema: TableSchema{Columns: []*ColumnDef{{Name: "c", Type: typ("BIGINT"), Comment: "wider"}}}}
		}},
		{"ALTER TABLE t DROP c", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterDropColumns, Columns: []string{"c"}}
		}},
		{"ALTER TABLE t DROP (c, d)", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterDropColumns, Columns: []string{"c", "d"}}
		}},
		{"ALTER TABLE t DROP PRIMARY KEY", func(t *testing.T) Statement { return &AlterTable{Name: id("t"), Action: AlterDropPrimaryKey} }},
		{"ALTER TABLE t DROP CONSTRAINT pk", func(t *testing.T) Statement {
			return &AlterTable{Name: id("t"), Action: AlterDropConstraint, Constraint: "pk"}
		}},
		{"ALTER TABLE t DROP WATERMARK", func(t *testing.T) Statement { return &AlterTable{Name: id("t"), Action: AlterDropWatermark} }},
		{"ALTER VIEW v RENAME TO w", func(t *testing.T) Statement { return &AlterView{Name: id("v"), NewName: id("w")} }},
		{"ALTER VIEW v AS SELECT 1", func(t *testing.T) Statement { return &AlterView{Name: id("v"), Query: sel1(t)} }},
		{"SHOW TABLES", func(t *testing.T) Statement { return &Show{Kind: ShowTables} }},
		{"SHOW TABLES FROM cat.db NOT LIKE 'a%'", func(t *testing.T) Statement {
			return &Show{Kind: ShowTables, Name: id("cat", "db"), Like: &ShowLike{Not: true, Pattern: "a%"}}
		}},
		{"SHOW VIEWS", func(t *testing.T) Statement { return &Show{Kind: ShowViews} }},
		{"SHOW FUNCTIONS", func(t *testing.T) Statement { return &Show{Kind: ShowFunctions} }},
		{"SHOW USER FUNCTIONS", func(t *testing.T) Statement { return &Show{Kind: ShowUserFunctions} }},
		{"SHOW DATABASES", func(t *testing.T) Statement { return &Show{Kind: ShowDatabases} }},
		{"SHOW CATALOGS", func(t *testing.T) Statement { return &Show{Kind: ShowCatalogs} }},
		{"SHOW JOBS", func(t *testing.T) Statement { return &Show{Kind: ShowJobs} }},
		{"SHOW JOB 'abc'", func(t *testing.T) Statement { return &Show{Kind: ShowJob, JobID: "abc"} }},
		{"SHOW CURRENT CATALOG", func(t *testing.T) Statement { return &Show{Kind: ShowCurrentCatalog} }},
		{"show current database", func(t *testing.T) Statement { return &Show{Kind: ShowCurrentDatabase} }},
		{"SHOW CREATE TABLE db.t", func(t *testing.T) Statement { return &Show{Kind: ShowCreateTable, Name: id("db", "t")} }},
		{"SHOW CREATE VIEW v", func(t *testing.T) Statement { return &Show{Kind: ShowCreateView, Name: id("v")} }},
		{"SHOW COLUMNS FROM t LIKE '%id'", func(t *testing.T) Statement {
			return &Show{Kind: ShowColumns, Name: id("t"), Like: &ShowLike{Pattern: "%id"}}
		}},
		{"DESCRIBE t", func(t *testing.T) Statement { return &Describe{Name: id("t")} }},
		{"DESC EXTENDED db.t", func(t *testing.T) Statement { return &Describe{Extended: true, Name: id("db", "t")} }},
		{"USE CATALOG c", func(t *testing.T) Statement { return &Use{Catalog: true, Name: id("c")} }},
		{"USE c.d", func(t *testing.T) Statement { return &Use{Name: id("c", "d")} }},
		{"SET", func(t *testing.T) Statement { return &Set{} }},
		{"SET 'execution.runtime-mode' = 'batch'", func(t *testing.T) Statement {
			return &Set{HasKey: true, Key: "execution.runtime-mode", Value: "batch"}
		}},
		{"RESET", func(t *testing.T) Statement { return &Reset{} }},
		{"RESET 'table.exec.state.ttl'", func(t *testing.T) Statement { return &Reset{HasKey: true, Key: "table.exec.state.ttl"} }},
		{"INSERT INTO t SELECT 1", func(t *testing.T) Statement { return &Insert{Table: id("t"), Query: sel1(t)} }},
		{"INSERT OVERWRITE db.t /*+ OPTIONS('sink.parallelism' = '2') */ PARTITION (dt = '2020-01-01', h = 1) (a, b) VALUES (1, 2)", func(t *testing.T) Statement {
			return &Insert{Overwrite: true, Table: id("db", "t"),
				Hints:     []*Hint{{Name: "OPTIONS", Options: props("sink.parallelism", "2")}},
				Partition: []*PartitionValue{{Column: "dt", Value: strLit("2020-01-01")}, {Column: "h", Value: intLit("1")}},
				Columns:   []string{"a", "b"},
				Query:     &Values{Rows: [][]Expr{{intLit("1"), intLit("2")}}}}
		}},
		{"INSERT INTO t (SELECT 1)", func(t *testing.T) Statement { return &Insert{Table: id("t"), Query: sel1(t)} }},
		{"EXECUTE INSERT INTO t SELECT 1", func(t *testing.T) Statement { return &Insert{Table: id("t"), Query: sel1(t)} }},
		{"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 1; END", func(t *testing.T) Statement {
			return &StatementSet{Inserts: []*Insert{{Table: id("a"), Query: sel1(t)}, {Table: id("b"), Query: sel1(t)}}}
		}},
		{"EXPLAIN SELECT 1", func(t *testing.T) Statement { return &Explain{Statement: &QueryStatement{Query: sel1(t)}} }},
		{"EXPLAIN PLAN FOR INSERT INTO t SELECT 1", func(t *testing.T) Statement {
			return &Explain{Statement: &Insert{Table: id("t"), Query: sel1(t)}}
		}},
		{"EXPLAIN ESTIMATED_COST, CHANGELOG_MODE, JSON_EXECUTION_PLAN SELECT 1", func(t *testing.T) Statement {
			return &Explain{Details: []string{"ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN"}, Statement: &QueryStatement{Query: sel1(t)}}
		}},
		{"EXPLAIN STATEMENT SET BEGIN INSERT INTO a SELECT 1; END", func(t *testing.T) Statement {
			return &Explain{Statement: &StatementSet{Inserts: []*Insert{{Table: id("a"), Query: sel1(t)}}}}
		}},
		{"STOP JOB 'j1' WITH SAVEPOINT WITH DRAIN", func(t *testing.T) Statement {
			return &StopJob{JobID: "j1", WithSavepoint: true, WithDrain: true}
		}},
		{"STOP JOB 'j1'", func(t *testing.T) Statement { return &StopJob{JobID: "j1"} }},
	}
	for _, tc := range tests {
		s, err := ParseStatement(tc.in)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tc.in, err)
			continue
		}
		want := tc.want(t)
		if !Equal(s, want) {
			t.Errorf("ParseStatement(%q)\n got  %s\n want %s", tc.in, Format(s), Format(want))
		}
		checkRoundTrip(t, s)
	}
}

func TestScript(t *testing.T) {
	src := `-- a script
SET 'execution.runtime-mode' = 'streaming';;
/* block
   comment */ CREATE TABLE t (a INT) WITH ('connector' = 'datagen');
BEGIN STATEMENT SET;
INSERT INTO s1 SELECT a FROM t;
INSERT INTO s2 SELECT a FROM t;
END;
SELECT 'x;y' AS ` + "`a;b`" + ` FROM t -- trailing
`
	stmts, err := ParseScript(src)
	if err != nil {
		t.Fatal(err)
	}
	wantText := []string{
		"SET 'execution.runtime-mode' = 'streaming'",
		"CREATE TABLE t (a INT) WITH ('connector' = 'datagen')",
		"BEGIN STATEMENT SET;\nINSERT INTO s1 SELECT a FROM t;\nINSERT INTO s2 SELECT a FROM t;\nEND",
		"SELECT 'x;y' AS `a;b` FROM t",
	}
	wantPos := []Pos{{2, 1, 12}, {4, 15, 80}, {5, 1, 135}, {9, 1, 225}}
	if len(stmts) != len(wantText) {
		t.Fatalf("got %d statements, want %d", len(stmts), len(wantText))
	}
	for i, s := range stmts {
		if s.SourceText() != wantText[i] {
			t.Errorf("statement %d text %q, want %q", i, s.SourceText(), wantText[i])
		}
		if s.Pos() != wantPos[i] {
			t.Errorf("statement %d at %+v, want %+v", i, s.Pos(), wantPos[i])
		}
		if got := src[s.Pos().Offset:]; !strings.HasPrefix(got, wantText[i]) {
			t.Errorf("statement %d offset does not point at its text", i)
		}
	}
	ss := stmts[2].(*StatementSet)
	if len(ss.Inserts) != 2 || ss.Inserts[1].SourceText() != "INSERT INTO s2 SELECT a FROM t" {
		t.Errorf("statement set inserts: %d, second %q", len(ss.Inserts), ss.Inserts[1].SourceText())
	}
	if stmts[3].(*QueryStatement).Query.(*Select).Items[0].Alias != "a;b" {
		t.Error("alias with ';' lost")
	}
	for _, s := range stmts {
		checkRoundTrip(t, s)
	}
}
