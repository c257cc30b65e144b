package planner

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// LookupFunc finds the rows of a table whose key columns equal a key, at
// the time of the call. One is opened per subtask.
type LookupFunc interface {
	// Lookup returns the table's rows (a value at every column) whose
	// key columns equal key (one value per key column, in the column's
	// type, never NULL).
	Lookup(ctx context.Context, key types.Row) ([]types.Row, error)
	Close() error
}

// LookupCache is Flink's PARTIAL lookup cache: per subtask, the rows of
// up to MaxRows keys, each for ExpireAfterWrite (0: until evicted), the
// least recently used evicted first; CacheMissingKey keeps keys without
// rows too.
type LookupCache struct {
	MaxRows          int
	ExpireAfterWrite time.Duration
	CacheMissingKey  bool
}

// LookupSource is what a connector offers for lookup joins on given key
// columns of a table.
type LookupSource struct {
	// Open opens a subtask's lookup function.
	Open func(ctx context.Context) (LookupFunc, error)
	// Cache, if set, caches lookups per subtask.
	Cache *LookupCache
}

// LookupFactory makes a table's lookup source for lookups by the given
// columns (indexes into the table's columns).
type LookupFactory func(c *TableContext, keys []int) (*LookupSource, error)

var lookups = map[string]LookupFactory{}

// RegisterLookup makes a connector's tables usable as the right side of
// lookup joins: a processing-time temporal join (FOR SYSTEM_TIME AS OF a
// PROCTIME() attribute) with such a table looks the right rows up per
// left row, instead of reading the table as a stream.
func RegisterLookup(name string, f LookupFactory) {
	registry.Lock()
	defer registry.Unlock()
	lookups[name] = f
}

// lookupScan returns the table scan a processing-time temporal join
// looks up, nil if its right side is not a table whose connector offers
// lookups.
func lookupScan(p *Join) *Scan {
	if !p.Temporal || p.Versioned != nil {
		return nil
	}
	s, ok := p.Right.(*Scan)
	if !ok || s.Computed != nil || len(s.Filters) > 0 || s.Watermark != nil {
		return nil
	}
	registry.RLock()
	defer registry.RUnlock()
	if _, ok := lookups[s.Table.Options["connector"]]; !ok {
		return nil
	}
	return s
}

func (p *Join) describeLookup(s *Scan) string {
	l, r := p.Left.Fields(), p.Right.Fields()
	var keys []string
	for i := range p.LeftKeys {
		keys = append(keys, r[p.RightKeys[i]].Name+"="+l[p.LeftKeys[i]].Name)
	}
	typ := map[string]string{"INNER": "InnerJoin", "LEFT": "LeftOuterJoin"}[p.Type]
	d := fmt.Sprintf("LookupJoin(table=[%s], joinType=[%s], lookup=[%s]", s.Table.Path, typ, strings.Join(keys, ", "))
	if p.Residual != nil {
		d += ", where=[" + p.Residual.String() + "]"
	}
	return d + ", select=[" + names(p.fields) + "])"
}

// lookupJoin translates a join whose right side is looked up: per left
// row, the right rows with its key, checked against the residual.
func (t *Translator) lookupJoin(p *Join, s *Scan) (*Rows, error) {
	rf := p.Right.Fields()
	if len(p.LeftKeys) == 0 {
		return nil, fmt.Errorf("table %s: a lookup join needs an equality condition on the table's columns (Temporal table join requires an equality condition on fields of table [%s])", s.Table.Path, s.Table.Path)
	}
	for _, k := range p.RightKeys {
		if k >= len(rf) {
			return nil, fmt.Errorf("table %s: a lookup join's equalities must be on the table's columns, not on expressions of them", s.Table.Path)
		}
	}
	registry.RLock()
	f := lookups[s.Table.Options["connector"]]
	registry.RUnlock()
	ls, err := f(t.Connectors.context(t, s.Table), p.RightKeys)
	if err != nil {
		return nil, err
	}
	l, err := t.Translate(p.Left)
	if err != nil {
		return nil, err
	}
	fn := &lookupJoinFunc{src: ls, table: s.Table.Path.String(), lTypes: fieldTypes(p.Left.Fields()), rTypes: fieldTypes(rf),
		leftKeys: p.LeftKeys, rightKeys: p.RightKeys, outer: p.Type == "LEFT", ctx: t}
	if p.Residual != nil {
		fn.residual = compile(p.Residual)
	}
	out := stream.Process[types.Record, types.Record](l, fn).Name(t.OpName("LookupJoin")).UID(t.nextUID("lookup-join"))
	return withCodec(out, p.fields), nil
}

