package stream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/stream"
)

// The seeds' example: a source and a map at parallelism 4 and a reduce at
// 3 need 4 slots with slot sharing, one slot per subtask index.
func TestSlotSharingNeedsTheHighestParallelism(t *testing.T) {
	env := newEnv(t, 4)
	m := stream.Map(stream.FromSlice(env, seq(100)), func(v int64) int64 { return v })
	r := stream.KeyBy(m, func(v int64) int64 { return v % 7 }).Reduce(func(a, b int64) int64 { return a + b }).SetParallelism(3)
	stream.Collect(r).SetParallelism(3)
	job, err := env.ExecuteAsync(context.Background(), "slots")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	slots := job.Slots()
	if len(slots) != 4 {
		t.Fatalf("job used %d slots, want 4", len(slots))
	}
	for i, s := range slots {
		want := 2
		if i == 3 {
			want = 1 // the reduce has only 3 subtasks
		}
		if len(s.Tasks) != want {
			t.Errorf("slot %d runs %v, want %d tasks", i, s.Tasks, want)
		}
	}
	for _, v := range job.ExecutionGraph().Vertices {
		for _, ev := range v.TaskVertices {
			ex := ev.Current()
			if ex.State() != graph.StateFinished || ex.AttemptID == "" || ex.AttemptNumber != 0 {
				t.Errorf("%s: state %s, attempt %q #%d", ev.TaskName(), ex.State(), ex.AttemptID, ex.AttemptNumber)
			}
			if ex.Slot.Index != ev.SubtaskIndex {
				t.Errorf("%s runs in slot %d", ev.TaskName(), ex.Slot.Index)
			}
		}
	}
}

func TestSlotSharingGroupsNeedTheirOwnSlots(t *testing.T) {
	env := newEnv(t, 2)
	m := stream.Map(stream.FromSlice(env, seq(10)), func(v int64) int64 { return v }).SlotSharingGroup("heavy").SetParallelism(3)
	stream.Collect(m).SlotSharingGroup("default")
	job, err := env.ExecuteAsync(context.Background(), "groups")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(job.Slots()); n != 5 {
		t.Fatalf("job used %d slots, want 2 (default) + 3 (heavy)", n)
	}
}

func TestNotEnoughSlots(t *testing.T) {
	env := newEnv(t, 3, "taskmanager.numberOfTaskSlots", "2")
	stream.Collect(stream.FromSlice(env, seq(10)))
	err := env.Execute(context.Background(), "too-wide")
	if err == nil || !strings.Contains(err.Error(), "needs 3 task slots") || !strings.Contains(err.Error(), "has 2") {
		t.Fatalf("err = %v", err)
	}
}

func TestPointwiseConnections(t *testing.T) {
	cases := []struct {
		p, q int
		want [][]int
	}{
		{3, 3, [][]int{{0}, {1}, {2}}},
		{4, 2, [][]int{{0}, {0}, {1}, {1}}},
		{2, 4, [][]int{{0, 1}, {2, 3}}},
		{2, 3, [][]int{{0, 1}, {2}}},
		{3, 2, [][]int{{0}, {1}, {1}}},
	}
	for _, c := range cases {
		covered := make(map[int]bool)
		for i := 0; i < c.p; i++ {
			got := graph.PointwiseConsumers(i, c.p, c.q)
			if len(got) != len(c.want[i]) {
				t.Fatalf("p=%d q=%d producer %d: %v, want %v", c.p, c.q, i, got, c.want[i])
			}
			for k := range got {
				if got[k] != c.want[i][k] {
					t.Fatalf("p=%d q=%d producer %d: %v, want %v", c.p, c.q, i, got, c.want[i])
				}
				covered[got[k]] = true
			}
		}
		if len(covered) != c.q {
			t.Fatalf("p=%d q=%d: consumers covered %v", c.p, c.q, covered)
		}
	}
}
