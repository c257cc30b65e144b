package file

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirproject/weir/connector"
)

// FuzzDecodeSplits feeds arbitrary bytes to the decoding of the splits a
// checkpoint stores. Decoded splits must be usable (a reader accepts
// them) and encode back to the same splits.
func FuzzDecodeSplits(f *testing.F) {
	src := Lines("in")
	seed, err := src.EncodeSplits([]connector.Split{
		&FileSplit{Path: "/data/a.txt", Start: 0, End: 1 << 20, Offset: 4096},
		&FileSplit{Path: "b", Start: 10, End: 10, Offset: 10},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`[null]`))
	f.Add([]byte(`[{"Path":"x","Start":-1,"End":-5}]`))

	f.Fuzz(func(t *testing.T, data []byte) {
		splits, err := src.DecodeSplits(data)
		if err != nil {
			return
		}
		for _, s := range splits {
			_ = s.SplitID()
		}
		r := &lineReader{}
		if err := r.AddSplits(splits); err != nil {
			t.Fatalf("reader rejects decoded splits: %v", err)
		}
		enc, err := src.EncodeSplits(splits)
		if err != nil {
			t.Fatal(err)
		}
		again, err := src.DecodeSplits(enc)
		if err != nil || !reflect.DeepEqual(again, splits) {
			t.Fatalf("round trip: %v -> %s -> %v %v", splits, enc, again, err)
		}
	})
}

// FuzzLineSplits reads arbitrary file content cut into byte ranges of a
// fuzzed size, each range by a reader of its own, and checks that the
// lines come out exactly once and whole, as one sequential read gives them.
// Half-way through each split the reader's snapshot is restored into a
// new reader, as a checkpoint would.
func FuzzLineSplits(f *testing.F) {
	f.Add([]byte("one\ntwo\r\nthree"), uint16(4))
	f.Add([]byte("\n\n\r\n\r"), uint16(1))
	f.Add([]byte("a very long line without any end"), uint16(7))
	f.Fuzz(func(t *testing.T, content []byte, size uint16) {
		path := filepath.Join(t.TempDir(), "in.txt")
		writeFile(t, path, string(content))
		src := Lines(path).SplitSize(int64(size%1024) + 1)
		var got []string
		for _, s := range splitsOf(t, src, 1) {
			r := newReader(t, src, []connector.Split{s})
			var c collector
			st, err := r.Poll(t.Context(), &c)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, c.take()...)
			if st != connector.EndOfInput {
				snap, err := r.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				r.Close()
				r = newReader(t, src, snap)
				got = append(got, drain(t, r)...)
			}
			r.Close()
		}
		checkLines(t, got, wantLines(string(content)), fmt.Sprintf("%q in splits of %d", content, size%1024+1))
	})
}

// FuzzDecodeTransaction feeds arbitrary bytes to the decoding of a text
// sink's committable, whose files Commit renames.
func FuzzDecodeTransaction(f *testing.F) {
	seed, _ := json.Marshal([]pendingFile{{Pending: "/out/.part-0-0-1-ab.pending", Final: "/out/part-0-0-1-ab"}})
	f.Add(seed)
	f.Add([]byte(`[{"Pending":"/etc/passwd","Final":"/tmp/x"}]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := decodeTransaction(data)
		if err != nil {
			return
		}
		for _, p := range files {
			if filepath.Dir(p.Pending) != filepath.Dir(p.Final) || "."+filepath.Base(p.Final)+".pending" != filepath.Base(p.Pending) {
				t.Fatalf("accepted %+v", p)
			}
		}
		enc, _ := json.Marshal(files)
		again, err := decodeTransaction(enc)
		if err != nil || len(again) != len(files) {
			t.Fatalf("round trip: %+v -> %s -> %+v %v", files, enc, again, err)
		}
	})
}
