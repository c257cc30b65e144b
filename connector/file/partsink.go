package file

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/storage"
)

// Defaults of the rolling policy, Flink's DefaultRollingPolicy.
const (
	DefaultPartSize           = 128 << 20
	DefaultRolloverInterval   = 60 * time.Second
	DefaultInactivityInterval = 60 * time.Second
)

// PartSink writes records in a file format to part files, exactly once:
// Flink's FileSink. Build it with Sink.
type PartSink[T any] struct {
	dir        string
	enc        Encoding[T]
	bucketer   Bucketer[T]
	partSize   int64
	rollover   time.Duration
	inactivity time.Duration
	onCkpt     bool
	now        func() time.Time // the clock, replaced by tests
}

var _ connector.Sink[int] = (*PartSink[int])(nil)

// Sink returns a sink that writes records with enc into part files under
// dir, named as Flink names them: part-<uid>-<subtask>-<counter><ext>,
// where uid is random for every writer (every subtask of every attempt),
// so that no two writers ever choose one name, and counter counts the
// writer's files.
//
// A part file is written under a hidden name (a "." before it and
// ".inprogress" after it), which readers (Lines, Source, ReadParts)
// ignore, and gets its final name only when the checkpoint after its last
// record completes (or the bounded input ended and the job finished).
// That is the two-phase commit of connector.Committer: after a failure the
// job restarts from its last checkpoint, publishes what that checkpoint
// prepared, and the records after it are written again to new files, so
// that every record is in exactly one published file.
//
// A file rolls (is closed, to be published at the next checkpoint, and
// the bucket's next record starts a new file) when it reaches the part
// size, when it is older than the rollover interval, when it got no record
// for the inactivity interval, and, if RollOnCheckpoint is set or the
// format is a bulk format such as Parquet, at every checkpoint. A row
// format's file that does not roll at a checkpoint stays open: the
// checkpoint records its length, and a recovery publishes it cut to that
// length. The time rules are checked on every record and at every
// checkpoint.
func Sink[T any](dir string, enc Encoding[T]) *PartSink[T] {
	return &PartSink[T]{
		dir:        dir,
		enc:        enc,
		partSize:   DefaultPartSize,
		rollover:   DefaultRolloverInterval,
		inactivity: DefaultInactivityInterval,
		onCkpt:     enc.Bulk(),
		now:        time.Now,
	}
}

// RollOnSize sets the size in bytes at which a part file rolls (default
// DefaultPartSize); n <= 0 turns rolling on size off. It returns s.
func (s *PartSink[T]) RollOnSize(n int64) *PartSink[T] {
	s.partSize = max(n, 0)
	return s
}

// RollOnTime sets the rollover interval (the longest a part file stays
// open) and the inactivity interval (the longest it stays open without a
// record); 0 turns a rule off. It returns s.
func (s *PartSink[T]) RollOnTime(rollover, inactivity time.Duration) *PartSink[T] {
	s.rollover, s.inactivity = max(rollover, 0), max(inactivity, 0)
	return s
}

// RollOnCheckpoint makes part files roll at every checkpoint (Flink's
// OnCheckpointRollingPolicy), so that a record is visible as soon as the
// checkpoint after it completes. Bulk formats always roll on checkpoints.
// It returns s.
func (s *PartSink[T]) RollOnCheckpoint(on bool) *PartSink[T] {
	s.onCkpt = on || s.enc.Bulk()
	return s
}

// Buckets sends every record into the subdirectory of dir that b names
// (default: dir itself). Each bucket has its own part files. It returns s.
func (s *PartSink[T]) Buckets(b Bucketer[T]) *PartSink[T] {
	s.bucketer = b
	return s
}

// Bucketer names the bucket, a relative subdirectory of the sink's
// directory, of a record with its timestamp (math.MinInt64 when it has
// none) at the processing time now. "" is the directory itself. A bucket
// must not leave the directory or be hidden (no element may start with
// "." or "_"), so that readers of the directory see its files.
type Bucketer[T any] func(v T, timestampMillis int64, now time.Time) (string, error)

