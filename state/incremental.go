package state

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirproject/weir/codec"
)

// SnapshotFiles is where an incremental snapshot puts the files that
// later checkpoints may share: the checkpoint storage's shared area.
type SnapshotFiles interface {
	// Upload copies a local file into the shared area under name and
	// returns its handle.
	Upload(ctx context.Context, localPath, name string) (handle string, err error)
	// Reuse records that the snapshot references a file an earlier
	// snapshot uploaded. It returns false when the handle is not in this
	// job's shared area (it came with a restored checkpoint of another
	// job), and the file must be uploaded again.
	Reuse(handle string) bool
}

// RestoreFiles fetches the files an incremental snapshot references.
type RestoreFiles interface {
	Download(ctx context.Context, handle, localPath string) error
}

// incrementalMagic starts an incremental snapshot: a manifest of the
// Pebble store's files rather than its entries.
const incrementalMagic = "weir-pebble-incremental-1\n"

// incrementalSpillMagic starts a manifest that lists spill files: a
// version that does not know them must refuse it rather than restore the
// store without them.
const incrementalSpillMagic = "weir-pebble-incremental-2\n"

// checkpointsSuffix names the directory, next to a store, where its local
// checkpoints (hard links) wait for upload.
const checkpointsSuffix = "-checkpoints"

// incrementalSnapshot is the manifest: which states the store holds under
// which IDs, its SST files in the shared area, and its small private
// files (MANIFEST, OPTIONS, ...) inline.
type incrementalSnapshot struct {
	MaxParallelism int
	NextID         uint32
	States         []incrementalStateMeta
	Shared         []sharedFile
	Private        map[string][]byte
	// Spill lists the time maps' spill files (spill.go), shared like
	// the SST files; a restore writes their current records into the
	// store.
	Spill []spillSnapshot `json:",omitempty"`
}

type incrementalStateMeta struct {
	Name string
	ID   uint32
	Kind kind
	// ByTime marks a time map's time-ordered layout.
	ByTime bool `json:",omitempty"`
}

type sharedFile struct {
	File   string // name in the store's directory
	Handle string
	Size   int64
}

// incrementalState is what a store remembers between incremental
// snapshots: the handles of its files already in the shared area. Files
// of an LSM never change once written, so a file uploaded once is never
// uploaded again while it lives.
type incrementalState struct {
	mu       sync.Mutex
	instance string
	handles  map[string]string // file name -> handle
	seq      int
}

// SnapshotAsync takes a snapshot in two parts: the synchronous part, run
// between two records, and the function that completes it off the
// record path. With files and the pebble backend the snapshot is
// incremental: the synchronous part flushes the memtable and hard-links
// the store's files into a local checkpoint, and the asynchronous part
// uploads the files that no earlier snapshot uploaded. Otherwise the
// snapshot is the full, self-contained format of Snapshot. Either way the
// synchronous part first removes the expired entries of TTL states.
func (b *Backend[K]) SnapshotAsync(files SnapshotFiles) (func(context.Context) ([]byte, error), error) {
	if b.p == nil {
		if err := b.dropExpired(); err != nil {
			return nil, err
		}
		finish, err := b.snapshotHeap()
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) ([]byte, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return finish()
		}, nil
	}
	if files == nil {
		data, err := b.Snapshot()
		if err != nil {
			return nil, err
		}
		return func(context.Context) ([]byte, error) { return data, nil }, nil
	}
	if err := b.dropExpired(); err != nil {
		return nil, err
	}
	return b.p.snapshotIncremental(files)
}

// SetRestoreFiles tells Restore where the files of incremental snapshots
// are.
func (b *Backend[K]) SetRestoreFiles(f RestoreFiles) { b.restoreFiles = f }

