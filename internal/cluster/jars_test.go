package cluster

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// jarProgram stands in for a weir job program: with --plan=json it
// prints a one-vertex plan whose job name shows the options (-D) and
// arguments it was given, each in brackets, and the vertex the
// parallelism (-p, else 1); an argument "fail" makes it fail on stderr,
// and so does a WEIR_ variable in its environment (the cluster's token
// is one).
const jarProgram = `#!/bin/sh
if [ "$1" != "--plan=json" ]; then echo "run without --plan=json" >&2; exit 3; fi
if env | grep -q '^WEIR_'; then echo "the JobManager passed its WEIR_ variables" >&2; exit 4; fi
shift
p=1
if [ "$1" = "-p" ]; then p=$2; shift 2; fi
opts=""
while [ "$1" = "-D" ]; do opts="$opts[$2]"; shift 2; done
args=""
for a in "$@"; do
	if [ "$a" = fail ]; then echo "jarprogram: cannot plan with argument fail" >&2; exit 2; fi
	args="$args[$a]"
done
printf '{"JobName": "opts %s args %s", "Vertices": [{"ID": "v1", "Name": "src", "Parallelism": %s}]}' "$opts" "$args" "$p"
`

// uploadJar posts content as the multipart field field with file name
// name to POST /jars/upload.
func uploadJar(t *testing.T, base, field, name, content string) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("other", "ignored")
	fw, err := mw.CreateFormFile(field, name)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(fw, content)
	mw.Close()
	resp, err := http.Post(base+"/jars/upload", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func doJSON(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestJarEndpoints(t *testing.T) {
	t.Setenv("WEIR_TOKEN_OF_THE_TEST", "secret")
	jm := startJM(t, func(o *JobManagerOptions) { o.DefaultParallelism = 5 })
	base := jm.RESTURL()
	defer http.DefaultClient.CloseIdleConnections()

	// Upload: Flink's multipart field "jarfile"; the answer's file name
	// ends in the jar's ID.
	before := time.Now().Add(-time.Second)
	code, body := uploadJar(t, base, "jarfile", "dir/my prog.sh", jarProgram)
	if code != http.StatusOK {
		t.Fatalf("POST /jars/upload = %d %s", code, body)
	}
	var up JarUploadJSON
	if err := json.Unmarshal(body, &up); err != nil || up.Status != "success" {
		t.Fatalf("POST /jars/upload answered %s (%v)", body, err)
	}
	id := filepath.Base(up.Filename)
	if !strings.HasSuffix(id, "_my_prog.sh") {
		t.Errorf("jar ID %q does not end in the sanitized file name", id)
	}
	if code, body := uploadJar(t, base, "file", "x", jarProgram); code != http.StatusBadRequest || !strings.Contains(string(body), "jarfile") {
		t.Errorf("upload without the jarfile field = %d %s", code, body)
	}
	if code, body := doJSON(t, http.MethodPost, base+"/jars/upload", "{}"); code != http.StatusBadRequest || !strings.Contains(string(body), "multipart") {
		t.Errorf("upload of JSON = %d %s", code, body)
	}

	// Flink's shapes.
	schemas := flinkSchemas(t)
	shape := func(what, ref string, body []byte) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v in %s", what, err, body)
		}
		for _, e := range shapeErrors(schemas, ref, v, what, nil) {
			t.Error(e)
		}
	}
	shape("POST /jars/upload", "#/components/schemas/JarUploadResponseBody", body)
	if code, v := getJSON(t, base, "/jars"); code != http.StatusOK {
		t.Errorf("GET /jars = %d %v", code, v)
	} else {
		for _, e := range shapeErrors(schemas, "#/components/schemas/JarListInfo", v, "GET /jars", nil) {
			t.Error(e)
		}
	}

	// The list.
	var list JarListJSON
	decodeGet(t, base, "/jars", &list)
	if list.Address != base || len(list.Files) != 1 {
		t.Fatalf("GET /jars = %+v", list)
	}
	f := list.Files[0]
	if f.ID != id || f.Name != "my_prog.sh" || f.Uploaded < before.UnixMilli() || f.Uploaded > time.Now().UnixMilli() || f.Entry == nil {
		t.Errorf("GET /jars lists %+v, want ID %s uploaded just now", f, id)
	}

	// Run with arguments as one string (quotes keep "a b" together) and
	// a parallelism: the program plans with -p and the arguments.
	code, body = doJSON(t, http.MethodPost, base+"/jars/"+id+"/run",
		`{"programArgs": "--in 'a b' \"c d\" e\\ f", "parallelism": 3, "savepointPath": "/sp/1", "allowNonRestoredState": true}`)
	if code != http.StatusOK {
		t.Fatalf("POST /jars/%s/run = %d %s", id, code, body)
	}
	var run JarRunJSON
	if err := json.Unmarshal(body, &run); err != nil || run.JobID == "" {
		t.Fatalf("run answered %s (%v)", body, err)
	}
	shape("POST /jars/{jarid}/run", "#/components/schemas/JarRunResponseBody", body)
	d := jobDetails(t, jm, run.JobID)
	if d.Name != "opts  args [--in][a b][c d][e f]" || len(d.Vertices) != 1 || d.Vertices[0].Parallelism != 3 {
		t.Errorf("job %s: name %q, vertices %+v", run.JobID, d.Name, d.Vertices)
	}
	jm.dispatcher.mu.Lock()
	sub := jm.dispatcher.jobs[run.JobID].sub
	jm.dispatcher.mu.Unlock()
	if !slices.Equal(sub.Args, []string{"--in", "a b", "c d", "e f"}) || sub.Parallelism != 3 ||
		sub.SavepointPath != "/sp/1" || !sub.AllowNonRestoredState || !strings.HasPrefix(up.Filename, jm.workDir) {
		t.Errorf("submission %+v", sub)
	}

	// Without a parallelism: the cluster's default, as an option that
	// the job's own configuration follows; programArgsList wins.
	code, body = doJSON(t, http.MethodPost, base+"/jars/"+id+"/run",
		`{"programArgs": "ignored", "programArgsList": ["x y", "z"], "flinkConfiguration": {"restart-strategy.type": "none", "execution.checkpointing.interval": "1s"}}`)
	if code != http.StatusOK {
		t.Fatalf("run without parallelism = %d %s", code, body)
	}
	json.Unmarshal(body, &run)
	if d := jobDetails(t, jm, run.JobID); d.Name != "opts [parallelism.default=5][execution.checkpointing.interval=1s][restart-strategy.type=none] args [x y][z]" {
		t.Errorf("job without parallelism: name %q", d.Name)
	}
	// Flink's query parameters, where the body sets nothing.
	code, body = doJSON(t, http.MethodPost, base+"/jars/"+id+"/run?programArg=q1,q2&parallelism=2&savepointPath=/sp/2&allowNonRestoredState=true", "")
	if code != http.StatusOK {
		t.Fatalf("run with query parameters = %d %s", code, body)
	}
	json.Unmarshal(body, &run)
	jm.dispatcher.mu.Lock()
	qsub := jm.dispatcher.jobs[run.JobID].sub
	jm.dispatcher.mu.Unlock()
	if !slices.Equal(qsub.Args, []string{"q1", "q2"}) || qsub.Parallelism != 2 || qsub.SavepointPath != "/sp/2" || !qsub.AllowNonRestoredState {
		t.Errorf("submission from query parameters: %+v", qsub)
	}
	// An empty body runs the program without arguments.
	if code, body := doJSON(t, http.MethodPost, base+"/jars/"+id+"/run", ""); code != http.StatusOK {
		t.Errorf("run with an empty body = %d %s", code, body)
	}

	// Errors: the program's stderr, bad requests, unknown jars.
	for _, tt := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/jars/" + id + "/run", `{"programArgsList": ["fail"]}`, http.StatusBadRequest, "cannot plan with argument fail"},
		{"/jars/" + id + "/run", `{"programArgs": "'open"}`, http.StatusBadRequest, "unterminated ' quote"},
		{"/jars/" + id + "/run", `{"parallelism": 0}`, http.StatusBadRequest, "parallelism 0"},
		{"/jars/" + id + "/run", `{"entryClass": "org.example.Main"}`, http.StatusBadRequest, "entry classes"},
		{"/jars/" + id + "/run?entry-class=org.example.Main", ``, http.StatusBadRequest, "entry classes"},
		{"/jars/" + id + "/run?parallelism=two", ``, http.StatusBadRequest, "is not a number"},
		{"/jars/" + strings.Repeat("a", 64) + "_x/run", `{}`, http.StatusNotFound, "not found"},
		{"/jars/nonsense/run", `{}`, http.StatusNotFound, "jar nonsense not found"},
	} {
		code, body := doJSON(t, http.MethodPost, base+tt.path, tt.body)
		if code != tt.code || !strings.Contains(string(body), tt.want) {
			t.Errorf("POST %s %s = %d %s, want %d with %q", tt.path, tt.body, code, body, tt.code, tt.want)
		}
	}
	// A program that prints no plan.
	code, body = uploadJar(t, base, "jarfile", "noplan", "#!/bin/sh\necho hello\n")
	if code != http.StatusOK {
		t.Fatalf("upload = %d %s", code, body)
	}
	json.Unmarshal(body, &up)
	if code, body := doJSON(t, http.MethodPost, base+"/jars/"+filepath.Base(up.Filename)+"/run", "{}"); code != http.StatusBadRequest || !strings.Contains(string(body), "printed no job graph") {
		t.Errorf("run of a program without a plan = %d %s", code, body)
	}

	// Delete: gone from the list, not runnable; the artifact stays for
	// the jobs that run it.
	if code, body := doJSON(t, http.MethodDelete, base+"/jars/"+id, ""); code != http.StatusOK {
		t.Fatalf("DELETE = %d %s", code, body)
	}
	decodeGet(t, base, "/jars", &list)
	for _, f := range list.Files {
		if f.ID == id {
			t.Errorf("deleted jar still listed: %+v", list)
		}
	}
	if code, _ := doJSON(t, http.MethodPost, base+"/jars/"+id+"/run", "{}"); code != http.StatusNotFound {
		t.Errorf("run of a deleted jar = %d", code)
	}
	if code, _ := doJSON(t, http.MethodDelete, base+"/jars/"+id, ""); code != http.StatusNotFound {
		t.Errorf("second DELETE = %d", code)
	}
	if !jm.artifacts.has(sub.Artifact) {
		t.Error("deleting the jar removed the artifact of its jobs")
	}
}

