//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/cluster"
)

// TestBackpressureAcrossProcesses runs a source that could emit about a
// gigabyte a second in one TaskManager's worker and a sink that takes
// 2000 records (2 MB) a second in the other's. Credit-based flow control
// must slow the source to the sink's rate across the TCP exchange, with
// the records in flight and the producer's memory bounded.
func TestBackpressureAcrossProcesses(t *testing.T) {
	needGo(t)
	t.Parallel()
	_, _, rest, _ := startCluster(t, nil, []int{1, 1}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	program := buildSlowSink(t)
	const rate = 2000
	stdout, stderr, code := weir(t, "run", "-d", "--jobmanager", strings.TrimPrefix(rest, "http://"), "-p", "1", program, "--rate", strconv.Itoa(rate))
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	defer weir(t, "cancel", "--jobmanager", strings.TrimPrefix(rest, "http://"), id)
	d := waitJob(t, client, id, 30*time.Second, "records at the sink", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && len(d.Vertices) == 2 && d.Vertices[1].Metrics.ReadRecords > 0
	})
	source, sink := d.Vertices[0], d.Vertices[1]
	if source.Subtasks[0].TaskManager == sink.Subtasks[0].TaskManager {
		t.Fatalf("source and sink both run on %s; the test needs them apart", sink.Subtasks[0].TaskManager)
	}
	producer := 0
	for _, w := range d.Workers {
		if w.TaskManager == source.Subtasks[0].TaskManager {
			producer = w.Index
		}
	}
	pid := workerPID(t, id, 1, producer)

	// Let the pipeline settle, then measure for a few seconds.
	time.Sleep(time.Second)
	first := waitJob(t, client, id, 5*time.Second, "metrics", func(cluster.JobDetails) bool { return true })
	start := time.Now()
	var maxRSS int64
	for time.Since(start) < 4*time.Second {
		maxRSS = max(maxRSS, rssBytes(t, pid))
		time.Sleep(100 * time.Millisecond)
	}
	last := waitJob(t, client, id, 5*time.Second, "metrics", func(cluster.JobDetails) bool { return true })
	elapsed := time.Since(start).Seconds()
	emitted := last.Vertices[0].Metrics.WriteRecords - first.Vertices[0].Metrics.WriteRecords
	taken := last.Vertices[1].Metrics.ReadRecords - first.Vertices[1].Metrics.ReadRecords
	inFlight := last.Vertices[0].Metrics.WriteRecords - last.Vertices[1].Metrics.ReadRecords
	t.Logf("source %.0f records/s, sink %.0f records/s, %d records in flight, producer RSS at most %.1f MiB",
		float64(emitted)/elapsed, float64(taken)/elapsed, inFlight, float64(maxRSS)/(1<<20))
	if sinkRate := float64(taken) / elapsed; sinkRate < rate/2 || sinkRate > rate*1.5 {
		t.Errorf("the sink took %.0f records/s, want about %d", sinkRate, rate)
	}
	// Unthrottled, the source would emit hundreds of thousands a second.
	if float64(emitted) > float64(taken)*1.2+2000 {
		t.Errorf("the source emitted %d records while the sink took %d: backpressure did not slow it", emitted, taken)
	}
	// Buffers and credits bound what is in flight: a few hundred KiB of
	// 1 KiB records in the writer, the network gate and the sink's gate.
	if inFlight > 5000 {
		t.Errorf("%d records in flight between source and sink", inFlight)
	}
	if maxRSS > 150<<20 {
		t.Errorf("the producer's resident memory reached %d MiB", maxRSS>>20)
	}

	// The REST API shows it as Flink's does: the source back pressured,
	// the sink busy.
	var srcBP, sinkBP cluster.BackPressureJSON
	getREST(t, rest, "/jobs/"+id+"/vertices/"+source.ID+"/backpressure", &srcBP)
	getREST(t, rest, "/jobs/"+id+"/vertices/"+sink.ID+"/backpressure", &sinkBP)
	t.Logf("source backpressure %+v; sink %+v", srcBP, sinkBP)
	if srcBP.Level != "high" || len(srcBP.Subtasks) != 1 || srcBP.Subtasks[0].Ratio <= 0.5 {
		t.Errorf("source back pressure = %+v, want high with backPressuredTimeMsPerSecond > 500", srcBP)
	}
	if sinkBP.Level != "ok" || len(sinkBP.Subtasks) != 1 || sinkBP.Subtasks[0].BusyRatio <= 0.5 {
		t.Errorf("sink back pressure = %+v, want ok and busy", sinkBP)
	}
	var ms []cluster.MetricJSON
	getREST(t, rest, "/jobs/"+id+"/vertices/"+source.ID+"/metrics?get=0.backPressuredTimeMsPerSecond,0.buffers.outPoolUsage", &ms)
	if len(ms) != 2 || ms[0].Value == nil {
		t.Errorf("source metrics = %+v", ms)
	} else if v, _ := strconv.ParseFloat(*ms[0].Value, 64); v <= 500 {
		t.Errorf("source backPressuredTimeMsPerSecond = %s, want > 500", *ms[0].Value)
	}
}

// workerPID finds the process of worker index of a job attempt.
func workerPID(t *testing.T, jobID string, attempt, index int) int {
	t.Helper()
	for _, pid := range workerPIDs(jobID, attempt) {
		environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err == nil && bytes.Contains(environ, []byte("\x00WEIR_WORKER_INDEX="+strconv.Itoa(index)+"\x00")) {
			return pid
		}
	}
	t.Fatalf("no worker %d of job %s attempt %d among %v", index, jobID, attempt, workerPIDs(jobID, attempt))
	return 0
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
