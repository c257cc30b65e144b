package parser

// Pos is a position in the source text. Line and Column are 1-based; Column
// counts characters (runes), not bytes. Offset is the 0-based byte offset.
type Pos struct {
	Line   int
	Column int
	Offset int
}

// Node is any syntax tree node.
type Node interface {
	Pos() Pos
}

// node carries the position shared by all nodes. Its field At is promoted,
// so code outside the package can set it on nodes it builds.
type node struct {
	At Pos
}

// Pos returns where the node starts in the source.
func (n *node) Pos() Pos { return n.At }

// Statement is a top-level statement.
type Statement interface {
	Node
	// SourceText is the statement's exact text in the parsed source,
	// without the terminating ';'.
	SourceText() string
	base() *stmt
}

// stmt is embedded in every statement.
type stmt struct {
	At   Pos
	Text string
}

func (s *stmt) Pos() Pos           { return s.At }
func (s *stmt) SourceText() string { return s.Text }
func (s *stmt) base() *stmt        { return s }

// Expr is a scalar expression (also used for the few table-valued argument
// forms that only appear inside function calls: *TableArg, *Descriptor,
// *NamedArg, and the grouping constructs *GroupingSets, *Rollup, *Cube that
// only appear in GROUP BY).
type Expr interface {
	Node
	exprNode()
}

// QueryExpr is a query: *Select, *SetOp, *Values or *Query.
type QueryExpr interface {
	Node
	queryNode()
}

// TableRef is an item of a FROM clause: *TableName, *DerivedTable, *Join,
// *TableFunc, *WindowTVF or *Unnest.
type TableRef interface {
	Node
	tableRefNode()
}

// ---------------------------------------------------------------------------
// Statements

// Property is a 'key' = 'value' pair of a WITH clause, SET statement or hint.
type Property struct {
	node
	Key   string
	Value string
}

// ColumnKind says how a column of CREATE TABLE gets its value.
type ColumnKind int

const (
	// PhysicalColumn is `name TYPE`.
	PhysicalColumn ColumnKind = iota
	// ComputedColumn is `name AS expr`.
	ComputedColumn
	// MetadataColumn is `name TYPE METADATA [FROM 'key'] [VIRTUAL]`.
	MetadataColumn
)

// ColumnDef is a column of CREATE TABLE or ALTER TABLE ADD/MODIFY.
type ColumnDef struct {
	node
	Name string
	Kind ColumnKind
	// Type is nil for computed columns.
	Type *TypeName
	// Expr is the expression of a computed column.
	Expr Expr
	// MetadataKey is the FROM 'key' of a metadata column ("" if absent).
	MetadataKey string
	Virtual     bool
	Comment     string
	// First and After place a column in ALTER TABLE ADD/MODIFY.
	First bool
	After string
}

// Watermark is WATERMARK FOR column AS expr.
type Watermark struct {
	node
	Column *Ident
	Expr   Expr
}

// PrimaryKey is [CONSTRAINT name] PRIMARY KEY (cols) [NOT ENFORCED]. A column
// constraint (`id INT PRIMARY KEY NOT ENFORCED`) is turned into one of these.
type PrimaryKey struct {
	node
	Name        string
	Columns     []string
	NotEnforced bool
}

// TableSchema holds the schema elements of CREATE TABLE and ALTER TABLE
// ADD/MODIFY.
type TableSchema struct {
	Columns    []*ColumnDef
	Watermark  *Watermark
	PrimaryKey *PrimaryKey
}

// LikeOption is one option of CREATE TABLE ... LIKE t (INCLUDING ALL, ...).
type LikeOption struct {
	// Strategy is INCLUDING, EXCLUDING or OVERWRITING.
	Strategy string
	// Feature is ALL, CONSTRAINTS, PARTITIONS, GENERATED, OPTIONS,
	// WATERMARKS or METADATA.
	Feature string
}

