package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Option is a typed handle on one configuration key. Options are declared
// only in this package's catalog, which supplies their parsing and
// validation; an Option built elsewhere can Get but not Set.
//
// The kinds are: int (Integer), bool (Boolean), string (String and Enum),
// time.Duration (Duration) and int64 (MemorySize, in bytes). An Enum
// option's values are strings restricted to a fixed list; input is matched
// case-insensitively and stored in the list's spelling, so Get always
// returns one of the listed values.
type Option[T any] struct {
	Key         string
	Default     T
	Description string
	kind        kind[T]
}

// kind is the parsing behaviour of an option. parse validates the option's
// range too, so every way of setting a value goes through it.
type kind[T any] struct {
	name   string   // type name shown in the docs
	values []string // allowed values of an Enum
	parse  func(string) (T, error)
	format func(T) string // canonical form; parse(format(v)) == v
}

// Get returns the option's value in c, or its Default when c is nil or the
// key is not set.
func (o Option[T]) Get(c *Configuration) T {
	if v, ok := c.lookup(o.Key); ok {
		if t, ok := v.(T); ok {
			return t
		}
	}
	return o.Default
}

// Set stores v in c in canonical form. It panics if v is outside the
// option's range (an Int below its minimum, an Enum value not in its list):
// unlike user input, a programmatic value that the option rejects is a bug.
func (o Option[T]) Set(c *Configuration, v T) {
	if o.kind.format == nil {
		panic(fmt.Sprintf("config: option %q is not declared in the catalog", o.Key))
	}
	if err := c.Set(o.Key, o.kind.format(v)); err != nil {
		panic(err)
	}
}

// OptionInfo describes a catalog option for documentation and tooling.
type OptionInfo struct {
	Key         string
	Type        string // Integer, Boolean, String, Duration, MemorySize or Enum
	Default     string // canonical string form of the default; "" for an empty String
	Description string
	Values      []string // the allowed values of an Enum, canonical spelling; nil otherwise
}

// catalogOption is what the catalog needs from an Option regardless of T.
type catalogOption interface {
	info() OptionInfo
	parseValue(s string) (text string, v any, err error)
}

func (o Option[T]) info() OptionInfo {
	return OptionInfo{
		Key:         o.Key,
		Type:        o.kind.name,
		Default:     o.kind.format(o.Default),
		Description: o.Description,
		Values:      slices.Clone(o.kind.values),
	}
}

func (o Option[T]) parseValue(s string) (string, any, error) {
	v, err := o.kind.parse(s)
	if err != nil {
		return "", nil, err
	}
	return o.kind.format(v), v, nil
}

// Options returns every option of the catalog, sorted by key.
func Options() []OptionInfo {
	infos := make([]OptionInfo, 0, len(catalog))
	for _, o := range catalog {
		infos = append(infos, o.info())
	}
	slices.SortFunc(infos, func(a, b OptionInfo) int { return strings.Compare(a.Key, b.Key) })
	return infos
}

// intOption declares an Integer option accepting values in [lo, hi].
func intOption(key string, def, lo, hi int, desc string) Option[int] {
	expect := fmt.Sprintf("expected an integer >= %d", lo)
	if hi != math.MaxInt {
		expect = fmt.Sprintf("expected an integer between %d and %d", lo, hi)
	}
	return Option[int]{Key: key, Default: def, Description: desc, kind: kind[int]{
		name: "Integer",
		parse: func(s string) (int, error) {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < lo || n > hi {
				return 0, errors.New(expect)
			}
			return n, nil
		},
		format: strconv.Itoa,
	}}
}

// floatOption declares a Double option accepting values >= lo.
func floatOption(key string, def, lo float64, desc string) Option[float64] {
	expect := fmt.Sprintf("expected a number >= %g", lo)
	return Option[float64]{Key: key, Default: def, Description: desc, kind: kind[float64]{
		name: "Double",
		parse: func(s string) (float64, error) {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || f < lo || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, errors.New(expect)
			}
			return f, nil
		},
		format: func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) },
	}}
}

func boolOption(key string, def bool, desc string) Option[bool] {
	return Option[bool]{Key: key, Default: def, Description: desc, kind: kind[bool]{
		name: "Boolean",
		parse: func(s string) (bool, error) {
			switch s = strings.TrimSpace(s); {
			case strings.EqualFold(s, "true"):
				return true, nil
			case strings.EqualFold(s, "false"):
				return false, nil
			}
			return false, errors.New("expected true or false")
		},
		format: strconv.FormatBool,
	}}
}

// stringOption declares a String option; its value is kept verbatim.
func stringOption(key, def, desc string) Option[string] {
	return Option[string]{Key: key, Default: def, Description: desc, kind: kind[string]{
		name:   "String",
		parse:  func(s string) (string, error) { return s, nil },
		format: func(s string) string { return s },
	}}
}

// enumOption declares an Enum option. values are the canonical spellings.
func enumOption(key, def string, values []string, desc string) Option[string] {
	expect := "expected one of " + strings.Join(values, ", ")
	return Option[string]{Key: key, Default: def, Description: desc, kind: kind[string]{
		name:   "Enum",
		values: values,
		parse: func(s string) (string, error) {
			s = strings.TrimSpace(s)
			for _, v := range values {
				if strings.EqualFold(s, v) {
					return v, nil
				}
			}
			return "", errors.New(expect)
		},
		format: func(s string) string { return s },
	}}
}