// DefaultBucketLayout is Flink's DateTimeBucketAssigner format
// "yyyy-MM-dd--HH" in Go's notation: one bucket an hour.
const DefaultBucketLayout = "2006-01-02--15"

// BucketByTime buckets records by the processing time at which the sink
// writes them, formatted with layout (default DefaultBucketLayout) in loc
// (default UTC), as Flink's DateTimeBucketAssigner does.
func BucketByTime[T any](layout string, loc *time.Location) Bucketer[T] {
	layout, loc = bucketDefaults(layout, loc)
	return func(_ T, _ int64, now time.Time) (string, error) {
		return now.In(loc).Format(layout), nil
	}
}

// BucketByEventTime buckets records by their event timestamp, formatted
// with layout (default DefaultBucketLayout) in loc (default UTC). A record
// without a timestamp fails the job.
func BucketByEventTime[T any](layout string, loc *time.Location) Bucketer[T] {
	layout, loc = bucketDefaults(layout, loc)
	return func(_ T, ts int64, _ time.Time) (string, error) {
		if ts == math.MinInt64 {
			return "", errors.New("the record has no timestamp to bucket by")
		}
		return time.UnixMilli(ts).In(loc).Format(layout), nil
	}
}

// BucketByField buckets records by a value taken from them, such as
// "country=" + v.Country (Hive's partition directories).
func BucketByField[T any](field func(T) string) Bucketer[T] {
	return func(v T, _ int64, _ time.Time) (string, error) { return field(v), nil }
}

func bucketDefaults(layout string, loc *time.Location) (string, *time.Location) {
	if layout == "" {
		layout = DefaultBucketLayout
	}
	if loc == nil {
		loc = time.UTC
	}
	return layout, loc
}

// checkBucket rejects bucket names that would put files outside the
// directory or where readers do not look.
func checkBucket(b string) error {
	if b == "" {
		return nil
	}
	if !filepath.IsLocal(b) {
		return errors.New("not a relative path inside the sink's directory")
	}
	for _, e := range strings.Split(filepath.ToSlash(filepath.Clean(b)), "/") {
		if hidden(e) {
			return fmt.Errorf("element %q starts with '.' or '_', which hides files from readers", e)
		}
	}
	return nil
}

// NewWriter creates the writer of one subtask. Nothing is created on disk
// before the first record.
func (s *PartSink[T]) NewWriter(ctx context.Context, sc connector.SinkContext) (connector.SinkWriter[T], error) {
	if s.enc == nil {
		return nil, errors.New("file: Sink has no encoding")
	}
	w := &PartWriter[T]{
		s:       s,
		subtask: sc.Subtask,
		uid:     newUID(),
		open:    make(map[string]*partFile[T]),
		dirs:    make(map[string]bool),

		referenced: make(map[string]bool),
	}
	if isRemote(s.dir) {
		loc, err := storage.Open(ctx, s.dir)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		// Part files are written on local disk and uploaded whole when
		// they roll: an object store cannot append to an object.
		staging, err := os.MkdirTemp("", "weir-parts-")
		if err != nil {
			return nil, fmt.Errorf("file: staging directory for %s: %w", s.dir, err)
		}
		// Commits run also while the task ends (the final commit) or is
		// torn down: they must not be cut off half-way by its context.
		w.ctx, w.remote, w.local = context.WithoutCancel(ctx), loc, staging
		return w, nil
	}
	w.local = localPath(s.dir)
	if err := os.MkdirAll(w.local, 0o755); err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	return w, nil
}

