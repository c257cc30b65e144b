package file

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/weirproject/weir/connector"
)

const (
	// bufferSize is the read buffer: large enough that a typical line is
	// handed out as a slice of the buffer, without copying it together.
	bufferSize = 64 << 10
	// pollLines and pollBytes bound the work of one Poll so that the task
	// gets back to its mailbox (barriers, timers, cancellation) often. The
	// byte bound keeps long lines from making a Poll slow.
	pollLines = 256
	pollBytes = 64 << 10
	// pollTime bounds a Poll's time too, checked every pollTimeCheck
	// lines: the lines go down the chained operators inside Poll, and a
	// slow chain (a throttle, a remote call) would otherwise hold a
	// checkpoint's trigger for all 256 of them.
	pollTime      = 10 * time.Millisecond
	pollTimeCheck = 8
	// maxKeptScratch: a buffer grown for a huge line is dropped afterwards
	// rather than held for the rest of the job.
	maxKeptScratch = 1 << 20
)

// lineReader reads its splits one after the other, one file open at a time.
type lineReader struct {
	ctx   context.Context // the reader's life, for reads from object stores
	queue []*FileSplit    // splits not yet started, in the order added

	// The split being read; split is nil when none is.
	split    *FileSplit
	f        io.ReadCloser
	br       *bufio.Reader
	pos      int64  // offset of the next byte br hands out
	skipping bool   // discarding the line that started before split.Start
	partial  []byte // the start of a line longer than the buffer
	closed   bool
}

// AddSplits queues splits. It copies them, so that the caller's values, and
// the splits returned by an earlier Snapshot, do not change as reading
// proceeds.
func (r *lineReader) AddSplits(splits []connector.Split) error {
	if r.closed {
		return errors.New("file: AddSplits on a closed reader")
	}
	add := make([]*FileSplit, 0, len(splits))
	for _, s := range splits {
		var sp FileSplit
		switch s := s.(type) {
		case *FileSplit:
			if s == nil {
				return fmt.Errorf("%w: nil *file.FileSplit", connector.ErrUnsupportedSplit)
			}
			sp = *s
		default:
			return fmt.Errorf("%w: %T (want *file.FileSplit)", connector.ErrUnsupportedSplit, s)
		}
		if sp.Start < 0 || sp.End < sp.Start {
			return fmt.Errorf("file: invalid split %v", &sp)
		}
		// A hand-made split may leave Offset zero; it means not started.
		sp.Offset = max(sp.Offset, sp.Start)
		add = append(add, &sp)
	}
	r.queue = append(r.queue, add...)
	return nil
}

