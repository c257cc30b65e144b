package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/weirproject/weir/internal/graph"
)

// Iterations run inside one job: a head task per subtask feeds the loop,
// the loop's tasks process a superstep's records and align on the
// EventSuperstep that ends it, and a tail hands the next partial solution
// back to the head of its subtask in the same process (both run in slot
// i). Every task of the loop reports the end of each superstep, with its
// aggregators, to the iteration's superstepSync; the leader (worker 0)
// combines the reports and decides whether another superstep runs, and
// every head waits for that decision. Supersteps are therefore
// synchronised across all subtasks and processes, and an aggregate is
// global before the next superstep reads it.
//
// Superstep 0 is the loading phase: each head reports once its input
// ended, so that no subtask starts superstep 1 before every head holds its
// initial data (a delta iteration's solution set).

// IterationSpec describes one iteration of a job; the head's NodeOps
// carries it.
type IterationSpec struct {
	ID            string
	MaxSupersteps int64
	Aggregators   []AggregatorSpec
	// Converged decides, after superstep k with its global aggregates,
	// that the iteration ends before MaxSupersteps; nil: never.
	Converged func(superstep int64, aggregates []any) bool
}

// AggregatorSpec is one aggregator of an iteration: a value every loop
// task adds to during a superstep, combined over all of them at its end.
type AggregatorSpec struct {
	Name string
	// New returns a zero accumulator (a pointer the stream package
	// knows the type of).
	New func() any
	// Merge adds from into into.
	Merge func(into, from any)
	// Encode and Decode carry an accumulator between processes.
	Encode func(v any) ([]byte, error)
	Decode func(b []byte) (any, error)
}

// SuperstepDecision is what the leader decided after a superstep.
type SuperstepDecision struct {
	Superstep int64
	// Terminate: no further superstep; the heads emit the result.
	Terminate bool
	// Aggregates are the global values of the superstep's aggregators,
	// in the order of IterationSpec.Aggregators.
	Aggregates []any
}

// superstepSync collects the reports of one iteration's tasks and hands
// out decisions. In a distributed attempt only the leader's instance
// decides: the others forward their reports and receive the decisions.
type superstepSync struct {
	spec *IterationSpec
	// heads is the number of head subtasks, which report superstep 0;
	// members the number of all the loop's subtasks (heads included),
	// which report every later superstep.
	heads, members int
	// forward sends a report to the leader (followers only); broadcast
	// sends a decision to the followers (leader only).
	forward   func(k int64, aggregates [][]byte) error
	broadcast func(d *SuperstepDecision) error

	mu        sync.Mutex
	rounds    map[int64]*superstepRound
	decisions map[int64]*SuperstepDecision
	final     *SuperstepDecision
	// changed is closed and replaced whenever a decision arrives.
	changed chan struct{}
	failed  error
}

type superstepRound struct {
	reports    int
	aggregates []any
}

func newSuperstepSync(spec *IterationSpec, heads, members int) *superstepSync {
	return &superstepSync{spec: spec, heads: heads, members: members, rounds: make(map[int64]*superstepRound),
		decisions: make(map[int64]*SuperstepDecision), changed: make(chan struct{})}
}

func (s *superstepSync) expected(k int64) int {
	if k == 0 {
		return s.heads
	}
	return s.members
}

// report records that one task ended superstep k with the given local
// aggregates (nil for none).
func (s *superstepSync) report(k int64, local []any) error {
	if s.forward != nil {
		enc, err := s.encode(local)
		if err != nil {
			return err
		}
		return s.forward(k, enc)
	}
	return s.add(k, local)
}

// addEncoded is the leader's side of a follower's report.
func (s *superstepSync) addEncoded(k int64, enc [][]byte) error {
	if len(enc) != 0 && len(enc) != len(s.spec.Aggregators) {
		return fmt.Errorf("iteration %s: a report of superstep %d with %d aggregates, not %d", s.spec.ID, k, len(enc), len(s.spec.Aggregators))
	}
	local, err := s.decode(enc)
	if err != nil {
		return err
	}
	return s.add(k, local)
}

// encode encodes aggregator values for another process; an accumulator
// the task never touched (nil) travels as nothing.
func (s *superstepSync) encode(vals []any) ([][]byte, error) {
	enc := make([][]byte, len(vals))
	for i, v := range vals {
		if v == nil {
			continue
		}
		b, err := s.spec.Aggregators[i].Encode(v)
		if err != nil {
			return nil, fmt.Errorf("iteration %s: encode aggregator %q: %w", s.spec.ID, s.spec.Aggregators[i].Name, err)
		}
		enc[i] = b
	}
	return enc, nil
}

func (s *superstepSync) decode(enc [][]byte) ([]any, error) {
	vals := make([]any, len(enc))
	for i, b := range enc {
		if len(b) == 0 {
			continue
		}
		v, err := s.spec.Aggregators[i].Decode(b)
		if err != nil {
			return nil, fmt.Errorf("iteration %s: decode aggregator %q: %w", s.spec.ID, s.spec.Aggregators[i].Name, err)
		}
		vals[i] = v
	}
	return vals, nil
}

