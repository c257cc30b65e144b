// Package formattest checks file formats the same way: records written
// and read back directly, from every position a decoder reports, and
// through jobs with the part-file sink and the format source.
package formattest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
)

// Format is a format that both writes and reads.
type Format[T any] interface {
	file.Encoding[T]
	file.Decoding[T]
}

// Encode writes records into one file's bytes.
func Encode[T any](t testing.TB, f Format[T], records []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := f.NewEncoder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Decode reads a file's bytes from pos, returning the records and the
// position after each.
func Decode[T any](t testing.TB, f Format[T], data []byte, pos int64) ([]T, []int64, error) {
	t.Helper()
	dec, err := f.NewDecoder(file.Input{R: bytes.NewReader(data), Size: int64(len(data)), Path: "test"}, pos)
	if err != nil {
		return nil, nil, err
	}
	defer dec.Close()
	var out []T
	var poss []int64
	for {
		v, err := dec.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, poss, nil
			}
			return out, poss, err
		}
		out = append(out, v)
		poss = append(poss, dec.Pos())
	}
}

// Equal fails the test unless got and want are deeply equal.
func Equal[T any](t testing.TB, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s: record %d is\n%+v\nwant\n%+v", what, i, got[i], want[i])
		}
	}
}

// RoundTrip checks that f reads back exactly what it wrote: in one file,
// from every position its decoder reported, and through a job that writes
// part files with rolling at parallelism 2 and a job that reads them back
// with the format source. key orders records, which the parallel jobs
// shuffle.
func RoundTrip[T any](t *testing.T, f Format[T], records []T, key func(T) int64) {
	data := Encode(t, f, records)
	got, poss, err := Decode(t, f, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	Equal(t, "read back", got, records)
	for _, k := range []int{0, 1, len(poss) / 3, len(poss) / 2, len(poss) - 1} {
		rest, _, err := Decode(t, f, data, poss[k])
		if err != nil {
			t.Fatalf("resume after record %d at %d: %v", k, poss[k], err)
		}
		Equal(t, "resumed", rest, records[k+1:])
	}

	sorted := slices.Clone(records)
	byKey := func(a, b T) int { return cmp.Compare(key(a), key(b)) }
	slices.SortFunc(sorted, byKey)

	dir := t.TempDir()
	cfg := config.New()
	config.Parallelism.Set(cfg, 2)
	env := stream.NewEnvironmentWithConfig(cfg)
	stream.SinkTo(stream.FromSlice(env, records), file.Sink[T](dir, f).RollOnSize(2048), "files")
	if err := env.Execute(context.Background(), "write"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 3 {
		t.Fatalf("the sink wrote %d files, want several: rolling on size did not happen", len(entries))
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "part-") || filepath.Ext(e.Name()) != f.Extension() {
			t.Fatalf("file %s in the output", e.Name())
		}
	}
	all, err := file.ReadAll[T](f, dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, byKey)
	Equal(t, "part files", all, sorted)

	env = stream.NewEnvironmentWithConfig(cfg)
	c := stream.Collect(stream.FromSource[T](env, file.Source[T](f, dir), "read"))
	if err := env.Execute(context.Background(), "read"); err != nil {
		t.Fatal(err)
	}
	all = c.Values()
	slices.SortFunc(all, byKey)
	Equal(t, "format source", all, sorted)
}
