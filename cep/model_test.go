package cep

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The model: a brute-force matcher written from the rules of Flink's CEP
// (as its documentation and tests state them), not from the NFA. It
// enumerates every assignment of a key's events (sorted by time) to the
// steps of a pattern, keeps those the contiguity, quantifier, NOT,
// greedy and window rules allow, then applies the skip strategy to them
// in emission order: by first event, then by completion.

// ev is the test event: a letter (what conditions test), a key and a
// distinct timestamp.
type ev struct {
	L  byte
	K  int
	Ts int64
	N  int // sequence number in the input
}

func (e ev) String() string { return fmt.Sprintf("%c%d", e.L, e.N) }

// stage is a pattern step as the generator describes it.
type stage struct {
	name     string
	letters  string // the condition: the event's letter is one of these
	contig   consuming
	min, max int // max -1: unbounded
	looping  bool
	times    bool
	optional bool
	inner    consuming
	greedy   bool
	until    string // loops only: stop at an event with one of these letters
}

type spec struct {
	stages []stage
	Window int64 // ms; 0: none
	Skip   SkipStrategy
}

func has(set string, l byte) bool { return strings.IndexByte(set, l) >= 0 }

func (s spec) String() string {
	var b strings.Builder
	for i, st := range s.stages {
		if i > 0 {
			b.WriteString(map[consuming]string{strict: " next ", skipTillNext: " followedBy ", skipTillAny: " followedByAny ", notNext: " notNext ", notFollow: " notFollowedBy "}[st.contig])
		}
		fmt.Fprintf(&b, "%s[%s]", st.name, st.letters)
		switch {
		case st.looping:
			fmt.Fprintf(&b, "{%d,}", st.min)
		case st.times:
			fmt.Fprintf(&b, "{%d,%d}", st.min, st.max)
		}
		if st.looping || st.times {
			b.WriteString(map[consuming]string{strict: ".consecutive", skipTillNext: "", skipTillAny: ".allowCombinations"}[st.inner])
		}
		if st.optional {
			b.WriteString("?")
		}
		if st.greedy {
			b.WriteString(".greedy")
		}
		if st.until != "" {
			fmt.Fprintf(&b, ".until[%s]", st.until)
		}
	}
	if s.Window > 0 {
		fmt.Fprintf(&b, " within %dms", s.Window)
	}
	fmt.Fprintf(&b, " %s", s.Skip)
	return b.String()
}

// build turns the spec into a cep pattern.
func (s spec) build() *Pattern[ev] {
	var p *Pattern[ev]
	for i, st := range s.stages {
		switch {
		case i == 0:
			p = BeginWithSkip[ev](st.name, s.Skip)
		case st.contig == strict:
			p = p.Next(st.name)
		case st.contig == skipTillNext:
			p = p.FollowedBy(st.name)
		case st.contig == skipTillAny:
			p = p.FollowedByAny(st.name)
		case st.contig == notNext:
			p = p.NotNext(st.name)
		case st.contig == notFollow:
			p = p.NotFollowedBy(st.name)
		}
		letters := st.letters
		p = p.Where(Simple(func(e ev) bool { return has(letters, e.L) }))
		switch {
		case st.looping:
			p = p.TimesOrMore(st.min)
		case st.times:
			p = p.TimesRange(st.min, st.max)
		}
		if st.optional && !(st.times && st.min == 0) {
			p = p.Optional()
		}
		if st.inner == strict && (st.looping || st.times) {
			p = p.Consecutive()
		}
		if st.inner == skipTillAny {
			p = p.AllowCombinations()
		}
		if st.greedy {
			p = p.Greedy()
		}
		if st.until != "" {
			until := st.until
			p = p.Until(Simple(func(e ev) bool { return has(until, e.L) }))
		}
	}
	if s.Window > 0 {
		p = p.Within(time.Duration(s.Window) * time.Millisecond)
	}
	return p
}