func (s *superstepSync) add(k int64, local []any) error {
	s.mu.Lock()
	r := s.rounds[k]
	if r == nil {
		r = &superstepRound{aggregates: make([]any, len(s.spec.Aggregators))}
		for i, a := range s.spec.Aggregators {
			r.aggregates[i] = a.New()
		}
		s.rounds[k] = r
	}
	for i, v := range local {
		if v != nil {
			s.spec.Aggregators[i].Merge(r.aggregates[i], v)
		}
	}
	r.reports++
	if r.reports < s.expected(k) {
		s.mu.Unlock()
		return nil
	}
	if r.reports > s.expected(k) {
		s.mu.Unlock()
		return fmt.Errorf("iteration %s: %d reports of superstep %d from %d tasks", s.spec.ID, r.reports, k, s.expected(k))
	}
	delete(s.rounds, k)
	d := &SuperstepDecision{Superstep: k, Aggregates: r.aggregates}
	if k > 0 {
		d.Terminate = k >= s.spec.MaxSupersteps || (s.spec.Converged != nil && s.spec.Converged(k, r.aggregates))
	} else {
		d.Terminate = s.spec.MaxSupersteps <= 0 || (s.spec.Converged != nil && s.spec.Converged(0, r.aggregates))
	}
	s.mu.Unlock()
	if s.broadcast != nil {
		if err := s.broadcast(d); err != nil {
			return err
		}
	}
	s.decide(d)
	return nil
}

