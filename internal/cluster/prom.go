package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

// Prometheus endpoints (metrics.reporter.prom.port) of the JobManager and
// the TaskManagers. Names are Flink's with its Prometheus reporter's
// scopes (taskmanager_job_task_..., dots as underscores) under the weir_
// prefix, with Flink's scope labels. As in Flink, counters are exported
// as gauges: their values come from the workers' reports, not from
// counters this process increments.

// listenPrometheus listens on host and the first free port of spec, a
// port or a range "from-to".
func listenPrometheus(host, spec string) (net.Listener, error) {
	from, to, err := parsePortRange(spec)
	if err != nil {
		return nil, fmt.Errorf("metrics.reporter.prom.port: %w", err)
	}
	var lastErr error
	for p := from; p <= to; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return ln, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("metrics.reporter.prom.port %s: no free port: %w", spec, lastErr)
}

func parsePortRange(spec string) (from, to int, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(spec), "-")
	if from, err = strconv.Atoi(strings.TrimSpace(a)); err != nil {
		return 0, 0, fmt.Errorf("%q is not a port or a range of ports (9249-9260)", spec)
	}
	to = from
	if isRange {
		if to, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
			return 0, 0, fmt.Errorf("%q is not a port or a range of ports (9249-9260)", spec)
		}
	}
	if from < 0 || to > 65535 || to < from {
		return 0, 0, fmt.Errorf("%q is not a port or a range of ports (9249-9260)", spec)
	}
	return from, to, nil
}

