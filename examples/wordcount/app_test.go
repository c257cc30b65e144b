//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestApplicationMode deploys WordCount with its own binary: "wordcount
// jobmanager ..." starts a JobManager that runs the job, "wordcount
// taskmanager ..." a TaskManager that runs it in worker mode; the
// JobManager exits when the job finished, and the committed counts are
// the reference's.
func TestApplicationMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example and runs it as processes")
	}
	dir := t.TempDir()
	bin := buildExample(t)
	text := mixedText(5_000, 7)
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	jm := startProcess(t, bin, "jobmanager", "-D", "jobmanager.rpc.port=0", "-D", "rest.port=0",
		"-D", "heartbeat.interval=100ms", "--input", input, "--output", out, "-p", "2")
	rpc := regexp.MustCompile(`rpc=(\S+)`)
	waitFor(t, jm, 20*time.Second, "the jobmanager's address", func() bool { return rpc.MatchString(jm.output()) })
	addr := rpc.FindStringSubmatch(jm.output())[1]
	startProcess(t, bin, "taskmanager", "--jobmanager", addr, "--slots", "2")
	if err := jm.wait(60 * time.Second); err != nil {
		t.Fatalf("the jobmanager: %v\n%s", err, jm.output())
	}
	got := parseCounts(t, strings.Join(committed(t, out), "\n"))
	if d := diff(got, reference(text)); d != "" {
		t.Fatalf("application mode counted differently: %s\n%s", d, jm.output())
	}
}
