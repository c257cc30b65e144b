package file

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ReadLines returns the lines of the part files of a directory written by
// Text, without their line endings. The files are taken in subtask order
// (part-2 before part-10), which is name order for fewer than ten subtasks;
// other names starting with "part-" follow in name order. In-progress and
// other hidden files are ignored, so a directory being written to yields
// only the output of finished subtasks.
func ReadLines(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	type part struct {
		name    string
		subtask int // -1 if the name has no number after "part-"
	}
	var parts []part
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "part-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			n = -1
		}
		parts = append(parts, part{e.Name(), n})
	}
	slices.SortFunc(parts, func(a, b part) int {
		// Numbered parts first; the rest, if any, by name.
		if (a.subtask < 0) != (b.subtask < 0) {
			return cmp.Compare(b.subtask, a.subtask) // the numbered one first
		}
		return cmp.Or(cmp.Compare(a.subtask, b.subtask), strings.Compare(a.name, b.name))
	})
	var lines []string
	br := bufio.NewReaderSize(nil, bufferSize)
	for _, p := range parts {
		lines, err = appendLines(lines, filepath.Join(dir, p.name), br)
		if err != nil {
			return nil, err
		}
	}
	return lines, nil
}

func appendLines(lines []string, path string, br *bufio.Reader) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	defer f.Close()
	br.Reset(f)
	var off int64
	for {
		line, err := br.ReadString('\n')
		off += int64(len(line))
		if len(line) > 0 {
			if strings.HasSuffix(line, "\n") {
				line = strings.TrimSuffix(line[:len(line)-1], "\r")
			}
			lines = append(lines, line)
		}
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return nil, fmt.Errorf("file: read %s at offset %d: %w", path, off, unwrapPath(err))
		}
	}
}
