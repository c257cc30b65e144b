package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The plan tests run "go build"; keep them few.

const wordcount = "../../examples/wordcount"

// weir runs the weir command line args in-process and returns its
// output and exit status. The deadline bounds "go build" and the job,
// which run under exec.CommandContext.
func weir(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	code = execute(ctx, root)
	return out.String(), errOut.String(), code
}

func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found:", err)
	}
}

func TestPlanText(t *testing.T) {
	needGo(t)
	t.Parallel()
	stdout, stderr, code := weir(t, "plan", wordcount)
	if code != 0 {
		t.Fatalf("weir plan: exit status %d\nstderr:\n%s", code, stderr)
	}
	for _, want := range []string{"Vertex 1", "HASH"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan does not contain %q:\n%s", want, stdout)
		}
	}
}

// jobGraph is the part of the JSON job graph the tests check.
type jobGraph struct {
	JobName  string
	Vertices []struct {
		Name        string
		Parallelism int
	}
	Edges []struct {
		Partitioning string
	}
	Fingerprint string
}

func TestPlanJSON(t *testing.T) {
	needGo(t)
	t.Parallel()
	var fingerprints []string
	for range 2 {
		stdout, stderr, code := weir(t, "plan", "--json", "-p", "3", wordcount)
		if code != 0 {
			t.Fatalf("weir plan --json: exit status %d\nstderr:\n%s", code, stderr)
		}
		var jg jobGraph
		if err := json.Unmarshal([]byte(stdout), &jg); err != nil {
			t.Fatalf("decode plan: %v\n%s", err, stdout)
		}
		if len(jg.Vertices) != 2 {
			t.Fatalf("got %d vertices, want 2:\n%s", len(jg.Vertices), stdout)
		}
		for _, v := range jg.Vertices {
			if v.Parallelism != 3 {
				t.Errorf("vertex %q: parallelism %d, want 3", v.Name, v.Parallelism)
			}
		}
		if len(jg.Edges) != 1 || jg.Edges[0].Partitioning != "HASH" {
			t.Errorf("edges %+v, want one HASH edge", jg.Edges)
		}
		if jg.Fingerprint == "" {
			t.Error("no fingerprint")
		}
		fingerprints = append(fingerprints, jg.Fingerprint)
	}
	if fingerprints[0] != fingerprints[1] {
		t.Errorf("fingerprints differ between runs: %s and %s", fingerprints[0], fingerprints[1])
	}
}

// TestPlanExecutable runs a prebuilt job and passes arguments through.
func TestPlanExecutable(t *testing.T) {
	needGo(t)
	t.Parallel()
	exe := filepath.Join(t.TempDir(), "wordcount")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", exe, wordcount).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	stdout, stderr, code := weir(t, "plan", "-D", "pipeline.name=counts", exe, "--input", "../../examples/wordcount/sample.txt")
	if code != 0 {
		t.Fatalf("weir plan: exit status %d\nstderr:\n%s", code, stderr)
	}
	for _, want := range []string{`Job "counts"`, "Source: lines"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan does not contain %q:\n%s", want, stdout)
		}
	}

	// The job rejects the flag and exits with status 2; so does weir.
	_, stderr, code = weir(t, "plan", exe, "--no-such-flag")
	if code != 2 || !strings.Contains(stderr, "no-such-flag") || !strings.Contains(stderr, "exited with status 2") {
		t.Errorf("unknown job flag: exit status %d, want 2\nstderr:\n%s", code, stderr)
	}
}

func TestPlanMissingProgram(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-job")
	stdout, stderr, code := weir(t, "plan", missing)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if stdout != "" {
		t.Errorf("stdout: %q, want nothing", stdout)
	}
	if !strings.HasPrefix(stderr, "weir: ") || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "not found") {
		t.Errorf("stderr %q: want a weir error naming %s as not found", stderr, missing)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan"}, "plan needs a PROGRAM"},
		{[]string{"plan", "-p", "0", wordcount}, "--parallelism 0 must be at least 1"},
		{[]string{"plan", "-D", "novalue", wordcount}, `-D "novalue": want key=value`},
		{[]string{"plan", "--no-such-flag", wordcount}, "unknown flag: --no-such-flag"},
		{[]string{"plna"}, `unknown command "plna"; did you mean plan?`},
		{[]string{"version", "extra"}, "takes no arguments"},
	} {
		_, stderr, code := weir(t, tc.args...)
		if code != 2 || !strings.HasPrefix(stderr, "weir: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("weir %q: exit status %d, stderr %q; want status 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	stdout, stderr, code := weir(t, "version")
	if code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "weir version "+version+"\n") || !strings.Contains(stdout, runtime.Version()) {
		t.Errorf("version output:\n%s", stdout)
	}
}

func TestJobArgs(t *testing.T) {
	o := planOptions{json: true, parallelism: 4, defines: []string{"a=1", "b=2"}, configFile: "job.yaml"}
	got := strings.Join(o.jobArgs([]string{"--input", "x"}), " ")
	want := "--plan=json --parallelism=4 -D a=1 -D b=2 --config=job.yaml --input x"
	if got != want {
		t.Errorf("jobArgs = %q, want %q", got, want)
	}
	if got := strings.Join((&planOptions{}).jobArgs(nil), " "); got != "--plan" {
		t.Errorf("jobArgs = %q, want --plan", got)
	}
}
