package runtime

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/network"
)

// Distribution spreads one attempt of a job over several processes, the
// workers: every worker builds the same graphs, runs the subtasks of its
// own slots, and exchanges records with the other workers through the
// data plane. Worker 0, the leader, runs the checkpoint coordinator (the
// job master) and treats the other workers' subtasks through a control
// link: it triggers their sources, collects their acknowledgements and
// notifies them, exactly as it does for its own subtasks. A worker that
// loses its link, or a peer, fails; the cluster then restarts the whole
// attempt from the latest completed checkpoint.
type Distribution struct {
	// Self is this worker's index; 0 is the leader.
	Self int
	// Placement gives the worker of each of the job's slots, numbered as
	// AllocateSlots numbers them.
	Placement []int
	// Net is this worker's data plane; Peers are the data addresses of all
	// workers, by index.
	Net   *network.Manager
	Peers []string
	// Key names the attempt's channels and its checkpoint directory; it
	// is the same in every worker of the attempt and differs between
	// attempts.
	Key string
}

func (d *Distribution) check(slots int) error {
	if len(d.Placement) != slots || slots == 0 {
		return fmt.Errorf("runtime: the placement names %d slots but the job needs %d; the workers run different programs or parallelisms", len(d.Placement), slots)
	}
	if d.Self < 0 || d.Self >= len(d.Peers) {
		return fmt.Errorf("runtime: worker %d of %d", d.Self, len(d.Peers))
	}
	for i, w := range d.Placement {
		if w < 0 || w >= len(d.Peers) {
			return fmt.Errorf("runtime: slot %d is placed on worker %d, but there are %d", i, w, len(d.Peers))
		}
	}
	if d.Net == nil || d.Key == "" {
		return errors.New("runtime: a distributed job needs a data plane and a key")
	}
	return nil
}

// controlMsg is one message on a control link. Leader to worker: trigger,
// complete, abort, release, prepare (a savepoint follows: take
// self-contained snapshots), stop (the job was stopped with a savepoint). Worker to leader: ack, waiting, done,
// handled (a complete with Wait was handled), prepared.
type controlMsg struct {
	Kind   string
	Task   int
	ID     int64
	Drain  bool
	Wait   bool
	Exited bool
	Err    string
	Snap   *TaskSnapshot
	// Shared, Sizes and Uploaded carry the worker's bookkeeping of the
	// shared state files its snapshots of checkpoint ID uploaded or
	// reused, which the leader's storage counts and deletes.
	Shared   []string
	Sizes    map[string]int64
	Uploaded int64
	// Iter, Aggs and Terminate carry an iteration's superstep reports
	// (worker to leader: "superstep", ID the superstep) and decisions
	// (leader to worker: "decided").
	Iter      string
	Aggs      [][]byte
	Terminate bool
	// Vertex, Subtask, Attempt, Inputs, Path, Channel, Result and Dir
	// carry a staged batch job's runs, partition files and their ends
	// (stageddist.go); ID numbers the run.
	Vertex, Subtask, Attempt int
	Inputs                   [2][]BlockingInput
	Path, Channel, Dir       string
	Result                   int
}

// controlLink is the leader's link to one worker, or a worker's to the
// leader: a channel each way on the data plane, carrying gob-encoded
// messages split into frames.
type controlLink struct {
	peer int
	addr string
	in   network.ChannelID
	out  *network.Sender
	gate *network.Gate
	ctx  context.Context
	// frame is the largest frame the data plane carries.
	frame int

	wmu sync.Mutex
	enc *gob.Encoder
	dec *gob.Decoder

	mu       sync.Mutex
	handled  map[[2]int64]chan<- struct{}
	prepared chan int64
}

func controlChannel(key string, from, to int) network.ChannelID {
	return network.ChannelID{Job: key, Result: "control", Partition: from, Subpartition: to}
}

// newControlLink registers this side's outgoing channel and creates the
// gate for the incoming one; connect completes it.
func newControlLink(ctx context.Context, dist *Distribution, peer int) (*controlLink, error) {
	out, err := dist.Net.Produce(controlChannel(dist.Key, dist.Self, peer))
	if err != nil {
		return nil, err
	}
	gate, err := dist.Net.NewGate(network.DefaultGateConfig(1))
	if err != nil {
		out.Close()
		return nil, err
	}
	l := &controlLink{peer: peer, addr: dist.Peers[peer], in: controlChannel(dist.Key, peer, dist.Self), out: out, gate: gate, ctx: ctx, frame: dist.Net.BufferSize(),
		handled: make(map[[2]int64]chan<- struct{}), prepared: make(chan int64, 1)}
	l.enc = gob.NewEncoder(frameWriter{l})
	l.dec = gob.NewDecoder(&frameReader{gate: gate, ctx: ctx})
	return l, nil
}

