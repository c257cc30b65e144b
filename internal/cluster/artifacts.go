package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// artifactStore keeps job executables by their SHA-256, the JobManager's
// uploaded ones and a TaskManager's fetched ones alike. Storing by content
// makes an upload idempotent and lets a TaskManager trust its cache.
type artifactStore struct {
	dir string
	mu  sync.Mutex // serializes the rename into place of one hash
}

func newArtifactStore(dir string) (*artifactStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("artifact directory: %w", err)
	}
	return &artifactStore{dir: dir}, nil
}

func (s *artifactStore) path(sum string) string { return filepath.Join(s.dir, sum) }

// has reports whether the artifact sum is stored.
func (s *artifactStore) has(sum string) bool {
	fi, err := os.Stat(s.path(sum))
	return err == nil && fi.Mode().IsRegular()
}

// put stores what r yields and returns its SHA-256. With want set, content
// whose hash differs is refused and not stored. The caller bounds r: the
// REST API by rest.server.max-content-length (restlimits.go); what a
// TaskManager fetches from its JobManager and what a JobManager restores
// from high-availability storage were bounded when they were uploaded.
// When reading r fails, nothing is stored and r's error is returned.
func (s *artifactStore) put(r io.Reader, want string) (string, error) {
	tmp, err := os.CreateTemp(s.dir, ".upload-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", errors.New("empty artifact")
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if want != "" && sum != want {
		return "", fmt.Errorf("artifact integrity check failed: its SHA-256 is %s, not %s", sum, want)
	}
	if err := os.Chmod(tmp.Name(), 0o700); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has(sum) {
		return sum, nil
	}
	return sum, os.Rename(tmp.Name(), s.path(sum))
}

// artifactChunkSize is the size of one FetchArtifact message, well under
// gRPC's 4 MiB message limit.
const artifactChunkSize = 1 << 20

func (s *jmService) FetchArtifact(req *rpcpb.FetchArtifactRequest, stream rpcpb.JobManager_FetchArtifactServer) error {
	sum := req.GetSha256()
	if !sha256Hex.MatchString(sum) {
		return status.Errorf(codes.InvalidArgument, "artifact %q is not a hex SHA-256", sum)
	}
	f, err := os.Open(s.jm.artifacts.path(sum))
	if errors.Is(err, os.ErrNotExist) {
		return status.Errorf(codes.NotFound, "artifact %s not found", sum)
	} else if err != nil {
		return status.Errorf(codes.Internal, "artifact %s: %v", sum, err)
	}
	defer f.Close()
	buf := make([]byte, artifactChunkSize)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if err := stream.Send(&rpcpb.ArtifactChunk{Data: buf[:n]}); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "artifact %s: %v", sum, err)
		}
	}
}

// chunkReader turns a FetchArtifact stream into an io.Reader.
type chunkReader struct {
	stream rpcpb.JobManager_FetchArtifactClient
	buf    []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		c, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the end
		}
		r.buf = c.GetData()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
