package file

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/storage"
)

// TextSink writes records as lines of text, one file per subtask. Build it
// with Text.
type TextSink[T any] struct {
	dir    string
	format func(T) string
}

var _ connector.Sink[int] = (*TextSink[int])(nil)

// Text returns a sink that writes format(v) and "\n" for every record v to
// the file dir/part-<subtask>. A record whose text contains "\n" becomes
// several lines.
//
// While a subtask runs, its output goes to the hidden file
// dir/.part-<subtask>-<attempt>.inprogress, which Lines and ReadLines
// ignore; only a subtask that ends its input successfully renames it to
// part-<subtask>. So a directory holds either a subtask's complete output or
// none of it, and a restarted attempt never collides with the leftovers of
// an earlier one.
//
// A nil format formats like fmt.Sprint. The choice of how is made once,
// here, rather than per record: strings are written as they are, and
// non-pointer types with a String method call it directly.
func Text[T any](dir string, format func(T) string) *TextSink[T] {
	if format == nil {
		format = defaultFormat[T]()
	}
	return &TextSink[T]{dir: dir, format: format}
}

func defaultFormat[T any]() func(T) string {
	var zero T
	switch any(zero).(type) {
	case string:
		return func(v T) string { return any(v).(string) }
	case fmt.Stringer:
		// fmt.Sprint also recovers from the panic of a String method
		// called on a nil pointer and prints "<nil>"; keep that for
		// pointers.
		if reflect.TypeFor[T]().Kind() != reflect.Pointer {
			return func(v T) string { return any(v).(fmt.Stringer).String() }
		}
	}
	return func(v T) string { return fmt.Sprint(v) }
}

// NewWriter creates the directory and the subtask's in-progress file. It
// also removes the in-progress files that earlier attempts of the same
// subtask left behind when they died without closing.
func (s *TextSink[T]) NewWriter(ctx context.Context, sc connector.SinkContext) (connector.SinkWriter[T], error) {
	dir := localPath(s.dir)
	var remote *storage.Location
	if isRemote(s.dir) {
		loc, err := storage.Open(ctx, s.dir)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		// The file is written on local disk and uploaded whole: an
		// object store cannot append to an object or rename it.
		if dir, err = os.MkdirTemp("", "weir-text-"); err != nil {
			return nil, fmt.Errorf("file: staging directory for %s: %w", s.dir, err)
		}
		remote = loc
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		removeStale(dir, sc.Subtask, sc.AttemptNumber)
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".part-%d-%d.inprogress", sc.Subtask, sc.AttemptNumber))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	var token [4]byte
	_, _ = rand.Read(token[:])
	return &TextWriter[T]{
		format:  s.format,
		run:     hex.EncodeToString(token[:]),
		subtask: sc.Subtask,
		attempt: sc.AttemptNumber,
		tmp:     tmp,
		final:   filepath.Join(dir, fmt.Sprintf("part-%d", sc.Subtask)),
		remote:  remote,
		ctx:     context.WithoutCancel(ctx),
		f:       f,
		w:       bufio.NewWriterSize(f, bufferSize),
	}, nil
}

// removeStale is best effort: a leftover file wastes space but is hidden
// from readers, so failing to remove it is no reason to fail the job.
func removeStale(dir string, subtask, attempt int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := fmt.Sprintf(".part-%d-", subtask)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		a, ok := strings.CutSuffix(rest, ".inprogress")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(a); err == nil && n < attempt {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// TextWriter is the writer of one TextSink subtask; TextSink.NewWriter
// returns a *TextWriter. Besides the connector.SinkWriter methods it has
// Abort.
type TextWriter[T any] struct {
	format func(T) string
	// subtask, attempt and seq name the files of transactions
	// (PrepareCommit); written counts the lines since the last one.
	subtask, attempt, seq int
	written               int
	// run makes transaction file names unique when several runs (a job
	// resumed from a checkpoint, say) write to one directory.
	run string
	// transactional is set by the first PrepareCommit: from then on only
	// Commit publishes, and Close discards the in-progress file.
	transactional bool
	tmp           string // the in-progress file
	final         string // what it becomes
	f             *os.File
	w             *bufio.Writer
	// remote is the object store the files go to; tmp and final are then
	// in a local staging directory, and final is uploaded, not renamed.
	remote *storage.Location
	ctx    context.Context // for the object store; never cancelled
	// flushed: everything written has been flushed and synced, so the
	// file is complete if the input has ended.
	flushed bool
	err     error // first write or flush error; the file is broken
	closed  bool
}

// Write buffers the line; it reaches the file when the buffer fills or on
// Flush.
func (w *TextWriter[T]) Write(v T, _ int64) error {
	if w.closed {
		return fmt.Errorf("file: write %s: writer closed", w.tmp)
	}
	w.flushed = false
	if w.err != nil {
		return w.err
	}
	w.written++
	w.w.WriteString(w.format(v))
	if err := w.w.WriteByte('\n'); err != nil {
		w.err = fmt.Errorf("file: write %s: %w", w.tmp, unwrapPath(err))
		return w.err
	}
	return nil
}

// Flush writes out the buffer and syncs the file, so that once the input
// has ended and Close renames it, the part file survives a crash of the
// machine with its content.
func (w *TextWriter[T]) Flush() error {
	if w.closed {
		return fmt.Errorf("file: flush %s: writer closed", w.tmp)
	}
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("file: write %s: %w", w.tmp, unwrapPath(err))
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("file: sync %s: %w", w.tmp, unwrapPath(err))
		return w.err
	}
	w.flushed = true
	return nil
}

// Close publishes the in-progress file as the part file if the last call
// before it was a successful Flush; otherwise, after a failure or with
// records written since the last Flush, it removes the in-progress file.
//
// The rule cannot tell a Flush at the end of the input from a Flush for a
// checkpoint: a job that fails right after a checkpoint, with no record
// written since, would publish its partial output. A runtime that knows the
// job failed calls Abort instead.
func (w *TextWriter[T]) Close() error {
	if w.closed {
		return nil
	}
	if !w.flushed || w.err != nil || w.transactional {
		return w.Abort()
	}
	w.closed = true
	if err := w.f.Close(); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("file: close %s: %w", w.tmp, unwrapPath(err))
	}
	if w.remote != nil {
		defer os.RemoveAll(filepath.Dir(w.tmp))
		if _, err := w.remote.Upload(w.ctx, filepath.Base(w.final), w.tmp); err != nil {
			return fmt.Errorf("file: %w", err)
		}
		return nil
	}
	if err := os.Rename(w.tmp, w.final); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("file: %w", err)
	}
	syncDir(filepath.Dir(w.final))
	return nil
}

// syncDir makes a rename durable. Best effort: some file systems cannot
// sync directories, and the rename has happened either way.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Abort closes the writer without publishing anything: it removes the
// in-progress file. It is for a runtime that knows the job failed; Close
// after Abort does nothing.
func (w *TextWriter[T]) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.f.Close() // the file is removed anyway
	if w.remote != nil {
		return os.RemoveAll(filepath.Dir(w.tmp))
	}
	if err := os.Remove(w.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("file: %w", err)
	}
	return nil
}
