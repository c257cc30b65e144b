package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/graph"
)

// OperatorError is how a failure in an operator reaches the user: it names
// the operator and the subtask, for example `map "tokenize" (2/4)`.
type OperatorError struct {
	Operator    string // kind and name, e.g. `map "tokenize"`
	Subtask     int    // 1-based
	Parallelism int
	Attempt     int
	Err         error
	// Stack is the goroutine stack of a panic, empty for returned errors.
	Stack string
}

func (e *OperatorError) Error() string {
	return fmt.Sprintf("%s (%d/%d): %v", e.Operator, e.Subtask, e.Parallelism, e.Err)
}

func (e *OperatorError) Unwrap() error { return e.Err }

// PanicError is the cause of an OperatorError raised by a panic.
type PanicError struct{ Value any }

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Unwrap exposes a panicked error value.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

// OperatorInfo names an operator of a chain.
type OperatorInfo struct {
	Node graph.NodeID
	Kind string
	Name string
	// UID matches the operator's state in checkpoints.
	UID string
	// MaxParallelism is the operator's number of key groups.
	MaxParallelism int
}

func (o *OperatorInfo) String() string { return fmt.Sprintf("%s %q", o.Kind, o.Name) }

// abortPanic unwinds a task from deep inside an operator chain; the task
// loop turns it back into an error.
type abortPanic struct{ err error }

// userFailure carries an error returned by a user function up to the task
// loop, which attributes it to the operator that was running.
type userFailure struct{ err error }

// Task runs one subtask: one operator chain, in one goroutine.
type Task struct {
	vertexName  string
	vertexID    string
	index       int // position in the attempt's task list
	exactlyOnce bool
	// unaligned: barriers overtake the queued buffers and carry their
	// position (execution.checkpointing.unaligned.enabled); alignTimeout
	// is how long a task aligns before it takes the checkpoint unaligned,
	// 0 meaning not at all.
	unaligned     bool
	alignTimeout  time.Duration
	isSource      bool
	subtask       int
	parallelism   int
	attempt       int
	ctx           context.Context
	cfg           *config.Configuration
	batch         bool
	bufferRecords int
	bufferTimeout time.Duration
	serialize     bool
	splits        []connector.Split

	mailbox chan func()
	// done is closed when the task's goroutine returned.
	done    chan struct{}
	acks    chan<- checkpointAck
	restore *restoredState
	// storage is the job's checkpoint storage, where incremental
	// snapshots upload their files.
	storage *checkpointStorage
	// uids are the UIDs of the task's operators, recorded in snapshots
	// so that a restore knows which operators finished.
	uids []string
	// waitFinal keeps a finished task for a final checkpoint (the job
	// checkpoints); waiting tells the coordinator that it finished.
	waitFinal bool
	waiting   chan<- int
	// finished is set once the task's input ended and its operators
	// finished; finalCheckpoint is the first checkpoint it took after
	// that, committed the latest checkpoint it was told completed.
	finished bool
	released bool
	// exitedFinished is set before done is closed: the task finished and
	// returned without error.
	exitedFinished  bool
	finalCheckpoint int64
	committed       int64
	lastCheckpoint  int64
	clock           Clock
	pts             *ProcessingTimeService
	// current is the operator running user code right now; a panic or a
	// user error is attributed to it.
	current *OperatorInfo
	head    *OperatorInfo

	writers      []Writer
	lifecycles   []Lifecycle // registration order: tail of the chain first
	snapshotters []namedSnapshotter
	// drainSource emits the maximum watermark from a source task.
	drainSource func()
	listeners   []CheckpointListener
	aborters    []CheckpointAbortListener
	// cleanups run when the task ends, whatever happened.
	cleanups []func()
	finals   []FinalCommitter

	// failed is set before the operators close after a failure, so that
	// sinks discard instead of publish.
	failed bool
	// flushDue is raised by a source task's flush timer.
	flushDue   atomic.Bool
	recordsIn  atomic.Int64
	recordsOut atomic.Int64
	bytesOut   atomic.Int64
	// idle and backPressured clock the task's waits (taskmetrics.go);
	// startedNanos and endedNanos bound its run (monoNanos, 0 = not yet).
	idle, backPressured      waitClock
	startedNanos, endedNanos atomic.Int64
	inputWatermark           atomic.Int64
	outputWatermark          atomic.Int64
	// inputWatermarkNow reads the combined input watermark inside the
	// task's goroutine; set by the task loop.
	inputWatermarkNow func() int64
	// gates are the task's input gates, set before the task starts; read
	// by Metrics from other goroutines.
	gates []metricGate
	// gauges are metrics that operators and readers registered.
	gaugesMu sync.Mutex
	gauges   []*namedGauge
	// gaugeRefresh: a refresh of the gauges waits in the mailbox.
	gaugeRefresh atomic.Bool
	// barrierAt is when the first barrier of the checkpoint being aligned
	// arrived, and barrierBytes what the inputs had received by then.
	barrierAt    time.Time
	barrierBytes int64
	// snapFiles counts the files of the snapshot being taken.
	snapFiles *snapshotSizes

	// Checkpoints acknowledged from goroutines of the task (asynchronous
	// snapshot parts, records in flight): asyncCtx ends them when the task
	// ends, lastAck is closed when the latest acknowledgement left, and
	// running lists them so that an aborted one can be cancelled.
	asyncCtx  context.Context
	asyncStop context.CancelFunc
	asyncWG   sync.WaitGroup
	lastAck   chan struct{}
	running   []runningAck

	// With unaligned checkpoints: where the barriers are, the task's
	// inputs, and the checkpoint whose records in flight are being
	// collected.
	ut         *unalignedTracker
	inputs     []gateInput
	collecting *pendingCheckpoint

	// iter is the task's part in the iteration it belongs to (nil
	// outside); iterations are the job's, by ID; shared holds what the
	// attempt's tasks in this process share (iteration.go).
	iter       *TaskIteration
	iterations map[string]*superstepSync
	shared     *sharedObjects
}

