package runtime

import (
	"context"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/graph"
)

// taskSettings are what every task of a job takes from its configuration.
type taskSettings struct {
	batch         bool
	gate          GateConfig
	bufferRecords int
	bufferTimeout time.Duration
	serialize     bool
	exactlyOnce   bool
	unaligned     bool
	alignTimeout  time.Duration
	// waitFinal: finished tasks wait for a final checkpoint before they
	// exit, so that what they committed last is covered by one.
	waitFinal bool
}

func (d *deployer) settings() taskSettings {
	cfg := d.cfg
	s := taskSettings{
		batch: isBatch(cfg, d.jg.Stream),
		gate: GateConfig{
			BuffersPerChannel: config.BuffersPerChannel.Get(cfg),
			FloatingBuffers:   config.FloatingBuffersPerGate.Get(cfg),
		},
		bufferRecords: config.BufferRecords.Get(cfg),
		bufferTimeout: config.BufferTimeout.Get(cfg),
		serialize:     config.ForceSerialization.Get(cfg),
		exactlyOnce:   config.CheckpointMode.Get(cfg) == config.CheckpointModeExactlyOnce,
		alignTimeout:  config.AlignedCheckpointTimeout.Get(cfg),
	}
	if s.bufferTimeout == 0 {
		// Flush after every record: lowest latency.
		s.bufferRecords = 1
	}
	s.unaligned = s.exactlyOnce && config.UnalignedCheckpoints.Get(cfg)
	s.waitFinal = !s.batch && config.CheckpointInterval.Get(cfg) > 0
	return s
}

// CombinerFactory wraps the Output[T] of a batch job's exchange into one
// that combines the records of a key before they are sent (a map-side
// combine, as Flink's DataSet API and Spark do for combinable
// reductions); flush's Finish sends what it still holds.
type CombinerFactory func(out any) (combined any, flush Lifecycle)

// chainLookup finds, for a stream node or edge, the parts of the
// execution graph a task's chain is built from.
type chainLookup struct {
	vertexOfNode map[graph.NodeID]*graph.ExecutionJobVertex
	uidOfNode    map[graph.NodeID]string
	resultOf     map[*graph.StreamEdge]*graph.IntermediateResult
}

func (d *deployer) lookup() *chainLookup {
	lk := &chainLookup{
		vertexOfNode: make(map[graph.NodeID]*graph.ExecutionJobVertex),
		uidOfNode:    make(map[graph.NodeID]string),
		resultOf:     make(map[*graph.StreamEdge]*graph.IntermediateResult),
	}
	for _, v := range d.eg.Vertices {
		for _, op := range v.JobVertex.Operators {
			lk.vertexOfNode[op.Node] = v
			lk.uidOfNode[op.Node] = op.UID
		}
	}
	for _, r := range d.eg.Results {
		lk.resultOf[r.Edge.StreamEdge] = r
	}
	return lk
}

