package table

import (
	"fmt"

	"github.com/weirproject/weir/internal/sql/types"
)

// DefaultMaxTableRows is Flink's default for
// sql-client.execution.max-table-result.rows.
const DefaultMaxTableRows = 1_000_000

// MaterializedTable is the table a changelog describes, kept as Flink's
// SQL client keeps it in its table result mode: +I and +U append a row,
// -U and -D remove the newest row equal to theirs. Rows stay in the order
// they were added, so an updated row moves to the end, as in Flink.
//
// A MaterializedTable is not safe for concurrent use.
type MaterializedTable struct {
	cols []Column
	// limit bounds the live rows; past it the oldest row goes, as Flink
	// does with sql-client.execution.max-table-result.rows.
	limit int

	rows []matRow
	live int
	// head is the position of the oldest row that may be live.
	head int
	// index maps a row's key to the positions of its live copies, oldest
	// first, so that a retraction finds its row without a scan.
	index map[string][]int
	// unmatched counts retractions of rows that were not in the table
	// (a result that started from state, or rows evicted by the limit).
	unmatched int
}

type matRow struct {
	row  types.Row
	key  string
	dead bool
}

// NewMaterializedTable returns an empty table of the columns; limit > 0
// bounds its rows (the oldest go first), limit <= 0 leaves them unbounded.
func NewMaterializedTable(cols []Column, limit int) *MaterializedTable {
	return &MaterializedTable{cols: cols, limit: limit, index: map[string][]int{}}
}

// Apply applies one change.
func (m *MaterializedTable) Apply(r types.Record) {
	key := rowKey(m.cols, r.Row)
	switch r.Kind {
	case types.Insert, types.UpdateAfter:
		m.index[key] = append(m.index[key], len(m.rows))
		m.rows = append(m.rows, matRow{row: r.Row, key: key})
		m.live++
		if m.limit > 0 && m.live > m.limit {
			m.evictOldest()
		}
	default:
		pos := m.index[key]
		if len(pos) == 0 {
			m.unmatched++
			return
		}
		i := pos[len(pos)-1]
		m.drop(key, len(pos)-1)
		m.rows[i].dead = true
		m.live--
	}
	// Holes are squeezed out once they outnumber the live rows, which
	// keeps the work per change constant on average.
	if dead := len(m.rows) - m.live; dead > 64 && dead > m.live {
		m.compact()
	}
}

func (m *MaterializedTable) drop(key string, at int) {
	pos := m.index[key]
	if len(pos) == 1 {
		delete(m.index, key)
		return
	}
	m.index[key] = append(pos[:at], pos[at+1:]...)
}

func (m *MaterializedTable) evictOldest() {
	for m.rows[m.head].dead {
		m.head++
	}
	r := &m.rows[m.head]
	// The oldest live row is the first of the copies of its key.
	m.drop(r.key, 0)
	r.dead = true
	m.live--
}

func (m *MaterializedTable) compact() {
	kept := make([]matRow, 0, m.live)
	clear(m.index)
	for _, r := range m.rows {
		if !r.dead {
			m.index[r.key] = append(m.index[r.key], len(kept))
			kept = append(kept, r)
		}
	}
	m.rows, m.head = kept, 0
}

// Len returns the number of rows of the table.
func (m *MaterializedTable) Len() int { return m.live }

// Unmatched returns how many retractions found no row to remove.
func (m *MaterializedTable) Unmatched() int { return m.unmatched }

// Rows returns up to n rows of the table from the offset-th on (n < 0:
// all of them), in the order they were added.
func (m *MaterializedTable) Rows(offset, n int) []types.Row {
	if m.live < len(m.rows) {
		m.compact()
	}
	if offset < 0 {
		offset = 0
	}
	if offset > len(m.rows) {
		offset = len(m.rows)
	}
	end := len(m.rows)
	if n >= 0 && offset+n < end {
		end = offset + n
	}
	out := make([]types.Row, 0, end-offset)
	for _, r := range m.rows[offset:end] {
		out = append(out, r.row)
	}
	return out
}

// rowKey encodes a row so that equal rows, as SQL compares them, have
// equal keys.
func rowKey(cols []Column, row types.Row) (key string) {
	defer func() {
		// A value the key encoding does not know (a type it lacks) falls
		// back to its printed form, which is equal for equal rows too.
		if recover() != nil {
			key = fmt.Sprintf("%#v", row)
		}
	}()
	var b []byte
	for i, v := range row {
		if i < len(cols) {
			b = types.AppendKey(b, cols[i].Type, v)
		} else {
			b = fmt.Appendf(b, "%#v", v)
		}
	}
	return string(b)
}
