package planner

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// Rows is a stream of SQL records: rows with their change kind.
type Rows = stream.Stream[types.Record]

// Translator turns a logical plan into DataStream operators.
type Translator struct {
	Env *stream.Environment
	// Batch runs bounded inputs with batch semantics: aggregations emit
	// final rows when the input ends, not a changelog.
	Batch bool
	// Connectors creates table sources and sinks.
	Connectors *Connectors
	// Ctx is the evaluation context (session time zone).
	Ctx   *functions.Context
	Funcs *functions.Registry
	// Opts are the session's table.exec.* options.
	Opts ExecOptions
	// uid is the prefix of operator UIDs, derived from the statement, so
	// that the same statement restores its state from a savepoint.
	uid string
	n   int
	// unionUpdates holds the UNION ALLs with a branch whose updates come
	// from one subtask (see oneSubtaskUpdates).
	unionUpdates map[*Rows]bool
	// ops numbers the statement's operators for their names (OpName).
	ops int
	// calcs are the streams that a Calc produces, so that a Calc above
	// one merges into it (calc).
	calcs map[*Rows]*calcFunc
}

// OpName names an operator as Flink's planner does: its kind (or, for a
// source or sink, its table's name) and its number in the statement,
// "Calc[2]". The job graph puts "Source: " and "Sink: " before the names of
// sources and sinks.
func (t *Translator) OpName(name string) string {
	t.ops++
	return name + "[" + strconv.Itoa(t.ops) + "]"
}

// NewTranslator returns a translator whose operator UIDs derive from key
// (the normalised statement text).
func NewTranslator(env *stream.Environment, key string, batch bool, conns *Connectors, funcs *functions.Registry, ctx *functions.Context) *Translator {
	sum := sha256.Sum256([]byte(key))
	return &Translator{Env: env, Batch: batch, Connectors: conns, Funcs: funcs, Ctx: ctx, uid: "sql-" + hex.EncodeToString(sum[:6])}
}

func (t *Translator) nextUID(kind string) string {
	t.n++
	return t.uid + "-" + strconv.Itoa(t.n) + "-" + kind
}

// recordCodec encodes records of a fixed schema for the network and state.
type recordCodec struct{ fields []types.DataType }

func (c recordCodec) Append(dst []byte, r types.Record) []byte {
	return types.AppendRecord(dst, c.fields, r)
}

func (c recordCodec) Decode(src []byte) (types.Record, int, error) {
	r, rest, err := types.DecodeRecord(c.fields, src)
	if err != nil {
		return types.Record{}, 0, fmt.Errorf("%w: %v", codec.ErrCorrupt, err)
	}
	return r, len(src) - len(rest), nil
}

func fieldTypes(fs []Field) []types.DataType {
	out := make([]types.DataType, len(fs))
	for i, f := range fs {
		out[i] = f.Type
	}
	return out
}

func withCodec(s *Rows, fs []Field) *Rows {
	return s.Codec(recordCodec{fields: fieldTypes(fs)})
}

// Translate builds the operators of a plan and returns the stream of its
// rows.
func (t *Translator) Translate(p Plan) (*Rows, error) {
	switch p := p.(type) {
	case *Scan:
		return t.scan(p)
	case *Values:
		rows := make([]types.Record, len(p.Rows))
		for i, r := range p.Rows {
			row := make(types.Row, len(r))
			for j, e := range r {
				v, err := compile(e)(t.Ctx, nil)
				if err != nil {
					return nil, fmt.Errorf("VALUES row %d: %w", i+1, err)
				}
				row[j] = v
			}
			rows[i] = types.Record{Kind: types.Insert, Row: row}
		}
		return withCodec(stream.FromSlice(t.Env, rows).SetParallelism(1).UID(t.nextUID("values")), p.fields), nil
	case *Project:
		in, err := t.Translate(p.Input)
		if err != nil {
			return nil, err
		}
		return t.keepOrder(p.Input, in, t.calc(in, p.Exprs, nil, p.fields)), nil
	case *Filter:
		in, err := t.Translate(p.Input)
		if err != nil {
			return nil, err
		}
		return t.keepOrder(p.Input, in, t.calc(in, nil, p.Cond, p.Input.Fields())), nil
	case *WindowTVF:
		return t.windowTVF(p)
	case *Aggregate:
		return t.aggregate(p)
	case *Union:
		var ins []*Rows
		for _, in := range p.Ins {
			s, err := t.Translate(in)
			if err != nil {
				return nil, err
			}
			ins = append(ins, s)
		}
		u := withCodec(stream.Union(ins[0], ins[1:]...), p.fields)
		for i, in := range p.Ins {
			if t.oneSubtaskUpdates(in, ins[i]) {
				if t.unionUpdates == nil {
					t.unionUpdates = map[*Rows]bool{}
				}
				t.unionUpdates[u] = true
			}
		}
		return u, nil
	case *Sort:
		return t.sort(p)
	case *Join:
		if p.Window != nil && !t.Batch {
			return t.windowJoin(p)
		}
		return t.join(p)
	case *Over:
		return t.over(p)
	case *Rank:
		return t.rank(p)
	case *SingleRow:
		return t.singleRow(p)
	case *Replicate:
		return t.replicate(p)
	case *Correlate:
		return t.correlate(p)
	case *MatchRecognize:
		return t.matchRecognize(p)
	}
	return nil, fmt.Errorf("no physical operator for %T", p)
}

