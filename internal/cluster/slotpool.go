package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Registration is what a TaskManager offers when it registers.
type Registration struct {
	ResourceID     string
	RegistrationID string
	Address        string
	Slots          int
	Hardware       Hardware
}

// Hardware describes a TaskManager's host.
type Hardware struct {
	CPUCores       int   `json:"cpuCores"`
	PhysicalMemory int64 `json:"physicalMemory"` // bytes; 0 when unknown
}

// TaskManagerInfo is a snapshot of one registered TaskManager.
type TaskManagerInfo struct {
	Registration
	FreeSlots     int
	Registered    time.Time
	LastHeartbeat time.Time // last heartbeat answered; Registered until the first
}

// SlotID names one slot of one TaskManager.
type SlotID struct {
	ResourceID string
	Index      int
}

func (s SlotID) String() string { return fmt.Sprintf("%s/%d", s.ResourceID, s.Index) }

// SlotPool is the JobManager's view of the cluster's resources: the
// registered TaskManagers, when each last answered a heartbeat, and which
// job holds each of their slots. It decides nothing about time itself:
// callers pass the current time, which keeps the heartbeat rules testable
// without sleeping.
//
// The zero value is not ready; use [NewSlotPool]. Methods are safe for
// concurrent use.
type SlotPool struct {
	mu  sync.Mutex
	tms map[string]*poolEntry
}

type poolEntry struct {
	info  TaskManagerInfo
	owner []string // job ID per slot; "" = free
}

// NewSlotPool returns an empty pool.
func NewSlotPool() *SlotPool {
	return &SlotPool{tms: make(map[string]*poolEntry)}
}

// Register adds a TaskManager. A TaskManager registering again under the
// same resource ID (after it lost the JobManager, or restarted) replaces its
// earlier registration, whose slots are gone with it: replaced describes
// that registration and lost the jobs that held its slots.
func (p *SlotPool) Register(reg Registration, now time.Time) (replaced *TaskManagerInfo, lost []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.tms[reg.ResourceID]; ok {
		info := old.snapshot()
		replaced, lost = &info, old.jobs()
	}
	p.tms[reg.ResourceID] = &poolEntry{
		info:  TaskManagerInfo{Registration: reg, FreeSlots: reg.Slots, Registered: now, LastHeartbeat: now},
		owner: make([]string, reg.Slots),
	}
	return replaced, lost
}

// Remove removes the TaskManager id if its current registration is regID,
// so that a late removal of a stale registration cannot remove the
// registration that replaced it. It returns the removed TaskManager and the
// jobs that held its slots, which have lost them.
func (p *SlotPool) Remove(id, regID string) (removed TaskManagerInfo, lost []string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.tms[id]
	if !ok || e.info.RegistrationID != regID {
		return TaskManagerInfo{}, nil, false
	}
	delete(p.tms, id)
	return e.snapshot(), e.jobs(), true
}

// HeartbeatReceived records that registration regID of TaskManager id
// answered a heartbeat at now. It reports false when that registration is
// no longer in the pool.
func (p *SlotPool) HeartbeatReceived(id, regID string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.tms[id]
	if !ok || e.info.RegistrationID != regID {
		return false
	}
	if now.After(e.info.LastHeartbeat) {
		e.info.LastHeartbeat = now
	}
	return true
}

// Expired reports whether registration regID of TaskManager id has not
// answered a heartbeat for longer than timeout at now. A registration that
// is no longer in the pool counts as expired: whoever watches it can stop.
func (p *SlotPool) Expired(id, regID string, now time.Time, timeout time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.tms[id]
	if !ok || e.info.RegistrationID != regID {
		return true
	}
	return now.Sub(e.info.LastHeartbeat) > timeout
}

