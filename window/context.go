package window

import (
	"errors"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// State is small named int64 state, per key and window (WindowState) or
// per key (GlobalState). The zero value is empty.
type State struct {
	m map[string]int64
}

// Get returns the value named name.
func (s *State) Get(name string) (int64, bool) {
	v, ok := s.m[name]
	return v, ok
}

// Set sets the value named name.
func (s *State) Set(name string, v int64) {
	if s.m == nil {
		s.m = make(map[string]int64)
	}
	s.m[name] = v
}

// Add adds delta to the value named name (0 if unset) and returns the sum.
func (s *State) Add(name string, delta int64) int64 {
	v := s.m[name] + delta
	s.Set(name, v)
	return v
}

// Delete removes the value named name.
func (s *State) Delete(name string) { delete(s.m, name) }

// Len returns the number of values.
func (s *State) Len() int { return len(s.m) }

// clocks is the operator's view of time.
type clocks interface {
	CurrentWatermark() int64
	CurrentProcessingTime() int64
}

// ProcessContext is what a ProcessWindowFunction learns about the window
// it evaluates. It is valid only during the call.
type ProcessContext struct {
	oc      *runtime.OperatorContext
	clocks  clocks
	window  TimeWindow
	win     *State
	global  *State
	merging bool
	ts      int64
	// lazyGlobal, set by the fast path, returns the per-key state of the
	// key being evaluated (nil outside Process and Clear), made only when
	// the function asks for it.
	lazyGlobal func() *State
}

// ErrMergingWindowState is the failure of WindowState in merging (session)
// windows, which cannot merge per-window state (as in Flink).
var ErrMergingWindowState = errors.New("window: per-window state is not supported with merging windows")

var errNoWindow = errors.New("window: no window outside Process and Clear")

// Window returns the window being evaluated.
func (c *ProcessContext) Window() TimeWindow { return c.window }

// CurrentWatermark returns the operator's event time.
func (c *ProcessContext) CurrentWatermark() int64 { return c.clocks.CurrentWatermark() }

// CurrentProcessingTime returns the operator's processing time.
func (c *ProcessContext) CurrentProcessingTime() int64 { return c.clocks.CurrentProcessingTime() }

// Subtask returns the 0-based index of the running subtask.
func (c *ProcessContext) Subtask() int { return c.oc.Task.Subtask() }

// Parallelism returns the operator's parallelism.
func (c *ProcessContext) Parallelism() int { return c.oc.Task.Parallelism() }

// WindowState returns state kept per key and window: it survives firings
// and purges and is dropped when the window is cleaned up. Merging windows
// have none: asking fails the job with ErrMergingWindowState.
func (c *ProcessContext) WindowState() *State {
	if c.merging {
		c.oc.Fail(ErrMergingWindowState)
	}
	if c.win == nil {
		c.oc.Fail(errNoWindow)
	}
	return c.win
}

// GlobalState returns state kept per key across all its windows; it lives
// until the function deletes it.
func (c *ProcessContext) GlobalState() *State {
	if c.global == nil && c.lazyGlobal != nil {
		c.global = c.lazyGlobal()
	}
	if c.global == nil {
		c.oc.Fail(errNoWindow)
	}
	return c.global
}

// SideOutput emits v to the side output named by tag, with the window's
// MaxTimestamp; read it with stream.GetSideOutput on the window's result.
func SideOutput[X any](ctx *ProcessContext, tag stream.OutputTag[X], v X) {
	out := stream.SideOutputOf(ctx.oc, tag)
	if out == nil {
		return
	}
	out.Emit(v, ctx.ts)
	ctx.oc.Enter()
}

// collector emits a window's results with its MaxTimestamp.
type collector[OUT any] struct {
	oc  *runtime.OperatorContext
	out runtime.Output[OUT]
	ts  int64
}

func (c *collector[OUT]) Collect(v OUT) {
	c.out.Emit(v, c.ts)
	c.oc.Enter()
}