// keepOrder runs an operator above a sort in the sort's one subtask, so
// that the order reaches the sink; and above an updating operator that
// runs in one subtask (an aggregation without keys), so that its -U and
// +U rows cannot pass each other on the way to different subtasks.
func (t *Translator) keepOrder(in Plan, inRows, s *Rows) *Rows {
	if sorted(in) || t.oneSubtaskUpdates(in, inRows) {
		return s.SetParallelism(1)
	}
	return s
}

// oneSubtaskUpdates reports rows with updates that come from one subtask:
// the plan updates and runs in one subtask, or it is a UNION ALL one of
// whose branches does. (A union is no operator of its own: the branches
// keep their parallelism, and one that runs in one subtask is as much in
// need of its order kept as it would be without the union.)
func (t *Translator) oneSubtaskUpdates(in Plan, rows *Rows) bool {
	if _, ok := in.(*Union); ok {
		return t.unionUpdates[rows]
	}
	return rows.Parallelism() == 1 && updating(in, t.Batch)
}

// sorted reports a plan whose rows come in a defined order.
func sorted(p Plan) bool {
	switch p := p.(type) {
	case *Sort:
		return len(p.Keys) > 0
	case *Project:
		return sorted(p.Input)
	case *Filter:
		return sorted(p.Input)
	}
	return false
}

// calc evaluates a condition and projections per row: Flink's Calc. A
// Calc over a Calc merges into it, as Flink's calc merge does: one
// operator evaluates both, the lower's condition and projections first.
// (The stream below a Calc has no other consumer: every plan node's
// stream is translated for the one node above it.)
func (t *Translator) calc(in *Rows, project []Expr, cond Expr, out []Field) *Rows {
	var st calcStage
	if cond != nil {
		st.keep = compile(cond)
	}
	for _, e := range project {
		st.evals = append(st.evals, compile(e))
	}
	if f, ok := t.calcs[in]; ok {
		f.stages = append(f.stages, st)
		return withCodec(in, out)
	}
	f := &calcFunc{stages: []calcStage{st}, base: t.Ctx}
	s := withCodec(stream.Process[types.Record, types.Record](in, f).Name(t.OpName("Calc")), out)
	if t.calcs == nil {
		t.calcs = map[*Rows]*calcFunc{}
	}
	t.calcs[s] = f
	return s
}

// calcStage is one condition and projection of a Calc; nil evals pass
// the row on as it is.
type calcStage struct {
	keep  evaluator
	evals []evaluator
}

// calcFunc evaluates a Calc per row, with an evaluation context of its
// subtask's own (functions may keep scratch space and random state in it).
type calcFunc struct {
	stages []calcStage
	base   *functions.Context
	ctx    *functions.Context
}

func (f *calcFunc) Open(*stream.Context) error {
	f.ctx = subtaskContext(f.base)
	return nil
}

// subtaskContext copies a statement's evaluation context for one subtask.
func subtaskContext(base *functions.Context) *functions.Context {
	c := *base
	c.Scratch = nil
	c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	return &c
}

