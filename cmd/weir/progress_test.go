package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/cluster"
)

// TestProgressView draws the attached job's progress on a terminal (one
// line per vertex, redrawn in place) and as plain lines.
func TestProgressView(t *testing.T) {
	d := cluster.JobDetails{ID: "j", State: cluster.JobRunning, Attempt: 1, Vertices: []cluster.JobVertexJSON{
		{ID: "a", Name: "Source: numbers", Parallelism: 2}, {ID: "b", Name: "Sink: slow", Parallelism: 1}}}
	views := []vertexView{
		{name: "Source: numbers", parallelism: 2, in: 100, out: 5000, inRate: 10, outRate: 2000, level: "high", ratio: 0.98, busy: 0.02},
		{name: "Sink: slow", parallelism: 1, in: 4000, inRate: 1990, level: "ok", busy: 1},
	}
	latest := &cluster.CheckpointStatisticsJSON{ID: 7, EndToEndDuration: 42, StateSize: 3 << 10}

	var tty bytes.Buffer
	p := &progress{w: &tty, tty: true}
	p.show(d, views, latest)
	p.show(d, views, latest)
	out := tty.String()
	first, second, ok := strings.Cut(out, "\x1b[3F")
	if !ok || strings.Count(first, "\n") != 3 || strings.Count(second, "\x1b[2K") != 3 {
		t.Fatalf("terminal output %q: want 3 lines, then the cursor back 3 lines and 3 lines redrawn", out)
	}
	for _, want := range []string{"latest 7 (42 ms, 3.0 KiB)", "Source: numbers", "p=2", "2000/s", "backpressure high  98%", "busy 100%"} {
		if !strings.Contains(second, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, second)
		}
	}

	var plain bytes.Buffer
	p = &progress{w: &plain}
	p.show(d, views, latest)
	line := plain.String()
	if strings.Count(line, "\n") != 1 || strings.Contains(line, "\x1b") ||
		!strings.Contains(line, "| Source: numbers: in 100 (10/s) out 5000 (2000/s) backpressure high") ||
		!strings.Contains(line, "| Sink: slow: in 4000 (1990/s) out 0 (0/s) backpressure ok") {
		t.Errorf("plain output %q", line)
	}
}
