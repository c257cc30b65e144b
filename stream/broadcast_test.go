package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// enrich holds currency rates from the broadcast side and converts
// amounts; amounts in unknown currencies wait until Finish.
type enrich struct {
	rates   state.MapState[string, float64]
	pending []string
}

func (e *enrich) Open(ctx *stream.BroadcastContext) error {
	e.rates = state.BroadcastMap[string, float64](ctx.BroadcastState(), "rates")
	return nil
}

func (e *enrich) ProcessElement(v string, _ *stream.BroadcastContext, out stream.Collector[string]) error {
	cur, amount, _ := strings.Cut(v, ":")
	if r, ok := e.rates.Get(cur); ok {
		out.Collect(fmt.Sprintf("%s=%g", v, r*float64(len(amount))))
	} else {
		e.pending = append(e.pending, v)
	}
	return nil
}

func (e *enrich) ProcessBroadcastElement(r string, _ *stream.BroadcastContext, _ stream.Collector[string]) error {
	cur, _, _ := strings.Cut(r, "=")
	e.rates.Put(cur, float64(len(r)))
	return nil
}

func (e *enrich) Finish(_ *stream.Context, out stream.Collector[string]) error {
	for _, v := range e.pending {
		cur, amount, _ := strings.Cut(v, ":")
		r, _ := e.rates.Get(cur)
		out.Collect(fmt.Sprintf("%s=%g", v, r*float64(len(amount))))
	}
	return nil
}

func TestBroadcastStateReachesEverySubtask(t *testing.T) {
	for _, p := range []int{1, 3} {
		env := newEnv(t, p)
		var in, want []string
		for i := 0; i < 300; i++ {
			v := fmt.Sprintf("c%d:%s", i%3, strings.Repeat("x", i%5+1))
			in = append(in, v)
			// rate of cN is len("cN=r") = 4, times the amount's length.
			want = append(want, fmt.Sprintf("%s=%d", v, 4*(i%5+1)))
		}
		rules := stream.FromSlice(env, []string{"c0=r", "c1=r", "c2=r"}).SetParallelism(1)
		got := stream.Collect(stream.ConnectBroadcast[string, string, string](stream.FromSlice(env, in), rules, &enrich{}))
		if err := env.Execute(context.Background(), "broadcast"); err != nil {
			t.Fatal(err)
		}
		if g, w := sorted(got.Values(), strings.Compare), sorted(want, strings.Compare); !slices.Equal(g, w) {
			t.Fatalf("p=%d: got %d results, want %d; first %v", p, len(g), len(w), g[:min(3, len(g))])
		}
	}
}

type writesOnRegularSide struct{ m state.MapState[string, int] }

func (w *writesOnRegularSide) Open(ctx *stream.BroadcastContext) error {
	w.m = state.BroadcastMap[string, int](ctx.BroadcastState(), "m")
	return nil
}

func (w *writesOnRegularSide) ProcessElement(v int64, _ *stream.BroadcastContext, _ stream.Collector[int64]) error {
	w.m.Put("x", 1)
	return nil
}

func (w *writesOnRegularSide) ProcessBroadcastElement(int64, *stream.BroadcastContext, stream.Collector[int64]) error {
	return nil
}

func TestBroadcastStateIsReadOnlyOnTheRegularSide(t *testing.T) {
	env := newEnv(t, 1)
	stream.Collect(stream.ConnectBroadcast[int64, int64, int64](stream.FromSlice(env, []int64{1}), stream.FromSlice(env, []int64{2}), &writesOnRegularSide{}))
	err := env.Execute(context.Background(), "ro")
	if !errors.Is(err, state.ErrReadOnlyBroadcastState) || !strings.Contains(err.Error(), `broadcast-process "BroadcastProcess" (1/1)`) {
		t.Fatalf("err = %v", err)
	}
}
