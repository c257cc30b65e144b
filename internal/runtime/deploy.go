package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/network"
)

// deployer builds and runs the attempts of one job on the mini cluster.
type deployer struct {
	mc      *MiniCluster
	cfg     *config.Configuration
	logger  *slog.Logger
	jg      *graph.JobGraph
	eg      *graph.ExecutionGraph
	job     *Job
	storage *checkpointStorage
	splits  map[graph.JobVertexID][][]connector.Split
	// savepoints carries savepoint requests to the current attempt's
	// coordinator.
	savepoints chan *savepointRequest
}

// attempt is one deployment of every subtask.
type attempt struct {
	number int
	tasks  []*Task
	evs    []*graph.ExecutionVertex
	heads  []any
	gates  [][2]any
	runs   []func(*Task, any, [2]any) error
	acks   chan checkpointAck
	// waiting receives the index of each task that finished and waits
	// for its final checkpoint.
	waiting chan int
	// handles reach every subtask of the job, by task index, for the
	// coordinator; in a distributed attempt some are in other workers.
	handles []taskHandle
	// The rest is for distributed attempts: local maps task indexes to
	// this worker's tasks; links go to the other workers (leader) or to
	// the leader (link); bridges feed input gates from other workers;
	// exits reports the ends of tasks to a worker's forwarder.
	local   map[int]*Task
	links   []*controlLink
	link    *controlLink
	bridges []func(context.Context) error
	exits   chan taskExit
	// iterations synchronise the supersteps of the job's iterations, by
	// ID; shared holds what tasks of this attempt in this process share.
	iterations map[string]*superstepSync
	shared     *sharedObjects
}

type checkpointAck struct {
	task int
	id   int64
	snap *TaskSnapshot
	err  error
	// exited: the task finished and exited; it acknowledges the
	// checkpoint in flight, if any, as finished.
	exited bool
}

// enumerateSplits asks every source for its splits once per job, like
// Flink's split enumerator on the JobManager; split i goes to subtask i
// mod p.
func (d *deployer) enumerateSplits(ctx context.Context) error {
	d.splits = make(map[graph.JobVertexID][][]connector.Split)
	for _, v := range d.eg.Vertices {
		head := d.jg.Stream.Node(v.JobVertex.Head())
		ops := head.Ops.(*NodeOps)
		if ops.Splits == nil {
			continue
		}
		all, err := ops.Splits(ctx, v.JobVertex.Parallelism)
		if err != nil {
			return fmt.Errorf("source %q: enumerate splits: %w", head.Name, err)
		}
		assigned := make([][]connector.Split, v.JobVertex.Parallelism)
		for i, s := range all {
			assigned[i%len(assigned)] = append(assigned[i%len(assigned)], s)
		}
		d.splits[v.JobVertex.ID] = assigned
	}
	return nil
}

