package stream_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/weirproject/weir/stream"
)

// TestBatchReduceSpills sums 200 000 keys under a 1 MiB budget: the
// reduces spill sorted runs and merge them, and every key's sum is right
// and appears once, at every parallelism; the run files are gone after.
func TestBatchReduceSpills(t *testing.T) {
	type kv struct {
		Key string
		N   int64
	}
	const keys = 200_000
	for _, p := range []int{1, 3} {
		tmp := t.TempDir()
		env := newEnv(t, p, "execution.runtime-mode", "BATCH", "taskmanager.memory.managed.size", "1m", "io.tmp.dirs", tmp)
		src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: 3 * keys, Fn: func(i int64) kv {
			return kv{fmt.Sprintf("key-%07d", (i*7919)%keys), i % 3}
		}}, "keys")
		sums := stream.Sum(stream.KeyBy(src, func(v kv) string { return v.Key }), func(v *kv) *int64 { return &v.N })
		got := stream.Collect(sums)
		before := stream.SpilledRuns()
		if err := execute(t, env); err != nil {
			t.Fatal(err)
		}
		if runs := stream.SpilledRuns() - before; runs < int64(2*p) {
			t.Errorf("p=%d: %d runs spilled, want several per subtask", p, runs)
		}
		want := make(map[string]int64)
		for i := int64(0); i < 3*keys; i++ {
			want[fmt.Sprintf("key-%07d", (i*7919)%keys)] += i % 3
		}
		seen := make(map[string]bool)
		for _, v := range got.Values() {
			if seen[v.Key] {
				t.Fatalf("p=%d: key %s twice", p, v.Key)
			}
			seen[v.Key] = true
			if v.N != want[v.Key] {
				t.Fatalf("p=%d: key %s sums to %d, want %d", p, v.Key, v.N, want[v.Key])
			}
		}
		if len(seen) != keys {
			t.Fatalf("p=%d: %d keys, want %d", p, len(seen), keys)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("p=%d: files left in io.tmp.dirs: %v", p, left)
		}
	}
}