// durationOption declares a non-negative Duration option. With disable set
// it also accepts -1 ms (written "-1" or "-1 ms"), which the option's
// description gives a "switched off" meaning.
func durationOption(key string, def time.Duration, disable bool, desc string) Option[time.Duration] {
	expect := "expected a duration >= 0"
	if disable {
		expect += ", or -1 ms to disable"
	}
	return Option[time.Duration]{Key: key, Default: def, Description: desc, kind: kind[time.Duration]{
		name: "Duration",
		parse: func(s string) (time.Duration, error) {
			d, err := parseDuration(s)
			if err != nil {
				return 0, err
			}
			if d < 0 && !(disable && d == -time.Millisecond) {
				return 0, errors.New(expect)
			}
			return d, nil
		},
		format: formatDuration,
	}}
}

// memoryOption declares a MemorySize option of at least lo bytes.
func memoryOption(key string, def, lo int64, desc string) Option[int64] {
	expect := fmt.Sprintf("expected a memory size >= %s", formatMemory(lo))
	return Option[int64]{Key: key, Default: def, Description: desc, kind: kind[int64]{
		name: "MemorySize",
		parse: func(s string) (int64, error) {
			n, err := parseMemory(s)
			if err != nil {
				return 0, err
			}
			if n < lo {
				return 0, errors.New(expect)
			}
			return n, nil
		},
		format: formatMemory,
	}}
}

type unit struct {
	name string
	size int64
}

// durationUnits maps Flink's duration unit spellings to their size. A bare
// number means milliseconds, as in Flink.
var durationUnits = map[string]time.Duration{
	"":   time.Millisecond,
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second,
	"second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute,
	"minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// durationFormat lists the units used for the canonical form, largest first.
var durationFormat = []unit{
	{"d", int64(24 * time.Hour)}, {"h", int64(time.Hour)}, {"min", int64(time.Minute)},
	{"s", int64(time.Second)}, {"ms", int64(time.Millisecond)}, {"us", int64(time.Microsecond)},
	{"ns", 1},
}

var errDuration = errors.New(`expected a duration such as "100 ms", "10 s", "1 min" or "1m30s"`)

// parseDuration accepts Flink's form, an integer with an optional unit
// ("100 ms", "10s", "1 min", "1d", "500" = 500 ms), and Go's
// time.ParseDuration form ("1m30s", "1.5h").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if num, rest := splitNumber(s); num != "" {
		if mult, ok := durationUnits[strings.ToLower(strings.TrimSpace(rest))]; ok {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n > math.MaxInt64/int64(mult) || n < math.MinInt64/int64(mult) {
				return 0, errors.New("duration out of range")
			}
			return time.Duration(n) * mult, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errDuration
	}
	return d, nil
}

// formatDuration writes d as an integer in the largest unit that divides it
// exactly, e.g. "200 ms", "90 s", "1 min".
func formatDuration(d time.Duration) string {
	return formatUnits(int64(d), durationFormat, "ms")
}

// memoryUnits maps memory unit spellings to their size. Like Flink, "kb"
// and friends are binary units: 1 kb = 1024 bytes. A bare number means
// bytes.
var memoryUnits = map[string]int64{
	"": 1, "b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40, "tebibytes": 1 << 40,
}

var memoryFormat = []unit{{"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"bytes", 1}}

var errMemory = errors.New(`expected a memory size such as "32 kb", "64m" or "1 gb"`)

// parseMemory parses a non-negative integer with an optional unit,
// case-insensitively: "32kb", "32 KiB", "64m", "1 gb", "1024".
func parseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, rest := splitNumber(s)
	mult, ok := memoryUnits[strings.ToLower(strings.TrimSpace(rest))]
	if num == "" || num[0] == '-' || num[0] == '+' || !ok {
		return 0, errMemory
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, errors.New("memory size out of range")
	}
	return n * mult, nil
}

// formatMemory writes n bytes in the largest unit that divides it exactly,
// e.g. "32 kb", "1000 bytes".
func formatMemory(n int64) string {
	return formatUnits(n, memoryFormat, "bytes")
}

// splitNumber splits s into a leading optionally signed integer and the
// rest. num is "" when s does not start with one.
func splitNumber(s string) (num, rest string) {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	if j == i {
		return "", s
	}
	return s[:j], s[j:]
}

// formatUnits writes n as "<integer> <unit>" with the largest of units
// (sorted largest first, ending with size 1) that divides n exactly, or
// "0 <zero>" for zero.
func formatUnits(n int64, units []unit, zero string) string {
	if n == 0 {
		return "0 " + zero
	}
	sign, mag := "", uint64(n)
	if n < 0 {
		sign, mag = "-", -mag // the magnitude of math.MinInt64 fits a uint64
	}
	for _, u := range units {
		if mag%uint64(u.size) == 0 {
			return sign + strconv.FormatUint(mag/uint64(u.size), 10) + " " + u.name
		}
	}
	panic("unreachable: the last unit has size 1")
}
