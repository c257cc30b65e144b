package cep

import (
	"errors"
	"fmt"
	"strconv"
)

// The compiler turns a pattern sequence into the states of an NFA, as
// Flink's NFACompiler does: it walks the sequence from its last step to
// its first, each step becoming one or more states linked by TAKE (consume
// the event and move), IGNORE (skip the event and stay or move) and
// PROCEED (move without consuming: an epsilon edge) transitions. NOT steps
// become stop states that discard the partial match, greedy steps narrow
// the conditions of the step after them.

type action uint8

const (
	actTake action = iota
	actIgnore
	actProceed
)

type stateKind uint8

const (
	kindNormal stateKind = iota
	kindFinal
	kindStop
	// kindPending waits out the window of a NOT step at the end of the
	// sequence: when the window passes, the partial match is a match.
	kindPending
)

type transition[T any] struct {
	act    action
	target *nstate[T]
	cond   Condition[T] // nil: always
}

type nstate[T any] struct {
	name    string // unique: the step's name, ":n" for the n-th copy
	pattern string // the step's name
	kind    stateKind
	start   bool
	edges   []transition[T]
}

func (s *nstate[T]) add(a action, target *nstate[T], c Condition[T]) {
	s.edges = append(s.edges, transition[T]{act: a, target: target, cond: c})
}

const endStateName = "$endState$"

type compiled[T any] struct {
	states map[string]*nstate[T]
	start  *nstate[T]
	window int64 // ms; 0: none
	skip   SkipStrategy
}

type compiler[T any] struct {
	states     map[string]*nstate[T]
	used       map[string]int
	stopStates map[string]*nstate[T]
	window     int64
	cur        *Pattern[T]
	following  *Pattern[T]
	original   map[string]*nstate[T]
}

func not[T any](c Condition[T]) Condition[T] {
	if c == nil {
		return func(T, *Context[T]) bool { return false }
	}
	return func(v T, ctx *Context[T]) bool { return !c(v, ctx) }
}

func and[T any](a, b Condition[T]) Condition[T] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(v T, ctx *Context[T]) bool { return a(v, ctx) && b(v, ctx) }
}

func compile[T any](last *Pattern[T]) (*compiled[T], error) {
	if last == nil {
		return nil, errors.New("cep: nil pattern")
	}
	seen := map[string]bool{}
	var first *Pattern[T]
	for p := last; p != nil; p = p.prev {
		if p.err != nil {
			return nil, p.err
		}
		if p.name == "" {
			return nil, errors.New("cep: a pattern step needs a name")
		}
		if p.name == endStateName {
			return nil, fmt.Errorf("cep: the step name %q is reserved", endStateName)
		}
		if seen[p.name] {
			return nil, fmt.Errorf("cep: duplicate step name %q: names must be unique", p.name)
		}
		seen[p.name] = true
		first = p
	}
	if first.isNot() {
		return nil, fmt.Errorf("cep: the sequence cannot begin with the NOT step %q", first.name)
	}
	skip := last.skip
	if skip.kind == skipToFirst || skip.kind == skipToLast {
		if !seen[skip.name] {
			return nil, fmt.Errorf("cep: the skip strategy %s names no step of the pattern", skip)
		}
	}
	c := &compiler[T]{states: map[string]*nstate[T]{}, used: map[string]int{}, stopStates: map[string]*nstate[T]{}, original: map[string]*nstate[T]{}, cur: last}
	if last.hasWindow {
		c.window = last.window.Milliseconds()
	}
	sink := c.newState(endStateName, kindFinal)
	sink = c.middle(sink)
	begin := c.convert(sink)
	begin.start = true
	if last.consume == notFollow && c.window == 0 {
		return nil, fmt.Errorf("cep: NotFollowedBy (%q) at the end of a pattern needs Within", last.name)
	}
	return &compiled[T]{states: c.states, start: begin, window: c.window, skip: skip}, nil
}

func (c *compiler[T]) newState(pattern string, kind stateKind) *nstate[T] {
	n := c.used[pattern]
	c.used[pattern] = n + 1
	name := pattern
	if n > 0 {
		name = pattern + ":" + strconv.Itoa(n)
	}
	s := &nstate[T]{name: name, pattern: pattern, kind: kind}
	c.states[name] = s
	return s
}

