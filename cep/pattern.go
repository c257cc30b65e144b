package cep

import (
	"fmt"
	"time"
)

// Condition decides whether an event belongs to a pattern. ctx sees the
// partial match the event would extend (EventsForPattern), so a
// condition can compare the event with the ones already taken, as
// Flink's IterativeCondition.
type Condition[T any] func(v T, ctx *Context[T]) bool

// Simple adapts a condition on the event alone (Flink's SimpleCondition).
func Simple[T any](fn func(v T) bool) Condition[T] {
	return func(v T, _ *Context[T]) bool { return fn(v) }
}

// Context is what a condition learns about the partial match.
type Context[T any] struct {
	run *run
	eng *engine[T]
	ts  int64
}

// EventsForPattern returns the events of the partial match taken by the
// pattern called name, in order; the event being tested is not among
// them.
func (c *Context[T]) EventsForPattern(name string) []T {
	if c.run == nil {
		return nil
	}
	var out []T
	for _, s := range c.run.Path {
		if s.Name == name {
			out = append(out, c.eng.event(s.ID))
		}
	}
	return out
}

// Timestamp returns the timestamp of the event being tested.
func (c *Context[T]) Timestamp() int64 { return c.ts }

// CurrentProcessingTime returns the operator's processing time.
func (c *Context[T]) CurrentProcessingTime() int64 {
	if c.eng.procTime == nil {
		return 0
	}
	return c.eng.procTime()
}

// consuming is how a pattern relates to the events before it, Flink's
// Quantifier.ConsumingStrategy.
type consuming uint8

const (
	strict       consuming = iota // next / consecutive
	skipTillNext                  // followedBy
	skipTillAny                   // followedByAny / allowCombinations
	notNext
	notFollow
)

type quantProps uint8

const (
	propSingle quantProps = 1 << iota
	propLooping
	propTimes
	propOptional
	propGreedy
)

// Pattern is one step of a pattern sequence, as Flink's Pattern: a name,
// a condition, a quantifier and how it follows the previous step. Build
// it with Begin and the methods below; a misuse (a quantifier applied
// twice, Until on a single step) is reported when the pattern is used.
type Pattern[T any] struct {
	name       string
	prev       *Pattern[T]
	cond       Condition[T]
	until      Condition[T]
	consume    consuming
	inner      consuming
	props      quantProps
	timesFrom  int
	timesTo    int // -1: unbounded
	window     time.Duration
	hasWindow  bool
	skip       SkipStrategy
	err        error
	conditions int
}

// Begin starts a pattern sequence with the step called name; matches do
// not skip (NoSkip).
func Begin[T any](name string) *Pattern[T] {
	return BeginWithSkip[T](name, NoSkip())
}

// BeginWithSkip starts a pattern sequence whose matches are followed by
// the given after-match skip strategy.
func BeginWithSkip[T any](name string, skip SkipStrategy) *Pattern[T] {
	return &Pattern[T]{name: name, consume: skipTillNext, inner: skipTillNext, props: propSingle, timesFrom: 1, timesTo: 1, skip: skip}
}

func (p *Pattern[T]) next(name string, c consuming) *Pattern[T] {
	n := &Pattern[T]{name: name, prev: p, consume: c, inner: skipTillNext, props: propSingle, timesFrom: 1, timesTo: 1, skip: p.skip, err: p.err}
	return n
}

func (p *Pattern[T]) fail(format string, args ...any) *Pattern[T] {
	if p.err == nil {
		p.err = fmt.Errorf("cep: pattern %q: "+format, append([]any{p.name}, args...)...)
	}
	return p
}

// Name returns the step's name.
func (p *Pattern[T]) Name() string { return p.name }

// Next appends a step whose first event must directly follow the
// previous step's last event (strict contiguity).
func (p *Pattern[T]) Next(name string) *Pattern[T] { return p.next(name, strict) }

