package cep

import (
	"cmp"
	"fmt"
	"slices"
)

// The matching engine follows Flink's NFA: a set of runs (Flink's
// computation states), each in one NFA state with the events it took so
// far. Every event is offered to every run; a run branches into one run
// per transition the event allows. Where Flink keeps the runs' events in a
// shared buffer of versioned edges (Dewey numbers), a run here carries
// its path explicitly (step names and event ids) and the events live once
// in the keyed state, by id, for as long as a run refers to them.

// step is one taken event of a run: the step (pattern) name and the id.
type step struct {
	Name string
	ID   uint64
}

// run is a partial or completed match.
type run struct {
	State   string
	Path    []step
	StartTs int64
	// StartID is the id of the first event; 0 for the start run, which
	// sorts after every other.
	StartID uint64
	// Done orders completed matches with the same start: the id of the
	// last event processed when the match completed.
	Done uint64
	// Late: completed by time passing (a pending NOT at the end), after
	// the event Done.
	Late bool
}

// nfaState is a key's matching state.
type nfaState struct {
	Partial   []run
	Completed []run
	// NextID is the last event id given out.
	NextID uint64
}

// storedEvent is a buffered event and its timestamp.
type storedEvent[T any] struct {
	V  T
	Ts int64
}

// Match is one match: the events each step took, by step name, in order.
type Match[T any] map[string][]T

// engine runs the compiled NFA on one key's state at a time.
type engine[T any] struct {
	nfa   *compiled[T]
	load  func(id uint64) (storedEvent[T], bool)
	cache map[uint64]storedEvent[T]
	added map[uint64]storedEvent[T]
	// before holds the ids the key's runs referred to when loaded.
	before   map[uint64]bool
	procTime func() int64
	// cur is the event being processed, until it is buffered.
	curID  uint64
	curEv  storedEvent[T]
	hasCur bool
}

func newEngine[T any](c *compiled[T]) *engine[T] {
	return &engine[T]{nfa: c, cache: map[uint64]storedEvent[T]{}, added: map[uint64]storedEvent[T]{}}
}

func (e *engine[T]) event(id uint64) T { return e.stored(id).V }

func (e *engine[T]) stored(id uint64) storedEvent[T] {
	if e.hasCur && id == e.curID {
		return e.curEv
	}
	if v, ok := e.cache[id]; ok {
		return v
	}
	if e.load != nil {
		if v, ok := e.load(id); ok {
			e.cache[id] = v
			return v
		}
	}
	panic(fmt.Errorf("cep: event %d of a partial match is missing from the state", id))
}

// reset forgets the cached events of the previous key.
func (e *engine[T]) reset() {
	clear(e.cache)
	clear(e.added)
	e.before = nil
	e.hasCur = false
}

func startOrder(r *run) uint64 {
	if r.StartID == 0 {
		return ^uint64(0)
	}
	return r.StartID
}

func sortRuns(rs []run) {
	slices.SortStableFunc(rs, func(a, b run) int { return cmp.Compare(startOrder(&a), startOrder(&b)) })
}

func comparePaths(a, b []step) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmp.Compare(a[i].ID, b[i].ID); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// sortCompleted orders completed matches as they are emitted: by start,
// then by completion; matches that start and complete together (whose
// order Flink leaves open) by their events.
func sortCompleted(rs []run) {
	slices.SortStableFunc(rs, func(a, b run) int {
		if c := cmp.Compare(a.StartID, b.StartID); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Done, b.Done); c != 0 {
			return c
		}
		if a.Late != b.Late {
			if a.Late {
				return 1
			}
			return -1
		}
		return comparePaths(a.Path, b.Path)
	})
}

func (e *engine[T]) stateOf(r *run) *nstate[T] {
	s, ok := e.nfa.states[r.State]
	if !ok {
		panic(fmt.Errorf("cep: the restored state names the NFA state %q, which the pattern does not have (was the pattern changed?)", r.State))
	}
	return s
}

func (e *engine[T]) check(c Condition[T], r *run, v T, ts int64) bool {
	if c == nil {
		return true
	}
	ctx := Context[T]{run: r, eng: e, ts: ts}
	if r.StartID == 0 {
		ctx.run = nil
	}
	return c(v, &ctx)
}

// initial returns a fresh key's state: the start run alone.
func (e *engine[T]) initial() nfaState {
	return nfaState{Partial: []run{{State: e.nfa.start.name}}}
}

// process offers the event to every run and returns the matches it
// completed, in emission order.
func (e *engine[T]) process(st *nfaState, v T, ts int64) []run {
	st.NextID++
	id := st.NextID
	e.curID, e.curEv, e.hasCur = id, storedEvent[T]{V: v, Ts: ts}, true
	var partial, potential []run
	for i := range st.Partial {
		r := &st.Partial[i]
		next := e.nextRuns(r, v, ts, id)
		var keep []run
		discard := false
		for _, n := range next {
			switch e.stateOf(&n).kind {
			case kindFinal:
				n.Done = id
				potential = append(potential, n)
			case kindStop:
				discard = true
			default:
				keep = append(keep, n)
			}
		}
		if !discard {
			partial = append(partial, keep...)
		}
	}
	sortRuns(partial)
	var out []run
	if e.nfa.skip.kind == skipNone {
		sortCompleted(potential)
		out = potential
	} else {
		out = e.emitCompleted(st, potential, &partial)
	}
	st.Partial = partial
	// The matches emitted now may need the event; the caller stores it
	// only if a run still refers to it.
	e.added[id] = e.curEv
	e.cache[id] = e.curEv
	e.hasCur = false
	return out
}

