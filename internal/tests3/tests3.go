// Package tests3 starts an S3-compatible server in the test's process
// (gofakes3 with its in-memory backend), so that tests of checkpoint
// storage and of the file connector talk the real S3 protocol through the
// same client users have, without a network or credentials.
package tests3

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/weirproject/weir/internal/storage"
)

// Server is a running S3 server with one bucket.
type Server struct {
	Bucket string
	url    string
	// Gets counts the GET requests served, so that tests can bound how
	// many reads a scan costs.
	Gets atomic.Int64
}

// Start runs a server with an empty bucket until the test ends.
func Start(t testing.TB, bucket string) *Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	s := &Server{Bucket: bucket}
	fake := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			s.Gets.Add(1)
		}
		fake.ServeHTTP(w, r)
	}))
	s.url = srv.URL
	t.Cleanup(func() {
		// The clients' idle connections would otherwise outlive the
		// server and look like leaked goroutines.
		storage.CloseBuckets()
		srv.Close()
	})
	return s
}

// URI is the s3:// URI of a directory in the bucket, with the options
// that point the client at this server.
func (s *Server) URI(dir string) string {
	return "s3://" + s.Bucket + "/" + dir + "?endpoint=" + s.url + "&region=us-east-1&use_path_style=true&anonymous=true"
}
