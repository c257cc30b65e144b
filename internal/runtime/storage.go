package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirproject/weir/internal/checksum"
	"github.com/weirproject/weir/internal/storage"
	"github.com/weirproject/weir/state"
)

// checkpointFormat is the format of the checkpoints and savepoints this
// version writes, recorded in their _metadata:
//
//	0  (no Format field) before checksums: every file as it is.
//	1  every file the checkpoint writes — _metadata, operator state
//	   files, and the shared and private files of incremental snapshots
//	   (SSTs, spill files, reduce segments) — is framed by
//	   internal/checksum: its data, then per-block CRC32C sums and a
//	   self-checked footer; _metadata records each operator state file's
//	   length and CRC32C as well.
//
// The format comes from a _metadata that verified, never from a file's
// own looks: a state file of a format-1 checkpoint without a valid
// trailer is corrupt, not a file of an older version.
const checkpointFormat = 1

// writeFormat is the format new checkpoints get. WEIR_BENCH_NO_CHECKSUMS
// exists for bench/checksums alone, to measure what checksums cost: it
// writes format 0, which restores unchecked. Never set it otherwise.
var writeFormat = func() int {
	if os.Getenv("WEIR_BENCH_NO_CHECKSUMS") != "" {
		return 0
	}
	return checkpointFormat
}()

// checkpointStorage keeps completed checkpoints: in memory, and in a
// directory (a path or a URI) when state.checkpoints.dir is set. The
// layout is <dir>/<job-id>/chk-<n>/_metadata with the state files of the
// checkpoint next to it, and <dir>/<job-id>/shared/ for the files of
// incremental snapshots, which several checkpoints may reference.
//
// On a cluster every attempt of a job writes into the same <job-id>
// directory. Its coordinator claims chk-<n> before checkpoint n starts
// (claim), so that an attempt never writes into a checkpoint directory of
// another, not even of a zombie still running; and each attempt uploads
// its shared files under shared/attempt-<k>/ and reuses only those, so
// that no attempt deletes a file that a checkpoint of another references.
type checkpointStorage struct {
	root  *storage.Location // nil: the jobmanager storage, in memory only
	jobID string
	// shared is the key prefix, relative to root, of this storage's
	// shared files: <job-id>/shared, or <job-id>/shared/attempt-<k> on a
	// cluster.
	shared string
	// retained is state.checkpoints.num-retained.
	retained int
	// threshold is the size from which an operator's state goes to a file
	// of its own instead of into _metadata.
	threshold int
	// incremental is state.backend.incremental.
	incremental bool

	mu      sync.Mutex
	latest  *CompletedCheckpoint
	written []*CompletedCheckpoint // retained checkpoints, oldest first
	// refs counts, for each shared file, the retained checkpoints that
	// reference it: a file goes when the last of them does.
	refs map[string]int
	// savepoints are checkpoint IDs taken as savepoints: their snapshots
	// must be self-contained, never incremental.
	savepoints map[int64]bool
	// pending collects, per checkpoint in flight, the shared files its
	// snapshots uploaded or reused; handles keeps them for the retained
	// checkpoints.
	pending map[int64]map[string]bool
	handles map[int64][]string
	// sizes of the shared files, and bytes uploaded per checkpoint in
	// flight, for the checkpoint statistics.
	sizes    map[string]int64
	uploaded map[int64]int64
	stats    []CheckpointStats
	// failed are the latest checkpoints and savepoints that failed.
	failed []CheckpointStats
}

// CheckpointStats describes a completed checkpoint, as Flink's checkpoint
// history does.
type CheckpointStats struct {
	ID       int64
	Path     string `json:",omitempty"`
	Duration time.Duration
	// FullSize is the size of all the state the checkpoint needs:
	// inline state, state files and every shared file it references.
	FullSize int64
	// CheckpointedSize is what this checkpoint wrote: with incremental
	// snapshots only the files that no earlier checkpoint uploaded.
	CheckpointedSize int64
	// TriggeredAt is when the coordinator triggered the checkpoint and
	// CompletedAt when the last subtask acknowledged it and it was
	// written (or when it failed); Subtasks is how many subtasks take
	// part, and Acknowledged how many of them acknowledged it.
	TriggeredAt, CompletedAt time.Time
	Subtasks, Acknowledged   int
	Savepoint                bool
	// Failure says why a failed checkpoint failed; empty when it
	// completed.
	Failure string `json:",omitempty"`
	// Tasks are the acknowledging subtasks' parts.
	Tasks []SubtaskCheckpoint `json:",omitempty"`
}