func (f *calcFunc) ProcessElement(r types.Record, _ *stream.Context, c stream.Collector[types.Record]) error {
	for _, st := range f.stages {
		if st.keep != nil {
			v, err := st.keep(f.ctx, r.Row)
			if err != nil {
				return rowError(err, r)
			}
			if v != true {
				return nil
			}
		}
		if st.evals == nil {
			continue
		}
		row := make(types.Row, len(st.evals))
		for i, e := range st.evals {
			v, err := e(f.ctx, r.Row)
			if err != nil {
				return rowError(err, r)
			}
			row[i] = v
		}
		r = types.Record{Kind: r.Kind, Row: row}
	}
	c.Collect(r)
	return nil
}

func rowError(err error, r types.Record) error {
	return fmt.Errorf("%w (row %s)", err, r)
}

// millis is the event time of a TIMESTAMP or TIMESTAMP_LTZ value.
func millis(v any) (int64, bool) {
	switch v := v.(type) {
	case types.Timestamp:
		return v.Millis, true
	case types.TimestampLTZ:
		return v.Millis, true
	}
	return 0, false
}

// windowTVF copies every row into the windows of its time column.
func (t *Translator) windowTVF(p *WindowTVF) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	ltz := p.Input.Fields()[p.TimeCol].Type.Kind == types.KindTimestampLTZ
	mk := func(ms int64) any {
		if ltz {
			return types.TimestampLTZ{Millis: ms}
		}
		return types.Timestamp{Millis: ms}
	}
	tc, kind, size, slide, step, offset := p.TimeCol, p.Kind, p.Size, p.Slide, p.Step, p.Offset
	s := stream.Process(in, stream.ProcessFunc[types.Record, types.Record](func(r types.Record, _ *stream.Context, c stream.Collector[types.Record]) error {
		if kind == "SESSION" {
			// The aggregation above finds the sessions.
			row := make(types.Row, len(r.Row), len(r.Row)+3)
			copy(row, r.Row)
			c.Collect(types.Record{Kind: r.Kind, Row: append(row, nil, nil, nil)})
			return nil
		}
		ts, ok := millis(r.Row[tc])
		if !ok {
			return nil // a NULL time: in no window, as in Flink
		}
		emit := func(start, end int64) {
			row := make(types.Row, len(r.Row), len(r.Row)+3)
			copy(row, r.Row)
			row = append(row, mk(start), mk(end), mk(end-1))
			c.Collect(types.Record{Kind: r.Kind, Row: row})
		}
		switch kind {
		case "TUMBLE":
			start := ts - floorMod(ts-offset, size)
			emit(start, start+size)
		case "HOP":
			last := ts - floorMod(ts-offset, slide)
			for start := last; start > ts-size; start -= slide {
				emit(start, start+size)
			}
		case "CUMULATE":
			start := ts - floorMod(ts-offset, size)
			for end := start + step; end <= start+size; end += step {
				if end > ts {
					emit(start, end)
				}
			}
		}
		return nil
	})).Name(t.OpName("WindowTableFunction"))
	return withCodec(s, p.fields), nil
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// keyOf encodes key columns so that equal keys (by SQL equality) have
// equal strings; it is the routing and state key.
func keyOf(row types.Row, idx []int, ts []types.DataType) string {
	var buf []byte
	for i, k := range idx {
		buf = types.AppendKey(buf, ts[i], row[k])
	}
	return string(buf)
}

// aggState is the state of one group: its key values, how many rows it
// holds (net of retractions) and the accumulators.
type aggState struct {
	keyRow types.Row
	count  int64
	accs   []functions.Accumulator
}

func (a *aggState) encode(keyTypes []types.DataType) []byte {
	buf := types.AppendRow(nil, keyTypes, a.keyRow)
	buf = binary.AppendVarint(buf, a.count)
	for _, acc := range a.accs {
		st := acc.AppendState(nil)
		buf = binary.AppendUvarint(buf, uint64(len(st)))
		buf = append(buf, st...)
	}
	return buf
}

