package parser

import (
	"strconv"
	"strings"
)

// Format prints a node as SQL on one line. Parsing the result gives a tree
// equal to n (see Equal): identifiers are backquoted where needed, and
// parentheses are added where precedence requires them (the tree does not
// record the parentheses of the source).
func Format(n Node) string {
	var f formatter
	f.node(n)
	return f.b.String()
}

type formatter struct {
	b strings.Builder
}

func (f *formatter) w(s string) { f.b.WriteString(s) }

func (f *formatter) node(n Node) {
	switch n := n.(type) {
	case nil:
	case Statement:
		f.stmt(n)
	case QueryExpr:
		f.query(n)
	case TableRef:
		f.tableRef(n)
	case Expr:
		f.expr(n, 0)
	case *TypeName:
		f.typ(n)
	case *Property:
		f.prop(n)
	case *ColumnDef:
		f.column(n)
	case *Watermark:
		f.watermark(n)
	case *PrimaryKey:
		f.primaryKey(n)
	case *SelectItem:
		f.selectItem(n)
	case *OrderItem:
		f.orderItem(n)
	case *WindowSpec:
		f.windowSpec(n)
	case *Hint:
		f.hints([]*Hint{n})
	case *CTE:
		f.cte(n)
	case *NamedWindow:
		f.name(n.Name)
		f.w(" AS ")
		f.windowSpec(n.Spec)
	case *When:
		f.w("WHEN ")
		f.expr(n.Cond, 0)
		f.w(" THEN ")
		f.expr(n.Result, 0)
	case *RowField:
		f.rowField(n)
	case *TableLike:
		f.tableLike(n)
	case *PartitionValue:
		f.name(n.Column)
		f.w(" = ")
		f.expr(n.Value, 0)
	}
}

// name writes an identifier part, backquoted if needed.
func (f *formatter) name(s string) {
	if needsQuotes(s) {
		f.w("`")
		f.w(strings.ReplaceAll(s, "`", "``"))
		f.w("`")
		return
	}
	f.w(s)
}

func (f *formatter) parts(parts []string) {
	for i, p := range parts {
		if i > 0 {
			f.w(".")
		}
		f.name(p)
	}
}

func (f *formatter) names(names []string) {
	f.w("(")
	for i, n := range names {
		if i > 0 {
			f.w(", ")
		}
		f.name(n)
	}
	f.w(")")
}

func (f *formatter) str(s string) {
	f.w("'")
	f.w(strings.ReplaceAll(s, "'", "''"))
	f.w("'")
}

func (f *formatter) props(ps []*Property) {
	f.w("(")
	for i, p := range ps {
		if i > 0 {
			f.w(", ")
		}
		f.prop(p)
	}
	f.w(")")
}

func (f *formatter) prop(p *Property) {
	f.str(p.Key)
	f.w(" = ")
	f.str(p.Value)
}

func (f *formatter) exprs(es []Expr) {
	for i, e := range es {
		if i > 0 {
			f.w(", ")
		}
		f.expr(e, 0)
	}
}

// ---------------------------------------------------------------------------
// Statements

