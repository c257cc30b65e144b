package stream_test

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/weirproject/weir/stream"
)

// hashJoin joins orders (probe side) with customers (build side) by
// HashJoin in batch mode at parallelism p within a managed memory budget,
// and returns the sorted pairs, the runs spilled and the partitions
// partitioned again. It fails the test if a file stays behind.
func hashJoin(t *testing.T, orders []order, customers []customer, budget string, p int) (pairs []string, spilled, repartitioned int64) {
	t.Helper()
	tmp := t.TempDir()
	env := newEnv(t, p, "execution.runtime-mode", "BATCH", "taskmanager.memory.managed.size", budget, "io.tmp.dirs", tmp)
	probe := stream.KeyBy(stream.FromSlice(env, orders), func(o order) int64 { return o.Customer })
	build := stream.KeyBy(stream.FromSlice(env, customers), func(c customer) int64 { return c.ID })
	got := stream.Collect(stream.HashJoin(probe, build, func(o order, c customer, out stream.Collector[string]) error {
		out.Collect(fmt.Sprintf("%d %d %s", o.ID, o.Amount, c.Name))
		return nil
	}))
	spilledBefore, repartitionedBefore := stream.SpilledRuns(), stream.Repartitioned()
	if err := execute(t, env); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("budget %s, p=%d: files left in io.tmp.dirs: %v", budget, p, left)
	}
	pairs = got.Values()
	slices.Sort(pairs)
	return pairs, stream.SpilledRuns() - spilledBefore, stream.Repartitioned() - repartitionedBefore
}

// TestHashJoin joins 300 000 orders (probe side) with 60 060 customer
// records (build side; every thousandth customer twice, and customers
// without orders) at parallelism 1 and 3, within a 1 MiB budget, where
// partitions spill, and within the default budget, where none do: the
// pairs equal the reference, and no file stays behind.
func TestHashJoin(t *testing.T) {
	orders, customers, want := joinTables()
	for _, budget := range []string{"1m", "256m"} {
		for _, p := range []int{1, 3} {
			got, spilled, _ := hashJoin(t, orders, customers, budget, p)
			if budget == "1m" && spilled < int64(p) {
				t.Errorf("budget %s, p=%d: %d partitions spilled, want several", budget, p, spilled)
			}
			if budget == "256m" && spilled != 0 {
				t.Errorf("budget %s, p=%d: %d partitions spilled, want none", budget, p, spilled)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("budget %s, p=%d: %d pairs, want %d (or they differ)", budget, p, len(got), len(want))
			}
		}
	}
}

// TestHashJoinPartitionsAgain joins 2 million customer records (the
// build side, about 40 MiB encoded) with 200 000 orders within a 1 MiB
// budget: each of the 32 partitions' build side exceeds the memory share,
// so each is partitioned again by another hash, and the pairs equal the
// reference.
func TestHashJoinPartitionsAgain(t *testing.T) {
	var customers []customer
	for c := range int64(2_000_000) {
		customers = append(customers, customer{c, fmt.Sprintf("customer-%d", c)})
	}
	var orders []order
	for i := range int64(200_000) {
		orders = append(orders, order{i, (i * 7919) % 2_100_000, i % 1000})
	}
	want := joinReference(orders, customers)
	got, _, repartitioned := hashJoin(t, orders, customers, "1m", 1)
	if repartitioned < 32 {
		t.Errorf("%d partitions were partitioned again, want every one of 32", repartitioned)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d pairs, want %d (or they differ)", len(got), len(want))
	}
}

// TestHashJoinSkewedKeyInBlocks joins a build side in which one key has
// 150 000 records (about 2 MiB, twice the budget), which no hash can
// split: after the last level of partitioning the build side is loaded in
// blocks that fit, the probe side streams past each block, and the pairs
// equal the reference.
func TestHashJoinSkewedKeyInBlocks(t *testing.T) {
	var orders []order
	for i := range int64(3000) {
		orders = append(orders, order{i, 100 + i%50, i % 1000}) // 60 orders of each of 50 customers
	}
	orders = append(orders, order{3000, 7, 1}, order{3001, 7, 2})
	var customers []customer
	for i := range int64(150_000) {
		customers = append(customers, customer{7, fmt.Sprintf("n%d", i)})
	}
	for c := int64(0); c < 200; c++ {
		customers = append(customers, customer{c, fmt.Sprintf("customer-%d", c)})
	}
	want := joinReference(orders, customers)
	got, _, repartitioned := hashJoin(t, orders, customers, "1m", 1)
	if repartitioned < maxLevels {
		t.Errorf("%d partitionings, want at least %d (one per level)", repartitioned, maxLevels)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d pairs, want %d (or they differ)", len(got), len(want))
	}
}

// maxLevels is HashJoin's limit of partitioning levels.
const maxLevels = 3
