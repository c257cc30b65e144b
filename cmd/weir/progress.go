package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/chzyer/readline"

	"github.com/weirproject/weir/internal/cluster"
)

// progress shows an attached job while weir run follows it: on a
// terminal a status line and one line per vertex (records per second in
// and out, back pressure), redrawn in place; otherwise plain lines, one
// whenever something changes and every two seconds.
type progress struct {
	w      io.Writer
	tty    bool
	drawn  int // lines drawn last time on a terminal
	prev   cluster.JobDetails
	prevAt time.Time
	rates  map[string][2]float64 // records/s in and out by vertex ID
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && readline.IsTerminal(int(f.Fd())), rates: map[string][2]float64{}}
}

// vertexView is what the progress shows of a vertex.
type vertexView struct {
	name            string
	parallelism     int
	in, out         int64
	inRate, outRate float64
	level           string // back pressure: ok, low, high; "" unknown
	ratio, busy     float64
}

// observe takes a new look at the job and fetches the back pressure and
// checkpoint figures the REST API has for it.
func (p *progress) observe(ctx context.Context, client *cluster.RESTClient, d cluster.JobDetails) ([]vertexView, *cluster.CheckpointStatisticsJSON) {
	now := time.Now()
	if dt := now.Sub(p.prevAt).Seconds(); !p.prevAt.IsZero() && dt >= 0.5 && p.prev.Attempt == d.Attempt {
		for i, v := range d.Vertices {
			if i < len(p.prev.Vertices) {
				pv := p.prev.Vertices[i].Metrics
				p.rates[v.ID] = [2]float64{float64(v.Metrics.ReadRecords-pv.ReadRecords) / dt, float64(v.Metrics.WriteRecords-pv.WriteRecords) / dt}
			}
		}
		p.prev, p.prevAt = d, now
	} else if p.prevAt.IsZero() || p.prev.Attempt != d.Attempt {
		p.prev, p.prevAt = d, now
	}
	views := make([]vertexView, len(d.Vertices))
	for i, v := range d.Vertices {
		r := p.rates[v.ID]
		views[i] = vertexView{name: v.Name, parallelism: v.Parallelism, in: v.Metrics.ReadRecords, out: v.Metrics.WriteRecords,
			inRate: max(0, r[0]), outRate: max(0, r[1])}
		if d.State == cluster.JobRunning {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			bp, err := client.BackPressure(rctx, d.ID, v.ID)
			cancel()
			if err == nil && len(bp.Subtasks) > 0 {
				views[i].level = bp.Level
				for _, s := range bp.Subtasks {
					views[i].ratio = max(views[i].ratio, s.Ratio)
					views[i].busy += s.BusyRatio / float64(len(bp.Subtasks))
				}
			}
		}
	}
	var latest *cluster.CheckpointStatisticsJSON
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	cs, err := client.Checkpointing(rctx, d.ID)
	cancel()
	if err == nil {
		latest = cs.Latest.Completed
	}
	return views, latest
}

// show writes the job's progress.
func (p *progress) show(d cluster.JobDetails, views []vertexView, latest *cluster.CheckpointStatisticsJSON) {
	head := progressLine(d)
	if latest != nil && latest.ID > 0 {
		head += fmt.Sprintf(", latest %d", latest.ID)
		if latest.EndToEndDuration > 0 || latest.StateSize > 0 {
			head += fmt.Sprintf(" (%d ms, %s)", latest.EndToEndDuration, byteSize(latest.StateSize))
		}
	}
	if !p.tty {
		var b strings.Builder
		b.WriteString(head)
		for _, v := range views {
			fmt.Fprintf(&b, " | %s: in %d (%.0f/s) out %d (%.0f/s)", v.name, v.in, v.inRate, v.out, v.outRate)
			if v.level != "" {
				fmt.Fprintf(&b, " backpressure %s", v.level)
			}
		}
		fmt.Fprintln(p.w, b.String())
		return
	}
	lines := strings.Split(head, "\n")
	for _, v := range views {
		line := fmt.Sprintf("  %-32s p=%-3d in %10.0f/s  out %10.0f/s", truncate(v.name, 32), v.parallelism, v.inRate, v.outRate)
		if v.level != "" {
			line += fmt.Sprintf("  backpressure %-4s %3.0f%%  busy %3.0f%%", v.level, v.ratio*100, v.busy*100)
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF", p.drawn) // to the start of the first line drawn
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K")
		b.WriteString(l)
		b.WriteString("\n")
	}
	for i := len(lines); i < p.drawn; i++ {
		b.WriteString("\x1b[2K\n")
	}
	p.drawn = max(len(lines), p.drawn)
	io.WriteString(p.w, b.String())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
