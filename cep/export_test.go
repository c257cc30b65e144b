package cep

import "math/rand/v2"

// What the external tests (pipeline_test.go) use of the model.

type Ev = ev
type Spec = spec

func RandSpec(r *rand.Rand) Spec { return randSpec(r) }

func (s spec) Build() *Pattern[ev] { return s.build() }

// With appends a step: contiguity "", "next", "followedBy",
// "followedByAny"; max -1 loops.
func (s spec) With(name, letters, contig string, min, max int) spec {
	st := stage{name: name, letters: letters, contig: map[string]consuming{"": skipTillNext, "next": strict, "followedBy": skipTillNext, "followedByAny": skipTillAny}[contig], min: min, max: max, inner: skipTillNext}
	switch {
	case max < 0:
		st.looping = true
	case min != 1 || max != 1:
		st.times = true
	}
	s.stages = append(s.stages, st)
	return s
}

// ModelMatches returns the model's matches of one key's events, sorted
// by timestamp, formatted.
func ModelMatches(s spec, events []ev) []string { return modelStrings(s, events) }