// noteInputWatermark publishes the combined input watermark for metrics.
func (t *Task) noteInputWatermark() {
	if t.inputWatermarkNow != nil {
		t.inputWatermark.Store(t.inputWatermarkNow())
	}
}

// Name returns the subtask's display name, "vertex (i/n)".
func (t *Task) Name() string {
	return fmt.Sprintf("%s (%d/%d)", t.vertexName, t.subtask+1, t.parallelism)
}

// Context is the task's context, cancelled when the job stops.
func (t *Task) Context() context.Context { return t.ctx }

// Subtask returns the 0-based subtask index.
func (t *Task) Subtask() int { return t.subtask }

// Parallelism returns the vertex's parallelism.
func (t *Task) Parallelism() int { return t.parallelism }

// Attempt returns the attempt number, 0 for the first run.
func (t *Task) Attempt() int { return t.attempt }

// Splits returns the source splits assigned to this subtask.
func (t *Task) Splits() []connector.Split { return t.splits }

// ProcessingTime returns the task's processing-time service.
func (t *Task) ProcessingTime() *ProcessingTimeService {
	if t.pts == nil {
		clock := t.clock
		if clock == nil {
			clock = WallClock{}
		}
		t.pts = &ProcessingTimeService{task: t, clock: clock, stops: make(map[int64]func() bool)}
	}
	return t.pts
}

// OnCleanup runs f when the task ends, after success or failure, even if
// the operator was never opened.
func (oc *OperatorContext) OnCleanup(f func()) { oc.Task.cleanups = append(oc.Task.cleanups, f) }

// Rescaled reports whether the operator's state comes from a checkpoint
// taken at another parallelism: RestoreState then gets every old
// subtask's piece.
func (oc *OperatorContext) Rescaled() bool {
	return oc.Task.restore != nil && oc.Task.restore.rescaled[oc.Info.UID]
}

// KeyGroups returns the key groups this subtask owns, for keyed operators
// that keep only their keys when restoring a rescaled checkpoint.
func (oc *OperatorContext) KeyGroups() KeyGroupRange {
	return KeyGroupRangeForSubtask(oc.Info.MaxParallelism, oc.Task.parallelism, oc.Task.subtask)
}

// Failed reports, while the operators close, whether the task failed.
func (t *Task) Failed() bool { return t.failed }

// Mailbox accepts actions to run in the task's goroutine between two
// records: timers and checkpoint triggers go through here.
func (t *Task) Mailbox() chan<- func() { return t.mailbox }

// OperatorContext is what an operator factory gets.
type OperatorContext struct {
	Task *Task
	Info *OperatorInfo
	Node *graph.StreamNode
	// SideOutputs maps a side-output tag to its Output[X].
	SideOutputs map[string]any
	// Batch is true in BATCH runtime mode: aggregations emit only final
	// results.
	Batch  bool
	Config *config.Configuration
}

// Enter marks the operator as the one running user code, for error
// attribution. It is a single store, cheap enough for the record path.
func (oc *OperatorContext) Enter() { oc.Task.current = oc.Info }

// Register adds an operator's lifecycle hooks to the task, and its
// checkpoint hooks if it has any (Snapshotter, CheckpointListener,
// FinalCommitter).
func (oc *OperatorContext) Register(l Lifecycle) {
	t := oc.Task
	t.lifecycles = append(t.lifecycles, l)
	if s, ok := l.(Snapshotter); ok {
		t.snapshotters = append(t.snapshotters, namedSnapshotter{info: oc.Info, s: s})
	}
	if c, ok := l.(CheckpointListener); ok {
		t.listeners = append(t.listeners, c)
	}
	if a, ok := l.(CheckpointAbortListener); ok {
		t.aborters = append(t.aborters, a)
	}
	if f, ok := l.(FinalCommitter); ok {
		t.finals = append(t.finals, f)
	}
}

type namedSnapshotter struct {
	info *OperatorInfo
	s    Snapshotter
}

// ForwardToSideOutputs passes a watermark to every side output, so that
// their consumers' event time advances with the main output's.
func (oc *OperatorContext) ForwardToSideOutputs(wm int64) {
	for _, o := range oc.SideOutputs {
		o.(interface{ EmitWatermark(int64) }).EmitWatermark(wm)
	}
}

// ForwardStatusToSideOutputs passes an idleness change to every side
// output.
func (oc *OperatorContext) ForwardStatusToSideOutputs(idle bool) {
	for _, o := range oc.SideOutputs {
		EmitStatus(o, idle)
	}
}

// Fail stops the task with an error attributed to the running operator.
func (oc *OperatorContext) Fail(err error) { panic(userFailure{err}) }

func (t *Task) abort(err error) { panic(abortPanic{err}) }

