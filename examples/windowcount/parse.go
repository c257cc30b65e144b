package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/weirproject/weir/stream"
)

// Event is one valid line of the input: key,timestamp_ms[,value].
type Event struct {
	Key       string
	Timestamp int64 // event time, milliseconds since the epoch
	Value     float64
}

// maxAbsTimestamp bounds the timestamps accepted, so that window bounds,
// watermarks and lateness deadlines computed from them cannot overflow.
const maxAbsTimestamp = 1 << 62

// parseLine parses one CSV line "key,timestamp_ms[,value]"; spaces around
// the fields are ignored. A blank line has no event (ok false, err nil).
func parseLine(line string) (ev Event, ok bool, err error) {
	if strings.TrimSpace(line) == "" {
		return Event{}, false, nil
	}
	fields := strings.Split(line, ",")
	if len(fields) < 2 || len(fields) > 3 {
		return Event{}, false, fmt.Errorf("%d fields in %q, want key,timestamp_ms[,value]", len(fields), line)
	}
	ev.Key = strings.TrimSpace(fields[0])
	if ev.Key == "" {
		return Event{}, false, fmt.Errorf("empty key in %q", line)
	}
	ts := strings.TrimSpace(fields[1])
	ev.Timestamp, err = strconv.ParseInt(ts, 10, 64)
	if err != nil || ev.Timestamp < -maxAbsTimestamp || ev.Timestamp > maxAbsTimestamp {
		return Event{}, false, fmt.Errorf("timestamp %q in %q is not an integer number of milliseconds within ±2^62", ts, line)
	}
	if len(fields) == 3 {
		v := strings.TrimSpace(fields[2])
		if ev.Value, err = strconv.ParseFloat(v, 64); err != nil {
			return Event{}, false, fmt.Errorf("value %q in %q is not a number", v, line)
		}
	}
	return ev, true, nil
}

// errMalformed marks the error of a malformed input line.
var errMalformed = errors.New("malformed line")

// parser turns the lines of the input into events. It must run at
// parallelism 1, right behind a source that reads the input in order, so
// that counting the lines it sees gives their line numbers.
type parser struct {
	input         string // the file name, for errors
	skipMalformed bool

	line    int64 // the number of the line being parsed (1-based)
	skipped int64
}

var (
	_ stream.ProcessFunction[string, Event] = (*parser)(nil)
	_ stream.Opener                         = (*parser)(nil)
	_ stream.Finisher[Event]                = (*parser)(nil)
)

func (p *parser) Open(ctx *stream.Context) error {
	if ctx.Parallelism() != 1 {
		return fmt.Errorf("the parser runs at parallelism %d, but it can only number lines at parallelism 1", ctx.Parallelism())
	}
	p.line, p.skipped = 0, 0
	return nil
}

func (p *parser) ProcessElement(line string, _ *stream.Context, out stream.Collector[Event]) error {
	p.line++
	ev, ok, err := parseLine(line)
	switch {
	case err != nil && p.skipMalformed:
		p.skipped++
	case err != nil:
		return fmt.Errorf("%s, line %d: %w: %w", p.input, p.line, errMalformed, err)
	case ok:
		out.Collect(ev)
	}
	return nil
}

// Finish reports how many lines were skipped.
func (p *parser) Finish(*stream.Context, stream.Collector[Event]) error {
	if p.skipMalformed {
		fmt.Fprintf(os.Stderr, "skipped %d malformed lines\n", p.skipped)
	}
	return nil
}