func (f *formatter) stmt(s Statement) {
	switch s := s.(type) {
	case *CreateTable:
		f.w("CREATE ")
		f.wIf(s.OrReplace, "OR REPLACE ")
		f.wIf(s.Temporary, "TEMPORARY ")
		f.w("TABLE ")
		f.wIf(s.IfNotExists, "IF NOT EXISTS ")
		f.parts(s.Name.Parts)
		if len(s.Schema.Columns) > 0 || s.Schema.Watermark != nil || s.Schema.PrimaryKey != nil {
			f.w(" (")
			f.schema(&s.Schema)
			f.w(")")
		}
		f.comment(s.Comment)
		if len(s.PartitionBy) > 0 {
			f.w(" PARTITIONED BY ")
			f.names(s.PartitionBy)
		}
		if len(s.Options) > 0 {
			f.w(" WITH ")
			f.props(s.Options)
		}
		if s.Like != nil {
			f.w(" ")
			f.tableLike(s.Like)
		}
		if s.AsQuery != nil {
			f.w(" AS ")
			f.query(s.AsQuery)
		}
	case *CreateView:
		f.w("CREATE ")
		f.wIf(s.Temporary, "TEMPORARY ")
		f.w("VIEW ")
		f.wIf(s.IfNotExists, "IF NOT EXISTS ")
		f.parts(s.Name.Parts)
		if len(s.Columns) > 0 {
			f.w(" ")
			f.names(s.Columns)
		}
		f.comment(s.Comment)
		f.w(" AS ")
		f.query(s.Query)
	case *CreateFunction:
		f.w("CREATE ")
		if s.Temporary {
			f.w("TEMPORARY ")
			f.wIf(s.System, "SYSTEM ")
		}
		f.w("FUNCTION ")
		f.wIf(s.IfNotExists, "IF NOT EXISTS ")
		f.parts(s.Name.Parts)
		f.w(" AS ")
		f.str(s.Identifier)
		if s.Language != "" {
			f.w(" LANGUAGE ")
			f.w(s.Language)
		}
	case *CreateDatabase:
		f.w("CREATE DATABASE ")
		f.wIf(s.IfNotExists, "IF NOT EXISTS ")
		f.parts(s.Name.Parts)
		f.comment(s.Comment)
		if len(s.Options) > 0 {
			f.w(" WITH ")
			f.props(s.Options)
		}
	case *CreateCatalog:
		f.w("CREATE CATALOG ")
		f.wIf(s.IfNotExists, "IF NOT EXISTS ")
		f.name(s.Name)
		f.comment(s.Comment)
		f.w(" WITH ")
		f.props(s.Options)
	case *Drop:
		f.w("DROP ")
		if s.Temporary {
			f.w("TEMPORARY ")
			f.wIf(s.System, "SYSTEM ")
		}
		f.w(string(s.Kind))
		f.w(" ")
		f.wIf(s.IfExists, "IF EXISTS ")
		f.parts(s.Name.Parts)
		f.wIf(s.Cascade, " CASCADE")
	case *AlterTable:
		f.alterTable(s)
	case *AlterView:
		f.w("ALTER VIEW ")
		f.parts(s.Name.Parts)
		if s.NewName != nil {
			f.w(" RENAME TO ")
			f.parts(s.NewName.Parts)
		} else {
			f.w(" AS ")
			f.query(s.Query)
		}
	case *Show:
		f.show(s)
	case *Describe:
		f.w("DESCRIBE ")
		f.wIf(s.Extended, "EXTENDED ")
		f.parts(s.Name.Parts)
	case *Use:
		f.w("USE ")
		f.wIf(s.Catalog, "CATALOG ")
		f.parts(s.Name.Parts)
	case *Set:
		f.w("SET")
		if s.HasKey {
			f.w(" ")
			f.str(s.Key)
			f.w(" = ")
			f.str(s.Value)
		}
	case *Reset:
		f.w("RESET")
		if s.HasKey {
			f.w(" ")
			f.str(s.Key)
		}
	case *Insert:
		f.insert(s)
	case *StatementSet:
		f.w("EXECUTE STATEMENT SET BEGIN ")
		for _, ins := range s.Inserts {
			f.insert(ins)
			f.w("; ")
		}
		f.w("END")
	case *Explain:
		f.w("EXPLAIN ")
		for i, d := range s.Details {
			if i > 0 {
				f.w(", ")
			}
			f.w(d)
		}
		if len(s.Details) > 0 {
			f.w(" ")
		}
		if ss, ok := s.Statement.(*StatementSet); ok {
			f.w("STATEMENT SET BEGIN ")
			for _, ins := range ss.Inserts {
				f.insert(ins)
				f.w("; ")
			}
			f.w("END")
		} else {
			f.stmt(s.Statement)
		}
	case *StopJob:
		f.w("STOP JOB ")
		f.str(s.JobID)
		f.wIf(s.WithSavepoint, " WITH SAVEPOINT")
		f.wIf(s.WithDrain, " WITH DRAIN")
	case *QueryStatement:
		f.query(s.Query)
	}
}

func (f *formatter) schema(s *TableSchema) {
	n := 0
	sep := func() {
		if n > 0 {
			f.w(", ")
		}
		n++
	}
	for _, c := range s.Columns {
		sep()
		f.column(c)
	}
	if s.Watermark != nil {
		sep()
		f.watermark(s.Watermark)
	}
	if s.PrimaryKey != nil {
		sep()
		f.primaryKey(s.PrimaryKey)
	}
}

func (f *formatter) column(c *ColumnDef) {
	f.name(c.Name)
	switch c.Kind {
	case ComputedColumn:
		f.w(" AS ")
		f.expr(c.Expr, 0)
	default:
		f.w(" ")
		f.typ(c.Type)
		if c.Kind == MetadataColumn {
			f.w(" METADATA")
			if c.MetadataKey != "" {
				f.w(" FROM ")
				f.str(c.MetadataKey)
			}
			f.wIf(c.Virtual, " VIRTUAL")
		}
	}
	f.comment(c.Comment)
	if c.First {
		f.w(" FIRST")
	} else if c.After != "" {
		f.w(" AFTER ")
		f.name(c.After)
	}
}