// TableLike is the LIKE clause of CREATE TABLE.
type TableLike struct {
	node
	Name    *Ident
	Options []LikeOption
}

// CreateTable is CREATE [OR REPLACE] [TEMPORARY] TABLE. With AsQuery set it is
// CREATE TABLE ... AS SELECT.
type CreateTable struct {
	stmt
	OrReplace   bool
	Temporary   bool
	IfNotExists bool
	Name        *Ident
	Schema      TableSchema
	Comment     string
	PartitionBy []string
	Options     []*Property
	Like        *TableLike
	AsQuery     QueryExpr
}

// CreateView is CREATE [TEMPORARY] VIEW.
type CreateView struct {
	stmt
	Temporary   bool
	IfNotExists bool
	Name        *Ident
	Columns     []string
	Comment     string
	Query       QueryExpr
}

// CreateFunction is CREATE [TEMPORARY [SYSTEM]] FUNCTION name AS 'identifier'
// [LANGUAGE lang].
type CreateFunction struct {
	stmt
	Temporary   bool
	System      bool
	IfNotExists bool
	Name        *Ident
	Identifier  string
	// Language is upper case (JAVA, SCALA, PYTHON, GO, ...), "" if absent.
	Language string
}

// CreateDatabase is CREATE DATABASE [IF NOT EXISTS] name [COMMENT ..] [WITH (..)].
type CreateDatabase struct {
	stmt
	IfNotExists bool
	Name        *Ident
	Comment     string
	Options     []*Property
}

// CreateCatalog is CREATE CATALOG [IF NOT EXISTS] name [COMMENT ..] WITH (..).
type CreateCatalog struct {
	stmt
	IfNotExists bool
	Name        string
	Comment     string
	Options     []*Property
}

// ObjectKind names the kind of object in DROP.
type ObjectKind string

// Kinds of DROP.
const (
	ObjTable    ObjectKind = "TABLE"
	ObjView     ObjectKind = "VIEW"
	ObjFunction ObjectKind = "FUNCTION"
	ObjDatabase ObjectKind = "DATABASE"
	ObjCatalog  ObjectKind = "CATALOG"
)

// Drop is DROP [TEMPORARY [SYSTEM]] kind [IF EXISTS] name [RESTRICT|CASCADE].
type Drop struct {
	stmt
	Kind      ObjectKind
	Temporary bool
	System    bool
	IfExists  bool
	Name      *Ident
	Cascade   bool
}

// AlterTableAction says what ALTER TABLE does.
type AlterTableAction string

// ALTER TABLE actions.
const (
	AlterRename         AlterTableAction = "RENAME"
	AlterRenameColumn   AlterTableAction = "RENAME COLUMN"
	AlterSet            AlterTableAction = "SET"
	AlterReset          AlterTableAction = "RESET"
	AlterAdd            AlterTableAction = "ADD"
	AlterModify         AlterTableAction = "MODIFY"
	AlterDropColumns    AlterTableAction = "DROP COLUMNS"
	AlterDropPrimaryKey AlterTableAction = "DROP PRIMARY KEY"
	AlterDropConstraint AlterTableAction = "DROP CONSTRAINT"
	AlterDropWatermark  AlterTableAction = "DROP WATERMARK"
)

// AlterTable is ALTER TABLE [IF EXISTS] name action. Which fields are set
// depends on Action.
type AlterTable struct {
	stmt
	IfExists bool
	Name     *Ident
	Action   AlterTableAction
	// NewName is the new table name for RENAME.
	NewName *Ident
	// Column and NewColumn are the old and new name for RENAME COLUMN.
	Column, NewColumn string
	// Options for SET.
	Options []*Property
	// Keys for RESET.
	Keys []string
	// Schema for ADD and MODIFY.
	Schema TableSchema
	// Columns for DROP COLUMNS.
	Columns []string
	// Constraint for DROP CONSTRAINT.
	Constraint string
}

