package kafka

import (
	"context"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/kafka"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// normalize turns the upserts and tombstones of an upsert-kafka topic into
// a retract changelog, as Flink's ChangelogNormalize does: keyed by the
// primary key, it keeps the last row of every key and emits +I for a new
// key, -U and +U for a changed row, -D with the last row for a tombstone;
// a row equal to the last one and a tombstone of an unknown key emit
// nothing. The planner then sees a proper changelog, which aggregations
// can retract from.
func normalize(c *planner.TableContext, in *planner.Rows, key []int) *planner.Rows {
	cols := c.Table.Columns
	ts := make([]types.DataType, len(cols))
	for i, col := range cols {
		ts[i] = col.Type
	}
	keyTypes := make([]types.DataType, len(key))
	for i, k := range key {
		keyTypes[i] = ts[k]
	}
	ks := stream.KeyBy(in, func(r types.Record) string { return rowKey(r.Row, key, keyTypes) })
	s := stream.KeyedProcess[string, types.Record, types.Record](ks, &normalizeFunc{types: ts}).
		Name("ChangelogNormalize").UID(c.UID("normalize"))
	return c.Rows(s)
}

type normalizeFunc struct {
	types []types.DataType
	last  state.ValueState[[]byte]
}

func (f *normalizeFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.last = state.Value[[]byte](ctx.State(), "last", nil)
	return nil
}

func (f *normalizeFunc) ProcessElement(r types.Record, _ *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	b, had := f.last.Value()
	var prev types.Row
	if had {
		var err error
		if prev, _, err = types.DecodeRow(f.types, b); err != nil {
			return err
		}
	}
	if r.Kind == types.Delete {
		if had {
			f.last.Clear()
			out.Collect(types.Record{Kind: types.Delete, Row: prev})
		}
		return nil
	}
	if had && rowsEqual(prev, r.Row, f.types) {
		return nil
	}
	f.last.Update(types.AppendRow(nil, f.types, r.Row))
	if had {
		out.Collect(types.Record{Kind: types.UpdateBefore, Row: prev})
		out.Collect(types.Record{Kind: types.UpdateAfter, Row: r.Row})
		return nil
	}
	out.Collect(types.Record{Kind: types.Insert, Row: r.Row})
	return nil
}

func rowsEqual(a, b types.Row, ts []types.DataType) bool {
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) || a[i] != nil && !types.Equal(a[i], b[i], ts[i]) {
			return false
		}
	}
	return true
}

// upsertSink writes a changelog as upserts: +I and +U write the row, -D a
// tombstone. A -U is held back until the next change of its key, which in
// an update is the +U right after it and makes it moot; a -U that no +U
// follows (a row that a filter after an aggregation drops) becomes a
// tombstone at the next flush, so the key's row disappears as it should.
type upsertSink struct {
	inner *kafka.Sink[types.Record]
	keyOf func(types.Record) string
}

func (s *upsertSink) NewWriter(ctx context.Context, sc connector.SinkContext) (connector.SinkWriter[types.Record], error) {
	w, err := s.inner.NewWriter(ctx, sc)
	if err != nil {
		return nil, err
	}
	uw := &upsertWriter{inner: w, keyOf: s.keyOf, pending: map[string]pendingDelete{}}
	if c, ok := w.(connector.Committer); ok {
		return &upsertTxnWriter{upsertWriter: uw, c: c}, nil
	}
	return uw, nil
}

type pendingDelete struct {
	r  types.Record
	ts int64
}

type upsertWriter struct {
	inner   connector.SinkWriter[types.Record]
	keyOf   func(types.Record) string
	pending map[string]pendingDelete
}

func (w *upsertWriter) Write(r types.Record, ts int64) error {
	k := w.keyOf(r)
	if r.Kind == types.UpdateBefore {
		w.pending[k] = pendingDelete{types.Record{Kind: types.Delete, Row: r.Row}, ts}
		return nil
	}
	delete(w.pending, k)
	return w.inner.Write(r, ts)
}

// drain writes the tombstones of the -U that no +U followed.
func (w *upsertWriter) drain() error {
	for k, p := range w.pending {
		if err := w.inner.Write(p.r, p.ts); err != nil {
			return err
		}
		delete(w.pending, k)
	}
	return nil
}

func (w *upsertWriter) Flush() error {
	if err := w.drain(); err != nil {
		return err
	}
	return w.inner.Flush()
}

func (w *upsertWriter) Close() error { return w.inner.Close() }

func (w *upsertWriter) Abort() error {
	if a, ok := w.inner.(interface{ Abort() error }); ok {
		return a.Abort()
	}
	return w.inner.Close()
}

// upsertTxnWriter is the exactly-once upsert writer: its transactions are
// the inner writer's.
type upsertTxnWriter struct {
	*upsertWriter
	c connector.Committer
}

func (w *upsertTxnWriter) PrepareCommit(id int64) ([]byte, error) {
	if err := w.drain(); err != nil {
		return nil, err
	}
	return w.c.PrepareCommit(id)
}

func (w *upsertTxnWriter) Commit(cs [][]byte) error { return w.c.Commit(cs) }
