package planner

import (
	"github.com/weirproject/weir/stream"
)

// A streaming group aggregation reads and writes a group's accumulators
// for every row. Encoded in one state value, a group whose accumulators
// grow with its rows (COUNT(DISTINCT), LISTAGG, MAX under retraction)
// cost a decode and an encode of all of them per row: quadratic. The
// aggregation therefore keeps the groups it changed decoded, and writes
// them to state only when the operator flushes (stream.KeyedFlusher):
// before every checkpoint barrier, before a watermark passes, when the
// input ends, and when maxCachedGroups groups are waiting. A checkpoint
// thus always holds every change, and the per-row cost is that of the
// accumulators alone. (Not with state TTL, whose expiry needs the state
// read per row.)

const maxCachedGroups = 4096

// loadCached returns the current key's group, decoded.
func (f *aggFunc) loadCached(ctx *stream.KeyedContext[string]) (*aggState, bool, error) {
	if f.cache == nil {
		return f.load()
	}
	k := ctx.CurrentKey()
	if s, ok := f.cache[k]; ok {
		if s == nil {
			return f.newState(), false, nil // dropped since the last flush
		}
		return s, true, nil
	}
	if len(f.cache) >= maxCachedGroups {
		f.flushCache(ctx)
		ctx.State().SetCurrentKey(k)
	}
	return f.load()
}

// store keeps the current key's group.
func (f *aggFunc) store(ctx *stream.KeyedContext[string], s *aggState) {
	if f.cache == nil {
		f.st.Update(s.encode(f.keyTypes))
		return
	}
	f.cache[ctx.CurrentKey()] = s
}

// drop removes the current key's group.
func (f *aggFunc) drop(ctx *stream.KeyedContext[string]) {
	if f.cache == nil {
		f.st.Clear()
		return
	}
	f.cache[ctx.CurrentKey()] = nil
}

// flushCache writes the cached groups to state.
func (f *aggFunc) flushCache(ctx *stream.KeyedContext[string]) {
	b := ctx.State()
	for k, s := range f.cache {
		b.SetCurrentKey(k)
		if s == nil {
			f.st.Clear()
		} else {
			f.st.Update(s.encode(f.keyTypes))
		}
	}
	clear(f.cache)
}
