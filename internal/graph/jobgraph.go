package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"strings"
)

// JobVertexID identifies a JobVertex; it is derived from the operator ID of
// the chain's head, so it stays the same across runs of the same program.
type JobVertexID string

// OperatorID identifies an operator across runs: derived from its UID, or
// from a generated UID when the user set none.
type OperatorID string

// JobGraph is the chained, serializable form of a job.
type JobGraph struct {
	JobName     string
	Vertices    []*JobVertex // topological order
	DataSets    []*IntermediateDataSet
	Edges       []*JobEdge
	Fingerprint string
	// Staged: the job runs in stages (a batch job), so a cluster may give
	// it fewer slots than its parallelism needs; set by the API, outside
	// the fingerprint.
	Staged bool `json:",omitempty"`
	// Configuration is the job's configuration as its program runs it
	// (the -D options and flags it was given, then what its code set),
	// without security.* keys: the JobManager reads the checkpointing and
	// restart settings from it, as Flink's JobManager reads them from the
	// JobGraph. Set by the API, outside the fingerprint.
	Configuration map[string]string `json:",omitempty"`
	// Stream is the graph this one was built from; it holds the runtime
	// factories and is not serialized.
	Stream *StreamGraph `json:"-"`
}

// JobVertex is a chain of operators run by one task per parallel subtask.
type JobVertex struct {
	ID               JobVertexID
	Name             string
	Parallelism      int
	MaxParallelism   int
	SlotSharingGroup string
	Operators        []ChainedOperator // chain order, head first
	Inputs           []int             // indices into JobGraph.Edges
	Produced         []string          // IDs of the data sets this vertex produces
}

// Head returns the stream node at the head of the chain.
func (v *JobVertex) Head() NodeID { return v.Operators[0].Node }

// ChainedOperator is one operator of a JobVertex's chain.
type ChainedOperator struct {
	Node         NodeID
	ID           OperatorID
	UID          string
	GeneratedUID bool
	Kind         string
	Name         string
}

// IntermediateDataSet is the result one JobVertex produces for one
// non-chained outgoing edge.
type IntermediateDataSet struct {
	ID       string
	Producer JobVertexID
}

// JobEdge connects an IntermediateDataSet to the vertex consuming it.
type JobEdge struct {
	DataSet      string
	Source       JobVertexID
	Target       JobVertexID
	Partitioning Partitioning
	// Pointwise: each producer subtask connects to a subset of the consumer
	// subtasks; otherwise all to all.
	Pointwise  bool
	Input      int // the target operator's input: 1 or 2
	SourceNode NodeID
	TargetNode NodeID
	SideOutput string `json:",omitempty"`
	// StreamEdge is the edge of the stream graph this one came from.
	StreamEdge *StreamEdge `json:"-"`
}

// BuildOptions are the job-wide settings the JobGraph depends on.
type BuildOptions struct {
	DefaultParallelism    int
	DefaultMaxParallelism int // 0: derived from the parallelism
	ChainingEnabled       bool
}

// DefaultMaxParallelism is Flink's rule: 1.5 × parallelism rounded up to a
// power of two, at least 128 and at most 32768.
func DefaultMaxParallelism(parallelism int) int {
	p := parallelism + parallelism/2
	if p <= 128 {
		return 128
	}
	m := 1 << bits.Len(uint(p-1))
	if m > 32768 {
		m = 32768
	}
	return m
}

// OperatorIDFor derives the stable operator ID of a UID.
func OperatorIDFor(uid string) OperatorID {
	sum := sha256.Sum256([]byte(uid))
	return OperatorID(hex.EncodeToString(sum[:16]))
}

