package main

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// defaultWindow is the tumbling window used when no window flag is given.
const defaultWindow = 10 * time.Second

// windowKind is the kind of event-time window counted in.
type windowKind int

const (
	tumbling windowKind = iota
	sliding
	session
)

func (k windowKind) String() string {
	return [...]string{"tumbling", "sliding", "session"}[k]
}

// settings are the program's own flags.
type settings struct {
	input           string
	window          time.Duration
	slide           time.Duration
	sessionGap      time.Duration
	outOfOrderness  time.Duration
	allowedLateness time.Duration
	skipMalformed   bool

	kind windowKind // set by check
}

// register defines the flags on fs.
func (s *settings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.input, "input", "", "CSV `file` of key,timestamp_ms[,value] lines (default: an embedded sample)")
	fs.DurationVar(&s.window, "window", 0, "tumbling window `size`, or the size of sliding windows with --slide (default 10s unless --session-gap)")
	fs.DurationVar(&s.slide, "slide", 0, "slide of sliding windows (needs --window)")
	fs.DurationVar(&s.sessionGap, "session-gap", 0, "count in event-time session windows with this `gap` instead")
	fs.DurationVar(&s.outOfOrderness, "out-of-orderness", 0, "watermark bound: the watermark trails the largest timestamp seen by this much (and 1 ms)")
	fs.DurationVar(&s.allowedLateness, "allowed-lateness", 0, "keep windows this long after they fired, refiring them for late elements")
	fs.BoolVar(&s.skipMalformed, "skip-malformed", false, "skip malformed lines, and report how many, instead of failing")
}

// check validates the settings once fs is parsed and picks the window
// kind; the error names the offending flags.
func (s *settings) check(fs *flag.FlagSet) error {
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (the input is given with --input)", fs.Arg(0))
	}
	switch {
	case set["session-gap"] && (set["window"] || set["slide"]):
		return errors.New("--session-gap cannot be combined with --window or --slide: choose one kind of window")
	case set["slide"] && !set["window"]:
		return errors.New("--slide needs --window, the size of the sliding windows")
	case set["session-gap"]:
		s.kind = session
	case set["slide"]:
		s.kind = sliding
	default:
		s.kind = tumbling
		if !set["window"] {
			s.window = defaultWindow
		}
	}
	positive := []struct {
		name string
		d    time.Duration
	}{{"window", s.window}, {"slide", s.slide}, {"session-gap", s.sessionGap}}
	for _, p := range positive {
		if set[p.name] && p.d <= 0 {
			return fmt.Errorf("--%s %v must be positive", p.name, p.d)
		}
	}
	if s.outOfOrderness < 0 {
		return fmt.Errorf("--out-of-orderness %v must not be negative", s.outOfOrderness)
	}
	if s.allowedLateness < 0 {
		return fmt.Errorf("--allowed-lateness %v must not be negative", s.allowedLateness)
	}
	for _, name := range []string{"window", "slide", "session-gap", "out-of-orderness", "allowed-lateness"} {
		if d := fs.Lookup(name).Value.(flag.Getter).Get().(time.Duration); d%time.Millisecond != 0 {
			return fmt.Errorf("--%s %v is not a whole number of milliseconds, the unit of the timestamps", name, d)
		}
	}
	if s.kind == sliding && s.slide > s.window {
		return fmt.Errorf("--slide %v is longer than --window %v: the windows would leave gaps", s.slide, s.window)
	}
	return nil
}
