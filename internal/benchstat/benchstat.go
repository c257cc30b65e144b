// Package benchstat summarizes repeated benchmark runs the way
// docs/benchmarks.md reports them: the median with the min–max of the
// runs, ratios taken run by run (the i-th run of one side against the
// i-th of the other, so that both meet the same moment of a shared
// machine), and a verdict on a target that counts the spread: a target
// met by the median but not by the worst run is "not clearly met".
package benchstat

import (
	"fmt"
	"slices"
	"time"
)

// Summary is a set of runs reduced to its median and range.
type Summary struct {
	Median, Min, Max float64
	N                int
}

// Of summarizes xs; the median of an even count is the mean of the two
// middle values.
func Of(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return Summary{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Durations summarizes durations in seconds.
func Durations(ds []time.Duration) Summary {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = d.Seconds()
	}
	return Of(xs)
}

// Ratios returns num[i]/den[i] for every pair; they must be as long.
func Ratios(num, den []float64) []float64 {
	if len(num) != len(den) {
		panic(fmt.Sprintf("benchstat: %d numerators, %d denominators", len(num), len(den)))
	}
	out := make([]float64, len(num))
	for i := range num {
		if den[i] != 0 {
			out[i] = num[i] / den[i]
		}
	}
	return out
}

// Scale returns k/x for every x: seconds into a rate, for example.
func Scale(k float64, xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if x != 0 {
			out[i] = k / x
		}
	}
	return out
}

// Format prints the median and, for more than one run, the range, each
// with the given verb: "1.23 (1.10–1.30)".
func (s Summary) Format(verb string) string {
	if s.N <= 1 {
		return fmt.Sprintf(verb, s.Median)
	}
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.Median, s.Min, s.Max)
}

func (s Summary) String() string { return s.Format("%.2f") }

// Verdict judges a higher-is-better figure against a target.
func (s Summary) Verdict(target float64) string {
	switch {
	case s.Min >= target:
		return "met"
	case s.Median >= target:
		return "not clearly met (the slowest run is below)"
	default:
		return "not met"
	}
}
