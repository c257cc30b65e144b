package jsonl_test

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/connector/format/internal/formattest"
	"github.com/weirproject/weir/connector/format/jsonl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type address struct {
	City string  `json:"city"`
	Zip  *string `json:"zip"`
}

type person struct {
	ID     int64             `json:"id"`
	Name   string            `json:"name"`
	Nick   *string           `json:"nick"`
	Score  *float64          `json:"score,omitempty"`
	Home   address           `json:"home"`
	Work   *address          `json:"work"`
	Tags   []string          `json:"tags"`
	Attrs  map[string]string `json:"attrs"`
	Nested [][]int           `json:"nested"`
}

func ptr[T any](v T) *T { return &v }

func people(n int) []person {
	names := []string{"Zoë Ünal", `say "hi", <b>&`, "多行\n文本", "emoji 🚀\r\n", "\u2028sep", ""}
	out := make([]person, n)
	for i := range out {
		p := person{ID: int64(i), Name: names[i%len(names)] + fmt.Sprint(i), Home: address{City: "東京"}}
		if i%3 != 0 {
			p.Nick = ptr(fmt.Sprintf("n%d", i))
		}
		if i%4 != 0 {
			p.Score = ptr(float64(i) / 3)
		}
		if i%2 == 0 {
			p.Work = &address{City: "Köln"}
			if i%4 == 0 {
				p.Work.Zip = ptr("50667")
			}
		}
		if i%5 != 0 {
			p.Tags = []string{"x", fmt.Sprint(i)}
			p.Attrs = map[string]string{"k": "ü", "n": fmt.Sprint(i)}
			p.Nested = [][]int{{i}, {}, {1, 2}}
		}
		out[i] = p
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	formattest.RoundTrip(t, jsonl.Format[person]{}, people(300), func(p person) int64 { return p.ID })
}

func TestDecode(t *testing.T) {
	in := "\n{\"id\":1,\"name\":\"a\"}\r\n   \n{\"id\":2,\"extra\":true}"
	got, poss, err := formattest.Decode(t, jsonl.Format[person]{}, []byte(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	formattest.Equal(t, "blank lines, CRLF, no final newline", got, []person{{ID: 1, Name: "a"}, {ID: 2}})
	if poss[1] != int64(len(in)) {
		t.Fatalf("positions %v, want the last at %d", poss, len(in))
	}
	cases := []struct {
		f      jsonl.Format[person]
		in     string
		offset string
	}{
		{jsonl.Format[person]{}, "{\"id\":1}\n{\"id\":\"x\"}\n", "line at byte offset 9: json: cannot unmarshal"},
		{jsonl.Format[person]{}, "{\"id\":1}\n{\"id\":2} {\"id\":3}\n", "line at byte offset 9: more than one JSON value"},
		{jsonl.Format[person]{DisallowUnknownFields: true}, "{\"id\":1,\"extra\":1}\n", `line at byte offset 0: json: unknown field "extra"`},
		{jsonl.Format[person]{}, "{\"id\":1\n", "line at byte offset 0: unexpected EOF"},
	}
	for _, c := range cases {
		_, _, err := formattest.Decode(t, c.f, []byte(c.in), 0)
		if err == nil || !strings.Contains(err.Error(), c.offset) {
			t.Errorf("%q: %v, want %q", c.in, err, c.offset)
		}
	}
}