// BuildJobGraph resolves defaults, chains operators and validates the
// graph. The stream graph's nodes are updated in place with their resolved
// parallelism, max parallelism and slot sharing group.
func BuildJobGraph(sg *StreamGraph, opts BuildOptions) (*JobGraph, error) {
	if len(sg.Nodes) == 0 {
		return nil, fmt.Errorf("graph: job %q has no operators", sg.JobName)
	}
	if opts.DefaultParallelism < 1 {
		return nil, fmt.Errorf("graph: default parallelism %d must be at least 1", opts.DefaultParallelism)
	}
	hasSink := false
	for _, n := range sg.Nodes {
		if n.Kind == "sink" {
			hasSink = true
		}
		if err := resolveNode(sg, n, opts); err != nil {
			return nil, err
		}
	}
	if !hasSink {
		return nil, fmt.Errorf("graph: job %q has no sink; add one (for example Print or SinkTo) before Execute", sg.JobName)
	}
	for _, e := range sg.Edges {
		if err := resolveEdge(sg, e); err != nil {
			return nil, err
		}
	}

	// Nodes are created after their inputs, so creation order is a
	// topological order; chains are assigned in one pass.
	head := make([]NodeID, len(sg.Nodes))
	for _, n := range sg.Nodes {
		head[n.ID] = n.ID
		in := sg.InEdges(n.ID)
		if len(in) == 1 && chainable(sg, in[0], opts) {
			head[n.ID] = head[in[0].Source]
		}
	}

	jg := &JobGraph{JobName: sg.JobName, Stream: sg}
	vertexOf := make(map[NodeID]*JobVertex)
	for _, n := range sg.Nodes {
		uid, generated := n.UID, false
		if uid == "" {
			uid, generated = fmt.Sprintf("%s-%d", n.Kind, n.ID), true
		}
		op := ChainedOperator{Node: n.ID, ID: OperatorIDFor(uid), UID: uid, GeneratedUID: generated, Kind: n.Kind, Name: n.Name}
		h := head[n.ID]
		v := vertexOf[h]
		if v == nil {
			v = &JobVertex{
				ID:               JobVertexID(op.ID),
				Parallelism:      n.Parallelism,
				MaxParallelism:   n.MaxParallelism,
				SlotSharingGroup: n.SlotSharingGroup,
			}
			vertexOf[h] = v
			jg.Vertices = append(jg.Vertices, v)
		}
		v.Operators = append(v.Operators, op)
		vertexOf[n.ID] = v
	}
	for _, v := range jg.Vertices {
		names := make([]string, len(v.Operators))
		for i, op := range v.Operators {
			names[i] = op.Name
			if op.Kind == "source" {
				names[i] = "Source: " + op.Name
			} else if op.Kind == "sink" {
				names[i] = "Sink: " + op.Name
			}
		}
		v.Name = strings.Join(names, " -> ")
	}
	for _, e := range sg.Edges {
		src, dst := vertexOf[e.Source], vertexOf[e.Target]
		if src == dst && head[e.Target] != e.Target {
			continue // chained
		}
		ds := &IntermediateDataSet{ID: fmt.Sprintf("%s-%d", src.ID[:8], len(jg.DataSets)), Producer: src.ID}
		jg.DataSets = append(jg.DataSets, ds)
		src.Produced = append(src.Produced, ds.ID)
		dst.Inputs = append(dst.Inputs, len(jg.Edges))
		jg.Edges = append(jg.Edges, &JobEdge{
			DataSet:      ds.ID,
			Source:       src.ID,
			Target:       dst.ID,
			Partitioning: e.Partitioning,
			Pointwise:    e.Partitioning.Pointwise(),
			Input:        e.Input,
			SourceNode:   e.Source,
			TargetNode:   e.Target,
			SideOutput:   e.SideOutput,
			StreamEdge:   e,
		})
	}
	if err := checkUniqueUIDs(jg); err != nil {
		return nil, err
	}
	jg.Fingerprint = ""
	data, err := json.Marshal(jg)
	if err != nil {
		return nil, fmt.Errorf("graph: encode job graph: %w", err)
	}
	sum := sha256.Sum256(data)
	jg.Fingerprint = hex.EncodeToString(sum[:8])
	return jg, nil
}

func checkUniqueUIDs(jg *JobGraph) error {
	seen := make(map[string]string)
	for _, v := range jg.Vertices {
		for _, op := range v.Operators {
			name := fmt.Sprintf("%s %q", op.Kind, op.Name)
			if other, ok := seen[op.UID]; ok {
				return fmt.Errorf("graph: UID %q is used by both %s and %s; UIDs must be unique within a job", op.UID, other, name)
			}
			seen[op.UID] = name
		}
	}
	return nil
}

func resolveNode(sg *StreamGraph, n *StreamNode, opts BuildOptions) error {
	if n.Parallelism == 0 {
		n.Parallelism = opts.DefaultParallelism
	}
	if n.Parallelism < 0 {
		return fmt.Errorf("graph: %s: parallelism %d must be at least 1", n.DisplayName(), n.Parallelism)
	}
	if n.MaxParallelism == 0 {
		n.MaxParallelism = opts.DefaultMaxParallelism
		if n.MaxParallelism == 0 {
			n.MaxParallelism = DefaultMaxParallelism(n.Parallelism)
		}
	}
	if n.MaxParallelism > 32768 {
		return fmt.Errorf("graph: %s: max parallelism %d exceeds the limit of 32768", n.DisplayName(), n.MaxParallelism)
	}
	if n.Parallelism > n.MaxParallelism {
		return fmt.Errorf("graph: %s: parallelism %d exceeds its max parallelism %d", n.DisplayName(), n.Parallelism, n.MaxParallelism)
	}
	if n.SlotSharingGroup == "" {
		// Inherit the group when every input agrees, as Flink does.
		group := ""
		for _, e := range sg.InEdges(n.ID) {
			g := sg.Node(e.Source).SlotSharingGroup
			if group == "" {
				group = g
			} else if group != g {
				group = DefaultSlotSharingGroup
			}
		}
		if group == "" {
			group = DefaultSlotSharingGroup
		}
		n.SlotSharingGroup = group
	}
	return nil
}

