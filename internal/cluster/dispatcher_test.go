package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSlotPoolAllocateOnOne(t *testing.T) {
	p := NewSlotPool()
	now := time.Now()
	p.Register(Registration{ResourceID: "a", RegistrationID: "1", Slots: 3}, now)
	p.Register(Registration{ResourceID: "b", RegistrationID: "1", Slots: 2}, now)
	if _, largest, ok := p.AllocateOnOne("j1", 4); ok || largest != 3 {
		t.Fatalf("4 slots on one of 3+2: ok %v, largest free %d", ok, largest)
	}
	tm, free, ok := p.AllocateOnOne("j1", 2)
	if !ok || tm.ResourceID != "a" || free != 1 {
		t.Fatalf("2 slots: %+v, free %d, ok %v; want a, which has the most free slots", tm, free, ok)
	}
	tm, _, ok = p.AllocateOnOne("j2", 2)
	if !ok || tm.ResourceID != "b" {
		t.Fatalf("2 more slots: %+v, %v; want b", tm, ok)
	}
	if _, largest, ok := p.AllocateOnOne("j3", 2); ok || largest != 1 {
		t.Fatalf("2 slots with 1+0 free: ok %v, largest %d", ok, largest)
	}
	if n := p.Release("j1"); n != 2 {
		t.Fatalf("Release(j1) = %d", n)
	}
	if _, _, free := p.Totals(); free != 3 {
		t.Fatalf("free after release = %d", free)
	}
}

func TestJobPlanSlotsNeeded(t *testing.T) {
	// The seeds' example: source 4 and map 4 share slots with reduce 3;
	// a sink in a group of its own adds its parallelism.
	var plan JobPlan
	err := json.Unmarshal([]byte(`{"Vertices": [
		{"Name": "source", "Parallelism": 4, "SlotSharingGroup": "default"},
		{"Name": "map", "Parallelism": 4, "SlotSharingGroup": "default"},
		{"Name": "reduce", "Parallelism": 3, "SlotSharingGroup": "default"},
		{"Name": "sink", "Parallelism": 2, "SlotSharingGroup": "sinks"}]}`), &plan)
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.SlotsNeeded(); n != 6 {
		t.Errorf("SlotsNeeded = %d, want 4 + 2", n)
	}
}

func TestJobConfigRestartStrategy(t *testing.T) {
	for _, tt := range []struct {
		sub      JobSubmission
		plan     JobPlan
		restarts int // before the strategy gives up
	}{
		{JobSubmission{}, JobPlan{}, 3}, // fixed-delay, Flink's default for checkpointed jobs
		{JobSubmission{Options: []string{"restart-strategy.type=none"}}, JobPlan{}, 0},
		{JobSubmission{Options: []string{"restart-strategy.fixed-delay.attempts=1"}}, JobPlan{}, 1},
		// -D in the program's arguments comes after the options.
		{JobSubmission{Options: []string{"restart-strategy.type=none"},
			Args: []string{"--input", "x", "-D", "restart-strategy.type=fixed-delay", "-D=restart-strategy.fixed-delay.attempts=2"}}, JobPlan{}, 2},
		// The plan's configuration is what the program ran with: its -D
		// options, then what its code set, which wins.
		{JobSubmission{Options: []string{"restart-strategy.fixed-delay.attempts=1"}},
			JobPlan{Configuration: map[string]string{"restart-strategy.fixed-delay.attempts": "4"}}, 4},
		// A key this JobManager does not know is the workers' business.
		{JobSubmission{}, JobPlan{Configuration: map[string]string{"restart-strategy.type": "none", "from.a.newer.weir": "1"}}, 0},
	} {
		cfg, err := jobConfig(tt.sub, tt.plan)
		if err != nil {
			t.Fatalf("%+v: %v", tt.sub, err)
		}
		s := restartStrategyFrom(cfg)
		n := 0
		for ; n < 10; n++ {
			if _, err := s.OnFailure(time.Now(), time.Second); err != nil {
				break
			}
		}
		if n != tt.restarts {
			t.Errorf("%+v: %d restarts, want %d", tt.sub, n, tt.restarts)
		}
	}
	if _, err := jobConfig(JobSubmission{Options: []string{"no.such.key=1"}}, JobPlan{}); err == nil {
		t.Error("an unknown option was accepted")
	}
	bad := JobPlan{Configuration: map[string]string{"execution.checkpointing.interval": "soon"}}
	if _, err := jobConfig(JobSubmission{}, bad); err == nil || !strings.Contains(err.Error(), "execution.checkpointing.interval") ||
		!strings.Contains(err.Error(), "plan") {
		t.Errorf("a bad value in the plan's configuration: %v", err)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 16}
	b.Write([]byte("first line\nsecond\n"))
	b.Write([]byte("third\n"))
	if got := b.lastLines(2); got != "second\nthird" {
		t.Errorf("lastLines = %q", got)
	}
	if len(b.buf) > 16 {
		t.Errorf("kept %d bytes, max 16", len(b.buf))
	}
}