// deploy creates the tasks of one attempt, wired to each other, restoring
// their state from restore when it is not nil.
func (d *deployer) deploy(ctx context.Context, number int, restore *CompletedCheckpoint) (*attempt, error) {
	eg, sg := d.eg, d.jg.Stream
	set := d.settings()
	a := &attempt{number: number, acks: make(chan checkpointAck, 64), waiting: make(chan int, 64), local: make(map[int]*Task)}
	dist := d.mc.Distribution
	self := 0
	if dist != nil {
		self = dist.Self
	}
	// workerOf gives the worker that runs a subtask: its slot's.
	workerOf := func(ev *graph.ExecutionVertex) int {
		if dist == nil {
			return 0
		}
		return dist.Placement[ev.Current().Slot.Index]
	}
	resultName := make(map[*graph.IntermediateResult]string)
	for i, r := range eg.Results {
		resultName[r] = fmt.Sprintf("r%d", i)
	}
	channelID := func(r *graph.IntermediateResult, producer, consumer int) network.ChannelID {
		return network.ChannelID{Job: dist.Key, Result: resultName[r], Partition: producer, Subpartition: consumer}
	}
	if dist != nil {
		if self == 0 {
			for w := 1; w < len(dist.Peers); w++ {
				l, err := newControlLink(ctx, dist, w)
				if err != nil {
					return nil, err
				}
				a.links = append(a.links, l)
			}
		} else {
			l, err := newControlLink(ctx, dist, 0)
			if err != nil {
				return nil, err
			}
			a.link = l
		}
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
			if workerOf(v.TaskVertices[j]) != self {
				continue
			}
			for input := 1; input <= 2; input++ {
				chans := v.InputChannels(j, input)
				if len(chans) == 0 {
					continue
				}
				types := chans[0].Result.Edge.StreamEdge.Type.(TypeOps)
				g := types.NewGate(len(chans), set.gate)
				g.(interface{ useTypes(TypeOps) }).useTypes(types)
				gates[gateKey{v.JobVertex.ID, j, input}] = g
				var remote []int // gate channels whose producers are elsewhere
				for idx, part := range chans {
					channelIndex[channelKey{part.Result, part.PartitionNumber, j}] = idx
					if workerOf(part.Result.Producer.TaskVertices[part.PartitionNumber]) != self {
						remote = append(remote, idx)
					}
				}
				if len(remote) > 0 {
					a.bridges = append(a.bridges, d.bridge(dist, types, g, chans, remote, j, workerOf, channelID, set.gate))
				}
			}
		}
	}
	lk := d.lookup()
	a.shared = &sharedObjects{m: make(map[string]any)}
	iterationOf, err := d.iterations(a, sg)
	if err != nil {
		return nil, err
	}

	for _, v := range eg.Vertices {
		for _, ev := range v.TaskVertices {
			index := len(a.handles)
			headNode := sg.Node(v.JobVertex.Head())
			if w := workerOf(ev); w != self {
				// Another worker runs it; the leader reaches it through
				// that worker's link.
				var h taskHandle
				if self == 0 {
					h = &remoteHandle{link: a.links[w-1], index: index, source: headNode.Ops.(*NodeOps).Splits != nil, exited: make(chan struct{}),
						taskName: fmt.Sprintf("%s (%d/%d) in worker %d", v.JobVertex.Name, ev.SubtaskIndex+1, v.JobVertex.Parallelism, w),
						final:    TaskSnapshot{Vertex: string(v.JobVertex.ID), Subtask: ev.SubtaskIndex, Parallelism: v.JobVertex.Parallelism, UIDs: operatorUIDs(v.JobVertex), Finished: true}}
				}
				a.handles = append(a.handles, h)
				continue
			}
			ex := ev.Current()
			if number > 0 {
				ex = ev.NewAttempt()
				ex.Slot = ev.Current().Slot
			}
			t := d.newTask(ctx, set, lk, v, ev, ex, index, restore, a.acks, a.waiting)
			t.shared, t.iterations = a.shared, a.iterations
			if it := iterationOf(v.JobVertex); it != nil {
				// A loop takes no checkpoints: its tasks align on the ends
				// of supersteps instead of barriers.
				t.unaligned = false
				t.iter = &TaskIteration{t: t, sync: it, head: sg.Node(v.JobVertex.Head()).IterationHead, superstep: 1}
			}
			ex.Transition(graph.StateDeploying, nil)
			head, err := d.buildChain(t, v, lk, func(e *graph.StreamEdge, r *graph.IntermediateResult, types TypeOps) ([]any, error) {
				part := r.Partitions[ev.SubtaskIndex]
				chans := make([]any, len(part.Consumers))
				for k, c := range part.Consumers {
					if workerOf(r.Consumer.TaskVertices[c]) != self {
						s, err := dist.Net.Produce(channelID(r, ev.SubtaskIndex, c))
						if err != nil {
							return nil, err
						}
						chans[k] = types.NewRemoteChannel(s, dist.Net.BufferSize())
						continue
					}
					g := gates[gateKey{r.Consumer.JobVertex.ID, c, e.Input}]
					chans[k] = types.NewChannel(g, channelIndex[channelKey{r, ev.SubtaskIndex, c}], set.serialize)
				}
				return chans, nil
			})
			if err != nil {
				return nil, fmt.Errorf("deploy %s: %w", ev.TaskName(), err)
			}
			g := [2]any{gates[gateKey{v.JobVertex.ID, ev.SubtaskIndex, 1}], gates[gateKey{v.JobVertex.ID, ev.SubtaskIndex, 2}]}
			for _, gate := range g {
				if gate != nil {
					t.gates = append(t.gates, gate.(metricGate))
				}
			}
			a.tasks = append(a.tasks, t)
			a.handles = append(a.handles, localHandle{t})
			a.local[index] = t
			a.evs = append(a.evs, ev)
			a.heads = append(a.heads, head)
			a.gates = append(a.gates, g)
			a.runs = append(a.runs, headNode.Ops.(*NodeOps).RunHead)
		}
	}
	d.job.mu.Lock()
	d.job.tasks, d.job.evs = a.tasks, a.evs
	d.job.mu.Unlock()
	return a, nil
}