// SubtaskCheckpoint is one subtask's part in a checkpoint's statistics.
type SubtaskCheckpoint struct {
	Vertex  string
	Subtask int
	// Finished: the subtask had finished before the checkpoint and took
	// no part (its statistics are zero).
	Finished bool
	SubtaskCheckpointStats
}

// subtaskStats collects the statistics of acknowledged snapshots.
func subtaskStats(snaps []*TaskSnapshot) []SubtaskCheckpoint {
	var out []SubtaskCheckpoint
	for _, t := range snaps {
		if t == nil {
			continue
		}
		sc := SubtaskCheckpoint{Vertex: t.Vertex, Subtask: t.Subtask, Finished: t.Stats == nil}
		if t.Stats != nil {
			sc.SubtaskCheckpointStats = *t.Stats
		}
		out = append(out, sc)
	}
	return out
}

// maxStats bounds the checkpoint history kept in memory.
const maxStats = 100

func newCheckpointStorage(dirOrURI, jobID string) (*checkpointStorage, error) {
	s := &checkpointStorage{jobID: jobID, shared: path.Join(jobID, "shared"), refs: make(map[string]int), savepoints: make(map[int64]bool),
		pending: make(map[int64]map[string]bool), handles: make(map[int64][]string),
		sizes: make(map[string]int64), uploaded: make(map[int64]int64)}
	if dirOrURI != "" {
		loc, err := storage.Open(context.Background(), dirOrURI)
		if err != nil {
			return nil, fmt.Errorf("state.checkpoints.dir: %w", err)
		}
		s.root = loc
	}
	return s, nil
}

// isFiles reports whether checkpoints go to files rather than memory.
func (s *checkpointStorage) isFiles() bool { return s.root != nil }

func (s *checkpointStorage) markSavepoint(id int64) {
	s.mu.Lock()
	s.savepoints[id] = true
	s.mu.Unlock()
}

// isSavepoint reports whether checkpoint id is taken as a savepoint.
func (s *checkpointStorage) isSavepoint(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.savepoints[id]
}

// filesFor returns where the snapshots of a checkpoint may put files, or
// nil when they must be self-contained: in memory, and for savepoints.
// sizes, when not nil, counts the bytes the snapshot uploads and reuses.
func (s *checkpointStorage) filesFor(id int64, sizes *snapshotSizes) state.SnapshotFiles {
	if s == nil || s.root == nil || s.isSavepoint(id) {
		return nil
	}
	if sizes == nil {
		sizes = &snapshotSizes{}
	}
	// Without incremental checkpoints a pebble store still uploads its
	// files, but all of them, into the checkpoint's own directory.
	return &sharedFiles{s: s, id: id, private: !s.incremental, sizes: sizes}
}

// uploadedBytes counts bytes written for checkpoint id.
func (s *checkpointStorage) uploadedBytes(id int64, handle string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploaded[id] += n
	s.sizes[handle] = n
}

// reference records that checkpoint id's snapshots use a shared file.
func (s *checkpointStorage) reference(id int64, handle string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[id] == nil {
		s.pending[id] = make(map[string]bool)
	}
	s.pending[id][handle] = true
}

// takeShared hands over a worker's bookkeeping of checkpoint id's shared
// files, for the leader's storage, which alone counts and deletes them.
func (s *checkpointStorage) takeShared(id int64) (handles []string, sizes map[string]int64, uploaded int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h := range s.pending[id] {
		handles = append(handles, h)
		if n, ok := s.sizes[h]; ok {
			if sizes == nil {
				sizes = make(map[string]int64)
			}
			sizes[h] = n
		}
	}
	delete(s.pending, id)
	uploaded = s.uploaded[id]
	delete(s.uploaded, id)
	return handles, sizes, uploaded
}