func (f *formatter) watermark(w *Watermark) {
	f.w("WATERMARK FOR ")
	f.parts(w.Column.Parts)
	f.w(" AS ")
	f.expr(w.Expr, 0)
}

func (f *formatter) primaryKey(pk *PrimaryKey) {
	if pk.Name != "" {
		f.w("CONSTRAINT ")
		f.name(pk.Name)
		f.w(" ")
	}
	f.w("PRIMARY KEY ")
	f.names(pk.Columns)
	f.wIf(pk.NotEnforced, " NOT ENFORCED")
}

func (f *formatter) tableLike(l *TableLike) {
	f.w("LIKE ")
	f.parts(l.Name.Parts)
	if len(l.Options) > 0 {
		f.w(" (")
		for i, o := range l.Options {
			if i > 0 {
				f.w(", ")
			}
			f.w(o.Strategy)
			f.w(" ")
			f.w(o.Feature)
		}
		f.w(")")
	}
}

func (f *formatter) alterTable(s *AlterTable) {
	f.w("ALTER TABLE ")
	f.wIf(s.IfExists, "IF EXISTS ")
	f.parts(s.Name.Parts)
	switch s.Action {
	case AlterRename:
		f.w(" RENAME TO ")
		f.parts(s.NewName.Parts)
	case AlterRenameColumn:
		f.w(" RENAME ")
		f.name(s.Column)
		f.w(" TO ")
		f.name(s.NewColumn)
	case AlterSet:
		f.w(" SET ")
		f.props(s.Options)
	case AlterReset:
		f.w(" RESET (")
		for i, k := range s.Keys {
			if i > 0 {
				f.w(", ")
			}
			f.str(k)
		}
		f.w(")")
	case AlterAdd, AlterModify:
		f.w(" ")
		f.w(string(s.Action))
		f.w(" (")
		f.schema(&s.Schema)
		f.w(")")
	case AlterDropColumns:
		f.w(" DROP ")
		f.names(s.Columns)
	case AlterDropPrimaryKey:
		f.w(" DROP PRIMARY KEY")
	case AlterDropConstraint:
		f.w(" DROP CONSTRAINT ")
		f.name(s.Constraint)
	case AlterDropWatermark:
		f.w(" DROP WATERMARK")
	}
}

func (f *formatter) show(s *Show) {
	f.w("SHOW ")
	f.w(string(s.Kind))
	switch s.Kind {
	case ShowJob:
		f.w(" ")
		f.str(s.JobID)
	case ShowCreateTable, ShowCreateView:
		f.w(" ")
		f.parts(s.Name.Parts)
	case ShowColumns:
		f.w(" FROM ")
		f.parts(s.Name.Parts)
	default:
		if s.Name != nil {
			f.w(" FROM ")
			f.parts(s.Name.Parts)
		}
	}
	if s.Like != nil {
		f.wIf(s.Like.Not, " NOT")
		if s.Like.ILike {
			f.w(" ILIKE ")
		} else {
			f.w(" LIKE ")
		}
		f.str(s.Like.Pattern)
	}
}

func (f *formatter) insert(s *Insert) {
	if s.Overwrite {
		f.w("INSERT OVERWRITE ")
	} else {
		f.w("INSERT INTO ")
	}
	f.parts(s.Table.Parts)
	if len(s.Hints) > 0 {
		f.w(" ")
		f.hints(s.Hints)
	}
	if len(s.Partition) > 0 {
		f.w(" PARTITION (")
		for i, pv := range s.Partition {
			if i > 0 {
				f.w(", ")
			}
			f.name(pv.Column)
			f.w(" = ")
			f.expr(pv.Value, 0)
		}
		f.w(")")
	}
	if len(s.Columns) > 0 {
		f.w(" ")
		f.names(s.Columns)
	}
	f.w(" ")
	f.query(s.Query)
}

func (f *formatter) hints(hs []*Hint) {
	f.w("/*+ ")
	for i, h := range hs {
		if i > 0 {
			f.w(", ")
		}
		f.name(h.Name)
		if len(h.Options) > 0 {
			f.w("(")
			for j, o := range h.Options {
				if j > 0 {
					f.w(", ")
				}
				f.prop(o)
			}
			f.w(")")
		} else if len(h.Args) > 0 {
			f.w("(")
			for j, a := range h.Args {
				if j > 0 {
					f.w(", ")
				}
				// An argument may come from a string literal, and '' has
				// no identifier form: `` is not a valid quoted name.
				if a == "" {
					f.str(a)
				} else {
					f.name(a)
				}
			}
			f.w(")")
		}
	}
	f.w(" */")
}

