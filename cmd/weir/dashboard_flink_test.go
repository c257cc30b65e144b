//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weirproject/weir/internal/cluster"
)

// TestDashboardFlinkShapes serves the dashboard beside a scripted API
// that answers with the JSON Flink's REST API sends for the per-vertex
// endpoints (JobVertexDetailsInfo, JobVertexBackPressureInfo, watermarks),
// checkpoint statistics with history and details, exceptions and
// TaskManager metrics, and checks what the page shows of them: the
// dashboard reads those shapes whichever JobManager sends them.
func TestDashboardFlinkShapes(t *testing.T) {
	browser := chromiumPath(t)
	t.Parallel()
	const jid = "0123456789abcdef0123456789abcdef"
	start := time.Now()
	// The records counters grow with time, as a running job's do.
	var looks atomic.Int64
	records := func() int64 { looks.Add(1); return time.Since(start).Milliseconds() * 10 }
	// A diamond: A feeds B and C, B feeds C; C's layer is 2.
	vertices := []struct{ id, name, level string }{{"a", "Source: A", "high"}, {"b", "Map B", "low"}, {"c", "Sink: C", "ok"}}
	routes := map[string]func(r *http.Request) any{
		"/config": func(*http.Request) any { return map[string]any{"flink-version": "1.20.0"} },
		"/overview": func(*http.Request) any {
			return map[string]any{"taskmanagers": 1, "slots-total": 4, "slots-available": 1, "jobs-running": 1, "leader": true}
		},
		"/jobs/overview": func(*http.Request) any {
			return map[string]any{"jobs": []any{map[string]any{"jid": jid, "name": "diamond", "state": "RUNNING", "start-time": start.UnixMilli(),
				"end-time": -1, "duration": 1000, "last-modification": start.UnixMilli(), "tasks": map[string]int{"running": 5, "total": 5}}}}
		},
		"/jobs/" + jid: func(*http.Request) any {
			n := records()
			var vs []any
			for i, v := range vertices {
				vs = append(vs, map[string]any{"id": v.id, "name": v.name, "parallelism": 2 - i%2, "maxParallelism": 128, "status": "RUNNING",
					"tasks": map[string]int{"RUNNING": 2 - i%2}, "metrics": map[string]any{"read-records": n * int64(i), "write-records": n * int64(2-i),
						"read-bytes": n * 100, "write-bytes": n * 100}})
			}
			return map[string]any{"jid": jid, "name": "diamond", "state": "RUNNING", "start-time": start.UnixMilli(), "end-time": -1,
				"duration": time.Since(start).Milliseconds(), "attempt": 1, "vertices": vs, "checkpoints": map[string]any{"completed": 7}}
		},
		"/jobs/" + jid + "/plan": func(*http.Request) any {
			in := func(ids ...string) []any {
				var out []any
				for i, id := range ids {
					out = append(out, map[string]any{"num": i, "id": id, "ship_strategy": "HASH", "exchange": "pipelined_bounded"})
				}
				return out
			}
			return map[string]any{"plan": map[string]any{"jid": jid, "name": "diamond", "type": "STREAMING", "nodes": []any{
				map[string]any{"id": "a", "parallelism": 2, "operator": "Source: A", "description": "Source: A"},
				map[string]any{"id": "b", "parallelism": 1, "operator": "Map B", "description": "Map B", "inputs": in("a")},
				map[string]any{"id": "c", "parallelism": 2, "operator": "Sink: C", "description": "Sink: C", "inputs": in("a", "b")},
			}}}
		},
		"/jobs/" + jid + "/vertices/a": func(*http.Request) any {
			var subtasks []any
			for i := range 2 {
				subtasks = append(subtasks, map[string]any{"subtask": i, "status": "RUNNING", "attempt": 0, "endpoint": "127.0.0.1:1234",
					"start-time": start.UnixMilli(), "end-time": -1, "duration": 5000, "taskmanager-id": "tm-1",
					"metrics": map[string]any{"read-records": 0, "write-records": 4242 + i, "read-bytes": 0, "write-bytes": 2048,
						"accumulated-backpressured-time": 3000, "accumulated-idle-time": 100, "accumulated-busy-time": 1900}})
			}
			return map[string]any{"id": "a", "name": "Source: A", "parallelism": 2, "maxParallelism": 128, "now": time.Now().UnixMilli(), "subtasks": subtasks}
		},
		"/jobs/" + jid + "/vertices/a/watermarks": func(*http.Request) any {
			return []any{map[string]any{"id": "0.currentOutputWatermark", "value": "1700000000000"}, map[string]any{"id": "1.currentOutputWatermark", "value": "-9223372036854775808"}}
		},
		"/jobs/" + jid + "/checkpoints": func(*http.Request) any {
			cp := func(id int, status string) map[string]any {
				return map[string]any{"className": "completed", "id": id, "status": status, "is_savepoint": false, "trigger_timestamp": start.UnixMilli(),
					"latest_ack_timestamp": start.UnixMilli() + 40, "state_size": 4096, "checkpointed_size": 1024, "end_to_end_duration": 40,
					"alignment_buffered": 0, "processed_data": 0, "persisted_data": 0, "num_subtasks": 5, "num_acknowledged_subtasks": 5,
					"checkpoint_type": "CHECKPOINT", "tasks": map[string]any{}, "external_path": fmt.Sprintf("file:/chk/chk-%d", id), "discarded": false}
			}
			stat := map[string]any{"min": 10, "max": 40, "avg": 25, "p50": 25.0, "p90": 40.0, "p95": 40.0, "p99": 40.0, "p999": 40.0}
			return map[string]any{"counts": map[string]any{"restored": 0, "total": 8, "in_progress": 1, "completed": 7, "failed": 0},
				"summary": map[string]any{"checkpointed_size": stat, "state_size": stat, "end_to_end_duration": stat},
				"latest":  map[string]any{"completed": cp(7, "COMPLETED")},
				"history": []any{cp(8, "IN_PROGRESS"), cp(7, "COMPLETED"), func() map[string]any {
					f := cp(6, "FAILED")
					f["className"], f["failure_message"], f["failure_timestamp"] = "failed", "declined by Sink: C (1/2)", start.UnixMilli()+50
					return f
				}()},
			}
		},
		"/jobs/" + jid + "/checkpoints/details/7": func(*http.Request) any {
			return map[string]any{"id": 7, "status": "COMPLETED", "tasks": map[string]any{"a": map[string]any{"id": 7, "status": "COMPLETED", "state_size": 2048,
				"checkpointed_size": 1024, "num_subtasks": 2, "num_acknowledged_subtasks": 1, "latest_ack_timestamp": start.UnixMilli() + 40, "end_to_end_duration": 40}}}
		},
		"/jobs/" + jid + "/checkpoints/details/7/subtasks/a": func(*http.Request) any {
			stat := map[string]any{"min": 3, "max": 3, "avg": 3, "p50": 3.0}
			ack := start.UnixMilli() + 40
			return map[string]any{"id": 7, "status": "COMPLETED", "num_subtasks": 2, "num_acknowledged_subtasks": 1,
				"summary": map[string]any{"state_size": stat, "checkpointed_size": stat, "end_to_end_duration": stat, "start_delay": stat,
					"checkpoint_duration": map[string]any{"sync": stat, "async": stat},
					"alignment":           map[string]any{"buffered": stat, "processed": stat, "persisted": stat, "duration": stat}},
				"subtasks": []any{
					map[string]any{"index": 0, "status": "completed", "ack_timestamp": ack, "end_to_end_duration": 40, "state_size": 2048, "checkpointed_size": 1024,
						"checkpoint": map[string]any{"sync": 1, "async": 7}, "alignment": map[string]any{"processed": 0, "persisted": 0, "duration": 2},
						"start_delay": 5, "unaligned_checkpoint": false},
					map[string]any{"index": 1, "status": "pending_or_failed"},
				}}
		},
		"/jobs/" + jid + "/vertices/a/metrics": func(r *http.Request) any {
			all := []map[string]any{{"id": "0.numRecordsIn", "value": "10"}, {"id": "0.buffers.inPoolUsage", "value": "0.5"},
				{"id": "0.Source: A.pendingRecords", "value": "4321"}, {"id": "1.sums.v2.stateDiskBytes", "value": "3145728"}}
			get := r.URL.Query().Get("get")
			var out []any
			for _, m := range all {
				if get == "" {
					out = append(out, map[string]any{"id": m["id"]})
				} else if slices.Contains(strings.Split(get, ","), m["id"].(string)) {
					out = append(out, m)
				}
			}
			return out
		},
		"/jobs/" + jid + "/checkpoints/config": func(*http.Request) any {
			return map[string]any{"mode": "exactly_once", "interval": 300, "timeout": 600000}
		},
		"/jobs/" + jid + "/exceptions": func(*http.Request) any {
			return map[string]any{"root-exception": "java.lang.RuntimeException: boom", "timestamp": start.UnixMilli(), "all-exceptions": []any{}, "truncated": false,
				"exceptionHistory": map[string]any{"truncated": false, "entries": []any{map[string]any{"exceptionName": "java.lang.RuntimeException",
					"stacktrace": "java.lang.RuntimeException: boom\n\tat Map.map", "timestamp": start.UnixMilli(), "taskName": "Map B (1/1)",
					"location": "tm-1:1234", "concurrentExceptions": []any{}}}}}
		},
		"/taskmanagers/tm-1": func(*http.Request) any {
			return map[string]any{"id": "tm-1", "path": "127.0.0.1:5000", "slotsNumber": 4, "freeSlots": 1, "hardware": map[string]any{"cpuCores": 8, "physicalMemory": 1 << 34},
				"allocatedSlots": []any{map[string]any{"jobId": jid}}, "timeSinceLastHeartbeat": time.Now().UnixMilli()}
		},
		"/taskmanagers/tm-1/metrics": func(r *http.Request) any {
			if r.URL.Query().Get("get") != "" {
				return []any{map[string]any{"id": "Status.JVM.Memory.Heap.Used", "value": "123456789"}}
			}
			return []any{map[string]any{"id": "Status.JVM.Memory.Heap.Used"}}
		},
	}
	for _, v := range vertices {
		level := v.level
		routes["/jobs/"+jid+"/vertices/"+v.id+"/backpressure"] = func(*http.Request) any {
			return map[string]any{"status": "ok", "backpressureLevel": level, "end-timestamp": time.Now().UnixMilli(),
				"subtasks": []any{map[string]any{"subtask": 0, "backpressureLevel": level, "ratio": 0.75, "idleRatio": 0.05, "busyRatio": 0.2}}}
		}
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := routes[r.URL.Path]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"errors": ["not found: %s"]}`, r.URL.Path)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h(r))
	})
	srv := httptest.NewServer(cluster.WithDashboard(api))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")), chromedp.WindowSize(1400, 900))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	artifacts := testArtifacts(t)
	waitJS := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(10*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			shot(t, bctx, artifacts, "flink-failed")
			page, perr := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('view').textContent`))
			t.Fatalf("no %s (%v); the page shows (%v):\n%s", what, err, perr, page)
		}
	}
	// clickJS clicks the element selector finds once it exists, in the
	// page: the tables re-render on every refresh, and a click through the
	// protocol may resolve a node that is gone by the time it lands
	// ("Could not find node with given id").
	clickJS := func(what, selector string) {
		t.Helper()
		waitJS(what, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, selector))
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// The graph: three vertices in three layers, Flink's backpressure
	// levels as colours, rates from two looks.
	do("open the job page", chromedp.Navigate(srv.URL+"/#/job/"+jid))
	waitJS("backpressure colours", `['high', 'low', 'ok'].every((l, i) => { const g = document.getElementById('vertex-' + 'abc'[i]); return g && g.dataset.backpressure === l; })`)
	waitJS("rates", `Array.from(document.querySelectorAll('#job-dag .dag-vertex')).every((g) => Number(g.dataset.rateIn) + Number(g.dataset.rateOut) > 0)`)
	xs, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`['a', 'b', 'c'].map((id) => document.getElementById('vertex-' + id).transform.baseVal[0].matrix.e)`))
	if err != nil {
		t.Fatal(err)
	}
	if !(xs[0] < xs[1] && xs[1] < xs[2]) {
		t.Errorf("vertex x positions %v: want one layer each, A before B before C", xs)
	}
	edges, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#job-dag path.edge').length`))
	if edges != 3 {
		t.Errorf("%d edges, want 3", edges)
	}
	waitJS("vertex status and bytes", `document.querySelector('#vertex-table tr[data-vertex-id="a"]').textContent.includes('RUNNING') && document.querySelector('#vertex-table tr[data-vertex-id="a"]').textContent.includes('iB')`)

	// A vertex: Flink's subtasks with their metrics, backpressure ratios,
	// watermarks.
	do("open vertex A", chromedp.Navigate(srv.URL+"/#/job/"+jid+"/vertex/a"))
	waitJS("subtasks", `document.querySelectorAll('#subtask-table tr[data-subtask]').length === 2 && document.querySelector('#subtask-table tr[data-subtask="1"]').textContent.includes('4,243')`)
	waitJS("backpressure level", `document.getElementById('bp-level') && document.getElementById('bp-level').dataset.level === 'high' && document.getElementById('backpressure-table').textContent.includes('75%')`)
	waitJS("watermarks", `document.getElementById('watermark-table') && document.getElementById('watermark-table').textContent.includes('1700000000000') && document.getElementById('watermark-table').textContent.includes('No Watermark')`)
	waitJS("operator gauges", `(() => { const rs = Array.from(document.querySelectorAll('#operator-metric-table tr.operator-metric-row'));
		return rs.length === 2 && rs[0].textContent === '0Source: ApendingRecords4,321' && rs[1].textContent === '1sums.v2stateDiskBytes3.0 MiB'; })()`)
	shot(t, bctx, artifacts, "flink-vertex")

	// Checkpoints: counts, history, details on a click, summary.
	do("open the checkpoints", chromedp.Navigate(srv.URL+"/#/job/"+jid+"/checkpoints"))
	waitJS("checkpoint history", `document.querySelectorAll('#checkpoint-history-table tr.checkpoint-row').length === 3 && document.getElementById('chk-in_progress').dataset.value === '1'`)
	waitJS("the failed checkpoint in red with its message", `(() => { const r = document.querySelector('tr.checkpoint-row[data-checkpoint-id="6"]');
		return r.dataset.status === 'FAILED' && getComputedStyle(r.querySelector('.badge.st-FAILED')).backgroundColor === 'rgb(192, 57, 43)' &&
			r.querySelector('.chk-failure').textContent === 'declined by Sink: C (1/2)'; })()`)
	clickJS("expand checkpoint 7", `#checkpoint-history-table tr[data-checkpoint-id="7"]`)
	waitJS("checkpoint 7's vertices", `(() => { const r = document.querySelector('tr.checkpoint-details[data-checkpoint-details="7"] tr.checkpoint-task-row[data-task-vertex="a"]');
		return r && r.textContent.includes('Source: A') && r.querySelector('.chk-acked').textContent === '1/2' && r.textContent.includes('2.0 KiB'); })()`)
	clickJS("open vertex A of checkpoint 7", `tr.checkpoint-task-row[data-task-vertex="a"]`)
	waitJS("vertex A's subtasks in checkpoint 7", `document.querySelectorAll('tr.checkpoint-subtasks[data-subtasks-of="a"] tr.checkpoint-subtask-row').length === 2 &&
		document.querySelector('tr.checkpoint-subtask-row[data-index="0"]').textContent.includes('7ms') &&
		document.querySelector('tr.checkpoint-subtask-row[data-index="1"]').dataset.pending === 'true' &&
		document.querySelector('tr.checkpoint-subtasks').textContent.includes('Sync duration')`)
	clickJS("expand checkpoint 8", `#checkpoint-history-table tr[data-checkpoint-id="8"]`)
	waitJS("checkpoint 8 without details, muted", `(() => { const n = document.querySelector('tr.checkpoint-details[data-checkpoint-details="8"] .chk-no-details');
		return n && n.classList.contains('muted') && !document.getElementById('view-error').textContent; })()`)
	waitJS("checkpoint summary", `document.getElementById('checkpoint-summary-table').textContent.includes('end to end duration')`)
	shot(t, bctx, artifacts, "flink-checkpoints")

	// Exceptions, and a TaskManager's metrics.
	do("open the exceptions", chromedp.Navigate(srv.URL+"/#/job/"+jid+"/exceptions"))
	waitJS("exceptions", `document.getElementById('root-exception-text') && document.querySelectorAll('#exception-table tr.exception-row').length === 1 && document.getElementById('exception-table').textContent.includes('Map B (1/1)')`)
	do("open the TaskManager", chromedp.Navigate(srv.URL+"/#/taskmanager/tm-1"))
	waitJS("TaskManager metrics", `document.getElementById('tm-metric-table') && document.getElementById('tm-metric-table').textContent.includes('123456789') && document.getElementById('tm-slot-table').textContent.includes('`+jid+`')`)
	if n := looks.Load(); n < 2 {
		t.Errorf("the job was read %d times", n)
	}
	t.Logf("the page read GET /jobs/%s %d times", jid, looks.Load())
}