// addShared takes what takeShared handed over in another worker.
func (s *checkpointStorage) addShared(id int64, handles []string, sizes map[string]int64, uploaded int64) {
	if len(handles) == 0 && uploaded == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[id] == nil {
		s.pending[id] = make(map[string]bool)
	}
	for _, h := range handles {
		s.pending[id][h] = true
	}
	for h, n := range sizes {
		s.sizes[h] = n
	}
	s.uploaded[id] += uploaded
}

// sharedFiles uploads into a job's shared area for one checkpoint; handles
// are keys relative to the storage root, "<job-id>/shared/<name>", so
// that a checkpoint restored into a job with another ID still finds them.
type sharedFiles struct {
	s  *checkpointStorage
	id int64
	// private puts every file into the checkpoint's own directory and
	// reuses none: full, not incremental, snapshots.
	private bool
	sizes   *snapshotSizes
}

func (f *sharedFiles) Upload(ctx context.Context, localPath, name string) (string, error) {
	// Streamed, never read whole: SSTs are large.
	src, err := os.Open(localPath)
	if err != nil {
		return "", err
	}
	defer src.Close()
	handle := f.handle(name)
	n, _, err := writeFile(ctx, f.s.root, handle, src, writeFormat)
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", localPath, err)
	}
	f.uploaded(handle, n)
	return handle, nil
}

// Put stores data as a file called name, as Upload does a local file.
func (f *sharedFiles) Put(ctx context.Context, name string, data []byte) (string, error) {
	handle := f.handle(name)
	n, _, err := writeFile(ctx, f.s.root, handle, bytes.NewReader(data), writeFormat)
	if err != nil {
		return "", err
	}
	f.uploaded(handle, n)
	return handle, nil
}

// writeFile stores what r holds under name in the given checkpoint
// format, streamed: framed with its checksums from format 1 on. It
// returns the bytes written and the data's sum.
func writeFile(ctx context.Context, loc *storage.Location, name string, r io.Reader, format int) (int64, checksum.Sum, error) {
	var n int64
	var sum checksum.Sum
	err := loc.WriteWith(ctx, name, func(w io.Writer) error {
		if format < 1 {
			c, err := io.Copy(w, r)
			n, sum = c, checksum.Sum{Size: c}
			return err
		}
		cw := checksum.NewWriter(w)
		if _, err := io.Copy(cw, r); err != nil {
			return err
		}
		n, sum = cw.Size(), cw.Sum()
		return cw.Close()
	})
	return n, sum, err
}

// readFile reads a checkpoint file whole and, from format 1 on, verifies
// and strips its checksums. An error names the file.
func readFile(ctx context.Context, loc *storage.Location, name string, format int) ([]byte, checksum.Sum, error) {
	data, err := loc.Read(ctx, name)
	if err != nil || format < 1 {
		return data, checksum.Sum{Size: int64(len(data))}, err
	}
	body, sum, err := checksum.Unframe(data)
	if err != nil {
		return nil, sum, fmt.Errorf("checkpoint file %s: %w", loc.URI(name), err)
	}
	return body, sum, nil
}

func (f *sharedFiles) handle(name string) string {
	if f.private {
		return path.Join(f.s.jobID, fmt.Sprintf("chk-%d", f.id), "files", name)
	}
	return path.Join(f.s.shared, name)
}

func (f *sharedFiles) uploaded(handle string, n int64) {
	f.s.uploadedBytes(f.id, handle, n)
	f.sizes.uploaded.Add(n)
	if !f.private {
		f.s.reference(f.id, handle)
	}
}

