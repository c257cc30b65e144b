package cep

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// runEngine drives the engine as the operator does in event time, for
// events of one key already in timestamp order: a timer at every event's
// timestamp and at the end of the window of every run started, fired in
// order up to the end of input.
func runEngine(t testing.TB, p *Pattern[ev], events []ev) (matches, timeouts []string) {
	t.Helper()
	c, err := compile(p)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	e := newEngine(c)
	store := map[uint64]storedEvent[ev]{}
	e.load = func(id uint64) (storedEvent[ev], bool) { v, ok := store[id]; return v, ok }
	st := e.initial()
	timers := map[int64]bool{}
	queue := map[int64][]ev{}
	for _, x := range events {
		timers[x.Ts] = true
		queue[x.Ts] = append(queue[x.Ts], x)
	}
	format := func(r *run) string {
		var parts []string
		for _, s := range r.Path {
			parts = append(parts, s.Name+"="+e.event(s.ID).String())
		}
		return strings.Join(parts, " ")
	}
	for len(timers) > 0 {
		ts := slices.Min(slicesKeys(timers))
		delete(timers, ts)
		e.reset()
		e.before = live(&st)
		ms, tos := e.advance(&st, ts)
		for i := range ms {
			matches = append(matches, format(&ms[i]))
		}
		for i := range tos {
			timeouts = append(timeouts, format(&tos[i]))
		}
		for _, x := range queue[ts] {
			before := st.NextID
			ms := e.process(&st, x, ts)
			for i := range ms {
				matches = append(matches, format(&ms[i]))
			}
			if c.window > 0 {
				for _, r := range st.Partial {
					if r.StartID > before {
						timers[ts+c.window] = true
						break
					}
				}
			}
		}
		delete(queue, ts)
		now := live(&st)
		for id := range e.before {
			if !now[id] {
				delete(store, id)
			}
		}
		for id, v := range e.added {
			if now[id] {
				store[id] = v
			}
		}
	}
	return matches, timeouts
}

func slicesKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func randEvents(r *rand.Rand, n int) []ev {
	out := make([]ev, n)
	ts := int64(0)
	for i := range out {
		ts += 1 + int64(r.IntN(2))
		out[i] = ev{L: letters[r.IntN(len(letters))], Ts: ts, N: i}
	}
	return out
}

func modelStrings(s spec, events []ev) []string {
	var out []string
	for _, m := range modelSkip(s, modelMatches(s, events)) {
		out = append(out, m.format(events))
	}
	return out
}

// TestEngineAgainstModel: random patterns over random short sequences,
// the NFA's matches (in emission order) against the brute-force model's.
func TestEngineAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	iters := 20000
	if testing.Short() {
		iters = 2000
	}
	counts := map[string]int{}
	for it := 0; it < iters; it++ {
		s := randSpec(r)
		events := randEvents(r, 3+r.IntN(7))
		got, _ := runEngine(t, s.build(), events)
		want := modelStrings(s, events)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("iteration %d: %s\nevents %v\n got %q\nwant %q", it, s, events, got, want)
		}
		counts[s.Skip.String()] += len(got)
		for _, st := range s.stages {
			switch {
			case st.contig == notNext:
				counts["notNext"] += len(got)
			case st.contig == notFollow:
				counts["notFollowedBy"] += len(got)
			case st.greedy:
				counts["greedy"] += len(got)
			case st.until != "":
				counts["until"] += len(got)
			case st.optional:
				counts["optional"] += len(got)
			}
		}
	}
	t.Logf("matches compared by strategy: %v", counts)
}