// middle converts every step but the first, from the last one back.
func (c *compiler[T]) middle(sink *nstate[T]) *nstate[T] {
	last := sink
	for c.cur.prev != nil {
		switch c.cur.consume {
		case notFollow:
			// A NOT step becomes conditions on the states around it; at the
			// end of a windowed sequence it waits in a pending state.
			if c.window > 0 && last.kind == kindFinal {
				pending := c.newState(c.cur.name, kindPending)
				notCond := c.cur.cond
				stop := c.stopState(notCond, c.cur.name)
				pending.add(actProceed, stop, notCond)
				pending.add(actIgnore, pending, not(notCond))
				last = pending
			}
		case notNext:
			nn := c.newState(c.cur.name, kindNormal)
			notCond := c.cur.cond
			stop := c.stopState(notCond, c.cur.name)
			if last.kind == kindFinal {
				// No PROCEED into the final state: the event after the
				// previous step must arrive, and must not match.
				nn.add(actIgnore, last, not(notCond))
			} else {
				nn.add(actProceed, last, not(notCond))
			}
			nn.add(actProceed, stop, notCond)
			last = nn
		default:
			last = c.convert(last)
		}
		c.following = c.cur
		c.cur = c.cur.prev
		if c.cur.hasWindow {
			if w := c.cur.window.Milliseconds(); c.window == 0 || w < c.window {
				c.window = w
			}
		}
	}
	return last
}

// convert turns the current step into its states, linked to sink.
func (c *compiler[T]) convert(sink *nstate[T]) *nstate[T] {
	p := c.cur
	var first *nstate[T]
	switch {
	case p.props&propLooping != 0:
		looping := c.looping(c.copyWithoutTransitiveNots(sink))
		first = c.timesStates(looping, sink)
	case p.props&propTimes != 0:
		first = c.timesStates(sink, sink)
	default:
		first = c.singletonWith(sink, sink, p.cond, c.ignoreCond(p.consume, p.cond), p.props&propOptional != 0)
	}
	c.addStopStates(first)
	return first
}

// notConditions are the NOT steps the current step must look back at:
// the one right before it, and ones before optional steps before it.
func (c *compiler[T]) notConditions() []*Pattern[T] {
	var out []*Pattern[T]
	for p := c.cur; p.prev != nil && (p.prev.props&propOptional != 0 || p.prev.consume == notFollow); {
		p = p.prev
		if p.consume == notFollow {
			out = append(out, p)
		}
	}
	return out
}

func (c *compiler[T]) stopState(cond Condition[T], name string) *nstate[T] {
	if s, ok := c.stopStates[name]; ok {
		return s
	}
	s := c.newState(name, kindStop)
	s.add(actTake, s, cond)
	c.stopStates[name] = s
	return s
}

func (c *compiler[T]) addStopStates(s *nstate[T]) {
	for _, n := range c.notConditions() {
		s.add(actProceed, c.stopState(n.cond, n.name), n.cond)
	}
}

func (c *compiler[T]) addStopStateToLooping(s *nstate[T]) {
	if f := c.following; f != nil && f.consume == notFollow {
		s.add(actProceed, c.stopState(f.cond, f.name), f.cond)
	}
}

// copyWithoutTransitiveNots: once an optional step took an event, the NOT
// steps before it no longer apply; the sink is copied without the edges
// into their stop states.
func (c *compiler[T]) copyWithoutTransitiveNots(sink *nstate[T]) *nstate[T] {
	nots := c.notConditions()
	if len(nots) == 0 || c.cur.props&propOptional == 0 {
		return sink
	}
	cp := c.newState(sink.pattern, sink.kind)
	for _, e := range sink.edges {
		if e.act == actProceed {
			target := e.target
			remove := false
			if target.kind == kindStop {
				for _, n := range nots {
					if target.pattern == n.name {
						remove = true
					}
				}
			} else {
				target = c.copyWithoutTransitiveNots(e.target)
			}
			if !remove {
				cp.add(e.act, target, e.cond)
			}
			continue
		}
		target := e.target
		if target == sink {
			target = cp
		}
		cp.add(e.act, target, e.cond)
	}
	return cp
}

func (c *compiler[T]) copyState(s *nstate[T]) *nstate[T] {
	cp := c.newState(s.pattern, s.kind)
	for _, e := range s.edges {
		target := e.target
		if target == s {
			target = cp
		}
		cp.add(e.act, target, e.cond)
	}
	return cp
}