// servePrometheus serves reg at /metrics on ln until the returned stop,
// behind the guards of the REST API: the Host and Origin checks
// (browserGuard), then the token (requireToken), and TLS when tlsCfg (the
// process's httpTLS) is set. Prometheus sends the token with
// authorization: {type: Bearer, credentials_file: ...} and verifies the
// server, and with mutual TLS presents its certificate, by tls_config.
func servePrometheus(ln net.Listener, reg *prometheus.Registry, token string, hosts *hostGuard, tlsCfg *tls.Config, log *slog.Logger) (stop func()) {
	log = log.With("endpoint", "prometheus")
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	refusals := newRefusalLog(log)
	srv := &http.Server{
		Handler:           browserGuard(hosts, refusals.warn, requireToken(token, refusals.warn, mux)),
		TLSConfig:         tlsCfg.Clone(), // the server changes its own (http2ConfigureServer)
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serveHTTP(srv, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("prometheus endpoint failed", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}
}

// prometheusURL is the URL of a Prometheus endpoint on ln.
func prometheusURL(ln net.Listener, tlsCfg *tls.Config) string {
	if tlsCfg != nil {
		return "https://" + ln.Addr().String() + "/metrics"
	}
	return "http://" + ln.Addr().String() + "/metrics"
}

// ProcessMetricsJSON are a worker process's own figures, which its status
// file carries: the TaskManager's process collector sees only itself.
type ProcessMetricsJSON struct {
	Goroutines int     `json:"goroutines"`
	HeapBytes  uint64  `json:"heapBytes"`
	GCCount    uint32  `json:"gcCount"`
	GCPauseNs  uint64  `json:"gcPauseNs"`
	CPUSeconds float64 `json:"cpuSeconds"`
	RSSBytes   int64   `json:"rssBytes"`
	OpenFiles  int     `json:"openFiles"`
}

// ReadProcessMetrics measures the calling process.
func ReadProcessMetrics() ProcessMetricsJSON {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p := ProcessMetricsJSON{Goroutines: runtime.NumGoroutine(), HeapBytes: ms.HeapAlloc, GCCount: ms.NumGC, GCPauseNs: ms.PauseTotalNs,
		CPUSeconds: processCPUSeconds(), RSSBytes: -1, OpenFiles: -1}
	if data, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				p.RSSBytes = pages * int64(os.Getpagesize())
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.OpenFiles = len(fds)
	}
	return p
}

// taskCollector exports the metrics of a TaskManager's workers: per
// subtask at Flink's task scope, per worker process at weir's own
// taskmanager_job_worker scope.
type taskCollector struct {
	tm *TaskManager
}

func (c taskCollector) Describe(chan<- *prometheus.Desc) {} // unchecked: the label values come and go with jobs

var (
	taskLabels = []string{"tm_id", "job_id", "job_name", "task_id", "task_name", "subtask_index", "task_attempt_num"}
	// operatorLabels are Flink's operator scope: the task's and the
	// operator's name.
	operatorLabels = append(slices.Clone(taskLabels), "operator_name")
)

// taskGauges are the task metrics under Flink's names.
var taskGauges = []struct {
	name, help string
	value      func(m SubtaskMetricsJSON) float64
}{
	{"numRecordsIn", "Records the task has read.", func(m SubtaskMetricsJSON) float64 { return float64(m.RecordsIn) }},
	{"numRecordsOut", "Records the task has emitted.", func(m SubtaskMetricsJSON) float64 { return float64(m.RecordsOut) }},
	{"numBytesIn", "Bytes the task has read from the network.", func(m SubtaskMetricsJSON) float64 { return float64(m.BytesIn) }},
	{"numBytesOut", "Bytes the task has sent over the network.", func(m SubtaskMetricsJSON) float64 { return float64(m.BytesOut) }},
	{"numRecordsInPerSecond", "Records read per second.", func(m SubtaskMetricsJSON) float64 { return m.RecordsInPerSecond }},
	{"numRecordsOutPerSecond", "Records emitted per second.", func(m SubtaskMetricsJSON) float64 { return m.RecordsOutPerSecond }},
	{"numBytesInPerSecond", "Network bytes read per second.", func(m SubtaskMetricsJSON) float64 { return m.BytesInPerSecond }},
	{"numBytesOutPerSecond", "Network bytes sent per second.", func(m SubtaskMetricsJSON) float64 { return m.BytesOutPerSecond }},
	{"busyTimeMsPerSecond", "Milliseconds per second the task was busy.", func(m SubtaskMetricsJSON) float64 { return m.BusyTimeMsPerSecond }},
	{"idleTimeMsPerSecond", "Milliseconds per second the task waited for input.", func(m SubtaskMetricsJSON) float64 { return m.IdleTimeMsPerSecond }},
	{"backPressuredTimeMsPerSecond", "Milliseconds per second the task waited for output credits.", func(m SubtaskMetricsJSON) float64 { return m.BackPressuredTimeMsPerSecond }},
	{"accumulateBusyTimeMs", "Milliseconds the task was busy since it started.", func(m SubtaskMetricsJSON) float64 { return float64(m.AccumulatedBusyMs) }},
	{"accumulateIdleTimeMs", "Milliseconds the task waited for input since it started.", func(m SubtaskMetricsJSON) float64 { return float64(m.AccumulatedIdleMs) }},
	{"accumulateBackPressuredTimeMs", "Milliseconds the task waited for output credits since it started.", func(m SubtaskMetricsJSON) float64 { return float64(m.AccumulatedBackPressuredMs) }},
	{"buffers_inPoolUsage", "Fraction of the input buffers in use.", func(m SubtaskMetricsJSON) float64 { return m.InPoolUsage }},
	{"buffers_outPoolUsage", "Fraction of the output buffers (credits) in use.", func(m SubtaskMetricsJSON) float64 { return m.OutPoolUsage }},
	{"buffers_inputQueueLength", "Records queued in the input gates.", func(m SubtaskMetricsJSON) float64 { return float64(m.BufferedIn) }},
	{"currentInputWatermark", "The task's combined input watermark (event-time ms).", func(m SubtaskMetricsJSON) float64 { return float64(m.InputWatermark) }},
	{"currentOutputWatermark", "The latest watermark the task emitted (event-time ms).", func(m SubtaskMetricsJSON) float64 { return float64(m.OutputWatermark) }},
}

var (
	taskDescs   = make([]*prometheus.Desc, len(taskGauges))
	workerDescs = map[string]*prometheus.Desc{}
	workerNames = []struct{ name, help string }{
		{"goroutines", "Goroutines of the job's worker process."},
		{"heapBytes", "Heap bytes in use by the worker process."},
		{"gcCount", "Garbage collections the worker process ran."},
		{"gcPauseSeconds", "Total stop-the-world pause of the worker process's garbage collections."},
		{"cpuSeconds", "CPU time of the worker process, user and system."},
		{"rssBytes", "Resident memory of the worker process."},
		{"openFiles", "Open file descriptors of the worker process."},
	}
)

func init() {
	for i, g := range taskGauges {
		taskDescs[i] = prometheus.NewDesc("weir_taskmanager_job_task_"+g.name, g.help, taskLabels, nil)
	}
	for _, w := range workerNames {
		workerDescs[w.name] = prometheus.NewDesc("weir_taskmanager_job_worker_"+w.name, w.help, []string{"tm_id", "job_id", "job_name"}, nil)
	}
}

func (c taskCollector) Collect(ch chan<- prometheus.Metric) {
	tmID := c.tm.opts.ResourceID
	for _, a := range c.tm.workers.snapshot() {
		a.mu.Lock()
		st, attempt, path := a.status, a.attempt, a.statusPath
		running := a.state == attemptRunning
		a.mu.Unlock()
		if !running {
			continue
		}
		// A scrape reads the worker's latest status, which it rewrites
		// every 200 ms, rather than the one the last heartbeat took.
		if fresh, err := readWorkerStatus(path); err == nil {
			st = *fresh
		}
		for _, v := range st.Vertices {
			for _, m := range v.Subtasks {
				labels := []string{tmID, a.jobID, st.JobName, v.ID, v.Name, strconv.Itoa(m.Subtask), strconv.Itoa(attempt)}
				for i, g := range taskGauges {
					ch <- prometheus.MustNewConstMetric(taskDescs[i], prometheus.GaugeValue, g.value(m), labels...)
				}
				for _, g := range m.Gauges {
					ch <- prometheus.MustNewConstMetric(registeredDesc(g.Name), prometheus.GaugeValue, float64(g.Value), append(labels[:len(labels):len(labels)], g.Operator)...)
				}
			}
		}
		if p := st.Process; p != nil {
			labels := []string{tmID, a.jobID, st.JobName}
			for name, v := range map[string]float64{
				"goroutines": float64(p.Goroutines), "heapBytes": float64(p.HeapBytes), "gcCount": float64(p.GCCount),
				"gcPauseSeconds": float64(p.GCPauseNs) / 1e9, "cpuSeconds": p.CPUSeconds,
				"rssBytes": float64(p.RSSBytes), "openFiles": float64(p.OpenFiles),
			} {
				ch <- prometheus.MustNewConstMetric(workerDescs[name], prometheus.GaugeValue, v, labels...)
			}
		}
	}
}

// jobCollector exports a JobManager's per-job metrics at Flink's
// jobmanager_job scope.
type jobCollector struct {
	d *dispatcher
}

var jobDescs = map[string]*prometheus.Desc{}

func init() {
	for name, help := range map[string]string{
		"numberOfCompletedCheckpoints": "Checkpoints the job completed.",
		"numberOfFailedCheckpoints":    "Checkpoints of the job that failed.",
		"lastCheckpointDuration":       "Duration of the job's latest completed checkpoint in milliseconds.",
		"lastCheckpointSize":           "Bytes the job's latest completed checkpoint wrote.",
		"lastCheckpointFullSize":       "Bytes of state the job's latest completed checkpoint references.",
		"numRestarts":                  "Restarts of the job after failures.",
		"uptime":                       "Milliseconds the job has been running in its current attempt; 0 when it is not running.",
	} {
		jobDescs[name] = prometheus.NewDesc("weir_jobmanager_job_"+name, help, []string{"job_id", "job_name"}, nil)
	}
}

func (c jobCollector) Describe(chan<- *prometheus.Desc) {}

func (c jobCollector) Collect(ch chan<- prometheus.Metric) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	for _, id := range c.d.order {
		j := c.d.jobs[id]
		values := map[string]float64{
			"numberOfCompletedCheckpoints": float64(j.baseChk + j.attemptChk),
			"numberOfFailedCheckpoints":    float64(j.ckFailed + j.ckFailedAttempt),
			"numRestarts":                  float64(j.restarts),
		}
		if last, ok := j.lastCompletedLocked(); ok {
			values["lastCheckpointDuration"] = float64(last.DurationMs)
			values["lastCheckpointSize"] = float64(last.CheckpointedSize)
			values["lastCheckpointFullSize"] = float64(last.FullSize)
		}
		if j.state == JobRunning && !j.attemptStart.IsZero() {
			values["uptime"] = float64(time.Since(j.attemptStart).Milliseconds())
		} else {
			values["uptime"] = 0
		}
		for name, v := range values {
			ch <- prometheus.MustNewConstMetric(jobDescs[name], prometheus.GaugeValue, v, j.id, j.name)
		}
	}
}

