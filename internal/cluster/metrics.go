package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// jmMetrics are the JobManager's Prometheus metrics. Each JobManager has
// its own registry rather than the global one, so that several JobManagers
// in one process (tests, a future mini cluster) do not collide.
type jmMetrics struct {
	registry           *prometheus.Registry
	heartbeatsReceived prometheus.Counter
	heartbeatsMissed   prometheus.Counter
	taskManagersLost   prometheus.Counter
}

func newJMMetrics(pool *SlotPool, d *dispatcher) *jmMetrics {
	m := &jmMetrics{
		registry: prometheus.NewRegistry(),
		heartbeatsReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weir_jobmanager_heartbeats_received_total",
			Help: "Heartbeats the TaskManagers answered.",
		}),
		heartbeatsMissed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weir_jobmanager_heartbeats_missed_total",
			Help: "Heartbeats that failed or were not answered within their deadline.",
		}),
		taskManagersLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weir_jobmanager_taskmanagers_lost_total",
			Help: "TaskManagers removed because they answered no heartbeat within heartbeat.timeout.",
		}),
	}
	// The gauges read the pool when scraped, so they cannot drift from it.
	gauge := func(name, help string, pick func(tms, slots, free int) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			return float64(pick(pool.Totals()))
		})
	}
	m.registry.MustRegister(
		m.heartbeatsReceived, m.heartbeatsMissed, m.taskManagersLost,
		gauge("weir_jobmanager_numRegisteredTaskManagers", "TaskManagers registered with the JobManager.",
			func(tms, _, _ int) int { return tms }),
		gauge("weir_jobmanager_taskSlotsTotal", "Task slots of all registered TaskManagers.",
			func(_, slots, _ int) int { return slots }),
		gauge("weir_jobmanager_taskSlotsAvailable", "Task slots not allocated to a job.",
			func(_, _, free int) int { return free }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "weir_jobmanager_numRunningJobs",
			Help: "Jobs that have not ended: created, running, restarting or cancelling.",
		}, func() float64 {
			running, _, _, _ := d.counts()
			return float64(running)
		}),
		jobCollector{d},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
