package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/codec"
)

func TestUnalignedTrackerAlignsOnBarrierPositions(t *testing.T) {
	u := newUnalignedTracker(0, 2)
	// Channel 0 delivered buffers 1 and 2, processed 1; its barrier
	// says 2 buffers precede it: align (a savepoint).
	u.take(0, 0)
	u.take(0, 0)
	u.processed(0, 0, 1)
	if act := u.barrier(0, 0, 1, 2, true, time.Now()); act != 0 {
		t.Fatalf("barrier before its position was processed: %b", act)
	}
	if u.blocked(0, 0, 2) || !u.blocked(0, 0, 3) || u.blocked(0, 1, 5) {
		t.Fatal("only what follows a known barrier is blocked")
	}
	if act := u.processed(0, 0, 2); act != 0 {
		t.Fatalf("aligned with channel 1 missing: %b", act)
	}
	// Channel 1's barrier comes first in its channel: aligned.
	if act := u.barrier(0, 1, 1, 0, true, time.Now()); act != actSnapshotAligned || u.id != 1 {
		t.Fatalf("last barrier: %b for %d", act, u.id)
	}
	if u.blocked(0, 0, 3) {
		t.Fatal("blocked after the checkpoint")
	}
	if act := u.barrier(0, 0, 1, 2, true, time.Now()); act != 0 {
		t.Fatalf("a barrier of a finished checkpoint acted: %b", act)
	}
}

func TestUnalignedTrackerSnapshotsAtTheFirstBarrier(t *testing.T) {
	u := newUnalignedTracker(0, 2, 1) // two inputs
	for range 3 {
		u.take(0, 1)
	}
	act := u.barrier(0, 0, 7, 0, false, time.Now())
	if act != actSnapshotUnaligned || u.id != 7 {
		t.Fatalf("first barrier: %b", act)
	}
	// Queued buffers of channels without barrier are in flight; so is
	// what they deliver until their barrier arrives.
	if !u.inFlight(0, 1, 3) || !u.capturing(0, 1) || !u.capturing(1, 0) || u.capturing(0, 0) {
		t.Fatal("in-flight channels")
	}
	if u.blocked(0, 0, 1) {
		t.Fatal("an unaligned checkpoint blocks a channel")
	}
	if act := u.barrier(0, 1, 7, 2, false, time.Now()); act != actTrim {
		t.Fatalf("second barrier: %b", act)
	}
	if u.inFlight(0, 1, 3) || !u.inFlight(0, 1, 2) {
		t.Fatal("buffer 3 follows the barrier at 2")
	}
	// The last channel ends instead of delivering its barrier.
	if act := u.end(1, 0); act != actInFlightComplete {
		t.Fatalf("end of the last channel: %b", act)
	}
	if u.capturing(0, 1) {
		t.Fatal("still collecting after the checkpoint")
	}
}

func TestUnalignedTrackerAlignmentTimeout(t *testing.T) {
	u := newUnalignedTracker(30*time.Millisecond, 2)
	if act := u.barrier(0, 0, 1, 0, false, time.Now()); act != 0 {
		t.Fatalf("with a timeout, checkpoints start aligned: %b", act)
	}
	if act := u.expired(); act != 0 {
		t.Fatalf("expired at once: %b", act)
	}
	select {
	case <-u.timerC():
	case <-time.After(5 * time.Second):
		t.Fatal("the alignment timer did not fire")
	}
	if act := u.expired(); act != actSnapshotUnaligned {
		t.Fatalf("after the timeout: %b", act)
	}
	if u.blocked(0, 0, 1) || !u.capturing(0, 1) || u.timerC() != nil {
		t.Fatal("the switched checkpoint still aligns")
	}
	if act := u.barrier(0, 1, 1, 4, false, time.Now()); act != actTrim|actInFlightComplete {
		t.Fatalf("last barrier: %b", act)
	}

	// A savepoint aligns however long it takes.
	u.barrier(0, 0, 2, 0, true, time.Now().Add(-time.Hour))
	if u.timerC() != nil || u.expired() != 0 {
		t.Fatal("a savepoint switched to unaligned")
	}
	u.stop()
}

func TestUnalignedTrackerNewerCheckpointAbandons(t *testing.T) {
	u := newUnalignedTracker(0, 2)
	u.barrier(0, 0, 1, 0, false, time.Now())
	if act := u.barrier(0, 0, 2, 5, false, time.Now()); act&actAbandon == 0 || act&actSnapshotUnaligned == 0 || u.id != 2 {
		t.Fatalf("newer checkpoint: %b for %d", act, u.id)
	}
	if act := u.barrier(0, 1, 1, 0, false, time.Now()); act != 0 {
		t.Fatalf("a late barrier of the abandoned checkpoint acted: %b", act)
	}
}

// testTask is a task with just what acknowledging needs.
func testTask(t *testing.T) (*Task, chan checkpointAck, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	acks := make(chan checkpointAck, 8)
	task := &Task{ctx: ctx, acks: acks, parallelism: 1, head: &OperatorInfo{Kind: "map", Name: "m", UID: "m"}}
	return task, acks, cancel
}

