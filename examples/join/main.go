// Join joins generated orders with their customers: in batch mode with a
// sort-merge join that sorts both inputs within the memory budget
// (taskmanager.memory.managed.size) and spills sorted runs to io.tmp.dirs,
// in streaming mode with a keyed co-process function that keeps both
// sides in keyed state and emits every match as soon as both sides of it
// arrived. Both give the same lines.
//
//	go run ./examples/join [--orders N] [--customers M] [--mode batch|streaming] [--output DIR] [-p N]
//
// Order i belongs to customer (i × 7919) mod M and carries a 24-character
// note; every thousandth customer has a second record, so its orders
// match twice. The output, part files under DIR (stdout without
// --output), has lines "order amount customer-name note".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// Order is a row of the larger table.
type Order struct {
	ID, Customer, Amount int64
	Note                 string
}

// Customer is a row of the smaller table.
type Customer struct {
	ID   int64
	Name string
}

// Orders generates n orders over m customers.
func Orders(n, m int64) func(i int64) Order {
	return func(i int64) Order {
		return Order{ID: i, Customer: (i * 7919) % m, Amount: i % 1000, Note: fmt.Sprintf("note-%019d", i*31)}
	}
}

// Customers generates m customers, and a second record of every
// thousandth one, as m + m/1000 records.
func Customers(m int64) func(i int64) Customer {
	return func(i int64) Customer {
		if i >= m {
			c := (i - m) * 1000
			return Customer{ID: c, Name: fmt.Sprintf("customer-%d-again", c)}
		}
		return Customer{ID: i, Name: fmt.Sprintf("customer-%d", i)}
	}
}

// Line is an output line.
func Line(o Order, c Customer) string {
	return fmt.Sprintf("%d %d %s %s", o.ID, o.Amount, c.Name, o.Note)
}

// Build adds the join of n orders with m customers to env.
func Build(env *stream.Environment, n, m int64, streaming bool) *stream.Stream[string] {
	orders := stream.FromSource[Order](env, &stream.Generator[Order]{Count: n, Fn: Orders(n, m)}, "orders")
	customers := stream.FromSource[Customer](env, &stream.Generator[Customer]{Count: m + m/1000, Fn: Customers(m)}, "customers")
	byCustomer := stream.KeyBy(orders, func(o Order) int64 { return o.Customer })
	byID := stream.KeyBy(customers, func(c Customer) int64 { return c.ID })
	if streaming {
		return stream.KeyedCoProcess(stream.ConnectKeyed(byCustomer, byID), stream.KeyedCoProcessFunction[int64, Order, Customer, string](&hashJoin{}))
	}
	return stream.SortMergeJoin(byCustomer, byID, func(o Order, c Customer, out stream.Collector[string]) error {
		out.Collect(Line(o, c))
		return nil
	})
}

// hashJoin is the streaming join: each side's records of a key in list
// state, every arrival matched against the other side's.
type hashJoin struct {
	orders    state.ListState[Order]
	customers state.ListState[Customer]
}

func (h *hashJoin) Open(ctx *stream.KeyedContext[int64]) error {
	h.orders = state.List[Order](ctx.State(), "orders")
	h.customers = state.List[Customer](ctx.State(), "customers")
	return nil
}

func (h *hashJoin) ProcessElement1(o Order, ctx *stream.KeyedContext[int64], out stream.Collector[string]) error {
	for _, c := range h.customers.Get() {
		out.Collect(Line(o, c))
	}
	h.orders.Add(o)
	return nil
}

func (h *hashJoin) ProcessElement2(c Customer, ctx *stream.KeyedContext[int64], out stream.Collector[string]) error {
	for _, o := range h.orders.Get() {
		out.Collect(Line(o, c))
	}
	h.customers.Add(c)
	return nil
}

func main() {
	orders := flag.Int64("orders", 1_000_000, "generate `N` orders")
	customers := flag.Int64("customers", 100_000, "generate `M` customers")
	mode := flag.String("mode", "batch", "`mode` batch (sort-merge join) or streaming (keyed state)")
	output := flag.String("output", "", "write the joined lines to part files under `dir` (default: stdout)")
	env := stream.NewEnvironment()
	if *orders < 0 || *customers < 1 {
		fail(2, fmt.Errorf("want --orders ≥ 0 and --customers ≥ 1, got %d and %d", *orders, *customers))
	}
	switch *mode {
	case "batch":
		env.SetRuntimeMode(stream.Batch)
	case "streaming":
		env.SetRuntimeMode(stream.Streaming)
	default:
		fail(2, fmt.Errorf("invalid value %q for flag --mode: want batch or streaming", *mode))
	}
	joined := Build(env, *orders, *customers, *mode == "streaming")
	if *output != "" {
		stream.SinkTo(joined, file.Text[string](*output, nil), "files")
	} else {
		stream.Print(joined)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := env.Execute(ctx, "join"); err != nil {
		fail(1, err)
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "join:", err)
	os.Exit(code)
}
