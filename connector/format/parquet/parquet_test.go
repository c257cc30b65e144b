package parquet_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"go.uber.org/goleak"

	"github.com/weirproject/weir/connector/format/internal/formattest"
	"github.com/weirproject/weir/connector/format/parquet"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type address struct {
	City string  `parquet:"city"`
	Zip  *string `parquet:"zip"`
}

type person struct {
	ID    int64             `parquet:"id"`
	Name  string            `parquet:"name"`
	Nick  *string           `parquet:"nick"`
	Score *float64          `parquet:"score"`
	OK    bool              `parquet:"ok"`
	Home  address           `parquet:"home"`
	Work  *address          `parquet:"work"`
	Tags  []string          `parquet:"tags"`
	Attrs map[string]string `parquet:"attrs"`
}

func ptr[T any](v T) *T { return &v }

func people(n int) []person {
	names := []string{"Zoë Ünal", "多行\n文本", "emoji 🚀", "plain"}
	out := make([]person, n)
	for i := range out {
		p := person{ID: int64(i), Name: names[i%len(names)] + fmt.Sprint(i), OK: i%2 == 0, Home: address{City: "São Paulo"}}
		if i%3 != 0 {
			p.Nick = ptr(fmt.Sprintf("n%d", i))
		}
		if i%4 != 0 {
			p.Score = ptr(float64(i) / 3)
		}
		if i%2 == 0 {
			p.Work = &address{City: "東京"}
			if i%4 == 0 {
				p.Work.Zip = ptr("100-0001")
			}
		}
		// Parquet has no null for a repeated field or a map: nil reads
		// back as empty.
		p.Tags, p.Attrs = []string{}, map[string]string{}
		if i%5 != 0 {
			p.Tags = []string{"x", fmt.Sprint(i)}
			p.Attrs = map[string]string{"k": "ü", "n": fmt.Sprint(i)}
		}
		out[i] = p
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	formattest.RoundTrip(t, parquet.Format[person]{}, people(500), func(p person) int64 { return p.ID })
	snappy := parquet.Format[person]{WriterOptions: []pq.WriterOption{pq.Compression(&pq.Snappy), pq.MaxRowsPerRowGroup(64)}}
	formattest.RoundTrip(t, snappy, people(500), func(p person) int64 { return p.ID })
}

// TestReadByAnotherReader: the files are Parquet that parquet-go's plain
// reader, untyped, understands: the columns and nulls are where a reader
// that knows nothing of the record type expects them.
func TestReadByAnotherReader(t *testing.T) {
	records := people(10)
	data := formattest.Encode(t, parquet.Format[person]{}, records)
	f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != int64(len(records)) {
		t.Fatalf("%d rows, want %d", f.NumRows(), len(records))
	}
	var cols []string
	for _, c := range f.Schema().Columns() {
		cols = append(cols, strings.Join(c, "."))
	}
	want := "id name nick score ok home.city home.zip work.city work.zip tags attrs.key_value.key attrs.key_value.value"
	if strings.Join(cols, " ") != want {
		t.Fatalf("columns %v, want %s", cols, want)
	}
	// Untyped rows: the values of each row by column index.
	r := pq.NewReader(f)
	defer r.Close()
	rows := make([]pq.Row, len(records))
	if n, err := r.ReadRows(rows); n != len(records) {
		t.Fatalf("read %d rows: %v", n, err)
	}
	col := func(row pq.Row, c int) pq.Value {
		for _, v := range row {
			if v.Column() == c {
				return v
			}
		}
		t.Fatalf("row has no column %d", c)
		return pq.Value{}
	}
	const name, nick = 1, 2
	if !col(rows[0], nick).IsNull() || col(rows[1], nick).String() != "n1" || col(rows[2], name).String() != "emoji 🚀2" {
		t.Fatalf("untyped rows: %v", rows[:3])
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, _, err := formattest.Decode(t, parquet.Format[person]{}, []byte("not parquet at all"), 0); err == nil || !strings.HasPrefix(err.Error(), "parquet: ") {
		t.Fatalf("garbage: %v", err)
	}
	data := formattest.Encode(t, parquet.Format[person]{}, people(3))
	if _, _, err := formattest.Decode(t, parquet.Format[person]{}, data, 4); err == nil || !strings.Contains(err.Error(), "row 4 outside the file's 3 rows") {
		t.Fatalf("position past the end: %v", err)
	}
}