// AlterView is ALTER VIEW name RENAME TO new | AS query.
type AlterView struct {
	stmt
	Name    *Ident
	NewName *Ident
	Query   QueryExpr
}

// ShowKind says what SHOW lists.
type ShowKind string

// Kinds of SHOW.
const (
	ShowTables          ShowKind = "TABLES"
	ShowViews           ShowKind = "VIEWS"
	ShowFunctions       ShowKind = "FUNCTIONS"
	ShowUserFunctions   ShowKind = "USER FUNCTIONS"
	ShowDatabases       ShowKind = "DATABASES"
	ShowCatalogs        ShowKind = "CATALOGS"
	ShowModules         ShowKind = "MODULES"
	ShowFullModules     ShowKind = "FULL MODULES"
	ShowJobs            ShowKind = "JOBS"
	ShowJob             ShowKind = "JOB"
	ShowCurrentCatalog  ShowKind = "CURRENT CATALOG"
	ShowCurrentDatabase ShowKind = "CURRENT DATABASE"
	ShowCreateTable     ShowKind = "CREATE TABLE"
	ShowCreateView      ShowKind = "CREATE VIEW"
	ShowColumns         ShowKind = "COLUMNS"
)

// ShowLike is the [NOT] LIKE|ILIKE 'pattern' filter of SHOW.
type ShowLike struct {
	Not     bool
	ILike   bool
	Pattern string
}

// Show is a SHOW statement.
type Show struct {
	stmt
	Kind ShowKind
	// Name is the object of SHOW CREATE TABLE/VIEW, the table of SHOW
	// COLUMNS, or the database/catalog of SHOW TABLES/VIEWS/FUNCTIONS/
	// DATABASES FROM|IN name.
	Name *Ident
	// JobID is the id of SHOW JOB 'id'.
	JobID string
	Like  *ShowLike
}

// Describe is DESCRIBE|DESC [EXTENDED] name.
type Describe struct {
	stmt
	Extended bool
	Name     *Ident
}

// Use is USE [CATALOG] name.
type Use struct {
	stmt
	Catalog bool
	Name    *Ident
}

// Set is SET ['key' = 'value']. Without a key it lists the settings.
type Set struct {
	stmt
	HasKey bool
	Key    string
	Value  string
}

// Reset is RESET ['key']. Without a key it resets all settings.
type Reset struct {
	stmt
	HasKey bool
	Key    string
}

// PartitionValue is one column = literal of INSERT ... PARTITION (...).
type PartitionValue struct {
	node
	Column string
	Value  Expr
}

// Insert is INSERT INTO|OVERWRITE table [PARTITION (...)] [(cols)] query.
// EXECUTE INSERT ... parses to the same node.
type Insert struct {
	stmt
	Overwrite bool
	Table     *Ident
	Hints     []*Hint
	Partition []*PartitionValue
	Columns   []string
	Query     QueryExpr
}

// StatementSet is EXECUTE STATEMENT SET BEGIN insert; ... END, or the SQL
// client's BEGIN STATEMENT SET; insert; ... END.
type StatementSet struct {
	stmt
	Inserts []*Insert
}

// Explain is EXPLAIN [PLAN FOR | detail, ...] statement.
type Explain struct {
	stmt
	// Details are upper case: ESTIMATED_COST, CHANGELOG_MODE,
	// JSON_EXECUTION_PLAN, PLAN_ADVICE.
	Details   []string
	Statement Statement
}

// StopJob is STOP JOB 'id' [WITH SAVEPOINT] [WITH DRAIN].
type StopJob struct {
	stmt
	JobID         string
	WithSavepoint bool
	WithDrain     bool
}

// QueryStatement is a query used as a statement.
type QueryStatement struct {
	stmt
	Query QueryExpr
}

// ---------------------------------------------------------------------------
// Queries

// CTE is one `name [(cols)] AS (query)` of a WITH clause.
type CTE struct {
	node
	Name    string
	Columns []string
	Query   QueryExpr
}