// run executes body with the task's lifecycle around it and converts
// panics into errors that name the operator and the subtask.
func (t *Task) run(body func()) (err error) {
	opened := 0
	t.inputWatermark.Store(NoTimestamp)
	t.outputWatermark.Store(NoTimestamp)
	t.startedNanos.Store(monoNanos())
	defer func() {
		t.idle.stop()
		t.backPressured.stop()
		t.endedNanos.Store(monoNanos())
		r := recover()
		if r != nil {
			err = t.failure(r)
		}
		t.failed = err != nil
		t.stopAsync()
		if t.pts != nil {
			t.pts.stopAll()
		}
		if err == nil {
			// The gauges keep the task's final values (the state cache's
			// counts of a finished job), read before cleanups close
			// what they measure.
			t.refreshGauges()
		}
		for _, f := range t.cleanups {
			f()
		}
		// Close what was opened, head of the chain first; a close error
		// matters only if nothing failed before.
		for i := opened - 1; i >= 0; i-- {
			if cerr := t.closeOne(t.lifecycles[i]); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	if t.restore != nil {
		for _, ns := range t.snapshotters {
			for _, data := range t.restore.pieces[ns.info.UID] {
				t.current = ns.info
				if err := ns.s.RestoreState(data); err != nil {
					return t.wrap(fmt.Errorf("restore from checkpoint: %w", err), "")
				}
			}
		}
	}
	// Open the tail of the chain first, so that no operator can emit into
	// one that is not open yet.
	for _, l := range t.lifecycles {
		if err := l.Open(); err != nil {
			return t.wrap(err, "")
		}
		opened++
	}
	if t.restore != nil && t.restore.finished {
		t.endRestoredFinished()
		return nil
	}
	body()
	return nil
}

func (t *Task) closeOne(l Lifecycle) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = t.failure(r)
		}
	}()
	if cerr := l.Close(); cerr != nil {
		return t.wrap(cerr, "")
	}
	return nil
}

func (t *Task) failure(r any) error {
	switch v := r.(type) {
	case abortPanic:
		if errors.Is(v.err, context.Canceled) || errors.Is(v.err, context.DeadlineExceeded) {
			return v.err
		}
		return t.wrap(v.err, "")
	case userFailure:
		return t.wrap(v.err, "")
	}
	return t.wrap(&PanicError{Value: r}, string(debug.Stack()))
}

func (t *Task) wrap(err error, stack string) error {
	var oe *OperatorError
	if errors.As(err, &oe) {
		return err
	}
	op := t.current
	if op == nil {
		op = t.head
	}
	return &OperatorError{Operator: op.String(), Subtask: t.subtask + 1, Parallelism: t.parallelism, Attempt: t.attempt, Err: err, Stack: stack}
}

// finish ends the task's input: operators finish head first, then the
// task's writers flush and send end-of-partition downstream.
func (t *Task) finish() {
	for i := len(t.lifecycles) - 1; i >= 0; i-- {
		if err := t.lifecycles[i].Finish(); err != nil {
			panic(userFailure{err})
		}
	}
	for _, w := range t.writers {
		w.EndOfPartition()
	}
	t.awaitFinalCheckpoint()
}

func (t *Task) flush() {
	for _, w := range t.writers {
		w.Flush()
	}
}

// flushTicker returns the channel of the buffer-timeout ticker, or nil
// when timed flushing is off.
func (t *Task) flushTicker() (<-chan time.Time, func()) {
	if t.bufferTimeout <= 0 {
		return nil, func() {}
	}
	tk := time.NewTicker(t.bufferTimeout)
	return tk.C, tk.Stop
}

// valve tracks the watermark and status of every input channel. The
// task's watermark is the minimum over the channels that are active (not
// idle, not ended); it never goes back. When every channel is idle the
// task is idle.
type valve struct {
	channels []int64
	idle     []bool
	current  int64
	isIdle   bool
}

func newValve(n int) *valve {
	v := &valve{channels: make([]int64, n), idle: make([]bool, n), current: NoTimestamp}
	for i := range v.channels {
		v.channels[i] = NoTimestamp
	}
	return v
}

// update sets a channel's watermark; it reports the new task watermark if
// it advanced.
func (v *valve) update(channel int, wm int64) (int64, bool) {
	if wm > v.channels[channel] {
		v.channels[channel] = wm
	}
	return v.advance()
}

func (v *valve) advance() (int64, bool) {
	min, any := MaxWatermark, false
	for i, w := range v.channels {
		if v.idle[i] {
			continue
		}
		any = true
		if w < min {
			min = w
		}
	}
	if any && min > v.current {
		v.current = min
		return min, true
	}
	return 0, false
}

// end marks a finished channel: it no longer holds the watermark back.
func (v *valve) end(channel int) (int64, bool) { return v.update(channel, MaxWatermark) }

// setIdle changes a channel's status. It reports a change of the task's
// status, and a watermark that advanced because an idle channel stopped
// holding it back.
func (v *valve) setIdle(channel int, idle bool) (statusChanged bool, wm int64, advanced bool) {
	v.idle[channel] = idle
	all := true
	for _, i := range v.idle {
		all = all && i
	}
	statusChanged = all != v.isIdle
	v.isIdle = all
	wm, advanced = v.advance()
	return
}

// handleEvent applies an in-band event to the valve and passes what
// changed to the head; it reports whether the channel ended.
func handleEvent(v *valve, b Event, channel int, head interface{ EmitWatermark(int64) }) (ended bool) {
	switch b.Kind {
	case EventWatermark:
		if wm, ok := v.update(channel, b.Watermark); ok {
			head.EmitWatermark(wm)
		}
	case EventIdle, EventActive:
		changed, wm, ok := v.setIdle(channel, b.Kind == EventIdle)
		if ok {
			head.EmitWatermark(wm)
		}
		if changed {
			EmitStatus(head, v.isIdle)
		}
	case EventEndOfPartition:
		if wm, ok := v.end(channel); ok {
			head.EmitWatermark(wm)
		}
		return true
	}
	return false
}

