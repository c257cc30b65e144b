//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weirproject/weir/internal/cluster"
)

// The dashboard test drives Debian's chromium, headless, through the
// DevTools protocol (chromedp) against a JobManager and two TaskManager
// processes that run a streaming WordCount: it reads the pages as a user
// sees them and uses the page's forms and buttons.

// chromiumPath finds the browser, or skips the test (fails it with
// WEIR_REQUIRE_SYSTEMS=1; test.sh installs Debian's chromium).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WEIR_REQUIRE_SYSTEMS") == "1" {
		t.Fatal("chromium is not installed (test.sh installs Debian's chromium); WEIR_REQUIRE_SYSTEMS=1 requires it")
	}
	t.Skip("chromium is not installed (apt-get install chromium)")
	return ""
}

// testArtifacts is where the test saves its screenshots:
// $WEIR_TEST_ARTIFACTS, or a temporary directory.
func testArtifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WEIR_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// restServes reports whether the JobManager serves GET path (with the
// token), that is, answers other than 404: the per-vertex endpoints
// (backpressure, watermarks) come with the task metrics, and the test
// checks what the dashboard shows of them only where they are served.
func restServes(t *testing.T, rest, token, path string) bool {
	t.Helper()
	status, _ := restGet(t, rest+path, token)
	return status != http.StatusNotFound
}

// dagVertex is a vertex box of the job page's graph, as the page's data
// attributes describe it.
type dagVertex struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	Parallelism  int     `json:"parallelism"`
	RateIn       float64 `json:"rateIn"`
	RateOut      float64 `json:"rateOut"`
	Backpressure string  `json:"backpressure"`
	Text         string  `json:"text"`
}

const dagVerticesJS = `Array.from(document.querySelectorAll('#job-dag .dag-vertex')).map((g) => ({
	id: g.dataset.vertexId, name: g.dataset.name, parallelism: Number(g.dataset.parallelism),
	rateIn: Number(g.dataset.rateIn || 0), rateOut: Number(g.dataset.rateOut || 0),
	backpressure: g.dataset.backpressure, text: g.textContent}))`

func TestDashboardInBrowser(t *testing.T) { dashboardInBrowser(t, "dashboard-token-0123456789", true) }

// TestDashboardInBrowserWithoutToken: the page works against a default
// JobManager (no token) behind the browser checks of browserguard.go:
// it lists jobs, submits a program, takes a savepoint and cancels.
func TestDashboardInBrowserWithoutToken(t *testing.T) { dashboardInBrowser(t, "", false) }