// modelMatch is a match as the model finds it: events by index into the
// key's sorted events, their step names, its start and completion.
type modelMatch struct {
	idx   []int
	names []string
	done  int // index of the event at which it completed
	late  bool
}

func (m modelMatch) format(events []ev) string {
	var parts []string
	for i, ix := range m.idx {
		parts = append(parts, m.names[i]+"="+events[ix].String())
	}
	return strings.Join(parts, " ")
}

// real is a pattern step that takes events; nots are attached to the
// gaps around them.
type realStage struct {
	stage
	notNextAfter   string // letters the event right after this step must not have
	notFollowAfter string // letters no event up to the next step's first may have
	hasNotNext     bool
	hasNotFollow   bool
}

func (s spec) reals() []realStage {
	var out []realStage
	for _, st := range s.stages {
		switch st.contig {
		case notNext:
			out[len(out)-1].notNextAfter, out[len(out)-1].hasNotNext = st.letters, true
			continue
		case notFollow:
			out[len(out)-1].notFollowAfter, out[len(out)-1].hasNotFollow = st.letters, true
			continue
		}
		out = append(out, realStage{stage: st})
	}
	return out
}

func (r realStage) maxCount() int {
	if r.looping {
		return 1 << 30
	}
	return r.max
}

func (r realStage) minCount() int {
	if r.optional {
		return 0
	}
	return r.min
}

func (r realStage) takes(e ev) bool {
	return has(r.letters, e.L) && !(r.until != "" && has(r.until, e.L))
}

func (r realStage) innerIgnores(e ev) bool {
	if r.until != "" && has(r.until, e.L) {
		return false
	}
	switch r.inner {
	case skipTillNext:
		return !has(r.letters, e.L)
	case skipTillAny:
		return true
	}
	return false
}

func (r realStage) entryIgnores(e ev) bool {
	switch r.contig {
	case skipTillNext:
		return !has(r.letters, e.L)
	case skipTillAny:
		return true
	}
	return false
}

func (r realStage) greedyEffective() bool {
	return r.greedy && (r.looping || r.min != r.max)
}

// modelMatches enumerates the matches of one key's events (sorted by
// timestamp), unskipped.
func modelMatches(s spec, events []ev) []modelMatch {
	rs := s.reals()
	var out []modelMatch
	var idx []int
	var names []string
	within := func(a, b int) bool { return s.Window == 0 || events[b].Ts-events[a].Ts < s.Window }
	var rec func(st, count, last int, killed bool)
	complete := func(st, count int) {
		if st < 0 || count < rs[st].min {
			return
		}
		for j := st + 1; j < len(rs); j++ {
			if rs[j].minCount() > 0 {
				return
			}
		}
		last := idx[len(idx)-1]
		m := modelMatch{idx: slices.Clone(idx), names: slices.Clone(names), done: last}
		r := rs[len(rs)-1]
		if st == len(rs)-1 && r.hasNotNext {
			// Completed by the next event, which must not match.
			if last+1 >= len(events) || has(r.notNextAfter, events[last+1].L) || !within(idx[0], last+1) {
				return
			}
			m.done = last + 1
		}
		if st == len(rs)-1 && r.hasNotFollow {
			// Pending until the window passes: no forbidden event before.
			end := events[idx[0]].Ts + s.Window
			m.done, m.late = last, true
			for j := last + 1; j < len(events) && events[j].Ts < end; j++ {
				if has(r.notFollowAfter, events[j].L) {
					return
				}
				m.done = j
			}
		}
		out = append(out, m)
	}
	rec = func(st, count, last int, killed bool) {
		complete(st, count)
		if killed {
			// A stop state took the last event: matches it completed
			// stand (Flink adds them before it discards the path), the
			// partial match ends.
			return
		}
		for f := last + 1; f < len(events); f++ {
			if len(idx) > 0 && !within(idx[0], f) {
				break
			}
			from := st
			if from < 0 {
				from = 0
			}
			for t := from; t < len(rs); t++ {
				if t == st && count >= rs[st].maxCount() {
					continue
				}
				if t > st && st >= 0 && count < rs[st].min {
					break
				}
				if t-1 > st && rs[t-1].minCount() > 0 {
					break // step t-1 would be skipped, and cannot be
				}
				if !rs[t].takes(events[f]) {
					continue
				}
				ok, killed := gapOK(rs, st, count, t, last, f, events)
				if !ok {
					continue
				}
				idx = append(idx, f)
				names = append(names, rs[t].name)
				c := 1
				if t == st {
					c = count + 1
				}
				rec(t, c, f, killed)
				idx = idx[:len(idx)-1]
				names = names[:len(names)-1]
			}
		}
	}
	rec(-1, 0, -1, false)
	return out
}