func TestAsyncAcknowledgementsKeepCheckpointOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	task, acks, cancel := testTask(t)
	defer cancel()
	release := make(chan struct{})
	op := &OperatorInfo{Kind: "map", Name: "m", UID: "m"}
	slow := &pendingCheckpoint{id: 1, snap: &TaskSnapshot{Operators: map[string][]byte{}, MaxParallelism: map[string]int{}},
		finishes: []asyncPart{{info: op, finish: func(ctx context.Context) ([]byte, error) {
			select {
			case <-release:
				return []byte("one"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}}}
	task.acknowledge(slow)
	// Checkpoint 2 is complete at once but must not overtake 1.
	task.acknowledge(&pendingCheckpoint{id: 2, snap: &TaskSnapshot{Operators: map[string][]byte{}}})
	select {
	case a := <-acks:
		t.Fatalf("checkpoint %d acknowledged while checkpoint 1 was still completing", a.id)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	var got []int64
	for range 2 {
		a := <-acks
		if a.err != nil {
			t.Fatal(a.err)
		}
		got = append(got, a.id)
		if a.id == 1 && string(a.snap.Operators["m"]) != "one" {
			t.Fatalf("checkpoint 1 lacks the asynchronous part's state: %q", a.snap.Operators)
		}
	}
	if !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("acknowledged %v", got)
	}
	// Nothing pending any more: the next one leaves synchronously. The
	// goroutines that sent 1 and 2 mark themselves done just after the
	// send; wait for that rather than race it.
	task.asyncWG.Wait()
	task.acknowledge(&pendingCheckpoint{id: 3, snap: &TaskSnapshot{}})
	select {
	case a := <-acks:
		if a.id != 3 {
			t.Fatalf("got %d", a.id)
		}
	default:
		t.Fatal("a complete checkpoint with nothing pending was not acknowledged at once")
	}
	task.stopAsync()
}

func TestAsyncSnapshotFailureAndDeclineAndStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	task, acks, cancel := testTask(t)
	defer cancel()
	op := &OperatorInfo{Kind: "map", Name: "m", UID: "m"}
	boom := errors.New("upload failed")
	task.acknowledge(&pendingCheckpoint{id: 1, snap: &TaskSnapshot{Operators: map[string][]byte{}},
		finishes: []asyncPart{{info: op, finish: func(context.Context) ([]byte, error) { return nil, boom }}}})
	if a := <-acks; !errors.Is(a.err, boom) {
		t.Fatalf("a failed asynchronous part did not decline: %v", a.err)
	}
	// A checkpoint declined by a synchronous part still calls the
	// finish functions, with a cancelled context, so they release.
	var sawCancelled bool
	task.acknowledge(&pendingCheckpoint{id: 2, snap: &TaskSnapshot{Operators: map[string][]byte{}}, declined: boom,
		finishes: []asyncPart{{info: op, finish: func(ctx context.Context) ([]byte, error) {
			sawCancelled = ctx.Err() != nil
			return []byte("x"), nil
		}}}})
	if a := <-acks; !errors.Is(a.err, boom) || !sawCancelled || a.snap.Operators["m"] != nil {
		t.Fatalf("declined checkpoint: err %v, cancelled %v, state %q", a.err, sawCancelled, a.snap.Operators)
	}
	// The task ends while a part is blocked: it is cancelled and waited for.
	var wg sync.WaitGroup
	wg.Add(1)
	task.acknowledge(&pendingCheckpoint{id: 3, snap: &TaskSnapshot{Operators: map[string][]byte{}},
		finishes: []asyncPart{{info: op, finish: func(ctx context.Context) ([]byte, error) {
			wg.Done()
			<-ctx.Done()
			return nil, ctx.Err()
		}}}})
	wg.Wait()
	task.stopAsync()
	select {
	case a := <-acks:
		t.Fatalf("a cancelled checkpoint was acknowledged: %+v", a)
	default:
	}
}

func TestAbortedCheckpointCancelsItsAsyncPart(t *testing.T) {
	defer goleak.VerifyNone(t)
	task, _, cancel := testTask(t)
	defer cancel()
	op := &OperatorInfo{Kind: "map", Name: "m", UID: "m"}
	cancelled := make(chan struct{})
	task.acknowledge(&pendingCheckpoint{id: 4, snap: &TaskSnapshot{Operators: map[string][]byte{}},
		finishes: []asyncPart{{info: op, finish: func(ctx context.Context) ([]byte, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}}}})
	task.notifyCheckpointAborted(4)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("aborting the checkpoint did not cancel its asynchronous part")
	}
	task.stopAsync()
}

func TestInFlightFramesRoundTrip(t *testing.T) {
	g := newInputGate[string](2, GateConfig{BuffersPerChannel: 1}, &sync.Pool{New: func() any { return new(Buffer[string]) }})
	g.useTypes(NewTypes(codec.String))
	task, _, cancel := testTask(t)
	defer cancel()
	task.ut = newUnalignedTracker(0, 2)
	var replayed []string
	in := &input[string]{t: task, q: newInputQueue(g), emit: func(v string, ts int64) { replayed = append(replayed, v) }}
	task.ut.barrier(0, 0, 1, 0, false, time.Now()) // collecting: channel 1 is in flight
	in.take(&Buffer[string]{Channel: 1, Records: []string{"a", "b"}, Timestamps: []int64{1, 2}})
	in.take(&Buffer[string]{Channel: 1, Event: Event{Kind: EventWatermark, Watermark: 5}})
	in.take(&Buffer[string]{Channel: 1, Records: []string{"c"}, Timestamps: []int64{3}})
	task.ut.barrier(0, 1, 1, 2, false, time.Now())
	in.trim(1, 2) // buffer 3 followed the barrier
	data, err := in.takeInFlight()
	if err != nil {
		t.Fatal(err)
	}
	in.replay(data)
	if !slices.Equal(replayed, []string{"a", "b"}) {
		t.Fatalf("replayed %q", replayed)
	}
}