// dashboardInBrowser drives the dashboard against a cluster with token
// (none if empty); full also looks at every page's details.
func dashboardInBrowser(t *testing.T, token string, full bool) {
	needGo(t)
	browser := chromiumPath(t)
	t.Parallel()
	var env []string
	if token != "" {
		env = []string{"WEIR_TOKEN=" + token}
	}
	// Working directories under the test's own: the processes are
	// killed at the end and could not remove temporary ones, which hold
	// the uploaded WordCount binary.
	_, rpc, rest := startJobManager(t, env, "-D", "heartbeat.interval=100ms", "-D", "heartbeat.timeout=2s",
		"-D", "process.working-dir="+t.TempDir())
	for i := range 2 {
		startProc(t, fmt.Sprintf("taskmanager %d", i+1), env, "taskmanager", "--jobmanager", rpc, "--slots", "2",
			"-D", "process.working-dir="+t.TempDir())
	}
	client, err := cluster.NewRESTClient(rest, cluster.Security{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	waitOverview(t, client, 10*time.Second, "2 taskmanagers", func(o cluster.Overview) bool { return o.TaskManagers == 2 })
	wc := buildWordCount(t)
	start := time.Now() // after the builds, which other tests share
	artifacts := testArtifacts(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(wordText(20000, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(rest, "http://")
	streaming := func(out string, rate int) []string {
		return []string{"--mode", "streaming", "--input", input, "--output", filepath.Join(dir, out), "--rate", strconv.Itoa(rate)}
	}
	// The checkpoint settings as the program's own flags, and its code
	// retains checkpoints on cancellation in streaming mode: the
	// JobManager gets them with the job graph (GET
	// /jobs/{id}/checkpoints/config), and the page shows them.
	run := []string{"run", "-d", "--jobmanager", host, "-p", "2", wc}
	if token != "" {
		run = append(run[:4:4], append([]string{"--token", token}, run[4:]...)...)
	}
	stdout, stderr, code := weir(t, append(run, append(streaming("out1", 200),
		"--checkpoint-interval", "300ms", "--checkpoint-dir", "file://"+filepath.Join(dir, "chk"))...)...)
	if code != exitOK {
		t.Fatalf("weir run -d: exit %d\n%s\n%s", code, stdout, stderr)
	}
	id := jobID(t, stdout)
	job := waitJob(t, client, id, 30*time.Second, "records flowing", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && len(d.Vertices) > 0 && d.Vertices[0].Metrics.WriteRecords > 0
	})

	// The browser: its whole run is bounded, so that a page that never
	// shows what the test waits for fails the test in time.
	prefix := ""
	if token == "" {
		prefix = "notoken"
	}
	b, ctx := openBrowser(t, browser, dir, artifacts, prefix, 75*time.Second)
	bctx, do, waitJS, eval := b.ctx, b.do, b.waitJS, b.eval

	// The page asks for the cluster's token once, then the overview lists
	// the running job.
	if token != "" {
		do("open the dashboard", chromedp.Navigate(rest+"/"), chromedp.WaitVisible(chromedp.CSS("#token-input")),
			chromedp.SendKeys(chromedp.CSS("#token-input"), token), chromedp.Click(chromedp.CSS("#token-submit")))
	} else {
		do("open the dashboard", chromedp.Navigate(rest+"/"))
	}
	waitJS("running job on the overview", fmt.Sprintf(`document.querySelector('#running-jobs tr[data-job-id="%s"][data-state="RUNNING"]')`, id), 10*time.Second)
	waitJS("TaskManager count", `document.getElementById('ov-taskmanagers').dataset.value === '2'`, 5*time.Second)
	if !full {
		if hidden := browserValue[bool](b, `document.getElementById('token-overlay').hidden`); !hidden {
			t.Error("the page asks for a token that the cluster does not have")
		}
	}
	shot(t, bctx, artifacts, prefix+"overview")

	if full {
		// The job page draws every vertex of the job's graph with its name
		// and parallelism.
		do("open the job page", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#running-jobs tr[data-job-id="%s"] a`, id))))
		waitJS("the job graph", fmt.Sprintf(`document.querySelectorAll('#job-dag .dag-vertex').length === %d`, len(job.Vertices)), 10*time.Second)
		vertices, err := chromedp.Run(bctx, chromedp.Evaluate[[]dagVertex](dagVerticesJS))
		if err != nil {
			t.Fatal(err)
		}
		if len(vertices) != len(job.Vertices) {
			t.Fatalf("the graph has %d vertices, the job %d", len(vertices), len(job.Vertices))
		}
		for i, v := range job.Vertices {
			g := vertices[i]
			if g.ID != v.ID || g.Name != v.Name || g.Parallelism != v.Parallelism ||
				!strings.Contains(g.Text, "Parallelism: "+strconv.Itoa(v.Parallelism)) || !strings.Contains(g.Text, v.Name[:min(len(v.Name), 20)]) {
				t.Errorf("graph vertex %d = %+v, the job's %s %q parallelism %d", i, g, v.ID, v.Name, v.Parallelism)
			}
		}
		edges, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#job-dag path.edge').length`))
		if edges < len(job.Vertices)-1 {
			t.Errorf("the graph has %d edges between %d vertices", edges, len(job.Vertices))
		}

		// Rates and the checkpoint count go up between two looks.
		waitJS("rates", `Array.from(document.querySelectorAll('#job-dag .dag-vertex')).every((g) => Number(g.dataset.rateIn) + Number(g.dataset.rateOut) > 0)`, 10*time.Second)
		count := func() int {
			s, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('checkpoint-count').dataset.count`))
			if err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		records := func() int64 {
			n, err := chromedp.Run(bctx, chromedp.Evaluate[int64](`Number(document.querySelector('#vertex-table tbody tr td:nth-child(6)').textContent.replace(/,/g, ''))`))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		// The page's own refreshes are the signal: it must come to show
		// more checkpoints (interval 300 ms) and more records out of the
		// source than at the first look.
		firstCount, firstRecords := count(), records()
		waitJS("the checkpoint count and the source's records out going up", fmt.Sprintf(`Number(document.getElementById('checkpoint-count').dataset.count) > %d &&
			Number(document.querySelector('#vertex-table tbody tr td:nth-child(6)').textContent.replace(/,/g, '')) > %d`, firstCount, firstRecords), 10*time.Second)
		look, err := chromedp.Run(bctx, chromedp.Evaluate[[]dagVertex](dagVerticesJS))
		if err != nil {
			t.Fatal(err)
		}
		secondCount, secondRecords := count(), records()
		t.Logf("first look: %d checkpoints, %d records out of the source; second: %d, %d; rates %+v", firstCount, firstRecords, secondCount, secondRecords, look)
		if secondCount <= firstCount {
			t.Errorf("the checkpoint count went from %d to %d (interval 300 ms)", firstCount, secondCount)
		}
		if secondRecords <= firstRecords {
			t.Errorf("the source's records out went from %d to %d", firstRecords, secondRecords)
		}
		for _, v := range look {
			if v.RateIn+v.RateOut <= 0 || !strings.Contains(v.Text, "/s") {
				t.Errorf("vertex %s shows no rate: %+v", v.Name, v)
			}
		}
		if restServes(t, rest, token, "/jobs/"+id+"/vertices/"+job.Vertices[0].ID+"/backpressure") {
			waitJS("backpressure colours", `Array.from(document.querySelectorAll('#job-dag .dag-vertex')).every((g) => ['ok', 'low', 'high'].includes(g.dataset.backpressure))`, 10*time.Second)
		} else {
			t.Log("GET /jobs/{id}/vertices/{vid}/backpressure answers 404 here: the backpressure colours are not checked")
		}
		shot(t, bctx, artifacts, "job")
	} else {
		do("open the job page", chromedp.Navigate(rest+"/#/job/"+id))
	}

	// A savepoint triggered from the page completes.
	savepoints := filepath.Join(dir, "savepoints")
	do("trigger a savepoint", chromedp.SetValue(chromedp.CSS("#savepoint-dir"), savepoints),
		chromedp.WaitEnabled(chromedp.CSS("#savepoint-btn")), chromedp.Click(chromedp.CSS("#savepoint-btn")))
	waitJS("completed savepoint", `document.getElementById('action-status').dataset.state === 'completed'`, 20*time.Second)
	location, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('action-status').dataset.location`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(location, savepoints+"/") {
		t.Errorf("the savepoint went to %q, not under %s", location, savepoints)
	} else if _, err := os.Stat(filepath.Join(location, "_metadata")); err != nil {
		t.Errorf("the savepoint has no _metadata: %v", err)
	}

	if full {
		// A vertex's page lists its subtasks.
		do("open a vertex", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#vertex-table tr[data-vertex-id="%s"] a`, job.Vertices[0].ID))))
		waitJS("subtasks", fmt.Sprintf(`document.querySelectorAll('#subtask-table tr[data-subtask]').length === %d`, job.Vertices[0].Parallelism), 10*time.Second)
		if restServes(t, rest, token, "/jobs/"+id+"/vertices/"+job.Vertices[0].ID+"/watermarks") {
			waitJS("watermarks", `document.getElementById('watermark-table')`, 10*time.Second)
		}
		shot(t, bctx, artifacts, "vertex")
		do("open the checkpoints", chromedp.Navigate(rest+"/#/job/"+id+"/checkpoints"))
		waitJS("checkpoint configuration", `document.getElementById('checkpoint-config-table') && document.getElementById('chk-completed')`, 10*time.Second)
		shot(t, bctx, artifacts, "checkpoints")
		shown := browserValue[map[string]string](b, `Object.fromEntries(Array.from(document.querySelectorAll('#checkpoint-config-table tr.checkpoint-config-row')).map((r) => [r.dataset.option, r.cells[0].textContent + ': ' + r.cells[1].textContent]))`)
		for option, want := range map[string]string{
			"mode":               "Checkpointing Mode: Exactly Once",
			"interval":           "Interval: 300ms",
			"externalization":    "Persist Checkpoints Externally: Enabled (retain on cancellation)",
			"checkpoint_storage": "Checkpoint Storage: FileSystemCheckpointStorage",
		} {
			if shown[option] != want {
				t.Errorf("the checkpoint configuration shows %q for %s, want %q (all: %v)", shown[option], option, want, shown)
			}
		}
		checkpointDetailsInBrowser(t, b, job)
		operatorMetricsInBrowser(t, b, rest, id, job)
		do("open the TaskManagers", chromedp.Navigate(rest+"/#/taskmanagers"))
		waitJS("TaskManagers", `document.querySelectorAll('#tm-table tr.tm-row').length === 2`, 10*time.Second)
		// The data ports the page shows are the JobManager's (Flink's
		// dataPort, -1 shown as –).
		ports := browserValue[map[string]string](b, `Object.fromEntries(Array.from(document.querySelectorAll('#tm-table tr.tm-row')).map((r) => [r.dataset.tmId, r.cells[2].textContent]))`)
		tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		tms, err := client.TaskManagers(tctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, tm := range tms {
			want := "–"
			if tm.DataPort > 0 {
				want = strconv.Itoa(tm.DataPort)
			}
			if ports[tm.ID] != want {
				t.Errorf("the TaskManagers page shows data port %q for %s, want %q", ports[tm.ID], tm.ID, want)
			}
		}
	}

	// A job submitted from the page, with the program uploaded, runs.
	do("upload the program", chromedp.Navigate(rest+"/#/submit"), chromedp.WaitVisible(chromedp.CSS("#jar-file")),
		chromedp.SetUploadFiles(chromedp.CSS("#jar-file"), []string{wc}), chromedp.Click(chromedp.CSS("#upload-btn")))
	waitJS("uploaded program", `document.getElementById('upload-status').dataset.state === 'completed' && document.getElementById('run-jar').value`, 30*time.Second)
	args := strings.Join(append(streaming("out2", 100), "--checkpoint-interval", "300ms", "--checkpoint-dir", "file://"+filepath.Join(dir, "chk")), " ")
	do("submit the job", chromedp.SetValue(chromedp.CSS("#run-args"), args), chromedp.SetValue(chromedp.CSS("#run-parallelism"), "1"))
	shot(t, bctx, artifacts, prefix+"submit")
	do("submit the job", chromedp.Click(chromedp.CSS("#run-btn")))
	waitJS("the submitted job's page", `location.hash.startsWith('#/job/') && document.getElementById('job-state').dataset.state === 'RUNNING'`, 30*time.Second)
	submitted, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('job-id').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if submitted == id {
		t.Fatalf("the page shows the first job, not the submitted one")
	}
	waitJob(t, client, submitted, 30*time.Second, "records in the job submitted from the page", func(d cluster.JobDetails) bool {
		return d.State == cluster.JobRunning && d.Vertices[0].Parallelism == 1 && d.Vertices[0].Metrics.WriteRecords > 0
	})

	// Cancel from the page.
	eval("confirm without a dialog", `window.weirNoConfirm = true`)
	do("cancel the job", chromedp.WaitEnabled(chromedp.CSS("#cancel-btn")), chromedp.Click(chromedp.CSS("#cancel-btn")))
	waitJob(t, client, submitted, 20*time.Second, "cancellation from the page", func(d cluster.JobDetails) bool { return d.State == cluster.JobCanceled })
	waitJS("the cancelled state on the page", `document.getElementById('job-state').dataset.state === 'CANCELED'`, 10*time.Second)

	// Stop the first job with a savepoint from its page.
	stops := filepath.Join(dir, "stop-savepoints")
	do("open the first job", chromedp.Navigate(rest+"/#/job/"+id))
	do("stop with a savepoint", chromedp.WaitEnabled(chromedp.CSS("#stop-btn")), chromedp.SetValue(chromedp.CSS("#savepoint-dir"), stops),
		chromedp.Click(chromedp.CSS("#stop-btn")))
	waitJS("completed stop-with-savepoint", `document.getElementById('action-status').dataset.state === 'completed'`, 20*time.Second)
	if location, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('action-status').dataset.location`)); err != nil || !strings.HasPrefix(location, stops+"/") {
		t.Errorf("the stop's savepoint went to %q (%v), not under %s", location, err, stops)
	}
	waitJob(t, client, id, 20*time.Second, "FINISHED after the stop from the page", func(d cluster.JobDetails) bool { return d.State == cluster.JobFinished })
	waitJS("the finished state on the page", `document.getElementById('job-state').dataset.state === 'FINISHED'`, 10*time.Second)
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the browser test ran out of time")
	}
	t.Logf("dashboard test took %v; screenshots in %s", time.Since(start).Round(time.Millisecond), artifacts)
}

// shot saves a screenshot of the page as name.png under dir.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "dashboard-"+name+".png"), png, 0o644); err != nil {
		t.Error(err)
	}
}

// checkpointDetailsInBrowser expands the latest completed checkpoint of
// the job's Checkpoints tab (open in b): every vertex of the job is listed
// with all its subtasks acknowledged, and a click on a vertex lists its
// subtasks, each with the time of its acknowledgement.
func checkpointDetailsInBrowser(t *testing.T, b *browserPage, job cluster.JobDetails) {
	t.Helper()
	latest := `document.querySelector('#checkpoint-history-table tr.checkpoint-row[data-status="COMPLETED"][data-savepoint="false"]')`
	b.waitJS("a completed checkpoint in the history", latest, 10*time.Second)
	cid := browserValue[string](b, latest+`.dataset.checkpointId`)
	// Clicked through the DOM, not at the row's place on the screen: the
	// rows move down as new checkpoints come in.
	b.eval("expand checkpoint "+cid, `document.querySelector('#checkpoint-history-table tr.checkpoint-row[data-checkpoint-id="`+cid+`"]').click()`)
	details := `tr.checkpoint-details[data-checkpoint-details="` + cid + `"]`
	b.waitJS("checkpoint "+cid+"'s vertices", fmt.Sprintf(`document.querySelectorAll('%s tr.checkpoint-task-row').length === %d`, details, len(job.Vertices)), 10*time.Second)
	type taskRow struct {
		Vertex, Text       string
		Acknowledged, Subs string
		Acked              string
	}
	rows := browserValue[[]taskRow](b, `Array.from(document.querySelectorAll('`+details+` tr.checkpoint-task-row')).map((r) => ({
		vertex: r.dataset.taskVertex, text: r.textContent, acknowledged: r.dataset.acknowledged, subs: r.dataset.subtasks,
		acked: r.querySelector('.chk-acked').textContent}))`)
	for i, v := range job.Vertices {
		r := rows[i]
		p := strconv.Itoa(v.Parallelism)
		if r.Vertex != v.ID || !strings.Contains(r.Text, v.Name) || r.Acknowledged != p || r.Subs != p || r.Acked != p+"/"+p {
			t.Errorf("checkpoint %s, vertex row %d = %+v; want vertex %s %q with %s of %s subtasks acknowledged", cid, i, r, v.ID, v.Name, p, p)
		}
	}
	v := job.Vertices[len(job.Vertices)-1]
	b.eval("open vertex "+v.Name+" of checkpoint "+cid, `document.querySelector('`+details+` tr.checkpoint-task-row[data-task-vertex="`+v.ID+`"] td').click()`)
	subtasks := details + ` tr.checkpoint-subtasks[data-subtasks-of="` + v.ID + `"] tr.checkpoint-subtask-row`
	b.waitJS("vertex "+v.Name+"'s subtasks in checkpoint "+cid, fmt.Sprintf(`document.querySelectorAll('%s').length === %d`, subtasks, v.Parallelism), 10*time.Second)
	type subRow struct {
		Index, Status, Ack, AckText string
	}
	subs := browserValue[[]subRow](b, `Array.from(document.querySelectorAll('`+subtasks+`')).map((r) => ({
		index: r.dataset.index, status: r.dataset.status, ack: r.dataset.ack, ackText: r.querySelector('.chk-ack').textContent}))`)
	for i, s := range subs {
		if s.Index != strconv.Itoa(i) || s.Status != "completed" || s.Ack == "" || len(s.AckText) < len("2006-01-02 15:04:05") {
			t.Errorf("checkpoint %s, vertex %s, subtask row %d = %+v; want subtask %d completed with its ack time", cid, v.Name, i, s, i)
		}
	}
	b.waitJS("the subtask summary", `document.querySelector('`+details+` tr.checkpoint-subtasks').textContent.includes('Sync duration')`, 5*time.Second)
	b.eval("scroll to checkpoint "+cid, `document.querySelector('#checkpoint-history-table tr.checkpoint-row[data-checkpoint-id="`+cid+`"]').scrollIntoView({block: 'start'}); window.scrollBy(0, -70)`)
	shot(t, b.ctx, b.artifacts, "checkpoint-details")
}

// operatorMetricsInBrowser opens each vertex's page of the running
// WordCount: the counting vertex lists its keyed state's entries
// ("stateEntries") for each of its subtasks, as the REST API reports them.
func operatorMetricsInBrowser(t *testing.T, b *browserPage, rest, id string, job cluster.JobDetails) {
	t.Helper()
	found := false
	for _, v := range job.Vertices {
		b.do("open vertex "+v.Name, chromedp.Navigate(rest+"/#/job/"+id+"/vertex/"+v.ID))
		b.waitJS("operator metrics of "+v.Name, `document.getElementById('operator-metric-table')`, 10*time.Second)
		n := browserValue[int](b, `Array.from(document.querySelectorAll('#operator-metric-table tr.operator-metric-row')).filter((r) => r.dataset.metricId.endsWith('.stateEntries')).length`)
		if n == 0 {
			continue
		}
		found = true
		b.waitJS("state entries of every subtask of "+v.Name, fmt.Sprintf(`(() => { const rs = Array.from(document.querySelectorAll('#operator-metric-table tr.operator-metric-row')).filter((r) => r.dataset.metricId.endsWith('.stateEntries'));
			return rs.length === %d && rs.every((r) => Number(r.dataset.value) > 0 && r.textContent.includes('stateEntries')); })()`, v.Parallelism), 10*time.Second)
		b.eval("scroll to the operator metrics", `document.getElementById('operator-metrics').scrollIntoView({block: 'center'})`)
		shot(t, b.ctx, b.artifacts, "operator-metrics")
	}
	if !found {
		t.Errorf("no vertex page of the WordCount lists a stateEntries gauge")
	}
}