// Reuse accepts only files of this storage's shared area: those of a
// checkpoint of another job or another attempt, restored from, are not
// this one's to count or delete, so the first checkpoint uploads its own
// copies.
func (f *sharedFiles) Reuse(handle string) bool {
	if f.private || !strings.HasPrefix(handle, f.s.shared+"/") {
		return false
	}
	f.s.reference(f.id, handle)
	f.s.mu.Lock()
	f.sizes.reused.Add(f.s.sizes[handle])
	f.s.mu.Unlock()
	return true
}

// restoreFiles downloads the shared files of a checkpoint being restored.
type restoreFiles struct {
	root *storage.Location
	// format is the checkpoint's (its _metadata's): from 1 on every file
	// is framed and verified as it is read.
	format int
}

func (f restoreFiles) Download(ctx context.Context, handle, localPath string) error {
	if f.root == nil {
		return fmt.Errorf("state file %s: the checkpoint was not read from storage", handle)
	}
	if !fs.ValidPath(handle) || handle == "." {
		// Handles come from the checkpoint's state: relative keys below
		// the storage root, never a way out of it.
		return fmt.Errorf("state file %q: not a file name inside the checkpoint storage", handle)
	}
	if f.format < 1 {
		return f.root.Download(ctx, handle, localPath)
	}
	// Streamed to the local file with the trailer stripped, so that
	// Pebble finds its SST as it wrote it; verified at the end, and the
	// local file removed if it does not verify.
	r, size, err := f.root.NewReader(ctx, handle)
	if err != nil {
		return err
	}
	defer r.Close()
	dst, err := os.Create(localPath)
	if err != nil {
		return err
	}
	_, err = checksum.Copy(dst, r, size)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(localPath)
		return fmt.Errorf("checkpoint file %s: %w", f.root.URI(handle), err)
	}
	return nil
}

// Get reads a shared file whole.
func (f restoreFiles) Get(ctx context.Context, handle string) ([]byte, error) {
	if f.root == nil {
		return nil, fmt.Errorf("state file %s: the checkpoint was not read from storage", handle)
	}
	if !fs.ValidPath(handle) || handle == "." {
		return nil, fmt.Errorf("state file %q: not a file name inside the checkpoint storage", handle)
	}
	data, _, err := readFile(ctx, f.root, handle, f.format)
	return data, err
}

// maxClaims bounds the checkpoint numbers claim tries: more directories
// taken in a row than this means something else writes there.
const maxClaims = 10000

// claim reserves the directory of a checkpoint about to start and returns
// its number: id, or the first number above it whose chk-<n> no other
// attempt (or earlier run of this one) has claimed. Only the checkpoint
// that owns a directory writes into it.
func (s *checkpointStorage) claim(ctx context.Context, id int64, owner string) (int64, error) {
	if s.root == nil {
		return id, nil
	}
	for n := id; n < id+maxClaims; n++ {
		ok, err := s.root.Join(s.jobID, fmt.Sprintf("chk-%d", n)).Create(ctx, "_claim", []byte(owner+"\n"))
		if err != nil {
			return 0, fmt.Errorf("checkpoint %d: claim its directory: %w", n, err)
		}
		if ok {
			return n, nil
		}
	}
	return 0, fmt.Errorf("checkpoints %d to %d: every directory under %s is taken", id, id+maxClaims-1, s.root.Join(s.jobID))
}

// unclaim removes the directory of a claimed checkpoint number that will
// hold no checkpoint: a savepoint's, or a checkpoint's that failed or was
// still in flight when the job ended. Files a task was still uploading
// into it may come back; they go with the job's directory.
func (s *checkpointStorage) unclaim(id int64) {
	if s.root != nil {
		_ = s.root.Join(s.jobID, fmt.Sprintf("chk-%d", id)).DeleteAll(context.Background())
	}
}

// store records a completed checkpoint, durably first when a directory is
// configured: a checkpoint only counts once its metadata is written.
func (s *checkpointStorage) store(c *CompletedCheckpoint) error {
	if err := s.write(c); err != nil {
		return err
	}
	s.register(c)
	return nil
}

