// Package graph holds the three views of a job that the seeds describe:
// the StreamGraph the API builds, the JobGraph that chains operators into
// JobVertices joined by IntermediateDataSets, and the ExecutionGraph, its
// parallel, schedulable form.
//
// The StreamGraph and JobGraph are plain data (they serialize to JSON) plus
// an opaque runtime factory per node that only the process which built the
// graph can use; a worker process rebuilds the same graph by running the
// same program and checks it against the fingerprint.
package graph

import (
	"fmt"
)

// NodeID identifies a StreamNode within one StreamGraph, in creation order.
type NodeID int

// Partitioning names how records are routed from a producer subtask to the
// consumer subtasks of an edge.
type Partitioning string

const (
	// PartitionDefault is resolved when the JobGraph is built: forward when
	// producer and consumer parallelism are equal, rebalance otherwise.
	PartitionDefault   Partitioning = ""
	PartitionForward   Partitioning = "FORWARD"
	PartitionHash      Partitioning = "HASH"
	PartitionRebalance Partitioning = "REBALANCE"
	PartitionRescale   Partitioning = "RESCALE"
	PartitionShuffle   Partitioning = "SHUFFLE"
	PartitionBroadcast Partitioning = "BROADCAST"
	PartitionGlobal    Partitioning = "GLOBAL"
	PartitionCustom    Partitioning = "CUSTOM"
)

// Pointwise reports whether producers connect only to a subset of
// consumers (forward, rescale) instead of to all of them.
func (p Partitioning) Pointwise() bool {
	return p == PartitionForward || p == PartitionRescale
}

// Chaining is a node's chaining strategy.
type Chaining int

const (
	// ChainAlways chains the node with its predecessor when possible.
	ChainAlways Chaining = iota
	// ChainHead starts a new chain at this node (StartNewChain).
	ChainHead
	// ChainNever neither chains to its predecessor nor lets its successor
	// chain to it (DisableChaining).
	ChainNever
)

// DefaultSlotSharingGroup is the group of nodes that set none and whose
// inputs set none.
const DefaultSlotSharingGroup = "default"

// StreamNode is one operator of the program as the API built it.
type StreamNode struct {
	ID   NodeID
	Kind string // "source", "map", "flat-map", "filter", "process", "reduce", "sink", ...
	Name string
	// UID is the user-assigned stable ID; empty means generated.
	UID              string
	Parallelism      int // 0: the job's default
	MaxParallelism   int // 0: the job's default
	SlotSharingGroup string
	Chaining         Chaining
	// Bounded is meaningful for sources only.
	Bounded bool
	// Inputs is the number of logical inputs: 0 for sources, 1, or 2.
	Inputs int
	// Iteration is the ID of the iteration whose loop the node belongs
	// to, empty outside iterations; IterationHead marks the loop's head.
	Iteration     string `json:",omitempty"`
	IterationHead bool   `json:",omitempty"`
	// Ops is the runtime factory for the operator (runtime.NodeOps); it is
	// not serialized.
	Ops any `json:"-"`
}

// DisplayName is how errors and plans name the operator: kind and name.
func (n *StreamNode) DisplayName() string {
	return fmt.Sprintf("%s %q", n.Kind, n.Name)
}

// StreamEdge connects two StreamNodes.
type StreamEdge struct {
	Source, Target NodeID
	// Input is the target's input the edge feeds: 1, or 2 for the second
	// input of a two-input operator.
	Input        int
	Partitioning Partitioning
	// SideOutput is the tag of the side output the edge carries, empty for
	// the main output.
	SideOutput string
	// Type is the runtime glue for the record type on the edge
	// (runtime.TypeOps); Partitioner builds the routing for HASH and CUSTOM
	// partitioning (runtime.PartitionerFactory). Neither is serialized.
	Type        any `json:"-"`
	Partitioner any `json:"-"`
	// Combiner, if set, lets a batch job combine records of a key on the
	// producer's side of the edge (runtime.CombinerFactory): the target is
	// an aggregation whose partial results combine.
	Combiner any `json:"-"`
}

// StreamGraph is the program's dataflow as the API built it.
type StreamGraph struct {
	JobName string
	Nodes   []*StreamNode // indexed by NodeID
	Edges   []*StreamEdge
}

// AddNode appends a node and assigns its ID.
func (g *StreamGraph) AddNode(n *StreamNode) *StreamNode {
	n.ID = NodeID(len(g.Nodes))
	g.Nodes = append(g.Nodes, n)
	return n
}

// AddEdge records an edge.
func (g *StreamGraph) AddEdge(e *StreamEdge) { g.Edges = append(g.Edges, e) }

// Node returns the node with the given ID.
func (g *StreamGraph) Node(id NodeID) *StreamNode { return g.Nodes[id] }

// InEdges returns the edges into a node, in creation order.
func (g *StreamGraph) InEdges(id NodeID) []*StreamEdge {
	var out []*StreamEdge
	for _, e := range g.Edges {
		if e.Target == id {
			out = append(out, e)
		}
	}
	return out
}

// OutEdges returns the edges out of a node, in creation order.
func (g *StreamGraph) OutEdges(id NodeID) []*StreamEdge {
	var out []*StreamEdge
	for _, e := range g.Edges {
		if e.Source == id {
			out = append(out, e)
		}
	}
	return out
}