// Query carries what applies to a whole query expression: WITH, ORDER BY,
// LIMIT/FETCH and OFFSET. The parser only makes one when at least one of
// these is present; otherwise the body stands alone.
type Query struct {
	node
	With    []*CTE
	Body    QueryExpr
	OrderBy []*OrderItem
	// Limit comes from LIMIT n or FETCH FIRST n ROWS ONLY (nil if absent).
	Limit  Expr
	Offset Expr
}

// SetOpKind is UNION, INTERSECT or EXCEPT (MINUS is parsed as EXCEPT).
type SetOpKind string

// Set operations.
const (
	Union     SetOpKind = "UNION"
	Intersect SetOpKind = "INTERSECT"
	Except    SetOpKind = "EXCEPT"
)

// SetOp is left UNION|INTERSECT|EXCEPT [ALL] right.
type SetOp struct {
	node
	Op    SetOpKind
	All   bool
	Left  QueryExpr
	Right QueryExpr
}

// Values is VALUES row, row, ... Each row is a list of expressions.
type Values struct {
	node
	Rows [][]Expr
}

// SelectItem is one item of a select list: an expression with an optional
// alias, or a *Star.
type SelectItem struct {
	node
	Expr  Expr
	Alias string
}

// NamedWindow is `name AS (spec)` of a WINDOW clause.
type NamedWindow struct {
	node
	Name string
	Spec *WindowSpec
}

// Select is a SELECT block.
type Select struct {
	node
	Hints    []*Hint
	Distinct bool
	Items    []*SelectItem
	// From is nil for SELECT without FROM.
	From    TableRef
	Where   Expr
	GroupBy []Expr
	Having  Expr
	Windows []*NamedWindow
}

// TableAlias is [AS] name [(col, ...)] after a table reference.
type TableAlias struct {
	Name    string
	Columns []string
}

// Hint is one hint of a /*+ ... */ comment: NAME('k'='v', ...) or
// NAME(a, b) or NAME.
type Hint struct {
	node
	// Name is upper case.
	Name    string
	Options []*Property
	Args    []string
}

// TableName is a table by name, with optional hints, FOR SYSTEM_TIME AS OF
// and alias.
type TableName struct {
	node
	Name       *Ident
	Hints      []*Hint
	SystemTime Expr
	Alias      *TableAlias
}

// DerivedTable is [LATERAL] (query) [AS alias].
type DerivedTable struct {
	node
	Lateral bool
	Query   QueryExpr
	Alias   *TableAlias
}

// JoinType is the kind of a join.
type JoinType string

// Join types. CommaJoin is `FROM a, b`.
const (
	InnerJoin JoinType = "INNER"
	LeftJoin  JoinType = "LEFT"
	RightJoin JoinType = "RIGHT"
	FullJoin  JoinType = "FULL"
	CrossJoin JoinType = "CROSS"
	CommaJoin JoinType = ","
)

// Join is left [NATURAL] type JOIN right [ON cond | USING (cols)].
type Join struct {
	node
	Type    JoinType
	Natural bool
	Left    TableRef
	Right   TableRef
	On      Expr
	Using   []string
}

// TableFunc is [LATERAL] TABLE(f(args)) [AS alias(cols)]: a user-defined
// table function (window TVFs become *WindowTVF instead).
type TableFunc struct {
	node
	Lateral bool
	Call    *FuncCall
	Alias   *TableAlias
}

// WindowKind is the kind of a window table-valued function.
type WindowKind string

// Window TVFs.
const (
	Tumble   WindowKind = "TUMBLE"
	Hop      WindowKind = "HOP"
	Cumulate WindowKind = "CUMULATE"
	Session  WindowKind = "SESSION"
)

