package runtime

import (
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/weirproject/weir/internal/graph"
)

// Task time accounting, as Flink measures it: a task is idle while it
// waits for input (or, for a source, while its reader has nothing), back
// pressured while a record writer waits for a credit of a downstream
// channel, and busy the rest of the time. The clocks run only at the
// points where a task blocks, once per buffer rather than per record, so
// the record path pays nothing.

// monoBase anchors monoNanos; time.Since reads the monotonic clock.
var monoBase = time.Now()

// monoNanos is a monotonic time in nanoseconds.
func monoNanos() int64 { return int64(time.Since(monoBase)) }

// waitClock sums the time spent in one kind of wait. A wait in progress
// counts up to the moment it is read, so that a task blocked for seconds
// shows as idle (or back pressured) while it still waits.
type waitClock struct {
	total atomic.Int64
	since atomic.Int64 // start of the wait in progress; 0 when none
}

func (c *waitClock) start() { c.since.Store(monoNanos()) }

func (c *waitClock) stop() {
	if s := c.since.Swap(0); s != 0 {
		c.total.Add(monoNanos() - s)
	}
}

// read returns the time waited up to now.
func (c *waitClock) read(now int64) int64 {
	t := c.total.Load()
	if s := c.since.Load(); s != 0 && now > s {
		t += now - s
	}
	return t
}

// waitCounters are given to the channels of a task's record writers: they
// count the time the task waited for credits and the bytes they sent
// over the network. Channels of other owners (the bridge that feeds a
// gate from the network) have none.
type waitCounters struct {
	backPressured *waitClock
	bytesOut      *atomic.Int64
}

// countingChannel is implemented by channel writers that report waits
// and bytes to their task.
type countingChannel interface {
	setCounters(waitCounters)
}

// bufferUsage is implemented by channel writers that can say which
// fraction of their credits is in use.
type bufferUsage interface {
	usage() float64
}

// metricGate is what a task's metrics read from its input gates.
type metricGate interface {
	Buffered() int64
	BytesIn() int64
	Usage() float64
}

// TaskMetrics is a snapshot of one subtask's counters.
type TaskMetrics struct {
	Task       string
	Vertex     graph.JobVertexID
	Subtask    int
	State      graph.ExecutionState
	RecordsIn  int64
	RecordsOut int64
	// BytesIn and BytesOut count what crossed the network (records
	// exchanged inside a process are never encoded).
	BytesIn, BytesOut int64
	// BufferedIn is the number of records waiting in the task's input
	// gates.
	BufferedIn int64
	// ElapsedNanos is how long the task has run; IdleNanos and
	// BackPressuredNanos the parts of it spent waiting, the rest is busy.
	ElapsedNanos, IdleNanos, BackPressuredNanos int64
	// InPoolUsage and OutPoolUsage are the fractions of the input gates'
	// and output channels' buffers (credits) in use, from 0 to 1; the
	// highest over the gates or channels.
	InPoolUsage, OutPoolUsage float64
	// InputWatermark is the task's combined input watermark, and
	// OutputWatermark the latest watermark it sent downstream;
	// NoTimestamp before the first.
	InputWatermark, OutputWatermark int64
	// Gauges are the metrics the task's operators and source reader
	// registered (OperatorContext.Gauge, connector.SplitContext.Gauge),
	// as of their latest reading on the task's goroutine.
	Gauges []GaugeValue
}

// GaugeValue is one registered metric of an operator.
type GaugeValue struct {
	// Operator is the operator's name (Flink's operator_name).
	Operator string
	Name     string
	Value    int64
}

// namedGauge is a registered metric. value runs on the task's goroutine,
// between two records, so that it may read what the operator owns (the
// size of its state) without a lock; last keeps its latest reading for
// the goroutines that report metrics.
type namedGauge struct {
	operator, name string
	value          func() int64
	last           atomic.Int64
}

