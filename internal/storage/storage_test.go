package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/internal/storage"
	"github.com/weirproject/weir/internal/tests3"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// both opens a directory on the local file system and one on an S3
// server: every test runs against both, which must behave alike.
func both(t *testing.T) map[string]*storage.Location {
	t.Helper()
	ctx := context.Background()
	local, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := storage.Open(ctx, tests3.Start(t, "b").URI("dir"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*storage.Location{"file": local, "s3": remote}
}

func TestWalkListsObjectsInKeyOrderAndSkips(t *testing.T) {
	ctx := context.Background()
	names := []string{"b", "a/x", "a/y/z", ".hidden", "a/_tmp/q", "c/.d/e", "a/w"}
	want := []storage.Object{{Name: "a/w", Size: 3}, {Name: "a/x", Size: 3}, {Name: "a/y/z", Size: 5}, {Name: "b", Size: 1}}
	for kind, loc := range both(t) {
		for _, n := range names {
			if err := loc.Write(ctx, n, []byte(path.Base(n)+strings.Repeat("!", len(n)-1))); err != nil {
				t.Fatal(err)
			}
		}
		got, err := loc.Walk(ctx, func(name string) bool {
			b := path.Base(name)
			return strings.HasPrefix(b, ".") || strings.HasPrefix(b, "_")
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Walk = %v, want %v", kind, got, want)
		}
		one, err := loc.Join("a", "y", "z").Walk(ctx, nil)
		if err != nil || !slices.Equal(one, []storage.Object{{Name: ".", Size: 5}}) {
			t.Errorf("%s: Walk of one object = %v, %v", kind, one, err)
		}
		if _, err := loc.Join("missing").Walk(ctx, nil); kind == "file" && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: Walk of a missing directory: %v", kind, err)
		}
	}
}

// TestReaderAtReadsAnyOffset compares ReadAt at sequential and random
// offsets, across the end too, with the bytes written.
func TestReaderAtReadsAnyOffset(t *testing.T) {
	ctx := context.Background()
	data := make([]byte, 300_000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for kind, loc := range both(t) {
		if err := loc.Write(ctx, "obj", data); err != nil {
			t.Fatal(err)
		}
		ra, err := loc.NewReaderAt(ctx, "obj")
		if err != nil {
			t.Fatal(err)
		}
		var seq bytes.Buffer
		if _, err := io.Copy(&seq, io.NewSectionReader(ra, 0, ra.Size())); err != nil || !bytes.Equal(seq.Bytes(), data) {
			t.Fatalf("%s: sequential read differs (%v)", kind, err)
		}
		for range 50 {
			off := r.Int64N(int64(len(data)) + 10)
			buf := make([]byte, r.IntN(5000))
			n, err := ra.ReadAt(buf, off)
			end := min(off+int64(len(buf)), int64(len(data)))
			if off >= int64(len(data)) {
				end = off
			}
			if n != int(end-off) || (n < len(buf)) != (err == io.EOF) || !bytes.Equal(buf[:n], data[off:end]) {
				t.Fatalf("%s: ReadAt(%d bytes, %d) = %d, %v", kind, len(buf), off, n, err)
			}
		}
		ra.Close()
		if _, err := loc.NewReaderAt(ctx, "nothing"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: opening a missing object: %v, want os.ErrNotExist", kind, err)
		}
	}
}

func TestCopyAndCreate(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range both(t) {
		if err := loc.Write(ctx, "x/.staged", []byte("part")); err != nil {
			t.Fatal(err)
		}
		if err := loc.Copy(ctx, "x/final", "x/.staged"); err != nil {
			t.Fatal(err)
		}
		if b, err := loc.Read(ctx, "x/final"); err != nil || string(b) != "part" {
			t.Errorf("%s: copy holds %q, %v", kind, b, err)
		}
		if err := loc.Copy(ctx, "y", "missing"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: copy of a missing object: %v", kind, err)
		}
		first, err1 := loc.Create(ctx, "claim", []byte("1"))
		second, err2 := loc.Create(ctx, "claim", []byte("2"))
		if !first || second || err1 != nil || err2 != nil {
			t.Errorf("%s: Create twice = %v, %v (%v, %v)", kind, first, second, err1, err2)
		}
	}
}