// inputQueue feeds a task loop from one input gate: buffers put aside
// while the channel is blocked for barrier alignment wait in stash, and
// after the checkpoint they are processed (work) before anything newer
// from the gate, which keeps every channel in order.
type inputQueue[T any] struct {
	gate  *InputGate[T]
	stash [][]queued[T]
	work  []queued[T]
}

// queued is a buffer taken from the gate; with unaligned checkpoints seq
// is its position in its channel, which barriers refer to.
type queued[T any] struct {
	b   *Buffer[T]
	seq int64
}

func newInputQueue[T any](g *InputGate[T]) *inputQueue[T] {
	return &inputQueue[T]{gate: g, stash: make([][]queued[T], g.NumChannels())}
}

// release moves the stashed buffers in front of the pending work.
func (q *inputQueue[T]) release() {
	var front []queued[T]
	for c, bs := range q.stash {
		front = append(front, bs...)
		q.stash[c] = nil
	}
	if len(front) > 0 {
		q.work = append(front, q.work...)
	}
}

func (q *inputQueue[T]) next() (queued[T], bool) {
	if len(q.work) == 0 {
		return queued[T]{}, false
	}
	b := q.work[0]
	q.work[0] = queued[T]{}
	q.work = q.work[1:]
	return b, true
}

// input is the part of a task loop that processes one gate's buffers:
// records, watermarks, barriers and end of partition.
type input[T any] struct {
	t       *Task
	q       *inputQueue[T]
	index   int
	valve   *valve
	tracker *barrierTracker
	// steps aligns the ends of supersteps in a task inside an iteration;
	// nil elsewhere.
	steps *barrierTracker
	emit  func(v T, ts int64)
	head  interface{ EmitWatermark(int64) }
	open  int
	// release is called after a checkpoint completed the alignment, for
	// every input of the task.
	release func()

	// kept holds copies of the records in flight of the unaligned
	// checkpoint being collected, encoded as they were taken from the
	// gate: the buffers keep flowing into the operators meanwhile.
	kept    []keptBuffer
	keptErr error
}

type keptBuffer struct {
	channel int
	seq     int64
	frame   []byte
}

// take receives a buffer from the gate. With unaligned checkpoints it
// numbers the buffer in its channel and, while the records in flight of a
// checkpoint are collected, keeps a copy.
func (in *input[T]) take(b *Buffer[T]) queued[T] {
	u := in.t.ut
	if u == nil {
		return queued[T]{b: b}
	}
	seq := u.take(in.index, b.Channel)
	if u.capturing(in.index, b.Channel) {
		in.keep(b, seq)
	}
	return queued[T]{b: b, seq: seq}
}

func (in *input[T]) keep(b *Buffer[T], seq int64) {
	if b.Event.Kind != eventNone || in.keptErr != nil {
		return // events are not channel state: watermarks come again after a restore
	}
	c := in.q.gate.codec
	if c == nil {
		in.keptErr = fmt.Errorf("unaligned checkpoint: no codec for the records of input %d", in.index+1)
		return
	}
	frame, err := encodeBuffer(c, nil, b)
	if err != nil {
		in.keptErr = fmt.Errorf("unaligned checkpoint: %w", err)
		return
	}
	in.kept = append(in.kept, keptBuffer{channel: b.Channel, seq: seq, frame: frame})
}

func (in *input[T]) handle(it queued[T]) {
	b := it.b
	u := in.t.ut
	if u != nil {
		if u.blocked(in.index, b.Channel, it.seq) {
			in.q.stash[b.Channel] = append(in.q.stash[b.Channel], it)
			return
		}
	} else if in.tracker.blocked(in.index, b.Channel) || (in.steps != nil && in.steps.blocked(in.index, b.Channel)) {
		in.q.stash[b.Channel] = append(in.q.stash[b.Channel], it)
		return
	}
	channel := b.Channel
	switch b.Event.Kind {
	case eventNone:
		for i, r := range b.Records {
			in.emit(r, b.Timestamps[i])
		}
		in.t.recordsIn.Add(int64(len(b.Records)))
		in.q.gate.Recycle(b)
	case EventBarrier:
		cp := b.Event.Checkpoint
		in.q.gate.Recycle(b)
		if u != nil {
			break // barriers travel as priority barriers then
		}
		if tr := in.tracker; cp > tr.current && cp > tr.done {
			in.t.noteBarrier()
		}
		id := in.tracker.barrier(in.index, channel, cp)
		if id != 0 {
			in.t.checkpoint(id)
			in.release()
		}
	case EventSuperstep:
		k := b.Event.Superstep
		in.q.gate.Recycle(b)
		// Tasks outside the iteration (what consumes its result) ignore
		// the ends of supersteps.
		if in.steps != nil {
			if done := in.steps.barrier(in.index, channel, k); done != 0 {
				in.t.endSuperstep(done)
				in.release()
			}
		}
	case EventEndOfPartition:
		handleEvent(in.valve, b.Event, channel, in.head)
		in.t.noteInputWatermark()
		in.open--
		in.q.gate.Recycle(b)
		if in.steps != nil {
			// An input from outside the loop must have ended before a
			// superstep can: the loop reads all of it first.
			if done := in.steps.end(in.index, channel); done != 0 {
				in.t.endSuperstep(done)
				in.release()
			}
		}
		if u != nil {
			in.t.onUnaligned(u.processed(in.index, channel, it.seq)|u.end(in.index, channel), in.index, channel, 0)
			return
		}
		id := in.tracker.end(in.index, channel)
		if id != 0 {
			in.t.checkpoint(id)
			in.release()
		}
		return
	default:
		handleEvent(in.valve, b.Event, channel, in.head)
		in.q.gate.Recycle(b)
		in.t.noteInputWatermark()
	}
	if u != nil {
		if act := u.processed(in.index, channel, it.seq); act != 0 {
			in.t.onUnaligned(act, in.index, channel, 0)
		}
	}
}

