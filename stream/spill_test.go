package stream_test

import (
	"fmt"
	"os"
	"slices"
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

// TestSortMergeJoinSpills joins 300 000 orders with 60 000 customer rows
// (some customers twice, some never) under a 1 MiB budget, each input
// several times the budget: the pairs equal a hash join's.
func TestSortMergeJoinSpills(t *testing.T) {
	orders, customers, want := joinTables()
	for _, p := range []int{1, 3} {
		tmp := t.TempDir()
		env := newEnv(t, p, "execution.runtime-mode", "BATCH", "taskmanager.memory.managed.size", "1m", "io.tmp.dirs", tmp)
		byCustomer := stream.KeyBy(stream.FromSlice(env, orders), func(o order) int64 { return o.Customer })
		cs := stream.KeyBy(stream.FromSlice(env, customers), func(c customer) int64 { return c.ID })
		got := stream.Collect(stream.SortMergeJoin(byCustomer, cs, func(o order, c customer, out stream.Collector[string]) error {
			out.Collect(fmt.Sprintf("%d %d %s", o.ID, o.Amount, c.Name))
			return nil
		}))
		before := stream.SpilledRuns()
		if err := execute(t, env); err != nil {
			t.Fatal(err)
		}
		if runs := stream.SpilledRuns() - before; runs < int64(4*p) {
			t.Errorf("p=%d: %d runs spilled, want several per input and subtask", p, runs)
		}
		vs := got.Values()
		slices.Sort(vs)
		if !slices.Equal(vs, want) {
			t.Fatalf("p=%d: %d pairs, want %d (or they differ)", p, len(vs), len(want))
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("p=%d: files left in io.tmp.dirs: %v", p, left)
		}
	}
}

type order struct {
	ID, Customer, Amount int64
}

type customer struct {
	ID   int64
	Name string
}

// joinTables generates the inputs of the join tests, 300 000 orders over
// customers 0 to 69 999 and 60 060 customer records (every thousandth
// customer twice; customers 60 000 and up have orders but no record), and
// the inner join's lines "order amount name", sorted.
func joinTables() ([]order, []customer, []string) {
	var orders []order
	for i := int64(0); i < 300_000; i++ {
		orders = append(orders, order{i, (i * 7919) % 70_000, i % 1000})
	}
	var customers []customer
	for c := int64(0); c < 60_000; c++ {
		customers = append(customers, customer{c, fmt.Sprintf("customer-%d", c)})
		if c%1000 == 0 {
			customers = append(customers, customer{c, fmt.Sprintf("customer-%d-again", c)})
		}
	}
	return orders, customers, joinReference(orders, customers)
}

// joinReference is the inner join of orders and customers, as sorted
// "order amount name" lines.
func joinReference(orders []order, customers []customer) []string {
	byID := make(map[int64][]customer)
	for _, c := range customers {
		byID[c.ID] = append(byID[c.ID], c)
	}
	var want []string
	for _, o := range orders {
		for _, c := range byID[o.Customer] {
			want = append(want, fmt.Sprintf("%d %d %s", o.ID, o.Amount, c.Name))
		}
	}
	slices.Sort(want)
	return want
}