// FollowedBy appends a step whose first event is the next matching event
// after the previous step (relaxed contiguity).
func (p *Pattern[T]) FollowedBy(name string) *Pattern[T] { return p.next(name, skipTillNext) }

// FollowedByAny appends a step that may take any later matching event
// (non-deterministic relaxed contiguity).
func (p *Pattern[T]) FollowedByAny(name string) *Pattern[T] { return p.next(name, skipTillAny) }

// NotNext appends a step whose condition the event directly after the
// previous step must not satisfy.
func (p *Pattern[T]) NotNext(name string) *Pattern[T] {
	if p.props&propOptional != 0 {
		return p.next(name, notNext).fail("an optional step before a NOT step is not supported; use two patterns, one with and one without the optional step")
	}
	return p.next(name, notNext)
}

// NotFollowedBy appends a step no event of which may occur between the
// previous step and the next; at the end of a sequence it needs Within.
func (p *Pattern[T]) NotFollowedBy(name string) *Pattern[T] {
	if p.props&propOptional != 0 {
		return p.next(name, notFollow).fail("an optional step before a NOT step is not supported; use two patterns, one with and one without the optional step")
	}
	return p.next(name, notFollow)
}

// Where adds a condition, ANDed with the step's previous ones.
func (p *Pattern[T]) Where(c Condition[T]) *Pattern[T] {
	if c == nil {
		return p.fail("Where with a nil condition")
	}
	if prev := p.cond; prev != nil {
		p.cond = func(v T, ctx *Context[T]) bool { return prev(v, ctx) && c(v, ctx) }
	} else {
		p.cond = c
	}
	return p
}

// Or adds a condition, ORed with the step's previous ones.
func (p *Pattern[T]) Or(c Condition[T]) *Pattern[T] {
	if c == nil {
		return p.fail("Or with a nil condition")
	}
	if prev := p.cond; prev != nil {
		p.cond = func(v T, ctx *Context[T]) bool { return prev(v, ctx) || c(v, ctx) }
	} else {
		p.cond = c
	}
	return p
}

// Until stops a looping step (OneOrMore, TimesOrMore) at the first event
// that satisfies c; that event is not taken by the loop.
func (p *Pattern[T]) Until(c Condition[T]) *Pattern[T] {
	if c == nil {
		return p.fail("Until with a nil condition")
	}
	if p.props&propLooping == 0 {
		return p.fail("the until condition is only applicable to looping steps (OneOrMore, TimesOrMore)")
	}
	if p.until != nil {
		return p.fail("only one until condition can be applied")
	}
	p.until = c
	return p
}

// Within bounds the time between the first and the last event of a
// match; partial matches that exceed it time out.
func (p *Pattern[T]) Within(d time.Duration) *Pattern[T] {
	if d <= 0 {
		return p.fail("Within needs a positive duration, got %v", d)
	}
	p.window, p.hasWindow = d, true
	return p
}

func (p *Pattern[T]) isNot() bool { return p.consume == notNext || p.consume == notFollow }

func (p *Pattern[T]) quantifier(props quantProps) bool {
	if p.isNot() {
		p.fail("quantifiers do not apply to NOT steps")
		return false
	}
	if p.props&propSingle == 0 {
		p.fail("a quantifier was already applied")
		return false
	}
	p.props = p.props&^propSingle | props
	return true
}

// OneOrMore lets the step take one or more events.
func (p *Pattern[T]) OneOrMore() *Pattern[T] { return p.TimesOrMore(1) }

// TimesOrMore lets the step take n or more events.
func (p *Pattern[T]) TimesOrMore(n int) *Pattern[T] {
	if n < 1 {
		return p.fail("TimesOrMore needs a positive count, got %d", n)
	}
	if p.quantifier(propLooping) {
		p.timesFrom, p.timesTo = n, n
	}
	return p
}

// Times makes the step take exactly n events.
func (p *Pattern[T]) Times(n int) *Pattern[T] { return p.TimesRange(n, n) }