// gateInput is what a task with unaligned checkpoints does with each of
// its inputs, whatever their record type.
type gateInput interface {
	// pollPriority handles a priority barrier if one is waiting.
	pollPriority() bool
	// drain takes every buffer queued in the gate, so that all that
	// precedes a barrier that arrived was taken (and kept if in flight).
	drain()
	// keepQueued keeps the records in flight among the buffers taken but
	// not processed when the snapshot is taken.
	keepQueued()
	// trim drops what was kept of a channel beyond its barrier.
	trim(channel int, at int64)
	// takeInFlight returns the input's channel state and forgets it.
	takeInFlight() ([]byte, error)
	dropInFlight()
	releaseStash()
}

func (in *input[T]) pollPriority() bool {
	select {
	case pb := <-in.q.gate.priority:
		in.t.priorityBarrier(in.index, pb)
		return true
	case <-in.t.ctx.Done():
		// The drained buffers may take long to process: a cancelled task
		// must not work through them first.
		in.t.abort(in.t.ctx.Err())
		return false
	default:
		return false
	}
}

func (in *input[T]) drain() {
	for {
		select {
		case b := <-in.q.gate.queue:
			in.q.work = append(in.q.work, in.take(b))
		default:
			return
		}
	}
}

func (in *input[T]) keepQueued() {
	u := in.t.ut
	// Stashed buffers come before the queued ones of their channel.
	for _, bs := range in.q.stash {
		for _, it := range bs {
			if u.inFlight(in.index, it.b.Channel, it.seq) {
				in.keep(it.b, it.seq)
			}
		}
	}
	for _, it := range in.q.work {
		if u.inFlight(in.index, it.b.Channel, it.seq) {
			in.keep(it.b, it.seq)
		}
	}
}

func (in *input[T]) trim(channel int, at int64) {
	in.kept = slices.DeleteFunc(in.kept, func(k keptBuffer) bool { return k.channel == channel && k.seq > at })
}

// takeInFlight encodes the kept buffers as a sequence of length-prefixed
// frames, in the order they were taken, which is each channel's order.
func (in *input[T]) takeInFlight() ([]byte, error) {
	defer in.dropInFlight()
	if in.keptErr != nil {
		return nil, in.keptErr
	}
	var out []byte
	for _, k := range in.kept {
		out = binary.AppendUvarint(out, uint64(len(k.frame)))
		out = append(out, k.frame...)
	}
	return out, nil
}

func (in *input[T]) dropInFlight() { in.kept, in.keptErr = nil, nil }

func (in *input[T]) releaseStash() { in.q.release() }

// replay processes the records in flight restored from an unaligned
// checkpoint, before anything new arrives at the gate.
func (in *input[T]) replay(data []byte) {
	if len(data) == 0 {
		return
	}
	if in.q.gate.codec == nil {
		panic(abortPanic{fmt.Errorf("restore records in flight: no codec for the records of input %d", in.index+1)})
	}
	b := new(Buffer[T])
	for len(data) > 0 {
		n, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < n {
			panic(abortPanic{fmt.Errorf("restore records in flight: %w", codec.ErrCorrupt)})
		}
		if err := decodeBuffer(in.q.gate.codec, data[k:k+int(n)], b); err != nil {
			panic(abortPanic{fmt.Errorf("restore records in flight: %w", err)})
		}
		data = data[k+int(n):]
		for i, r := range b.Records {
			in.emit(r, b.Timestamps[i])
		}
		in.t.recordsIn.Add(int64(len(b.Records)))
		b.reset()
	}
}

// priorityBarrier handles a barrier that overtook the queued buffers.
func (t *Task) priorityBarrier(input int, pb priorityBarrier) {
	for _, in := range t.inputs {
		in.drain()
	}
	if pb.id > t.ut.current && pb.id > t.ut.done {
		t.noteBarrier()
	}
	t.onUnaligned(t.ut.barrier(input, pb.channel, pb.id, pb.sent, pb.align, time.Now()), input, pb.channel, pb.sent)
}

// pollUnaligned serves the priority barriers ahead of the queued buffers
// and switches an alignment that timed out.
func (t *Task) pollUnaligned() {
	for _, in := range t.inputs {
		for in.pollPriority() {
		}
	}
	if act := t.ut.expired(); act != 0 {
		t.onUnaligned(act, 0, 0, 0)
	}
}