func (a *aggState) decode(keyTypes []types.DataType, b []byte) error {
	keyRow, b, err := types.DecodeRow(keyTypes, b)
	if err != nil {
		return fmt.Errorf("corrupt aggregate state: %w", err)
	}
	a.keyRow = keyRow
	n, k := binary.Varint(b)
	if k <= 0 {
		return errors.New("corrupt aggregate state")
	}
	a.count, b = n, b[k:]
	for _, acc := range a.accs {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return errors.New("corrupt aggregate state")
		}
		if err := acc.DecodeState(b[k : k+int(l)]); err != nil {
			return err
		}
		b = b[k+int(l):]
	}
	return nil
}

// aggFunc is the keyed function of a group or window aggregation.
type aggFunc struct {
	p        *Aggregate
	keys     []int // input columns of the keys (plus the set id)
	batch    bool
	retract  bool
	window   bool
	keyTypes []types.DataType
	// ttl expires idle groups (table.exec.state.ttl); 0 for none.
	ttl time.Duration
	// mini: a mini-batch aggregation (miniagg.go); nil for none.
	mini *miniBatch
	// cached keeps decoded groups between checkpoints (aggcache.go).
	cached   bool
	cache    map[string]*aggState
	st       state.ValueState[[]byte]
	args     [][]any
	prevRows []any
}

func (f *aggFunc) Open(ctx *stream.KeyedContext[string]) error {
	f.st = bytesValue(ctx, "acc", f.ttl)
	f.args = make([][]any, len(f.p.Aggs))
	for i, a := range f.p.Aggs {
		f.args[i] = make([]any, len(a.Args))
	}
	if f.mini != nil {
		f.openMiniBatch()
	}
	if f.cached {
		f.cache = map[string]*aggState{}
	}
	return nil
}

func (f *aggFunc) newState() *aggState {
	s := &aggState{accs: make([]functions.Accumulator, len(f.p.Aggs))}
	for i, a := range f.p.Aggs {
		s.accs[i] = a.Agg.New(f.retract)
	}
	return s
}

func (f *aggFunc) load() (*aggState, bool, error) {
	s := f.newState()
	b, ok := f.st.Value()
	if !ok {
		return s, false, nil
	}
	if err := s.decode(f.keyTypes, b); err != nil {
		return nil, false, err
	}
	return s, true, nil
}

// result is the output row of a group: its keys and aggregate values.
func (f *aggFunc) result(s *aggState) (types.Row, error) {
	out := make(types.Row, 0, len(f.p.Keys)+len(f.p.Aggs))
	out = append(out, s.keyRow[:len(f.p.Keys)]...)
	for _, acc := range s.accs {
		v, err := acc.Result()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (f *aggFunc) ProcessElement(r types.Record, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.mini != nil {
		return f.buffer(r, ctx, out)
	}
	if f.window {
		end, _ := millis(r.Row[f.p.Keys[f.p.Window.End]])
		if f.p.Window.Proctime {
			ctx.RegisterProcessingTimeTimer(end - 1)
			// A bounded input ends before the clock reaches the last
			// windows: the end of the input (the final watermark)
			// closes them.
			ctx.RegisterEventTimeTimer(math.MaxInt64)
		} else {
			if end-1 <= ctx.CurrentWatermark() {
				return nil // late: its window has fired
			}
			ctx.RegisterEventTimeTimer(end - 1)
		}
	}
	s, existed, err := f.loadCached(ctx)
	if err != nil {
		return err
	}
	var before types.Row
	if existed && !f.batch && !f.window {
		if before, err = f.result(s); err != nil {
			return err
		}
	} else if !existed {
		s.keyRow = make(types.Row, len(f.keys))
		for i, k := range f.keys {
			s.keyRow[i] = r.Row[k]
		}
	}
	if err := accumulate(f.p.Aggs, s, f.args, r, r.Kind.IsAccumulate()); err != nil {
		return err
	}
	if f.batch && !existed && !f.window {
		// Batch: the group's one row is emitted when the input ends.
		ctx.RegisterEventTimeTimer(math.MaxInt64)
	}
	if f.batch || f.window {
		f.st.Update(s.encode(f.keyTypes))
		return nil
	}
	if s.count <= 0 {
		f.drop(ctx)
		if existed {
			out.Collect(types.Record{Kind: types.Delete, Row: before})
		}
		return nil
	}
	f.store(ctx, s)
	after, err := f.result(s)
	if err != nil {
		return err
	}
	emitGroupChange(out, existed, before, after, f.p.fields)
	return nil
}

func rowsEqual(a, b types.Row, fs []Field) bool {
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) {
			return false
		}
		if a[i] != nil && types.Compare(a[i], b[i], fs[i].Type) != 0 {
			return false
		}
	}
	return true
}