// ---------------------------------------------------------------------------
// Queries

func setOpPrec(q QueryExpr) int {
	if s, ok := q.(*SetOp); ok {
		if s.Op == Intersect {
			return 2
		}
		return 1
	}
	return 3
}

func (f *formatter) query(q QueryExpr) {
	switch q := q.(type) {
	case *Query:
		if len(q.With) > 0 {
			f.w("WITH ")
			for i, c := range q.With {
				if i > 0 {
					f.w(", ")
				}
				f.cte(c)
			}
			f.w(" ")
		}
		f.setOperand(q.Body, 0)
		if len(q.OrderBy) > 0 {
			f.w(" ORDER BY ")
			f.orderItems(q.OrderBy)
		}
		if q.Limit != nil {
			f.w(" LIMIT ")
			f.expr(q.Limit, 0)
		}
		if q.Offset != nil {
			f.w(" OFFSET ")
			f.expr(q.Offset, 0)
			f.w(" ROWS")
		}
	case *SetOp:
		p := setOpPrec(q)
		f.setOperand(q.Left, p)
		f.w(" ")
		f.w(string(q.Op))
		f.wIf(q.All, " ALL")
		f.w(" ")
		f.setOperand(q.Right, p+1)
	case *Select:
		f.selectBlock(q)
	case *Values:
		f.w("VALUES ")
		for i, row := range q.Rows {
			if i > 0 {
				f.w(", ")
			}
			if len(row) == 0 {
				f.w("ROW()")
				continue
			}
			f.w("(")
			f.exprs(row)
			f.w(")")
		}
	}
}

func (f *formatter) setOperand(q QueryExpr, minPrec int) {
	_, wrapped := q.(*Query)
	if wrapped || setOpPrec(q) < minPrec {
		f.w("(")
		f.query(q)
		f.w(")")
		return
	}
	f.query(q)
}

func (f *formatter) cte(c *CTE) {
	f.name(c.Name)
	if len(c.Columns) > 0 {
		f.w(" ")
		f.names(c.Columns)
	}
	f.w(" AS (")
	f.query(c.Query)
	f.w(")")
}

func (f *formatter) selectBlock(s *Select) {
	f.w("SELECT ")
	if len(s.Hints) > 0 {
		f.hints(s.Hints)
		f.w(" ")
	}
	f.wIf(s.Distinct, "DISTINCT ")
	for i, it := range s.Items {
		if i > 0 {
			f.w(", ")
		}
		f.selectItem(it)
	}
	if s.From != nil {
		f.w(" FROM ")
		f.tableRef(s.From)
	}
	if s.Where != nil {
		f.w(" WHERE ")
		f.expr(s.Where, 0)
	}
	if len(s.GroupBy) > 0 {
		f.w(" GROUP BY ")
		f.groupingElements(s.GroupBy)
	}
	if s.Having != nil {
		f.w(" HAVING ")
		f.expr(s.Having, 0)
	}
	if len(s.Windows) > 0 {
		f.w(" WINDOW ")
		for i, w := range s.Windows {
			if i > 0 {
				f.w(", ")
			}
			f.name(w.Name)
			f.w(" AS ")
			f.windowSpec(w.Spec)
		}
	}
}

func (f *formatter) selectItem(it *SelectItem) {
	f.expr(it.Expr, 0)
	if it.Alias != "" {
		f.w(" AS ")
		f.name(it.Alias)
	}
}

func (f *formatter) groupingElements(es []Expr) {
	for i, e := range es {
		if i > 0 {
			f.w(", ")
		}
		switch g := e.(type) {
		case *GroupingSets:
			f.w("GROUPING SETS (")
			f.groupingElements(g.Sets)
			f.w(")")
		case *Rollup:
			f.w("ROLLUP(")
			f.groupingElements(g.Items)
			f.w(")")
		case *Cube:
			f.w("CUBE(")
			f.groupingElements(g.Items)
			f.w(")")
		case *RowExpr:
			if len(g.Items) == 0 {
				f.w("()")
			} else {
				f.expr(g, 0)
			}
		default:
			f.expr(e, 0)
		}
	}
}