func operatorUIDs(v *graph.JobVertex) []string {
	out := make([]string, len(v.Operators))
	for i, op := range v.Operators {
		out[i] = op.UID
	}
	return out
}

// run executes attempts until one succeeds, ctx ends, or the restart
// strategy gives up.
func (d *deployer) run(ctx context.Context, a *attempt) error {
	strategy := NewRestartStrategy(d.cfg, config.RestartStrategy.Default)
	for {
		started := time.Now()
		err := d.runAttempt(ctx, a)
		if err == nil || ctx.Err() != nil || d.mc.ClusterRestarts {
			return err
		}
		delay, giveUp := strategy.OnFailure(time.Now(), time.Since(started))
		if giveUp != nil {
			if _, none := strategy.(noRestart); none {
				return err
			}
			return fmt.Errorf("%v: %w", giveUp, err)
		}
		restore := d.storage.latestCheckpoint()
		from := "from the beginning (no checkpoint completed)"
		if restore != nil {
			from = fmt.Sprintf("from checkpoint %d", restore.ID)
		}
		d.logger.Warn("job failed; restarting", "attempt", a.number+1, "from", from, "delay", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		d.job.mu.Lock()
		d.job.restarts++
		d.job.mu.Unlock()
		next, derr := d.deploy(ctx, a.number+1, restore)
		if derr != nil {
			return derr
		}
		a = next
	}
}

// runAttempt runs every task of an attempt and, with checkpointing on,
// the checkpoint coordinator; it returns when all of them returned.
func (d *deployer) runAttempt(ctx context.Context, a *attempt) error {
	group, gctx := errgroup.WithContext(ctx)
	if a.link != nil {
		a.exits = make(chan taskExit, len(a.tasks))
	}
	for i, t := range a.tasks {
		t.ctx = gctx
		ev, head, g, run := a.evs[i], a.heads[i], a.gates[i], a.runs[i]
		ex := ev.Current()
		group.Go(func() (err error) {
			defer func() {
				if err == nil && t.waitFinal {
					// After done is closed: a finished task that exited
					// stands for its snapshot in the checkpoint in flight,
					// whose trigger it may have left in its mailbox.
					select {
					case a.acks <- checkpointAck{task: t.index, exited: true}:
					case <-gctx.Done():
					}
				}
				if a.exits != nil {
					a.exits <- taskExit{index: t.index, err: err}
				}
			}()
			defer func() {
				// Only a task that finished and returned cleanly stands
				// for a finished snapshot once it exited: a checkpoint
				// started in the moment between a task's failure and the
				// attempt's cancellation must not record it as finished,
				// or a restore from that checkpoint would deploy it
				// finished while its inputs are not.
				t.exitedFinished = err == nil && t.finished
				close(t.done)
			}()
			return d.execute(gctx, t, ex, func() error { return run(t, head, g) })
		})
	}
	for _, b := range a.bridges {
		group.Go(func() error { return b(gctx) })
	}
	if a.link != nil {
		// A worker of a distributed attempt: the leader coordinates.
		group.Go(func() error { return d.followLeader(gctx, a, a.link) })
		group.Go(func() error { return d.forwardToLeader(gctx, a, a.link) })
	} else {
		for _, l := range a.links {
			group.Go(func() error { return d.readWorker(gctx, a, l) })
		}
		c := &coordinator{d: d, a: a, interval: config.CheckpointInterval.Get(d.cfg), timeout: config.CheckpointTimeout.Get(d.cfg),
			minPause: config.CheckpointMinPause.Get(d.cfg), tolerable: config.TolerableCheckpointFailures.Get(d.cfg)}
		group.Go(func() error { return c.run(gctx) })
	}
	err := group.Wait()
	if err != nil {
		// The other workers learn why, rather than just that the link broke.
		for _, l := range append(a.links, a.link) {
			if l != nil {
				l.out.Fail(err)
			}
		}
		return err
	}
	for _, l := range a.links {
		l.closeOut()
	}
	// Every task finished: output prepared after the last checkpoint can
	// no longer be replayed, so it is committed now.
	for _, t := range a.tasks {
		for _, f := range t.finals {
			if err := f.CommitFinal(); err != nil {
				return t.wrap(fmt.Errorf("final commit: %w", err), "")
			}
		}
	}
	return nil
}

// execute runs one execution of a subtask and records its states.
func (d *deployer) execute(ctx context.Context, t *Task, ex *graph.Execution, run func() error) error {
	// CPU profiles of the worker attribute samples to tasks (flame
	// graphs per vertex); goroutines the task starts inherit the labels.
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("task", t.Name(), "vertex", t.vertexID)))
	ex.Transition(graph.StateRunning, nil)
	err := run()
	switch {
	case err == nil:
		ex.Transition(graph.StateFinished, nil)
	case ctx.Err() != nil && !isOperatorError(err):
		ex.Transition(graph.StateCanceled, nil)
	default:
		ex.Transition(graph.StateFailed, err)
		d.logger.Error("task failed", "task", t.Name(), "attempt", ex.AttemptID, "err", err)
	}
	return err
}