// write puts a checkpoint's metadata and state files on the storage (a
// no-op in memory). It does not count yet: a checkpoint written but never
// registered is left alone, like one that never completed.
func (s *checkpointStorage) write(c *CompletedCheckpoint) error {
	if s.root == nil {
		return nil
	}
	dir := s.root.Join(s.jobID, fmt.Sprintf("chk-%d", c.ID))
	if err := writeCheckpoint(context.Background(), dir, c, s.threshold); err != nil {
		return fmt.Errorf("checkpoint %d: %w", c.ID, err)
	}
	c.Path = dir.String()
	c.root = s.root
	// A restore from this checkpoint in memory (after a failure) reads
	// the shared files its snapshots uploaded, framed as writeFormat says.
	c.Format = writeFormat
	return nil
}

// register makes a written checkpoint the latest: it counts its shared
// files and deletes the checkpoints and files that it subsumes.
func (s *checkpointStorage) register(c *CompletedCheckpoint) {
	own := int64(0)
	for _, t := range c.Tasks {
		for _, data := range t.Operators {
			own += int64(len(data))
		}
	}
	s.mu.Lock()
	delete(s.savepoints, c.ID)
	st := CheckpointStats{ID: c.ID, Path: c.Path, FullSize: own, CheckpointedSize: own + s.uploaded[c.ID],
		TriggeredAt: c.triggered, CompletedAt: time.Now(), Subtasks: len(c.Tasks), Acknowledged: len(c.Tasks), Tasks: subtaskStats(c.Tasks)}
	if !c.triggered.IsZero() {
		st.Duration = st.CompletedAt.Sub(c.triggered)
	}
	for h := range s.pending[c.ID] {
		st.FullSize += s.sizes[h]
	}
	if s.root != nil && !s.incremental {
		st.FullSize = st.CheckpointedSize
	}
	for id := range s.uploaded {
		if id <= c.ID {
			delete(s.uploaded, id)
		}
	}
	s.stats = appendBounded(s.stats, st)
	s.latest = c
	var drop []*CompletedCheckpoint
	var unreferenced []string
	if s.root != nil {
		var hs []string
		for h := range s.pending[c.ID] {
			hs = append(hs, h)
			s.refs[h]++
		}
		// Files of checkpoints that never completed stay until the job's
		// directory goes: a later snapshot may still reuse them.
		for id := range s.pending {
			if id <= c.ID {
				delete(s.pending, id)
			}
		}
		s.handles[c.ID] = hs
		s.written = append(s.written, c)
		if n := len(s.written) - max(s.retained, 1); n > 0 {
			drop, s.written = s.written[:n], s.written[n:]
		}
		for _, d := range drop {
			dh := s.handles[d.ID]
			delete(s.handles, d.ID)
			for _, h := range dh {
				if s.refs[h]--; s.refs[h] <= 0 {
					delete(s.refs, h)
					delete(s.sizes, h)
					unreferenced = append(unreferenced, h)
				}
			}
		}
	}
	s.mu.Unlock()
	// Older checkpoints beyond state.checkpoints.num-retained go, and the
	// shared files that no retained checkpoint needs any more.
	ctx := context.Background()
	for _, d := range drop {
		_ = s.root.Join(s.jobID, fmt.Sprintf("chk-%d", d.ID)).DeleteAll(ctx)
	}
	for _, h := range unreferenced {
		_ = s.root.Delete(ctx, h)
	}
}

// discard removes the job's checkpoint directory: the job finished or was
// cancelled without asking to retain its checkpoints.
func (s *checkpointStorage) discard() {
	if s.root != nil {
		_ = s.root.Join(s.jobID).DeleteAll(context.Background())
	}
}

// history returns the statistics of the latest completed checkpoints,
// oldest first.
func (s *checkpointStorage) history() []CheckpointStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stats)
}