func (f *formatter) orderItems(items []*OrderItem) {
	for i, it := range items {
		if i > 0 {
			f.w(", ")
		}
		f.orderItem(it)
	}
}

func (f *formatter) orderItem(it *OrderItem) {
	f.expr(it.Expr, 0)
	f.wIf(it.Desc, " DESC")
	if it.Nulls != "" {
		f.w(" NULLS ")
		f.w(string(it.Nulls))
	}
}

func (f *formatter) windowSpec(ws *WindowSpec) {
	f.w("(")
	sp := false
	space := func() {
		f.wIf(sp, " ")
		sp = true
	}
	if ws.Ref != "" {
		space()
		f.name(ws.Ref)
	}
	if len(ws.PartitionBy) > 0 {
		space()
		f.w("PARTITION BY ")
		f.exprs(ws.PartitionBy)
	}
	if len(ws.OrderBy) > 0 {
		space()
		f.w("ORDER BY ")
		f.orderItems(ws.OrderBy)
	}
	if fr := ws.Frame; fr != nil {
		space()
		if fr.Rows {
			f.w("ROWS ")
		} else {
			f.w("RANGE ")
		}
		if fr.End != nil {
			f.w("BETWEEN ")
			f.frameBound(fr.Start)
			f.w(" AND ")
			f.frameBound(*fr.End)
		} else {
			f.frameBound(fr.Start)
		}
	}
	f.w(")")
}

func (f *formatter) frameBound(b FrameBound) {
	if b.Offset != nil {
		f.expr(b.Offset, 6)
		f.w(" ")
	}
	f.w(string(b.Kind))
}

func (f *formatter) alias(a *TableAlias) {
	if a == nil {
		return
	}
	f.w(" AS ")
	f.name(a.Name)
	if len(a.Columns) > 0 {
		f.names(a.Columns)
	}
}

func (f *formatter) tableRef(t TableRef) {
	switch t := t.(type) {
	case *TableName:
		f.parts(t.Name.Parts)
		if len(t.Hints) > 0 {
			f.w(" ")
			f.hints(t.Hints)
		}
		if t.SystemTime != nil {
			f.w(" FOR SYSTEM_TIME AS OF ")
			f.expr(t.SystemTime, 0)
		}
		f.alias(t.Alias)
	case *DerivedTable:
		f.wIf(t.Lateral, "LATERAL ")
		f.w("(")
		f.query(t.Query)
		f.w(")")
		f.alias(t.Alias)
	case *Join:
		f.tableRef(t.Left)
		if t.Type == CommaJoin {
			f.w(", ")
		} else {
			f.w(" ")
			f.wIf(t.Natural, "NATURAL ")
			f.w(string(t.Type))
			f.w(" JOIN ")
		}
		if _, ok := t.Right.(*Join); ok {
			f.w("(")
			f.tableRef(t.Right)
			f.w(")")
		} else {
			f.tableRef(t.Right)
		}
		if t.On != nil {
			f.w(" ON ")
			f.expr(t.On, 0)
		} else if len(t.Using) > 0 {
			f.w(" USING ")
			f.names(t.Using)
		}
	case *TableFunc:
		f.wIf(t.Lateral, "LATERAL ")
		f.w("TABLE(")
		f.expr(t.Call, 0)
		f.w(")")
		f.alias(t.Alias)
	case *WindowTVF:
		f.w("TABLE(")
		f.w(string(t.Kind))
		f.w("(")
		switch d := t.Data.(type) {
		case *TableName:
			f.w("TABLE ")
			f.parts(d.Name.Parts)
		case *DerivedTable:
			f.w("(")
			f.query(d.Query)
			f.w(")")
		}
		if len(t.PartitionBy) > 0 {
			f.w(" PARTITION BY (")
			f.exprs(t.PartitionBy)
			f.w(")")
		}
		f.w(", DESCRIPTOR(")
		f.name(t.TimeCol)
		f.w(")")
		for _, e := range []Expr{t.Slide, t.Step, t.Size, t.Gap, t.Offset} {
			if e != nil {
				f.w(", ")
				f.expr(e, 0)
			}
		}
		f.w("))")
		f.alias(t.Alias)
	case *MatchRecognize:
		f.matchRecognize(t)
	case *Unnest:
		f.w("UNNEST(")
		f.exprs(t.Exprs)
		f.w(")")
		f.wIf(t.WithOrdinality, " WITH ORDINALITY")
		f.alias(t.Alias)
	}
}

// ---------------------------------------------------------------------------
// Expressions

