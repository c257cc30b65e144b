package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/weirproject/weir/internal/network"
)

// A staged batch job spread over a cluster's workers. The leader worker
// runs the scheduler of staged.go over every slot of the job, wherever
// the cluster placed it, and talks to the other workers over the control
// links of distributed.go:
//
//   - "run" asks a worker to run one execution of a subtask; it answers
//     "ran" with the directory of the partition files it wrote, or why it
//     failed.
//   - "serve" asks the worker that holds a partition file to send it on a
//     data plane channel of its own, which the consumer's worker reads:
//     partition files never move between workers otherwise, and a consumer
//     that runs again reads them again.
//   - "finish" comes once every subtask finished: the worker commits what
//     its sinks prepared and confirms with "finished".
//
// A subtask that fails runs again wherever a slot is free. A worker that
// is lost (its link breaks) takes its partition files with it, so the
// whole attempt fails and the cluster restarts the job.

// remoteRuns are the executions the leader started in other workers,
// waiting for their "ran".
type remoteRuns struct {
	mu       sync.Mutex
	next     int64
	waiting  map[int64]chan controlMsg
	finished chan controlMsg
}

func (r *remoteRuns) start() (int64, chan controlMsg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	ch := make(chan controlMsg, 1)
	r.waiting[r.next] = ch
	return r.next, ch
}

func (r *remoteRuns) take(id int64) chan controlMsg {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.waiting[id]
	delete(r.waiting, id)
	return ch
}

// runDistributed runs this worker's part of a staged job on a cluster.
func (s *stagedRun) runDistributed(ctx context.Context) error {
	dist := s.dist
	if s.self != 0 {
		l, err := newControlLink(ctx, dist, 0)
		if err != nil {
			return err
		}
		return s.followStaged(ctx, l)
	}
	s.freeSlots()
	s.remote = remoteRuns{waiting: make(map[int64]chan controlMsg), finished: make(chan controlMsg, len(dist.Peers))}
	for w := 1; w < len(dist.Peers); w++ {
		l, err := newControlLink(ctx, dist, w)
		if err != nil {
			return err
		}
		s.links = append(s.links, l)
	}
	group, gctx := errgroup.WithContext(ctx)
	for _, l := range s.links {
		group.Go(func() error { return s.readStagedWorker(gctx, l) })
	}
	group.Go(func() error { return s.run(gctx) })
	err := group.Wait()
	if err != nil {
		// The other workers learn why, rather than just that the link broke.
		for _, l := range s.links {
			l.out.Fail(err)
		}
	}
	return err
}

// readStagedWorker is the leader's end of the link to one worker: it
// passes the ends of the executions it runs to their waiters, until the
// worker closes the link after it finished.
func (s *stagedRun) readStagedWorker(ctx context.Context, l *controlLink) error {
	finished := false
	return l.serve(ctx, fmt.Sprintf("worker %d", l.peer), func() bool { return finished }, func(m controlMsg) error {
		switch m.Kind {
		case "ran":
			ch := s.remote.take(m.ID)
			if ch == nil {
				return fmt.Errorf("runtime: worker %d reported run %d, which the leader did not start there", l.peer, m.ID)
			}
			ch <- m
		case "finished":
			finished = true
			m.Task = l.peer
			s.remote.finished <- m
		default:
			return fmt.Errorf("runtime: worker %d sent %q to a staged job", l.peer, m.Kind)
		}
		return nil
	})
}

// runRemote runs an execution of a subtask in another worker and waits
// for its end.
func (s *stagedRun) runRemote(ctx context.Context, worker int, key subtaskKey, attempt int, inputs [2][]BlockingInput) subtaskResult {
	r := subtaskResult{key: key, name: fmt.Sprintf("%s in worker %d", s.d.eg.Vertices[key.vertex].TaskVertices[key.subtask].TaskName(), worker)}
	id, done := s.remote.start()
	err := s.links[worker-1].send(controlMsg{Kind: "run", ID: id, Vertex: key.vertex, Subtask: key.subtask, Attempt: attempt, Inputs: inputs})
	if err != nil {
		s.remote.take(id)
		r.err = err
		return r
	}
	select {
	case m := <-done:
		r.loc = partitionLoc{worker, m.Dir}
		if m.Err != "" {
			r.err = fmt.Errorf("worker %d: %s", worker, m.Err)
		}
	case <-ctx.Done():
		r.err = ctx.Err()
	}
	return r
}

// serve has worker send the partition file of in on in.Channel.
func (s *stagedRun) serve(worker int, in BlockingInput) error {
	if worker == s.self {
		return s.serveLocal(in)
	}
	return s.links[worker-1].send(controlMsg{Kind: "serve", Path: in.Path, Channel: in.Channel, Result: in.Result})
}

func (s *stagedRun) blockingChannel(in BlockingInput) network.ChannelID {
	return network.ChannelID{Job: s.dist.Key, Result: in.Channel}
}

// serveLocal sends a partition file of this worker to the consumer that
// connects to in.Channel. A failed send is logged: the consumer fails for
// it and reports that.
func (s *stagedRun) serveLocal(in BlockingInput) error {
	sender, err := s.dist.Net.Produce(s.blockingChannel(in))
	if err != nil {
		return fmt.Errorf("runtime: send blocking partition %s: %w", in.Path, err)
	}
	types := s.d.eg.Results[in.Result].Edge.StreamEdge.Type.(TypeOps)
	s.servers.Go(func() error {
		if err := types.ServeBlocking(s.serveCtx, in.Path, sender, s.dist.Net.BufferSize()); err != nil {
			sender.Fail(err)
			if s.serveCtx.Err() == nil {
				s.d.logger.Warn("sending a blocking partition failed", "file", in.Path, "err", err)
			}
		}
		return nil
	})
	return nil
}

