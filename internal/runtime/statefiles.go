package runtime

import (
	"context"

	"github.com/weirproject/weir/state"
)

// SnapshotFiles returns where the snapshot of checkpoint id may upload
// shared files (incremental snapshots), or nil when the snapshot must be
// self-contained: with the jobmanager storage, and for savepoints.
func (oc *OperatorContext) SnapshotFiles(id int64) state.SnapshotFiles {
	return oc.Task.storage.filesFor(id, oc.Task.snapFiles)
}

// RestoreFiles returns where the shared files of the state being restored
// are, for incremental snapshots; nil when nothing is restored.
func (oc *OperatorContext) RestoreFiles() state.RestoreFiles {
	if oc.Task.restore == nil {
		return nil
	}
	return oc.Task.restore.files
}

// SnapshotBlobs is where an operator that keeps its own state structures
// puts the pieces of an incremental snapshot: each piece a file in the
// checkpoint storage's shared area, kept while a retained checkpoint
// references it.
type SnapshotBlobs interface {
	// Put stores data under a name unique to this piece and returns its
	// handle.
	Put(ctx context.Context, name string, data []byte) (handle string, err error)
	// Reuse records that this snapshot references a piece an earlier
	// one put; false means it must be put again (it is not this job's,
	// or snapshots are not incremental).
	Reuse(handle string) bool
}

// RestoreBlobs reads the pieces a restored snapshot references.
type RestoreBlobs interface {
	Get(ctx context.Context, handle string) ([]byte, error)
}

// SnapshotBlobs returns where the snapshot of checkpoint id may put its
// pieces, or nil when it must be self-contained (in memory, and for
// savepoints).
func (oc *OperatorContext) SnapshotBlobs(id int64) SnapshotBlobs {
	f := oc.Task.storage.filesFor(id, oc.Task.snapFiles)
	if f == nil {
		return nil
	}
	return f.(*sharedFiles)
}

// RestoreBlobs returns where the pieces of the snapshot being restored
// are; nil when nothing is restored.
func (oc *OperatorContext) RestoreBlobs() RestoreBlobs {
	if oc.Task.restore == nil {
		return nil
	}
	return oc.Task.restore.files
}