// onUnaligned carries out what the unaligned tracker decided; channel and
// at name the barrier that arrived, for actTrim.
func (t *Task) onUnaligned(act unalignedAction, input, channel int, at int64) {
	if act == 0 {
		return
	}
	id := t.ut.id
	if act&actAbandon != 0 {
		if p := t.collecting; p != nil {
			p.inFlight <- inFlightState{err: fmt.Errorf("checkpoint %d was given up before its records in flight arrived", p.id)}
			t.collecting = nil
		}
		for _, in := range t.inputs {
			in.dropInFlight()
			in.releaseStash()
		}
	}
	if act&actTrim != 0 {
		t.inputs[input].trim(channel, at)
	}
	if snap := actSnapshotAligned | actSnapshotUnaligned; act&snap != 0 {
		if id <= t.lastCheckpoint {
			// Taken already; a second snapshot would prepare the sinks'
			// transactions of this checkpoint again, over the first.
			act &^= snap
			for _, in := range t.inputs {
				in.releaseStash()
			}
		} else {
			// A task that finishes before this checkpoint's
			// acknowledgement left is triggered again directly; it must
			// not take it twice.
			t.lastCheckpoint = id
		}
	}
	if act&actSnapshotAligned != 0 {
		t.acknowledge(t.snapshot(id, t.ut.forced))
		for _, in := range t.inputs {
			in.releaseStash()
		}
	}
	if act&actSnapshotUnaligned != 0 {
		p := t.snapshot(id, false)
		p.stats().Unaligned = true
		p.inFlight = make(chan inFlightState, 1)
		t.collecting = p
		for _, in := range t.inputs {
			in.keepQueued()
			in.releaseStash()
		}
		t.acknowledge(p)
	}
	if act&actInFlightComplete != 0 && t.collecting != nil {
		st := inFlightState{pieces: make([][]byte, len(t.inputs))}
		for i, in := range t.inputs {
			piece, err := in.takeInFlight()
			if err != nil && st.err == nil {
				st.err = err
			}
			st.pieces[i] = piece
		}
		if st.err != nil {
			st.pieces = nil
		}
		t.collecting.inFlight <- st
		t.collecting = nil
	}
}

// inFlightPieces returns the restored records in flight into the head of
// the task, one piece per input.
func (t *Task) inFlightPieces() [][]byte {
	r := t.restore
	if r == nil {
		return nil
	}
	if r.inFlightErr != nil {
		panic(abortPanic{r.inFlightErr})
	}
	for uid := range r.inFlight {
		if uid != t.head.UID {
			panic(abortPanic{fmt.Errorf("restore: the checkpoint holds records in flight into operator %q, which no longer heads a task; restore from a savepoint (always aligned) instead", uid)})
		}
	}
	return r.inFlight[t.head.UID]
}

// startUnaligned sets up unaligned checkpoints for a task's inputs and
// replays the restored records in flight.
func (t *Task) startUnaligned(ins []gateInput, replay ...func([]byte)) {
	pieces := t.inFlightPieces()
	for i, f := range replay {
		if i < len(pieces) {
			f(pieces[i])
		}
	}
	if t.unaligned {
		t.inputs = ins
	}
}

// RunOneInput is the mailbox loop of a task whose head has one input.
func RunOneInput[T any](t *Task, head Output[T], gate *InputGate[T]) error {
	return t.run(func() {
		tick, stop := t.flushTicker()
		defer stop()
		q := newInputQueue(gate)
		in := &input[T]{t: t, q: q, valve: newValve(gate.NumChannels()), tracker: newBarrierTracker(t.exactlyOnce, gate.NumChannels()),
			emit: head.Emit, head: head, open: gate.NumChannels(), release: q.release}
		if t.iter != nil && !t.iter.head {
			in.steps = newBarrierTracker(true, gate.NumChannels())
		}
		var prio chan priorityBarrier
		if t.unaligned {
			t.ut = newUnalignedTracker(t.alignTimeout, gate.NumChannels())
			defer t.ut.stop()
			prio = gate.priority
		}
		t.inputWatermarkNow = func() int64 { return in.valve.current }
		t.startUnaligned([]gateInput{in}, in.replay)
		for in.open > 0 {
			var alignTimeout <-chan time.Time
			if t.ut != nil {
				t.pollUnaligned()
				alignTimeout = t.ut.timerC()
			}
			if it, ok := q.next(); ok {
				in.handle(it)
				continue
			}
			t.idle.start()
			select {
			case b := <-gate.queue:
				t.idle.stop()
				in.handle(in.take(b))
			case pb := <-prio:
				t.idle.stop()
				t.priorityBarrier(0, pb)
			case <-alignTimeout:
				t.idle.stop()
				t.onUnaligned(t.ut.expired(), 0, 0, 0)
			case f := <-t.mailbox:
				t.idle.stop()
				f()
			case <-tick:
				t.idle.stop()
				t.flush()
			case <-t.ctx.Done():
				t.abort(t.ctx.Err())
			}
		}
		t.current = t.head
		t.finish()
	})
}

// twoInputWatermarks combines the watermarks and statuses of the two
// inputs of a two-input task: the minimum over the inputs that are not
// idle.
type twoInputWatermarks struct {
	head     interface{ EmitWatermark(int64) }
	wm       [2]int64
	idle     [2]bool
	combined int64
	isIdle   bool
}

func (c *twoInputWatermarks) set(input int, wm int64) {
	c.wm[input] = wm
	c.advance()
}

func (c *twoInputWatermarks) setIdle(input int, idle bool) {
	c.idle[input] = idle
	c.advance()
	if all := c.idle[0] && c.idle[1]; all != c.isIdle {
		c.isIdle = all
		EmitStatus(c.head, all)
	}
}

func (c *twoInputWatermarks) advance() {
	m, any := MaxWatermark, false
	for i := range c.wm {
		if !c.idle[i] {
			any = true
			m = min(m, c.wm[i])
		}
	}
	if any && m > c.combined {
		c.combined = m
		c.head.EmitWatermark(m)
	}
}

