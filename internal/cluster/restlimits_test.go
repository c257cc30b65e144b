package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// zeros yields zero bytes without end.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// rawPost posts body to base+path over a connection of its own and
// reads the answer while it writes, as a client that does not wait for
// one: a server that refuses a body early answers before the client has
// sent it. size < 0 sends the body chunked, without a Content-Length.
// It returns the answer and how many bytes it managed to send.
func rawPost(t *testing.T, base, path, contentType string, body io.Reader, size int64) (int, string, int64) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n", path, conn.RemoteAddr(), contentType)
	if size >= 0 {
		fmt.Fprintf(&head, "Content-Length: %d\r\n", size)
	} else {
		head.WriteString("Transfer-Encoding: chunked\r\n")
	}
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	sent := &countingWriter{w: conn}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// Fails once the server closes the connection.
		if size >= 0 {
			io.Copy(sent, body)
			return
		}
		cw := httputil.NewChunkedWriter(sent)
		if _, err := io.Copy(cw, body); err == nil {
			cw.Close()
			io.WriteString(sent, "\r\n")
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST %s: no answer: %v", path, err)
	}
	answer, _ := io.ReadAll(resp.Body)
	conn.Close()
	<-wrote
	return resp.StatusCode, string(answer), sent.n.Load()
}

// multipartJar is a multipart body with a jarfile field of n zero bytes.
func multipartJar(n int64) (contentType string, body io.Reader, size int64) {
	head := "--b0undary\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"big\"\r\n" +
		"Content-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--b0undary--\r\n"
	return "multipart/form-data; boundary=b0undary",
		io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, n), strings.NewReader(tail)),
		int64(len(head)) + n + int64(len(tail))
}

// TestRESTRefusesOversizedUploads: an upload longer than
// rest.server.max-content-length gets 413 naming the limit and the
// option, whether it announces its length or not, without the server
// reading it all, and nothing of it stays in the artifacts or jars
// directory. The JobManager goes on serving.
func TestRESTRefusesOversizedUploads(t *testing.T) {
	const limit = 64 << 10
	const size = 64 << 20
	jm := startJM(t, func(o *JobManagerOptions) { o.MaxContentLength = limit })
	base := jm.RESTURL()
	jarType, jarBody, jarSize := multipartJar(size)
	chunkedType, chunkedBody, _ := multipartJar(size)
	for _, tc := range []struct {
		what, path, contentType string
		body                    io.Reader
		size                    int64
	}{
		{"an artifact with a Content-Length", "/artifacts", "application/octet-stream", io.LimitReader(zeros{}, size), size},
		{"a chunked artifact", "/artifacts", "application/octet-stream", io.LimitReader(zeros{}, size), -1},
		{"a program with a Content-Length", "/jars/upload", jarType, jarBody, jarSize},
		{"a chunked program", "/jars/upload", chunkedType, chunkedBody, -1},
	} {
		code, answer, sent := rawPost(t, base, tc.path, tc.contentType, tc.body, tc.size)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(answer, "64 KiB") || !strings.Contains(answer, "rest.server.max-content-length") {
			t.Errorf("%s: %d %s, want 413 naming 64 KiB and rest.server.max-content-length", tc.what, code, answer)
		}
		if sent > size/2 {
			t.Errorf("%s: the server read %d of %d bytes before it refused", tc.what, sent, size)
		}
		if names := dirNames(t, jm.artifacts.dir); len(names) > 0 {
			t.Errorf("%s: the artifacts directory holds %q", tc.what, names)
		}
		if entries, err := os.ReadDir(jm.jarsDir()); len(entries) > 0 || err != nil && !os.IsNotExist(err) {
			t.Errorf("%s: the jars directory holds %v (%v)", tc.what, entries, err)
		}
	}
	// The REST client announces a file's length, so the refusal comes
	// before the upload.
	exe := filepath.Join(t.TempDir(), "program")
	if err := os.WriteFile(exe, make([]byte, 4<<20), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	client, err := NewRESTClient(base, Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var re *RESTError
	err = client.UploadArtifact(t.Context(), f, strings.Repeat("0", 64))
	if !errors.As(err, &re) || re.Code != http.StatusRequestEntityTooLarge || !strings.Contains(err.Error(), "rest.server.max-content-length") {
		t.Errorf("UploadArtifact of 4 MiB = %v, want 413 naming rest.server.max-content-length", err)
	}
	// Within the limit an upload is stored.
	if code, body := uploadJar(t, base, "jarfile", "small", jarProgram); code != http.StatusOK {
		t.Errorf("a program of %d bytes: %d %s", len(jarProgram), code, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestRESTRefusesOversizedJSON: JSON bodies have limits of their own,
// below rest.server.max-content-length: 16 MiB for a job submission,
// 1 MiB for the rest.
func TestRESTRefusesOversizedJSON(t *testing.T) {
	jm := startJM(t, nil)
	base := jm.RESTURL()
	code, body := uploadJar(t, base, "jarfile", "program", jarProgram)
	if code != http.StatusOK {
		t.Fatalf("POST /jars/upload = %d %s", code, body)
	}
	var up JarUploadJSON
	if err := json.Unmarshal(body, &up); err != nil {
		t.Fatal(err)
	}
	// A JSON object whose one string is n bytes long.
	long := func(n int) (io.Reader, int64) {
		s := `{"target-directory": "` + strings.Repeat("a", n) + `"}`
		return strings.NewReader(s), int64(len(s))
	}
	for _, tc := range []struct {
		what, path string
		n          int
		chunked    bool
		code       int
		want       string
	}{
		{"a savepoint request of 2 MiB", "/jobs/0123/savepoints", 2 << 20, true, 413, "POST /jobs/0123/savepoints is larger than 1 MiB, the limit of this endpoint"},
		{"a stop request of 2 MiB, announced", "/jobs/0123/stop", 2 << 20, false, 413, "larger than 1 MiB, the limit of this endpoint"},
		{"a jar run of 2 MiB", "/jars/" + filepath.Base(up.Filename) + "/run", 2 << 20, true, 413, "larger than 1 MiB"},
		{"a job submission of 17 MiB", "/jobs", 17 << 20, true, 413, "POST /jobs is larger than 16 MiB"},
		{"a savepoint request within the limit", "/jobs/0123/savepoints", 100, true, 404, "job 0123 not found"},
	} {
		body, size := long(tc.n)
		if tc.chunked {
			size = -1
		}
		code, answer, _ := rawPost(t, base, tc.path, "application/json", body, size)
		if code != tc.code || !strings.Contains(answer, tc.want) {
			t.Errorf("%s: %d %s, want %d and %q", tc.what, code, answer, tc.code, tc.want)
		}
	}
	if code, v := getJSON(t, base, "/overview"); code != http.StatusOK {
		t.Errorf("GET /overview after the refusals = %d %v", code, v)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1 MiB", 512 << 20: "512 MiB", 1 << 30: "1 GiB", 1536: "1536 bytes", 3 << 10: "3 KiB", 7: "7 bytes"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