func resolveEdge(sg *StreamGraph, e *StreamEdge) error {
	src, dst := sg.Node(e.Source), sg.Node(e.Target)
	if e.Partitioning == PartitionDefault {
		if src.Parallelism == dst.Parallelism {
			e.Partitioning = PartitionForward
		} else {
			e.Partitioning = PartitionRebalance
		}
	}
	if e.Partitioning == PartitionForward && src.Parallelism != dst.Parallelism {
		return fmt.Errorf("graph: forward partitioning from %s (parallelism %d) to %s (parallelism %d) needs equal parallelism; use Rebalance or Rescale",
			src.DisplayName(), src.Parallelism, dst.DisplayName(), dst.Parallelism)
	}
	return nil
}

func chainable(sg *StreamGraph, e *StreamEdge, opts BuildOptions) bool {
	src, dst := sg.Node(e.Source), sg.Node(e.Target)
	return opts.ChainingEnabled &&
		e.Partitioning == PartitionForward &&
		dst.Chaining == ChainAlways &&
		src.Chaining != ChainNever &&
		src.Parallelism == dst.Parallelism &&
		src.SlotSharingGroup == dst.SlotSharingGroup
}

// ChainReason explains why an edge of the stream graph is or is not chained;
// the plan prints it so that users can see what their settings did.
func ChainReason(sg *StreamGraph, e *StreamEdge, opts BuildOptions) string {
	src, dst := sg.Node(e.Source), sg.Node(e.Target)
	switch {
	case !opts.ChainingEnabled:
		return "chaining is disabled for the job"
	case len(sg.InEdges(e.Target)) != 1:
		return fmt.Sprintf("%s has %d inputs", dst.DisplayName(), len(sg.InEdges(e.Target)))
	case e.Partitioning != PartitionForward:
		return fmt.Sprintf("the edge is %s, not FORWARD", e.Partitioning)
	case dst.Chaining == ChainHead:
		return fmt.Sprintf("%s starts a new chain", dst.DisplayName())
	case dst.Chaining == ChainNever:
		return fmt.Sprintf("%s disables chaining", dst.DisplayName())
	case src.Chaining == ChainNever:
		return fmt.Sprintf("%s disables chaining", src.DisplayName())
	case src.Parallelism != dst.Parallelism:
		return fmt.Sprintf("parallelism differs (%d vs %d)", src.Parallelism, dst.Parallelism)
	case src.SlotSharingGroup != dst.SlotSharingGroup:
		return fmt.Sprintf("slot sharing groups differ (%q vs %q)", src.SlotSharingGroup, dst.SlotSharingGroup)
	}
	return "chained"
}

// Vertex returns the vertex with the given ID, or nil.
func (jg *JobGraph) Vertex(id JobVertexID) *JobVertex {
	for _, v := range jg.Vertices {
		if v.ID == id {
			return v
		}
	}
	return nil
}

// WriteText prints the plan for people: vertices with their chained
// operators and parallelism, then the edges with their partitioning.
func (jg *JobGraph) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Job %q (fingerprint %s)\n", jg.JobName, jg.Fingerprint)
	index := make(map[JobVertexID]int)
	for i, v := range jg.Vertices {
		index[v.ID] = i + 1
		fmt.Fprintf(&b, "Vertex %d: %s\n", i+1, v.Name)
		fmt.Fprintf(&b, "  id %s, parallelism %d, max parallelism %d, slot sharing group %q\n", v.ID, v.Parallelism, v.MaxParallelism, v.SlotSharingGroup)
		for _, op := range v.Operators {
			gen := ""
			if op.GeneratedUID {
				gen = " (generated)"
			}
			fmt.Fprintf(&b, "  - %s %q uid %q%s\n", op.Kind, op.Name, op.UID, gen)
		}
	}
	if len(jg.Edges) > 0 {
		b.WriteString("Edges:\n")
	}
	for _, e := range jg.Edges {
		pattern := "ALL_TO_ALL"
		if e.Pointwise {
			pattern = "POINTWISE"
		}
		extra := ""
		if e.Input == 2 {
			extra = ", second input"
		}
		if e.SideOutput != "" {
			extra += fmt.Sprintf(", side output %q", e.SideOutput)
		}
		fmt.Fprintf(&b, "  Vertex %d -> Vertex %d: %s (%s), data set %s%s\n", index[e.Source], index[e.Target], e.Partitioning, pattern, e.DataSet, extra)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the plan as indented JSON.
func (jg *JobGraph) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jg)
}