// gaugeName is what a gauge may be called: it becomes part of metric
// names in Prometheus and of metric ids in the REST API.
var gaugeName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// registerGauge adds a metric of one of the task's operators; a name
// registered twice by an operator keeps the latest function. It is read
// at once, so that it reports a value before the first refresh.
func (t *Task) registerGauge(operator, name string, value func() int64) {
	if !gaugeName.MatchString(name) {
		panic(fmt.Sprintf("runtime: gauge name %q: want letters, digits and _", name))
	}
	g := &namedGauge{operator: operator, name: name, value: value}
	g.last.Store(value())
	t.gaugesMu.Lock()
	defer t.gaugesMu.Unlock()
	for i, old := range t.gauges {
		if old.operator == operator && old.name == name {
			t.gauges[i] = g
			return
		}
	}
	t.gauges = append(t.gauges, g)
}

// Gauge registers a metric of the operator (Flink's operator scope, such
// as the size of its state). value runs on the task's goroutine, between
// records, about as often as metrics are reported, so it may read the
// operator's own data without locking; it must be cheap.
func (oc *OperatorContext) Gauge(name string, value func() int64) {
	oc.Task.registerGauge(oc.Info.Name, name, value)
}

// refreshGauges reads every registered gauge; it runs on the task's
// goroutine, from its mailbox.
func (t *Task) refreshGauges() {
	t.gaugeRefresh.Store(false)
	t.gaugesMu.Lock()
	gs := t.gauges
	t.gaugesMu.Unlock()
	for _, g := range gs {
		g.last.Store(g.value())
	}
}

// requestGaugeRefresh asks the task's goroutine to read the gauges again,
// without waiting: a busy or ended task keeps the values it has.
func (t *Task) requestGaugeRefresh() {
	if !t.gaugeRefresh.CompareAndSwap(false, true) {
		return
	}
	select {
	case t.mailbox <- t.refreshGauges:
	default:
		t.gaugeRefresh.Store(false)
	}
}

// BusyNanos is the time the task spent neither idle nor back pressured.
func (m TaskMetrics) BusyNanos() int64 {
	return max(0, m.ElapsedNanos-m.IdleNanos-m.BackPressuredNanos)
}

func (t *Task) metrics(now int64) TaskMetrics {
	m := TaskMetrics{
		Task:               t.Name(),
		Subtask:            t.subtask,
		RecordsIn:          t.recordsIn.Load(),
		RecordsOut:         t.recordsOut.Load(),
		BytesOut:           t.bytesOut.Load(),
		IdleNanos:          t.idle.read(now),
		BackPressuredNanos: t.backPressured.read(now),
		InputWatermark:     t.inputWatermark.Load(),
		OutputWatermark:    t.outputWatermark.Load(),
	}
	if s := t.startedNanos.Load(); s != 0 {
		end := now
		if e := t.endedNanos.Load(); e != 0 {
			end = e
		}
		m.ElapsedNanos = max(0, end-s)
	}
	for _, g := range t.gates {
		m.BufferedIn += g.Buffered()
		m.BytesIn += g.BytesIn()
		m.InPoolUsage = max(m.InPoolUsage, g.Usage())
	}
	m.OutPoolUsage = t.outPoolUsage()
	t.gaugesMu.Lock()
	for _, g := range t.gauges {
		m.Gauges = append(m.Gauges, GaugeValue{Operator: g.operator, Name: g.name, Value: g.last.Load()})
	}
	n := len(t.gauges)
	t.gaugesMu.Unlock()
	if n > 0 {
		t.requestGaugeRefresh()
	}
	if len(t.writers) == 0 {
		// A chain that ends in a sink sends nothing on: its output
		// watermark is what reached it.
		m.OutputWatermark = m.InputWatermark
	}
	return m
}

// outPoolUsage is the highest usage over the task's record writers.
func (t *Task) outPoolUsage() float64 {
	u := 0.0
	for _, w := range t.writers {
		if b, ok := w.(bufferUsage); ok {
			u = max(u, b.usage())
		}
	}
	return u
}
