package cep

import (
	"slices"
	"strings"
	"testing"
)

// Cases from Flink's own CEP tests (AfterMatchSkipITCase, GreedyITCase,
// NotPatternITCase, UntilConditionITCase):
// the input events and the expected matches are Flink's; the patterns
// are re-expressed with this package's API.

type fev struct {
	Name  string
	Price float64
	Label string // how the expectation names the event, if not by Name
}

func (e fev) label() string {
	if e.Label != "" {
		return e.Label
	}
	return e.Name
}

func name(s string) Condition[fev] { return Simple(func(e fev) bool { return e.Name == s }) }

func contains(s string) Condition[fev] {
	return Simple(func(e fev) bool { return strings.Contains(e.Name, s) })
}

// feed runs the events through the engine in order (timestamps 1, 2, ...)
// and returns each match as its events' names in order, sorted.
func feed(t *testing.T, p *Pattern[fev], events []fev) []string {
	t.Helper()
	c, err := compile(p)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(c)
	store := map[uint64]storedEvent[fev]{}
	e.load = func(id uint64) (storedEvent[fev], bool) { v, ok := store[id]; return v, ok }
	st := e.initial()
	var out []string
	for i, x := range events {
		e.reset()
		ts := int64(i + 1)
		ms, _ := e.advance(&st, ts)
		ms = append(ms, e.process(&st, x, ts)...)
		for _, m := range ms {
			var names []string
			for _, s := range m.Path {
				names = append(names, e.event(s.ID).label())
			}
			out = append(out, strings.Join(names, " "))
		}
		now := live(&st)
		for id, v := range e.added {
			if now[id] {
				store[id] = v
			}
		}
	}
	slices.Sort(out)
	return out
}

type fevs []fev

func evs(names ...string) fevs {
	out := make(fevs, len(names))
	for i, n := range names {
		out[i] = fev{Name: n}
	}
	return out
}

// named gives the events the names Flink's conditions test, keeping the
// labels the expectations use in Label.
func (es fevs) named(names ...string) fevs {
	out := make(fevs, len(es))
	for i := range es {
		out[i] = fev{Name: names[i], Label: es[i].Name}
	}
	return out
}

