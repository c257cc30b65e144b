// Package cep is complex event processing on keyed streams, in the shape
// of Flink CEP's Pattern API: describe a sequence of events with Begin,
// Next, FollowedBy, FollowedByAny, NotNext and NotFollowedBy, conditions
// (Where, Or, Until) and quantifiers (Times, TimesRange, TimesOrMore,
// OneOrMore, Optional, Greedy, Consecutive, AllowCombinations), bound it
// with Within, choose what a match discards with a SkipStrategy, and
// apply it to a keyed stream with Stream; Select, SelectWithTimeout and
// Process turn the matches into a stream.
//
// The pattern compiles into an NFA as Flink's NFACompiler builds it
// (compile.go); the matcher (nfa.go) follows Flink's NFA and its rules for
// emitting matches under a skip strategy. The operator (operator.go) is a
// keyed process function whose runs, events and buffered records live in
// the keyed state backend, so they checkpoint, restore and rescale with
// it. docs/cep.md is the user guide.
package cep