// recordSavepoint adds a completed savepoint, written to path, to the
// statistics. Savepoints are self-contained: they share no files.
func (s *checkpointStorage) recordSavepoint(c *CompletedCheckpoint, path string) {
	size := int64(0)
	for _, t := range c.Tasks {
		for _, data := range t.Operators {
			size += int64(len(data))
		}
	}
	st := CheckpointStats{ID: c.ID, Path: path, FullSize: size, CheckpointedSize: size, TriggeredAt: c.triggered, CompletedAt: time.Now(),
		Subtasks: len(c.Tasks), Acknowledged: len(c.Tasks), Savepoint: true, Tasks: subtaskStats(c.Tasks)}
	if !c.triggered.IsZero() {
		st.Duration = st.CompletedAt.Sub(c.triggered)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = appendBounded(s.stats, st)
}

// recordFailure adds a checkpoint or savepoint that failed, with the
// acknowledgements it had, to the statistics.
func (s *checkpointStorage) recordFailure(id int64, triggered time.Time, subtasks int, acks []*TaskSnapshot, savepoint bool, cause error) {
	st := CheckpointStats{ID: id, TriggeredAt: triggered, CompletedAt: time.Now(), Subtasks: subtasks, Savepoint: savepoint,
		Failure: cause.Error(), Tasks: subtaskStats(acks)}
	st.Acknowledged = len(st.Tasks)
	if !triggered.IsZero() {
		st.Duration = st.CompletedAt.Sub(triggered)
	}
	for _, t := range st.Tasks {
		st.CheckpointedSize += t.CheckpointedSize
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = appendBounded(s.failed, st)
}

// failures returns the statistics of the latest failed checkpoints and
// savepoints, oldest first.
func (s *checkpointStorage) failures() []CheckpointStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failed)
}

func appendBounded(h []CheckpointStats, st CheckpointStats) []CheckpointStats {
	h = append(h, st)
	if len(h) > maxStats {
		h = h[len(h)-maxStats:]
	}
	return h
}

func (s *checkpointStorage) latestCheckpoint() *CompletedCheckpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// writeCheckpoint writes a checkpoint's state files and then its
// _metadata, which makes it count. State larger than threshold bytes goes
// to a file of its own, named relative to the checkpoint's directory so
// that the directory can be moved. From format 1 on every file is framed
// with checksums, and _metadata records each state file's sum too, so
// that a state file swapped for another intact one is caught as well.
func writeCheckpoint(ctx context.Context, dir *storage.Location, c *CompletedCheckpoint, threshold int) error {
	meta := *c
	meta.Format = writeFormat
	meta.Tasks = make([]*TaskSnapshot, len(c.Tasks))
	for i, t := range c.Tasks {
		mt := *t
		mt.Operators = make(map[string][]byte, len(t.Operators))
		mt.Sums = nil
		for uid, data := range t.Operators {
			if len(data) <= threshold {
				mt.Operators[uid] = data
				continue
			}
			name := stateFileName(t, uid)
			_, sum, err := writeFile(ctx, dir, name, bytes.NewReader(data), meta.Format)
			if err != nil {
				return err
			}
			if mt.Files == nil {
				mt.Files = make(map[string]string)
			}
			mt.Files[uid] = name
			if meta.Format >= 1 {
				if mt.Sums == nil {
					mt.Sums = make(map[string]checksum.Sum)
				}
				mt.Sums[uid] = sum
			}
		}
		meta.Tasks[i] = &mt
	}
	data, err := json.Marshal(&meta)
	if err != nil {
		return fmt.Errorf("encode metadata: %w", err)
	}
	_, _, err = writeFile(ctx, dir, "_metadata", bytes.NewReader(data), meta.Format)
	return err
}

// stateFileName names an operator's state file in a checkpoint: unique
// per vertex, subtask and operator, whatever characters the UID has.
func stateFileName(t *TaskSnapshot, uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return fmt.Sprintf("op-%s-%d-%s", t.Vertex, t.Subtask, hex.EncodeToString(sum[:8]))
}

