package manifests

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// No container builder runs here (docs/kubernetes.md says how to build);
// this test reads deploy/docker/Dockerfile the way a builder would and
// checks what it can without one: known instructions, stages that exist,
// sources and packages that exist, and the binaries and paths that the
// manifests run.

const repoRoot = "../../.."

type instruction struct {
	line int
	cmd  string // upper case
	args string
}

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{start, strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: the last instruction ends in a line continuation", path)
	}
	return out
}

var known = []string{"FROM", "ARG", "ENV", "WORKDIR", "COPY", "RUN", "USER", "EXPOSE", "ENTRYPOINT", "CMD", "LABEL"}

func TestDockerfile(t *testing.T) {
	path := filepath.Join(repoRoot, "deploy", "docker", "Dockerfile")
	ins := parseDockerfile(t, path)
	stages := map[string]bool{}
	args := map[string]bool{}
	var runs strings.Builder
	var final []instruction // instructions of the last stage
	for _, in := range ins {
		if !slices.Contains(known, in.cmd) {
			t.Errorf("line %d: unknown instruction %s", in.line, in.cmd)
		}
		switch in.cmd {
		case "ARG":
			name, _, _ := strings.Cut(in.args, "=")
			args[name] = true
		case "FROM":
			for _, m := range regexp.MustCompile(`\$\{(\w+)\}`).FindAllStringSubmatch(in.args, -1) {
				if !args[m[1]] {
					t.Errorf("line %d: FROM uses ${%s}, which no ARG before it declares", in.line, m[1])
				}
			}
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stages[f[2]] = true
			}
			final = nil
		case "COPY":
			f := strings.Fields(in.args)
			var from string
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				if v, ok := strings.CutPrefix(f[0], "--from="); ok {
					from = v
				}
				f = f[1:]
			}
			if len(f) < 2 {
				t.Errorf("line %d: COPY needs sources and a destination", in.line)
				continue
			}
			if from != "" {
				if !stages[from] {
					t.Errorf("line %d: COPY --from=%s: no such stage", in.line, from)
				}
			} else {
				for _, src := range f[:len(f)-1] {
					if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
						t.Errorf("line %d: COPY %s: not in the build context (the repository root): %v", in.line, src, err)
					}
				}
			}
		case "RUN":
			runs.WriteString(in.args + "\n")
		}
		final = append(final, in)
	}

	// Every go build target is a main package; the ones after "cd
	// deploy/kubernetes" are in that module.
	script := runs.String()
	builds := regexp.MustCompile(`(?:cd (\S+) && )?go build -o (\S+) (\S+)`).FindAllStringSubmatch(script, -1)
	built := map[string]bool{}
	for _, b := range builds {
		dir, out, pkg := b[1], b[2], b[3]
		built[out] = true
		if strings.HasPrefix(pkg, `"$`) {
			continue // the PROGRAM build-arg
		}
		src, err := os.ReadFile(filepath.Join(repoRoot, dir, pkg, "main.go"))
		if err != nil || !strings.Contains(string(src), "package main") {
			t.Errorf("go build %s (in %q): not a main package: %v", pkg, dir, err)
		}
	}
	// The commands that the manifests run are on the final image's PATH.
	for _, bin := range []string{"weir", "weir-kubernetes"} {
		if !built["/out/bin/"+bin] {
			t.Errorf("the builder does not build %s into /out/bin", bin)
		}
	}
	var copiesBin, copiesUsrlib bool
	for _, in := range final {
		copiesBin = copiesBin || in.cmd == "COPY" && strings.HasSuffix(in.args, "/out/bin/ /usr/local/bin/")
		copiesUsrlib = copiesUsrlib || in.cmd == "COPY" && strings.HasSuffix(in.args, "/out/usrlib/ /opt/weir/usrlib/")
	}
	if !copiesBin || !copiesUsrlib {
		t.Errorf("the final stage copies /out/bin to /usr/local/bin: %v, /out/usrlib to /opt/weir/usrlib: %v", copiesBin, copiesUsrlib)
	}
	if !strings.Contains(script, `/out/usrlib/$(basename "$PROGRAM")`) {
		t.Error("the PROGRAM build-arg is not built into /out/usrlib/<its base name>")
	}
	// The builder's Go is at least the modules' go directive.
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	for _, in := range ins {
		if in.cmd == "ARG" && strings.HasPrefix(in.args, "GO_VERSION=") && strings.TrimPrefix(in.args, "GO_VERSION=") != string(want[1]) {
			t.Errorf("GO_VERSION %s; go.mod says go %s", in.args, want[1])
		}
	}
}

// The application manifests run the program where the documented build
// puts it.
func TestApplicationImagePath(t *testing.T) {
	s := load(t, "application")
	pods := s.pods()
	for _, name := range []string{"job/wordcount-jobmanager", "deployment/wordcount-taskmanager"} {
		p := pods[name]
		if p == nil {
			t.Errorf("no %s", name)
			continue
		}
		if c := p.Spec.Containers[0]; !slices.Equal(c.Command, []string{programPath}) || c.Image != "weir-wordcount:latest" {
			t.Errorf("%s runs %v from %s; want %s from weir-wordcount:latest", name, c.Command, c.Image, programPath)
		}
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "--build-arg PROGRAM=./examples/wordcount -t weir-wordcount:latest") {
		t.Error("docs/kubernetes.md does not show the build of weir-wordcount:latest from ./examples/wordcount")
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "examples", "wordcount", "main.go")); err != nil {
		t.Error(err)
	}
}