// newUID is a random UUID (version 4), as Flink uses for the uid of its
// part file names.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// PartWriter is the writer of one PartSink subtask. Besides the
// connector.SinkWriter methods it implements connector.Committer and has
// Abort.
type PartWriter[T any] struct {
	s *PartSink[T]
	// local is the directory part files are written to: the sink's own,
	// or a staging directory when the sink writes to an object store
	// (remote), where a part file is uploaded under its hidden name when
	// it rolls and copied to its final name on commit.
	local   string
	remote  *storage.Location
	ctx     context.Context // the writer's life, for the object store
	subtask int
	uid     string
	counter int
	open    map[string]*partFile[T] // the in-progress file of each bucket
	rolled  []partEntry             // closed since the last PrepareCommit
	dirs    map[string]bool         // bucket directories known to exist
	// referenced holds the in-progress files a checkpoint recorded: they
	// must survive an abort, for a recovery to publish.
	referenced map[string]bool
	// prepared: PrepareCommit has run. Until then a Commit can only come
	// from a recovery (the runtime commits the restored checkpoint's
	// transactions before the first record), which also publishes the
	// files that were in progress at that checkpoint.
	prepared  bool
	nextCheck time.Time // when Write next looks at the time rules
	lastBkt   string    // the last bucket name that passed checkBucket
	flushed   bool      // the last call was a successful Flush
	err       error     // the first write error: the writer is broken
	closed    bool
}

// partFile is a part file being written.
type partFile[T any] struct {
	entry     partEntry
	f         *os.File
	cw        countingWriter
	bw        *bufio.Writer
	enc       Encoder[T]
	opened    time.Time
	lastWrite time.Time
}