// TimesRange makes the step take from..to events; from 0 makes it
// optional.
func (p *Pattern[T]) TimesRange(from, to int) *Pattern[T] {
	if from < 0 || to < 1 || from > to {
		return p.fail("times(%d, %d): need 0 <= from <= to and to > 0", from, to)
	}
	if !p.quantifier(propTimes) {
		return p
	}
	if from == 0 {
		p.props |= propOptional
		from = 1
	}
	p.timesFrom, p.timesTo = from, to
	return p
}

// Optional lets the step take no event at all.
func (p *Pattern[T]) Optional() *Pattern[T] {
	if p.prev != nil && p.prev.props&propGreedy != 0 {
		return p.fail("an optional step cannot follow a greedy one")
	}
	if p.isNot() {
		return p.fail("a NOT step cannot be optional")
	}
	if p.props&propOptional != 0 {
		return p.fail("Optional was already applied")
	}
	p.props |= propOptional
	return p
}

// Greedy makes a looping or times step take as many events as it can:
// the next step never takes an event this one could take.
func (p *Pattern[T]) Greedy() *Pattern[T] {
	if p.isNot() {
		return p.fail("Greedy does not apply to NOT steps")
	}
	if p.inner == skipTillAny {
		return p.fail("Greedy does not apply to AllowCombinations")
	}
	if p.props&propSingle != 0 {
		return p.fail("Greedy applies to looping and times steps only")
	}
	p.props |= propGreedy
	return p
}

// Consecutive makes the events of a looping or times step strictly
// contiguous.
func (p *Pattern[T]) Consecutive() *Pattern[T] {
	if p.props&(propLooping|propTimes) == 0 {
		return p.fail("Consecutive applies to looping and times steps only")
	}
	p.inner = strict
	return p
}

// AllowCombinations lets the events of a looping or times step skip any
// events between them (non-deterministic relaxed contiguity).
func (p *Pattern[T]) AllowCombinations() *Pattern[T] {
	if p.props&(propLooping|propTimes) == 0 {
		return p.fail("AllowCombinations applies to looping and times steps only")
	}
	if p.props&propGreedy != 0 {
		return p.fail("Greedy does not apply to AllowCombinations")
	}
	p.inner = skipTillAny
	return p
}

// SkipStrategy says which partial matches an emitted match discards, as
// Flink's AfterMatchSkipStrategy.
type SkipStrategy struct {
	kind skipKind
	name string
}

type skipKind uint8

const (
	skipNone skipKind = iota
	skipToNext
	skipPastLast
	skipToFirst
	skipToLast
)

// NoSkip emits every match.
func NoSkip() SkipStrategy { return SkipStrategy{} }

// SkipToNext discards the partial matches that start with the match's
// first event (or earlier).
func SkipToNext() SkipStrategy { return SkipStrategy{kind: skipToNext} }

// SkipPastLastEvent discards the partial matches that start before the
// match's last event, or with it.
func SkipPastLastEvent() SkipStrategy { return SkipStrategy{kind: skipPastLast} }

// SkipToFirst discards the partial matches that start before the first
// event the step called name took in the match.
func SkipToFirst(name string) SkipStrategy { return SkipStrategy{kind: skipToFirst, name: name} }

// SkipToLast discards the partial matches that start before the last
// event the step called name took in the match.
func SkipToLast(name string) SkipStrategy { return SkipStrategy{kind: skipToLast, name: name} }

func (s SkipStrategy) String() string {
	switch s.kind {
	case skipToNext:
		return "SKIP_TO_NEXT"
	case skipPastLast:
		return "SKIP_PAST_LAST_EVENT"
	case skipToFirst:
		return "SKIP_TO_FIRST[" + s.name + "]"
	case skipToLast:
		return "SKIP_TO_LAST[" + s.name + "]"
	}
	return "NO_SKIP"
}