// Allocate gives job n free slots, all or none. Slots are taken one at a
// time from the TaskManager with the most free slots (ties by resource ID),
// which spreads a job's subtasks over the cluster rather than filling one
// TaskManager first: a lost TaskManager then costs fewer of them.
func (p *SlotPool) Allocate(job string, n int) ([]SlotID, error) {
	if job == "" || n < 1 {
		return nil, fmt.Errorf("cluster: allocate %d slots for job %q: need a job ID and at least one slot", n, job)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	free := 0
	entries := make([]*poolEntry, 0, len(p.tms))
	for _, e := range p.tms {
		free += e.info.FreeSlots
		entries = append(entries, e)
	}
	if free < n {
		return nil, fmt.Errorf("cluster: job %s needs %d slots, but only %d of %d are free on %d TaskManagers",
			job, n, free, p.totalLocked(), len(p.tms))
	}
	slots := make([]SlotID, 0, n)
	for range n {
		e := slices.MaxFunc(entries, func(a, b *poolEntry) int {
			if c := cmp.Compare(a.info.FreeSlots, b.info.FreeSlots); c != 0 {
				return c
			}
			return cmp.Compare(b.info.ResourceID, a.info.ResourceID) // smaller ID wins ties
		})
		i := slices.Index(e.owner, "")
		e.owner[i] = job
		e.info.FreeSlots--
		slots = append(slots, SlotID{ResourceID: e.info.ResourceID, Index: i})
	}
	return slots, nil
}

// AllocateOnOne gives job n free slots of one TaskManager, all or none:
// the one with the most free slots (ties by resource ID), so that jobs
// spread over the cluster. Without one that has n free slots it returns
// the largest number of free slots on one TaskManager.
func (p *SlotPool) AllocateOnOne(job string, n int) (tm TaskManagerInfo, largestFree int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *poolEntry
	for _, e := range p.tms {
		if best == nil || e.info.FreeSlots > best.info.FreeSlots ||
			e.info.FreeSlots == best.info.FreeSlots && e.info.ResourceID < best.info.ResourceID {
			best = e
		}
	}
	if best == nil || best.info.FreeSlots < n || n < 1 || job == "" {
		if best != nil {
			largestFree = best.info.FreeSlots
		}
		return TaskManagerInfo{}, largestFree, false
	}
	for i, o := range best.owner {
		if n == 0 {
			break
		}
		if o == "" {
			best.owner[i] = job
			best.info.FreeSlots--
			n--
		}
	}
	return best.snapshot(), best.info.FreeSlots, true
}

// Release frees every slot that job holds and returns how many it held.
func (p *SlotPool) Release(job string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.tms {
		for i, o := range e.owner {
			if o == job {
				e.owner[i] = ""
				e.info.FreeSlots++
				n++
			}
		}
	}
	return n
}

// TaskManagers returns every registered TaskManager, sorted by resource ID.
func (p *SlotPool) TaskManagers() []TaskManagerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]TaskManagerInfo, 0, len(p.tms))
	for _, e := range p.tms {
		out = append(out, e.snapshot())
	}
	slices.SortFunc(out, func(a, b TaskManagerInfo) int { return cmp.Compare(a.ResourceID, b.ResourceID) })
	return out
}

// TaskManager returns the TaskManager id.
func (p *SlotPool) TaskManager(id string) (TaskManagerInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.tms[id]
	if !ok {
		return TaskManagerInfo{}, false
	}
	return e.snapshot(), true
}

// Totals returns the number of TaskManagers, their slots, and the free ones.
func (p *SlotPool) Totals() (taskManagers, slots, free int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.tms {
		free += e.info.FreeSlots
	}
	return len(p.tms), p.totalLocked(), free
}

func (p *SlotPool) totalLocked() int {
	n := 0
	for _, e := range p.tms {
		n += e.info.Slots
	}
	return n
}

func (e *poolEntry) snapshot() TaskManagerInfo { return e.info }

// jobs returns the distinct jobs holding slots of e, sorted.
func (e *poolEntry) jobs() []string {
	var jobs []string
	for _, o := range e.owner {
		if o != "" && !slices.Contains(jobs, o) {
			jobs = append(jobs, o)
		}
	}
	slices.Sort(jobs)
	return jobs
}
