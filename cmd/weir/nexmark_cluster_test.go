//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// TestNexmarkOnCluster runs a Nexmark query with --jobmanager: the weir
// executable is the job's artifact, and a TaskManager process runs the
// query in worker mode.
func TestNexmarkOnCluster(t *testing.T) {
	t.Parallel()
	_, _, rest, _ := startCluster(t, nil, []int{2}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "a taskmanager with 2 slots", func(o cluster.Overview) bool { return o.SlotsTotal == 2 })
	p := startProc(t, "nexmark client", nil, "nexmark", "--query", "q5", "--events", "200000", "-p", "2",
		"--checkpoint-interval", "200ms", "--jobmanager", strings.TrimPrefix(rest, "http://"))
	if code := p.waitExit(t, 60*time.Second); code != 0 {
		t.Fatalf("weir nexmark --jobmanager exited %d:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	out := p.stdout.String()
	for _, want := range []string{"FINISHED", "q5-count: in 184000", "throughput"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	// Local-only flags are refused with --jobmanager.
	bad := startProc(t, "nexmark client", nil, "nexmark", "--query", "q1", "--baseline", "--jobmanager", strings.TrimPrefix(rest, "http://"))
	if code := bad.waitExit(t, 10*time.Second); code == 0 || !strings.Contains(bad.stderr.String(), "local mini cluster only") {
		t.Fatalf("--baseline with --jobmanager: exit %d, %s", code, bad.stderr.String())
	}
}