// Precedence levels; a larger number binds tighter.
const (
	precOr = 1 + iota
	precAnd
	precNot
	precCmp
	precLike
	precAdd
	precMul
	precUnary
	precPostfix
	precPrimary
)

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		switch e.Op {
		case OpOr:
			return precOr
		case OpAnd:
			return precAnd
		case OpAdd, OpSub:
			return precAdd
		case OpMul, OpDiv, OpMod, OpConcat:
			return precMul
		}
		return precCmp
	case *Unary:
		if e.Op == OpNot {
			return precNot
		}
		return precUnary
	case *Is, *In:
		return precCmp
	case *Like, *Between:
		return precLike
	case *Index, *FieldAccess:
		return precPostfix
	}
	return precPrimary
}

// specialFuncs are names that the parser reads with keyword syntax; a plain
// call of that name is printed backquoted so it stays a plain call.
var specialFuncs = map[string]bool{
	"TRY_CAST": true, "DESCRIPTOR": true, "EXTRACT": true, "TIMESTAMPADD": true,
	"TIMESTAMPDIFF": true, "TRIM": true, "SUBSTRING": true, "OVERLAY": true,
	"POSITION": true, "ROLLUP": true, "CUBE": true,
}

func (f *formatter) funcName(parts []string) {
	if len(parts) == 1 && isPlainWord(parts[0]) {
		n := parts[0]
		u := upper(n)
		// Niladic names are upper-cased by the parser, so only an upper-case
		// spelling reads back the same.
		if callableReserved[u] || niladic[n] || !reserved[u] && !specialFuncs[u] {
			f.w(n)
			return
		}
	}
	f.parts(parts)
}

func isPlainWord(s string) bool {
	for i, r := range s {
		if i == 0 && !isIdentStart(r) || i > 0 && !isIdentPart(r) {
			return false
		}
	}
	return s != ""
}