// OnTimer emits a window's row (or a batch group's) and clears it.
func (f *aggFunc) OnTimer(ts int64, ctx *stream.KeyedContext[string], out stream.Collector[types.Record]) error {
	if f.mini != nil {
		f.mini.timer = false // it fired
		return f.Flush(ctx, out)
	}
	s, existed, err := f.load()
	if err != nil || !existed {
		return err
	}
	f.st.Clear()
	if s.count <= 0 {
		return nil
	}
	res, err := f.result(s)
	if err != nil {
		return err
	}
	out.Collect(types.Record{Kind: types.Insert, Row: res})
	return nil
}

func (t *Translator) aggregate(p *Aggregate) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	inFields := p.Input.Fields()
	inTypes := fieldTypes(inFields)
	keys := slices.Clone(p.Keys)
	plan := p
	if p.Sets != nil {
		// Grouping sets: each row goes once into every set, with the
		// keys outside the set NULL and the set's number as an extra key,
		// so that a NULL key and a key absent from the set stay apart.
		setCol := len(inFields)
		sets := p.Sets
		exp := stream.Process(in, stream.ProcessFunc[types.Record, types.Record](func(r types.Record, _ *stream.Context, c stream.Collector[types.Record]) error {
			for si, s := range sets {
				row := make(types.Row, len(r.Row)+1)
				copy(row, r.Row)
				for ki, k := range p.Keys {
					if !slices.Contains(s, ki) {
						row[k] = nil
					}
				}
				row[setCol] = int32(si)
				c.Collect(types.Record{Kind: r.Kind, Row: row})
			}
			return nil
		})).Name(t.OpName("Expand"))
		inFields = append(slices.Clone(inFields), Field{Name: "$e", Type: types.Int().NotNull()})
		inTypes = fieldTypes(inFields)
		in = withCodec(exp, inFields)
		keys = append(keys, setCol)
	}
	keyTypes := make([]types.DataType, len(keys))
	for i, k := range keys {
		keyTypes[i] = inTypes[k]
	}
	if len(p.Keys) == 0 && t.Batch {
		return t.globalBatchAggregate(in, p)
	}
	if p.Window != nil && p.Window.Gap > 0 {
		return t.sessionAggregate(in, p, inFields)
	}
	if mini, two := t.aggStrategy(p); mini {
		return t.miniBatchAggregate(in, p, inFields, keys, keyTypes, two), nil
	}
	ks := stream.KeyBy(in, func(r types.Record) string { return keyOf(r.Row, keys, keyTypes) })
	f := &aggFunc{p: plan, keys: keys, batch: t.Batch, retract: updating(p.Input, t.Batch), window: p.Window != nil, keyTypes: keyTypes}
	if p.Window == nil {
		f.ttl = t.stateTTL()
		f.cached = !t.Batch && f.ttl == 0
	}
	kind := "GroupAggregate"
	if p.Window != nil {
		kind = "WindowAggregate"
	}
	s := stream.KeyedProcess[string, types.Record, types.Record](ks, f).Name(t.OpName(kind)).UID(t.nextUID("agg"))
	if len(p.Keys) == 0 {
		s = s.SetParallelism(1)
	}
	return withCodec(s, p.fields), nil
}

// globalFunc aggregates a whole bounded input into one row, which SQL
// requires even when the input is empty (COUNT(*) of nothing is 0).
type globalFunc struct {
	p     *Aggregate
	s     *aggState
	args  [][]any
	batch bool
}

