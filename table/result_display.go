package table

import (
	"strconv"

	"github.com/weirproject/weir/internal/sql/types"
)

// FormatRow renders a row of the result as the SQL client shows its
// cells: "<NULL>" for NULL, timestamps with a local time zone in the
// session's zone.
func (r *Result) FormatRow(row types.Row) []string {
	out := make([]string, len(row))
	for i, v := range row {
		t := types.String()
		if i < len(r.Columns) {
			t = r.Columns[i].Type
		}
		out[i] = cell(v, t, r.loc)
	}
	return out
}

// PrintOptions returns the session's display settings
// (sql-client.display.max-column-width).
func (e *Environment) PrintOptions() PrintOptions {
	o := PrintOptions{MaxColumnWidth: DefaultMaxColumnWidth}
	if v, ok := e.Setting("sql-client.display.max-column-width"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			o.MaxColumnWidth = n
		}
	}
	return o
}
