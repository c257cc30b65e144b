package graph

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
)

// ExecutionState is the lifecycle state of one Execution attempt.
type ExecutionState string

const (
	StateCreated   ExecutionState = "CREATED"
	StateScheduled ExecutionState = "SCHEDULED"
	StateDeploying ExecutionState = "DEPLOYING"
	StateRunning   ExecutionState = "RUNNING"
	StateFinished  ExecutionState = "FINISHED"
	StateCanceling ExecutionState = "CANCELING"
	StateCanceled  ExecutionState = "CANCELED"
	StateFailed    ExecutionState = "FAILED"
)

// ExecutionAttemptID identifies one attempt to run one subtask. Task state
// is exchanged between JobManager and TaskManagers by this ID.
type ExecutionAttemptID string

// NewAttemptID returns a random attempt ID.
func NewAttemptID() ExecutionAttemptID {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return ExecutionAttemptID(hex.EncodeToString(b[:]))
}

// ExecutionGraph is the parallel form of a JobGraph: what the scheduler
// deploys.
type ExecutionGraph struct {
	Job      *JobGraph
	Vertices []*ExecutionJobVertex // topological, parallel to Job.Vertices
	Results  []*IntermediateResult // parallel to Job.Edges
}

// ExecutionJobVertex is a JobVertex with its parallel subtasks.
type ExecutionJobVertex struct {
	JobVertex    *JobVertex
	TaskVertices []*ExecutionVertex
	Inputs       []*IntermediateResult
	Produced     []*IntermediateResult
}

// ExecutionVertex is one parallel subtask of a vertex.
type ExecutionVertex struct {
	Vertex       *ExecutionJobVertex
	SubtaskIndex int

	mu       sync.Mutex
	current  *Execution
	previous []*Execution
}

// Execution is one attempt to run an ExecutionVertex.
type Execution struct {
	AttemptID     ExecutionAttemptID
	AttemptNumber int
	// Slot is where the attempt runs, set when it is scheduled.
	Slot SlotID

	mu    sync.Mutex
	state ExecutionState
	err   error
}

// SlotID names a task slot: the TaskManager and the slot's index on it.
type SlotID struct {
	TaskManager string
	Index       int
}

func (s SlotID) String() string { return fmt.Sprintf("%s/slot-%d", s.TaskManager, s.Index) }

// IntermediateResult is the parallel form of a JobEdge's data set: one
// partition per producer subtask.
type IntermediateResult struct {
	Edge       *JobEdge
	Producer   *ExecutionJobVertex
	Consumer   *ExecutionJobVertex
	Partitions []*IntermediateResultPartition
}

// IntermediateResultPartition is what one producer subtask writes for one
// result; Consumers lists the consumer subtasks it is connected to, which
// are all of them unless the edge is pointwise.
type IntermediateResultPartition struct {
	Result          *IntermediateResult
	PartitionNumber int
	Consumers       []int
}

// BuildExecutionGraph expands a JobGraph to subtasks and creates the first
// Execution attempt of every subtask.
func BuildExecutionGraph(jg *JobGraph) (*ExecutionGraph, error) {
	eg := &ExecutionGraph{Job: jg}
	byID := make(map[JobVertexID]*ExecutionJobVertex)
	for _, v := range jg.Vertices {
		ejv := &ExecutionJobVertex{JobVertex: v}
		for i := 0; i < v.Parallelism; i++ {
			ev := &ExecutionVertex{Vertex: ejv, SubtaskIndex: i}
			ev.current = &Execution{AttemptID: NewAttemptID(), state: StateCreated}
			ejv.TaskVertices = append(ejv.TaskVertices, ev)
		}
		byID[v.ID] = ejv
		eg.Vertices = append(eg.Vertices, ejv)
	}
	for _, e := range jg.Edges {
		prod, cons := byID[e.Source], byID[e.Target]
		if prod == nil || cons == nil {
			return nil, fmt.Errorf("graph: edge %s refers to an unknown vertex", e.DataSet)
		}
		p, q := prod.JobVertex.Parallelism, cons.JobVertex.Parallelism
		r := &IntermediateResult{Edge: e, Producer: prod, Consumer: cons}
		for i := 0; i < p; i++ {
			var consumers []int
			if e.Pointwise {
				consumers = PointwiseConsumers(i, p, q)
			} else {
				consumers = make([]int, q)
				for j := range consumers {
					consumers[j] = j
				}
			}
			r.Partitions = append(r.Partitions, &IntermediateResultPartition{Result: r, PartitionNumber: i, Consumers: consumers})
		}
		prod.Produced = append(prod.Produced, r)
		cons.Inputs = append(cons.Inputs, r)
		eg.Results = append(eg.Results, r)
	}
	return eg, nil
}

// PointwiseConsumers returns the consumer subtasks that producer i of p
// connects to when the consumer has parallelism q: one to one when p == q,
// a contiguous group of producers per consumer when p > q, and a contiguous
// group of consumers per producer when p < q (Flink's rule).
func PointwiseConsumers(i, p, q int) []int {
	switch {
	case p == q:
		return []int{i}
	case p > q:
		// Consumer j reads producers [j*p/q, (j+1)*p/q).
		for j := 0; j < q; j++ {
			if i >= j*p/q && i < (j+1)*p/q {
				return []int{j}
			}
		}
		return nil
	default:
		// Consumer j reads producer j*p/q.
		var out []int
		for j := 0; j < q; j++ {
			if j*p/q == i {
				out = append(out, j)
			}
		}
		return out
	}
}

// InputChannels returns, for consumer subtask j and its input number input
// (1 or 2), the producer partitions it reads in channel order.
func (v *ExecutionJobVertex) InputChannels(j, input int) []*IntermediateResultPartition {
	var out []*IntermediateResultPartition
	for _, r := range v.Inputs {
		if r.Edge.Input != input {
			continue
		}
		for _, part := range r.Partitions {
			for _, c := range part.Consumers {
				if c == j {
					out = append(out, part)
				}
			}
		}
	}
	return out
}

// Current returns the current execution attempt.
func (ev *ExecutionVertex) Current() *Execution {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.current
}

// NewAttempt retires the current attempt and creates the next one, for a
// restart.
func (ev *ExecutionVertex) NewAttempt() *Execution {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	next := &Execution{AttemptID: NewAttemptID(), AttemptNumber: ev.current.AttemptNumber + 1, state: StateCreated}
	ev.previous = append(ev.previous, ev.current)
	ev.current = next
	return next
}

// TaskName is how logs and errors name the subtask: "name (i/n)".
func (ev *ExecutionVertex) TaskName() string {
	return fmt.Sprintf("%s (%d/%d)", ev.Vertex.JobVertex.Name, ev.SubtaskIndex+1, ev.Vertex.JobVertex.Parallelism)
}

// State returns the attempt's state.
func (e *Execution) State() ExecutionState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Err returns the failure cause of a FAILED attempt.
func (e *Execution) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Transition moves the attempt to a new state; terminal states are final.
func (e *Execution) Transition(to ExecutionState, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state {
	case StateFinished, StateCanceled, StateFailed:
		return
	}
	e.state = to
	if err != nil {
		e.err = err
	}
}