func (g *globalFunc) ProcessElement(r types.Record, _ *stream.Context, _ stream.Collector[types.Record]) error {
	if g.s == nil {
		g.s = &aggState{accs: make([]functions.Accumulator, len(g.p.Aggs))}
		g.args = make([][]any, len(g.p.Aggs))
		for i, a := range g.p.Aggs {
			g.s.accs[i] = a.Agg.New(true)
			g.args[i] = make([]any, len(a.Args))
		}
	}
	for i, a := range g.p.Aggs {
		if a.Filter >= 0 && r.Row[a.Filter] != true {
			continue
		}
		for j, c := range a.Args {
			g.args[i][j] = r.Row[c]
		}
		var err error
		if r.Kind.IsAccumulate() {
			err = g.s.accs[i].Add(g.args[i])
		} else {
			err = g.s.accs[i].Retract(g.args[i])
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a.Agg.Name, err)
		}
	}
	return nil
}

func (g *globalFunc) Finish(_ *stream.Context, out stream.Collector[types.Record]) error {
	if g.s == nil {
		g.s = &aggState{accs: make([]functions.Accumulator, len(g.p.Aggs))}
		for i, a := range g.p.Aggs {
			g.s.accs[i] = a.Agg.New(true)
		}
	}
	row := make(types.Row, len(g.p.Aggs))
	for i, acc := range g.s.accs {
		v, err := acc.Result()
		if err != nil {
			return err
		}
		row[i] = v
	}
	out.Collect(types.Record{Kind: types.Insert, Row: row})
	return nil
}

func (t *Translator) globalBatchAggregate(in *Rows, p *Aggregate) (*Rows, error) {
	s := stream.Process[types.Record, types.Record](in.Global(), &globalFunc{p: p, batch: true}).
		Name("GlobalAggregate").SetParallelism(1)
	return withCodec(s, p.fields), nil
}

// sortFunc sorts its whole (bounded) input when it ends.
type sortFunc struct {
	p    *Sort
	ts   []types.DataType
	rows []types.Row
}

func (f *sortFunc) ProcessElement(r types.Record, _ *stream.Context, _ stream.Collector[types.Record]) error {
	if !r.Kind.IsAccumulate() {
		return errors.New("ORDER BY of an updating input")
	}
	f.rows = append(f.rows, r.Row)
	return nil
}

func (f *sortFunc) Finish(_ *stream.Context, out stream.Collector[types.Record]) error {
	slices.SortStableFunc(f.rows, func(a, b types.Row) int { return compareRows(a, b, f.p.Keys, f.ts) })
	rows := f.rows
	if f.p.Offset > 0 {
		rows = rows[min(int64(len(rows)), f.p.Offset):]
	}
	if f.p.Limit >= 0 {
		rows = rows[:min(int64(len(rows)), f.p.Limit)]
	}
	for _, r := range rows {
		out.Collect(types.Record{Kind: types.Insert, Row: r})
	}
	return nil
}

func compareRows(a, b types.Row, keys []SortKey, ts []types.DataType) int {
	for _, k := range keys {
		x, y := a[k.Index], b[k.Index]
		var c int
		switch {
		case x == nil && y == nil:
			c = 0
		case x == nil:
			c = -1
			if !k.NullsFirst {
				c = 1
			}
			return c
		case y == nil:
			c = 1
			if !k.NullsFirst {
				c = -1
			}
			return c
		default:
			c = types.Compare(x, y, ts[k.Index])
			if k.Desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func (t *Translator) sort(p *Sort) (*Rows, error) {
	in, err := t.Translate(p.Input)
	if err != nil {
		return nil, err
	}
	if !t.Batch {
		if temporalSort(p) {
			return t.temporalSortOp(in, p), nil
		}
		if len(p.Keys) > 0 {
			return nil, errNonTimeSort
		}
		// LIMIT alone: the first rows that arrive.
		n := p.Limit
		off := p.Offset
		var seen int64
		s := stream.Process(in.Global(), stream.ProcessFunc[types.Record, types.Record](func(r types.Record, _ *stream.Context, c stream.Collector[types.Record]) error {
			seen++
			if seen > off && (n < 0 || seen <= off+n) {
				c.Collect(r)
			}
			return nil
		})).Name(t.OpName("Limit")).SetParallelism(1)
		return withCodec(s, p.Fields()), nil
	}
	f := &sortFunc{p: p, ts: fieldTypes(p.Fields())}
	s := stream.Process[types.Record, types.Record](in.Global(), f).Name(t.OpName("Sort")).SetParallelism(1)
	return withCodec(s, p.Fields()), nil
}

var _ = cmp.Compare[int]
