package stream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/state"
)

// streamReduceOp is the heap Reduce of a streaming job: the running
// result per key in copy-on-write slots, so that a checkpoint's
// synchronous part only freezes them and the snapshot is encoded on
// another goroutine while records keep flowing. Without it, a checkpoint
// of millions of keys stopped the stream for as long as encoding all of
// them took, every interval.
type streamReduceOp[K comparable, T any] struct {
	oc     *runtime.OperatorContext
	key    func(T) K
	hash   runtime.KeyHasher[K]
	update func(acc, v *T)
	out    runtime.Output[T]
	index  map[K]int32
	slots  cowSlots[K, T]
	// segments tracks the files of incremental snapshots.
	segments segmentTable[K, T]
	// scratch holds the incoming record, so that update can take its
	// address without the record escaping to the heap.
	scratch T
}

func (r *streamReduceOp[K, T]) Emit(v T, ts int64) {
	r.oc.Enter()
	k := r.key(v)
	if i, ok := r.index[k]; ok {
		r.scratch = v
		acc := r.slots.set(i)
		r.update(acc, &r.scratch)
		r.out.Emit(*acc, ts)
		return
	}
	r.index[k] = r.slots.add(k, v)
	r.out.Emit(v, ts)
}

func (r *streamReduceOp[K, T]) EmitWatermark(wm int64)        { r.out.EmitWatermark(wm) }
func (r *streamReduceOp[K, T]) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(r.out, idle) }
func (r *streamReduceOp[K, T]) Open() error                   { return nil }
func (r *streamReduceOp[K, T]) Finish() error                 { return nil }
func (r *streamReduceOp[K, T]) Close() error                  { return nil }

// SnapshotState encodes every key's result.
func (r *streamReduceOp[K, T]) SnapshotState(id int64) ([]byte, error) {
	return snapshotNow(r.SnapshotStateAsync, id)
}

// snapshotNow takes both parts of an asynchronous snapshot at once, for
// SnapshotState.
func snapshotNow(async func(int64) (func(context.Context) ([]byte, error), error), id int64) ([]byte, error) {
	finish, err := async(id)
	if err != nil {
		return nil, err
	}
	return finish(context.Background())
}

// SnapshotStateAsync freezes the slots; the returned function encodes
// the frozen view. With blobs (file checkpoints, not savepoints) the view
// goes out in segments of reduceSegmentLen slots, each a file in the
// checkpoint storage, and a segment nothing wrote to since an earlier
// snapshot put it is referenced again instead of written: checkpoints are
// incremental, and no snapshot is ever whole in memory. Otherwise the
// snapshot is the backends' full format.
func (r *streamReduceOp[K, T]) SnapshotStateAsync(id int64) (func(context.Context) ([]byte, error), error) {
	view := r.slots.freeze()
	blobs := r.oc.SnapshotBlobs(id)
	return func(ctx context.Context) ([]byte, error) {
		defer view.release()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if blobs != nil {
			return r.segments.snapshot(ctx, view, blobs)
		}
		return encodeSlots(ctx, view, 0, view.n)
	}, nil
}

// encodeSlots encodes slots [lo, hi) of a view as a full snapshot.
func encodeSlots[K comparable, T any](ctx context.Context, view *cowView[K, T], lo, hi int) ([]byte, error) {
	var seen int
	data, err := state.ValueSnapshot(reduceStateName, hi-lo, func(yield func(K, T) bool) {
		view.each(lo, hi, func(k *K, v *T) bool {
			seen++
			if seen&0xffff == 0 && ctx.Err() != nil {
				return false
			}
			return yield(*k, *v)
		})
	})
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	return data, err
}

// RestoreState loads results written by either backend, keeping this
// subtask's key groups after a rescale.
func (r *streamReduceOp[K, T]) RestoreState(data []byte) error {
	return eachReducePiece(r.oc, data, func(piece []byte) error {
		return state.RestoreValues(piece, reduceStateName, r.oc.RestoreFiles(), runtime.KeyFilter(r.oc, r.hash), func(k K, v T) {
			if i, ok := r.index[k]; ok {
				*r.slots.set(i) = v
				return
			}
			r.index[k] = r.slots.add(k, v)
		})
	})
}