// gapOK checks the events strictly between last (taken by step st) and
// f (to be taken by step t), and f itself against NOT and greedy rules.
func gapOK(rs []realStage, st, count, t, last, f int, events []ev) (ok, killed bool) {
	if st < 0 {
		// The start: a match may begin at any event, but greedy steps
		// skipped before t still narrow t's first state.
		for g := 0; g < t; g++ {
			if rs[g].greedyEffective() && has(rs[g].letters, events[f].L) {
				return false, false
			}
		}
		return true, false
	}
	for x := last + 1; x < f; x++ {
		if t == st {
			if !rs[st].innerIgnores(events[x]) {
				return false, false
			}
		} else if !rs[t].entryIgnores(events[x]) {
			return false, false
		}
	}
	if t == st && t > 0 && rs[t-1].hasNotFollow && rs[t].times && count >= rs[t].min && f > last+1 {
		// A times step right after NotFollowedBy, past its minimum:
		// skipping an event moves the run to a state that still checks
		// the NOT step (Flink's optional ignore state carries the stop
		// edges), from the second skipped event on, and at f.
		for x := last + 2; x < f; x++ {
			if has(rs[t-1].notFollowAfter, events[x].L) {
				return false, false
			}
		}
		killed = has(rs[t-1].notFollowAfter, events[f].L)
	}
	if t > st {
		for g := st; g < t; g++ {
			if !rs[g].greedyEffective() {
				continue
			}
			for x := last + 1; x <= f; x++ {
				if has(rs[g].letters, events[x].L) {
					return false, false
				}
			}
		}
		if rs[st].hasNotNext {
			if has(rs[st].notNextAfter, events[last+1].L) {
				return false, false
			}
		}
		if rs[st].hasNotFollow {
			for x := last + 1; x < f; x++ {
				if has(rs[st].notFollowAfter, events[x].L) {
					return false, false
				}
			}
			killed = has(rs[st].notFollowAfter, events[f].L)
		}
	}
	return true, killed
}

// modelSkip orders the matches as they are emitted and drops those the
// skip strategy prunes.
func modelSkip(s spec, ms []modelMatch) []modelMatch {
	slices.SortStableFunc(ms, func(a, b modelMatch) int {
		if c := cmp.Compare(a.idx[0], b.idx[0]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.done, b.done); c != 0 {
			return c
		}
		if a.late != b.late {
			if a.late {
				return 1
			}
			return -1
		}
		return slices.Compare(a.idx, b.idx)
	})
	if s.Skip.kind == skipNone {
		return ms
	}
	var out []modelMatch
	pruneBelow, pruneAt := -1, -1 // starts < pruneBelow, or == pruneAt, are pruned
	for _, m := range ms {
		start := m.idx[0]
		if start < pruneBelow || start == pruneAt {
			continue
		}
		out = append(out, m)
		switch s.Skip.kind {
		case skipToNext:
			pruneBelow, pruneAt = max(pruneBelow, start), max(pruneAt, start)
		case skipPastLast:
			l := m.idx[len(m.idx)-1]
			pruneBelow, pruneAt = max(pruneBelow, l), max(pruneAt, l)
		case skipToFirst, skipToLast:
			pos := -1
			for i, n := range m.names {
				if n == s.Skip.name {
					pos = m.idx[i]
					if s.Skip.kind == skipToFirst {
						break
					}
				}
			}
			if pos >= 0 {
				pruneBelow = max(pruneBelow, pos)
			}
		}
	}
	return out
}