// WindowTVF is TABLE(TUMBLE|HOP|CUMULATE|SESSION(...)) in FROM, with its
// arguments sorted out whether they were given by position or by name.
type WindowTVF struct {
	node
	Kind WindowKind
	// Data is the input: a *TableName (TABLE t) or *DerivedTable ((query)),
	// without alias.
	Data TableRef
	// PartitionBy is SESSION's `TABLE t PARTITION BY keys`.
	PartitionBy []Expr
	// TimeCol is the column of DESCRIPTOR(col).
	TimeCol string
	// Size is the window size (TUMBLE, HOP, CUMULATE max size).
	Size Expr
	// Slide is HOP's slide.
	Slide Expr
	// Step is CUMULATE's step.
	Step Expr
	// Gap is SESSION's gap.
	Gap Expr
	// Offset is the optional window offset (nil if absent).
	Offset Expr
	Alias  *TableAlias
}

// Unnest is UNNEST(exprs) [WITH ORDINALITY] [AS alias(cols)].
type Unnest struct {
	node
	Exprs          []Expr
	WithOrdinality bool
	Alias          *TableAlias
}

// ---------------------------------------------------------------------------
// Expressions

// Ident is a possibly qualified name: col, t.col, cat.db.tbl. Parts keep
// their case as written, without quotes.
type Ident struct {
	node
	Parts []string
}

// Star is * or qualifier.* in a select list or COUNT(*).
type Star struct {
	node
	Qualifier []string
}

// LiteralKind is the kind of a literal.
type LiteralKind int

// Literal kinds.
const (
	// IntegerLit is an exact numeric literal without point or exponent.
	IntegerLit LiteralKind = iota
	// DecimalLit is an exact numeric literal with a point (1.5, .5, 1.).
	DecimalLit
	// ApproxLit is an approximate numeric literal (1e3, 1.5E-2).
	ApproxLit
	// StringLit is a character string; Text is its value (quotes removed,
	// escapes decoded).
	StringLit
	// BinaryLit is X'0aff'; Text is the hex digits.
	BinaryLit
	// BooleanLit is TRUE or FALSE (Text upper case).
	BooleanLit
	// UnknownLit is UNKNOWN, the boolean null.
	UnknownLit
	// NullLit is NULL.
	NullLit
	// DateLit is DATE 'text'.
	DateLit
	// TimeLit is TIME 'text'.
	TimeLit
	// TimestampLit is TIMESTAMP 'text'.
	TimestampLit
	// TimestampLTZLit is TIMESTAMP WITH LOCAL TIME ZONE 'text'.
	TimestampLTZLit
)

var literalKindNames = [...]string{"integer", "decimal", "approximate", "string", "binary", "boolean", "unknown", "null", "date", "time", "timestamp", "timestamp_ltz"}

func (k LiteralKind) String() string {
	if int(k) < len(literalKindNames) {
		return literalKindNames[k]
	}
	return "literal?"
}

// Literal is a constant. Numbers keep their text as written so the planner
// can choose INT, BIGINT or DECIMAL.
type Literal struct {
	node
	Kind LiteralKind
	Text string
	// Charset is the upper-case character set of _CHARSET'...' strings.
	Charset string
}

// TimeUnit is an upper-case, singular time unit: YEAR, QUARTER, MONTH, WEEK,
// DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND, NANOSECOND, and for
// EXTRACT also DOW, DOY, ISODOW, ISOYEAR, EPOCH, DECADE, CENTURY, MILLENNIUM.
type TimeUnit string

// IntervalQualifier is the unit part of an interval type or literal:
// DAY, DAY(2), DAY TO SECOND(3), SECOND(2, 3), YEAR TO MONTH.
type IntervalQualifier struct {
	Start TimeUnit
	// End is "" for a single-field qualifier.
	End TimeUnit
	// Precision is the leading field's precision, 0 when not given.
	Precision int
	// FracPrecision is the fractional second precision, -1 when not given.
	FracPrecision int
}

// IntervalLiteral is INTERVAL [-]'value' qualifier.
type IntervalLiteral struct {
	node
	Negative  bool
	Value     string
	Qualifier IntervalQualifier
}