// inputSide adapts one input's valve output to the combined watermark.
type inputSide struct {
	c     *twoInputWatermarks
	input int
}

func (s inputSide) EmitWatermark(wm int64)        { s.c.set(s.input, wm) }
func (s inputSide) EmitWatermarkStatus(idle bool) { s.c.setIdle(s.input, idle) }

// RunTwoInput is the mailbox loop of a task whose head has two inputs.
func RunTwoInput[A, B any](t *Task, head TwoInput[A, B], g1 *InputGate[A], g2 *InputGate[B]) error {
	return t.run(func() {
		tick, stop := t.flushTicker()
		defer stop()
		combined := &twoInputWatermarks{head: head, wm: [2]int64{NoTimestamp, NoTimestamp}, combined: NoTimestamp}
		tracker := newBarrierTracker(t.exactlyOnce, g1.NumChannels(), g2.NumChannels())
		q1, q2 := newInputQueue(g1), newInputQueue(g2)
		release := func() { q1.release(); q2.release() }
		in1 := &input[A]{t: t, q: q1, index: 0, valve: newValve(g1.NumChannels()), tracker: tracker, emit: head.Emit1,
			head: inputSide{combined, 0}, open: g1.NumChannels(), release: release}
		in2 := &input[B]{t: t, q: q2, index: 1, valve: newValve(g2.NumChannels()), tracker: tracker, emit: head.Emit2,
			head: inputSide{combined, 1}, open: g2.NumChannels(), release: release}
		if t.iter != nil && !t.iter.head {
			steps := newBarrierTracker(true, g1.NumChannels(), g2.NumChannels())
			in1.steps, in2.steps = steps, steps
		}
		if in1.open == 0 {
			combined.wm[0] = MaxWatermark
		}
		if in2.open == 0 {
			combined.wm[1] = MaxWatermark
		}
		var prio1, prio2 chan priorityBarrier
		if t.unaligned {
			t.ut = newUnalignedTracker(t.alignTimeout, g1.NumChannels(), g2.NumChannels())
			defer t.ut.stop()
			prio1, prio2 = g1.priority, g2.priority
		}
		t.inputWatermarkNow = func() int64 { return combined.combined }
		t.startUnaligned([]gateInput{in1, in2}, in1.replay, in2.replay)
		for in1.open > 0 || in2.open > 0 {
			var alignTimeout <-chan time.Time
			if t.ut != nil {
				t.pollUnaligned()
				alignTimeout = t.ut.timerC()
			}
			if it, ok := q1.next(); ok {
				in1.handle(it)
				continue
			}
			if it, ok := q2.next(); ok {
				in2.handle(it)
				continue
			}
			c1, c2 := g1.queue, g2.queue
			if in1.open == 0 {
				c1 = nil
			}
			if in2.open == 0 {
				c2 = nil
			}
			t.idle.start()
			select {
			case b := <-c1:
				t.idle.stop()
				in1.handle(in1.take(b))
			case b := <-c2:
				t.idle.stop()
				in2.handle(in2.take(b))
			case pb := <-prio1:
				t.idle.stop()
				t.priorityBarrier(0, pb)
			case pb := <-prio2:
				t.idle.stop()
				t.priorityBarrier(1, pb)
			case <-alignTimeout:
				t.idle.stop()
				t.onUnaligned(t.ut.expired(), 0, 0, 0)
			case f := <-t.mailbox:
				t.idle.stop()
				f()
			case <-tick:
				t.idle.stop()
				t.flush()
			case <-t.ctx.Done():
				t.abort(t.ctx.Err())
			}
		}
		t.current = t.head
		t.finish()
	})
}

// SourceHead is what a source node's factory returns: the source and the
// chain it feeds.
type SourceHead[T any] struct {
	Source connector.Source[T]
	Out    Output[T]
	Info   *OperatorInfo
}

// sourceOutput feeds polled records into the chain. A reader may take
// long to produce records (a slow generator, a trickling broker), so the
// buffer timeout cannot wait for the next poll: a timer goroutine raises
// flushDue and the output flushes at the next record, in the task's own
// goroutine.
type sourceOutput[T any] struct {
	t   *Task
	out Output[T]
	n   int64
}

func (s *sourceOutput[T]) Collect(v T) {
	s.n++
	s.out.Emit(v, NoTimestamp)
	s.maybeFlush()
}

func (s *sourceOutput[T]) CollectWithTimestamp(v T, ts int64) {
	s.n++
	s.out.Emit(v, ts)
	s.maybeFlush()
}

// EmitWatermark passes a watermark from a source-level watermark strategy
// into the chain.
func (s *sourceOutput[T]) EmitWatermark(wm int64) { s.out.EmitWatermark(wm) }

// EmitWatermarkStatus passes a source's idleness into the chain.
func (s *sourceOutput[T]) EmitWatermarkStatus(idle bool) { EmitStatus(s.out, idle) }

// ProcessingTimeMillis is the task's processing time, for periodic
// watermarks and idleness at the source.
func (s *sourceOutput[T]) ProcessingTimeMillis() int64 { return s.t.ProcessingTime().Now() }

func (s *sourceOutput[T]) maybeFlush() {
	if s.t.flushDue.Load() {
		s.t.flushDue.Store(false)
		s.t.flush()
	}
}

// idlePause is how long a source task waits after a poll found nothing.
const idlePause = 5 * time.Millisecond

