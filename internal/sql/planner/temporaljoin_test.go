package planner

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// TestTemporalJoinChangelogVersions: a versioned table given as a
// changelog (+I, -U/+U, -D): a -U is no version, a +U is the new version
// from its time, a -D ends validity from its time, and a later +I starts
// a new one. Left rows join the version valid at their time.
func TestTemporalJoinChangelogVersions(t *testing.T) {
	ts := func(ms int64) types.Timestamp { return types.Timestamp{Millis: ms} }
	rtypes := []types.DataType{types.String(), types.BigInt(), types.TimestampType(3)}
	ltypes := []types.DataType{types.String(), types.BigInt(), types.TimestampType(3)}
	right := []types.Record{
		{Kind: types.Insert, Row: types.Row{"a", int64(1), ts(10)}},
		{Kind: types.UpdateBefore, Row: types.Row{"a", int64(1), ts(10)}},
		{Kind: types.UpdateAfter, Row: types.Row{"a", int64(2), ts(20)}},
		{Kind: types.Delete, Row: types.Row{"a", int64(2), ts(30)}},
		{Kind: types.Insert, Row: types.Row{"a", int64(4), ts(40)}},
		{Kind: types.Insert, Row: types.Row{"c", int64(7), ts(0)}},
	}
	// Left rows: key, id, time; want: the rate each joins (0: none).
	type probe struct {
		k    string
		at   int64
		want int64
	}
	probes := []probe{{"a", 5, 0}, {"a", 10, 1}, {"a", 15, 1}, {"a", 20, 2}, {"a", 25, 2}, {"a", 30, 0}, {"a", 35, 0},
		{"a", 40, 4}, {"a", 50, 4}, {"b", 20, 0}, {"c", 99, 7}}
	var left []types.Record
	for i, p := range probes {
		left = append(left, types.Record{Kind: types.Insert, Row: types.Row{p.k, int64(i), ts(p.at)}})
	}
	for _, outer := range []bool{false, true} {
		cfg := config.New()
		config.Parallelism.Set(cfg, 1)
		env := stream.NewEnvironmentWithConfig(cfg)
		l := withCodec(stream.FromSlice(env, left), []Field{{Name: "k", Type: ltypes[0]}, {Name: "id", Type: ltypes[1]}, {Name: "t", Type: ltypes[2]}})
		r := withCodec(stream.FromSlice(env, right), []Field{{Name: "k", Type: rtypes[0]}, {Name: "rate", Type: rtypes[1]}, {Name: "t", Type: rtypes[2]}})
		f := &temporalJoinFunc{joinRows: joinRows{lTypes: ltypes, rTypes: rtypes}, v: &Versioned{LeftTime: 2, RightTime: 2, PK: []int{0}}, outer: outer,
			ctx: &Translator{Ctx: &functions.Context{}}}
		key := versionKey([]int{0}, ltypes, ltypes[:1])
		ks := stream.ConnectKeyed(stream.KeyBy(l, key), stream.KeyBy(r, key))
		got := stream.Collect(stream.KeyedCoProcess[string, types.Record, types.Record, types.Record](ks, f))
		if err := env.Execute(context.Background(), "temporal"); err != nil {
			t.Fatal(err)
		}
		var rows, want []string
		for _, rec := range got.Values() {
			rows = append(rows, fmt.Sprint(rec.Row[1], rec.Row[4]))
		}
		for i, p := range probes {
			switch {
			case p.want != 0:
				want = append(want, fmt.Sprint(int64(i), p.want))
			case outer:
				want = append(want, fmt.Sprint(int64(i), nil))
			}
		}
		slices.Sort(rows)
		slices.Sort(want)
		if !slices.Equal(rows, want) {
			t.Errorf("outer=%v:\n got %v\nwant %v", outer, rows, want)
		}
	}
}
