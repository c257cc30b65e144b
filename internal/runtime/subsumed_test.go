package runtime

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadSubsumedCheckpoint: a cluster restarts from the latest
// checkpoint a worker reported, which the worker may since have replaced
// with a newer one and deleted (state.checkpoints.num-retained: 1). The
// newer one is loaded instead; an older one never is.
func TestLoadSubsumedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := newCheckpointStorage(dir, "job")
	if err != nil {
		t.Fatal(err)
	}
	s.retained = 1
	var paths []string
	for id := int64(1); id <= 3; id++ {
		cp := &CompletedCheckpoint{ID: id, JobID: "job", Tasks: []*TaskSnapshot{{Vertex: "v", Parallelism: 1, Operators: map[string][]byte{"op": []byte{byte(id)}}}}}
		if err := s.store(cp); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, cp.Path)
	}
	cp, err := LoadCheckpoint(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if cp.ID != 3 || cp.Tasks[0].Operators["op"][0] != 3 {
		t.Fatalf("loaded checkpoint %d from %s, want 3", cp.ID, cp.Path)
	}
	if _, err := LoadCheckpoint(filepath.Join(dir, "job", "chk-7")); err == nil || !strings.Contains(err.Error(), "has no _metadata") {
		t.Fatalf("a checkpoint newer than every stored one: %v", err)
	}
	if _, err := LoadCheckpoint(filepath.Join(dir, "job")); err == nil {
		t.Fatal("the job directory itself loaded as a checkpoint")
	}
}