// LoadCheckpoint reads a checkpoint or savepoint: its directory (a path or
// a URI) or its _metadata file. The state files are read with it.
func LoadCheckpoint(pathOrURI string) (*CompletedCheckpoint, error) {
	ctx := context.Background()
	loc, err := storage.Open(ctx, pathOrURI)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	if loc.Base() == "_metadata" {
		loc = loc.Parent()
	}
	data, err := loc.Read(ctx, "_metadata")
	if errors.Is(err, os.ErrNotExist) {
		// A cluster restarts a job from the latest checkpoint its worker
		// reported, which the worker may have subsumed and deleted since:
		// a newer completed checkpoint of the job then stands in for it.
		if newer := newerCheckpoint(ctx, loc); newer != nil {
			loc = newer
			data, err = loc.Read(ctx, "_metadata")
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load checkpoint: %s has no _metadata: it is not a completed checkpoint or savepoint directory", loc)
	}
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	c, err := decodeMetadata(data)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: checkpoint file %s: %w", loc.URI("_metadata"), err)
	}
	for _, t := range c.Tasks {
		if t.Operators == nil {
			t.Operators = make(map[string][]byte)
		}
		uids := make([]string, 0, len(t.Files))
		for uid := range t.Files {
			uids = append(uids, uid)
		}
		slices.Sort(uids)
		for _, uid := range uids {
			st, sum, err := readFile(ctx, loc, t.Files[uid], c.Format)
			if err != nil {
				return nil, fmt.Errorf("load checkpoint %s: state of operator %q: %w", loc, uid, err)
			}
			if want, ok := t.Sums[uid]; c.Format >= 1 && (!ok || sum != want) {
				return nil, fmt.Errorf("load checkpoint %s: state of operator %q: checkpoint file %s: %w: its %d bytes have CRC32C %08x, _metadata records %d bytes with %08x: not the file this checkpoint wrote",
					loc, uid, loc.URI(t.Files[uid]), checksum.ErrCorrupt, sum.Size, sum.CRC32C, want.Size, want.CRC32C)
			}
			t.Operators[uid] = st
		}
		t.Files = nil
		t.Sums = nil
	}
	c.Path = loc.String()
	// Shared files are named relative to the storage root, two levels
	// up from <root>/<job-id>/chk-<n>.
	c.root = loc.Parent().Parent()
	return c, nil
}

// decodeMetadata parses the bytes of a _metadata file and checks what a
// restore relies on, so that a corrupt or hand-edited file is an error
// here rather than a crash or a stray file read later.
//
// A _metadata of format 1 or later ends with its checksum trailer and is
// verified before it is parsed. One without a trailer must be format 0
// and pure JSON: a format-1 one whose trailer was damaged or cut off
// either carries bytes after its JSON or says format 1, and is refused.
func decodeMetadata(data []byte) (*CompletedCheckpoint, error) {
	framed := checksum.HasMagic(data)
	if framed {
		body, _, err := checksum.Unframe(data)
		if err != nil {
			return nil, err
		}
		data = body
	}
	var c CompletedCheckpoint
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if end := dec.InputOffset(); len(bytes.TrimSpace(data[end:])) > 0 {
		return nil, fmt.Errorf("%w: bytes %d–%d follow the metadata's JSON: a damaged checksum trailer, or not a _metadata file", checksum.ErrCorrupt, end, len(data)-1)
	}
	switch {
	case c.Format > checkpointFormat:
		return nil, fmt.Errorf("checkpoint format %d: written by a newer version of weir, which this one (format %d) cannot read", c.Format, checkpointFormat)
	case c.Format >= 1 && !framed:
		return nil, fmt.Errorf("%w: format %d metadata without its checksum trailer: truncated or damaged", checksum.ErrCorrupt, c.Format)
	case c.Format < 1 && framed:
		return nil, fmt.Errorf("%w: a checksum trailer on metadata of format %d, which has none", checksum.ErrCorrupt, c.Format)
	}
	if c.ID < 0 {
		return nil, fmt.Errorf("negative checkpoint ID %d", c.ID)
	}
	for i, t := range c.Tasks {
		if t == nil {
			return nil, fmt.Errorf("task %d is null", i)
		}
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
		for uid := range t.Files {
			if _, ok := t.Sums[uid]; c.Format >= 1 && !ok {
				return nil, fmt.Errorf("task %d: state file of operator %q has no checksum", i, uid)
			}
		}
	}
	return &c, nil
}

