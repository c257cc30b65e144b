package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func sumSpec(max int64) *IterationSpec {
	return &IterationSpec{ID: "it", MaxSupersteps: max, Aggregators: []AggregatorSpec{{
		Name:  "sum",
		New:   func() any { return new(int64) },
		Merge: func(into, from any) { *into.(*int64) += *from.(*int64) },
		Encode: func(v any) ([]byte, error) {
			return binary.AppendVarint(nil, *v.(*int64)), nil
		},
		Decode: func(b []byte) (any, error) {
			v, n := binary.Varint(b)
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			return &v, nil
		},
	}}}
}

// TestSuperstepSyncAcrossProcesses wires a follower's sync to a leader's
// as the control links do: reports, including one whose accumulator was
// never touched, reach the leader encoded, and the decision comes back.
func TestSuperstepSyncAcrossProcesses(t *testing.T) {
	spec := sumSpec(2)
	spec.Converged = func(k int64, aggs []any) bool { return *aggs[0].(*int64) > 100 }
	leader, follower := newSuperstepSync(spec, 2, 2), newSuperstepSync(spec, 2, 2)
	follower.forward = func(k int64, enc [][]byte) error { return leader.addEncoded(k, enc) }
	leader.broadcast = func(d *SuperstepDecision) error {
		enc, err := leader.encode(d.Aggregates)
		if err != nil {
			return err
		}
		fd, err := follower.decodeDecision(d.Superstep, d.Terminate, enc)
		if err != nil {
			return err
		}
		follower.decide(fd)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	five := int64(5)
	for k := int64(0); k <= 1; k++ {
		if err := follower.report(k, []any{nil}); err != nil {
			t.Fatal(err)
		}
		if err := leader.report(k, []any{&five}); err != nil {
			t.Fatal(err)
		}
		d, err := follower.wait(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got := *d.Aggregates[0].(*int64); got != 5 || d.Terminate {
			t.Fatalf("superstep %d: decision %+v (sum %d), want sum 5 and no termination", k, d, got)
		}
	}
	// Superstep 2 is the last: the decision terminates, and the final
	// decision answers a wait for a later superstep.
	big := int64(200)
	follower.report(2, []any{&big})
	leader.report(2, nil)
	d, err := follower.wait(ctx, 5)
	if err != nil || !d.Terminate || d.Superstep != 2 || *d.Aggregates[0].(*int64) != 200 {
		t.Fatalf("final decision %+v, %v", d, err)
	}
	if _, err := leader.decodeDecision(1, false, nil); err == nil {
		t.Error("a decision without its aggregates was accepted")
	}
	if err := leader.addEncoded(3, [][]byte{{0x80}}); err == nil {
		t.Error("a report with a corrupt aggregate was accepted")
	}
}

func TestSuperstepSyncConvergesEarly(t *testing.T) {
	spec := sumSpec(10)
	spec.Converged = func(k int64, aggs []any) bool { return k > 0 && *aggs[0].(*int64) == 0 }
	s := newSuperstepSync(spec, 1, 1)
	zero := int64(0)
	s.report(0, nil)
	s.report(1, []any{&zero})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.waitFinal(ctx)
	if err != nil || d.Superstep != 1 || !d.Terminate {
		t.Fatalf("final %+v, %v; want termination after superstep 1", d, err)
	}
}