// decide records a decision and wakes its waiters.
func (s *superstepSync) decide(d *SuperstepDecision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decisions[d.Superstep] = d
	if d.Terminate {
		s.final = d
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// decodeDecision is a follower's side of the leader's decision.
func (s *superstepSync) decodeDecision(k int64, terminate bool, enc [][]byte) (*SuperstepDecision, error) {
	if len(enc) != len(s.spec.Aggregators) {
		return nil, fmt.Errorf("iteration %s: a decision with %d aggregates, not %d", s.spec.ID, len(enc), len(s.spec.Aggregators))
	}
	vals, err := s.decode(enc)
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		if v == nil {
			vals[i] = s.spec.Aggregators[i].New()
		}
	}
	return &SuperstepDecision{Superstep: k, Terminate: terminate, Aggregates: vals}, nil
}

// wait returns the decision taken after superstep k, or the final one if
// the iteration ended before k.
func (s *superstepSync) wait(ctx context.Context, k int64) (*SuperstepDecision, error) {
	for {
		s.mu.Lock()
		d, ch := s.decisions[k], s.changed
		if d == nil && s.final != nil && s.final.Superstep < k {
			d = s.final
		}
		s.mu.Unlock()
		if d != nil {
			return d, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitFinal returns the decision that ended the iteration.
func (s *superstepSync) waitFinal(ctx context.Context) (*SuperstepDecision, error) {
	for {
		s.mu.Lock()
		d, ch := s.final, s.changed
		s.mu.Unlock()
		if d != nil {
			return d, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TaskIteration is a task's part in an iteration.
type TaskIteration struct {
	t    *Task
	sync *superstepSync
	head bool
	// superstep is the superstep the task is in: 1 + the supersteps it
	// ended (0 for a head before its input ended).
	superstep int64
	// local holds the task's accumulators of the running superstep.
	local []any
	// prev caches the decision that ended the previous superstep.
	prev *SuperstepDecision
}

// Iteration returns the task's part in the iteration it belongs to, nil
// for a task outside every iteration.
func (t *Task) Iteration() *TaskIteration { return t.iter }

// Spec returns the iteration's description.
func (ti *TaskIteration) Spec() *IterationSpec { return ti.sync.spec }

// Superstep returns the number of the superstep the task is in, from 1.
func (ti *TaskIteration) Superstep() int64 { return ti.superstep }

// Accumulator returns the task's accumulator of aggregator i for the
// running superstep.
func (ti *TaskIteration) Accumulator(i int) any {
	if ti.local == nil {
		ti.local = make([]any, len(ti.sync.spec.Aggregators))
	}
	if ti.local[i] == nil {
		ti.local[i] = ti.sync.spec.Aggregators[i].New()
	}
	return ti.local[i]
}

// Previous returns the decision that ended the previous superstep (its
// global aggregates), nil in the first.
func (ti *TaskIteration) Previous() (*SuperstepDecision, error) {
	if ti.superstep <= 1 {
		return nil, nil
	}
	if ti.prev != nil && ti.prev.Superstep == ti.superstep-1 {
		return ti.prev, nil
	}
	d, err := ti.sync.wait(ti.t.ctx, ti.superstep-1)
	ti.prev = d
	return d, err
}

// Ready is a head's report that its input ended (superstep 0); it
// returns the decision whether superstep 1 runs.
func (ti *TaskIteration) Ready() (*SuperstepDecision, error) {
	local := ti.local
	ti.local = nil
	if err := ti.sync.report(0, local); err != nil {
		return nil, err
	}
	ti.superstep = 1
	return ti.sync.wait(ti.t.ctx, 0)
}

// EndSuperstep is a head's end of the superstep it emitted: the chained
// operators end it, every output channel carries its end, and the head
// reports it. It returns the decision taken once every task of the loop
// ended the superstep.
func (ti *TaskIteration) EndSuperstep() (*SuperstepDecision, error) {
	k := ti.superstep
	ti.t.endSuperstep(k)
	return ti.sync.wait(ti.t.ctx, k)
}

// IterationResult returns the decision that ended iteration id, waiting
// for it: what operators downstream of an iteration read its final
// aggregates from.
func (t *Task) IterationResult(id string) (*SuperstepDecision, error) {
	s := t.iterations[id]
	if s == nil {
		return nil, fmt.Errorf("runtime: no iteration %q in this job", id)
	}
	return s.waitFinal(t.ctx)
}

// SuperstepHandler is implemented by operators inside an iteration that
// act at the end of each superstep: emit what they aggregated, hand the
// next partial solution to the head.
type SuperstepHandler interface {
	EndSuperstep(k int64) error
}

// endSuperstep ends superstep k in the task: the operators, head of the
// chain first, then the output channels, then the report.
func (t *Task) endSuperstep(k int64) {
	for i := len(t.lifecycles) - 1; i >= 0; i-- {
		if h, ok := t.lifecycles[i].(SuperstepHandler); ok {
			if err := h.EndSuperstep(k); err != nil {
				panic(userFailure{err})
			}
		}
	}
	for _, w := range t.writers {
		w.Superstep(k)
	}
	ti := t.iter
	local := ti.local
	ti.local = nil
	ti.superstep = k + 1
	if err := ti.sync.report(k, local); err != nil {
		t.abort(err)
	}
}

// Shared returns the object stored under key for this attempt in this
// process, creating it with create on first use: how a tail finds its
// head.
func (t *Task) Shared(key string, create func() any) any {
	s := t.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok {
		return v
	}
	v := create()
	s.m[key] = v
	return v
}

type sharedObjects struct {
	mu sync.Mutex
	m  map[string]any
}

// iterations creates the superstep synchronisation of every iteration in
// the job, wired to the other workers in a distributed attempt, and
// returns the function that gives the iteration a vertex belongs to.
func (d *deployer) iterations(a *attempt, sg *graph.StreamGraph) (func(*graph.JobVertex) *superstepSync, error) {
	a.iterations = make(map[string]*superstepSync)
	specs := make(map[string]*IterationSpec)
	for _, n := range sg.Nodes {
		if n.IterationHead {
			spec := n.Ops.(*NodeOps).Iteration
			if spec == nil || spec.ID != n.Iteration {
				return nil, fmt.Errorf("runtime: iteration head %s without its iteration", n.DisplayName())
			}
			specs[n.Iteration] = spec
		}
	}
	if len(specs) == 0 {
		return func(*graph.JobVertex) *superstepSync { return nil }, nil
	}
	of := func(v *graph.JobVertex) string {
		id := ""
		for _, op := range v.Operators {
			if it := sg.Node(op.Node).Iteration; it != "" {
				id = it
			}
		}
		return id
	}
	heads, members := make(map[string]int), make(map[string]int)
	for _, v := range d.jg.Vertices {
		id := of(v)
		if id == "" {
			continue
		}
		if specs[id] == nil {
			return nil, fmt.Errorf("runtime: vertex %q belongs to iteration %q, which has no head", v.Name, id)
		}
		members[id] += v.Parallelism
		if sg.Node(v.Head()).IterationHead {
			heads[id] += v.Parallelism
		}
	}
	for id, spec := range specs {
		s := newSuperstepSync(spec, heads[id], members[id])
		if a.link != nil {
			link := a.link
			s.forward = func(k int64, aggs [][]byte) error {
				return link.send(controlMsg{Kind: "superstep", Iter: id, ID: k, Aggs: aggs})
			}
		} else if len(a.links) > 0 {
			links := a.links
			s.broadcast = func(dec *SuperstepDecision) error {
				enc, err := s.encode(dec.Aggregates)
				if err != nil {
					return err
				}
				for _, l := range links {
					if err := l.send(controlMsg{Kind: "decided", Iter: id, ID: dec.Superstep, Terminate: dec.Terminate, Aggs: enc}); err != nil {
						return err
					}
				}
				return nil
			}
		}
		a.iterations[id] = s
	}
	return func(v *graph.JobVertex) *superstepSync { return a.iterations[of(v)] }, nil
}

// FlushOutputs sends what the task's record writers hold: an operator
// that keeps the task busy (a streaming iteration's head waiting for
// feedback) flushes this way instead of the task loop's timer.
func (t *Task) FlushOutputs() { t.flush() }
