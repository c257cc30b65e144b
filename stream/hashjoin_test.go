package stream_test

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/weirproject/weir/stream"
)

// TestHashJoin joins 300 000 orders (probe side) with 60 060 customer
// records (build side; every thousandth customer twice, and customers
// without orders) at parallelism 1 and 3, within a 1 MiB budget, where
// partitions spill, and within the default budget, where none do: the
// pairs equal the reference, and no file stays behind.
func TestHashJoin(t *testing.T) {
	orders, customers, want := joinTables()
	for _, budget := range []string{"1m", "256m"} {
		for _, p := range []int{1, 3} {
			tmp := t.TempDir()
			env := newEnv(t, p, "execution.runtime-mode", "BATCH", "taskmanager.memory.managed.size", budget, "io.tmp.dirs", tmp)
			probe := stream.KeyBy(stream.FromSlice(env, orders), func(o order) int64 { return o.Customer })
			build := stream.KeyBy(stream.FromSlice(env, customers), func(c customer) int64 { return c.ID })
			got := stream.Collect(stream.HashJoin(probe, build, func(o order, c customer, out stream.Collector[string]) error {
				out.Collect(fmt.Sprintf("%d %d %s", o.ID, o.Amount, c.Name))
				return nil
			}))
			before := stream.SpilledRuns()
			if err := execute(t, env); err != nil {
				t.Fatal(err)
			}
			spilled := stream.SpilledRuns() - before
			if budget == "1m" && spilled < int64(p) {
				t.Errorf("budget %s, p=%d: %d partitions spilled, want several", budget, p, spilled)
			}
			if budget == "256m" && spilled != 0 {
				t.Errorf("budget %s, p=%d: %d partitions spilled, want none", budget, p, spilled)
			}
			vs := got.Values()
			slices.Sort(vs)
			if !slices.Equal(vs, want) {
				t.Fatalf("budget %s, p=%d: %d pairs, want %d (or they differ)", budget, p, len(vs), len(want))
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("budget %s, p=%d: files left in io.tmp.dirs: %v", budget, p, left)
			}
		}
	}
}