func (p *pebbleStore[K]) snapshotIncremental(files SnapshotFiles) (func(context.Context) ([]byte, error), error) {
	inc := &p.inc
	inc.mu.Lock()
	if inc.instance == "" {
		var r [8]byte
		_, _ = rand.Read(r[:])
		inc.instance = hex.EncodeToString(r[:])
		if inc.handles == nil {
			inc.handles = make(map[string]string)
		}
	}
	inc.seq++
	local := filepath.Join(p.dir+checkpointsSuffix, fmt.Sprint(inc.seq))
	instance := inc.instance
	inc.mu.Unlock()

	// The spills' files go into the snapshot as they are: only the
	// cache's changes are written back.
	if p.cache != nil {
		if err := p.cache.flushEntries(false); err != nil {
			return nil, err
		}
	}
	if err := p.db.Flush(); err != nil {
		return nil, fmt.Errorf("state: flush pebble store: %w", err)
	}
	localSpill := local + spillSuffix
	var spills []spillSnapshot
	if p.cache != nil {
		for _, sp := range p.cache.spills {
			snap, err := sp.linkSpill(localSpill)
			if err != nil {
				return nil, err
			}
			if len(snap.Files) > 0 {
				spills = append(spills, snap)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if err := p.db.Checkpoint(local); err != nil {
		return nil, fmt.Errorf("state: checkpoint pebble store: %w", err)
	}
	snap := incrementalSnapshot{MaxParallelism: p.maxPar, NextID: p.nextID, Private: make(map[string][]byte)}
	for _, name := range p.sortedMeta() {
		m := p.meta[name]
		snap.States = append(snap.States, incrementalStateMeta{Name: name, ID: m.id, Kind: m.kind, ByTime: m.byTime})
	}
	return func(ctx context.Context) ([]byte, error) {
		defer os.RemoveAll(local)
		defer os.RemoveAll(localSpill)
		entries, err := os.ReadDir(local)
		if err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
		// Files that left the store (compacted away) never come back:
		// forget their handles.
		live := make(map[string]string)
		defer func() {
			inc.mu.Lock()
			for name, h := range live {
				inc.handles[name] = h
			}
			for name := range inc.handles {
				if _, ok := live[name]; !ok {
					delete(inc.handles, name)
				}
			}
			inc.mu.Unlock()
		}()
		// share uploads a file of the store unless an earlier snapshot
		// uploaded it and its handle is still good.
		share := func(path, name string) (string, error) {
			inc.mu.Lock()
			handle, ok := inc.handles[name]
			inc.mu.Unlock()
			if !ok || !files.Reuse(handle) {
				if err := ctx.Err(); err != nil {
					return "", err
				}
				uploaded, err := files.Upload(ctx, path, instance+"-"+name)
				if err != nil {
					return "", fmt.Errorf("state: upload %s: %w", name, err)
				}
				handle = uploaded
			}
			live[name] = handle
			return handle, nil
		}
		for _, e := range entries {
			path := filepath.Join(local, e.Name())
			if !strings.HasSuffix(e.Name(), ".sst") {
				data, err := os.ReadFile(path)
				if err != nil {
					return nil, fmt.Errorf("state: %w", err)
				}
				snap.Private[e.Name()] = data
				continue
			}
			info, err := e.Info()
			if err != nil {
				return nil, fmt.Errorf("state: %w", err)
			}
			handle, err := share(path, e.Name())
			if err != nil {
				return nil, err
			}
			snap.Shared = append(snap.Shared, sharedFile{File: e.Name(), Handle: handle, Size: info.Size()})
		}
		for i := range spills {
			for j := range spills[i].Files {
				f := &spills[i].Files[j]
				if f.Handle, err = share(filepath.Join(localSpill, f.File), f.File); err != nil {
					return nil, err
				}
			}
		}
		snap.Spill = spills
		data, err := json.Marshal(&snap)
		if err != nil {
			return nil, fmt.Errorf("state: encode snapshot manifest: %w", err)
		}
		if len(snap.Spill) > 0 {
			return append([]byte(incrementalSpillMagic), data...), nil
		}
		return append([]byte(incrementalMagic), data...), nil
	}, nil
}

func parseIncremental(data []byte) (*incrementalSnapshot, bool, error) {
	var magic string
	switch {
	case bytes.HasPrefix(data, []byte(incrementalMagic)):
		magic = incrementalMagic
	case bytes.HasPrefix(data, []byte(incrementalSpillMagic)):
		magic = incrementalSpillMagic
	default:
		return nil, false, nil
	}
	var snap incrementalSnapshot
	if err := json.Unmarshal(data[len(magic):], &snap); err != nil {
		return nil, true, fmt.Errorf("state: decode incremental snapshot: %w", err)
	}
	if err := snap.check(); err != nil {
		return nil, true, fmt.Errorf("state: corrupt incremental snapshot: %w", err)
	}
	return &snap, true, nil
}

// check verifies what restoring a manifest relies on: distinct states of
// known kinds with IDs below NextID (adopt numbers new states from
// NextID, which must not reuse a restored state's keys), and file names
// that stay inside the store's directory.
func (s *incrementalSnapshot) check() error {
	if s.MaxParallelism < 0 || s.MaxParallelism > 1<<16 {
		return fmt.Errorf("max parallelism %d out of [0, 65536]", s.MaxParallelism)
	}
	names := make(map[string]bool, len(s.States))
	ids := make(map[uint32]bool, len(s.States))
	for _, st := range s.States {
		switch {
		case st.Kind < kindValue || st.Kind > kindMap:
			return fmt.Errorf("state %q has unknown kind %d", st.Name, st.Kind)
		case names[st.Name]:
			return fmt.Errorf("state %q listed twice", st.Name)
		case ids[st.ID]:
			return fmt.Errorf("state %q reuses ID %d", st.Name, st.ID)
		case st.ID >= s.NextID:
			return fmt.Errorf("state %q has ID %d, not below the next ID %d", st.Name, st.ID, s.NextID)
		}
		names[st.Name], ids[st.ID] = true, true
	}
	files := make(map[string]bool, len(s.Shared)+len(s.Private))
	for _, f := range s.Shared {
		if !storeFileName(f.File) || f.Handle == "" || f.Size < 0 || files[f.File] {
			return fmt.Errorf("bad shared file %q (handle %q, %d bytes)", f.File, f.Handle, f.Size)
		}
		files[f.File] = true
	}
	for name := range s.Private {
		if !storeFileName(name) || files[name] {
			return fmt.Errorf("bad private file %q", name)
		}
		files[name] = true
	}
	for _, sp := range s.Spill {
		if !names[sp.State] {
			return fmt.Errorf("spill of unknown state %q", sp.State)
		}
		for _, f := range sp.Files {
			if !storeFileName(f.File) || f.Handle == "" || f.Size < 0 || f.From < 0 || f.From > f.Size || files[f.File] {
				return fmt.Errorf("bad spill file %q (handle %q, %d bytes from %d)", f.File, f.Handle, f.Size, f.From)
			}
			files[f.File] = true
		}
	}
	return nil
}

// storeFileName reports whether name is a plain file name, as Pebble
// writes them into its directory.
func storeFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

// fetchIncremental rebuilds an incremental snapshot's store in dir.
func fetchIncremental(snap *incrementalSnapshot, files RestoreFiles, dir string) error {
	if files == nil {
		return errors.New("state: an incremental snapshot needs its checkpoint's shared files, and none were given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	for name, data := range snap.Private {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	for _, f := range snap.Shared {
		if err := files.Download(context.Background(), f.Handle, filepath.Join(dir, f.File)); err != nil {
			return fmt.Errorf("state: fetch %s: %w", f.Handle, err)
		}
	}
	if len(snap.Spill) == 0 {
		return nil
	}
	spillDir := dir + spillSuffix
	defer os.RemoveAll(spillDir)
	if err := os.MkdirAll(spillDir, 0o755); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	for _, sp := range snap.Spill {
		for _, f := range sp.Files {
			if err := files.Download(context.Background(), f.Handle, filepath.Join(spillDir, f.File)); err != nil {
				return fmt.Errorf("state: fetch %s: %w", f.Handle, err)
			}
		}
	}
	return applySpills(dir, spillDir, snap.Spill)
}

// restoreIncremental loads an incremental snapshot. An empty Pebble store
// that keeps every key takes the snapshot's files as its own; otherwise
// (rescaling, several pieces, or the heap backend) the snapshot's store is
// opened aside and its entries restored like a full snapshot's.
func (b *Backend[K]) restoreIncremental(snap *incrementalSnapshot, keep func(K) bool) error {
	tmp, err := os.MkdirTemp(b.restoreDir(), "weir-restore-")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := fetchIncremental(snap, b.restoreFiles, tmp); err != nil {
		return err
	}
	if b.p != nil && keep == nil && b.p.empty() {
		return b.p.adopt(tmp, snap)
	}
	aside, err := openAside[K](tmp, snap)
	if err != nil {
		return err
	}
	full, err := aside.snapshot()
	cerr := aside.db.Close()
	if err != nil {
		return fmt.Errorf("state: read restored store: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("state: %w", cerr)
	}
	return b.Restore(full, keep)
}

func (b *Backend[K]) restoreDir() string {
	if b.p != nil {
		return filepath.Dir(b.p.dir)
	}
	return os.TempDir()
}

// openAside opens a restored store read-only, to read its entries.
func openAside[K comparable](dir string, snap *incrementalSnapshot) (*pebbleStore[K], error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, err
	}
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}, Merger: listMerger})
	if err != nil {
		return nil, fmt.Errorf("state: open restored store: %w", err)
	}
	p := &pebbleStore[K]{db: db, dir: dir, kc: kc, maxPar: snap.MaxParallelism, meta: make(map[string]*pMeta)}
	for _, s := range snap.States {
		p.meta[s.Name] = &pMeta{id: s.ID, kind: s.Kind, byTime: s.ByTime}
	}
	return p, nil
}

// empty reports whether nothing was ever written to the store.
func (p *pebbleStore[K]) empty() bool {
	if p.flushCache() != nil {
		return false
	}
	it, err := p.db.NewIter(nil)
	if err != nil {
		return false
	}
	defer it.Close()
	return !it.First()
}

// adopt replaces the store's files with a restored snapshot's, moved from
// dir. States registered before the restore keep their handles: their
// IDs become the snapshot's.
func (p *pebbleStore[K]) adopt(dir string, snap *incrementalSnapshot) error {
	if snap.MaxParallelism != p.maxPar {
		return fmt.Errorf("state: snapshot has %d key groups, the store %d", snap.MaxParallelism, p.maxPar)
	}
	// The cache's keys name the states by their old IDs.
	if err := p.dropCache(); err != nil {
		return err
	}
	if err := p.db.Close(); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(dir, p.dir); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	opts := *p.opts
	db, err := pebble.Open(p.dir, &opts)
	if err != nil {
		return fmt.Errorf("state: open restored store: %w", err)
	}
	p.db = db
	if p.cache != nil {
		// Keys this store never wrote are in it now.
		p.cache.db = db
		p.cache.stored.giveUp()
	}
	p.curValid = false
	next := snap.NextID
	byName := make(map[string]incrementalStateMeta, len(snap.States))
	for _, s := range snap.States {
		byName[s.Name] = s
	}
	// A registered state keeps its layout: one that the snapshot holds in
	// the other moves to it after the adoption.
	wantByTime := make(map[*pMeta]bool)
	for name, m := range p.meta {
		if s, ok := byName[name]; ok {
			if s.Kind != m.kind {
				return fmt.Errorf("state %q: snapshot holds %v state, registered as %v state", name, s.Kind, m.kind)
			}
			wantByTime[m] = m.byTime
			m.id, m.byTime = s.ID, s.ByTime
			continue
		}
		m.id = next
		next++
	}
	for _, s := range snap.States {
		if _, ok := p.meta[s.Name]; !ok {
			p.meta[s.Name] = &pMeta{id: s.ID, kind: s.Kind, byTime: s.ByTime}
		}
	}
	p.nextID = next
	p.rewindTimeMaps()
	for m, byTime := range wantByTime {
		if err := p.layOut(m, byTime); err != nil {
			return err
		}
	}
	// The restored files are in the shared area already: later snapshots
	// reference them instead of uploading them again.
	p.inc.mu.Lock()
	if p.inc.handles == nil {
		p.inc.handles = make(map[string]string)
	}
	for _, f := range snap.Shared {
		p.inc.handles[f.File] = f.Handle
	}
	p.inc.mu.Unlock()
	return nil
}