// coordinator triggers checkpoints at the sources, collects the tasks'
// acknowledgements, stores completed checkpoints and notifies the tasks.
// It also takes savepoints on request. One checkpoint is in flight at a
// time.
type coordinator struct {
	d         *deployer
	a         *attempt
	interval  time.Duration
	timeout   time.Duration
	minPause  time.Duration
	tolerable int // -1: any number
}

// savepointRequest asks the coordinator for a savepoint: a checkpoint
// written, self-contained, to dir. With drain, the sources first emit the
// maximum watermark so that every event-time window and timer fires into
// the savepoint's output; stop ends the job once the savepoint is taken.
type savepointRequest struct {
	dir         string
	drain, stop bool
	reply       chan savepointResult
}

type savepointResult struct {
	path string
	err  error
}

// inflight is the checkpoint the coordinator waits for.
type inflight struct {
	id        int64
	started   time.Time
	acks      map[int]*TaskSnapshot
	declined  error
	savepoint *savepointRequest
}

func (c *coordinator) run(ctx context.Context) error {
	var tick <-chan time.Time
	if c.interval > 0 {
		ticker := time.NewTicker(c.interval)
		defer ticker.Stop()
		tick = ticker.C
	}
	timeoutTicker := time.NewTicker(max(c.timeout/10, 10*time.Millisecond))
	defer timeoutTicker.Stop()
	allDone := make(chan struct{})
	go func() {
		// Owned by the coordinator: ends when every task ended, which the
		// errgroup guarantees once ctx is done or all tasks returned. The
		// tasks of other workers end with their workers, which follow
		// this attempt's end through their links.
		for _, h := range c.a.handles {
			if _, remote := h.(*remoteHandle); remote {
				select {
				case <-h.done():
				case <-ctx.Done():
				}
				continue
			}
			<-h.done()
		}
		close(allDone)
	}()
	var (
		cur     *inflight
		queued  []*savepointRequest
		next    = c.nextID()
		lastEnd time.Time
		failed  int // consecutive failed checkpoints
	)
	// checkpointFailed aborts the checkpoint at the tasks and fails the
	// attempt once more checkpoints failed in a row than tolerated.
	var release func()
	var allFinished func() bool
	checkpointFailed := func(f *inflight, id int64, cause error) error {
		lastEnd = time.Now()
		if f != nil {
			acks := slices.Collect(maps.Values(f.acks))
			c.d.storage.recordFailure(id, f.started, len(c.a.handles), acks, f.savepoint != nil, cause)
		} else {
			c.d.storage.recordFailure(id, lastEnd, len(c.a.handles), nil, false, cause)
		}
		c.d.job.mu.Lock()
		c.d.job.failedCheckpoints++
		c.d.job.mu.Unlock()
		c.abort(id)
		// Never written, or not completely: its directory goes (a
		// checkpoint the authority may have recorded never gets here).
		c.d.storage.unclaim(id)
		if allFinished() {
			if c.d.mc.Authority != nil {
				// Output committed without a confirmed checkpoint could be
				// replayed by a restart: the final checkpoint is retried
				// instead, within the tolerated failures.
				c.d.logger.Warn("final checkpoint failed; retrying it", "checkpoint", id, "err", cause)
			} else {
				c.d.logger.Warn("final checkpoint failed; the job commits at its end instead", "checkpoint", id, "err", cause)
				release()
			}
		}
		if cur != nil && cur.savepoint != nil {
			return nil // a failed savepoint is the requester's business
		}
		failed++
		if c.tolerable >= 0 && failed > c.tolerable {
			return fmt.Errorf("checkpoint %d failed: %w; %d consecutive failures exceed execution.checkpointing.tolerable-failed-checkpoints (%d)", id, cause, failed, c.tolerable)
		}
		return nil
	}
	fail := func(r *savepointRequest, err error) {
		if r != nil {
			r.reply <- savepointResult{err: err}
		}
	}
	// waiting marks the tasks that finished and wait for their final
	// checkpoint; they are triggered directly, since no barrier reaches
	// them any more. stopped: a final checkpoint failed, the waiting tasks
	// were released and the job's final commit takes over.
	waiting := make([]bool, len(c.a.handles))
	stopped := false
	allFinished = func() bool {
		for i, h := range c.a.handles {
			if !waiting[i] && !isClosed(h.done()) {
				return false
			}
		}
		return true
	}
	trigger := func(i int, id int64, drain bool) {
		c.a.handles[i].trigger(id, drain)
	}
	start := func(sp *savepointRequest) error {
		if stopped {
			fail(sp, errors.New("savepoint: the job's tasks finished and its final checkpoint failed"))
			return nil
		}
		if sp != nil {
			if err := c.d.storage.checkSavepointTarget(ctx, sp.dir); err != nil {
				fail(sp, err)
				return nil
			}
		}
		id, err := c.d.storage.claim(ctx, next, c.owner())
		if err != nil {
			lastEnd = time.Now()
			if sp != nil {
				fail(sp, fmt.Errorf("savepoint: %w", err))
				return nil
			}
			c.d.logger.Warn("checkpoint could not start", "checkpoint", next, "err", err)
			return checkpointFailed(nil, next, err)
		}
		next = id
		cur = &inflight{id: next, started: time.Now(), acks: make(map[int]*TaskSnapshot), savepoint: sp}
		if sp != nil {
			c.d.storage.markSavepoint(cur.id)
			if err := c.a.prepareSavepoint(ctx, cur.id, c.timeout); err != nil {
				// Barriers not sent yet: the checkpoint never starts.
				fail(sp, fmt.Errorf("savepoint: %w", err))
				cur = nil
				next++
				return nil
			}
		}
		next++
		drain := sp != nil && sp.drain
		for i, h := range c.a.handles {
			switch {
			case isClosed(h.done()):
				// It exited after its final checkpoint: nothing of it is
				// left to snapshot. One that failed instead acknowledges
				// nothing, and the checkpoint does not complete.
				if h.exitedFinished() {
					cur.acks[i] = h.finishedSnapshot()
				}
			case h.isSource() || waiting[i]:
				trigger(i, cur.id, drain)
			}
		}
		return nil
	}
	// release lets the waiting tasks exit when their final checkpoint
	// cannot be taken.
	release = func() {
		stopped = true
		for i, h := range c.a.handles {
			if waiting[i] {
				h.releaseFinal()
			}
		}
	}
	for {
		if cur == nil && len(queued) > 0 {
			sp := queued[0]
			queued = queued[1:]
			if err := start(sp); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			<-allDone
			if cur != nil {
				fail(cur.savepoint, fmt.Errorf("savepoint: the job ended before it completed: %w", context.Cause(ctx)))
				c.d.storage.unclaim(cur.id)
			}
			for _, q := range queued {
				fail(q, errors.New("savepoint: the job ended"))
			}
			return nil
		case <-allDone:
			if cur != nil {
				fail(cur.savepoint, errors.New("savepoint: the job finished before it completed"))
				c.d.storage.unclaim(cur.id)
			}
			for _, q := range queued {
				fail(q, errors.New("savepoint: the job finished"))
			}
			return nil
		case sp := <-c.d.savepoints:
			queued = append(queued, sp)
		case i := <-c.a.waiting:
			waiting[i] = true
			if stopped {
				c.a.handles[i].releaseFinal()
				continue
			}
			if cur != nil && cur.acks[i] == nil {
				// Its barriers may never come: its input ended.
				trigger(i, cur.id, false)
			}
			if cur == nil && len(queued) == 0 && allFinished() {
				// The final checkpoint: nothing to wait for.
				if err := start(nil); err != nil {
					return err
				}
			}
		case <-timeoutTicker.C:
			if cur != nil && time.Since(cur.started) > c.timeout {
				var missing []string
				for i, h := range c.a.handles {
					if cur.acks[i] == nil {
						missing = append(missing, h.name())
					}
				}
				c.d.logger.Warn("checkpoint timed out", "checkpoint", cur.id, "not acknowledged by", missing)
				cause := fmt.Errorf("timed out after %v (execution.checkpointing.timeout)", c.timeout)
				fail(cur.savepoint, fmt.Errorf("savepoint: %w", cause))
				err := checkpointFailed(cur, cur.id, cause)
				cur = nil
				if err != nil {
					return err
				}
			}
		case <-tick:
			if cur == nil && len(queued) == 0 && time.Since(lastEnd) >= c.minPause {
				if err := start(nil); err != nil {
					return err
				}
			}
		case ack := <-c.a.acks:
			if ack.exited {
				if cur == nil || cur.acks[ack.task] != nil {
					continue
				}
				ack = checkpointAck{task: ack.task, id: cur.id, snap: c.a.handles[ack.task].finishedSnapshot()}
			}
			if cur == nil || ack.id != cur.id {
				continue
			}
			if ack.err != nil && cur.declined == nil {
				c.d.logger.Warn("checkpoint declined", "checkpoint", ack.id, "err", ack.err)
				cur.declined = ack.err
			}
			cur.acks[ack.task] = ack.snap
			if len(cur.acks) < len(c.a.handles) {
				continue
			}
			done := cur
			if done.declined != nil {
				fail(done.savepoint, fmt.Errorf("savepoint: declined: %w", done.declined))
				err := checkpointFailed(done, done.id, done.declined)
				cur = nil
				if err != nil {
					return err
				}
				continue
			}
			cur = nil
			lastEnd = time.Now()
			cp := &CompletedCheckpoint{ID: done.id, JobID: c.d.storage.jobID, triggered: done.started}
			size := 0
			for i := range c.a.handles {
				cp.Tasks = append(cp.Tasks, done.acks[i])
				for _, data := range done.acks[i].Operators {
					size += len(data)
				}
			}
			if limit := config.JobManagerStorageMaxSize.Get(c.d.cfg); !c.d.storage.isFiles() && done.savepoint == nil && int64(size) > limit {
				err := fmt.Errorf("checkpoint %d holds %d bytes of state, more than the jobmanager storage keeps in memory (state.checkpoint-storage.jobmanager.max-size = %d bytes); set state.checkpoints.dir to write checkpoints to files", done.id, size, limit)
				c.d.logger.Warn("checkpoint too large", "checkpoint", done.id, "err", err)
				if ferr := checkpointFailed(done, done.id, err); ferr != nil {
					return ferr
				}
				continue
			}
			if done.savepoint != nil {
				// A savepoint's state is inline in its own directory: the
				// chk-<n> it claimed holds nothing else.
				c.d.storage.unclaim(done.id)
				path, err := writeSavepoint(done.savepoint.dir, cp, c.d.storage.threshold)
				if err != nil {
					c.d.storage.recordFailure(done.id, done.started, len(c.a.handles), cp.Tasks, true, err)
					fail(done.savepoint, err)
					continue
				}
				if err := c.confirm(ctx, done.id, path, true); err != nil {
					fail(done.savepoint, err)
					return err
				}
				c.d.storage.recordSavepoint(cp, path)
				if done.savepoint.stop {
					// The sinks commit what the savepoint covers before the
					// job ends, so that a job that is not resumed loses
					// nothing.
					c.notifyAndWait(ctx, done.id)
					for _, l := range c.a.links {
						l.send(controlMsg{Kind: "stop"})
					}
					c.d.job.stop()
				} else {
					c.notify(done.id)
				}
				done.savepoint.reply <- savepointResult{path: path}
				continue
			}
			if err := c.d.storage.write(cp); err != nil {
				c.d.logger.Error("storing checkpoint failed", "checkpoint", done.id, "err", err)
				if ferr := checkpointFailed(done, done.id, err); ferr != nil {
					return ferr
				}
				continue
			}
			if err := c.confirm(ctx, done.id, cp.Path, false); err != nil {
				return err
			}
			c.d.storage.register(cp)
			failed = 0
			c.d.job.mu.Lock()
			c.d.job.completed++
			c.d.job.mu.Unlock()
			c.notify(done.id)
			if len(queued) == 0 && !stopped && allFinished() && !allFinal(done) {
				// Tasks that finished while this checkpoint ran still
				// wait for one taken after they finished.
				if err := start(nil); err != nil {
					return err
				}
			}
		}
	}
}

