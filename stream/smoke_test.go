package stream_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/stream"
)

type wc struct {
	Word  string
	Count int64
}

func TestSmokeWordCount(t *testing.T) {
	for _, p := range []int{1, 2, 4} {
		for _, ser := range []bool{false, true} {
			cfg := config.New()
			config.Parallelism.Set(cfg, p)
			config.ForceSerialization.Set(cfg, ser)
			env := stream.NewEnvironmentWithConfig(cfg).SetRuntimeMode(stream.Batch)
			lines := stream.FromSlice(env, []string{"a b c", "a b", "a"})
			words := stream.FlatMap(lines, func(l string, out stream.Collector[wc]) {
				for _, w := range strings.Fields(l) {
					out.Collect(wc{w, 1})
				}
			})
			counts := stream.Sum(stream.KeyBy(words, func(w wc) string { return w.Word }), func(w *wc) *int64 { return &w.Count })
			got := stream.Collect(counts)
			if err := env.Execute(context.Background(), "wc"); err != nil {
				t.Fatal(err)
			}
			vals := got.Values()
			sort.Slice(vals, func(i, j int) bool { return vals[i].Word < vals[j].Word })
			if len(vals) != 3 || vals[0] != (wc{"a", 3}) || vals[1] != (wc{"b", 2}) || vals[2] != (wc{"c", 1}) {
				t.Fatalf("p=%d ser=%v: %v", p, ser, vals)
			}
		}
	}
}