// UnaryOp is a prefix operator.
type UnaryOp string

// Prefix operators.
const (
	OpNeg UnaryOp = "-"
	OpPos UnaryOp = "+"
	OpNot UnaryOp = "NOT"
)

// Unary is a prefix operation.
type Unary struct {
	node
	Op   UnaryOp
	Expr Expr
}

// BinaryOp is an infix operator.
type BinaryOp string

// Infix operators. != is parsed as <>.
const (
	OpOr                BinaryOp = "OR"
	OpAnd               BinaryOp = "AND"
	OpEq                BinaryOp = "="
	OpNe                BinaryOp = "<>"
	OpLt                BinaryOp = "<"
	OpLe                BinaryOp = "<="
	OpGt                BinaryOp = ">"
	OpGe                BinaryOp = ">="
	OpIsDistinctFrom    BinaryOp = "IS DISTINCT FROM"
	OpIsNotDistinctFrom BinaryOp = "IS NOT DISTINCT FROM"
	OpAdd               BinaryOp = "+"
	OpSub               BinaryOp = "-"
	OpMul               BinaryOp = "*"
	OpDiv               BinaryOp = "/"
	OpMod               BinaryOp = "%"
	OpConcat            BinaryOp = "||"
)

// Binary is an infix operation.
type Binary struct {
	node
	Op    BinaryOp
	Left  Expr
	Right Expr
}

// IsWhat is what IS [NOT] tests for.
type IsWhat string

// IS tests.
const (
	IsNull    IsWhat = "NULL"
	IsTrue    IsWhat = "TRUE"
	IsFalse   IsWhat = "FALSE"
	IsUnknown IsWhat = "UNKNOWN"
)

// Is is expr IS [NOT] NULL|TRUE|FALSE|UNKNOWN.
type Is struct {
	node
	Expr Expr
	Not  bool
	What IsWhat
}

// Between is expr [NOT] BETWEEN [SYMMETRIC] low AND high.
type Between struct {
	node
	Expr      Expr
	Not       bool
	Symmetric bool
	Low       Expr
	High      Expr
}

// Like is expr [NOT] LIKE|SIMILAR TO pattern [ESCAPE esc].
type Like struct {
	node
	Expr    Expr
	Not     bool
	Similar bool
	Pattern Expr
	Escape  Expr
}

// In is expr [NOT] IN (list) or expr [NOT] IN (query).
type In struct {
	node
	Expr  Expr
	Not   bool
	List  []Expr
	Query QueryExpr
}

// FrameBoundKind is the kind of a window frame bound.
type FrameBoundKind string

// Frame bounds.
const (
	UnboundedPreceding FrameBoundKind = "UNBOUNDED PRECEDING"
	Preceding          FrameBoundKind = "PRECEDING"
	CurrentRow         FrameBoundKind = "CURRENT ROW"
	Following          FrameBoundKind = "FOLLOWING"
	UnboundedFollowing FrameBoundKind = "UNBOUNDED FOLLOWING"
)

// FrameBound is one end of a window frame; Offset is set for n PRECEDING
// and n FOLLOWING.
type FrameBound struct {
	Kind   FrameBoundKind
	Offset Expr
}

// WindowFrame is ROWS|RANGE start or ROWS|RANGE BETWEEN start AND end.
type WindowFrame struct {
	Rows  bool
	Start FrameBound
	// End is nil without BETWEEN.
	End *FrameBound
}

// WindowSpec is the window of OVER: a reference to a named window (OVER w),
// an inline specification, or a named window refined inline.
type WindowSpec struct {
	node
	Ref         string
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Frame       *WindowFrame
}

// NullsOrder is the NULLS FIRST|LAST of an ORDER BY item.
type NullsOrder string

// Null orderings ("" when not given).
const (
	NullsFirst NullsOrder = "FIRST"
	NullsLast  NullsOrder = "LAST"
)