// expr writes e, in parentheses if it binds looser than minPrec.
func (f *formatter) expr(e Expr, minPrec int) {
	if exprPrec(e) < minPrec {
		f.w("(")
		f.expr(e, 0)
		f.w(")")
		return
	}
	switch e := e.(type) {
	case *Ident:
		f.parts(e.Parts)
	case *Star:
		if len(e.Qualifier) > 0 {
			f.parts(e.Qualifier)
			f.w(".")
		}
		f.w("*")
	case *Literal:
		f.literal(e)
	case *IntervalLiteral:
		f.w("INTERVAL ")
		f.wIf(e.Negative, "-")
		f.str(e.Value)
		f.w(" ")
		f.qualifier(&e.Qualifier)
	case *Unary:
		if e.Op == OpNot {
			f.w("NOT ")
			f.expr(e.Expr, precNot)
			return
		}
		f.w(string(e.Op))
		if u, ok := e.Expr.(*Unary); ok && u.Op != OpNot {
			f.w("(")
			f.expr(e.Expr, 0)
			f.w(")")
			return
		}
		f.expr(e.Expr, precUnary)
	case *Binary:
		p := exprPrec(e)
		f.expr(e.Left, p)
		f.w(" ")
		f.w(string(e.Op))
		f.w(" ")
		f.expr(e.Right, p+1)
	case *Is:
		f.expr(e.Expr, precCmp)
		f.w(" IS ")
		f.wIf(e.Not, "NOT ")
		f.w(string(e.What))
	case *In:
		f.expr(e.Expr, precCmp)
		f.wIf(e.Not, " NOT")
		f.w(" IN (")
		if e.Query != nil {
			f.query(e.Query)
		} else {
			f.exprs(e.List)
		}
		f.w(")")
	case *Like:
		f.expr(e.Expr, precLike)
		f.wIf(e.Not, " NOT")
		if e.Similar {
			f.w(" SIMILAR TO ")
		} else {
			f.w(" LIKE ")
		}
		f.expr(e.Pattern, precAdd)
		if e.Escape != nil {
			f.w(" ESCAPE ")
			f.expr(e.Escape, precAdd)
		}
	case *Between:
		f.expr(e.Expr, precLike)
		f.wIf(e.Not, " NOT")
		f.w(" BETWEEN ")
		f.wIf(e.Symmetric, "SYMMETRIC ")
		f.expr(e.Low, precAdd)
		f.w(" AND ")
		f.expr(e.High, precAdd)
	case *FuncCall:
		f.funcCall(e)
	case *Cast:
		if e.Try {
			f.w("TRY_CAST(")
		} else {
			f.w("CAST(")
		}
		f.expr(e.Expr, 0)
		f.w(" AS ")
		f.typ(e.Type)
		f.w(")")
	case *Case:
		f.w("CASE")
		if e.Operand != nil {
			f.w(" ")
			f.expr(e.Operand, 0)
		}
		for _, w := range e.Whens {
			f.w(" WHEN ")
			f.expr(w.Cond, 0)
			f.w(" THEN ")
			f.expr(w.Result, 0)
		}
		if e.Else != nil {
			f.w(" ELSE ")
			f.expr(e.Else, 0)
		}
		f.w(" END")
	case *Extract:
		f.w("EXTRACT(")
		f.w(string(e.Unit))
		f.w(" FROM ")
		f.expr(e.Expr, 0)
		f.w(")")
	case *Position:
		f.w("POSITION(")
		f.expr(e.Sub, precAdd)
		f.w(" IN ")
		f.expr(e.Str, precAdd)
		if e.Start != nil {
			f.w(" FROM ")
			f.expr(e.Start, 0)
		}
		f.w(")")
	case *Trim:
		f.w("TRIM(")
		if e.Mode != "" || e.Chars != nil {
			if e.Mode != "" {
				f.w(e.Mode)
				f.w(" ")
			}
			if e.Chars != nil {
				f.expr(e.Chars, 0)
				f.w(" ")
			}
			f.w("FROM ")
		}
		f.expr(e.Expr, 0)
		f.w(")")
	case *Substring:
		f.w("SUBSTRING(")
		f.expr(e.Expr, 0)
		f.w(" FROM ")
		f.expr(e.Start, 0)
		if e.Length != nil {
			f.w(" FOR ")
			f.expr(e.Length, 0)
		}
		f.w(")")
	case *Overlay:
		f.w("OVERLAY(")
		f.expr(e.Expr, 0)
		f.w(" PLACING ")
		f.expr(e.Repl, 0)
		f.w(" FROM ")
		f.expr(e.Start, 0)
		if e.Length != nil {
			f.w(" FOR ")
			f.expr(e.Length, 0)
		}
		f.w(")")
	case *FloorCeil:
		if e.Ceil {
			f.w("CEIL(")
		} else {
			f.w("FLOOR(")
		}
		f.expr(e.Expr, 0)
		f.w(" TO ")
		f.w(string(e.Unit))
		f.w(")")
	case *TimestampAdd:
		f.w("TIMESTAMPADD(")
		f.w(string(e.Unit))
		f.w(", ")
		f.expr(e.Count, 0)
		f.w(", ")
		f.expr(e.Timestamp, 0)
		f.w(")")
	case *TimestampDiff:
		f.w("TIMESTAMPDIFF(")
		f.w(string(e.Unit))
		f.w(", ")
		f.expr(e.Start, 0)
		f.w(", ")
		f.expr(e.End, 0)
		f.w(")")
	case *ArrayCtor:
		f.w("ARRAY[")
		f.exprs(e.Elems)
		f.w("]")
	case *MapCtor:
		f.w("MAP[")
		for i := range e.Keys {
			if i > 0 {
				f.w(", ")
			}
			f.expr(e.Keys[i], 0)
			f.w(", ")
			if i < len(e.Values) {
				f.expr(e.Values[i], 0)
			}
		}
		f.w("]")
	case *RowExpr:
		if len(e.Items) >= 2 {
			f.w("(")
		} else {
			f.w("ROW(")
		}
		f.exprs(e.Items)
		f.w(")")
	case *Exists:
		f.w("EXISTS (")
		f.query(e.Query)
		f.w(")")
	case *Subquery:
		f.w("(")
		f.query(e.Query)
		f.w(")")
	case *Index:
		f.expr(e.Expr, precPostfix)
		f.w("[")
		f.expr(e.Index, 0)
		f.w("]")
	case *FieldAccess:
		switch b := e.Expr.(type) {
		case *Ident:
			f.w("(")
			f.expr(b, 0)
			f.w(")")
		case *Literal:
			if b.Kind == IntegerLit || b.Kind == DecimalLit || b.Kind == ApproxLit {
				f.w("(")
				f.expr(b, 0)
				f.w(")")
			} else {
				f.expr(b, precPostfix)
			}
		default:
			f.expr(b, precPostfix)
		}
		f.w(".")
		f.name(e.Field)
	case *Descriptor:
		f.w("DESCRIPTOR")
		f.names(e.Columns)
	case *TableArg:
		f.w("TABLE ")
		f.parts(e.Name.Parts)
		if len(e.PartitionBy) > 0 {
			f.w(" PARTITION BY (")
			f.exprs(e.PartitionBy)
			f.w(")")
		}
	case *NamedArg:
		if isPlainWord(e.Name) {
			f.w(e.Name)
		} else {
			f.name(e.Name)
		}
		f.w(" => ")
		f.expr(e.Value, 0)
	case *GroupingSets, *Rollup, *Cube:
		f.groupingElements([]Expr{e})
	}
}

