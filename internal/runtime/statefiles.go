package runtime

import "github.com/weirproject/weir/state"

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
