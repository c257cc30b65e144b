//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"github.com/weirproject/weir/internal/cluster"
)

// TestDashboardBackpressureInBrowser runs the slow-sink job (a source as
// fast as it can, a sink that takes 2000 records a second, in different
// slot sharing groups, on two TaskManagers of one slot each) and checks
// in chromium that the job page shows what the REST API measures: the
// source back pressured ("high", backPressuredTimeMsPerSecond > 500), the
// sink busy. The sink paces itself by spinning on the clock (--spin), so
// that its busy time is CPU: the vertex page's flame graph of the sink
// has samples, among them slowWriter's, and zooms. The sink's
// TaskManager page downloads a heap profile of the job's worker with the
// token, which pprof reads. Once the job is cancelled, the flame graph
// is refused (409) and the page says so.
func TestDashboardBackpressureInBrowser(t *testing.T) {
	needGo(t)
	chrome := chromiumPath(t)
	t.Parallel()
	const token = "backpressure-token"
	env := []string{"WEIR_TOKEN=" + token}
	_, _, rest, _ := startCluster(t, env, []int{1, 1}, "heartbeat.interval=100ms", "heartbeat.timeout=2s")
	client, err := cluster.NewRESTClient(rest, cluster.Security{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	program := buildSlowSink(t)
	start := time.Now() // after the build, which other tests share
	host := strings.TrimPrefix(rest, "http://")
	stdout, stderr, code := weir(t, "run", "-d", "--jobmanager", host, "--token", token, "-p", "1", program, "--rate", "2000", "--spin")
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	defer client.CancelJob(context.Background(), id)
	job := waitJob(t, client, id, 30*time.Second, "records at the sink", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && len(d.Vertices) == 2 && d.Vertices[1].Metrics.ReadRecords > 0
	})
	source, sink := job.Vertices[0], job.Vertices[1]
	sinkTM := sink.Subtasks[0].TaskManager

	artifacts := testArtifacts(t)
	dir := t.TempDir()
	b, ctx := openBrowser(t, chrome, dir, artifacts, "backpressure", 60*time.Second)
	downloads := filepath.Join(dir, "downloads")
	b.do("open the job page", chromedp.Navigate(rest+"/#/job/"+id), chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), token), chromedp.Click(chromedp.CSS("#token-submit")),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
			return err
		}))

	// The graph: the source's box red and labelled HIGH, the sink's busy,
	// as the REST API measures them.
	vertex := func(vid string) string { return fmt.Sprintf(`document.getElementById('vertex-%s')`, vid) }
	b.waitJS("the source back pressured and the sink busy on the graph", fmt.Sprintf(
		`%[1]s && %[1]s.dataset.backpressure === 'high' && %[1]s.querySelector('.v-bp').textContent.startsWith('Backpressure: HIGH') && Number(%[1]s.dataset.backpressured) > 50 &&
		%[2]s && %[2]s.dataset.backpressure === 'ok' && Number(%[2]s.dataset.busy) > 50 && %[2]s.querySelector('.v-busy').textContent.includes('%%') &&
		Number(%[2]s.dataset.rateIn) > 0`,
		vertex(source.ID), vertex(sink.ID)), 20*time.Second)
	shown := browserValue[[]string](b, fmt.Sprintf(`[%s.dataset.backpressured, %s.dataset.busy, document.querySelector('#vertex-table tr[data-vertex-id="%s"]').textContent]`,
		vertex(source.ID), vertex(sink.ID), source.ID))
	srcBP, err := client.BackPressure(context.Background(), id, source.ID)
	if err != nil {
		t.Fatal(err)
	}
	sinkBP, err := client.BackPressure(context.Background(), id, sink.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page: source backpressured %s%%, sink busy %s%%; REST: source %+v, sink %+v", shown[0], shown[1], srcBP, sinkBP)
	if srcBP.Level != "high" || srcBP.Subtasks[0].Ratio <= 0.5 || sinkBP.Level != "ok" || sinkBP.Subtasks[0].BusyRatio <= 0.5 {
		t.Errorf("REST: source %+v, sink %+v: want the source high (ratio > 0.5) and the sink ok and busy", srcBP, sinkBP)
	}
	if !strings.Contains(shown[2], "high") {
		t.Errorf("the vertex table's source row %q does not say high", shown[2])
	}
	shot(t, b.ctx, artifacts, "backpressure")

	// The sink's flame graph: its CPU goes to slowWriter.
	b.do("open the sink", chromedp.Navigate(rest+"/#/job/"+id+"/vertex/"+sink.ID), chromedp.WaitVisible(chromedp.CSS("#flame-btn")),
		chromedp.SetValue(chromedp.CSS("#flame-seconds"), "2"), chromedp.Click(chromedp.CSS("#flame-btn")))
	// A refresh may re-render the page after the click, with a fresh
	// control that never sent its request: set it and click it again then
	// (as for the cancelled job below).
	b.waitJS("sampling in progress", `(() => { const s = document.getElementById('flame-status'), btn = document.getElementById('flame-btn');
		if (s && s.dataset.state === '' && btn && !btn.disabled) { document.getElementById('flame-seconds').value = '2'; btn.click(); }
		return s && s.dataset.state === 'in-progress' && btn.disabled; })()`, 10*time.Second)
	b.waitJS("the flame graph", `document.getElementById('flame-status').dataset.state !== 'in-progress' && document.getElementById('flame-btn').disabled === false`, 30*time.Second)
	status := browserValue[string](b, `document.getElementById('flame-status').textContent`)
	samples := browserValue[int](b, `Number(document.getElementById('flame-status').dataset.samples || 0)`)
	frames := browserValue[[]string](b, `Array.from(document.querySelectorAll('#flame-svg .flame-node')).map((g) => g.dataset.name)`)
	t.Logf("flame graph: %q, %d frames", status, len(frames))
	if samples <= 0 {
		t.Fatalf("the flame graph has %d samples: %s", samples, status)
	}
	writer := ""
	for _, f := range frames {
		if strings.Contains(f, "slowWriter") {
			writer = f
			break
		}
	}
	if writer == "" {
		t.Fatalf("no slowWriter frame among the flame graph's %d frames: %v", len(frames), frames)
	}
	b.eval("show the flame graph", `document.getElementById('flame-card').scrollIntoView()`)
	shot(t, b.ctx, artifacts, "flamegraph")

	// Zoom into slowWriter's frame: it spans the graph; reset zooms out.
	width := `Number(document.getElementById('flame-svg').getAttribute('width'))`
	b.eval("zoom into slowWriter", fmt.Sprintf(`document.querySelector('#flame-svg .flame-node[data-name=%q]').dispatchEvent(new MouseEvent('click', {bubbles: true}))`, writer))
	b.waitJS("the zoomed graph", fmt.Sprintf(`document.getElementById('flame-svg').dataset.focus === %q && !document.getElementById('flame-reset').disabled &&
		Number(document.querySelector('#flame-svg .flame-node:not(.ancestor)[data-name=%q] rect').getAttribute('width')) >= %s - 1`, writer, writer, width), 5*time.Second)
	b.do("reset the zoom", chromedp.Click(chromedp.CSS("#flame-reset")))
	b.waitJS("the whole graph again", `document.getElementById('flame-svg').dataset.focus === 'root' && document.getElementById('flame-reset').disabled`, 5*time.Second)
	// The sink's TaskManager: a heap profile of the job's worker, fetched
	// with the token and saved as a file that pprof reads.
	b.do("open the sink's TaskManager", chromedp.Navigate(rest+"/#/taskmanager/"+sinkTM))
	b.waitJS("the job to profile", fmt.Sprintf(`document.getElementById('profile-job').value === '%s'`, id), 10*time.Second)
	b.do("download a heap profile", chromedp.Click(chromedp.CSS(`#tm-profiles button[data-profile="heap"]`)))
	b.waitJS("the heap profile", `document.getElementById('profile-status').dataset.state === 'completed'`, 15*time.Second)
	name := browserValue[string](b, `document.getElementById('profile-status').dataset.filename`)
	if want := fmt.Sprintf("heap-%s-%s.pb.gz", id, strings.ReplaceAll(sinkTM, ":", "_")); name != want {
		t.Errorf("the profile was saved as %q, want %q", name, want)
	}
	shot(t, b.ctx, artifacts, "taskmanager-profiles")
	var heap *profile.Profile
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if f, err := os.Open(filepath.Join(downloads, name)); err == nil {
			heap, err = profile.Parse(f)
			f.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(downloads)
			t.Fatalf("no readable %s among the downloads %v", name, entries)
		}
	}
	if len(heap.Sample) == 0 || len(heap.SampleType) == 0 || !strings.Contains(heap.SampleType[len(heap.SampleType)-1].Type, "space") {
		t.Errorf("the heap profile has %d samples of %v", len(heap.Sample), heap.SampleType)
	}

	// A flame graph needs a running job: 409 once it is cancelled.
	if err := client.CancelJob(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitJob(t, client, id, 20*time.Second, "cancellation", func(d cluster.JobDetails) bool { return d.State == cluster.JobCanceled })
	b.do("open the cancelled sink", chromedp.Navigate(rest+"/#/job/"+id+"/vertex/"+sink.ID), chromedp.WaitVisible(chromedp.CSS("#flame-btn")),
		chromedp.Click(chromedp.CSS("#flame-btn")))
	// A refresh may re-render the page after the click, with a fresh
	// control that never sent its request: click it again then.
	b.waitJS("the flame graph refused", `(() => { const s = document.getElementById('flame-status'), btn = document.getElementById('flame-btn');
		if (s && s.dataset.state === '' && btn && !btn.disabled) btn.click();
		return s && s.dataset.state === 'failed' && s.textContent.includes('409'); })()`, 10*time.Second)
	if svg := browserValue[bool](b, `!!document.getElementById('flame-svg')`); svg {
		t.Error("a flame graph is drawn for a cancelled job")
	}

	if ctx.Err() != nil {
		t.Fatal("the browser test ran out of time")
	}
	t.Logf("backpressure dashboard test took %v; screenshots in %s", time.Since(start).Round(time.Millisecond), artifacts)
}