func (l *controlLink) connect(ctx context.Context) error {
	if err := l.gate.Connect(ctx, 0, l.addr, l.in); err != nil {
		return fmt.Errorf("runtime: control link to worker %d at %s: %w", l.peer, l.addr, err)
	}
	return nil
}

func (l *controlLink) send(m controlMsg) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.enc.Encode(&m); err != nil {
		return fmt.Errorf("runtime: control link to worker %d: %w", l.peer, err)
	}
	return nil
}

func (l *controlLink) recv() (controlMsg, error) {
	return decodeControl(l.dec)
}

// decodeControl reads the next control message and checks what its
// handlers rely on; the link's bytes come from another process.
func decodeControl(dec *gob.Decoder) (controlMsg, error) {
	var m controlMsg
	if err := dec.Decode(&m); err != nil {
		return controlMsg{}, err
	}
	if err := m.check(); err != nil {
		return controlMsg{}, fmt.Errorf("bad control message %q: %w", m.Kind, err)
	}
	return m, nil
}

// controlKinds are the messages of both directions.
var controlKinds = []string{"trigger", "complete", "abort", "release", "prepare", "stop", "decided", "run", "serve", "finish",
	"ack", "waiting", "done", "handled", "prepared", "superstep", "ran", "finished"}

func (m *controlMsg) check() error {
	switch {
	case !slices.Contains(controlKinds, m.Kind):
		return errors.New("unknown kind")
	case m.Task < 0:
		return fmt.Errorf("subtask %d", m.Task)
	case m.ID < 0:
		return fmt.Errorf("checkpoint ID %d", m.ID)
	case m.Uploaded < 0:
		return fmt.Errorf("%d bytes uploaded", m.Uploaded)
	case m.Vertex < 0 || m.Subtask < 0 || m.Attempt < 0 || m.Result < 0:
		return fmt.Errorf("vertex %d, subtask %d, attempt %d, result %d", m.Vertex, m.Subtask, m.Attempt, m.Result)
	case m.Kind == "ack" && m.Snap == nil && !m.Exited && m.Err == "":
		// The coordinator stores the snapshot of every acknowledgement
		// that neither declines nor reports an exit.
		return errors.New("acknowledgement without a snapshot")
	}
	for _, ins := range m.Inputs {
		for _, in := range ins {
			if in.Worker < 0 || in.Result < 0 {
				return fmt.Errorf("an input of worker %d, result %d", in.Worker, in.Result)
			}
		}
	}
	for h, n := range m.Sizes {
		if n < 0 {
			return fmt.Errorf("shared file %q of %d bytes", h, n)
		}
	}
	if m.Snap != nil {
		if err := m.Snap.check(); err != nil {
			return err
		}
	}
	return nil
}

// closeOut ends the outgoing channel and waits a while for the peer to
// read everything; the incoming one is its reader's to release.
func (l *controlLink) closeOut() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l.wmu.Lock()
	if err := l.out.SendEvent(ctx, network.Event{Kind: network.EventEndOfPartition}); err == nil {
		l.out.Close()
		select {
		case <-l.out.Released():
		case <-ctx.Done():
		}
	} else {
		l.out.Close()
	}
	l.wmu.Unlock()
}

// expectHandled registers where a "handled" answer for (task, id) goes.
func (l *controlLink) expectHandled(task int, id int64, ch chan<- struct{}) {
	l.mu.Lock()
	l.handled[[2]int64{int64(task), id}] = ch
	l.mu.Unlock()
}

func (l *controlLink) gotHandled(task int, id int64) {
	l.mu.Lock()
	ch := l.handled[[2]int64{int64(task), id}]
	delete(l.handled, [2]int64{int64(task), id})
	l.mu.Unlock()
	if ch != nil {
		ch <- struct{}{}
	}
}

// frameWriter sends what gob writes as frames of at most the data plane's
// buffer size.
type frameWriter struct{ l *controlLink }

