package catalog

import (
	"reflect"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
)

// TestSnapshotRoundTrip: a snapshot carries temporary and permanent
// objects of every database and the current catalog and database.
func TestSnapshotRoundTrip(t *testing.T) {
	c := New()
	if err := c.CreateDatabase("", "sales", "the sales", false); err != nil {
		t.Fatal(err)
	}
	if err := c.UseDatabase([]string{"sales"}); err != nil {
		t.Fatal(err)
	}
	_, db := c.Current()
	tbl := &Table{
		Path:        ObjectPath{Catalog: DefaultCatalog, Database: db, Name: "orders"},
		Columns:     []Column{{Name: "id", Type: types.BigInt().NotNull()}, {Name: "amount", Type: types.DecimalType(12, 2)}, {Name: "region", Type: types.String()}},
		PartitionBy: []string{"region"},
		Options:     map[string]string{"connector": "filesystem", "path": "/x", "format": "parquet"},
		Temporary:   true,
	}
	if err := c.CreateTable(tbl, false, false); err != nil {
		t.Fatal(err)
	}
	view := &View{Path: ObjectPath{Catalog: DefaultCatalog, Database: DefaultDatabase, Name: "v"}, Query: "SELECT 1"}
	if err := c.CreateView(view, false); err != nil {
		t.Fatal(err)
	}
	data, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := FromSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if cat, db := r.Current(); cat != DefaultCatalog || db != "sales" {
		t.Fatalf("current %s.%s, want %s.sales", cat, db, DefaultCatalog)
	}
	got, err := r.Table(tbl.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := *tbl
	want.Temporary = false // a worker's catalog is not saved anywhere
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("table %+v, want %+v", *got, want)
	}
	if v, err := r.View(view.Path); err != nil || v.Query != "SELECT 1" {
		t.Fatalf("view: %+v, %v", v, err)
	}
	if _, err := FromSnapshot([]byte("{")); err == nil {
		t.Fatal("a broken snapshot decoded")
	}
}