// processMetrics sums the TaskManager's own process and its running
// workers' (from their latest status), for heartbeats.
func (w *workers) processMetrics() *rpcpb.ProcessMetrics {
	own := ReadProcessMetrics()
	p := &rpcpb.ProcessMetrics{Goroutines: int64(own.Goroutines), HeapBytes: int64(own.HeapBytes), GcCount: int64(own.GCCount),
		GcPauseNs: int64(own.GCPauseNs), CpuSeconds: own.CPUSeconds, RssBytes: own.RSSBytes, OpenFiles: int64(own.OpenFiles), Processes: 1}
	for _, a := range w.snapshot() {
		a.mu.Lock()
		wp, running := a.status.Process, a.state == attemptRunning
		a.mu.Unlock()
		if !running || wp == nil {
			continue
		}
		p.Processes++
		p.Goroutines += int64(wp.Goroutines)
		p.HeapBytes += int64(wp.HeapBytes)
		p.GcCount += int64(wp.GCCount)
		p.GcPauseNs += int64(wp.GCPauseNs)
		p.CpuSeconds += wp.CPUSeconds
		if p.RssBytes >= 0 && wp.RSSBytes >= 0 {
			p.RssBytes += wp.RSSBytes
		}
		if p.OpenFiles >= 0 && wp.OpenFiles >= 0 {
			p.OpenFiles += int64(wp.OpenFiles)
		}
	}
	return p
}

// registeredDescs holds the descriptions of the gauges that operators and
// sources register (runtime's gaugeName keeps their names valid).
var registeredDescs sync.Map

func registeredDesc(name string) *prometheus.Desc {
	if d, ok := registeredDescs.Load(name); ok {
		return d.(*prometheus.Desc)
	}
	d, _ := registeredDescs.LoadOrStore(name, prometheus.NewDesc("weir_taskmanager_job_task_operator_"+name,
		"A metric an operator registered ("+name+").", operatorLabels, nil))
	return d.(*prometheus.Desc)
}
