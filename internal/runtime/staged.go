package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
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
//
// Spread over a cluster's workers (stageddist.go), the leader worker
// schedules every subtask into the job's slots, wherever they are; a
// subtask's partition files stay with the worker that wrote them, which
// sends them over the data plane to consumers elsewhere.

// staged reports whether the job runs in stages. Jobs with iterations
// (whose loops run their stages together) and jobs restored from a
// snapshot run pipelined.
func (d *deployer) staged() bool {
	return d.mc.Restore == nil && RunsInStages(d.cfg, d.jg.Stream)
}

// RunsInStages reports whether a job runs in stages unless it restores a
// snapshot: in batch mode, without iterations.
func RunsInStages(cfg *config.Configuration, sg *graph.StreamGraph) bool {
	if !isBatch(cfg, sg) {
		return false
	}
	for _, n := range sg.Nodes {
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
	// self is this worker's index, 0 outside a cluster; dist and links are
	// set on a cluster (links: the leader's to workers 1..n-1, a worker's
	// to the leader).
	self  int
	dist  *Distribution
	links []*controlLink
	// slots holds the job slots free to run a subtask; placement gives
	// each slot's worker.
	slots     chan int
	placement []int
	// outputs holds where each finished subtask's partition files are;
	// written by the scheduler before it starts any consumer.
	outputs map[subtaskKey]partitionLoc
	// attempts counts the executions of each subtask started so far.
	attempts    map[subtaskKey]int
	remote      remoteRuns
	servers     *errgroup.Group
	serveCtx    context.Context
	channels    atomic.Int64
	vertexIndex map[*graph.ExecutionJobVertex]int
	resultIndex map[*graph.IntermediateResult]int
	shared      *sharedObjects
	// nextIndex numbers the tasks the job ran, for their handles.
	nextIndex int
}

// partitionLoc is where a finished subtask's partition files are: a
// directory of one worker.
type partitionLoc struct {
	worker int
	dir    string
}

// subtaskResult is what one execution of a subtask left.
type subtaskResult struct {
	key    subtaskKey
	loc    partitionLoc
	finals []FinalCommitter
	// name names the execution in logs and errors.
	name string
	err  error
}

// BlockingInput is where one input channel of a subtask's execution reads
// from: a partition file of this worker, or one that worker Worker sends
// on the data plane channel named Channel.
type BlockingInput struct {
	Worker  int
	Path    string
	Channel string
	// Result indexes the execution graph's results: the file's type.
	Result int
}

// runStaged runs a batch job stage by stage until it finished, failed
// for good, or ctx ended. On a cluster only the leader schedules; the
// other workers run what it sends them (followStaged).
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
	s := &stagedRun{
		d: d, set: d.settings(), lk: d.lookup(), dir: dir,
		outputs:     make(map[subtaskKey]partitionLoc),
		attempts:    make(map[subtaskKey]int),
		vertexIndex: make(map[*graph.ExecutionJobVertex]int),
		resultIndex: make(map[*graph.IntermediateResult]int),
		shared:      &sharedObjects{m: make(map[string]any)},
	}
	for i, v := range d.eg.Vertices {
		s.vertexIndex[v] = i
	}
	for i, r := range d.eg.Results {
		s.resultIndex[r] = i
	}
	// Partition files sent to other workers: the senders stop with the job.
	serveCtx, stopServing := context.WithCancel(ctx)
	s.servers, s.serveCtx = &errgroup.Group{}, serveCtx
	defer func() {
		stopServing()
		s.servers.Wait() //nolint:errcheck // a failed send fails its consumer, which reports it
	}()
	if dist := d.mc.Distribution; dist != nil {
		s.dist, s.self, s.placement = dist, dist.Self, dist.Placement
		return s.runDistributed(ctx)
	}
	slots := config.NumTaskSlots.Get(d.cfg)
	if slots == 0 {
		// As many as the job needs: what it would take pipelined.
		slots = len(d.job.Slots)
	}
	s.placement = make([]int, max(1, slots))
	s.freeSlots()
	return s.run(ctx)
}

// freeSlots makes every slot of the placement free.
func (s *stagedRun) freeSlots() {
	s.slots = make(chan int, len(s.placement))
	for i := range s.placement {
		s.slots <- i
	}
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
		// On the scheduler's goroutine, which owns outputs and attempts.
		attempt := s.attempts[key]
		s.attempts[key]++
		producers := s.inputLocations(key)
		group.Go(func() error {
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-gctx.Done():
					return nil
				}
			}
			r := s.runInSlot(gctx, key, attempt, producers)
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
			d.logger.Warn("subtask failed; running it again from its stored input", "task", r.name, "delay", delay, "err", r.err)
			d.job.mu.Lock()
			d.job.restarts++
			d.job.mu.Unlock()
			launch(r.key, delay)
			continue
		}
		s.outputs[r.key] = r.loc
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
	// by the executions that succeeded only; on a cluster, each worker
	// commits its own.
	if err := s.finishWorkers(ctx); err != nil {
		return err
	}
	for _, r := range succeeded {
		for _, f := range r.finals {
			if err := f.CommitFinal(); err != nil {
				return fmt.Errorf("%s: final commit: %w", r.name, err)
			}
		}
	}
	return nil
}

