package table_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// TestMaterializeGroupByCounts feeds the changelog of an updating
// COUNT(*) ... GROUP BY k (with deletes, as a HAVING would make) and
// compares the table with the counts computed directly.
func TestMaterializeGroupByCounts(t *testing.T) {
	cols := []table.Column{{Name: "k", Type: types.String()}, {Name: "cnt", Type: types.BigInt()}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, limit := range []int{0, 1000} {
		m := table.NewMaterializedTable(cols, limit)
		counts := map[string]int64{}
		changes := 0
		for i := range 20000 {
			k := fmt.Sprintf("ключ-%d", rng.IntN(50))
			c := counts[k]
			switch {
			case c > 0 && i%7 == 0:
				m.Apply(types.Record{Kind: types.Delete, Row: types.Row{k, c}})
				delete(counts, k)
				changes++
			case c == 0:
				m.Apply(types.Record{Kind: types.Insert, Row: types.Row{k, int64(1)}})
				counts[k] = 1
				changes++
			default:
				m.Apply(types.Record{Kind: types.UpdateBefore, Row: types.Row{k, c}})
				m.Apply(types.Record{Kind: types.UpdateAfter, Row: types.Row{k, c + 1}})
				counts[k] = c + 1
				changes += 2
			}
		}
		if m.Len() != len(counts) {
			t.Fatalf("limit %d: %d rows, want %d", limit, m.Len(), len(counts))
		}
		got := map[string]int64{}
		for _, r := range m.Rows(0, -1) {
			k := r[0].(string)
			if _, dup := got[k]; dup {
				t.Fatalf("limit %d: key %q twice", limit, k)
			}
			got[k] = r[1].(int64)
		}
		if !reflect.DeepEqual(got, counts) {
			t.Fatalf("limit %d: table %v, want %v", limit, got, counts)
		}
		if m.Unmatched() != 0 {
			t.Fatalf("limit %d: %d unmatched retractions", limit, m.Unmatched())
		}
	}
}

// listModel is the brute force: a list of rows; an addition appends, a
// retraction removes the newest equal row; past limit the oldest goes.
type listModel struct {
	rows      []types.Row
	limit     int
	unmatched int
}

func (l *listModel) apply(r types.Record) {
	if r.Kind.IsAccumulate() {
		l.rows = append(l.rows, r.Row)
		if l.limit > 0 && len(l.rows) > l.limit {
			l.rows = l.rows[1:]
		}
		return
	}
	for i := len(l.rows) - 1; i >= 0; i-- {
		if reflect.DeepEqual(l.rows[i], r.Row) {
			l.rows = append(l.rows[:i:i], l.rows[i+1:]...)
			return
		}
	}
	l.unmatched++
}

// TestMaterializeOrderAgainstList checks the order of the rows, duplicate
// rows, retractions of absent rows and the row limit against the list
// model, on random changelogs over few distinct rows (so that duplicates
// and holes are frequent), paging through the result.
func TestMaterializeOrderAgainstList(t *testing.T) {
	cols := []table.Column{{Name: "a", Type: types.Int()}, {Name: "b", Type: types.String()}}
	kinds := []types.RowKind{types.Insert, types.UpdateBefore, types.UpdateAfter, types.Delete}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		limit := []int{0, 5, 100}[seed%3]
		m := table.NewMaterializedTable(cols, limit)
		l := &listModel{limit: limit}
		for i := range 3000 {
			var b any = fmt.Sprint("v", rng.IntN(3))
			if rng.IntN(5) == 0 {
				b = nil
			}
			r := types.Record{Kind: kinds[rng.IntN(4)], Row: types.Row{int32(rng.IntN(4)), b}}
			m.Apply(r)
			l.apply(r)
			if i%97 == 0 || i == 2999 {
				got := m.Rows(0, -1)
				if len(got) != len(l.rows) || m.Len() != len(l.rows) || (len(got) > 0 && !reflect.DeepEqual(got, l.rows)) {
					t.Fatalf("seed %d, change %d: rows %v (len %d), want %v", seed, i, got, m.Len(), l.rows)
				}
				if m.Unmatched() != l.unmatched {
					t.Fatalf("seed %d, change %d: %d unmatched, want %d", seed, i, m.Unmatched(), l.unmatched)
				}
				// Pages put together give the whole table.
				var paged []types.Row
				for off := 0; off < m.Len(); off += 7 {
					paged = append(paged, m.Rows(off, 7)...)
				}
				if len(paged) > 0 && !reflect.DeepEqual(paged, l.rows) {
					t.Fatalf("seed %d, change %d: pages %v, want %v", seed, i, paged, l.rows)
				}
			}
		}
	}
}

// TestMaterializeEqualValues checks that rows equal as SQL compares them
// retract each other even when their Go values differ in form (decimals
// of another scale).
func TestMaterializeEqualValues(t *testing.T) {
	dt := types.DecimalType(10, 2)
	cols := []table.Column{{Name: "d", Type: dt}}
	a := types.MakeDecimal(15, 1)
	b := types.MakeDecimal(150, 2)
	m := table.NewMaterializedTable(cols, 0)
	m.Apply(types.Record{Kind: types.Insert, Row: types.Row{a}})
	m.Apply(types.Record{Kind: types.Insert, Row: types.Row{nil}})
	m.Apply(types.Record{Kind: types.Delete, Row: types.Row{b}})
	rows := m.Rows(0, -1)
	if len(rows) != 1 || rows[0][0] != nil {
		t.Fatalf("rows %v, want only the NULL row", rows)
	}
}
