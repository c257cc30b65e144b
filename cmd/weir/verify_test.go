package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/verify"
)

// TestVerifyWordCount runs weir verify as a user would, for one round of
// the streaming WordCount on a local cluster, with short heartbeats so
// that every kind of process fault fits in a few seconds: the committed
// output must equal the failure-free run's, and the report must say so
// and count what was injected.
func TestVerifyWordCount(t *testing.T) {
	needGo(t)
	t.Parallel()
	wc := buildWordCount(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "words.txt")
	if err := os.WriteFile(input, []byte(wordText(8000, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.json")
	// The binary, not the command in-process: verify starts its cluster
	// from its own executable.
	cmd := exec.CommandContext(t.Context(), buildWeir(t), "verify", "-p", "2", "--taskmanagers", "2", "--slots", "2", "--rounds", "1", "--seed", "12",
		"--faults", "kill-worker,stop-taskmanager,panic-task,error-task,kill-jobmanager",
		"--min-interval", "1s", "--max-interval", "1500ms", "--stop-for", "1500ms",
		"--heartbeat-interval", "100ms", "--heartbeat-timeout", "1s", "--round-timeout", "2m",
		"--dir", filepath.Join(dir, "verify"), "--report", report,
		"-D", "restart-strategy.type=fixed-delay", "-D", "restart-strategy.fixed-delay.attempts=100", "-D", "restart-strategy.fixed-delay.delay=50ms",
		wc, "--mode", "streaming", "--input", input, "--output", "{output}",
		"--checkpoint-dir", "file://{checkpoints}", "--checkpoint-interval", "100ms", "--rate", "1500")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	stdout := string(out)
	if err != nil || !strings.Contains(stdout, "OK: nothing lost, nothing duplicated") {
		t.Fatalf("weir verify: %v\n%s\n%s", err, stdout, stderr.String())
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep verify.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	faults := 0
	for _, n := range rep.Faults {
		faults += n
	}
	if !rep.OK || rep.Lost != 0 || rep.Duplicated != 0 || rep.Expected == 0 || len(rep.Rounds) != 1 || faults == 0 ||
		rep.Restarts == 0 || rep.Checkpoints == 0 || rep.Rounds[0].Committed != rep.Expected {
		t.Errorf("report: %s", data)
	}
	if _, err := exec.LookPath("etcd"); err == nil && rep.NotInjected["kill-jobmanager"] != "" {
		t.Errorf("kill-jobmanager was not injectable although etcd is installed: %s", data)
	}
	t.Logf("%s", stdout)
}
