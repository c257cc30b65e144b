package runtime

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// checkpointStorage keeps completed checkpoints: in memory, and in a
// directory when state.checkpoints.dir is set.
type checkpointStorage struct {
	dir      string
	jobID    string
	retained int
	mu       sync.Mutex
	latest   *CompletedCheckpoint
	written  []string // directories of retained checkpoints, oldest first
}

func newCheckpointStorage(dirOrURI, jobID string) (*checkpointStorage, error) {
	dir := dirOrURI
	if strings.Contains(dirOrURI, "://") {
		u, err := url.Parse(dirOrURI)
		if err != nil {
			return nil, fmt.Errorf("state.checkpoints.dir %q: %w", dirOrURI, err)
		}
		if u.Scheme != "file" {
			return nil, fmt.Errorf("state.checkpoints.dir %q: scheme %q is not supported yet; use a path or a file:// URI", dirOrURI, u.Scheme)
		}
		dir = u.Path
	}
	return &checkpointStorage{dir: dir, jobID: jobID}, nil
}

// store records a completed checkpoint, durably first when a directory is
// configured: a checkpoint only counts once its metadata is written.
func (s *checkpointStorage) store(c *CompletedCheckpoint) error {
	if s.dir != "" {
		dir := filepath.Join(s.dir, s.jobID, fmt.Sprintf("chk-%d", c.ID))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("checkpoint %d: %w", c.ID, err)
		}
		data, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("checkpoint %d: encode metadata: %w", c.ID, err)
		}
		tmp := filepath.Join(dir, "_metadata.inprogress")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return fmt.Errorf("checkpoint %d: %w", c.ID, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "_metadata")); err != nil {
			return fmt.Errorf("checkpoint %d: %w", c.ID, err)
		}
		c.Path = dir
	}
	s.mu.Lock()
	s.latest = c
	var drop []string
	if c.Path != "" {
		s.written = append(s.written, c.Path)
		if n := len(s.written) - max(s.retained, 1); n > 0 {
			drop, s.written = s.written[:n], s.written[n:]
		}
	}
	s.mu.Unlock()
	// Older checkpoints beyond state.checkpoints.num-retained go.
	for _, p := range drop {
		_ = os.RemoveAll(p)
	}
	return nil
}

// discard removes the job's checkpoint directory: the job finished or was
// cancelled without asking to retain its checkpoints.
func (s *checkpointStorage) discard() {
	if s.dir != "" {
		_ = os.RemoveAll(filepath.Join(s.dir, s.jobID))
	}
}

func (s *checkpointStorage) latestCheckpoint() *CompletedCheckpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// LoadCheckpoint reads a checkpoint written to a directory: the chk-<n>
// directory or its _metadata file.
func LoadCheckpoint(path string) (*CompletedCheckpoint, error) {
	meta := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		meta = filepath.Join(path, "_metadata")
	}
	data, err := os.ReadFile(meta)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	var c CompletedCheckpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("load checkpoint %s: %w", meta, err)
	}
	c.Path = filepath.Dir(meta)
	return &c, nil
}