// check verifies a subtask's snapshot read from outside the process (a
// _metadata file, a worker's acknowledgement).
func (t *TaskSnapshot) check() error {
	if t.Parallelism < 1 || t.Subtask < 0 || t.Subtask >= t.Parallelism {
		return fmt.Errorf("subtask %d of vertex %q at parallelism %d", t.Subtask, t.Vertex, t.Parallelism)
	}
	for uid, mp := range t.MaxParallelism {
		if mp < 0 {
			return fmt.Errorf("operator %q has max parallelism %d", uid, mp)
		}
	}
	for uid, name := range t.Files {
		// Written by writeCheckpoint as a name inside the checkpoint's
		// directory; anything else would read a file outside it.
		if !fs.ValidPath(name) || name == "." || name == "_metadata" {
			return fmt.Errorf("state file %q of operator %q is not a file name inside the checkpoint directory", name, uid)
		}
	}
	return nil
}

// newerCheckpoint returns the newest completed checkpoint next to a
// chk-<n> directory with a number above n, or nil.
func newerCheckpoint(ctx context.Context, loc *storage.Location) *storage.Location {
	n, ok := checkpointNumber(loc.Base())
	if !ok {
		return nil
	}
	dir := loc.Parent()
	names, _ := dir.SubDirs(ctx)
	var newer []int64
	for _, name := range names {
		if m, ok := checkpointNumber(name); ok && m > n {
			newer = append(newer, m)
		}
	}
	slices.Sort(newer)
	for _, m := range slices.Backward(newer) {
		c := dir.Join(fmt.Sprintf("chk-%d", m))
		if ok, err := c.Exists(ctx, "_metadata"); err == nil && ok {
			return c
		}
	}
	return nil
}

func checkpointNumber(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, "chk-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// checkSavepointTarget refuses, before any barrier is sent, a savepoint
// directory that would lose the savepoint or put it somewhere nobody
// asked for:
//
//   - a relative path: the process that writes the savepoint resolves
//     it, and on a cluster that is a worker whose working directory is
//     its private attempt directory, removed when the attempt ends;
//   - a directory inside <state.checkpoints.dir>/<job-id>: that is the
//     job's own checkpoint area, which the job deletes when it finishes,
//     savepoint included, after reporting it completed.
func (s *checkpointStorage) checkSavepointTarget(ctx context.Context, dir string) error {
	if dir == "" {
		return errors.New("savepoint: no target directory: give one, or set state.savepoints.dir")
	}
	if !strings.Contains(dir, "://") && !filepath.IsAbs(dir) {
		return fmt.Errorf("savepoint: target directory %q is a relative path, which the process writing the savepoint would resolve against its own working directory; give an absolute path or a URI (file:///..., s3://...)", dir)
	}
	if s.root == nil {
		return nil
	}
	loc, err := storage.Open(ctx, dir)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if own := s.root.Join(s.jobID); loc.Within(own) {
		return fmt.Errorf("savepoint: target directory %s lies inside %s, this job's checkpoint directory, which is deleted when the job ends; choose a directory outside it (state.savepoints.dir)", loc, own)
	}
	return nil
}

// writeSavepoint writes a savepoint into a new directory under dir: it is
// self-contained (no shared files) and relocatable (its state files are
// named relative to it), so it may be moved.
func writeSavepoint(dir string, cp *CompletedCheckpoint, threshold int) (string, error) {
	if dir == "" {
		return "", errors.New("savepoint: no target directory")
	}
	ctx := context.Background()
	loc, err := storage.Open(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("savepoint: %w", err)
	}
	// As Flink names them: the first six characters of the job's ID, and
	// a random part, so that savepoints of one job never collide.
	var random [6]byte
	_, _ = rand.Read(random[:])
	loc = loc.Join(fmt.Sprintf("savepoint-%s-%x", cp.JobID[:min(6, len(cp.JobID))], random))
	if err := writeCheckpoint(ctx, loc, cp, threshold); err != nil {
		return "", fmt.Errorf("savepoint: %w", err)
	}
	return loc.String(), nil
}
