package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/storage"
)

// EncodeSplits implements connector.SplitSerializer: file splits are four
// plain fields, so a checkpoint stores them as JSON.
func (s *LineSource) EncodeSplits(splits []connector.Split) ([]byte, error) {
	out := make([]*FileSplit, len(splits))
	for i, sp := range splits {
		fs, ok := sp.(*FileSplit)
		if !ok {
			return nil, fmt.Errorf("file: split %q: %w", sp.SplitID(), connector.ErrUnsupportedSplit)
		}
		out[i] = fs
	}
	return json.Marshal(out)
}

// DecodeSplits implements connector.SplitSerializer.
func (s *LineSource) DecodeSplits(data []byte) ([]connector.Split, error) {
	var in []*FileSplit
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("file: decode splits: %w", err)
	}
	out := make([]connector.Split, len(in))
	for i, sp := range in {
		// A checkpoint holds only splits that Splits made and readers
		// advanced; anything else would reach the reader as a nil
		// split or a range it cannot seek to.
		switch {
		case sp == nil:
			return nil, fmt.Errorf("file: decode splits: split %d is null", i)
		case sp.Start < 0 || sp.End < sp.Start || sp.Offset < 0:
			return nil, fmt.Errorf("file: decode splits: invalid split %v", sp)
		}
		out[i] = sp
	}
	return out, nil
}

// pendingFile is a prepared transaction of a TextWriter: a complete,
// synced file that is still hidden.
type pendingFile struct {
	Pending string
	Final   string
}

// PrepareCommit implements connector.Committer: the lines written since
// the last commit are flushed, synced and moved to a hidden pending file,
// and a new in-progress file takes the next lines. Commit publishes the
// pending file as part-<subtask>-<attempt>-<n>-<run>, where run is random
// per writer so that runs sharing a directory never collide. A checkpoint without new
// lines prepares nothing; the end of the input always prepares a file, so
// every subtask publishes at least one.
func (w *TextWriter[T]) PrepareCommit(checkpointID int64) ([]byte, error) {
	if err := w.Flush(); err != nil {
		return nil, err
	}
	w.transactional = true
	final := checkpointID == 1<<63-1
	if w.written == 0 && !final {
		return json.Marshal([]pendingFile(nil))
	}
	if err := w.f.Close(); err != nil {
		w.err = fmt.Errorf("file: close %s: %w", w.tmp, unwrapPath(err))
		return nil, w.err
	}
	dir := filepath.Dir(w.tmp)
	p := pendingFile{
		Pending: filepath.Join(dir, fmt.Sprintf(".part-%d-%d-%d-%s.pending", w.subtask, w.attempt, w.seq, w.run)),
		Final:   filepath.Join(dir, fmt.Sprintf("part-%d-%d-%d-%s", w.subtask, w.attempt, w.seq, w.run)),
	}
	w.seq++
	if w.remote != nil {
		// Staged under the hidden name in the store; the committable
		// names the objects relative to the sink's directory.
		if _, err := w.remote.Upload(w.ctx, filepath.Base(p.Pending), w.tmp); err != nil {
			w.err = fmt.Errorf("file: %w", err)
			return nil, w.err
		}
		p.Pending, p.Final = filepath.Base(p.Pending), filepath.Base(p.Final)
	} else if err := os.Rename(w.tmp, p.Pending); err != nil {
		w.err = fmt.Errorf("file: %w", err)
		return nil, w.err
	}
	f, err := os.OpenFile(w.tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		w.err = fmt.Errorf("file: %w", err)
		return nil, w.err
	}
	w.f = f
	w.w.Reset(f)
	w.written = 0
	return json.Marshal([]pendingFile{p})
}

// Commit implements connector.Committer: it renames pending files to their
// final names. A transaction committed before (its pending file is gone
// and its final file exists) is skipped, which makes recovery idempotent.
func (w *TextWriter[T]) Commit(committables [][]byte) error {
	for _, c := range committables {
		files, err := decodeTransaction(c)
		if err != nil {
			return err
		}
		for _, p := range files {
			if w.remote != nil {
				if err := publishObject(w.ctx, w.remote, p.Pending, p.Final); err != nil {
					return err
				}
				continue
			}
			err := os.Rename(p.Pending, p.Final)
			if err == nil {
				syncDir(filepath.Dir(p.Final))
				continue
			}
			if errors.Is(err, os.ErrNotExist) {
				if _, serr := os.Stat(p.Final); serr == nil {
					continue // committed before
				}
				return fmt.Errorf("file: commit %s: the pending file is gone and %s does not exist", p.Pending, p.Final)
			}
			return fmt.Errorf("file: commit: %w", err)
		}
	}
	return nil
}

// decodeTransaction parses a committable of PrepareCommit. Commit renames
// its files, so it accepts only what PrepareCommit writes: a hidden
// pending part file and its visible name in the same directory.
func decodeTransaction(data []byte) ([]pendingFile, error) {
	var files []pendingFile
	if err := json.Unmarshal(data, &files); err != nil {
		return nil, fmt.Errorf("file: decode transaction: %w", err)
	}
	for _, p := range files {
		pending, final := filepath.Base(p.Pending), filepath.Base(p.Final)
		if !strings.HasPrefix(pending, ".part-") || !strings.HasSuffix(pending, ".pending") ||
			"."+final+".pending" != pending || filepath.Dir(p.Pending) != filepath.Dir(p.Final) {
			return nil, fmt.Errorf("file: decode transaction: %q -> %q is not a pending part file and its final name", p.Pending, p.Final)
		}
	}
	return files, nil
}

// publishObject copies a staged object to its final name and deletes the
// staged one: an object store has no rename. A crash between the two
// leaves both, and the commit after the recovery finds the final object
// and deletes the staged one again.
func publishObject(ctx context.Context, loc *storage.Location, staged, final string) error {
	ok, err := loc.Exists(ctx, staged)
	if err != nil {
		return fmt.Errorf("file: commit: %w", err)
	}
	if !ok {
		if done, err := loc.Exists(ctx, final); err == nil && done {
			return nil // committed before
		}
		return fmt.Errorf("file: commit %s: the staged object is gone and %s does not exist", loc.URI(staged), loc.URI(final))
	}
	if err := loc.Copy(ctx, final, staged); err != nil {
		return fmt.Errorf("file: commit: %w", err)
	}
	if err := loc.Delete(ctx, staged); err != nil {
		return fmt.Errorf("file: commit: %w", err)
	}
	return nil
}