func (w frameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), w.l.frame)]
		if err := w.l.out.Send(w.l.ctx, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// frameReader reads the frames of a one-channel gate as a byte stream; the
// end of partition is io.EOF.
type frameReader struct {
	gate *network.Gate
	ctx  context.Context
	cur  *network.Buffer
	off  int
}

func (r *frameReader) Read(p []byte) (int, error) {
	for r.cur == nil {
		b, err := r.gate.Next(r.ctx)
		if err != nil {
			return 0, err
		}
		if b.Event.Kind == network.EventEndOfPartition {
			return 0, io.EOF
		}
		if b.IsEvent() {
			continue
		}
		r.cur, r.off = b, 0
	}
	n := copy(p, r.cur.Data[r.off:])
	r.off += n
	if r.off == len(r.cur.Data) {
		r.gate.Recycle(r.cur)
		r.cur = nil
	}
	return n, nil
}

// taskHandle is how the coordinator reaches a subtask: directly in this
// process, or through the control link to the worker that runs it.
type taskHandle interface {
	trigger(id int64, drain bool)
	notifyComplete(id int64, handled chan<- struct{})
	notifyAborted(id int64)
	releaseFinal()
	isSource() bool
	// finishedSnapshot stands for the subtask after it exited following
	// its final checkpoint.
	finishedSnapshot() *TaskSnapshot
	// exitedFinished reports, once done is closed, whether the subtask
	// finished and returned cleanly rather than failed.
	exitedFinished() bool
	// done is closed when the subtask's goroutine returned.
	done() <-chan struct{}
	// name names the subtask in messages.
	name() string
}

type localHandle struct{ t *Task }

func (h localHandle) trigger(id int64, drain bool) {
	t := h.t
	t.send(func() { t.triggerCheckpoint(id, drain) })
}

func (h localHandle) notifyComplete(id int64, handled chan<- struct{}) {
	t := h.t
	t.send(func() {
		t.notifyCheckpointComplete(id)
		if handled != nil {
			handled <- struct{}{}
		}
	})
}

func (h localHandle) notifyAborted(id int64) {
	t := h.t
	t.send(func() { t.notifyCheckpointAborted(id) })
}

func (h localHandle) releaseFinal()                   { h.t.send(h.t.releaseFinal) }
func (h localHandle) isSource() bool                  { return h.t.isSource }
func (h localHandle) finishedSnapshot() *TaskSnapshot { return finishedSnapshot(h.t) }
func (h localHandle) done() <-chan struct{}           { return h.t.done }
func (h localHandle) exitedFinished() bool            { return h.t.exitedFinished }
func (h localHandle) name() string                    { return h.t.Name() }

// remoteHandle is a subtask of another worker. Failed sends are not
// reported here: a broken link fails the attempt through its reader.
type remoteHandle struct {
	link     *controlLink
	index    int
	taskName string
	source   bool
	final    TaskSnapshot
	exited   chan struct{}
	once     sync.Once
}

func (h *remoteHandle) trigger(id int64, drain bool) {
	h.link.send(controlMsg{Kind: "trigger", Task: h.index, ID: id, Drain: drain})
}

func (h *remoteHandle) notifyComplete(id int64, handled chan<- struct{}) {
	if handled != nil {
		h.link.expectHandled(h.index, id, handled)
	}
	h.link.send(controlMsg{Kind: "complete", Task: h.index, ID: id, Wait: handled != nil})
}

func (h *remoteHandle) notifyAborted(id int64) {
	h.link.send(controlMsg{Kind: "abort", Task: h.index, ID: id})
}

func (h *remoteHandle) releaseFinal()  { h.link.send(controlMsg{Kind: "release", Task: h.index}) }
func (h *remoteHandle) isSource() bool { return h.source }
func (h *remoteHandle) finishedSnapshot() *TaskSnapshot {
	s := h.final
	return &s
}
func (h *remoteHandle) done() <-chan struct{} { return h.exited }

// exitedFinished: a remote subtask's handle is done only after a clean
// exit ("done" without an error, or an exited acknowledgement).
func (h *remoteHandle) exitedFinished() bool { return true }
func (h *remoteHandle) name() string         { return h.taskName }
func (h *remoteHandle) markDone()            { h.once.Do(func() { close(h.exited) }) }

// taskExit reports a task's end to a worker's forwarder.
type taskExit struct {
	index int
	err   error
}

// serve connects the link and hands every message to handle until the
// peer closes the link (nil when ended() then holds, an error naming peer
// otherwise), ctx ends, the link breaks or handle fails.
func (l *controlLink) serve(ctx context.Context, peer string, ended func() bool, handle func(controlMsg) error) error {
	defer l.gate.Close()
	if err := l.connect(ctx); err != nil {
		return err
	}
	for {
		m, err := l.recv()
		if errors.Is(err, io.EOF) {
			if !ended() {
				return fmt.Errorf("runtime: lost %s (%s): its link ended before the subtasks did", peer, l.addr)
			}
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("runtime: lost %s (%s): %w", peer, l.addr, err)
		}
		if err := handle(m); err != nil {
			return err
		}
	}
}

// readWorker is the leader's end of the link to one worker: it passes the
// worker's acknowledgements and task ends to the coordinator, until the
// worker closes the link after its last task ended.
func (d *deployer) readWorker(ctx context.Context, a *attempt, l *controlLink) error {
	ended := func() bool {
		for _, h := range a.handles {
			if rh, ok := h.(*remoteHandle); ok && rh.link == l && !isClosed(rh.exited) {
				return false
			}
		}
		return true
	}
	return l.serve(ctx, fmt.Sprintf("worker %d", l.peer), ended, func(m controlMsg) error {
		if m.Kind == "superstep" {
			s := a.iterations[m.Iter]
			if s == nil {
				return fmt.Errorf("runtime: worker %d reported a superstep of iteration %q, which does not exist", l.peer, m.Iter)
			}
			return s.addEncoded(m.ID, m.Aggs)
		}
		if m.Task < 0 || m.Task >= len(a.handles) {
			return fmt.Errorf("runtime: worker %d sent %q for subtask %d, which does not exist", l.peer, m.Kind, m.Task)
		}
		// Every message but "prepared" (about the link, Task 0) is about
		// a subtask, which must be one the worker runs.
		rh, ok := a.handles[m.Task].(*remoteHandle)
		if m.Kind != "prepared" && (!ok || rh.link != l) {
			return fmt.Errorf("runtime: worker %d sent %q for subtask %d, which it does not run", l.peer, m.Kind, m.Task)
		}
		switch m.Kind {
		case "ack":
			d.storage.addShared(m.ID, m.Shared, m.Sizes, m.Uploaded)
			ack := checkpointAck{task: m.Task, id: m.ID, snap: m.Snap, exited: m.Exited}
			if m.Exited {
				// The subtask is gone before its "done" follows: a
				// checkpoint the coordinator starts in between must not
				// trigger it (the trigger would wait in a mailbox nobody
				// reads, and the checkpoint until its timeout).
				rh.markDone()
			}
			if m.Err != "" {
				ack.err = errors.New(m.Err)
			}
			select {
			case a.acks <- ack:
			case <-ctx.Done():
				return ctx.Err()
			}
		case "waiting":
			select {
			case a.waiting <- m.Task:
			case <-ctx.Done():
				return ctx.Err()
			}
		case "done":
			if m.Err != "" {
				return fmt.Errorf("worker %d: %s", l.peer, m.Err)
			}
			rh.markDone()
		case "handled":
			l.gotHandled(m.Task, m.ID)
		case "prepared":
			select {
			case l.prepared <- m.ID:
			default:
			}
		default:
			return fmt.Errorf("runtime: worker %d sent an unknown control message %q", l.peer, m.Kind)
		}
		return nil
	})
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// prepareSavepoint tells every worker that checkpoint id is a savepoint
// before any of its barriers can reach them, and waits for them to confirm.
func (a *attempt) prepareSavepoint(ctx context.Context, id int64, timeout time.Duration) error {
	for _, l := range a.links {
		if err := l.send(controlMsg{Kind: "prepare", ID: id}); err != nil {
			return err
		}
	}
	deadline := time.After(timeout)
	for _, l := range a.links {
		for {
			select {
			case got := <-l.prepared:
				if got != id {
					continue
				}
			case <-deadline:
				return fmt.Errorf("worker %d did not confirm the savepoint within %v", l.peer, timeout)
			case <-ctx.Done():
				return ctx.Err()
			}
			break
		}
	}
	return nil
}

// followLeader is a worker's end of the link to the leader: it applies
// the coordinator's messages to this worker's subtasks.
func (d *deployer) followLeader(ctx context.Context, a *attempt, l *controlLink) error {
	ended := func() bool {
		for _, t := range a.tasks {
			if !isDone(t) {
				return false
			}
		}
		return true
	}
	return l.serve(ctx, "the leader worker", ended, func(m controlMsg) error {
		switch m.Kind {
		case "prepare":
			d.storage.markSavepoint(m.ID)
			return l.send(controlMsg{Kind: "prepared", ID: m.ID})
		case "stop":
			// Stopped with a savepoint, which the sinks here committed.
			d.job.stop()
			return nil
		case "decided":
			s := a.iterations[m.Iter]
			if s == nil {
				return fmt.Errorf("runtime: the leader decided a superstep of iteration %q, which does not exist", m.Iter)
			}
			dec, err := s.decodeDecision(m.ID, m.Terminate, m.Aggs)
			if err != nil {
				return err
			}
			s.decide(dec)
			return nil
		}
		t := a.local[m.Task]
		if t == nil {
			return fmt.Errorf("runtime: the leader sent %q for subtask %d, which does not run here", m.Kind, m.Task)
		}
		switch m.Kind {
		case "trigger":
			id, drain := m.ID, m.Drain
			t.send(func() { t.triggerCheckpoint(id, drain) })
		case "complete":
			id, wait := m.ID, m.Wait
			t.send(func() {
				t.notifyCheckpointComplete(id)
				if wait {
					l.send(controlMsg{Kind: "handled", Task: t.index, ID: id})
				}
			})
		case "abort":
			id := m.ID
			t.send(func() { t.notifyCheckpointAborted(id) })
		case "release":
			t.send(t.releaseFinal)
		default:
			return fmt.Errorf("runtime: the leader sent an unknown control message %q", m.Kind)
		}
		return nil
	})
}

// forwardToLeader sends this worker's acknowledgements, waiting tasks and
// task ends to the leader, and closes the link's outgoing side once every
// subtask here ended.
func (d *deployer) forwardToLeader(ctx context.Context, a *attempt, l *controlLink) error {
	ack := func(ack checkpointAck) error {
		m := controlMsg{Kind: "ack", Task: ack.task, ID: ack.id, Snap: ack.snap, Exited: ack.exited}
		if ack.err != nil {
			m.Err = ack.err.Error()
		}
		if !ack.exited {
			m.Shared, m.Sizes, m.Uploaded = d.storage.takeShared(ack.id)
		}
		return l.send(m)
	}
	remaining := len(a.tasks)
	for remaining > 0 {
		var err error
		select {
		case m := <-a.acks:
			err = ack(m)
		case i := <-a.waiting:
			err = l.send(controlMsg{Kind: "waiting", Task: i})
		case e := <-a.exits:
			remaining--
			m := controlMsg{Kind: "done", Task: e.index}
			if e.err != nil {
				m.Err = e.err.Error()
			}
			err = l.send(m)
		case <-ctx.Done():
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
	// A task's last acknowledgement was queued before its end.
	for {
		select {
		case m := <-a.acks:
			if err := ack(m); err != nil {
				return err
			}
		default:
			l.closeOut()
			return nil
		}
	}
}

// bridge returns the runner that connects the channels of a local input
// gate whose producers run in other workers (remote lists their gate
// channel indexes) and feeds the gate from them. Each channel has a
// network gate and a goroutine of its own: a channel held back by barrier
// alignment must not hold back the barriers of the others.
func (d *deployer) bridge(dist *Distribution, types TypeOps, gate any, chans []*graph.IntermediateResultPartition, remote []int, consumer int,
	workerOf func(*graph.ExecutionVertex) int, channelID func(*graph.IntermediateResult, int, int) network.ChannelID, cfg GateConfig) func(context.Context) error {
	return func(ctx context.Context) error {
		group, gctx := errgroup.WithContext(ctx)
		for _, idx := range remote {
			part := chans[idx]
			w := workerOf(part.Result.Producer.TaskVertices[part.PartitionNumber])
			group.Go(func() error {
				ng, err := dist.Net.NewGate(network.GateConfig{Channels: 1, BuffersPerChannel: max(cfg.BuffersPerChannel, 1),
					FloatingBuffers: max(cfg.FloatingBuffers/len(remote), 1)})
				if err != nil {
					return err
				}
				defer ng.Close()
				if err := ng.Connect(gctx, 0, dist.Peers[w], channelID(part.Result, part.PartitionNumber, consumer)); err != nil {
					return fmt.Errorf("runtime: input from worker %d: %w", w, err)
				}
				return types.BridgeRemote(gctx, ng, gate, func(int) int { return idx })
			})
		}
		return group.Wait()
	}
}
