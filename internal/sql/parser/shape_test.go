package parser

import (
	"fmt"
	"strings"
	"testing"
)

// The tests describe expected trees as compact S-expressions written by
// hand; sx renders a parsed tree in the same notation. It is independent of
// Format, so a printer bug cannot hide a parser bug.

func sx(n Node) string {
	switch e := n.(type) {
	case nil:
		return "nil"
	case *Ident:
		return strings.Join(e.Parts, ".")
	case *Star:
		if len(e.Qualifier) > 0 {
			return strings.Join(e.Qualifier, ".") + ".*"
		}
		return "*"
	case *Literal:
		switch e.Kind {
		case IntegerLit, DecimalLit, ApproxLit:
			return e.Kind.String() + ":" + e.Text
		case StringLit:
			if e.Charset != "" {
				return "str:" + e.Charset + ":'" + e.Text + "'"
			}
			return "str:'" + e.Text + "'"
		case BooleanLit, NullLit, UnknownLit:
			return e.Text
		default:
			return e.Kind.String() + ":'" + e.Text + "'"
		}
	case *IntervalLiteral:
		sign := ""
		if e.Negative {
			sign = "-"
		}
		return "(interval " + sign + "'" + e.Value + "' " + sxQual(e.Qualifier) + ")"
	case *Unary:
		return "(" + string(e.Op) + " " + sx(e.Expr) + ")"
	case *Binary:
		return "(" + string(e.Op) + " " + sx(e.Left) + " " + sx(e.Right) + ")"
	case *Is:
		not := ""
		if e.Not {
			not = "NOT "
		}
		return "(IS " + not + string(e.What) + " " + sx(e.Expr) + ")"
	case *Between:
		s := "(" + notStr(e.Not) + "BETWEEN "
		if e.Symmetric {
			s += "SYMMETRIC "
		}
		return s + sx(e.Expr) + " " + sx(e.Low) + " " + sx(e.High) + ")"
	case *Like:
		op := "LIKE"
		if e.Similar {
			op = "SIMILAR"
		}
		s := "(" + notStr(e.Not) + op + " " + sx(e.Expr) + " " + sx(e.Pattern)
		if e.Escape != nil {
			s += " escape " + sx(e.Escape)
		}
		return s + ")"
	case *In:
		if e.Query != nil {
			return "(" + notStr(e.Not) + "IN " + sx(e.Expr) + " " + sx(e.Query) + ")"
		}
		return "(" + notStr(e.Not) + "IN " + sx(e.Expr) + " [" + sxList(e.List) + "])"
	case *FuncCall:
		s := "(call " + strings.Join(e.Name, ".")
		if e.NoParens {
			s += " noparens"
		}
		if e.Distinct {
			s += " distinct"
		}
		if len(e.Args) > 0 {
			s += " " + sxList(e.Args)
		}
		if e.WithinGroup != nil {
			s += " within " + sxOrder(e.WithinGroup)
		}
		if e.Filter != nil {
			s += " filter " + sx(e.Filter)
		}
		if e.Over != nil {
			s += " over " + sx(e.Over)
		}
		return s + ")"
	case *WindowSpec:
		var parts []string
		if e.Ref != "" {
			parts = append(parts, "ref="+e.Ref)
		}
		if e.PartitionBy != nil {
			parts = append(parts, "partition="+sxList(e.PartitionBy))
		}
		if e.OrderBy != nil {
			parts = append(parts, "order="+sxOrder(e.OrderBy))
		}
		if f := e.Frame; f != nil {
			kind := "RANGE"
			if f.Rows {
				kind = "ROWS"
			}
			s := kind + " " + sxBound(f.Start)
			if f.End != nil {
				s += " .. " + sxBound(*f.End)
			}
			parts = append(parts, s)
		}
		return "{" + strings.Join(parts, "; ") + "}"
	case *Cast:
		op := "CAST"
		if e.Try {
			op = "TRY_CAST"
		}
		return "(" + op + " " + sx(e.Expr) + " " + sxType(e.Type) + ")"
	case *Case:
		s := "(CASE"
		if e.Operand != nil {
			s += " " + sx(e.Operand)
		}
		for _, w := range e.Whens {
			s += " (WHEN " + sx(w.Cond) + " " + sx(w.Result) + ")"
		}
		if e.Else != nil {
			s += " (ELSE " + sx(e.Else) + ")"
		}
		return s + ")"
	case *Extract:
		return "(EXTRACT " + string(e.Unit) + " " + sx(e.Expr) + ")"
	case *Position:
		s := "(POSITION " + sx(e.Sub) + " " + sx(e.Str)
		if e.Start != nil {
			s += " " + sx(e.Start)
		}
		return s + ")"
	case *Trim:
		return fmt.Sprintf("(TRIM %s %s %s)", orDash(e.Mode), sx(e.Chars), sx(e.Expr))
	case *Substring:
		return "(SUBSTRING " + sx(e.Expr) + " " + sx(e.Start) + " " + sx(e.Length) + ")"
	case *Overlay:
		return "(OVERLAY " + sx(e.Expr) + " " + sx(e.Repl) + " " + sx(e.Start) + " " + sx(e.Length) + ")"
	case *FloorCeil:
		op := "FLOOR"
		if e.Ceil {
			op = "CEIL"
		}
		return "(" + op + " " + sx(e.Expr) + " " + string(e.Unit) + ")"
	case *TimestampAdd:
		return "(TIMESTAMPADD " + string(e.Unit) + " " + sx(e.Count) + " " + sx(e.Timestamp) + ")"
	case *TimestampDiff:
		return "(TIMESTAMPDIFF " + string(e.Unit) + " " + sx(e.Start) + " " + sx(e.End) + ")"
	case *ArrayCtor:
		return "(ARRAY " + sxList(e.Elems) + ")"
	case *MapCtor:
		var parts []string
		for i := range e.Keys {
			parts = append(parts, sx(e.Keys[i])+":"+sx(e.Values[i]))
		}
		return "(MAP " + strings.Join(parts, " ") + ")"
	case *RowExpr:
		if len(e.Items) == 0 {
			return "(ROW)"
		}
		return "(ROW " + sxList(e.Items) + ")"
	case *Exists:
		return "(EXISTS " + sx(e.Query) + ")"
	case *Subquery:
		return "(SUBQUERY " + sx(e.Query) + ")"
	case *Index:
		return "([] " + sx(e.Expr) + " " + sx(e.Index) + ")"
	case *FieldAccess:
		return "(. " + sx(e.Expr) + " " + e.Field + ")"
	case *Descriptor:
		return "(DESCRIPTOR " + strings.Join(e.Columns, " ") + ")"
	case *TableArg:
		s := "(TABLE " + sx(e.Name)
		if e.PartitionBy != nil {
			s += " partition=" + sxList(e.PartitionBy)
		}
		return s + ")"
	case *NamedArg:
		return "(=> " + e.Name + " " + sx(e.Value) + ")"
	case *GroupingSets:
		return "(GROUPING_SETS " + sxList(e.Sets) + ")"
	case *Rollup:
		return "(ROLLUP " + sxList(e.Items) + ")"
	case *Cube:
		return "(CUBE " + sxList(e.Items) + ")"

	// Queries.
	case *Select:
		s := "(SELECT"
		if e.Distinct {
			s += " DISTINCT"
		}
		if e.Hints != nil {
			s += " hints=" + sxHints(e.Hints)
		}
		for _, it := range e.Items {
			s += " " + sx(it.Expr)
			if it.Alias != "" {
				s += "@" + it.Alias
			}
		}
		if e.From != nil {
			s += " FROM " + sx(e.From)
		}
		if e.Where != nil {
			s += " WHERE " + sx(e.Where)
		}
		if e.GroupBy != nil {
			s += " GROUP " + sxList(e.GroupBy)
		}
		if e.Having != nil {
			s += " HAVING " + sx(e.Having)
		}
		for _, w := range e.Windows {
			s += " WINDOW " + w.Name + "=" + sx(w.Spec)
		}
		return s + ")"
	case *SetOp:
		op := string(e.Op)
		if e.All {
			op += "_ALL"
		}
		return "(" + op + " " + sx(e.Left) + " " + sx(e.Right) + ")"
	case *Values:
		var rows []string
		for _, r := range e.Rows {
			rows = append(rows, "["+sxList(r)+"]")
		}
		return "(VALUES " + strings.Join(rows, " ") + ")"
	case *Query:
		s := "(QUERY"
		for _, c := range e.With {
			s += " (WITH " + c.Name
			if c.Columns != nil {
				s += "(" + strings.Join(c.Columns, ",") + ")"
			}
			s += " " + sx(c.Query) + ")"
		}
		s += " " + sx(e.Body)
		if e.OrderBy != nil {
			s += " ORDER " + sxOrder(e.OrderBy)
		}
		if e.Limit != nil {
			s += " LIMIT " + sx(e.Limit)
		}
		if e.Offset != nil {
			s += " OFFSET " + sx(e.Offset)
		}
		return s + ")"

	// Table references.
	case *TableName:
		s := sx(e.Name)
		if e.Hints != nil {
			s += " hints=" + sxHints(e.Hints)
		}
		if e.SystemTime != nil {
			s += " asof=" + sx(e.SystemTime)
		}
		return s + sxAlias(e.Alias)
	case *DerivedTable:
		s := "(DERIVED "
		if e.Lateral {
			s = "(LATERAL "
		}
		return s + sx(e.Query) + sxAlias(e.Alias) + ")"
	case *Join:
		s := "(" + string(e.Type)
		if e.Type == CommaJoin {
			s = "(COMMA"
		}
		if e.Natural {
			s += " NATURAL"
		}
		s += " " + sx(e.Left) + " " + sx(e.Right)
		if e.On != nil {
			s += " ON " + sx(e.On)
		}
		if e.Using != nil {
			s += " USING " + strings.Join(e.Using, ",")
		}
		return s + ")"
	case *TableFunc:
		s := "(TABLEFUNC "
		if e.Lateral {
			s = "(LATERAL_TABLEFUNC "
		}
		return s + sx(e.Call) + sxAlias(e.Alias) + ")"
	case *WindowTVF:
		s := "(" + string(e.Kind) + " data=" + sx(e.Data) + " timecol=" + e.TimeCol
		if e.PartitionBy != nil {
			s += " partition=" + sxList(e.PartitionBy)
		}
		for _, kv := range []struct {
			k string
			v Expr
		}{{"size", e.Size}, {"slide", e.Slide}, {"step", e.Step}, {"gap", e.Gap}, {"offset", e.Offset}} {
			if kv.v != nil {
				s += " " + kv.k + "=" + sx(kv.v)
			}
		}
		return s + sxAlias(e.Alias) + ")"
	case *MatchRecognize:
		return sxMatch(e)
	case *Unnest:
		s := "(UNNEST " + sxList(e.Exprs)
		if e.WithOrdinality {
			s += " ordinality"
		}
		return s + sxAlias(e.Alias) + ")"
	}
	return fmt.Sprintf("<%T>", n)
}

