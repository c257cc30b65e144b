// Package file reads and writes newline-delimited text files.
//
// The source cuts files into byte ranges so that a single large file is read
// by several subtasks at once, in the manner of Hadoop's TextInputFormat; the
// sink writes one file per subtask and publishes it with an atomic rename so
// that a reader of the output directory never sees half-written files.
package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirproject/weir/connector"
)

// minSplitSize keeps the automatic split size large enough that the cost of
// opening a file and skipping a partial line stays small next to the reading.
const minSplitSize = 1 << 20

// splitSlop lets the last split of a file grow by up to 10% rather than
// leaving a tiny tail split that costs a file open for a few bytes (Hadoop's
// SPLIT_SLOP).
const splitSlop = 1.1

// LineSource is a bounded source of the lines of text files. Build it with
// Lines.
type LineSource struct {
	paths     []string
	splitSize int64 // 0: derive from the input size and the parallelism
}

var _ connector.Source[string] = (*LineSource)(nil)

// Lines returns a bounded source of the lines of the given files and
// directories. A directory stands for every regular file below it, except
// those whose name, or the name of a directory on the way, starts with "."
// or "_": that is where writers such as TextSink keep unfinished files and
// markers. Each line is emitted once, without its "\n" or "\r\n".
//
// The paths are resolved when the job starts (in Splits), not here, so that
// a job can be built before its input exists.
func Lines(paths ...string) *LineSource {
	return &LineSource{paths: append([]string(nil), paths...)}
}

// SplitSize fixes the size in bytes of the ranges files are cut into,
// instead of deriving it from the input size and the parallelism; n <= 0
// restores the derived size. It exists mainly so that tests can exercise
// split boundaries on small files. It returns s.
func (s *LineSource) SplitSize(n int64) *LineSource {
	s.splitSize = max(n, 0)
	return s
}

// Boundedness reports connector.Bounded: files end.
func (s *LineSource) Boundedness() connector.Boundedness { return connector.Bounded }

// FileSplit is a byte range [Start, End) of one file. It owns the lines
// whose first byte lies in the range; the last of them may run past End.
//
// Offset is the position of the next line to read. It equals Start while
// nothing of the split has been read yet, and it always falls on the start
// of a line (or on Start) so that a reader restored from a checkpoint resumes
// right after the last line emitted before it. A split with Offset >= End is
// finished.
type FileSplit struct {
	Path       string
	Start, End int64
	Offset     int64
}

// SplitID identifies the split by file and start, which never change as the
// split is read.
func (s *FileSplit) SplitID() string { return fmt.Sprintf("%s:%d", s.Path, s.Start) }

func (s *FileSplit) String() string {
	return fmt.Sprintf("%s[%d,%d)@%d", s.Path, s.Start, s.End, s.Offset)
}

// Splits lists the files and cuts them into ranges. Without SplitSize the
// range size is max(1 MiB, total/(2*parallelism)), where total is the size
// of all files together: two splits per subtask on average leave room to
// balance uneven files, and the total rather than each file's size keeps a
// directory of many files from exploding into thousands of tiny splits.
// Empty files have no lines and get no split.
func (s *LineSource) Splits(ctx context.Context, parallelism int) ([]connector.Split, error) {
	if parallelism < 1 {
		return nil, fmt.Errorf("file: parallelism %d, want at least 1", parallelism)
	}
	if len(s.paths) == 0 {
		return nil, errors.New("file: Lines has no paths")
	}
	files, err := listFiles(ctx, s.paths)
	if err != nil {
		return nil, err
	}
	size := s.splitSize
	slop := 1.0
	if size == 0 {
		var total int64
		for _, f := range files {
			total += f.size
		}
		size = max(minSplitSize, total/(2*int64(parallelism)))
		slop = splitSlop
	}
	var splits []connector.Split
	for _, f := range files {
		for start := int64(0); start < f.size; {
			end := f.size
			if float64(f.size-start) > slop*float64(size) {
				end = start + size
			}
			splits = append(splits, &FileSplit{Path: f.path, Start: start, End: end, Offset: start})
			start = end
		}
	}
	return splits, nil
}

type fileInfo struct {
	path string
	size int64
}

// listFiles expands the paths in order, each directory in lexical order, so
// that the split list, and with it the assignment of splits to subtasks, is
// the same on every run. A file named twice is listed once, since split IDs
// must be unique.
func listFiles(ctx context.Context, paths []string) ([]fileInfo, error) {
	var files []fileInfo
	seen := make(map[string]bool)
	add := func(path string, size int64) {
		if !seen[path] {
			seen[path] = true
			files = append(files, fileInfo{path, size})
		}
	}
	for _, root := range paths {
		if isRemote(root) {
			objs, err := listRemote(ctx, root)
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				add(o.path, o.size)
			}
			continue
		}
		root = filepath.Clean(localPath(root))
		fi, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		if !fi.IsDir() {
			if !fi.Mode().IsRegular() {
				return nil, fmt.Errorf("file: %s is not a regular file or directory", root)
			}
			add(root, fi.Size())
			continue
		}
		// The trailing separator makes WalkDir follow a root that is a
		// link to a directory; the paths it reports are still clean.
		walkRoot := root
		if !strings.HasSuffix(walkRoot, string(filepath.Separator)) {
			walkRoot += string(filepath.Separator)
		}
		err = filepath.WalkDir(walkRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if path != walkRoot && hidden(d.Name()) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			// Follow links to files, but not to directories, which could
			// form cycles.
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			if fi.Mode().IsRegular() {
				add(path, fi.Size())
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("file: list %s: %w", root, err)
		}
	}
	return files, nil
}

func hidden(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// NewReader returns a reader for the splits of one subtask. Its methods must
// be called from one goroutine at a time, as connector.SplitReader says.
func (s *LineSource) NewReader(ctx context.Context, sc connector.SplitContext) (connector.SplitReader[string], error) {
	return &lineReader{ctx: ctx}, nil
}