// startFlushTimer raises flushDue every buffer timeout until stop is
// called; stop waits for the timer goroutine to end.
func (t *Task) startFlushTimer() (stop func()) {
	if t.bufferTimeout <= 0 {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tk := time.NewTicker(t.bufferTimeout)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				t.flushDue.Store(true)
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// RunSource is the loop of a task whose head is a source: it polls the
// reader and serves the mailbox between two polls.
func RunSource[T any](t *Task, h *SourceHead[T]) error {
	var reader connector.SplitReader[T]
	t.lifecycles = append(t.lifecycles, lifecycleFuncs{close: func() error {
		if reader != nil {
			return reader.Close()
		}
		return nil
	}})
	t.snapshotters = append(t.snapshotters, namedSnapshotter{info: h.Info, s: &sourceSnapshotter[T]{t: t, uid: h.Info.UID, src: h.Source, reader: &reader}})
	t.listeners = append(t.listeners, readerListener[T]{reader: &reader})
	return t.run(func() {
		t.current = h.Info
		r, err := h.Source.NewReader(t.ctx, connector.SplitContext{Subtask: t.subtask, Parallelism: t.parallelism,
			Gauge: func(name string, value func() int64) { t.registerGauge(h.Info.Name, name, value) }})
		if err != nil {
			panic(userFailure{err})
		}
		reader = r
		if err := reader.AddSplits(t.splits); err != nil {
			panic(userFailure{err})
		}
		stop := t.startFlushTimer()
		defer stop()
		out := &sourceOutput[T]{t: t, out: h.Out}
		t.drainSource = func() { h.Out.EmitWatermark(MaxWatermark) }
		for {
			select {
			case f := <-t.mailbox:
				f()
			case <-t.ctx.Done():
				t.abort(t.ctx.Err())
			default:
			}
			out.maybeFlush()
			t.current = h.Info
			before := out.n
			status, err := reader.Poll(t.ctx, out)
			t.recordsIn.Add(out.n - before)
			if err != nil {
				panic(userFailure{err})
			}
			switch status {
			case connector.EndOfInput:
				t.current = t.head
				// A bounded input ends with the maximum watermark so that
				// every event-time window and timer downstream fires.
				h.Out.EmitWatermark(MaxWatermark)
				t.finish()
				return
			case connector.NothingAvailable:
				timer := time.NewTimer(idlePause)
				t.idle.start()
				select {
				case f := <-t.mailbox:
					t.idle.stop()
					f()
				case <-timer.C:
					t.idle.stop()
				case <-t.ctx.Done():
					timer.Stop()
					t.abort(t.ctx.Err())
				}
				timer.Stop()
			}
		}
	})
}

// sourceSnapshotter checkpoints a source reader's position: its splits.
type sourceSnapshotter[T any] struct {
	t        *Task
	uid      string
	src      connector.Source[T]
	reader   *connector.SplitReader[T]
	restored bool
	seen     int
}

func (s *sourceSnapshotter[T]) serializer() (connector.SplitSerializer, error) {
	ser, ok := s.src.(connector.SplitSerializer)
	if !ok {
		return nil, fmt.Errorf("source %T cannot be checkpointed: it does not implement connector.SplitSerializer", s.src)
	}
	return ser, nil
}

func (s *sourceSnapshotter[T]) SnapshotState(id int64) ([]byte, error) {
	ser, err := s.serializer()
	if err != nil {
		return nil, err
	}
	if *s.reader == nil {
		// Never started (restored finished): its splits are what it was
		// given, none for a finished source.
		return ser.EncodeSplits(s.t.splits)
	}
	var splits []connector.Split
	if l, ok := (*s.reader).(connector.CheckpointListener); ok {
		splits, err = l.SnapshotCheckpoint(id)
	} else {
		splits, err = (*s.reader).Snapshot()
	}
	if err != nil {
		return nil, err
	}
	return ser.EncodeSplits(splits)
}

// readerListener passes checkpoint completions on to a reader that
// implements connector.CheckpointListener.
type readerListener[T any] struct{ reader *connector.SplitReader[T] }

func (l readerListener[T]) NotifyCheckpointComplete(id int64) error {
	if cl, ok := (*l.reader).(connector.CheckpointListener); ok {
		return cl.NotifyCheckpointComplete(id)
	}
	return nil
}

// RestoreState replaces the subtask's assigned splits by the checkpointed
// positions, before the reader starts.
func (s *sourceSnapshotter[T]) RestoreState(data []byte) error {
	ser, err := s.serializer()
	if err != nil {
		return err
	}
	splits, err := ser.DecodeSplits(data)
	if err != nil {
		return err
	}
	if !s.restored {
		s.restored, s.t.splits, s.seen = true, nil, 0
	}
	if !s.t.restore.rescaled[s.uid] {
		s.t.splits = splits
		return nil
	}
	// Rescaled: every subtask sees all old subtasks' splits in the same
	// order and takes every p-th, so that each split is read once.
	for _, sp := range splits {
		if s.seen%s.t.parallelism == s.t.subtask {
			s.t.splits = append(s.t.splits, sp)
		}
		s.seen++
	}
	return nil
}

// lifecycleFuncs adapts functions to Lifecycle.
type lifecycleFuncs struct {
	open, finish, close func() error
}

func (l lifecycleFuncs) Open() error {
	if l.open == nil {
		return nil
	}
	return l.open()
}

func (l lifecycleFuncs) Finish() error {
	if l.finish == nil {
		return nil
	}
	return l.finish()
}

func (l lifecycleFuncs) Close() error {
	if l.close == nil {
		return nil
	}
	return l.close()
}