var letters = []byte("abcd")

func randSet(r *rand.Rand) string {
	var b []byte
	for _, l := range letters {
		if r.IntN(2) == 0 {
			b = append(b, l)
		}
	}
	if len(b) == 0 {
		b = append(b, letters[r.IntN(len(letters))])
	}
	return string(b)
}

// randSpec draws a pattern within the features the model knows.
func randSpec(r *rand.Rand) spec {
	n := 1 + r.IntN(3)
	var s spec
	contigs := []consuming{strict, skipTillNext, skipTillAny}
	for i := 0; i < n; i++ {
		st := stage{name: string(rune('A' + i)), letters: randSet(r), contig: contigs[r.IntN(3)], min: 1, max: 1, inner: skipTillNext}
		switch r.IntN(4) {
		case 1:
			st.times = true
			st.min = 1 + r.IntN(2)
			st.max = st.min + r.IntN(2)
		case 2:
			st.looping = true
			st.min = 1 + r.IntN(2)
			st.max = -1
		}
		if st.looping || st.times {
			st.inner = contigs[r.IntN(3)]
			if r.IntN(3) == 0 && st.inner != skipTillAny {
				st.greedy = true
			}
			if st.looping && !st.greedy && r.IntN(4) == 0 {
				st.until = randSet(r)
			}
		}
		prevGreedy := i > 0 && s.stages[len(s.stages)-1].greedy
		if r.IntN(4) == 0 && !prevGreedy {
			st.optional = true
		}
		s.stages = append(s.stages, st)
	}
	// Keep at least one non-optional step (a pattern that may match
	// nothing never completes a match).
	allOpt := true
	for _, st := range s.stages {
		allOpt = allOpt && st.optional
	}
	if allOpt {
		s.stages[0].optional = false
	}
	if r.IntN(3) == 0 {
		s.Window = int64(3 + r.IntN(8))
	}
	// A NOT step between two plain single steps, or at the end.
	if r.IntN(4) == 0 {
		single := func(st stage) bool { return !st.looping && !st.times && !st.optional }
		for i := 0; i < len(s.stages); i++ {
			last := i == len(s.stages)-1
			if !single(s.stages[i]) || (!last && s.stages[i+1].optional) {
				continue
			}
			if last && (s.Window == 0 || len(s.stages) == 1 && r.IntN(2) == 0) {
				continue
			}
			kind := []consuming{notNext, notFollow}[r.IntN(2)]
			if last && kind == notNext && r.IntN(2) == 0 {
				kind = notFollow
			}
			if last && kind == notFollow && s.Window == 0 {
				continue
			}
			not := stage{name: "N", letters: randSet(r), contig: kind, min: 1, max: 1}
			s.stages = slices.Insert(s.stages, i+1, not)
			break
		}
	}
	skips := []SkipStrategy{NoSkip(), SkipToNext(), SkipPastLastEvent(), SkipToFirst(s.stages[0].name), SkipToLast(s.stages[0].name)}
	if len(s.stages) > 1 && s.stages[len(s.stages)-1].contig != notNext && s.stages[len(s.stages)-1].contig != notFollow {
		last := s.stages[len(s.stages)-1].name
		skips = append(skips, SkipToFirst(last), SkipToLast(last))
	}
	s.Skip = skips[r.IntN(len(skips))]
	if s.Skip.kind != skipNone && s.Window == 0 {
		// Matches wait for earlier partial matches; only a window ends
		// those for certain.
		s.Window = int64(3 + r.IntN(8))
	}
	return s
}