// confirm asks the commit authority, if any, to record a written
// checkpoint. Without its confirmation nothing the checkpoint covers may
// be committed, and since its outcome is not known (the authority may
// have recorded it before the answer was lost) the attempt ends: its
// files stay, and the next attempt restores from whatever the authority
// recorded. No abort goes to the tasks: sinks keep their prepared
// transactions, which a restore from this checkpoint commits.
func (c *coordinator) confirm(ctx context.Context, id int64, path string, savepoint bool) error {
	auth := c.d.mc.Authority
	if auth == nil {
		return nil
	}
	if err := auth.ConfirmCheckpoint(ctx, id, path, savepoint); err != nil {
		c.d.logger.Error("checkpoint not confirmed; stopping without committing it", "checkpoint", id, "err", err)
		return fmt.Errorf("checkpoint %d was not confirmed, so nothing it covers is committed: %w", id, err)
	}
	return nil
}

// abort tells the tasks that a checkpoint will not complete.
func (c *coordinator) abort(id int64) {
	for _, h := range c.a.handles {
		h.notifyAborted(id)
	}
}

func (c *coordinator) notify(id int64) {
	for _, h := range c.a.handles {
		h.notifyComplete(id, nil)
	}
}

// notifyAndWait notifies every task and waits until they all handled it.
// A subtask that has exited (it finished and took its final checkpoint)
// handles nothing more and is not waited for.
func (c *coordinator) notifyAndWait(ctx context.Context, id int64) {
	handled := make([]chan struct{}, len(c.a.handles))
	for i, h := range c.a.handles {
		handled[i] = make(chan struct{}, 1)
		h.notifyComplete(id, handled[i])
	}
	for i, h := range c.a.handles {
		select {
		case <-handled[i]:
		case <-h.done():
		case <-ctx.Done():
			return
		}
	}
}

// owner names this attempt's coordinator in the checkpoint directories it
// claims, for whoever looks at them.
func (c *coordinator) owner() string {
	return fmt.Sprintf("attempt %d, pid %d", c.d.mc.FirstAttempt+1, os.Getpid())
}

func (c *coordinator) nextID() int64 {
	if cp := c.d.storage.latestCheckpoint(); cp != nil {
		return cp.ID + 1
	}
	return 1
}

// finishedSnapshot stands for a task that exited after its final
// checkpoint.
func finishedSnapshot(t *Task) *TaskSnapshot {
	return &TaskSnapshot{Vertex: t.vertexID, Subtask: t.subtask, Parallelism: t.parallelism, UIDs: t.uids, Finished: true}
}

// isDone reports whether a task's goroutine returned.
func isDone(t *Task) bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// allFinal reports whether every task's snapshot in a checkpoint was taken
// after it finished: then the checkpoint was every task's final one.
func allFinal(cp *inflight) bool {
	for _, s := range cp.acks {
		if s == nil || !s.Finished {
			return false
		}
	}
	return true
}
