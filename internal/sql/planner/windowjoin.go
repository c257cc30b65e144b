package planner

import (
	"fmt"
	"strings"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// WindowJoin marks a join of two windowed inputs (window TVFs, or window
// aggregations keeping window_start and window_end) whose keys equate
// both sides' window_start and window_end: Flink's window join. Each
// window's rows are joined once, when the watermark passes the window's
// end, and then dropped, so the output is append-only.
type WindowJoin struct {
	// LeftEnd and RightEnd are the window_end columns of the inputs.
	LeftEnd, RightEnd int
	// Window is the windowing both inputs share, for EXPLAIN.
	Window *WindowTVF
}

// windowColumn traces column col of p down to a window TVF (through
// filters, projections and window aggregations) and says whether it is
// that window's window_start or window_end ("start", "end"), with the
// TVF; "" if it is neither.
func windowColumn(p Plan, col int) (string, *WindowTVF) {
	switch p := p.(type) {
	case *WindowTVF:
		if p.Kind == "SESSION" || p.Proctime {
			return "", nil
		}
		n := len(p.fields)
		switch col {
		case n - 3:
			return "start", p
		case n - 2:
			return "end", p
		}
	case *Filter:
		return windowColumn(p.Input, col)
	case *Project:
		if r, ok := p.Exprs[col].(*InputRef); ok {
			return windowColumn(p.Input, r.Index)
		}
	case *Aggregate:
		w := p.Window
		if w == nil || w.Gap > 0 || w.Proctime || p.Sets != nil || col >= len(p.Keys) {
			return "", nil
		}
		if col == w.Start || col == w.End {
			return windowColumn(p.Input, p.Keys[col])
		}
	}
	return "", nil
}

// sameWindowing reports TVFs that cut time into the same windows.
func sameWindowing(a, b *WindowTVF) bool {
	return a.Kind == b.Kind && a.Size == b.Size && a.Slide == b.Slide && a.Step == b.Step && a.Offset == b.Offset
}

// markWindowJoin makes j a window join when both inputs are windowed the
// same way and its keys equate both window_start and both window_end
// columns; otherwise j stays a regular join.
func markWindowJoin(j *Join) {
	if j.Temporal || updating(j.Left, false) || updating(j.Right, false) {
		return
	}
	var start, end bool
	var lEnd, rEnd int
	var win *WindowTVF
	for i := range j.LeftKeys {
		lr, lw := windowColumn(j.Left, j.LeftKeys[i])
		rr, rw := windowColumn(j.Right, j.RightKeys[i])
		if lr == "" || lr != rr || !sameWindowing(lw, rw) {
			continue
		}
		if win != nil && !sameWindowing(win, lw) {
			return
		}
		win = lw
		switch lr {
		case "start":
			start = true
		case "end":
			end = true
			lEnd, rEnd = j.LeftKeys[i], j.RightKeys[i]
		}
	}
	if start && end {
		j.Window = &WindowJoin{LeftEnd: lEnd, RightEnd: rEnd, Window: win}
	}
}

// describeWindowJoin is a window join's line in EXPLAIN.
func describeWindowJoin(p *Join, conds []string) string {
	w := p.Window.Window
	spec := fmt.Sprintf("%s(size=[%d ms]", w.Kind, w.Size)
	switch w.Kind {
	case "HOP":
		spec += fmt.Sprintf(", slide=[%d ms]", w.Slide)
	case "CUMULATE":
		spec += fmt.Sprintf(", step=[%d ms]", w.Step)
	}
	if w.Offset != 0 {
		spec += fmt.Sprintf(", offset=[%d ms]", w.Offset)
	}
	spec += ")"
	return fmt.Sprintf("WindowJoin(joinType=[%s], where=[%s], leftWindow=[%s], rightWindow=[%s])",
		p.Type, strings.Join(conds, " AND "), spec, spec)
}

// windowJoinFunc buffers both sides' rows per join key (which includes
// the window) and joins them when the watermark passes the window's end;
// the window's state is then cleared. Rows of a window that has fired are
// late and dropped, as in Flink.
type windowJoinFunc struct {
	joinRows
	p                     *Join
	lEnd, rEnd            int
	left, right           state.ListState[[]byte]
	leftOuter, rightOuter bool
	semi, anti            bool
	tr                    *Translator
}

func (f *windowJoinFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.left = state.List[[]byte](ctx.State(), "left")
	f.right = state.List[[]byte](ctx.State(), "right")
	f.evalCtx = subtaskContext(f.tr.Ctx)
	return nil
}

func (f *windowJoinFunc) add(r types.Record, st state.ListState[[]byte], ts []types.DataType, endCol int, ctx *stream.KeyedContext[string]) error {
	if !r.Kind.IsAccumulate() {
		return fmt.Errorf("window join: an input retracted a row (%s); window join inputs are append-only", r)
	}
	end, ok := millis(r.Row[endCol])
	if !ok {
		return nil // no window
	}
	if end-1 <= ctx.CurrentWatermark() {
		return nil // late: its window has been joined
	}
	st.Add(types.AppendRow(nil, ts, r.Row))
	ctx.RegisterEventTimeTimer(end - 1)
	return nil
}

func (f *windowJoinFunc) ProcessElement1(r types.Record, ctx *stream.KeyedContext[string], _ stream.Collector[types.Record]) error {
	return f.add(r, f.left, f.lTypes, f.lEnd, ctx)
}

func (f *windowJoinFunc) ProcessElement2(r types.Record, ctx *stream.KeyedContext[string], _ stream.Collector[types.Record]) error {
	return f.add(r, f.right, f.rTypes, f.rEnd, ctx)
}

func decodeRows(bs [][]byte, ts []types.DataType) ([]types.Row, error) {
	rows := make([]types.Row, len(bs))
	for i, b := range bs {
		row, _, err := types.DecodeRow(ts, b)
		if err != nil {
			return nil, fmt.Errorf("window join: %w", err)
		}
		rows[i] = row
	}
	return rows, nil
}

// OnTimer joins the window's rows of the current key and clears them.
func (f *windowJoinFunc) OnTimer(_ int64, _ *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	lefts, err := decodeRows(f.left.Get(), f.lTypes)
	if err != nil {
		return err
	}
	rights, err := decodeRows(f.right.Get(), f.rTypes)
	if err != nil {
		return err
	}
	f.left.Clear()
	f.right.Clear()
	rightMatched := make([]bool, len(rights))
	for _, l := range lefts {
		matched := false
		for ri, r := range rights {
			ok, err := f.matches(l, r)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			matched = true
			rightMatched[ri] = true
			if f.semi {
				break
			}
			out.Collect(types.Record{Kind: types.Insert, Row: f.concat(l, r)})
		}
		switch {
		case f.semi:
			if matched != f.anti {
				out.Collect(types.Record{Kind: types.Insert, Row: l})
			}
		case !matched && f.leftOuter:
			out.Collect(types.Record{Kind: types.Insert, Row: f.concat(l, make(types.Row, len(f.rTypes)))})
		}
	}
	if f.rightOuter {
		for ri, r := range rights {
			if !rightMatched[ri] {
				out.Collect(types.Record{Kind: types.Insert, Row: f.concat(make(types.Row, len(f.lTypes)), r)})
			}
		}
	}
	return nil
}

// windowJoin translates a window join: both inputs keyed by the join keys
// (window_start and window_end among them), joined per window on the
// watermark.
func (t *Translator) windowJoin(p *Join) (*Rows, error) {
	l, r, lt, rt, err := t.joinInputs(p)
	if err != nil {
		return nil, err
	}
	lkey, rkey := joinKeyFuncs(p, lt, rt)
	f := &windowJoinFunc{joinRows: joinRows{lTypes: lt, rTypes: rt}, p: p, lEnd: p.Window.LeftEnd, rEnd: p.Window.RightEnd, tr: t,
		leftOuter: p.Type == "LEFT" || p.Type == "FULL", rightOuter: p.Type == "RIGHT" || p.Type == "FULL",
		semi: p.Type == "SEMI" || p.Type == "ANTI", anti: p.Type == "ANTI"}
	if p.Residual != nil {
		f.residual = compile(p.Residual)
	}
	ks := stream.ConnectKeyed(stream.KeyBy(l, lkey), stream.KeyBy(r, rkey))
	s := stream.KeyedCoProcess[string, types.Record, types.Record, types.Record](ks, f).Name(t.OpName("WindowJoin")).UID(t.nextUID("window-join"))
	return withCodec(s, p.fields), nil
}

// joinKeyFuncs returns the routing and state keys of a join's left and
// right rows: the key columns, compared in their common type.
func joinKeyFuncs(p *Join, lt, rt []types.DataType) (func(types.Record) string, func(types.Record) string) {
	lkt, rkt := make([]types.DataType, len(p.LeftKeys)), make([]types.DataType, len(p.RightKeys))
	for i := range p.LeftKeys {
		// Keys of different types are compared in their common type.
		c, _ := types.LeastRestrictive(lt[p.LeftKeys[i]], rt[p.RightKeys[i]])
		lkt[i], rkt[i] = c, c
	}
	keyFn := func(keys []int, from, to []types.DataType, side string) func(types.Record) string {
		return func(rec types.Record) string {
			var buf []byte
			for i, k := range keys {
				v := rec.Row[k]
				if v != nil && !from[k].EqualIgnoringNull(to[i]) {
					v, _ = types.Cast(v, from[k], to[i])
				}
				if v == nil {
					// NULL keys never match: a key of the row's own
					// (distinct per side, so that a left and a right row
					// with the same values do not meet) keeps the row
					// (for outer joins) without pairing it.
					return "\x00null" + side + string(types.AppendRow(nil, from, rec.Row))
				}
				buf = types.AppendKey(buf, to[i], v)
			}
			return string(buf)
		}
	}
	return keyFn(p.LeftKeys, lt, lkt, "L"), keyFn(p.RightKeys, rt, rkt, "R")
}
