package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/stream"
)

// referenceSessions is the obvious computation: sort each user's clicks by
// time and cut where the gap to the previous click reaches gap.
func referenceSessions(clicks []Click, gap int64) []string {
	byUser := make(map[string][]int64)
	for _, c := range clicks {
		byUser[c.User] = append(byUser[c.User], c.TS)
	}
	var out []string
	for u, ts := range byUser {
		slices.Sort(ts)
		start, n := ts[0], int64(1)
		for i := 1; i < len(ts); i++ {
			if ts[i] >= ts[i-1]+gap {
				out = append(out, Session{u, start, ts[i-1] + gap, n}.String())
				start, n = ts[i], 0
			}
			n++
		}
		out = append(out, Session{u, start, ts[len(ts)-1] + gap, n}.String())
	}
	sort.Strings(out)
	return out
}

func TestSessionsMatchTheReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	const gap, disorder = 100, 40
	var clicks []Click
	ts := int64(0)
	for i := 0; i < 3000; i++ {
		ts += int64(rng.IntN(30))
		clicks = append(clicks, Click{User: fmt.Sprintf("u%d", rng.IntN(20)), TS: ts})
	}
	// Each click arrives up to disorder-1 ms after its event time, so the
	// stream is out of order by less than the bound and nothing is late.
	arrival := make(map[*Click]int64)
	ptrs := make([]*Click, len(clicks))
	for i := range clicks {
		ptrs[i] = &clicks[i]
		arrival[ptrs[i]] = clicks[i].TS + int64(rng.IntN(disorder))
	}
	sort.SliceStable(ptrs, func(a, b int) bool { return arrival[ptrs[a]] < arrival[ptrs[b]] })
	shuffled := make([]Click, len(ptrs))
	for i, c := range ptrs {
		shuffled[i] = *c
	}
	clicks = shuffled
	var lines []string
	for _, c := range clicks {
		lines = append(lines, fmt.Sprintf("%s,%d", c.User, c.TS))
	}
	want := referenceSessions(clicks, gap)
	for _, p := range []int{1, 2, 4} {
		cfg := config.New()
		config.Parallelism.Set(cfg, p)
		env := stream.NewEnvironmentWithConfig(cfg)
		got := stream.Collect(Build(stream.FromSlice(env, lines).SetParallelism(1), gap*time.Millisecond, disorder*time.Millisecond))
		if err := env.Execute(context.Background(), "sessionize"); err != nil {
			t.Fatal(err)
		}
		var g []string
		for _, s := range got.Values() {
			g = append(g, s.String())
		}
		sort.Strings(g)
		if !slices.Equal(g, want) {
			t.Fatalf("p=%d: %d sessions, want %d\nfirst got  %v\nfirst want %v", p, len(g), len(want), g[:min(3, len(g))], want[:min(3, len(want))])
		}
	}
}

func TestMalformedLineFailsTheJob(t *testing.T) {
	env := stream.NewEnvironmentWithConfig(nil)
	stream.Collect(Build(stream.FromSlice(env, []string{"a,1", "b;2"}).SetParallelism(1), time.Second, 0))
	err := env.Execute(context.Background(), "bad")
	if err == nil || !strings.Contains(err.Error(), `process "parse" (1/1)`) || !strings.Contains(err.Error(), `"b;2"`) {
		t.Fatalf("err = %v", err)
	}
}
