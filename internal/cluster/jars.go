package cluster

// Flink's jar endpoints (POST /jars/upload, GET /jars, DELETE
// /jars/{jarid}, POST /jars/{jarid}/run), with which a browser or a
// client written for Flink submits a job without computing its plan
// itself. A "jar" is a weir job program's executable: the upload stores
// it in the artifact store and links it under its jar ID into the jars
// directory; a run asks the program for its plan with --plan=json, as
// weir run does on the client's machine, and submits it to the
// dispatcher.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/weirproject/weir/config"
)

// jarPlanTimeout bounds a program's --plan=json at POST /jars/{id}/run.
const jarPlanTimeout = time.Minute

// jarsDir is where the uploaded programs are listed: one hard link to the
// artifact per jar, named by the jar's ID.
func (jm *JobManager) jarsDir() string { return filepath.Join(jm.workDir, "jars") }

// JarUploadJSON is the answer of POST /jars/upload (Flink's
// JarUploadResponseBody): filename's base name is the jar's ID.
type JarUploadJSON struct {
	Filename string `json:"filename"`
	Status   string `json:"status"`
}

// JarListJSON is the answer of GET /jars (Flink's JarListInfo).
type JarListJSON struct {
	Address string        `json:"address"`
	Files   []JarFileJSON `json:"files"`
}

// JarFileJSON is one uploaded program. Uploaded is in Unix milliseconds.
// Entry lists Java entry classes in Flink; a weir program has its main
// function only, so it stays empty.
type JarFileJSON struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Uploaded int64          `json:"uploaded"`
	Entry    []JarEntryJSON `json:"entry"`
}

// JarEntryJSON is an entry class of a jar (never set by weir).
type JarEntryJSON struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// JarRunRequest is the body of POST /jars/{jarid}/run (Flink's
// JarRunRequestBody; Flink's query parameters fill what it leaves unset).
// ProgramArgsList wins over ProgramArgs, which is split at white space
// outside quotes. FlinkConfiguration holds options passed to the program
// as -D. Flink's restoreMode is not read.
type JarRunRequest struct {
	EntryClass            string            `json:"entryClass,omitempty"`
	ProgramArgs           string            `json:"programArgs,omitempty"`
	ProgramArgsList       []string          `json:"programArgsList,omitempty"`
	Parallelism           *int              `json:"parallelism,omitempty"`
	JobID                 string            `json:"jobId,omitempty"`
	SavepointPath         string            `json:"savepointPath,omitempty"`
	AllowNonRestoredState bool              `json:"allowNonRestoredState,omitempty"`
	FlinkConfiguration    map[string]string `json:"flinkConfiguration,omitempty"`
}

// JarRunJSON is the answer of POST /jars/{jarid}/run.
type JarRunJSON struct {
	JobID string `json:"jobid"`
}

// jarName makes an uploaded file's name safe as part of a file name.
func jarName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	name = strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, name)
	if name == "" || name == "." || name == ".." {
		name = "program"
	}
	return name
}

// jarIDParts splits a jar ID, "<sha256>_<name>", into the artifact's hash
// and the uploaded file's name.
func jarIDParts(id string) (sum, name string, ok bool) {
	sum, name, ok = strings.Cut(id, "_")
	if !ok || !sha256Hex.MatchString(sum) || name == "" || jarName(name) != name {
		return "", "", false
	}
	return sum, name, true
}

func (jm *JobManager) handleJarUpload(w http.ResponseWriter, r *http.Request) {
	// The server's timeouts are for requests, not for executables of
	// tens of megabytes over a slow link.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(10 * time.Minute))
	rc.SetWriteDeadline(time.Now().Add(11 * time.Minute))
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		writeError(w, http.StatusBadRequest, `jar upload: send the program as multipart/form-data in the field "jarfile"`)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, "jar upload: "+err.Error())
		return
	}
	for {
		part, err := mr.NextPart()
		if bodyTooLarge(w, r, err) {
			return
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, `jar upload: no form field "jarfile" with the program's executable`)
			return
		}
		if part.FormName() != "jarfile" {
			part.Close()
			continue
		}
		name := jarName(part.FileName())
		sum, err := jm.artifacts.put(part, "")
		part.Close()
		if bodyTooLarge(w, r, err) {
			return
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "jar upload: "+err.Error())
			return
		}
		id := sum + "_" + name
		path, err := jm.linkJar(sum, id)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "jar upload: "+err.Error())
			return
		}
		jm.log.Info("program uploaded", "jar", id, "peer", r.RemoteAddr)
		writeJSON(w, http.StatusOK, JarUploadJSON{Filename: path, Status: "success"})
		return
	}
}

