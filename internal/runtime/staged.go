package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/graph"
)

// A batch job in the mini cluster runs in stages (Flink's batch
// scheduling): every exchange between vertices is blocking (blocking.go),
// so a vertex's subtasks start once every subtask of every vertex it
// reads from has finished, and only as many subtasks run at once as the
// mini cluster has slots. Each subtask is a failover region of its own:
// when one fails, the restart strategy decides whether it runs again,
// as a new attempt that reads the same stored input, while every other
// subtask keeps its result. The partition files of finished subtasks stay
// until the job ends.

// staged reports whether the job runs in stages. Jobs spread over a
// cluster's workers, jobs with iterations (whose loops run their stages
// together) and jobs restored from a snapshot run pipelined.
func (d *deployer) staged() bool {
	if !isBatch(d.cfg, d.jg.Stream) || d.mc.Distribution != nil || d.mc.Restore != nil {
		return false
	}
	for _, n := range d.jg.Stream.Nodes {
		if n.Iteration != "" || n.Kind == "iteration-stream-head" || n.Kind == "iteration-stream-tail" {
			return false
		}
	}
	return true
}

// subtaskKey names a subtask: the index of its vertex in the execution
// graph, and its subtask index.
type subtaskKey struct{ vertex, subtask int }

// stagedRun is the state of one staged job.
type stagedRun struct {
	d   *deployer
	set taskSettings
	lk  *chainLookup
	dir string
	// slots bounds the subtasks that run at once.
	slots chan struct{}
	// outputs holds the directory of each finished subtask's partition
	// files; written by the scheduler before it starts any consumer.
	outputs     map[subtaskKey]string
	vertexIndex map[*graph.ExecutionJobVertex]int
	resultName  map[*graph.IntermediateResult]string
	shared      *sharedObjects
	// nextIndex numbers the tasks the job ran, for their handles.
	nextIndex int
}

// subtaskResult is what one execution of a subtask left.
type subtaskResult struct {
	key    subtaskKey
	dir    string
	finals []FinalCommitter
	task   *Task
	err    error
}

// runStaged runs a batch job stage by stage until it finished, failed
// for good, or ctx ended.
func (d *deployer) runStaged(ctx context.Context) error {
	root := config.TmpDirs.Get(d.cfg)
	if root == "" {
		root = os.TempDir()
	}
	dir, err := os.MkdirTemp(root, "weir-batch-")
	if err != nil {
		return fmt.Errorf("runtime: create the directory of blocking partitions under %s (io.tmp.dirs): %w", root, err)
	}
	defer os.RemoveAll(dir)
	slots := config.NumTaskSlots.Get(d.cfg)
	if slots == 0 {
		// As many as the job needs: what it would take pipelined.
		slots = len(d.job.Slots)
	}
	s := &stagedRun{
		d: d, set: d.settings(), lk: d.lookup(), dir: dir,
		slots:       make(chan struct{}, max(1, slots)),
		outputs:     make(map[subtaskKey]string),
		vertexIndex: make(map[*graph.ExecutionJobVertex]int),
		resultName:  make(map[*graph.IntermediateResult]string),
		shared:      &sharedObjects{m: make(map[string]any)},
	}
	for i, v := range d.eg.Vertices {
		s.vertexIndex[v] = i
	}
	for i, r := range d.eg.Results {
		s.resultName[r] = fmt.Sprintf("r%d", i)
	}
	return s.run(ctx)
}

func (s *stagedRun) run(ctx context.Context) error {
	d := s.d
	ctx, cancel := context.WithCancel(ctx)
	group, gctx := errgroup.WithContext(ctx)
	defer func() {
		// A failure that ends the job stops the subtasks still running.
		cancel()
		group.Wait() //nolint:errcheck // the subtasks' errors come through results
	}()
	results := make(chan subtaskResult)
	launch := func(key subtaskKey, delay time.Duration) {
		// On the scheduler's goroutine, which owns outputs.
		inputs := s.inputPaths(key)
		group.Go(func() error {
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-gctx.Done():
					return nil
				}
			}
			r := s.runSubtask(gctx, key, inputs)
			select {
			case results <- r:
			case <-gctx.Done():
			}
			return nil
		})
	}
	// waitingFor counts, per vertex, the producing vertices that have not
	// finished yet.
	waitingFor := make(map[int]int)
	consumers := make(map[int][]int)
	for i, v := range d.eg.Vertices {
		producers := make(map[int]bool)
		for _, r := range v.Inputs {
			producers[s.vertexIndex[r.Producer]] = true
		}
		waitingFor[i] = len(producers)
		for p := range producers {
			consumers[p] = append(consumers[p], i)
		}
	}
	startVertex := func(i int) {
		for j := range d.eg.Vertices[i].JobVertex.Parallelism {
			launch(subtaskKey{i, j}, 0)
		}
	}
	for i := range d.eg.Vertices {
		if waitingFor[i] == 0 {
			startVertex(i)
		}
	}
	strategy := NewRestartStrategy(d.cfg, config.RestartStrategy.Default)
	finished := make(map[int]int)
	var succeeded []subtaskResult
	remaining := len(d.eg.Vertices)
	for remaining > 0 {
		var r subtaskResult
		select {
		case r = <-results:
		case req := <-d.savepoints:
			req.reply <- savepointResult{err: errors.New("savepoint: a job in batch mode takes no savepoints; its failed stages run again from their inputs' stored results")}
			continue
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			delay, giveUp := strategy.OnFailure(time.Now(), 0)
			if giveUp != nil {
				if _, none := strategy.(noRestart); none {
					return r.err
				}
				return fmt.Errorf("%v: %w", giveUp, r.err)
			}
			d.logger.Warn("subtask failed; running it again from its stored input", "task", r.task.Name(), "delay", delay, "err", r.err)
			d.job.mu.Lock()
			d.job.restarts++
			d.job.mu.Unlock()
			launch(r.key, delay)
			continue
		}
		s.outputs[r.key] = r.dir
		succeeded = append(succeeded, r)
		finished[r.key.vertex]++
		if finished[r.key.vertex] < d.eg.Vertices[r.key.vertex].JobVertex.Parallelism {
			continue
		}
		remaining--
		for _, c := range consumers[r.key.vertex] {
			if waitingFor[c]--; waitingFor[c] == 0 {
				startVertex(c)
			}
		}
	}
	// Every subtask finished: what the sinks prepared is committed now,
	// by the executions that succeeded only.
	for _, r := range succeeded {
		for _, f := range r.finals {
			if err := f.CommitFinal(); err != nil {
				return r.task.wrap(fmt.Errorf("final commit: %w", err), "")
			}
		}
	}
	return nil
}

