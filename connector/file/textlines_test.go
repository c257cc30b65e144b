package file

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestTextLinesResumesAtEveryPosition(t *testing.T) {
	text := "alpha\r\nbeta\n\nγάμμα\nlast without newline"
	want := []string{"alpha", "beta", "", "γάμμα", "last without newline"}
	in := Input{R: strings.NewReader(text), Size: int64(len(text)), Path: "t.txt"}
	read := func(pos int64) ([]string, []int64) {
		d, err := TextLines{}.NewDecoder(in, pos)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		var ends []int64
		for {
			l, err := d.Next()
			if err == io.EOF {
				return lines, ends
			}
			if err != nil {
				t.Fatal(err)
			}
			lines, ends = append(lines, l), append(ends, d.Pos())
		}
	}
	got, ends := read(0)
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	for i, end := range ends {
		rest, _ := read(end)
		if !slices.Equal(rest, want[i+1:]) {
			t.Errorf("resumed after line %d (pos %d): %q, want %q", i, end, rest, want[i+1:])
		}
	}
	if _, err := (TextLines{}).NewDecoder(in, in.Size+1); err == nil {
		t.Error("a position past the end was accepted")
	}
}
