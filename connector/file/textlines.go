package file

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// TextLines is the plain-text format of the format source: every line of
// a file is a record, without its "\n" (and a "\r" before it); positions
// are byte offsets, so a restored reader continues after the last line
// it emitted. It is what Lines reads, for the continuous source:
//
//	file.Source[string](file.TextLines{}, dir).MonitorInterval(time.Second)
type TextLines struct{}

var _ Decoding[string] = TextLines{}

// NewDecoder implements Decoding.
func (TextLines) NewDecoder(in Input, pos int64) (Decoder[string], error) {
	if pos < 0 || pos > in.Size {
		return nil, errors.New("position outside the file")
	}
	r := bufio.NewReaderSize(io.NewSectionReader(in.R, pos, in.Size-pos), 64<<10)
	return &textDecoder{r: r, pos: pos}, nil
}

type textDecoder struct {
	r   *bufio.Reader
	pos int64
}

func (d *textDecoder) Next() (string, error) {
	line, err := d.r.ReadString('\n')
	if err == io.EOF && line == "" {
		return "", io.EOF
	}
	if err != nil && err != io.EOF {
		return "", err
	}
	// A last line without "\n" is a line too, as Lines reads it.
	d.pos += int64(len(line))
	line = strings.TrimSuffix(line, "\n")
	return strings.TrimSuffix(line, "\r"), nil
}

func (d *textDecoder) Pos() int64   { return d.pos }
func (d *textDecoder) Close() error { return nil }