func TestFlinkCases(t *testing.T) {
	a6 := evs("a1", "a2", "a3", "a4", "a5", "a6")
	ab := func(n int) fevs {
		var out fevs
		for i := 1; i <= n; i++ {
			out = append(out, fev{Name: "ab" + string(rune('0'+i))})
		}
		return out
	}
	cases := []struct {
		name    string
		pattern *Pattern[fev]
		events  fevs
		want    []string
	}{
		{"AfterMatchSkipITCase.testNoSkip",
			BeginWithSkip[fev]("start", NoSkip()).Where(contains("a")).Times(3), a6,
			[]string{"a1 a2 a3", "a2 a3 a4", "a3 a4 a5", "a4 a5 a6"}},
		{"AfterMatchSkipITCase.testNoSkipWithFollowedByAny",
			Begin[fev]("start").Where(contains("a")).FollowedByAny("end").Where(contains("b")), evs("a1", "b1", "a2", "b2"),
			[]string{"a1 b1", "a1 b2", "a2 b2"}},
		{"AfterMatchSkipITCase.testSkipToNextWithFollowedByAny",
			BeginWithSkip[fev]("start", SkipToNext()).Where(contains("a")).FollowedByAny("end").Where(contains("b")), evs("a1", "b1", "a2", "b2"),
			[]string{"a1 b1", "a2 b2"}},
		{"AfterMatchSkipITCase.testNoSkipWithQuantifierAtTheEnd",
			Begin[fev]("start").Where(contains("a")).Next("end").Where(contains("b")).OneOrMore(), evs("a1", "b1", "b2", "b3"),
			[]string{"a1 b1", "a1 b1 b2", "a1 b1 b2 b3"}},
		{"AfterMatchSkipITCase.testSkipToNextWithQuantifierAtTheEnd",
			BeginWithSkip[fev]("start", SkipToNext()).Where(contains("a")).Next("end").Where(contains("b")).OneOrMore(), evs("a1", "b1", "b2", "b3"),
			[]string{"a1 b1"}},
		{"AfterMatchSkipITCase.testSkipPastLast",
			BeginWithSkip[fev]("start", SkipPastLastEvent()).Where(contains("a")).Times(3), a6,
			[]string{"a1 a2 a3", "a4 a5 a6"}},
		{"AfterMatchSkipITCase.testSkipToFirst",
			BeginWithSkip[fev]("start", SkipToFirst("end")).Where(contains("a")).Times(2).Next("end").Where(contains("b")).Times(2), ab(6),
			[]string{"ab1 ab2 ab3 ab4", "ab3 ab4 ab5 ab6"}},
		{"AfterMatchSkipITCase.testSkipToLast",
			BeginWithSkip[fev]("start", SkipToLast("end")).Where(contains("a")).Times(2).Next("end").Where(contains("b")).Times(2), ab(7),
			[]string{"ab1 ab2 ab3 ab4", "ab4 ab5 ab6 ab7"}},
		{"AfterMatchSkipITCase.testSkipPastLast2",
			BeginWithSkip[fev]("a", SkipPastLastEvent()).Where(contains("a")).FollowedByAny("b").Where(contains("b")).
				FollowedByAny("c").Where(contains("c")).FollowedBy("d").Where(contains("d")),
			evs("a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"),
			[]string{"a1 b1 c1 d1"}},
		{"AfterMatchSkipITCase.testSkipPastLast3",
			BeginWithSkip[fev]("a", SkipPastLastEvent()).Where(contains("a")).Next("b").Where(contains("b")), evs("a1", "c", "a2", "b2"),
			[]string{"a2 b2"}},
		{"AfterMatchSkipITCase.testSkipToFirstWithOptionalMatch",
			BeginWithSkip[fev]("x", SkipToFirst("b")).Where(contains("x")).OneOrMore().Optional().
				Next("b").Where(contains("b")).Next("c").Where(contains("c")),
			evs("ab1", "c1", "ab2", "c2"),
			[]string{"ab1 c1", "ab2 c2"}},
		{"AfterMatchSkipITCase.testSkipToFirstAtStartPosition",
			BeginWithSkip[fev]("b", SkipToFirst("b")).Where(contains("b")).Next("c").Where(contains("c")), evs("ab1", "c1", "ab2", "c2"),
			[]string{"ab1 c1", "ab2 c2"}},
		{"AfterMatchSkipITCase.testSkipToFirstWithOneOrMore",
			BeginWithSkip[fev]("a", SkipToFirst("b")).Where(contains("a")).Next("b").Where(contains("b")).OneOrMore().Consecutive(),
			evs("a1", "b1", "a2", "b2", "b3", "a3", "b4"),
			[]string{"a1 b1", "a2 b2", "a3 b4"}},
		{"AfterMatchSkipITCase.testSkipToFirstNonExistentPositionWithoutException",
			BeginWithSkip[fev]("a", SkipToFirst("b")).Where(contains("a")).Next("b").Where(contains("b")).OneOrMore().Optional().Consecutive().
				Next("c").Where(contains("c")),
			evs("a", "c"),
			[]string{"a c"}},
		{"GreedyITCase.testGreedyZeroOrMore",
			Begin[fev]("start").Where(name("c")).FollowedBy("middle").Where(name("a")).OneOrMore().Optional().Greedy().FollowedBy("end").Where(name("d")),
			evs("c", "a", "a", "a", "d"),
			[]string{"c a a a d"}},
		{"GreedyITCase.testGreedyZeroOrMoreInBetween",
			Begin[fev]("start").Where(name("c")).FollowedBy("middle").Where(name("a")).OneOrMore().Optional().Greedy().FollowedBy("end").Where(name("d")),
			evs("c", "dummy", "a", "dummy", "a", "dummy", "a", "d"),
			[]string{"c a a a d"}},
		{"GreedyITCase.testGreedyZeroOrMoreWithDummyEventsAfterQuantifier",
			Begin[fev]("start").Where(name("c")).FollowedBy("middle").Where(name("a")).OneOrMore().Optional().Greedy().FollowedBy("end").Where(name("d")),
			evs("c", "a", "a", "dummy", "d"),
			[]string{"c a a d"}},
		{"GreedyITCase.testGreedyZeroOrMoreWithDummyEventsBeforeQuantifier",
			Begin[fev]("start").Where(name("c")).FollowedBy("middle").Where(name("a")).OneOrMore().Optional().Greedy().FollowedBy("end").Where(name("d")),
			evs("c", "dummy", "d"),
			[]string{"c d"}},
		{"GreedyITCase.testGreedyUtilZeroOrMoreWithDummyEventsAfterQuantifier",
			Begin[fev]("start").Where(name("c")).FollowedBy("middle").Where(name("a")).OneOrMore().Optional().Greedy().
				Until(Simple(func(e fev) bool { return e.Price > 3 })).FollowedBy("end").Where(name("d")),
			fevs{{"c", 1, ""}, {"a", 2, ""}, {"a", 3, ""}, {"a", 3, ""}, {"a", 4, ""}, {"d", 3, ""}},
			[]string{"c a a a d"}},
		{"GreedyITCase.testGreedyUtilWithDummyEventsBeforeQuantifier",
			Begin[fev]("start").Where(name("c")).FollowedBy("middle").Where(name("a")).OneOrMore().Optional().Greedy().
				Until(Simple(func(e fev) bool { return e.Price > 3 })).FollowedBy("end").Where(name("d")),
			fevs{{"c", 1, ""}, {"a", 4, ""}, {"a", 2, ""}, {"a", 3, ""}, {"a", 3, ""}, {"d", 3, ""}},
			[]string{"c d"}},
		{"NotPatternITCase.testNotNext",
			Begin[fev]("start").Where(name("a")).NotNext("notPattern").Where(name("b")).
				FollowedByAny("middle").Where(name("c")).FollowedBy("end").Where(name("d")),
			evs("a1", "c1", "b1", "c2", "d").named("a", "c", "b", "c", "d"),
			[]string{"a1 c1 d", "a1 c2 d"}},
		{"NotPatternITCase.testNotNextNoMatches",
			Begin[fev]("start").Where(name("a")).NotNext("notPattern").Where(name("b")).
				FollowedBy("middle").Where(name("c")).FollowedBy("end").Where(name("d")),
			evs("a1", "b1", "c1", "c2", "d").named("a", "b", "c", "c", "d"),
			nil},
		{"NotPatternITCase.testNotNextNoMatchesAtTheEnd",
			Begin[fev]("start").Where(name("a")).FollowedByAny("middle").Where(name("c")).
				FollowedByAny("end").Where(name("d")).NotNext("notPattern").Where(name("b")),
			evs("a1", "c1", "c2", "d", "b1").named("a", "c", "c", "d", "b"),
			nil},
		{"NotPatternITCase.testNotFollowedBy",
			Begin[fev]("start").Where(name("a")).NotFollowedBy("notPattern").Where(name("b")).
				FollowedByAny("middle").Where(name("c")).FollowedBy("end").Where(name("d")),
			evs("a1", "c1", "b1", "c2", "d").named("a", "c", "b", "c", "d"),
			[]string{"a1 c1 d"}},
		{"NotPatternITCase.testNotFollowedByBeforeOptional",
			Begin[fev]("start").Where(name("a")).NotFollowedBy("notPattern").Where(name("b")).
				FollowedByAny("middle").Where(name("c")).Optional().FollowedBy("end").Where(name("d")),
			evs("a1", "c1", "b1", "c2", "d").named("a", "c", "b", "c", "d"),
			[]string{"a1 c1 d"}},
		{"NotPatternITCase.testTimesWithNotFollowedBy",
			Begin[fev]("start").Where(name("a")).FollowedByAny("middle").Where(name("b")).Times(2).
				NotFollowedBy("notPattern").Where(name("c")).FollowedBy("end").Where(name("d")),
			evs("a1", "b1", "c", "b2", "d").named("a", "b", "c", "b", "d"),
			nil},
		{"NotPatternITCase.testIgnoreStateOfTimesWithNotFollowedBy",
			Begin[fev]("start").Where(name("a")).NotFollowedBy("notPattern").Where(name("b")).
				FollowedByAny("middle").Where(name("c")).Times(2).Optional().FollowedBy("end").Where(name("d")),
			evs("a1", "d1", "e", "b1", "c1", "c2", "d2").named("a", "d", "e", "b", "c", "c", "d"),
			[]string{"a1 d1"}},
		{"NotPatternITCase.testTimesWithNotFollowedByAfter",
			Begin[fev]("start").Where(name("a")).FollowedByAny("middle").Where(name("b")).Times(2).
				NotFollowedBy("notPattern").Where(name("c")).FollowedBy("end").Where(name("d")),
			evs("a1", "d1", "e", "b1", "b2", "c1", "d2").named("a", "d", "e", "b", "b", "c", "d"),
			nil},
	}
	price5 := Simple(func(e fev) bool { return e.Price == 5 })
	untilIn := fevs{{"c", 1, "s"}, {"a", 2, "m1"}, {"a", 3, "m2"}, {"a", 5, "brk"}, {"a", 6, "ign"}}
	untilIn3 := fevs{{"c", 1, "s"}, {"a", 2, "m1"}, {"a", 3, "m2"}, {"a", 4, "m3"}, {"a", 5, "brk"}, {"a", 6, "ign"}}
	untilAny := fevs{{"c", 1, "s"}, {"a", 2, "m1"}, {"a", 3, "m2"}, {"a", 5, "brk"}, {"a", 6, "m3"}}
	middle := func() *Pattern[fev] {
		return Begin[fev]("start").Where(name("c")).FollowedBy("middle").Where(name("a"))
	}
	middleAny := func() *Pattern[fev] {
		return Begin[fev]("start").Where(name("c")).FollowedByAny("middle").Where(name("a"))
	}
	cases = append(cases, []struct {
		name    string
		pattern *Pattern[fev]
		events  fevs
		want    []string
	}{
		{"UntilConditionITCase.testUntilConditionFollowedByOneOrMore",
			middle().OneOrMore().Until(price5).FollowedBy("end").Where(price5), untilIn,
			[]string{"s m1 m2 brk", "s m1 brk"}},
		{"UntilConditionITCase.testUntilConditionFollowedByOneOrMoreCombinations",
			middle().OneOrMore().AllowCombinations().Until(price5).FollowedBy("end").Where(price5), untilIn3,
			[]string{"s m1 m2 m3 brk", "s m1 m2 brk", "s m1 m3 brk", "s m1 brk"}},
		{"UntilConditionITCase.testUntilConditionFollowedByOneOrMoreConsecutive",
			middle().OneOrMore().Consecutive().Until(price5).FollowedBy("end").Where(price5), untilIn,
			[]string{"s m1 m2 brk", "s m1 brk"}},
		{"UntilConditionITCase.testUntilConditionFollowedByZeroOrMore",
			middle().OneOrMore().Optional().Until(price5).FollowedBy("end").Where(price5), untilIn,
			[]string{"s m1 m2 brk", "s m1 brk", "s brk"}},
		{"UntilConditionITCase.testUntilConditionFollowedByZeroOrMoreCombinations",
			middle().OneOrMore().Optional().AllowCombinations().Until(price5).FollowedBy("end").Where(price5), untilIn3,
			[]string{"s m1 m2 m3 brk", "s m1 m2 brk", "s m1 m3 brk", "s m1 brk", "s brk"}},
		{"UntilConditionITCase.testUntilConditionFollowedByZeroOrMoreConsecutive",
			middle().OneOrMore().Optional().Consecutive().Until(price5).FollowedBy("end").Where(price5), untilIn,
			[]string{"s m1 m2 brk", "s m1 brk", "s brk"}},
		{"UntilConditionITCase.testUntilConditionFollowedByAnyOneOrMore",
			middleAny().OneOrMore().Until(price5), untilAny,
			[]string{"s m1 m2", "s m1", "s m2", "s m3"}},
		{"UntilConditionITCase.testUntilConditionFollowedByAnyZeroOrMore",
			middleAny().OneOrMore().Optional().Until(price5), untilAny,
			[]string{"s m1 m2", "s m1", "s m2", "s m3", "s"}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := slices.Clone(c.want)
			slices.Sort(want)
			if got := feed(t, c.pattern, c.events); !slices.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}
