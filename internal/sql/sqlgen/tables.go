// Package sqlgen generates random SQL queries from a grammar, for testing
// weir's SQL against an independent engine (SQLite). Every query comes in
// two spellings, weir's (Flink SQL) and SQLite's, over a fixed set of small
// tables that this package defines too, so that the data and the queries
// cannot drift apart.
//
// The generator produces only shapes on which Flink SQL and SQLite agree;
// where they spell or type a thing differently, it writes each side its own
// way (see the comments at each such place). A generated query is
// deterministic in (seed, index): Generate(seed, i) is always the same
// query, so a failing one can be replayed alone.
package sqlgen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Class is what the generator knows of a type: the classes that may be
// compared, united and coalesced with one another. INT and BIGINT are one
// class (Flink widens one to the other, SQLite has one integer type).
type Class int

const (
	Int Class = iota
	Double
	String
	Bool
	Date
	numClasses
)

// Column is one column of a test table.
type Column struct {
	Name  string
	Type  string // weir's type name
	Class Class
}

// Table is a test table: its columns and rows. A nil cell is NULL; the
// others are int64, float64, string or bool, and dates are "YYYY-MM-DD"
// strings.
type Table struct {
	Name string
	Cols []Column
	Rows [][]any
}

// Tables are the batch tables: several column types, NULLs, duplicate
// rows, a key column k of small range in every table so that joins match,
// and one empty table. Doubles are binary fractions, so that sums are
// exact in any order; BIGINT values exceed the INT range; strings are
// ASCII of mixed case, with the empty string, so that byte order (Flink's
// and SQLite's) is the only order.
func Tables() []Table {
	r := rand.New(rand.NewPCG(41, 43))
	intV := func(lo, hi int) any {
		if r.IntN(7) == 0 {
			return nil
		}
		return int64(lo + r.IntN(hi-lo+1))
	}
	bigV := func() any {
		if r.IntN(7) == 0 {
			return nil
		}
		return int64(r.IntN(9)-3) * 3000000000
	}
	dblV := func() any {
		if r.IntN(7) == 0 {
			return nil
		}
		return float64(r.IntN(41)-12) / 4
	}
	strs := []string{"a", "b", "ab", "A", "B", "", "abc", "b a", "zz"}
	strV := func() any {
		if r.IntN(7) == 0 {
			return nil
		}
		return strs[r.IntN(len(strs))]
	}
	boolV := func() any {
		if r.IntN(6) == 0 {
			return nil
		}
		return r.IntN(2) == 0
	}
	dateV := func() any {
		if r.IntN(7) == 0 {
			return nil
		}
		return fmt.Sprintf("2024-01-%02d", 1+r.IntN(9))
	}
	fill := func(t *Table, n int, cell func(c Column) any) {
		for range n {
			row := make([]any, len(t.Cols))
			for i, c := range t.Cols {
				row[i] = cell(c)
			}
			t.Rows = append(t.Rows, row)
			if r.IntN(5) == 0 { // an exact duplicate
				t.Rows = append(t.Rows, row)
			}
		}
	}
	cellOf := func(c Column) any {
		switch {
		case c.Name == "k":
			return intV(0, 5)
		case c.Type == "BIGINT":
			return bigV()
		case c.Class == Int:
			return intV(-6, 20)
		case c.Class == Double:
			return dblV()
		case c.Class == String:
			return strV()
		case c.Class == Bool:
			return boolV()
		}
		return dateV()
	}
	t1 := Table{Name: "t1", Cols: []Column{{"k", "INT", Int}, {"a", "INT", Int}, {"b", "BIGINT", Int}, {"c", "DOUBLE", Double}, {"s", "STRING", String}, {"f", "BOOLEAN", Bool}, {"d", "DATE", Date}}}
	t2 := Table{Name: "t2", Cols: []Column{{"k", "INT", Int}, {"x", "INT", Int}, {"c", "DOUBLE", Double}, {"s", "STRING", String}, {"d", "DATE", Date}}}
	t3 := Table{Name: "t3", Cols: []Column{{"k", "INT", Int}, {"b", "BIGINT", Int}, {"s", "STRING", String}, {"f", "BOOLEAN", Bool}}}
	t4 := Table{Name: "t4", Cols: []Column{{"k", "INT", Int}, {"a", "INT", Int}, {"s", "STRING", String}}} // empty
	fill(&t1, 14, cellOf)
	fill(&t2, 10, cellOf)
	fill(&t3, 5, cellOf)
	return []Table{t1, t2, t3, t4}
}

// WeirColumns is the column list of the table's CREATE TABLE in weir.
func (t Table) WeirColumns() string {
	var b strings.Builder
	for i, c := range t.Cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name + " " + c.Type)
	}
	return b.String()
}

// CSV renders the rows as a CSV file whose NULL literal is \N.
func (t Table) CSV() string {
	var b strings.Builder
	for _, row := range t.Rows {
		for i, v := range row {
			if i > 0 {
				b.WriteByte(',')
			}
			switch v := v.(type) {
			case nil:
				b.WriteString(`\N`)
			case string:
				// Quoted, so that the empty string is not an empty field.
				b.WriteString(`"` + strings.ReplaceAll(v, `"`, `""`) + `"`)
			default:
				b.WriteString(plain(v))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// LiteScript creates and fills the table in SQLite. Booleans are 1 and 0
// there, dates ISO text (which orders as the dates do).
func (t Table) LiteScript() string {
	var b strings.Builder
	b.WriteString("CREATE TABLE " + t.Name + " (")
	for i, c := range t.Cols {
		if i > 0 {
			b.WriteString(", ")
		}
		aff := map[Class]string{Int: "INTEGER", Double: "REAL", String: "TEXT", Bool: "INTEGER", Date: "TEXT"}[c.Class]
		b.WriteString(c.Name + " " + aff)
	}
	b.WriteString(");\n")
	for _, row := range t.Rows {
		b.WriteString("INSERT INTO " + t.Name + " VALUES (")
		for i, v := range row {
			if i > 0 {
				b.WriteString(", ")
			}
			switch v := v.(type) {
			case nil:
				b.WriteString("NULL")
			case string:
				b.WriteString("'" + strings.ReplaceAll(v, "'", "''") + "'")
			case bool:
				if v {
					b.WriteString("1")
				} else {
					b.WriteString("0")
				}
			default:
				b.WriteString(plain(v))
			}
		}
		b.WriteString(");\n")
	}
	return b.String()
}

func plain(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	panic(fmt.Sprintf("sqlgen: a cell of type %T", v))
}

// StreamTable is the table of the streaming-only shapes (window TVFs): an
// event time with a watermark. Its rows are not compared with anything;
// the queries over it must only plan and run, or be refused cleanly.
func StreamTable() Table {
	t := Table{Name: "ev", Cols: []Column{{"k", "INT", Int}, {"v", "INT", Int}, {"s", "STRING", String}, {"ts", "TIMESTAMP(3)", Date}}}
	r := rand.New(rand.NewPCG(5, 7))
	for i := range 40 {
		sec := i*2 + r.IntN(5) - 2 // a little out of order
		if sec < 0 {
			sec = 0
		}
		t.Rows = append(t.Rows, []any{int64(r.IntN(4)), int64(r.IntN(30) - 5), []string{"a", "b", "c"}[r.IntN(3)], fmt.Sprintf("2024-01-01 00:%02d:%02d.000", sec/60, sec%60)})
	}
	return t
}