// OrderItem is expr [ASC|DESC] [NULLS FIRST|LAST].
type OrderItem struct {
	node
	Expr  Expr
	Desc  bool
	Nulls NullsOrder
}

// FuncCall is a function call: name(args) with the optional DISTINCT,
// WITHIN GROUP, FILTER and OVER. COUNT(*) has a *Star argument. Niladic
// functions written without parentheses (CURRENT_TIMESTAMP, LOCALTIME, ...)
// have NoParens set and an upper-case name.
type FuncCall struct {
	node
	Name        []string
	Distinct    bool
	Args        []Expr
	NoParens    bool
	WithinGroup []*OrderItem
	Filter      Expr
	Over        *WindowSpec
}

// Cast is CAST(expr AS type) or TRY_CAST(expr AS type).
type Cast struct {
	node
	Try  bool
	Expr Expr
	Type *TypeName
}

// When is WHEN cond THEN result.
type When struct {
	node
	Cond   Expr
	Result Expr
}

// Case is CASE [operand] WHEN ... [ELSE ...] END.
type Case struct {
	node
	Operand Expr
	Whens   []*When
	Else    Expr
}

// Extract is EXTRACT(unit FROM expr).
type Extract struct {
	node
	Unit TimeUnit
	Expr Expr
}

// Position is POSITION(sub IN str [FROM start]).
type Position struct {
	node
	Sub   Expr
	Str   Expr
	Start Expr
}

// Trim is TRIM([BOTH|LEADING|TRAILING] [chars] FROM expr) or TRIM(expr).
type Trim struct {
	node
	// Mode is BOTH, LEADING, TRAILING, or "" when not given.
	Mode  string
	Chars Expr
	Expr  Expr
}

// Substring is SUBSTRING(expr FROM start [FOR length]) or
// SUBSTRING(expr, start [, length]).
type Substring struct {
	node
	Expr   Expr
	Start  Expr
	Length Expr
}

// Overlay is OVERLAY(expr PLACING repl FROM start [FOR length]).
type Overlay struct {
	node
	Expr   Expr
	Repl   Expr
	Start  Expr
	Length Expr
}

// FloorCeil is FLOOR(expr TO unit) or CEIL(expr TO unit). FLOOR(x) and
// CEIL(x) without TO are plain *FuncCall.
type FloorCeil struct {
	node
	Ceil bool
	Expr Expr
	Unit TimeUnit
}

// TimestampAdd is TIMESTAMPADD(unit, count, ts).
type TimestampAdd struct {
	node
	Unit      TimeUnit
	Count     Expr
	Timestamp Expr
}

// TimestampDiff is TIMESTAMPDIFF(unit, start, end).
type TimestampDiff struct {
	node
	Unit  TimeUnit
	Start Expr
	End   Expr
}

// ArrayCtor is ARRAY[e, ...].
type ArrayCtor struct {
	node
	Elems []Expr
}

// MapCtor is MAP[k1, v1, k2, v2, ...].
type MapCtor struct {
	node
	Keys   []Expr
	Values []Expr
}

// RowExpr is ROW(a, b) or (a, b). In GROUP BY, () is an empty RowExpr.
type RowExpr struct {
	node
	Items []Expr
}

// Exists is EXISTS (query).
type Exists struct {
	node
	Query QueryExpr
}

// Subquery is a scalar subquery (query) in an expression.
type Subquery struct {
	node
	Query QueryExpr
}

// Index is expr[index].
type Index struct {
	node
	Expr  Expr
	Index Expr
}

// FieldAccess is expr.field where expr is not a plain name (names like
// a.b.c are a single *Ident; the planner resolves which parts are fields).
type FieldAccess struct {
	node
	Expr  Expr
	Field string
}

// Descriptor is DESCRIPTOR(col, ...), an argument of table functions.
type Descriptor struct {
	node
	Columns []string
}

// TableArg is TABLE name [PARTITION BY keys], a table argument of a table
// function.
type TableArg struct {
	node
	Name        *Ident
	PartitionBy []Expr
}

