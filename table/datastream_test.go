package table_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/table"
)

type order struct {
	ID     int64
	User   string `sql:"user_name"`
	Amount float64
	At     time.Time
	Note   *string
}

type bigOrder struct {
	ID     int64
	User   string `sql:"user_name"`
	Amount float64
	At     time.Time
}

// TestTablesAndDataStreamsInOneJob: a DataStream of structs becomes a
// table, SQL queries it, and the results come back as a changelog stream
// and as a stream of structs, all in one job of the stream environment.
func TestTablesAndDataStreamsInOneJob(t *testing.T) {
	var orders []order
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	users := []string{"ann", "bob", "zoë"}
	note := "gift"
	for i := range 300 {
		o := order{ID: int64(i), User: users[i%3], Amount: float64(i%17) * 2.5, At: base.Add(time.Duration(i) * time.Second)}
		if i%5 == 0 {
			o.Note = &note
		}
		orders = append(orders, o)
	}
	env := stream.NewEnvironment().SetParallelism(2)
	tenv := table.NewStreamEnvironment(env)
	if err := table.FromDataStream(tenv, "orders", stream.FromSlice(env, orders)); err != nil {
		t.Fatal(err)
	}
	totals, err := tenv.SQLQuery("SELECT user_name, COUNT(*) AS n, SUM(Amount) AS total, COUNT(Note) AS notes FROM orders GROUP BY user_name")
	if err != nil {
		t.Fatal(err)
	}
	changes, err := table.ToChangelogStream(totals)
	if err != nil {
		t.Fatal(err)
	}
	changelog := stream.Collect(changes)
	big, err := tenv.SQLQuery("SELECT ID, user_name, Amount, At FROM orders WHERE Amount > 30 AND ID >= 60")
	if err != nil {
		t.Fatal(err)
	}
	bigs, err := table.ToDataStream[bigOrder](big)
	if err != nil {
		t.Fatal(err)
	}
	collected := stream.Collect(bigs)
	if _, err := table.ToDataStream[bigOrder](totals); err == nil {
		t.Fatal("ToDataStream of an updating table was accepted")
	}
	if err := env.Execute(context.Background(), "mixed"); err != nil {
		t.Fatal(err)
	}

	want := map[string]int{}
	type agg struct {
		n, notes int64
		total    float64
	}
	per := map[string]agg{}
	wantBig := map[bigOrder]int{}
	for _, o := range orders {
		a := per[o.User]
		a.n++
		a.total += o.Amount
		if o.Note != nil {
			a.notes++
		}
		per[o.User] = a
		if o.Amount > 30 && o.ID >= 60 {
			wantBig[bigOrder{o.ID, o.User, o.Amount, o.At.UTC()}]++
		}
	}
	for u, a := range per {
		want[fmt.Sprint(types.Row{u, a.n, a.total, a.notes})]++
	}
	if got := applyChangelog(t, changelog.Values()); !maps.Equal(got, want) {
		t.Errorf("changelog ends as %v, want %v", got, want)
	}
	gotBig := map[bigOrder]int{}
	for _, b := range collected.Values() {
		gotBig[b]++
	}
	if !maps.Equal(gotBig, wantBig) || len(wantBig) == 0 {
		t.Errorf("ToDataStream gave %d rows, want %d", len(gotBig), len(wantBig))
	}
}