// jarLinkPrefix starts the temporary name under which linkJar makes a
// jar's link before renaming it into place. A jar ID starts with a hash,
// so GET /jars never lists such a name.
const jarLinkPrefix = ".link-"

// legacyJarTemp matches the temporary names of older versions,
// "<jar ID>.tmp-<16 hex digits>", which look like jar IDs themselves.
var legacyJarTemp = regexp.MustCompile(`\.tmp-[0-9a-f]{16}$`)

// linkJar lists artifact sum as jar id and returns the jar's path.
func (jm *JobManager) linkJar(sum, id string) (string, error) {
	dir := jm.jarsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, id)
	tmp := filepath.Join(dir, jarLinkPrefix+newID())
	if err := os.Link(jm.artifacts.path(sum), tmp); err != nil {
		return "", err
	}
	// Removed whatever happens: a rename of one hard link onto another of
	// the same file succeeds without doing anything (rename(2)), so an
	// upload of a program already listed under its name leaves tmp. A
	// rename that did move it leaves nothing to remove.
	defer os.Remove(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	// The upload time, which a hard link to an artifact stored before
	// would not have.
	now := time.Now()
	os.Chtimes(path, now, now)
	return path, nil
}

// removeJarTemps removes what a JobManager stopped in the middle of
// linkJar left in the jars directory of a working directory it reuses
// (process.working-dir), and what older versions left there: they kept
// the temporary link of every upload of a program already listed, under
// a name "<jar ID>.tmp-<hex>" that GET /jars listed as a jar. Such a
// name is removed only when it is another link to the jar it names, so
// that a program uploaded under a name of that form stays.
func (jm *JobManager) removeJarTemps() {
	dir := jm.jarsDir()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, jarLinkPrefix):
		case legacyJarTemp.MatchString(name):
			tmp, err1 := os.Stat(filepath.Join(dir, name))
			jar, err2 := os.Stat(filepath.Join(dir, legacyJarTemp.ReplaceAllString(name, "")))
			if err1 != nil || err2 != nil || !os.SameFile(tmp, jar) {
				continue
			}
		default:
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			jm.log.Warn("cannot remove a temporary link of an uploaded program", "file", name, "error", err)
		}
	}
}

func (jm *JobManager) handleJars(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	out := JarListJSON{Address: scheme + "://" + r.Host, Files: []JarFileJSON{}}
	entries, err := os.ReadDir(jm.jarsDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		writeError(w, http.StatusInternalServerError, "jars: "+err.Error())
		return
	}
	for _, e := range entries {
		_, name, ok := jarIDParts(e.Name())
		if !ok {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out.Files = append(out.Files, JarFileJSON{ID: e.Name(), Name: name, Uploaded: fi.ModTime().UnixMilli(), Entry: []JarEntryJSON{}})
	}
	// Newest first, as Flink lists them.
	slices.SortStableFunc(out.Files, func(a, b JarFileJSON) int { return int(b.Uploaded - a.Uploaded) })
	writeJSON(w, http.StatusOK, out)
}

// jarArtifact returns the artifact of the request's {jarid}, or answers
// 404 and returns false.
func (jm *JobManager) jarArtifact(w http.ResponseWriter, r *http.Request) (id, sum string, ok bool) {
	id = r.PathValue("jarid")
	sum, _, ok = jarIDParts(id)
	if ok {
		_, err := os.Stat(filepath.Join(jm.jarsDir(), id))
		ok = err == nil && jm.artifacts.has(sum)
	}
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("jar %s not found: upload the program with POST /jars/upload (GET /jars lists the uploaded ones)", id))
	}
	return id, sum, ok
}

func (jm *JobManager) handleJarDelete(w http.ResponseWriter, r *http.Request) {
	id, _, ok := jm.jarArtifact(w, r)
	if !ok {
		return
	}
	// The artifact stays: jobs submitted from the jar run it.
	if err := os.Remove(filepath.Join(jm.jarsDir(), id)); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("deleting jar %s: %v", id, err))
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (jm *JobManager) handleJarRun(w http.ResponseWriter, r *http.Request) {
	id, sum, ok := jm.jarArtifact(w, r)
	if !ok {
		return
	}
	// The program may take up to jarPlanTimeout to plan, longer than the
	// server's write timeout.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(jarPlanTimeout + 30*time.Second))
	var req JarRunRequest
	if r.ContentLength != 0 && !readJSON(w, r, &req) {
		return
	}
	if err := jarRunQuery(r.URL.Query(), &req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("running jar %s: %v", id, err))
		return
	}
	sub, err := jm.jarSubmission(r.Context(), sum, req)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("running jar %s: %v", id, err))
		return
	}
	jobID, err := jm.dispatcher.submit(sub)
	if errors.Is(err, errUnavailable) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "job submission: "+err.Error())
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("running jar %s: job submission: %v", id, err))
		return
	}
	jm.log.Info("job submitted from an uploaded program", "job", jobID, "jar", id, "peer", r.RemoteAddr)
	writeJSON(w, http.StatusOK, JarRunJSON{JobID: jobID})
}