// runInSlot waits for a free slot and runs one execution of a subtask
// there, in this worker or another; the producers' partition files that
// live elsewhere are sent to the slot's worker first.
func (s *stagedRun) runInSlot(ctx context.Context, key subtaskKey, attempt int, producers [2][]partitionFile) subtaskResult {
	var slot int
	select {
	case slot = <-s.slots:
	case <-ctx.Done():
		return subtaskResult{key: key, err: ctx.Err()}
	}
	defer func() { s.slots <- slot }()
	worker := s.placement[slot]
	var inputs [2][]BlockingInput
	for i, files := range producers {
		for _, f := range files {
			in := BlockingInput{Worker: f.worker, Path: f.path, Result: f.result}
			if f.worker != worker {
				in.Channel = fmt.Sprintf("blocking-%d", s.channels.Add(1))
				if err := s.serve(f.worker, in); err != nil {
					return subtaskResult{key: key, err: err}
				}
			}
			inputs[i] = append(inputs[i], in)
		}
	}
	if worker == s.self {
		return s.runSubtask(ctx, key, attempt, inputs)
	}
	return s.runRemote(ctx, worker, key, attempt, inputs)
}

// resultName names a result's partition files: r<index>-c<consumer>.
func (s *stagedRun) resultName(r *graph.IntermediateResult) string {
	return fmt.Sprintf("r%d", s.resultIndex[r])
}

// partitionFile is one partition file a subtask reads, of result result.
type partitionFile struct {
	worker int
	path   string
	result int
}

// inputLocations returns the partition files a subtask reads, per input,
// in the order of its gates' channels.
func (s *stagedRun) inputLocations(key subtaskKey) [2][]partitionFile {
	var files [2][]partitionFile
	v := s.d.eg.Vertices[key.vertex]
	for input := 1; input <= 2; input++ {
		for _, part := range v.InputChannels(key.subtask, input) {
			loc := s.outputs[subtaskKey{s.vertexIndex[part.Result.Producer], part.PartitionNumber}]
			files[input-1] = append(files[input-1], partitionFile{loc.worker,
				filepath.Join(loc.dir, fmt.Sprintf("%s-c%d", s.resultName(part.Result), key.subtask)), s.resultIndex[part.Result]})
		}
	}
	return files
}

// runSubtask runs execution attempt of a subtask in this worker: its
// input comes from the partition files of its producers, its output goes
// to files of its own.
func (s *stagedRun) runSubtask(ctx context.Context, key subtaskKey, attempt int, inputs [2][]BlockingInput) (r subtaskResult) {
	r.key = key
	d := s.d
	v := d.eg.Vertices[key.vertex]
	ev := v.TaskVertices[key.subtask]
	r.name = ev.TaskName()
	ex := ev.Current()
	for ex.AttemptNumber < attempt || ex.State() != graph.StateCreated && ex.State() != graph.StateScheduled {
		// Earlier attempts ran here or, on a cluster, elsewhere.
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
	r.name = t.Name()
	ex.Transition(graph.StateDeploying, nil)
	r.loc = partitionLoc{s.self, filepath.Join(s.dir, fmt.Sprintf("v%d-s%d-a%d", key.vertex, key.subtask, ex.AttemptNumber))}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close() // already closed at the end of its partition
		}
		if r.err != nil {
			os.RemoveAll(r.loc.dir)
		}
	}()
	fail := func(err error) subtaskResult {
		ex.Transition(graph.StateFailed, err)
		r.err = err
		return r
	}
	if err := os.Mkdir(r.loc.dir, 0o755); err != nil {
		return fail(fmt.Errorf("runtime: %s: %w", ev.TaskName(), err))
	}
	head, err := d.buildChain(t, v, s.lk, func(e *graph.StreamEdge, res *graph.IntermediateResult, types TypeOps) ([]any, error) {
		part := res.Partitions[key.subtask]
		chans := make([]any, len(part.Consumers))
		for k, c := range part.Consumers {
			f, err := os.Create(filepath.Join(r.loc.dir, fmt.Sprintf("%s-c%d", s.resultName(res), c)))
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
		paths := make([]string, len(chans))
		for idx, in := range inputs[input-1] {
			if in.Worker == s.self {
				paths[idx] = in.Path
				continue
			}
			group.Go(func() error {
				err := s.receive(gctx, types, g, idx, in)
				if err != nil && gctx.Err() == nil {
					ex.Transition(graph.StateFailed, err)
				}
				return err
			})
		}
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
