// Package parser reads Flink's SQL dialect into a typed syntax tree, and
// prints trees back as SQL.
//
// No Go SQL parser handles Flink's extensions (CREATE TABLE ... WITH,
// WATERMARK FOR, window table-valued functions, FOR SYSTEM_TIME AS OF,
// statement sets), so this is a hand-written lexer and recursive-descent
// parser. It only builds syntax: it does not resolve names or types; the
// planner maps TypeName and FuncCall onto internal/sql/types and
// internal/sql/functions. The package uses the standard library only.
//
// # Entry points
//
//	ParseScript(src)    statements separated by ';' (the SQL client's
//	                    BEGIN STATEMENT SET; ...; END; is one statement)
//	ParseStatement(src) exactly one statement
//	ParseExpr(src)      a scalar expression
//	ParseType(src)      a data type
//	Format(node)        SQL text that parses back to an Equal tree
//	Equal(a, b)         tree equality ignoring positions and source text
//	Inspect(node, fn)   depth-first walk
//
// Errors are *Error values with a 1-based Line and Column (counted in
// characters) and a message such as "expected ')' but found 'FROM'". No input
// makes the parser panic (FuzzParse checks this, and that Format's output
// parses back to the same tree); nesting deeper than 500 levels is an error.
//
// # Lexical decisions
//
// Keywords are case-insensitive; identifiers keep their case, as Flink is
// case-sensitive on names. Identifiers are quoted with backquotes, a backquote inside
// a quoted name being doubled; double quotes are an error. Only the
// reserved words listed in keywords.go need quoting: they are the part of
// Flink's reserved words that this grammar needs to stay unambiguous, so the
// parser accepts some names Flink would want quoted (e.g. value, year).
// Comments are -- to end of line and /* ... */; /*+ ... */ is a hint, kept in
// the tree where Flink allows hints (after SELECT, after a table name in
// FROM, after the table of INSERT) and a syntax error elsewhere.
//
// # The tree
//
// Every node has Pos() (line, column, byte offset of its first token).
// Statements also keep their exact source text (SourceText, without the
// ';'). Parentheses are not recorded: the tree's structure carries the
// grouping, and Format adds parentheses where precedence needs them.
//
// Statements (Statement):
//
//	*CreateTable     CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] name
//	                 (columns, WATERMARK, PRIMARY KEY) [COMMENT] [PARTITIONED BY]
//	                 [WITH (...)] [LIKE t (...)] [AS query]; the schema is a
//	                 TableSchema of *ColumnDef (physical, computed, metadata),
//	                 *Watermark and *PrimaryKey (a column's inline PRIMARY KEY
//	                 is moved there)
//	*CreateView, *CreateFunction, *CreateDatabase, *CreateCatalog
//	*Drop            DROP TABLE|VIEW|FUNCTION|DATABASE|CATALOG (Kind)
//	*AlterTable      RENAME, RENAME col, SET, RESET, ADD, MODIFY, DROP ... (Action)
//	*AlterView       RENAME TO | AS query
//	*Show            SHOW ... (Kind; Name, JobID, Like as applicable)
//	*Describe, *Use, *Set, *Reset
//	*Insert          INSERT INTO|OVERWRITE (EXECUTE INSERT parses to the same)
//	*StatementSet    EXECUTE STATEMENT SET BEGIN ... END and BEGIN STATEMENT SET; ... END
//	*Explain         EXPLAIN [PLAN FOR | details] statement
//	*StopJob         STOP JOB 'id' [WITH SAVEPOINT] [WITH DRAIN]
//	*QueryStatement  a query on its own
//
// Queries (QueryExpr): *Select, *SetOp (UNION/INTERSECT/EXCEPT [ALL]; MINUS
// is EXCEPT; INTERSECT binds tighter), *Values (rows of expressions), and
// *Query, which wraps a body with WITH (*CTE), ORDER BY (*OrderItem), LIMIT
// and OFFSET and is only made when one of those is present. LIMIT n and
// FETCH FIRST n ROWS ONLY both become Query.Limit.
//
// FROM items (TableRef): *TableName (with hints, FOR SYSTEM_TIME AS OF and
// alias), *DerivedTable ([LATERAL] (query) alias), *Join (INNER, LEFT, RIGHT,
// FULL, CROSS, and CommaJoin for FROM a, b; ON or USING; NATURAL), *TableFunc
// ([LATERAL] TABLE(f(...)) for user table functions), *WindowTVF (TUMBLE,
// HOP, CUMULATE, SESSION with their arguments sorted into fields whether
// they were given by position or by name, checked for count and kind), and
// *Unnest; *MatchRecognize wraps any of the single items above (input
// MATCH_RECOGNIZE (...) [AS alias]) with its clauses: PARTITION BY, ORDER
// BY, MEASURES (*MatchMeasure, with RUNNING/FINAL), ONE ROW / ALL ROWS PER
// MATCH, AFTER MATCH SKIP (*MatchSkip), PATTERN (a PatternTerm tree:
// *PatternVar, *PatternConcat, *PatternAlt, *PatternQuant with Min, Max and
// Reluctant for * + ? {n} {n,} {n,m} {,m} and their '?' forms,
// *PatternPermute, *PatternExclude {- -}; ^ and $ as StrictStart and
// StrictEnd), WITHIN, SUBSET and DEFINE. FIRST, LAST, PREV, NEXT and
// MATCH_ROWTIME are plain *FuncCall nodes; the planner gives them their
// meaning. Pattern groups are kept as written ((A B) C is a sequence inside
// a sequence) and Format parenthesises them again.
//
// Expressions (Expr): *Ident (a.b.c as one node: the planner decides which
// parts are table, column and fields), *Star (* and t.*), *Literal (Kind and
// Text; numbers keep their text so the planner can choose INT, BIGINT or
// DECIMAL; a negative number is a *Unary minus over a literal),
// *IntervalLiteral (with IntervalQualifier; plural units are normalised),
// *Unary, *Binary (OR, AND, comparisons, IS [NOT] DISTINCT FROM, + - * / %
// ||), *Is, *Between, *Like (also SIMILAR TO), *In (list or subquery),
// *FuncCall (DISTINCT, COUNT(*) as a *Star argument, WITHIN GROUP, FILTER,
// OVER *WindowSpec with *WindowFrame; niladic CURRENT_TIMESTAMP and the like
// have NoParens), *Cast (also TRY_CAST), *Case, *Extract, *Position, *Trim,
// *Substring (both syntaxes), *Overlay, *FloorCeil (FLOOR/CEIL x TO unit;
// plain FLOOR(x) is a FuncCall), *TimestampAdd, *TimestampDiff, *ArrayCtor,
// *MapCtor, *RowExpr (ROW(a, b) and (a, b)), *Exists, *Subquery, *Index,
// *FieldAccess (a field of something other than a name, e.g. f(x).a),
// *Descriptor, *TableArg and *NamedArg (table function arguments), and
// *GroupingSets, *Rollup, *Cube (GROUP BY only).
//
// Precedence follows Calcite, Flink's parser: OR < AND < NOT < IS,
// comparison, IN < LIKE, SIMILAR, BETWEEN < + - < * / % || < unary + - <
// [index] and .field. Note that || binds like *, tighter than +.
//
// Types (*TypeName): Name is upper case with synonyms normalised (INTEGER →
// INT, DEC and NUMERIC → DECIMAL, DOUBLE PRECISION → DOUBLE, CHARACTER
// [VARYING] → CHAR/VARCHAR, BINARY VARYING → VARBINARY, TIMESTAMP WITH
// LOCAL TIME ZONE → TIMESTAMP_LTZ); Params holds precision, scale or
// length as written; Elem, Key, Value and Fields the nested types of ARRAY,
// MULTISET, MAP and ROW (T ARRAY is ARRAY<T>); Interval the qualifier of
// INTERVAL types; NotNull the nullability.
//
// Not supported yet: the keyword
// syntax inside JSON functions (JSON_VALUE(... RETURNING ...),
// JSON_OBJECT(KEY k VALUE v), IS JSON), quantified comparisons (= ANY
// (subquery)), CREATE FUNCTION ... USING JAR, and query parameters ('?').
package parser
