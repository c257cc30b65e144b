package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// memFiles is a shared area in memory, for incremental snapshots.
type memFiles struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (f *memFiles) Upload(_ context.Context, localPath, name string) (string, error) {
	data, err := os.ReadFile(localPath)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[name] = data
	return name, nil
}

func (f *memFiles) Reuse(string) bool { return false }

func (f *memFiles) Download(_ context.Context, handle, localPath string) error {
	f.mu.Lock()
	data, ok := f.files[handle]
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("no shared file %q", handle)
	}
	return os.WriteFile(localPath, data, 0o644)
}

// fuzzStates registers one state of each kind; the fuzzer's snapshots use
// these names, so that a restore decodes their entries at once.
func fuzzStates(b *Backend[string]) {
	Value[int64](b, "v", 0)
	List[string](b, "l")
	Map[string, int64](b, "m")
}

// canonical parses a snapshot and sorts the entries of each state: the
// heap writes keys in map order.
func canonical(t *testing.T, data []byte) []snapState {
	t.Helper()
	states, err := parseSnapshot(data)
	if err != nil {
		t.Fatalf("parse own snapshot: %v", err)
	}
	for _, st := range states {
		slices.SortFunc(st.entries, func(a, b rawKV) int {
			return cmpBytes(a.k, b.k, a.v, b.v)
		})
	}
	return states
}

func cmpBytes(a1, b1, a2, b2 []byte) int {
	if c := bytes.Compare(a1, b1); c != 0 {
		return c
	}
	return bytes.Compare(a2, b2)
}

// FuzzRestore feeds arbitrary bytes to Backend.Restore as a checkpoint
// gives them: the full snapshot format of both backends and the manifest
// of an incremental Pebble snapshot. The heap must restore or fail, and a
// restored heap must snapshot to what it restores again; a snapshot that
// parses must also restore into Pebble or fail, without panicking.
func FuzzRestore(f *testing.F) {
	files := &memFiles{files: make(map[string][]byte)}
	heap := NewBackend[string]()
	fuzzStates(heap)
	pb, err := NewPebbleBackend[string](f.TempDir(), testMaxPar, testKeyGroup)
	if err != nil {
		f.Fatal(err)
	}
	fuzzStates(pb)
	for _, b := range []*Backend[string]{heap, pb} {
		for i, k := range []string{"a", "b", "", "\xff"} {
			b.SetCurrentKey(k)
			Value[int64](b, "v", 0).Update(int64(i) - 2)
			l := List[string](b, "l")
			for range i {
				l.Add(k + "!")
			}
			Map[string, int64](b, "m").Put(k, int64(i)<<40)
		}
	}
	for _, b := range []*Backend[string]{heap, pb} {
		data, err := b.Snapshot()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	finish, err := pb.SnapshotAsync(files)
	if err != nil {
		f.Fatal(err)
	}
	inc, err := finish(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(inc)
	if err := pb.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(snapshotMagic + "\x01\x01v\x01\x01\x01a\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"))
	f.Add([]byte(incrementalMagic + `{"MaxParallelism":128,"NextID":1,"States":[{"Name":"v","ID":5,"Kind":1}],"Private":{"../x":""}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		b := NewBackend[string]()
		b.SetRestoreFiles(files)
		fuzzStates(b)
		if err := b.RestoreAll(data); err != nil {
			return
		}
		snap, err := b.Snapshot()
		if err != nil {
			t.Fatalf("snapshot of a restored backend: %v", err)
		}
		// Entries decoded and encoded again: a second restore reproduces
		// them.
		b2 := NewBackend[string]()
		fuzzStates(b2)
		if err := b2.RestoreAll(snap); err != nil {
			t.Fatalf("restore own snapshot: %v", err)
		}
		snap2, err := b2.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if c1, c2 := canonical(t, snap), canonical(t, snap2); !reflect.DeepEqual(c1, c2) {
			t.Fatalf("snapshot not stable:\n%q\n%q", snap, snap2)
		}

		// The same bytes into Pebble, which writes entries into the store
		// undecoded.
		p, err := NewPebbleBackend[string](t.TempDir(), testMaxPar, testKeyGroup)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		p.SetRestoreFiles(files)
		fuzzStates(p)
		if err := p.RestoreAll(data); err != nil {
			if errors.Is(err, errSnapshot) {
				t.Fatalf("the heap restored what Pebble finds corrupt: %v", err)
			}
			return
		}
		psnap, err := p.Snapshot()
		if err != nil {
			t.Fatalf("snapshot of a restored Pebble backend: %v", err)
		}
		if _, err := parseSnapshot(psnap); err != nil {
			t.Fatalf("parse Pebble's snapshot: %v", err)
		}
	})
}

// TestIncrementalManifestChecks: manifests that adopt would turn into a
// store with two states on one ID, or files outside the store, fail.
func TestIncrementalManifestChecks(t *testing.T) {
	for _, m := range []string{
		`{"NextID":1,"States":[{"Name":"a","ID":0,"Kind":1},{"Name":"b","ID":0,"Kind":1}]}`,
		`{"NextID":1,"States":[{"Name":"a","ID":3,"Kind":1}]}`,
		`{"NextID":1,"States":[{"Name":"a","ID":0,"Kind":9}]}`,
		`{"Private":{"../OPTIONS":""}}`,
		`{"Shared":[{"File":"a/b.sst","Handle":"h"}]}`,
		`{"MaxParallelism":-1}`,
	} {
		if _, ok, err := parseIncremental([]byte(incrementalMagic + m)); !ok || err == nil {
			t.Errorf("%s: ok=%v err=%v", m, ok, err)
		}
	}
}