// jarRunQuery fills what the body of a run request left unset from
// Flink's query parameters (programArg, comma-separated, or the
// deprecated program-args; parallelism, savepointPath,
// allowNonRestoredState, entry-class).
func jarRunQuery(q url.Values, req *JarRunRequest) error {
	if len(req.ProgramArgsList) == 0 && req.ProgramArgs == "" {
		if a := q.Get("programArg"); a != "" {
			req.ProgramArgsList = strings.Split(a, ",")
		} else {
			req.ProgramArgs = q.Get("program-args")
		}
	}
	if req.Parallelism == nil && q.Has("parallelism") {
		p, err := strconv.Atoi(q.Get("parallelism"))
		if err != nil {
			return fmt.Errorf("parallelism %q is not a number", q.Get("parallelism"))
		}
		req.Parallelism = &p
	}
	if req.SavepointPath == "" {
		req.SavepointPath = q.Get("savepointPath")
	}
	if !req.AllowNonRestoredState && q.Has("allowNonRestoredState") {
		b, err := strconv.ParseBool(q.Get("allowNonRestoredState"))
		if err != nil {
			return fmt.Errorf("allowNonRestoredState %q is not a boolean", q.Get("allowNonRestoredState"))
		}
		req.AllowNonRestoredState = b
	}
	if req.EntryClass == "" {
		req.EntryClass = q.Get("entry-class")
	}
	return nil
}

// jarSubmission turns a run request into a submission, with the plan the
// program prints for it.
func (jm *JobManager) jarSubmission(ctx context.Context, sum string, req JarRunRequest) (JobSubmission, error) {
	if req.EntryClass != "" {
		return JobSubmission{}, fmt.Errorf("entryClass %q: a weir program has no entry classes; it runs its main function", req.EntryClass)
	}
	if req.JobID != "" {
		return JobSubmission{}, fmt.Errorf("jobId %q: weir chooses the IDs of submitted jobs", req.JobID)
	}
	args := req.ProgramArgsList
	if len(args) == 0 && req.ProgramArgs != "" {
		var err error
		if args, err = splitArgs(req.ProgramArgs); err != nil {
			return JobSubmission{}, fmt.Errorf("programArgs: %w", err)
		}
	}
	p := 0
	if req.Parallelism != nil {
		// Flink's -1 is its "default".
		if *req.Parallelism < -1 || *req.Parallelism == 0 {
			return JobSubmission{}, fmt.Errorf("parallelism %d must be positive (or -1 for the cluster's default)", *req.Parallelism)
		}
		p = max(0, *req.Parallelism)
	}
	var options []string
	for _, k := range slices.Sorted(maps.Keys(req.FlinkConfiguration)) {
		options = append(options, k+"="+req.FlinkConfiguration[k])
	}
	// Without a parallelism the job runs at the cluster's default, as
	// with weir run; the job's own options and arguments override it.
	if p == 0 {
		options = append([]string{config.Parallelism.Key + "=" + strconv.Itoa(max(1, jm.opts.DefaultParallelism))}, options...)
	}
	ctx, cancel := context.WithTimeout(ctx, jarPlanTimeout)
	defer cancel()
	_, raw, err := planProgram(ctx, jm.artifacts.path(sum), p, options, args)
	if err != nil {
		return JobSubmission{}, err
	}
	return JobSubmission{Artifact: sum, Args: args, Parallelism: p, SavepointPath: req.SavepointPath,
		AllowNonRestoredState: req.AllowNonRestoredState, Options: options, Plan: raw}, nil
}

// splitArgs splits a command line at white space outside single and
// double quotes, which it removes; a backslash outside single quotes
// escapes the next character.
func splitArgs(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inArg := false
	var quote rune
	escaped := false
	for _, c := range s {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case c == '\\' && quote != '\'':
			escaped, inArg = true, true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, inArg = c, true
		case unicode.IsSpace(c):
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(c)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if escaped {
		return nil, fmt.Errorf("a backslash ends %q", s)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}
