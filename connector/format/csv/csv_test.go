package csv_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/connector/format/csv"
	"github.com/weirproject/weir/connector/format/internal/formattest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type address struct {
	City string  `csv:"city"`
	Zip  *string `csv:"zip"`
}

type person struct {
	ID      int64     `csv:"id"`
	Name    string    `csv:"name"`
	Nick    *string   `csv:"nick"`
	Score   *float64  `csv:"score"`
	Active  bool      `csv:"active"`
	Born    time.Time `csv:"born"`
	Home    address   `csv:"home"`
	Work    *address  `csv:"work"`
	Tags    []string  `csv:"tags"`
	Raw     []byte    `csv:"raw"`
	Skipped string    `csv:"-"`
	private int
}

func ptr[T any](v T) *T { return &v }

// people draws records dense in what CSV makes hard: separators, quotes
// and line breaks inside fields, non-ASCII text, and nulls at every level.
func people(n int) []person {
	names := []string{"Zoë Ünal", `say "hi", then leave`, "多行\n文本", "emoji 🚀,\ttab\rCR", "plain", " spaced "}
	out := make([]person, n)
	for i := range out {
		p := person{
			ID:     int64(i),
			Name:   names[i%len(names)] + fmt.Sprint(i),
			Active: i%2 == 0,
			Born:   time.Date(1990+i%30, time.Month(1+i%12), 1+i%28, i%24, i%60, 0, i*1000, time.UTC),
			Home:   address{City: []string{"München", "東京", "São Paulo"}[i%3]},
		}
		if i%3 != 0 {
			p.Nick = ptr(fmt.Sprintf("nick,%d", i))
		}
		if i%4 != 0 {
			p.Score = ptr(float64(i) / 7)
		}
		if i%5 != 0 {
			p.Home.Zip = ptr(fmt.Sprintf("%05d", i))
		}
		if i%3 == 1 {
			p.Work = &address{City: "Köln"}
			if i%2 == 0 {
				p.Work.Zip = ptr("50667")
			}
		}
		if i%2 == 1 {
			p.Tags = []string{"a", fmt.Sprint(i), `q"uote`}
		}
		if i%3 == 2 {
			p.Raw = []byte{0, byte(i), 255, '\n'}
		}
		out[i] = p
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	records := people(300)
	t.Run("default", func(t *testing.T) {
		formattest.RoundTrip(t, csv.Format[person]{}, records, func(p person) int64 { return p.ID })
	})
	t.Run("null literal, semicolons, no header", func(t *testing.T) {
		f := csv.Format[person]{NullLiteral: `\N`, Comma: ';', NoHeader: true}
		formattest.RoundTrip(t, f, records, func(p person) int64 { return p.ID })
	})
	t.Run("string slices", func(t *testing.T) {
		var rows [][]string
		for i := range 200 {
			rows = append(rows, []string{fmt.Sprint(i), "Grüße, \"x\"\n" + fmt.Sprint(i), ""})
		}
		f := csv.Format[[]string]{Header: []string{"id", "text", "empty"}}
		formattest.RoundTrip(t, f, rows, func(r []string) int64 {
			var n int64
			fmt.Sscan(r[0], &n)
			return n
		})
	})
}

func TestHeaderAndNulls(t *testing.T) {
	data := formattest.Encode(t, csv.Format[person]{}, people(2))
	header, _, _ := strings.Cut(string(data), "\n")
	if want := "id,name,nick,score,active,born,home.city,home.zip,work.city,work.zip,tags,raw"; header != want {
		t.Fatalf("header %q, want %q", header, want)
	}
	// Columns matched by name, in another order, with an extra one; the
	// columns the file lacks stay zero.
	in := "extra,name,id,work.city,score\nx,Ann,7,Bonn,\ny,Bob,8,,2.5\n"
	got, _, err := formattest.Decode(t, csv.Format[person]{}, []byte(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []person{
		{ID: 7, Name: "Ann", Work: &address{City: "Bonn"}},
		{ID: 8, Name: "Bob", Score: ptr(2.5)},
	}
	formattest.Equal(t, "by name", got, want)
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"id,name\n1,a\nx,b\n", `record at byte offset 12, column "id": "x" is not an integer of 64 bits`},
		{"id,name\n1,a\n2\n", "record at byte offset 12: wrong number of fields"},
		{"id,active\n1,maybe\n", `record at byte offset 10, column "active": "maybe" is not a boolean`},
		{"id,name\n1,\"open\n", "record at byte offset 8: extraneous or missing \" in quoted-field"},
		{"id,id\n", `header row names column "id" twice`},
		{"", "the file has no header row"},
	}
	for _, c := range cases {
		_, _, err := formattest.Decode(t, csv.Format[person]{}, []byte(c.in), 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	type bad struct{ C chan int }
	if _, err := (csv.Format[bad]{}).NewEncoder(nil); err == nil || !strings.Contains(err.Error(), "field C of type chan int is not supported") {
		t.Errorf("unsupported field: %v", err)
	}
	if _, err := (csv.Format[int]{}).NewEncoder(nil); err == nil || !strings.Contains(err.Error(), "not a struct or []string") {
		t.Errorf("non-struct: %v", err)
	}
}