func (f *formatter) funcCall(e *FuncCall) {
	f.funcName(e.Name)
	if e.NoParens {
		return
	}
	f.w("(")
	f.wIf(e.Distinct, "DISTINCT ")
	f.exprs(e.Args)
	f.w(")")
	if len(e.WithinGroup) > 0 {
		f.w(" WITHIN GROUP (ORDER BY ")
		f.orderItems(e.WithinGroup)
		f.w(")")
	}
	if e.Filter != nil {
		f.w(" FILTER (WHERE ")
		f.expr(e.Filter, 0)
		f.w(")")
	}
	if e.Over != nil {
		f.w(" OVER ")
		ws := e.Over
		if ws.Ref != "" && ws.PartitionBy == nil && ws.OrderBy == nil && ws.Frame == nil {
			f.name(ws.Ref)
		} else {
			f.windowSpec(ws)
		}
	}
}

func (f *formatter) literal(l *Literal) {
	switch l.Kind {
	case StringLit:
		if l.Charset != "" {
			f.w("_")
			f.w(l.Charset)
		}
		f.str(l.Text)
	case BinaryLit:
		f.w("X'")
		f.w(l.Text)
		f.w("'")
	case DateLit:
		f.w("DATE ")
		f.str(l.Text)
	case TimeLit:
		f.w("TIME ")
		f.str(l.Text)
	case TimestampLit:
		f.w("TIMESTAMP ")
		f.str(l.Text)
	case TimestampLTZLit:
		f.w("TIMESTAMP WITH LOCAL TIME ZONE ")
		f.str(l.Text)
	default:
		f.w(l.Text)
	}
}

func (f *formatter) qualifier(q *IntervalQualifier) {
	f.w(string(q.Start))
	if q.Precision > 0 {
		f.w("(")
		f.w(strconv.Itoa(q.Precision))
		if q.Start == "SECOND" && q.End == "" && q.FracPrecision >= 0 {
			f.w(", ")
			f.w(strconv.Itoa(q.FracPrecision))
		}
		f.w(")")
	}
	if q.End != "" {
		f.w(" TO ")
		f.w(string(q.End))
		if q.End == "SECOND" && q.FracPrecision >= 0 {
			f.w("(")
			f.w(strconv.Itoa(q.FracPrecision))
			f.w(")")
		}
	}
}

// ---------------------------------------------------------------------------
// Types

func (f *formatter) typ(t *TypeName) {
	switch t.Name {
	case "ARRAY", "MULTISET":
		f.w(t.Name)
		f.w("<")
		f.typ(t.Elem)
		f.w(">")
	case "MAP":
		f.w("MAP<")
		f.typ(t.Key)
		f.w(", ")
		f.typ(t.Value)
		f.w(">")
	case "ROW":
		f.w("ROW<")
		for i, fl := range t.Fields {
			if i > 0 {
				f.w(", ")
			}
			f.rowField(fl)
		}
		f.w(">")
	case "RAW":
		f.w("RAW(")
		for i, a := range t.RawArgs {
			if i > 0 {
				f.w(", ")
			}
			f.str(a)
		}
		f.w(")")
	case "INTERVAL":
		f.w("INTERVAL ")
		if t.Interval != nil {
			f.qualifier(t.Interval)
		}
	default:
		f.w(t.Name)
		if len(t.Params) > 0 {
			f.w("(")
			for i, p := range t.Params {
				if i > 0 {
					f.w(", ")
				}
				f.w(strconv.Itoa(p))
			}
			f.w(")")
		}
	}
	f.wIf(t.NotNull, " NOT NULL")
}

func (f *formatter) rowField(fl *RowField) {
	f.name(fl.Name)
	f.w(" ")
	f.typ(fl.Type)
	if fl.Description != "" {
		f.w(" ")
		f.str(fl.Description)
	}
}

// wIf writes text when cond holds: the optional keywords of a statement.
func (f *formatter) wIf(cond bool, text string) {
	if cond {
		f.w(text)
	}
}

// comment writes a COMMENT clause when there is a comment.
func (f *formatter) comment(c string) {
	if c != "" {
		f.w(" COMMENT ")
		f.str(c)
	}
}