// ignoreCond is the condition under which a state waiting for the step's
// first event skips an event: never (strict), when it does not match
// (relaxed), always (non-deterministic relaxed).
func (c *compiler[T]) ignoreCond(k consuming, cond Condition[T]) Condition[T] {
	switch k {
	case skipTillNext:
		return not(cond)
	case skipTillAny:
		return func(T, *Context[T]) bool { return true }
	}
	return nil
}

func withUntil[T any](cond, until Condition[T], isTake bool) Condition[T] {
	switch {
	case until != nil && cond != nil:
		return and(not(until), cond)
	case until != nil && isTake:
		return not(until)
	}
	return cond
}

// timesStates builds the chain of states of a times or looping step:
// from-1 mandatory states, to-from optional ones, then the first.
func (c *compiler[T]) timesStates(sink, proceed *nstate[T]) *nstate[T] {
	p := c.cur
	last := sink
	until := p.until
	innerIgnore := withUntil(c.ignoreCond(p.inner, p.cond), until, false)
	take := withUntil(p.cond, until, true)
	if p.props&propGreedy != 0 && p.timesFrom != p.timesTo {
		if until != nil {
			c.original[sink.name] = c.copyState(sink)
		}
		greedyNarrow(sink, take)
	}
	for i := p.timesFrom; i < p.timesTo; i++ {
		last = c.singletonWith(last, proceed, take, innerIgnore, true)
		c.addStopStateToLooping(last)
	}
	for i := 0; i < p.timesFrom-1; i++ {
		last = c.singletonWith(last, nil, take, innerIgnore, false)
		c.addStopStateToLooping(last)
	}
	return c.singletonWith(last, proceed, take, c.ignoreCond(p.consume, p.cond), p.props&propOptional != 0)
}

// singletonWith builds a state that takes one event. An optional one can
// also PROCEED; skipping an event moves it to a copy without the PROCEED
// edge, so that every path through the graph proceeds once.
func (c *compiler[T]) singletonWith(sink, proceed *nstate[T], take, ignore Condition[T], optional bool) *nstate[T] {
	p := c.cur
	s := c.newState(p.name, kindNormal)
	target := c.copyWithoutTransitiveNots(sink)
	s.add(actTake, target, take)
	if optional {
		if p.props&propGreedy != 0 {
			if orig, ok := c.original[proceed.name]; ok && p.until != nil {
				s.add(actProceed, orig, p.until)
			}
			var pc Condition[T]
			if p.until != nil {
				pc = not(p.until)
			}
			s.add(actProceed, proceed, pc)
		} else {
			s.add(actProceed, proceed, nil)
		}
	}
	if ignore != nil {
		ig := s
		if optional {
			ig = c.newState(p.name, kindNormal)
			ig.add(actTake, target, take)
			ig.add(actIgnore, ig, ignore)
			c.addStopStates(ig)
		}
		s.add(actIgnore, ig, ignore)
	}
	return s
}

// looping builds the state of a loop: TAKE to itself, PROCEED to sink,
// and an ignore state without the PROCEED.
func (c *compiler[T]) looping(sink *nstate[T]) *nstate[T] {
	p := c.cur
	until := p.until
	ignore := withUntil(c.ignoreCond(p.inner, p.cond), until, false)
	take := withUntil(p.cond, until, true)
	s := c.newState(p.name, kindNormal)
	if p.props&propGreedy != 0 {
		if until != nil {
			cp := c.copyState(sink)
			s.add(actProceed, cp, until)
			c.original[sink.name] = cp
		}
		var pc Condition[T]
		if until != nil {
			pc = not(until)
		}
		s.add(actProceed, sink, pc)
		greedyNarrow(sink, p.cond)
	} else {
		s.add(actProceed, sink, nil)
	}
	s.add(actTake, s, take)
	c.addStopStateToLooping(s)
	if ignore != nil {
		ig := c.newState(p.name, kindNormal)
		ig.add(actTake, s, take)
		ig.add(actIgnore, ig, ignore)
		s.add(actIgnore, ig, ignore)
		c.addStopStateToLooping(ig)
	}
	return s
}

// greedyNarrow: the state after a greedy step does nothing with an event
// the greedy step could take.
func greedyNarrow[T any](s *nstate[T], take Condition[T]) {
	for i := range s.edges {
		s.edges[i].cond = and(s.edges[i].cond, not(take))
	}
}
