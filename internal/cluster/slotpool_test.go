package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func reg(id, regID string, slots int) Registration {
	return Registration{ResourceID: id, RegistrationID: regID, Address: id + ":1", Slots: slots}
}

func totals(p *SlotPool) [3]int {
	a, b, c := p.Totals()
	return [3]int{a, b, c}
}

func TestJobManagerSlotPoolRegisterAndRemove(t *testing.T) {
	p := NewSlotPool()
	p.Register(reg("a", "r1", 3), t0)
	p.Register(reg("b", "r1", 2), t0)
	if got, want := totals(p), [3]int{2, 5, 5}; got != want {
		t.Fatalf("totals = %v, want %v", got, want)
	}
	// A removal naming a stale registration must not remove the current one.
	if _, _, ok := p.Remove("a", "stale"); ok {
		t.Fatal("Remove with a stale registration ID removed the TaskManager")
	}
	if _, _, ok := p.Remove("nope", "r1"); ok {
		t.Fatal("Remove of an unknown TaskManager reported success")
	}
	info, _, ok := p.Remove("a", "r1")
	if !ok || info.ResourceID != "a" || info.Slots != 3 {
		t.Fatalf("Remove = %+v, %v", info, ok)
	}
	if got, want := totals(p), [3]int{1, 2, 2}; got != want {
		t.Fatalf("totals after remove = %v, want %v", got, want)
	}
	tms := p.TaskManagers()
	if len(tms) != 1 || tms[0].ResourceID != "b" {
		t.Fatalf("TaskManagers = %+v", tms)
	}
}

func TestJobManagerSlotPoolReRegisterReplaces(t *testing.T) {
	p := NewSlotPool()
	p.Register(reg("a", "r1", 2), t0)
	if _, err := p.Allocate("job1", 2); err != nil {
		t.Fatal(err)
	}
	replaced, lost := p.Register(reg("a", "r2", 4), t0.Add(time.Second))
	if replaced == nil || replaced.RegistrationID != "r1" || !slices.Equal(lost, []string{"job1"}) {
		t.Fatalf("Register again = %+v, %v; want r1 replaced and job1 lost", replaced, lost)
	}
	if got, want := totals(p), [3]int{1, 4, 4}; got != want {
		t.Fatalf("totals = %v, want %v", got, want)
	}
	// The old registration's heartbeats and expiry no longer count.
	if p.HeartbeatReceived("a", "r1", t0.Add(2*time.Second)) {
		t.Error("a heartbeat of the replaced registration was accepted")
	}
	if !p.Expired("a", "r1", t0, time.Hour) {
		t.Error("the replaced registration is not reported expired")
	}
}

func TestJobManagerSlotPoolHeartbeatExpiry(t *testing.T) {
	p := NewSlotPool()
	const timeout = 3 * time.Second
	p.Register(reg("a", "r1", 1), t0)
	for _, tt := range []struct {
		at   time.Duration
		beat bool
		want bool // expired
	}{
		{at: 1 * time.Second, want: false},
		{at: 3 * time.Second, want: false}, // exactly the timeout is not over it
		{at: 3*time.Second + 1, want: true},
		{at: 4 * time.Second, beat: true, want: false}, // a heartbeat revives the window
		{at: 7 * time.Second, want: false},
		{at: 7*time.Second + 1, want: true},
	} {
		now := t0.Add(tt.at)
		if tt.beat && !p.HeartbeatReceived("a", "r1", now) {
			t.Fatalf("at %v: heartbeat not accepted", tt.at)
		}
		if got := p.Expired("a", "r1", now, timeout); got != tt.want {
			t.Errorf("at %v: Expired = %v, want %v", tt.at, got, tt.want)
		}
	}
	// A heartbeat answer that arrives late (older than the newest) must not
	// move the last heartbeat back.
	p.HeartbeatReceived("a", "r1", t0.Add(2*time.Second))
	if info, _ := p.TaskManager("a"); !info.LastHeartbeat.Equal(t0.Add(4 * time.Second)) {
		t.Errorf("LastHeartbeat = %v, want %v", info.LastHeartbeat, t0.Add(4*time.Second))
	}
}

func TestJobManagerSlotPoolAllocate(t *testing.T) {
	p := NewSlotPool()
	p.Register(reg("a", "r", 3), t0)
	p.Register(reg("b", "r", 3), t0)

	slots, err := p.Allocate("j1", 4)
	if err != nil {
		t.Fatal(err)
	}
	perTM := map[string]int{}
	seen := map[SlotID]bool{}
	for _, s := range slots {
		if seen[s] {
			t.Fatalf("slot %v allocated twice in %v", s, slots)
		}
		seen[s] = true
		perTM[s.ResourceID]++
	}
	if perTM["a"] != 2 || perTM["b"] != 2 {
		t.Errorf("allocation %v is not spread evenly: %v", slots, perTM)
	}
	if got, want := totals(p), [3]int{2, 6, 2}; got != want {
		t.Fatalf("totals = %v, want %v", got, want)
	}

	// All or nothing: 3 do not fit in 2 free slots, and nothing is taken.
	_, err = p.Allocate("j2", 3)
	if err == nil || !strings.Contains(err.Error(), "needs 3 slots, but only 2 of 6 are free") {
		t.Fatalf("Allocate beyond capacity: err = %v", err)
	}
	if _, _, free := p.Totals(); free != 2 {
		t.Fatalf("a failed allocation took slots: %d free, want 2", free)
	}
	if _, err := p.Allocate("j2", 2); err != nil {
		t.Fatal(err)
	}

	// Losing a TaskManager reports the jobs that held its slots.
	_, lost, _ := p.Remove("a", "r")
	if !slices.Equal(lost, []string{"j1", "j2"}) {
		t.Errorf("lost jobs = %v, want [j1 j2]", lost)
	}
	if n := p.Release("j1"); n != 2 {
		t.Errorf("Release(j1) freed %d slots, want the 2 left on b", n)
	}
	if got, want := totals(p), [3]int{1, 3, 2}; got != want {
		t.Fatalf("totals = %v, want %v", got, want)
	}
	if _, err := p.Allocate("", 1); err == nil {
		t.Error("Allocate without a job ID succeeded")
	}
}