func TestSplitArgs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b\tc\n", []string{"a", "b", "c"}},
		{`--x "a b" 'c "d"' e\ f ""`, []string{"--x", "a b", `c "d"`, "e f", ""}},
		{`a"b c"d`, []string{"ab cd"}},
		{`'a\b'`, []string{`a\b`}},
	} {
		got, err := splitArgs(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{`"a`, `a\`} {
		if _, err := splitArgs(in); err == nil {
			t.Errorf("splitArgs(%q): no error", in)
		}
	}
}

// TestJarReuploadLeavesNoTemporaryLinks: uploading a program again under
// the same name lists it once and leaves nothing else in the jars
// directory. The jar's link used to be renamed onto the existing one,
// which rename(2) does not do for two links of the same file, and the
// temporary link stayed, listed by GET /jars as another jar.
func TestJarReuploadLeavesNoTemporaryLinks(t *testing.T) {
	jm := startJM(t, nil)
	base := jm.RESTURL()
	defer http.DefaultClient.CloseIdleConnections()
	var ids []string
	for _, name := range []string{"program", "program", "program", "other"} {
		code, body := uploadJar(t, base, "jarfile", name, jarProgram)
		if code != http.StatusOK {
			t.Fatalf("POST /jars/upload = %d %s", code, body)
		}
		var up JarUploadJSON
		if err := json.Unmarshal(body, &up); err != nil {
			t.Fatal(err)
		}
		if id := filepath.Base(up.Filename); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	var list JarListJSON
	decodeGet(t, base, "/jars", &list)
	var listed []string
	for _, f := range list.Files {
		listed = append(listed, f.ID)
	}
	slices.Sort(ids)
	slices.Sort(listed)
	if !slices.Equal(listed, ids) {
		t.Errorf("GET /jars lists %q, want %q", listed, ids)
	}
	if files := dirNames(t, jm.jarsDir()); !slices.Equal(files, ids) {
		t.Errorf("the jars directory holds %q, want %q", files, ids)
	}
}

// TestJarTemporaryLinksRemovedAtStart: a JobManager that reuses its
// working directory removes the temporary links that one stopped in
// the middle of an upload left, and those of older versions, but keeps
// a program whose name only looks like one.
func TestJarTemporaryLinksRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	jm := startJM(t, func(o *JobManagerOptions) { o.WorkingDir = dir })
	code, body := uploadJar(t, jm.RESTURL(), "jarfile", "program", jarProgram)
	if code != http.StatusOK {
		t.Fatalf("POST /jars/upload = %d %s", code, body)
	}
	var up JarUploadJSON
	if err := json.Unmarshal(body, &up); err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(up.Filename)
	sum, _, _ := jarIDParts(id)
	jars := jm.jarsDir()
	jm.Close()
	http.DefaultClient.CloseIdleConnections()

	lookalike := sum + "_look.tmp-0123456789abcdef" // no jar "<sum>_look"
	for _, name := range []string{".link-0123456789abcdef", id + ".tmp-0123456789abcdef", lookalike} {
		if err := os.Link(filepath.Join(jars, id), filepath.Join(jars, name)); err != nil {
			t.Fatal(err)
		}
	}
	jm = startJM(t, func(o *JobManagerOptions) { o.WorkingDir = dir })
	want := []string{id, lookalike}
	slices.Sort(want)
	if files := dirNames(t, jars); !slices.Equal(files, want) {
		t.Errorf("after a restart the jars directory holds %q, want %q", files, want)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
