package runtime

import (
	"context"
	"fmt"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/graph"
)

// MiniCluster runs a job in this process with the same graphs, slots and
// tasks as a real cluster: the embedded default.
type MiniCluster struct {
	Config *config.Configuration
	Logger *slog.Logger
	// Clock is the processing-time clock of every task; nil means the
	// wall clock. Tests use a ManualClock.
	Clock Clock
}

// Slot is a task slot of the mini cluster; with slot sharing, one slot
// runs one subtask of every vertex in its group.
type Slot struct {
	ID    graph.SlotID
	Group string
	Tasks []string
}

// Job is a running job.
type Job struct {
	Graph *graph.ExecutionGraph
	Slots []*Slot

	cancel context.CancelFunc
	done   chan struct{}
	err    error
	tasks  []*Task
	evs    []*graph.ExecutionVertex
}

// Wait blocks until the job ends and returns its error.
func (j *Job) Wait() error {
	<-j.done
	return j.err
}

// Done is closed when the job has ended and all its goroutines returned.
func (j *Job) Done() <-chan struct{} { return j.done }

// Cancel stops the job; Wait returns context.Canceled.
func (j *Job) Cancel() { j.cancel() }

// TaskMetrics is a snapshot of one subtask's counters.
type TaskMetrics struct {
	Task       string
	Vertex     graph.JobVertexID
	Subtask    int
	State      graph.ExecutionState
	RecordsIn  int64
	RecordsOut int64
	// BufferedIn is the number of records waiting in the task's input
	// gates.
	BufferedIn int64
}

// Metrics returns a snapshot of every subtask's counters.
func (j *Job) Metrics() []TaskMetrics {
	out := make([]TaskMetrics, len(j.tasks))
	for i, t := range j.tasks {
		var buffered int64
		for _, g := range t.gates {
			buffered += g.Buffered()
		}
		out[i] = TaskMetrics{
			Task:       t.Name(),
			Vertex:     j.evs[i].Vertex.JobVertex.ID,
			Subtask:    t.subtask,
			State:      j.evs[i].Current().State(),
			RecordsIn:  t.recordsIn.Load(),
			RecordsOut: t.recordsOut.Load(),
			BufferedIn: buffered,
		}
	}
	return out
}

// AllocateSlots assigns subtasks to slots with slot sharing: subtask i of
// every vertex of a sharing group runs in the group's slot i, so a job
// needs as many slots per group as the group's highest parallelism.
func AllocateSlots(eg *graph.ExecutionGraph, available int, taskManager string) ([]*Slot, error) {
	var groups []string
	width := make(map[string]int)
	for _, v := range eg.Vertices {
		g := v.JobVertex.SlotSharingGroup
		if _, ok := width[g]; !ok {
			groups = append(groups, g)
		}
		width[g] = max(width[g], v.JobVertex.Parallelism)
	}
	need := 0
	first := make(map[string]int)
	for _, g := range groups {
		first[g] = need
		need += width[g]
	}
	if available > 0 && need > available {
		return nil, fmt.Errorf("runtime: job needs %d task slots (%s) but the cluster has %d; raise taskmanager.numberOfTaskSlots or lower the parallelism",
			need, describeGroups(groups, width), available)
	}
	slots := make([]*Slot, need)
	for _, g := range groups {
		for i := 0; i < width[g]; i++ {
			idx := first[g] + i
			slots[idx] = &Slot{ID: graph.SlotID{TaskManager: taskManager, Index: idx}, Group: g}
		}
	}
	for _, v := range eg.Vertices {
		for _, ev := range v.TaskVertices {
			s := slots[first[v.JobVertex.SlotSharingGroup]+ev.SubtaskIndex]
			s.Tasks = append(s.Tasks, ev.TaskName())
			ex := ev.Current()
			ex.Slot = s.ID
			ex.Transition(graph.StateScheduled, nil)
		}
	}
	return slots, nil
}