// nextRuns computes the runs the event turns r into.
func (e *engine[T]) nextRuns(r *run, v T, ts int64, id uint64) []run {
	isStart := r.StartID == 0
	type edge struct {
		src *nstate[T]
		t   transition[T]
	}
	var edges []edge
	stack := []*nstate[T]{e.stateOf(r)}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, t := range s.edges {
			if !e.check(t.cond, r, v, ts) {
				continue
			}
			if t.act == actProceed {
				stack = append(stack, t.target)
			} else {
				edges = append(edges, edge{s, t})
			}
		}
	}
	var out []run
	for _, et := range edges {
		t := et.t
		switch t.act {
		case actIgnore:
			if !isStart {
				out = append(out, run{State: t.target.name, Path: r.Path, StartTs: r.StartTs, StartID: r.StartID})
			}
		case actTake:
			path := make([]step, len(r.Path), len(r.Path)+1)
			copy(path, r.Path)
			path = append(path, step{Name: et.src.pattern, ID: id})
			startTs, startID := r.StartTs, r.StartID
			if isStart {
				startTs, startID = ts, id
			}
			n := run{State: t.target.name, Path: path, StartTs: startTs, StartID: startID}
			out = append(out, n)
			if f := e.finalAfterProceed(t.target, r, v, ts); f != nil {
				n.State = f.name
				out = append(out, n)
			}
		}
	}
	if isStart {
		out = append(out, run{State: r.State})
	}
	return out
}

// finalAfterProceed finds a final state reachable from s by PROCEED
// edges the event allows: a run that may stop here is also a match.
func (e *engine[T]) finalAfterProceed(s *nstate[T], r *run, v T, ts int64) *nstate[T] {
	stack := []*nstate[T]{s}
	seen := map[*nstate[T]]bool{}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		for _, t := range cur.edges {
			if t.act == actProceed && e.check(t.cond, r, v, ts) {
				if t.target.kind == kindFinal {
					return t.target
				}
				stack = append(stack, t.target)
			}
		}
	}
	return nil
}

// advance lets time pass to ts: windowed runs that started at or before
// ts - window time out (pending ones complete). It returns the completed
// matches and the timed-out partial matches.
func (e *engine[T]) advance(st *nfaState, ts int64) (matches, timedOut []run) {
	w := e.nfa.window
	var partial, potential []run
	for _, r := range st.Partial {
		if r.StartID != 0 && w > 0 && ts-r.StartTs >= w {
			if e.stateOf(&r).kind == kindPending {
				r.Done, r.Late = st.NextID, true
				potential = append(potential, r)
				continue
			}
			timedOut = append(timedOut, r)
			continue
		}
		partial = append(partial, r)
	}
	if len(potential) == 0 && len(timedOut) == 0 && len(st.Completed) == 0 {
		return nil, nil
	}
	matches = e.emitCompleted(st, potential, &partial)
	st.Partial = partial
	return matches, timedOut
}

// emitCompleted adds the new matches to the completed ones and emits,
// in order, those that no partial match with an earlier start holds
// back; each prunes the runs its skip strategy discards.
func (e *engine[T]) emitCompleted(st *nfaState, potential []run, partial *[]run) []run {
	st.Completed = append(st.Completed, potential...)
	sortCompleted(st.Completed)
	var out []run
	for len(st.Completed) > 0 {
		m := st.Completed[0]
		if p := earliest(*partial); p != 0 && m.StartID > p {
			break
		}
		st.Completed = st.Completed[1:]
		if id, ok := e.pruningID(&m); ok {
			*partial = e.prune(*partial, id)
			st.Completed = e.prune(st.Completed, id)
		}
		out = append(out, m)
	}
	if len(st.Completed) == 0 {
		st.Completed = nil
	}
	return out
}

func earliest(rs []run) uint64 {
	var min uint64
	for i := range rs {
		if id := rs[i].StartID; id != 0 && (min == 0 || id < min) {
			min = id
		}
	}
	return min
}

func (e *engine[T]) pruningID(m *run) (uint64, bool) {
	s := e.nfa.skip
	switch s.kind {
	case skipToNext:
		return m.Path[0].ID, true
	case skipPastLast:
		return m.Path[len(m.Path)-1].ID, true
	case skipToFirst:
		for _, p := range m.Path {
			if p.Name == s.name {
				return p.ID, true
			}
		}
	case skipToLast:
		for i := len(m.Path) - 1; i >= 0; i-- {
			if m.Path[i].Name == s.name {
				return m.Path[i].ID, true
			}
		}
	}
	return 0, false
}

func (e *engine[T]) prune(rs []run, id uint64) []run {
	strictly := e.nfa.skip.kind == skipToFirst || e.nfa.skip.kind == skipToLast
	out := rs[:0]
	for _, r := range rs {
		if r.StartID != 0 && (r.StartID < id || (!strictly && r.StartID == id)) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// materialize returns the events of a run by step name.
func (e *engine[T]) materialize(r *run) Match[T] {
	m := Match[T]{}
	for _, s := range r.Path {
		m[s.Name] = append(m[s.Name], e.event(s.ID))
	}
	return m
}

// live returns the ids of the events the runs still refer to.
func live(st *nfaState) map[uint64]bool {
	ids := map[uint64]bool{}
	for _, rs := range [][]run{st.Partial, st.Completed} {
		for i := range rs {
			for _, s := range rs[i].Path {
				ids[s.ID] = true
			}
		}
	}
	return ids
}