// newTask creates the task of one execution of a subtask; restore is the
// checkpoint its state comes from, or nil.
func (d *deployer) newTask(ctx context.Context, s taskSettings, lk *chainLookup, v *graph.ExecutionJobVertex, ev *graph.ExecutionVertex, ex *graph.Execution,
	index int, restore *CompletedCheckpoint, acks chan checkpointAck, waiting chan int) *Task {
	headNode := d.jg.Stream.Node(v.JobVertex.Head())
	t := &Task{
		vertexName:    v.JobVertex.Name,
		vertexID:      string(v.JobVertex.ID),
		index:         index,
		subtask:       ev.SubtaskIndex,
		parallelism:   v.JobVertex.Parallelism,
		attempt:       d.mc.FirstAttempt + ex.AttemptNumber,
		ctx:           ctx,
		cfg:           d.cfg,
		batch:         s.batch,
		bufferRecords: s.bufferRecords,
		bufferTimeout: s.bufferTimeout,
		serialize:     s.serialize,
		exactlyOnce:   s.exactlyOnce,
		unaligned:     s.unaligned,
		alignTimeout:  s.alignTimeout,
		isSource:      headNode.Ops.(*NodeOps).Splits != nil,
		mailbox:       make(chan func(), 16),
		done:          make(chan struct{}),
		clock:         d.mc.Clock,
		acks:          acks,
		storage:       d.storage,
		uids:          operatorUIDs(v.JobVertex),
		waitFinal:     s.waitFinal,
		waiting:       waiting,
		restore:       restore.stateFor(operatorUIDs(v.JobVertex), ev.SubtaskIndex, v.JobVertex.Parallelism),
		head:          &OperatorInfo{Node: headNode.ID, Kind: headNode.Kind, Name: headNode.Name, UID: lk.uidOfNode[headNode.ID], MaxParallelism: headNode.MaxParallelism},
	}
	if assigned := d.splits[v.JobVertex.ID]; assigned != nil {
		t.splits = assigned[ev.SubtaskIndex]
	}
	return t
}

// buildChain creates the operators of a task's chain, from its tail to
// its head, and returns the head's input. channels gives, for an edge
// that leaves the task's vertex, a ChannelWriter to each consumer of the
// subtask's partition, in the partition's order of consumers.
func (d *deployer) buildChain(t *Task, v *graph.ExecutionJobVertex, lk *chainLookup,
	channels func(e *graph.StreamEdge, r *graph.IntermediateResult, types TypeOps) ([]any, error)) (any, error) {
	sg := d.jg.Stream
	var build func(n *graph.StreamNode) (any, error)
	build = func(n *graph.StreamNode) (any, error) {
		main := []any{}
		side := map[string][]any{}
		sideTypes := map[string]TypeOps{}
		for _, e := range sg.OutEdges(n.ID) {
			var out any
			if lk.vertexOfNode[e.Target] == v {
				o, err := build(sg.Node(e.Target))
				if err != nil {
					return nil, err
				}
				out = o
			} else {
				types := e.Type.(TypeOps)
				chans, err := channels(e, lk.resultOf[e], types)
				if err != nil {
					return nil, err
				}
				w, err := types.NewRecordWriter(t, chans, e.Partitioning, e.Partitioner, t.subtask)
				if err != nil {
					return nil, err
				}
				out = w
				if combine, ok := e.Combiner.(CombinerFactory); ok && t.batch && t.iter == nil && sg.Node(e.Target).Iteration == "" {
					// Registered before the operator that feeds it, so
					// that it finishes after that operator and before the
					// writers end their partitions.
					combined, flush := combine(w)
					t.lifecycles = append(t.lifecycles, flush)
					out = combined
				}
			}
			if e.SideOutput == "" {
				main = append(main, out)
			} else {
				side[e.SideOutput] = append(side[e.SideOutput], out)
				sideTypes[e.SideOutput] = e.Type.(TypeOps)
			}
		}
		oc := &OperatorContext{
			Task:        t,
			Info:        &OperatorInfo{Node: n.ID, Kind: n.Kind, Name: n.Name, UID: lk.uidOfNode[n.ID], MaxParallelism: n.MaxParallelism},
			Node:        n,
			SideOutputs: make(map[string]any),
			Batch:       t.batch,
			Config:      d.cfg,
		}
		for tag, outs := range side {
			oc.SideOutputs[tag] = sideTypes[tag].FanOut(outs)
		}
		var mainOut any
		if len(main) > 0 {
			// All main-output edges carry the node's output type.
			for _, e := range sg.OutEdges(n.ID) {
				if e.SideOutput == "" {
					mainOut = e.Type.(TypeOps).FanOut(main)
					break
				}
			}
		}
		return n.Ops.(*NodeOps).NewOperator(oc, mainOut)
	}
	return build(sg.Node(v.JobVertex.Head()))
}