// reduceSegmentLen is the number of slots of a segment: 64 K, some
// megabytes encoded. Tests make it smaller.
var reduceSegmentLen = 64 * cowChunkLen

// reduceSegmentsMagic starts a snapshot made of segment files; a JSON
// list of their handles follows.
const reduceSegmentsMagic = "weir-reduce-segments-1\n"

// segmentTable remembers, per segment of the slots, the file an earlier
// snapshot put and the epoch of the view it encoded. Snapshots of
// checkpoints that overlap complete on their own goroutines, hence the
// lock.
type segmentTable[K comparable, T any] struct {
	mu       sync.Mutex
	instance string
	seq      int
	segs     []segmentFile
}

type segmentFile struct {
	handle string
	epoch  uint64
	n      int
}

// snapshot puts the segments of the view written to since they were put
// last, and returns the list of every segment's file.
func (t *segmentTable[K, T]) snapshot(ctx context.Context, view *cowView[K, T], blobs runtime.SnapshotBlobs) ([]byte, error) {
	t.mu.Lock()
	if t.instance == "" {
		var r [8]byte
		_, _ = rand.Read(r[:])
		t.instance = hex.EncodeToString(r[:])
	}
	t.mu.Unlock()
	var handles []string
	for lo := 0; lo < view.n; lo += reduceSegmentLen {
		hi := min(lo+reduceSegmentLen, view.n)
		si := lo / reduceSegmentLen
		t.mu.Lock()
		var old segmentFile
		if si < len(t.segs) {
			old = t.segs[si]
		}
		t.mu.Unlock()
		// A segment no slot of which changed since the view that put it,
		// if that view is not newer than this one: the snapshot of a
		// later checkpoint may finish first, and its file may hold
		// writes made after this view was frozen.
		if old.handle != "" && old.n == hi-lo && old.epoch <= view.epoch && view.lastWrite(lo, hi) <= old.epoch && blobs.Reuse(old.handle) {
			handles = append(handles, old.handle)
			continue
		}
		data, err := encodeSlots(ctx, view, lo, hi)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.seq++
		name := fmt.Sprintf("reduce-%s-%d-%d", t.instance, si, t.seq)
		t.mu.Unlock()
		h, err := blobs.Put(ctx, name, data)
		if err != nil {
			return nil, fmt.Errorf("reduce state segment %d: %w", si, err)
		}
		handles = append(handles, h)
		t.mu.Lock()
		for len(t.segs) <= si {
			t.segs = append(t.segs, segmentFile{})
		}
		if view.epoch >= t.segs[si].epoch {
			t.segs[si] = segmentFile{handle: h, epoch: view.epoch, n: hi - lo}
		}
		t.mu.Unlock()
	}
	list, err := json.Marshal(handles)
	if err != nil {
		return nil, err
	}
	return append([]byte(reduceSegmentsMagic), list...), nil
}

// eachReducePiece calls fn with each full snapshot a Reduce's snapshot
// holds: itself, or the segment files it lists.
func eachReducePiece(oc *runtime.OperatorContext, data []byte, fn func(piece []byte) error) error {
	list, ok := bytes.CutPrefix(data, []byte(reduceSegmentsMagic))
	if !ok {
		return fn(data)
	}
	var handles []string
	if err := json.Unmarshal(list, &handles); err != nil {
		return fmt.Errorf("reduce state: corrupt list of segments: %w", err)
	}
	blobs := oc.RestoreBlobs()
	if blobs == nil {
		return errors.New("reduce state: the snapshot's segment files are in a checkpoint storage that was not read")
	}
	for _, h := range handles {
		piece, err := blobs.Get(context.Background(), h)
		if err != nil {
			return fmt.Errorf("reduce state: %w", err)
		}
		if err := fn(piece); err != nil {
			return fmt.Errorf("reduce state segment %s: %w", h, err)
		}
	}
	return nil
}
