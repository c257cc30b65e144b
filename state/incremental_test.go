package state

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirFiles is a shared area in a local directory that counts uploads.
type dirFiles struct {
	dir     string
	job     string
	uploads []string
	reused  []string
}

func (f *dirFiles) Upload(_ context.Context, localPath, name string) (string, error) {
	handle := f.job + "/" + name
	if err := copyFile(localPath, filepath.Join(f.dir, handle)); err != nil {
		return "", err
	}
	f.uploads = append(f.uploads, handle)
	return handle, nil
}

func (f *dirFiles) bytes(handles []string) int64 {
	var n int64
	for _, h := range handles {
		if fi, err := os.Stat(filepath.Join(f.dir, h)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func (f *dirFiles) Reuse(handle string) bool {
	if !strings.HasPrefix(handle, f.job+"/") {
		return false
	}
	f.reused = append(f.reused, handle)
	return true
}

func (f *dirFiles) Download(_ context.Context, handle, localPath string) error {
	return copyFile(filepath.Join(f.dir, handle), localPath)
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func snapshotInc(t *testing.T, b *Backend[string], files SnapshotFiles) []byte {
	t.Helper()
	finish, err := b.SnapshotAsync(files)
	if err != nil {
		t.Fatal(err)
	}
	data, err := finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestIncrementalSnapshots checks that a Pebble store's checkpoints upload
// only files that no earlier one uploaded, and that every kind of restore
// of such a snapshot (adopting the files, rescaling, into the heap) gives
// the state back.
func TestIncrementalSnapshots(t *testing.T) {
	keys := testKeys(300)
	rng := rand.New(rand.NewPCG(5, 6))
	peb := register(newPebble(t))
	ref := register(NewBackend[string]())
	files := &dirFiles{dir: t.TempDir(), job: "job-a"}

	// A store of a few MiB, so that it has files in the lower levels of
	// the LSM that small changes leave alone.
	for i := range 15000 {
		k := fmt.Sprintf("bulk-%d", i)
		v := []string{fmt.Sprintf("%016x%016x%0368d", rng.Uint64(), rng.Uint64(), i)}
		for _, h := range []*handles{peb, ref} {
			h.b.SetCurrentKey(k)
			h.lst.Update(v)
		}
	}
	for range 5000 {
		step(t, rng, keys, peb, ref)
	}
	first := snapshotInc(t, peb.b, files)
	if !strings.HasPrefix(string(first), incrementalMagic) {
		t.Fatalf("snapshot with files is not incremental: %.40q", first)
	}
	if len(files.uploads) == 0 {
		t.Fatal("first incremental snapshot uploaded nothing")
	}
	// Snapshots after a few changes upload the new files and reuse the
	// others. Background compactions may rewrite files between two
	// snapshots, so some rounds upload more; one in a few must be small.
	var second []byte
	small := false
	for round := 0; round < 8 && !small; round++ {
		for range 50 {
			step(t, rng, keys, peb, ref)
		}
		n, r := len(files.uploads), len(files.reused)
		second = snapshotInc(t, peb.b, files)
		total, fresh := files.bytes(files.uploads[:n]), files.bytes(files.uploads[n:])
		if n == len(files.uploads) {
			t.Fatal("a snapshot after changes uploaded no file")
		}
		t.Logf("round %d: uploaded %d files, %d bytes; reused %d files", round, len(files.uploads)-n, fresh, len(files.reused)-r)
		small = len(files.reused) > r && fresh*10 < total
	}
	if !small {
		t.Fatal("no snapshot after a small change was incremental: each uploaded a large part of the store again")
	}
	// Without changes, nothing new is uploaded. The store is compacted
	// first, as a long-running store is, so that reopening it below does
	// not compact the small files of level 0 into new ones.
	if err := peb.b.p.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	snapshotInc(t, peb.b, files)
	before := len(files.uploads)
	third := snapshotInc(t, peb.b, files)
	if len(files.uploads) != before {
		t.Fatalf("snapshot without changes uploaded %d files", len(files.uploads)-before)
	}

	// Restore into an empty Pebble backend: it adopts the files, and its
	// own next snapshot reuses them.
	adopted := newPebble(t)
	Value[int](adopted, "val", -1) // registered before the restore
	adopted.SetRestoreFiles(files)
	if err := adopted.RestoreAll(third); err != nil {
		t.Fatal(err)
	}
	ah := register(adopted)
	compareAll(t, keys, ref, ah)
	before, reused := len(files.uploads), len(files.reused)
	snapshotInc(t, adopted, files)
	if len(files.reused) == reused {
		t.Fatalf("a restored store reused none of the files it got from the shared area (uploaded %d)", len(files.uploads)-before)
	}
	// A job with another ID must not count on the first job's files.
	other := &dirFiles{dir: files.dir, job: "job-b"}
	snapshotInc(t, adopted, other)
	if len(other.uploads) == 0 || len(other.reused) != 0 {
		t.Fatalf("another job's snapshot uploaded %d and reused %d files; want its own copies", len(other.uploads), len(other.reused))
	}
	// Restored state keeps evolving like the reference.
	for range 2000 {
		step(t, rng, keys, ref, ah)
	}
	compareAll(t, keys, ref, ah)

	// The older snapshots restore too: into the heap, and rescaled.
	for i, snap := range [][]byte{first, second} {
		heap := NewBackend[string]()
		heap.SetRestoreFiles(files)
		if err := heap.RestoreAll(snap); err != nil {
			t.Fatalf("snapshot %d into heap: %v", i, err)
		}
		p := newPebble(t)
		p.SetRestoreFiles(files)
		half := func(k string) bool { return testKeyGroup(k) < testMaxPar/2 }
		if err := p.Restore(snap, half); err != nil {
			t.Fatalf("snapshot %d rescaled: %v", i, err)
		}
		hh, ph := register(heap), register(p)
		empty := register(NewBackend[string]())
		for _, k := range keys {
			want := hh.dump(k)
			if !half(k) {
				want = empty.dump(k)
			}
			if got := ph.dump(k); got != want {
				t.Fatalf("snapshot %d key %s: rescaled restore has %s, want %s", i, k, got, want)
			}
		}
	}

	// Without files the snapshot is the full format.
	full := snapshotInc(t, peb.b, nil)
	if strings.HasPrefix(string(full), incrementalMagic) {
		t.Fatal("snapshot without files is incremental")
	}
	restoredFull := register(newPebble(t))
	if err := restoredFull.b.RestoreAll(full); err != nil {
		t.Fatal(err)
	}
	compareAll(t, keys, peb, restoredFull)
}

func TestIncrementalRestoreWithoutFiles(t *testing.T) {
	peb := register(newPebble(t))
	peb.b.SetCurrentKey("k")
	peb.val.Update(1)
	files := &dirFiles{dir: t.TempDir(), job: "j"}
	snap := snapshotInc(t, peb.b, files)
	err := newPebble(t).RestoreAll(snap)
	if err == nil || !strings.Contains(err.Error(), "shared files") {
		t.Fatalf("restore without files: got %v", err)
	}
	// A missing shared file is named.
	os.RemoveAll(filepath.Join(files.dir, "j"))
	b := newPebble(t)
	b.SetRestoreFiles(files)
	err = b.RestoreAll(snap)
	if err == nil || !strings.Contains(err.Error(), "fetch j/") {
		t.Fatalf("restore with a missing file: got %v", err)
	}
}
