package table

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weirproject/weir/internal/sql/types"
)

// maxColumnWidth is Flink's sql-client.display.max-column-width.
const maxColumnWidth = 30

// cell renders a value as the SQL client shows it.
func cell(v any, t types.DataType, loc *time.Location) string {
	if v == nil {
		return "<NULL>"
	}
	if loc == nil {
		loc = time.UTC
	}
	return types.FormatIn(v, t, loc)
}

// typeWidth is the width the client reserves for a type in a streaming
// result, where the rows are not known in advance.
func typeWidth(t types.DataType) int {
	switch t.Kind {
	case types.KindBoolean:
		return 6
	case types.KindTinyInt:
		return 4
	case types.KindSmallInt:
		return 6
	case types.KindInt:
		return 11
	case types.KindBigInt, types.KindFloat, types.KindDouble:
		return 20
	case types.KindDecimal:
		return t.Precision + 2
	case types.KindDate:
		return 10
	case types.KindTime:
		return 8 + t.Precision + 1
	case types.KindTimestamp, types.KindTimestampLTZ:
		return 20 + t.Precision
	}
	return maxColumnWidth
}

type tableau struct {
	w      io.Writer
	cols   []Column
	widths []int
	op     bool
	loc    *time.Location
}

func newTableau(w io.Writer, cols []Column, op bool, loc *time.Location, rows []types.Record) *tableau {
	t := &tableau{w: w, cols: cols, op: op, loc: loc, widths: make([]int, len(cols))}
	for i, c := range cols {
		t.widths[i] = utf8.RuneCountInString(c.Name)
		if rows == nil {
			t.widths[i] = max(t.widths[i], typeWidth(c.Type))
		}
	}
	for _, r := range rows {
		for i, v := range r.Row {
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(cell(v, cols[i].Type, loc)))
		}
	}
	for i := range t.widths {
		t.widths[i] = min(t.widths[i], maxColumnWidth)
	}
	return t
}

func (t *tableau) border() {
	var b strings.Builder
	b.WriteByte('+')
	if t.op {
		b.WriteString("----+")
	}
	for _, w := range t.widths {
		b.WriteString(strings.Repeat("-", w+2))
		b.WriteByte('+')
	}
	fmt.Fprintln(t.w, b.String())
}

func pad(s string, w int) string {
	n := utf8.RuneCountInString(s)
	if n > w {
		r := []rune(s)
		return string(r[:w-3]) + "..."
	}
	return strings.Repeat(" ", w-n) + s
}

func (t *tableau) line(op string, vals []string) {
	var b strings.Builder
	b.WriteByte('|')
	if t.op {
		fmt.Fprintf(&b, " %2s |", op)
	}
	for i, v := range vals {
		b.WriteByte(' ')
		b.WriteString(pad(v, t.widths[i]))
		b.WriteString(" |")
	}
	fmt.Fprintln(t.w, b.String())
}

func (t *tableau) header() {
	t.border()
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.Name
	}
	t.line("op", names)
	t.border()
}

func (t *tableau) row(r types.Record) {
	vals := make([]string, len(r.Row))
	for i, v := range r.Row {
		vals[i] = cell(v, t.cols[i].Type, t.loc)
	}
	t.line(r.Kind.String(), vals)
}

// PrintRows prints a finished result as the SQL client's tableau mode
// does, with "N rows in set" or "Empty set".
func PrintRows(w io.Writer, r *Result) {
	if len(r.Rows) == 0 && len(r.Columns) > 0 && !r.Updating {
		fmt.Fprintln(w, "Empty set")
		return
	}
	t := newTableau(w, r.Columns, r.Updating, r.loc, r.Rows)
	t.header()
	for _, row := range r.Rows {
		t.row(row)
	}
	t.border()
	if n := len(r.Rows); n == 1 {
		fmt.Fprintln(w, "1 row in set")
	} else {
		fmt.Fprintf(w, "%d rows in set\n", n)
	}
}

// PrintStream prints a running query's records as they arrive, in the
// changelog form of the tableau mode (an op column), and returns how many
// it printed when the stream ends.
func PrintStream(w io.Writer, r *Result) int {
	t := newTableau(w, r.Columns, true, r.loc, nil)
	t.header()
	n := 0
	for rec := range r.Stream {
		t.row(rec)
		n++
	}
	t.border()
	fmt.Fprintf(w, "Received a total of %d rows\n", n)
	return n
}