// lookupJoinFunc runs a lookup join in one subtask.
type lookupJoinFunc struct {
	src                 *LookupSource
	table               string
	lTypes, rTypes      []types.DataType
	leftKeys, rightKeys []int
	outer               bool
	residual            evaluator
	ctx                 *Translator

	evalCtx *functions.Context
	lookup  LookupFunc
	cache   *lruCache
	run     context.Context
	stop    context.CancelFunc
}

func (f *lookupJoinFunc) Open(*stream.Context) error {
	f.evalCtx = subtaskContext(f.ctx.Ctx)
	f.run, f.stop = context.WithCancel(context.Background())
	lf, err := f.src.Open(f.run)
	if err != nil {
		f.stop()
		return fmt.Errorf("lookup join on table %s: %w", f.table, err)
	}
	f.lookup = lf
	if c := f.src.Cache; c != nil {
		f.cache = &lruCache{opts: *c, byKey: map[string]*list.Element{}, order: list.New()}
	}
	return nil
}

func (f *lookupJoinFunc) Close() error {
	if f.stop != nil {
		f.stop()
	}
	if f.lookup != nil {
		return f.lookup.Close()
	}
	return nil
}

func (f *lookupJoinFunc) ProcessElement(r types.Record, _ *stream.Context, out stream.Collector[types.Record]) error {
	key := make(types.Row, len(f.leftKeys))
	var rights []types.Row
	null := false
	for i, k := range f.leftKeys {
		v := r.Row[k]
		rt := f.rTypes[f.rightKeys[i]]
		if v != nil && !f.lTypes[k].EqualIgnoringNull(rt) {
			c, err := types.Cast(v, f.lTypes[k], rt)
			if err != nil {
				v = nil // a value the column cannot hold matches no row
			} else {
				v = c
			}
		}
		if v == nil {
			null = true
			break
		}
		key[i] = v
	}
	if !null {
		var err error
		if rights, err = f.find(key); err != nil {
			return err
		}
	}
	matched := false
	for _, rr := range rights {
		row := make(types.Row, len(f.lTypes)+len(f.rTypes))
		copy(row, r.Row)
		copy(row[len(f.lTypes):], rr)
		if f.residual != nil {
			v, err := f.residual(f.evalCtx, row)
			if err != nil {
				return rowError(err, types.Record{Kind: r.Kind, Row: row})
			}
			if v != true {
				continue
			}
		}
		matched = true
		out.Collect(types.Record{Kind: r.Kind, Row: row})
	}
	if !matched && f.outer {
		row := make(types.Row, len(f.lTypes)+len(f.rTypes))
		copy(row, r.Row)
		out.Collect(types.Record{Kind: r.Kind, Row: row})
	}
	return nil
}

// find looks a key up, through the cache if there is one.
func (f *lookupJoinFunc) find(key types.Row) ([]types.Row, error) {
	var ck string
	if f.cache != nil {
		kt := make([]types.DataType, len(key))
		for i, k := range f.rightKeys {
			kt[i] = f.rTypes[k]
		}
		ck = keyOf(key, seq(len(key)), kt)
		if rows, ok := f.cache.get(ck, time.Now()); ok {
			return rows, nil
		}
	}
	rows, err := f.lookup.Lookup(f.run, key)
	if err != nil {
		return nil, fmt.Errorf("lookup join on table %s: %w", f.table, err)
	}
	if f.cache != nil && (len(rows) > 0 || f.cache.opts.CacheMissingKey) {
		f.cache.put(ck, rows, time.Now())
	}
	return rows, nil
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// lruCache is a subtask's lookup cache.
type lruCache struct {
	opts  LookupCache
	byKey map[string]*list.Element
	order *list.List // front: most recently used
}

type cacheEntry struct {
	key     string
	rows    []types.Row
	written time.Time
}

func (c *lruCache) get(key string, now time.Time) ([]types.Row, bool) {
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	ent := e.Value.(*cacheEntry)
	if c.opts.ExpireAfterWrite > 0 && now.Sub(ent.written) >= c.opts.ExpireAfterWrite {
		c.order.Remove(e)
		delete(c.byKey, key)
		return nil, false
	}
	c.order.MoveToFront(e)
	return ent.rows, true
}

func (c *lruCache) put(key string, rows []types.Row, now time.Time) {
	if e, ok := c.byKey[key]; ok {
		c.order.Remove(e)
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, rows: rows, written: now})
	for c.opts.MaxRows > 0 && c.order.Len() > c.opts.MaxRows {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
}