// NamedArg is name => value, a named function argument.
type NamedArg struct {
	node
	Name  string
	Value Expr
}

// GroupingSets is GROUPING SETS (element, ...) in GROUP BY. Elements are
// expressions, *RowExpr for (a, b) and (), *Rollup, *Cube or nested
// *GroupingSets.
type GroupingSets struct {
	node
	Sets []Expr
}

// Rollup is ROLLUP(element, ...) in GROUP BY; an element (a, b) is a *RowExpr.
type Rollup struct {
	node
	Items []Expr
}

// Cube is CUBE(element, ...) in GROUP BY; an element (a, b) is a *RowExpr.
type Cube struct {
	node
	Items []Expr
}

// ---------------------------------------------------------------------------
// Types

// RowField is a field of ROW<name TYPE ['description']>.
type RowField struct {
	node
	Name        string
	Type        *TypeName
	Description string
}

// TypeName is a data type as written. Name is upper case and normalised:
// INTEGER→INT, DEC/NUMERIC→DECIMAL, DOUBLE PRECISION→DOUBLE,
// CHARACTER→CHAR, CHARACTER VARYING→VARCHAR, BINARY VARYING→VARBINARY,
// TIMESTAMP WITH LOCAL TIME ZONE→TIMESTAMP_LTZ. STRING and BYTES are kept.
type TypeName struct {
	node
	Name string
	// Params are the numeric parameters as written: precision and scale,
	// or length (nil when none were given).
	Params []int
	// Elem is the element type of ARRAY and MULTISET, Key and Value those
	// of MAP.
	Elem  *TypeName
	Key   *TypeName
	Value *TypeName
	// Fields are the fields of ROW.
	Fields []*RowField
	// Interval is the qualifier of INTERVAL types.
	Interval *IntervalQualifier
	// RawArgs are the string arguments of RAW('class', 'snapshot').
	RawArgs []string
	NotNull bool
}

// ---------------------------------------------------------------------------
// Interface membership.

func (*Query) queryNode()  {}
func (*Select) queryNode() {}
func (*SetOp) queryNode()  {}
func (*Values) queryNode() {}

func (*TableName) tableRefNode()    {}
func (*DerivedTable) tableRefNode() {}
func (*Join) tableRefNode()         {}
func (*TableFunc) tableRefNode()    {}
func (*WindowTVF) tableRefNode()    {}
func (*Unnest) tableRefNode()       {}

func (*Ident) exprNode()           {}
func (*Star) exprNode()            {}
func (*Literal) exprNode()         {}
func (*IntervalLiteral) exprNode() {}
func (*Unary) exprNode()           {}
func (*Binary) exprNode()          {}
func (*Is) exprNode()              {}
func (*Between) exprNode()         {}
func (*Like) exprNode()            {}
func (*In) exprNode()              {}
func (*FuncCall) exprNode()        {}
func (*Cast) exprNode()            {}
func (*Case) exprNode()            {}
func (*Extract) exprNode()         {}
func (*Position) exprNode()        {}
func (*Trim) exprNode()            {}
func (*Substring) exprNode()       {}
func (*Overlay) exprNode()         {}
func (*FloorCeil) exprNode()       {}
func (*TimestampAdd) exprNode()    {}
func (*TimestampDiff) exprNode()   {}
func (*ArrayCtor) exprNode()       {}
func (*MapCtor) exprNode()         {}
func (*RowExpr) exprNode()         {}
func (*Exists) exprNode()          {}
func (*Subquery) exprNode()        {}
func (*Index) exprNode()           {}
func (*FieldAccess) exprNode()     {}
func (*Descriptor) exprNode()      {}
func (*TableArg) exprNode()        {}
func (*NamedArg) exprNode()        {}
func (*GroupingSets) exprNode()    {}
func (*Rollup) exprNode()          {}
func (*Cube) exprNode()            {}