func describeGroups(groups []string, width map[string]int) string {
	s := ""
	for i, g := range groups {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("group %q: %d", g, width[g])
	}
	return s
}

// Submit builds the execution graph, deploys every subtask and starts the
// job. The job's goroutines stop when ctx is cancelled, the job fails, or
// it finishes.
func (mc *MiniCluster) Submit(ctx context.Context, jg *graph.JobGraph) (*Job, error) {
	cfg := mc.Config
	if cfg == nil {
		cfg = config.New()
	}
	logger := mc.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	eg, err := graph.BuildExecutionGraph(jg)
	if err != nil {
		return nil, err
	}
	slots, err := AllocateSlots(eg, config.NumTaskSlots.Get(cfg), "local")
	if err != nil {
		return nil, err
	}
	sg := jg.Stream
	batch := isBatch(cfg, sg)
	gateCfg := GateConfig{
		BuffersPerChannel: config.BuffersPerChannel.Get(cfg),
		FloatingBuffers:   config.FloatingBuffersPerGate.Get(cfg),
	}
	bufferRecords := config.BufferRecords.Get(cfg)
	bufferTimeout := config.BufferTimeout.Get(cfg)
	if bufferTimeout == 0 {
		// Flush after every record: lowest latency.
		bufferRecords = 1
	}
	serialize := config.ForceSerialization.Get(cfg)

	jobCtx, cancel := context.WithCancel(ctx)
	group, gctx := errgroup.WithContext(jobCtx)
	job := &Job{Graph: eg, Slots: slots, cancel: cancel, done: make(chan struct{})}

	// Sources enumerate their splits once per job, like Flink's split
	// enumerator on the JobManager; split i goes to subtask i mod p.
	splits := make(map[graph.JobVertexID][][]connector.Split)
	for _, v := range eg.Vertices {
		head := sg.Node(v.JobVertex.Head())
		ops := head.Ops.(*NodeOps)
		if ops.Splits == nil {
			continue
		}
		all, err := ops.Splits(gctx, v.JobVertex.Parallelism)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("source %q: enumerate splits: %w", head.Name, err)
		}
		assigned := make([][]connector.Split, v.JobVertex.Parallelism)
		for i, s := range all {
			assigned[i%len(assigned)] = append(assigned[i%len(assigned)], s)
		}
		splits[v.JobVertex.ID] = assigned
	}

	// Input gates: one per consumer subtask and logical input; channels are
	// numbered in the order of InputChannels.
	type gateKey struct {
		vertex  graph.JobVertexID
		subtask int
		input   int
	}
	type channelKey struct {
		result   *graph.IntermediateResult
		producer int
		consumer int
	}
	gates := make(map[gateKey]any)
	channelIndex := make(map[channelKey]int)
	for _, v := range eg.Vertices {
		for j := 0; j < v.JobVertex.Parallelism; j++ {
			for input := 1; input <= 2; input++ {
				chans := v.InputChannels(j, input)
				if len(chans) == 0 {
					continue
				}
				types := chans[0].Result.Edge.StreamEdge.Type.(TypeOps)
				gates[gateKey{v.JobVertex.ID, j, input}] = types.NewGate(len(chans), gateCfg)
				for idx, part := range chans {
					channelIndex[channelKey{part.Result, part.PartitionNumber, j}] = idx
				}
			}
		}
	}
	vertexOfNode := make(map[graph.NodeID]*graph.ExecutionJobVertex)
	for _, v := range eg.Vertices {
		for _, op := range v.JobVertex.Operators {
			vertexOfNode[op.Node] = v
		}
	}
	resultOf := make(map[*graph.StreamEdge]*graph.IntermediateResult)
	for _, r := range eg.Results {
		resultOf[r.Edge.StreamEdge] = r
	}

	for _, v := range eg.Vertices {
		for _, ev := range v.TaskVertices {
			ex := ev.Current()
			headNode := sg.Node(v.JobVertex.Head())
			t := &Task{
				vertexName:    v.JobVertex.Name,
				subtask:       ev.SubtaskIndex,
				parallelism:   v.JobVertex.Parallelism,
				attempt:       ex.AttemptNumber,
				ctx:           gctx,
				cfg:           cfg,
				batch:         batch,
				bufferRecords: bufferRecords,
				bufferTimeout: bufferTimeout,
				serialize:     serialize,
				mailbox:       make(chan func(), 16),
				clock:         mc.Clock,
				head:          &OperatorInfo{Node: headNode.ID, Kind: headNode.Kind, Name: headNode.Name},
			}
			if assigned := splits[v.JobVertex.ID]; assigned != nil {
				t.splits = assigned[ev.SubtaskIndex]
			}
			ex.Transition(graph.StateDeploying, nil)
			var build func(n *graph.StreamNode) (any, error)
			build = func(n *graph.StreamNode) (any, error) {
				main := []any{}
				side := map[string][]any{}
				sideTypes := map[string]TypeOps{}
				for _, e := range sg.OutEdges(n.ID) {
					var out any
					if vertexOfNode[e.Target] == v {
						o, err := build(sg.Node(e.Target))
						if err != nil {
							return nil, err
						}
						out = o
					} else {
						r := resultOf[e]
						part := r.Partitions[ev.SubtaskIndex]
						types := e.Type.(TypeOps)
						chans := make([]any, len(part.Consumers))
						for k, c := range part.Consumers {
							g := gates[gateKey{r.Consumer.JobVertex.ID, c, e.Input}]
							chans[k] = types.NewChannel(g, channelIndex[channelKey{r, ev.SubtaskIndex, c}], serialize)
						}
						w, err := types.NewRecordWriter(t, chans, e.Partitioning, e.Partitioner, ev.SubtaskIndex)
						if err != nil {
							return nil, err
						}
						out = w
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
					Info:        &OperatorInfo{Node: n.ID, Kind: n.Kind, Name: n.Name},
					Node:        n,
					SideOutputs: make(map[string]any),
					Batch:       batch,
					Config:      cfg,
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
			head, err := build(headNode)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("deploy %s: %w", ev.TaskName(), err)
			}
			g := [2]any{gates[gateKey{v.JobVertex.ID, ev.SubtaskIndex, 1}], gates[gateKey{v.JobVertex.ID, ev.SubtaskIndex, 2}]}
			for _, gate := range g {
				if gate != nil {
					t.gates = append(t.gates, gate.(interface{ Buffered() int64 }))
				}
			}
			job.tasks = append(job.tasks, t)
			job.evs = append(job.evs, ev)
			run := headNode.Ops.(*NodeOps).RunHead
			group.Go(func() error {
				ex.Transition(graph.StateRunning, nil)
				err := run(t, head, g)
				switch {
				case err == nil:
					ex.Transition(graph.StateFinished, nil)
				case gctx.Err() != nil && !isOperatorError(err):
					ex.Transition(graph.StateCanceled, nil)
				default:
					ex.Transition(graph.StateFailed, err)
					logger.Error("task failed", "task", t.Name(), "attempt", ex.AttemptID, "err", err)
				}
				return err
			})
		}
	}
	go func() {
		// The job's goroutines are all owned by the errgroup; this one only
		// waits for them and ends with them.
		err := group.Wait()
		cancel()
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		job.err = err
		close(job.done)
	}()
	return job, nil
}

func isOperatorError(err error) bool {
	_, ok := err.(*OperatorError)
	return ok
}

// isBatch resolves execution.runtime-mode: AUTOMATIC means BATCH when every
// source is bounded.
func isBatch(cfg *config.Configuration, sg *graph.StreamGraph) bool {
	switch config.RuntimeMode.Get(cfg) {
	case "BATCH":
		return true
	case "AUTOMATIC":
		for _, n := range sg.Nodes {
			if n.Kind == "source" && !n.Bounded {
				return false
			}
		}
		return true
	}
	return false
}