// partEntry describes a part file in a transaction: the hidden file, the
// name it gets, relative to the sink's directory, and its length. Complete
// entries were rolled and are published when their checkpoint completes;
// the others were in progress at the checkpoint and are published, cut to
// Length, only by a recovery from it.
type partEntry struct {
	InProgress string `json:"inprogress"`
	Final      string `json:"final"`
	Length     int64  `json:"length"`
	Complete   bool   `json:"complete,omitempty"`
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Write encodes the record into its bucket's in-progress file, after
// rolling that file if a rule says so.
func (w *PartWriter[T]) Write(v T, ts int64) error {
	if w.closed {
		return errors.New("file: write to a closed part writer")
	}
	if w.err != nil {
		return w.err
	}
	w.flushed = false
	now := w.s.now()
	if !now.Before(w.nextCheck) {
		if err := w.rollByTime(now); err != nil {
			return err
		}
	}
	bucket := ""
	if w.s.bucketer != nil {
		b, err := w.s.bucketer(v, ts, now)
		if err != nil {
			return fmt.Errorf("file: bucket of record %.200v: %w", v, err)
		}
		if b != w.lastBkt {
			if err := checkBucket(b); err != nil {
				return fmt.Errorf("file: bucket %q of record %.200v: %w", b, v, err)
			}
			w.lastBkt = b
		}
		bucket = b
	}
	pf := w.open[bucket]
	if pf != nil && w.s.partSize > 0 && pf.size() >= w.s.partSize {
		if err := w.roll(bucket, pf); err != nil {
			return err
		}
		pf = nil
	}
	if pf == nil {
		var err error
		if pf, err = w.newPart(bucket, now); err != nil {
			return err
		}
	}
	pf.lastWrite = now
	if err := pf.enc.Encode(v); err != nil {
		return w.fail(fmt.Errorf("file: encode record %.200v into %s: %w", v, pf.entry.InProgress, err))
	}
	return nil
}

func (w *PartWriter[T]) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

func (pf *partFile[T]) size() int64 {
	n := pf.cw.n + int64(pf.bw.Buffered())
	if b, ok := pf.enc.(BufferedSizer); ok {
		n += b.Buffered()
	}
	return n
}

// rollByTime rolls the files that are too old or idle.
func (w *PartWriter[T]) rollByTime(now time.Time) error {
	every := time.Minute
	for _, d := range []time.Duration{w.s.rollover, w.s.inactivity} {
		if d > 0 {
			every = min(every, max(d/4, time.Millisecond))
		}
	}
	w.nextCheck = now.Add(every)
	for bucket, pf := range w.open {
		if w.s.rollover > 0 && now.Sub(pf.opened) >= w.s.rollover ||
			w.s.inactivity > 0 && now.Sub(pf.lastWrite) >= w.s.inactivity {
			if err := w.roll(bucket, pf); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *PartWriter[T]) newPart(bucket string, now time.Time) (*partFile[T], error) {
	name := fmt.Sprintf("part-%s-%d-%d%s", w.uid, w.subtask, w.counter, w.s.enc.Extension())
	w.counter++
	e := partEntry{
		InProgress: filepath.Join(bucket, "."+name+".inprogress"),
		Final:      filepath.Join(bucket, name),
	}
	if !w.dirs[bucket] {
		if err := os.MkdirAll(filepath.Join(w.local, bucket), 0o755); err != nil {
			return nil, w.fail(fmt.Errorf("file: %w", err))
		}
		w.dirs[bucket] = true
	}
	f, err := os.OpenFile(filepath.Join(w.local, e.InProgress), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, w.fail(fmt.Errorf("file: %w", err))
	}
	pf := &partFile[T]{entry: e, f: f, opened: now, lastWrite: now}
	pf.cw.w = f
	pf.bw = bufio.NewWriterSize(&pf.cw, bufferSize)
	if pf.enc, err = w.s.enc.NewEncoder(pf.bw); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, w.fail(fmt.Errorf("file: start %s: %w", e.InProgress, err))
	}
	w.open[bucket] = pf
	return pf, nil
}

// roll completes a part file: it is synced and closed, to be published
// with the next checkpoint.
func (w *PartWriter[T]) roll(bucket string, pf *partFile[T]) error {
	delete(w.open, bucket)
	if err := pf.enc.Close(); err != nil {
		pf.f.Close()
		return w.fail(fmt.Errorf("file: complete %s: %w", pf.entry.InProgress, err))
	}
	if err := w.sync(pf); err != nil {
		pf.f.Close()
		return err
	}
	if err := pf.f.Close(); err != nil {
		return w.fail(fmt.Errorf("file: close %s: %w", pf.entry.InProgress, unwrapPath(err)))
	}
	pf.entry.Length, pf.entry.Complete = pf.cw.n, true
	if w.remote != nil {
		if err := w.stage(pf.entry); err != nil {
			return err
		}
	}
	w.rolled = append(w.rolled, pf.entry)
	return nil
}

// stage uploads a rolled part file to the object store under its hidden
// name, where it waits for its checkpoint to complete, and removes the
// local copy.
func (w *PartWriter[T]) stage(e partEntry) error {
	local := filepath.Join(w.local, e.InProgress)
	n, err := w.remote.Upload(w.ctx, filepath.ToSlash(e.InProgress), local)
	if err != nil {
		return w.fail(fmt.Errorf("file: stage %s: %w", e.InProgress, err))
	}
	if n != e.Length {
		return w.fail(fmt.Errorf("file: stage %s: uploaded %d bytes of %d", e.InProgress, n, e.Length))
	}
	os.Remove(local) // uploaded; a leftover in the staging directory is removed with it
	return nil
}

// sync writes out the buffer and syncs the file.
func (w *PartWriter[T]) sync(pf *partFile[T]) error {
	if err := pf.bw.Flush(); err != nil {
		return w.fail(fmt.Errorf("file: write %s: %w", pf.entry.InProgress, unwrapPath(err)))
	}
	if err := pf.f.Sync(); err != nil {
		return w.fail(fmt.Errorf("file: sync %s: %w", pf.entry.InProgress, unwrapPath(err)))
	}
	return nil
}

// Flush writes out and syncs the in-progress files, for a runtime that
// does not commit in two phases.
func (w *PartWriter[T]) Flush() error {
	if w.closed {
		return errors.New("file: flush of a closed part writer")
	}
	if w.err != nil {
		return w.err
	}
	for _, pf := range w.open {
		if err := pf.enc.Flush(); err != nil {
			return w.fail(fmt.Errorf("file: write %s: %w", pf.entry.InProgress, err))
		}
		if err := w.sync(pf); err != nil {
			return err
		}
	}
	w.flushed = true
	return nil
}

// PrepareCommit implements connector.Committer. It rolls the files that
// are due, and every file if the sink rolls on checkpoints or the input
// ended; the other files are synced and their lengths recorded. The
// committable lists the rolled files, to publish when the checkpoint
// completes, and the recorded lengths, for a recovery.
func (w *PartWriter[T]) PrepareCommit(checkpointID int64) ([]byte, error) {
	if w.closed {
		return nil, errors.New("file: prepare commit of a closed part writer")
	}
	if w.err != nil {
		return nil, w.err
	}
	w.prepared = true
	if err := w.rollByTime(w.s.now()); err != nil {
		return nil, err
	}
	// A part file on an object store cannot be resumed after a failure
	// (an object cannot be appended to or truncated), so it rolls at
	// every checkpoint, as bulk formats do.
	rollAll := w.s.onCkpt || checkpointID == math.MaxInt64 || w.remote != nil
	var resumable []partEntry
	for bucket, pf := range w.open {
		if rollAll {
			if err := w.roll(bucket, pf); err != nil {
				return nil, err
			}
			continue
		}
		if err := pf.enc.Flush(); err != nil {
			return nil, w.fail(fmt.Errorf("file: write %s: %w", pf.entry.InProgress, err))
		}
		if err := w.sync(pf); err != nil {
			return nil, err
		}
		w.referenced[pf.entry.InProgress] = true
		e := pf.entry
		e.Length = pf.cw.n
		resumable = append(resumable, e)
	}
	entries := append(w.rolled, resumable...)
	w.rolled = nil
	data, err := json.Marshal(entries)
	if err != nil {
		return nil, w.fail(fmt.Errorf("file: encode transaction: %w", err))
	}
	return data, nil
}

// Commit implements connector.Committer: it publishes the rolled files by
// renaming them to their final names. On a recovery, before the writer
// prepared anything, it also publishes the files that were in progress at
// the checkpoint, cut to the length the checkpoint recorded. A file
// published before (gone under its hidden name, present under its final
// one) is skipped, so committing twice is harmless.
func (w *PartWriter[T]) Commit(committables [][]byte) error {
	recovery := !w.prepared
	var entries []partEntry
	at := make(map[string]int) // in-progress name -> index in entries
	for _, c := range committables {
		es, err := decodePartEntries(c)
		if err != nil {
			return err
		}
		for _, e := range es {
			if !e.Complete && !recovery {
				continue
			}
			// A later checkpoint of the same file recorded it longer;
			// lengths only grow.
			if i, ok := at[e.InProgress]; ok {
				if e.Length > entries[i].Length {
					entries[i] = e
				}
				continue
			}
			at[e.InProgress] = len(entries)
			entries = append(entries, e)
		}
	}
	for _, e := range entries {
		if err := w.publish(e); err != nil {
			return err
		}
		delete(w.referenced, e.InProgress)
	}
	return nil
}

func (w *PartWriter[T]) publish(e partEntry) error {
	if w.remote != nil {
		return w.publishRemote(e)
	}
	from, to := filepath.Join(w.local, e.InProgress), filepath.Join(w.local, e.Final)
	fi, err := os.Stat(from)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(to); serr == nil {
			return nil // published before
		}
		return fmt.Errorf("file: commit %s: the in-progress file is gone and %s does not exist", from, to)
	}
	if err != nil {
		return fmt.Errorf("file: commit: %w", err)
	}
	switch {
	case fi.Size() < e.Length:
		return fmt.Errorf("file: commit %s: it has %d bytes, the checkpoint recorded %d", from, fi.Size(), e.Length)
	case fi.Size() > e.Length:
		// Written after the checkpoint by the attempt that failed.
		if err := os.Truncate(from, e.Length); err != nil {
			return fmt.Errorf("file: commit: %w", err)
		}
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("file: commit: %w", err)
	}
	syncDir(filepath.Dir(to))
	return nil
}

// publishRemote publishes a staged part file (see publishObject), after
// checking that it is whole.
func (w *PartWriter[T]) publishRemote(e partEntry) error {
	from, to := filepath.ToSlash(e.InProgress), filepath.ToSlash(e.Final)
	if !e.Complete {
		return fmt.Errorf("file: commit %s: a part file on an object store is published only whole", w.remote.URI(from))
	}
	size, err := w.remote.Size(w.ctx, from)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("file: commit: %w", err)
	}
	if err == nil && size != e.Length {
		return fmt.Errorf("file: commit %s: it has %d bytes, the checkpoint recorded %d", w.remote.URI(from), size, e.Length)
	}
	return publishObject(w.ctx, w.remote, from, to)
}