// receive feeds gate channel idx of an execution from a partition file
// that another worker sends.
func (s *stagedRun) receive(ctx context.Context, types TypeOps, gate any, idx int, in BlockingInput) error {
	ng, err := s.dist.Net.NewGate(network.GateConfig{Channels: 1, BuffersPerChannel: max(s.set.gate.BuffersPerChannel, 1),
		FloatingBuffers: max(s.set.gate.FloatingBuffers, 1)})
	if err != nil {
		return err
	}
	defer ng.Close()
	if err := ng.Connect(ctx, 0, s.dist.Peers[in.Worker], s.blockingChannel(in)); err != nil {
		return fmt.Errorf("runtime: blocking partition %s of worker %d: %w", in.Path, in.Worker, err)
	}
	return types.BridgeRemote(ctx, ng, gate, func(int) int { return idx })
}

// finishWorkers asks every other worker to commit what its sinks prepared
// and waits until they did; then it closes the links.
func (s *stagedRun) finishWorkers(ctx context.Context) error {
	for _, l := range s.links {
		if err := l.send(controlMsg{Kind: "finish"}); err != nil {
			return err
		}
	}
	for range s.links {
		select {
		case m := <-s.remote.finished:
			if m.Err != "" {
				return fmt.Errorf("worker %d: %s", m.Task, m.Err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, l := range s.links {
		l.closeOut()
	}
	return nil
}

// followStaged is a worker's end of the link to the leader of a staged
// job: it runs and serves what the leader asks, until it finished.
func (s *stagedRun) followStaged(ctx context.Context, l *controlLink) error {
	ctx, cancel := context.WithCancel(ctx)
	group, gctx := errgroup.WithContext(ctx)
	defer func() {
		cancel()
		group.Wait() //nolint:errcheck // the executions' errors go to the leader
	}()
	var mu sync.Mutex
	var succeeded []subtaskResult
	finished := false
	eg := s.d.eg
	err := l.serve(gctx, "the leader worker", func() bool { return finished }, func(m controlMsg) error {
		switch m.Kind {
		case "run":
			if m.Vertex >= len(eg.Vertices) || m.Subtask >= eg.Vertices[m.Vertex].JobVertex.Parallelism {
				return fmt.Errorf("runtime: the leader asked for subtask %d of vertex %d, which does not exist", m.Subtask, m.Vertex)
			}
			if m.Attempt > maxStagedAttempt {
				return fmt.Errorf("runtime: the leader asked for attempt %d of a subtask, more than %d", m.Attempt, maxStagedAttempt)
			}
			for _, ins := range m.Inputs {
				for _, in := range ins {
					if err := s.checkInput(in); err != nil {
						return err
					}
				}
			}
			group.Go(func() error {
				r := s.runSubtask(gctx, subtaskKey{m.Vertex, m.Subtask}, m.Attempt, m.Inputs)
				reply := controlMsg{Kind: "ran", ID: m.ID, Dir: r.loc.dir}
				if r.err != nil {
					reply.Err = r.err.Error()
				} else {
					mu.Lock()
					succeeded = append(succeeded, r)
					mu.Unlock()
				}
				return l.send(reply)
			})
		case "serve":
			in := BlockingInput{Worker: s.self, Path: m.Path, Channel: m.Channel, Result: m.Result}
			if err := s.checkInput(in); err != nil {
				return err
			}
			return s.serveLocal(in)
		case "finish":
			// The leader asks once every execution it started ended.
			reply := controlMsg{Kind: "finished"}
			mu.Lock()
		commit:
			for _, r := range succeeded {
				for _, f := range r.finals {
					if err := f.CommitFinal(); err != nil {
						reply.Err = fmt.Sprintf("%s: final commit: %v", r.name, err)
						break commit
					}
				}
			}
			mu.Unlock()
			finished = true
			if err := l.send(reply); err != nil {
				return err
			}
			l.closeOut()
		default:
			return fmt.Errorf("runtime: the leader sent %q to a staged job", m.Kind)
		}
		return nil
	})
	if err != nil {
		l.out.Fail(err)
	}
	return err
}

// maxStagedAttempt bounds the attempt numbers a worker accepts: a
// subtask's execution graph keeps every earlier attempt.
const maxStagedAttempt = 1 << 16

// checkInput checks a partition file the leader names; the link's bytes
// come from another process.
func (s *stagedRun) checkInput(in BlockingInput) error {
	switch {
	case in.Worker >= len(s.dist.Peers):
		return fmt.Errorf("runtime: the leader named worker %d of %d", in.Worker, len(s.dist.Peers))
	case in.Result >= len(s.d.eg.Results):
		return fmt.Errorf("runtime: the leader named result %d of %d", in.Result, len(s.d.eg.Results))
	case in.Worker != s.self && in.Channel == "":
		return fmt.Errorf("runtime: the leader named a partition file of worker %d without a channel", in.Worker)
	case in.Worker == s.self && !strings.HasPrefix(filepath.Clean(in.Path), s.dir+string(filepath.Separator)):
		return fmt.Errorf("runtime: the leader named %s, which is not a partition file of this worker (%s)", in.Path, s.dir)
	}
	return nil
}
