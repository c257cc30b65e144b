package table

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weirproject/weir/internal/sql/types"
)

// DefaultMaxColumnWidth is Flink's default for
// sql-client.display.max-column-width.
const DefaultMaxColumnWidth = 30

// nullWidth is the width of "<NULL>", which every column of a streaming
// result can show.
const nullWidth = 6

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
// result, where the rows are not known in advance; variable-length types
// get maxWidth, as in Flink.
func typeWidth(t types.DataType, maxWidth int) int {
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
	return maxWidth
}

// ColumnWidths returns the widths the client gives the columns of a
// streaming result (whose rows are not known in advance), as Flink does:
// the type's width, variable-length types maxWidth, and at least the
// column's name and "<NULL>".
func ColumnWidths(cols []Column, maxWidth int) []int {
	if maxWidth <= 0 {
		maxWidth = DefaultMaxColumnWidth
	}
	ws := make([]int, len(cols))
	for i, c := range cols {
		ws[i] = max(typeWidth(c.Type, maxWidth), nullWidth, utf8.RuneCountInString(c.Name))
	}
	return ws
}

// FitCell right-aligns s in w columns, cutting it with "..." when it is
// longer, as the client's tableau does.
func FitCell(s string, w int) string { return pad(s, w) }

type tableau struct {
	w      io.Writer
	cols   []Column
	widths []int
	op     bool
	loc    *time.Location
}

// newTableau sizes the columns by the rows, or, for a stream (rows ==
// nil), by the types.
func newTableau(w io.Writer, cols []Column, op bool, loc *time.Location, rows []types.Record, maxWidth int) *tableau {
	if maxWidth <= 0 {
		maxWidth = DefaultMaxColumnWidth
	}
	t := &tableau{w: w, cols: cols, op: op, loc: loc}
	if rows == nil {
		t.widths = ColumnWidths(cols, maxWidth)
		return t
	}
	t.widths = make([]int, len(cols))
	for i, c := range cols {
		t.widths[i] = utf8.RuneCountInString(c.Name)
	}
	for _, r := range rows {
		for i, v := range r.Row {
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(cell(v, cols[i].Type, loc)))
		}
	}
	for i := range t.widths {
		t.widths[i] = min(t.widths[i], maxWidth)
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
		if w < 3 {
			return string(r[:max(w, 0)])
		}
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

// PrintOptions are the client's display settings.
type PrintOptions struct {
	// MaxColumnWidth is sql-client.display.max-column-width: the widest
	// a column gets before its values are cut ("..."); 0 means
	// DefaultMaxColumnWidth.
	MaxColumnWidth int
}

// PrintRows prints a finished result as the SQL client's tableau mode
// does, with "N rows in set" or "Empty set".
func PrintRows(w io.Writer, r *Result) { PrintRowsWith(w, r, PrintOptions{}) }

// PrintRowsWith is PrintRows with display settings.
func PrintRowsWith(w io.Writer, r *Result, o PrintOptions) {
	if len(r.Rows) == 0 && len(r.Columns) > 0 && !r.Updating {
		fmt.Fprintln(w, "Empty set")
		return
	}
	t := newTableau(w, r.Columns, r.Updating, r.loc, r.Rows, o.MaxColumnWidth)
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
	p := NewStreamPrinter(w, r, PrintOptions{})
	for rec := range r.Stream {
		p.Row(rec)
	}
	n := p.End()
	fmt.Fprintf(w, "Received a total of %d rows\n", n)
	return n
}

// StreamPrinter prints a streaming result row by row in the tableau
// mode's changelog form, for a caller that decides when to stop (the
// interactive client stops on Ctrl-C).
type StreamPrinter struct {
	t *tableau
	n int
}

// NewStreamPrinter prints the header of r's table.
func NewStreamPrinter(w io.Writer, r *Result, o PrintOptions) *StreamPrinter {
	p := &StreamPrinter{t: newTableau(w, r.Columns, true, r.loc, nil, o.MaxColumnWidth)}
	p.t.header()
	return p
}

// Row prints one record.
func (p *StreamPrinter) Row(rec types.Record) {
	p.t.row(rec)
	p.n++
}

// End prints the closing border and returns how many rows were printed.
func (p *StreamPrinter) End() int {
	p.t.border()
	return p.n
}