func notStr(b bool) string {
	if b {
		return "NOT "
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sxList(es []Expr) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, sx(e))
	}
	return strings.Join(parts, " ")
}

func sxOrder(items []*OrderItem) string {
	var parts []string
	for _, it := range items {
		s := sx(it.Expr)
		if it.Desc {
			s += " DESC"
		}
		if it.Nulls != "" {
			s += " NULLS_" + string(it.Nulls)
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func sxBound(b FrameBound) string {
	if b.Offset != nil {
		return sx(b.Offset) + " " + string(b.Kind)
	}
	return string(b.Kind)
}

func sxAlias(a *TableAlias) string {
	if a == nil {
		return ""
	}
	s := " AS " + a.Name
	if a.Columns != nil {
		s += "(" + strings.Join(a.Columns, ",") + ")"
	}
	return s
}

func sxHints(hs []*Hint) string {
	var parts []string
	for _, h := range hs {
		s := h.Name
		var args []string
		for _, o := range h.Options {
			args = append(args, o.Key+"="+o.Value)
		}
		args = append(args, h.Args...)
		if args != nil {
			s += "(" + strings.Join(args, ",") + ")"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func sxQual(q IntervalQualifier) string {
	s := string(q.Start)
	if q.Precision > 0 {
		s += fmt.Sprintf("(%d)", q.Precision)
	}
	if q.End != "" {
		s += " TO " + string(q.End)
	}
	if q.FracPrecision >= 0 {
		s += fmt.Sprintf(" frac=%d", q.FracPrecision)
	}
	return s
}

// sxType renders a type independently of Format.
func sxType(t *TypeName) string {
	if t == nil {
		return "nil"
	}
	s := t.Name
	switch {
	case t.Elem != nil:
		s += "<" + sxType(t.Elem) + ">"
	case t.Key != nil:
		s += "<" + sxType(t.Key) + "," + sxType(t.Value) + ">"
	case t.Fields != nil:
		var fs []string
		for _, f := range t.Fields {
			fd := f.Name + " " + sxType(f.Type)
			if f.Description != "" {
				fd += " '" + f.Description + "'"
			}
			fs = append(fs, fd)
		}
		s += "<" + strings.Join(fs, ",") + ">"
	case t.Interval != nil:
		s += " " + sxQual(*t.Interval)
	case t.RawArgs != nil:
		s += "(" + strings.Join(t.RawArgs, ",") + ")"
	}
	if t.Params != nil {
		var ps []string
		for _, p := range t.Params {
			ps = append(ps, fmt.Sprint(p))
		}
		s += "(" + strings.Join(ps, ",") + ")"
	}
	if t.NotNull {
		s += "!"
	}
	return s
}

// checkRoundTrip asserts that Format(n) parses back to a tree equal to n.
func checkRoundTrip(t *testing.T, n Node) {
	t.Helper()
	out := Format(n)
	var back Node
	var err error
	switch n.(type) {
	case Statement:
		back, err = ParseStatement(out)
	case *TypeName:
		back, err = ParseType(out)
	case Expr:
		back, err = ParseExpr(out)
	case QueryExpr:
		back, err = ParseStatement(out)
		if err == nil {
			back = back.(*QueryStatement).Query
		}
	default:
		t.Fatalf("checkRoundTrip: unexpected %T", n)
	}
	if err != nil {
		t.Errorf("formatted %T does not parse: %v\n%s", n, err, out)
		return
	}
	if !Equal(n, back) {
		t.Errorf("round trip changed the tree\nformatted: %s\nbefore: %s\nafter:  %s", out, sx(n), sx(back))
	}
}