// decodePartEntries parses a committable of PrepareCommit. Commit renames
// and truncates its files, so it accepts only what PrepareCommit writes:
// a hidden in-progress part file and its final name in the same
// directory, inside the sink's.
func decodePartEntries(data []byte) ([]partEntry, error) {
	var es []partEntry
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, fmt.Errorf("file: decode transaction: %w", err)
	}
	for _, e := range es {
		final := filepath.Base(e.Final)
		if !filepath.IsLocal(e.Final) || !strings.HasPrefix(final, "part-") || e.Length < 0 ||
			e.InProgress != filepath.Join(filepath.Dir(e.Final), "."+final+".inprogress") {
			return nil, fmt.Errorf("file: decode transaction: %q -> %q is not an in-progress part file and its final name", e.InProgress, e.Final)
		}
	}
	return es, nil
}

// Close ends the writer. Without two-phase commits (no PrepareCommit ran)
// and after a successful Flush it publishes every file; otherwise it only
// closes them and removes those that no checkpoint recorded.
func (w *PartWriter[T]) Close() error {
	if w.closed {
		return nil
	}
	if w.prepared || !w.flushed || w.err != nil {
		return w.Abort()
	}
	for bucket, pf := range w.open {
		if err := w.roll(bucket, pf); err != nil {
			w.Abort()
			return err
		}
	}
	for _, e := range w.rolled {
		if err := w.publish(e); err != nil {
			w.Abort()
			return err
		}
	}
	w.rolled = nil
	w.closed = true
	if w.remote != nil {
		return os.RemoveAll(w.local)
	}
	return nil
}

// Abort closes the writer without publishing anything. Files that a
// checkpoint recorded stay for a recovery to publish; the others are
// removed. Close after Abort does nothing.
func (w *PartWriter[T]) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	for bucket, pf := range w.open {
		delete(w.open, bucket)
		pf.f.Close() // the content up to the recorded length is synced
		if !w.referenced[pf.entry.InProgress] {
			errs = append(errs, removeIfExists(filepath.Join(w.local, pf.entry.InProgress)))
		}
	}
	for _, e := range w.rolled {
		if !w.referenced[e.InProgress] {
			errs = append(errs, w.removeRolled(e))
		}
	}
	w.rolled = nil
	if w.remote != nil {
		errs = append(errs, os.RemoveAll(w.local))
	}
	return errors.Join(errs...)
}

// removeRolled removes a rolled part file that no checkpoint recorded.
func (w *PartWriter[T]) removeRolled(e partEntry) error {
	if w.remote != nil {
		return w.remote.Delete(w.ctx, filepath.ToSlash(e.InProgress))
	}
	return removeIfExists(filepath.Join(w.local, e.InProgress))
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("file: %w", err)
	}
	return nil
}