// inputPaths returns the partition files a subtask reads, per input, in
// the order of its gates' channels.
func (s *stagedRun) inputPaths(key subtaskKey) [2][]string {
	var paths [2][]string
	v := s.d.eg.Vertices[key.vertex]
	for input := 1; input <= 2; input++ {
		for _, part := range v.InputChannels(key.subtask, input) {
			producer := subtaskKey{s.vertexIndex[part.Result.Producer], part.PartitionNumber}
			paths[input-1] = append(paths[input-1], filepath.Join(s.outputs[producer], fmt.Sprintf("%s-c%d", s.resultName[part.Result], key.subtask)))
		}
	}
	return paths
}

// runSubtask runs one execution of a subtask in a slot: its input comes
// from the partition files of its producers, its output goes to files of
// its own.
func (s *stagedRun) runSubtask(ctx context.Context, key subtaskKey, inputs [2][]string) (r subtaskResult) {
	r.key = key
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		r.err = ctx.Err()
		return r
	}
	defer func() { <-s.slots }()
	d := s.d
	v := d.eg.Vertices[key.vertex]
	ev := v.TaskVertices[key.subtask]
	ex := ev.Current()
	if ex.State() != graph.StateCreated && ex.State() != graph.StateScheduled {
		slot := ex.Slot
		ex = ev.NewAttempt()
		ex.Slot = slot
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.job.mu.Lock()
	index := s.nextIndex
	s.nextIndex++
	d.job.mu.Unlock()
	t := d.newTask(ctx, s.set, s.lk, v, ev, ex, index, nil, nil, nil)
	t.shared = s.shared
	r.task = t
	ex.Transition(graph.StateDeploying, nil)
	r.dir = filepath.Join(s.dir, fmt.Sprintf("v%d-s%d-a%d", key.vertex, key.subtask, ex.AttemptNumber))
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close() // already closed at the end of its partition
		}
		if r.err != nil {
			os.RemoveAll(r.dir)
		}
	}()
	fail := func(err error) subtaskResult {
		ex.Transition(graph.StateFailed, err)
		r.err = err
		return r
	}
	if err := os.Mkdir(r.dir, 0o755); err != nil {
		return fail(fmt.Errorf("runtime: %s: %w", ev.TaskName(), err))
	}
	head, err := d.buildChain(t, v, s.lk, func(e *graph.StreamEdge, res *graph.IntermediateResult, types TypeOps) ([]any, error) {
		part := res.Partitions[key.subtask]
		chans := make([]any, len(part.Consumers))
		for k, c := range part.Consumers {
			f, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("%s-c%d", s.resultName[res], c)))
			if err != nil {
				return nil, fmt.Errorf("runtime: create blocking partition: %w", err)
			}
			files = append(files, f)
			chans[k] = types.NewBlockingChannel(f)
		}
		return chans, nil
	})
	if err != nil {
		return fail(fmt.Errorf("deploy %s: %w", ev.TaskName(), err))
	}
	group, gctx := errgroup.WithContext(ctx)
	t.ctx = gctx
	var gates [2]any
	for input := 1; input <= 2; input++ {
		chans := v.InputChannels(key.subtask, input)
		if len(chans) == 0 {
			continue
		}
		types := chans[0].Result.Edge.StreamEdge.Type.(TypeOps)
		g := types.NewGate(len(chans), s.set.gate)
		g.(interface{ useTypes(TypeOps) }).useTypes(types)
		gates[input-1] = g
		t.gates = append(t.gates, g.(metricGate))
		paths := inputs[input-1]
		group.Go(func() error {
			err := types.ReplayBlocking(gctx, paths, g)
			if err != nil && gctx.Err() == nil {
				// The task fails, rather than being cancelled, for its input.
				ex.Transition(graph.StateFailed, err)
			}
			return err
		})
	}
	d.job.mu.Lock()
	if i := slices.Index(d.job.evs, ev); i >= 0 {
		d.job.tasks[i] = t // the subtask's latest execution
	} else {
		d.job.tasks = append(d.job.tasks, t)
		d.job.evs = append(d.job.evs, ev)
	}
	d.job.mu.Unlock()
	run := d.jg.Stream.Node(v.JobVertex.Head()).Ops.(*NodeOps).RunHead
	group.Go(func() (err error) {
		defer func() {
			t.exitedFinished = err == nil && t.finished
			close(t.done)
		}()
		return d.execute(gctx, t, ex, func() error { return run(t, head, gates) })
	})
	if err := group.Wait(); err != nil {
		if ex.State() != graph.StateFailed {
			ex.Transition(graph.StateFailed, err)
		}
		r.err = err
		return r
	}
	r.finals = t.finals
	return r
}