// Poll emits up to pollLines lines or about pollBytes bytes. It returns
// EndOfInput, possibly after emitting lines, once every split added so far
// is finished.
func (r *lineReader) Poll(ctx context.Context, out connector.Output[string]) (connector.ReadStatus, error) {
	if r.closed {
		return 0, errors.New("file: Poll on a closed reader")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	lines, n := 0, 0
	start := time.Now()
	// The bounds are checked between lines only: a line longer than the
	// buffer, or the partial line a split starts with, is read to its end
	// in one Poll. That costs promptness on huge lines but guarantees that
	// every Poll moves Offset, so a job restored from a checkpoint taken
	// after every Poll still makes progress.
	for r.skipping || len(r.partial) > 0 || lines < pollLines && n < pollBytes {
		if r.split == nil {
			if len(r.queue) == 0 {
				return connector.EndOfInput, nil
			}
			if err := r.open(); err != nil {
				return 0, err
			}
			continue
		}
		chunk, err := r.br.ReadSlice('\n')
		r.pos += int64(len(chunk))
		n += len(chunk)
		switch {
		case err == nil, err == io.EOF && len(r.partial)+len(chunk) > 0 && !r.skipping:
			// A whole line, or the last line of a file without a
			// final newline.
			if r.skipping {
				r.skipping = false
			} else {
				out.Collect(r.line(chunk))
				lines++
				if lines%pollTimeCheck == 0 && time.Since(start) >= pollTime {
					// Ends the loop once the line's bookkeeping below is
					// done: the bounds are checked between lines.
					lines = pollLines
				}
			}
			r.split.Offset = r.pos
			if err == io.EOF || r.pos >= r.split.End {
				r.finish()
			}
		case err == bufio.ErrBufferFull:
			if !r.skipping {
				r.partial = append(r.partial, chunk...)
			} else if r.pos+1 >= r.split.End {
				// No '\n' in [Start-1, End-1): the split lies inside
				// a line of the split before and owns no line. Stop
				// rather than scan the rest of that line.
				r.split.Offset = r.split.End
				r.finish()
			}
		case err == io.EOF:
			// Nothing left: the file ends exactly at a line boundary,
			// or it got shorter since Splits listed it.
			r.split.Offset = r.split.End
			r.finish()
		default:
			return 0, r.readError(err)
		}
	}
	if r.split == nil && len(r.queue) == 0 {
		return connector.EndOfInput, nil
	}
	return connector.MoreAvailable, nil
}

// line turns the rest of a line into a string without its line ending,
// allocating only the string.
func (r *lineReader) line(chunk []byte) string {
	b := chunk
	if len(r.partial) > 0 {
		r.partial = append(r.partial, chunk...)
		b = r.partial
	}
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	s := string(b)
	if cap(r.partial) > maxKeptScratch {
		r.partial = nil
	} else {
		r.partial = r.partial[:0]
	}
	return s
}

// open starts the next queued split. A split that has not started and does
// not begin the file starts reading one byte early: if that byte ends a
// line, the split's first line begins exactly at Start; otherwise the line
// under Start belongs to the previous split and is skipped.
func (r *lineReader) open() error {
	s := r.queue[0]
	r.queue[0] = nil
	r.queue = r.queue[1:]
	if s.Offset >= s.End {
		return nil // finished before a checkpoint; nothing to read
	}
	pos, skipping := s.Offset, false
	if s.Offset == s.Start && s.Start > 0 {
		pos, skipping = s.Start-1, true
	}
	f, err := openSequential(r.ctx, s.Path, pos)
	if err != nil {
		return err
	}
	if r.br == nil {
		r.br = bufio.NewReaderSize(f, bufferSize)
	} else {
		r.br.Reset(f)
	}
	r.split, r.f, r.pos, r.skipping = s, f, pos, skipping
	r.partial = r.partial[:0]
	return nil
}

// finish ends the current split. The reader stays usable: Snapshot reports
// a finished split no more.
func (r *lineReader) finish() {
	if r.f != nil {
		r.f.Close() // read-only: a close error loses nothing
	}
	r.br.Reset(nil)
	r.split, r.f, r.skipping = nil, nil, false
	r.partial = r.partial[:0]
}

func (r *lineReader) readError(err error) error {
	return fmt.Errorf("file: read %s at offset %d: %w", r.split.Path, r.pos, unwrapPath(err))
}

// unwrapPath drops the *fs.PathError around an error from os so that
// messages that already name the file do not name it twice.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Snapshot returns copies of the unfinished splits, the one being read
// first, with Offset at the first line not yet emitted.
func (r *lineReader) Snapshot() ([]connector.Split, error) {
	if r.closed {
		return nil, errors.New("file: Snapshot on a closed reader")
	}
	splits := make([]connector.Split, 0, len(r.queue)+1)
	if r.split != nil {
		s := *r.split
		splits = append(splits, &s)
	}
	for _, q := range r.queue {
		if q.Offset < q.End {
			s := *q
			splits = append(splits, &s)
		}
	}
	return splits, nil
}

// Close closes the open file, if any.
func (r *lineReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.split != nil {
		r.finish()
	}
	r.queue = nil
	return nil
}
