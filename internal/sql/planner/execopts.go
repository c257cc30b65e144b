package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// ExecOptions are the session's table.exec.* and table.optimizer.*
// settings that change how stateful operators run.
type ExecOptions struct {
	// StateTTL (table.exec.state.ttl) is how long the state of a key of a
	// non-windowed stateful operator (group aggregation, regular join,
	// Top-N) lives after it was last written; 0 keeps it for ever.
	StateTTL time.Duration
	// MiniBatch (table.exec.mini-batch.enabled) buffers the input of a
	// group aggregation and applies it per key in bundles of at most
	// MiniBatchSize rows, at least every MiniBatchLatency.
	MiniBatch        bool
	MiniBatchLatency time.Duration
	MiniBatchSize    int64
	// AggPhase (table.optimizer.agg-phase-strategy): AUTO, ONE_PHASE or
	// TWO_PHASE.
	AggPhase string
	// SourceIdleTimeout (table.exec.source.idle-timeout) marks a source
	// subtask idle after that long without rows, so that it does not hold
	// back the watermark downstream; 0 (Flink's default) never does.
	SourceIdleTimeout time.Duration
}

// The option keys, as Flink spells them.
const (
	OptStateTTL         = "table.exec.state.ttl"
	OptMiniBatchEnabled = "table.exec.mini-batch.enabled"
	OptMiniBatchLatency = "table.exec.mini-batch.allow-latency"
	OptMiniBatchSize    = "table.exec.mini-batch.size"
	OptAggPhase         = "table.optimizer.agg-phase-strategy"
	OptSourceIdle       = "table.exec.source.idle-timeout"
)

// CheckExecOption validates a value of one of the ExecOptions keys, so
// that SET refuses a bad one; other keys pass.
func CheckExecOption(key, value string) error {
	var o ExecOptions
	return o.set(key, value)
}

// ParseExecOptions reads the ExecOptions from a session's settings.
func ParseExecOptions(settings map[string]string) (ExecOptions, error) {
	o := ExecOptions{AggPhase: "AUTO", MiniBatchSize: -1}
	for _, k := range []string{OptStateTTL, OptMiniBatchEnabled, OptMiniBatchLatency, OptMiniBatchSize, OptAggPhase, OptSourceIdle} {
		if v, ok := settings[k]; ok {
			if err := o.set(k, v); err != nil {
				return o, err
			}
		}
	}
	if o.MiniBatch {
		// Flink's checks when mini-batch is on.
		if o.MiniBatchLatency <= 0 {
			return o, fmt.Errorf("%s must be greater than 0 ms when %s is true", OptMiniBatchLatency, OptMiniBatchEnabled)
		}
		if o.MiniBatchSize <= 0 {
			return o, fmt.Errorf("%s must be greater than 0 when %s is true", OptMiniBatchSize, OptMiniBatchEnabled)
		}
	}
	return o, nil
}

func (o *ExecOptions) set(key, value string) error {
	v := strings.TrimSpace(value)
	switch key {
	case OptStateTTL:
		d, err := parseFlinkDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if d < 0 || d > 0 && d < time.Millisecond {
			return fmt.Errorf("%s: %q is not 0 (no expiry) or at least 1 ms", key, value)
		}
		o.StateTTL = d
	case OptMiniBatchEnabled:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not true or false", key, value)
		}
		o.MiniBatch = b
	case OptMiniBatchLatency:
		d, err := parseFlinkDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if d < 0 {
			return fmt.Errorf("%s: %q is negative", key, value)
		}
		o.MiniBatchLatency = d
	case OptSourceIdle:
		d, err := parseFlinkDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if d < 0 {
			return fmt.Errorf("%s: %q is negative", key, value)
		}
		o.SourceIdleTimeout = d
	case OptMiniBatchSize:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not an integer", key, value)
		}
		o.MiniBatchSize = n
	case OptAggPhase:
		s := strings.ToUpper(v)
		switch s {
		case "AUTO", "ONE_PHASE", "TWO_PHASE":
			o.AggPhase = s
		default:
			return fmt.Errorf("%s: %q is not one of AUTO, ONE_PHASE, TWO_PHASE", key, value)
		}
	}
	return nil
}

var flinkDurationUnits = map[string]time.Duration{
	"": time.Millisecond, "ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// parseFlinkDuration reads Flink's duration form: an integer and an
// optional unit ("1 h", "1h", "60 s", "500 ms"); a bare number is
// milliseconds.
func parseFlinkDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a duration such as '1 h', '60 s' or '3600000' (ms)", s)
	}
	unit, ok := flinkDurationUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown time unit %q (use ms, s, min, h or d)", s, strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("%q: duration out of range", s)
	}
	return time.Duration(n) * unit, nil
}

// stateTTL is the expiry of keyed state of non-windowed operators in this
// job, 0 for none; batch jobs keep their state until the input ends.
func (t *Translator) stateTTL() time.Duration {
	if t.Batch {
		return 0
	}
	return t.Opts.StateTTL
}

// ttlConfig is the state TTL of Flink's table.exec.state.ttl: processing
// time, renewed when the state is written (OnCreateAndWrite), never
// returning expired state.
func ttlConfig(ctx *stream.KeyedContext[string], ttl time.Duration) state.TTL {
	return state.TTL{TTL: ttl, Now: ctx.CurrentProcessingTime, Update: state.OnCreateAndWrite}
}

// bytesValue returns a value state of encoded bytes, expiring after ttl
// when ttl is set; with ttl 0 it is plain state, at no cost.
func bytesValue(ctx *stream.KeyedContext[string], name string, ttl time.Duration) state.ValueState[[]byte] {
	if ttl > 0 {
		return state.ValueWithTTL[[]byte](ctx.State(), name, nil, ttlConfig(ctx, ttl))
	}
	return state.Value[[]byte](ctx.State(), name, nil)
}

// countMap returns a map state of row counts whose entries expire after
// ttl when ttl is set.
func countMap(ctx *stream.KeyedContext[string], name string, ttl time.Duration) state.MapState[string, int64] {
	if ttl > 0 {
		return state.MapWithTTL[string, int64](ctx.State(), name, ttlConfig(ctx, ttl))
	}
	return state.Map[string, int64](ctx.State(), name)
}
