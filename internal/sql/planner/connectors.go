package planner

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// Connectors makes the sources and sinks of tables from their 'connector'
// option, through the factories registered with RegisterSource and
// RegisterSink.
type Connectors struct {
	// Print is where the print connector writes (standard output when
	// nil).
	Print io.Writer
	// Local holds sources of one session by connector name, consulted
	// before the registry: the DataStreams a Table API program turned
	// into tables.
	Local map[string]SourceFactory
	// Pacers pace the reading of filesystem tables by their 'path'
	// option: a benchmark's rate, or a test that decides when each row
	// is read (file.Pacer).
	Pacers map[string]file.Pacer
	mu     sync.Mutex
}

// TableContext is what a connector factory gets: the table, the job's
// environment, and the session's settings.
type TableContext struct {
	Env   *stream.Environment
	Table *catalog.Table
	// Batch says the job runs in batch mode.
	Batch bool
	// Loc is the session time zone.
	Loc *time.Location
	// Print is the print connector's output.
	Print   io.Writer
	printMu *sync.Mutex
	tr      *Translator
	needed  []bool
	// Filters are the conditions the scan applies to the source's rows
	// (pushed down from WHERE); a source may use them to skip data, such
	// as partitions, but need not.
	Filters []Expr
	// watermarks is the table's watermark strategy on the source's rows,
	// nil without a WATERMARK; pushed: the source took it.
	watermarks *stream.WatermarkStrategy[types.Record]
	pushed     bool
}

// SourceWatermarks hands a source connector the table's WATERMARK FOR as
// a strategy on the rows it produces (computed columns are computed by
// the strategy where it needs them), for watermarks per split inside the
// source, as Flink's SupportsWatermarkPushDown does for Kafka: a source
// that calls it must apply it (stream.FromSourceWithWatermarks), and the
// scan then adds no watermark assigner of its own. ok is false for a
// table without a watermark.
func (c *TableContext) SourceWatermarks() (s stream.WatermarkStrategy[types.Record], ok bool) {
	if c.watermarks == nil {
		return s, false
	}
	c.pushed = true
	return *c.watermarks, true
}

// Needed says whether the query reads column i of the table. A source
// may leave the columns it does not read NULL (projection push-down):
// a narrower SELECT, fewer fields decoded.
func (c *TableContext) Needed(i int) bool {
	return c.needed == nil || i >= len(c.needed) || c.needed[i]
}

// UID returns a new operator UID for the connector's operator, derived
// from the statement, so that a restart of the same statement restores
// the connector's state.
func (c *TableContext) UID(kind string) string { return c.tr.nextUID(kind) }

// Name returns the name of the connector's operator, as Flink's planner
// names it: the table's name and the operator's number in the statement,
// "src[1]"; the job graph shows it as "Source: src[1]" or "Sink: src[1]".
func (c *TableContext) Name() string { return c.tr.OpName(c.Table.Path.Name) }

// Rows gives a stream of the table's records the codec of its columns.
func (c *TableContext) Rows(s *stream.Stream[types.Record]) *Rows {
	fields := make([]Field, len(c.Table.Columns))
	for i, col := range c.Table.Columns {
		fields[i] = Field{Name: col.Name, Type: col.Type}
	}
	return withCodec(s, fields)
}

// Option returns a table option, and whether it is set.
func (c *TableContext) Option(key string) (string, bool) {
	v, ok := c.Table.Options[key]
	return v, ok
}

// OptionError says which option of the table is wrong.
func (c *TableContext) OptionError(key, format string, args ...any) error {
	return optionError(c.Table, key, format, args...)
}

// CheckOptions refuses options the connector does not know, naming the
// ones it does; prefixes admit families of keys ("fields.").
func (c *TableContext) CheckOptions(known []string, prefixes ...string) error {
	return checkOptions(c.Table, known, prefixes...)
}

// SourceFactory builds the stream of a table's rows: a record has a value
// at every column position (NULL at computed columns, which the planner
// fills in).
type SourceFactory func(c *TableContext) (*Rows, error)

// SinkFactory attaches a table's sink to a stream of rows with the given
// fields (the table's physical columns). updating says the stream carries
// updates and deletes; a sink that takes appends only must refuse it with
// ErrUpdatesNotSupported.
type SinkFactory func(c *TableContext, in *Rows, fields []Field, updating bool) error

// ErrUpdatesNotSupported is returned by sinks of append-only tables for an
// updating query.
var ErrUpdatesNotSupported = errors.New("doesn't support consuming update changes")

var registry = struct {
	sync.RWMutex
	sources   map[string]SourceFactory
	sinks     map[string]SinkFactory
	changelog map[string]bool
}{sources: map[string]SourceFactory{}, sinks: map[string]SinkFactory{}, changelog: map[string]bool{}}

// RegisterChangelogSource says that a connector's source produces updates
// and deletes (upsert-kafka), so that the planner treats its scans as
// updating: aggregations over them retract, and append-only sinks refuse
// them.
func RegisterChangelogSource(name string) {
	registry.Lock()
	defer registry.Unlock()
	registry.changelog[name] = true
}

// changelogSource reports whether a table's source produces updates.
func changelogSource(t *catalog.Table) bool {
	registry.RLock()
	defer registry.RUnlock()
	return registry.changelog[t.Options["connector"]]
}

// RegisterSource makes a connector readable by its 'connector' name.
func RegisterSource(name string, f SourceFactory) {
	registry.Lock()
	defer registry.Unlock()
	registry.sources[name] = f
}

// RegisterSink makes a connector writable by its 'connector' name.
func RegisterSink(name string, f SinkFactory) {
	registry.Lock()
	defer registry.Unlock()
	registry.sinks[name] = f
}

func init() {
	RegisterSource("datagen", datagenSource)
	RegisterSource("filesystem", filesystemSource)
	RegisterSink("filesystem", filesystemSink)
	RegisterSink("print", printSinkFactory)
	RegisterSink("blackhole", func(c *TableContext, in *Rows, _ []Field, _ bool) error {
		stream.SinkTo(in, blackhole{}, c.Name()).UID(c.UID("blackhole"))
		return nil
	})
}

func keyList(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func (c *Connectors) context(tr *Translator, t *catalog.Table) *TableContext {
	return &TableContext{Env: tr.Env, Table: t, Batch: tr.Batch, Loc: tr.Ctx.Location(), Print: c.Print, printMu: &c.mu, tr: tr}
}

// Source builds the stream of a table's rows; filters are the scan's.
func (c *Connectors) Source(tr *Translator, t *catalog.Table, filters ...Expr) (*Rows, error) {
	return c.source(tr, t, nil, filters)
}

// source builds the stream of a table's rows, of which the plan reads
// the needed columns (nil: all) and keeps those that pass the filters.
func (c *Connectors) source(tr *Translator, t *catalog.Table, needed []bool, filters []Expr) (*Rows, error) {
	rows, _, err := c.scanSource(tr, t, needed, filters, nil)
	return rows, err
}

// scanSource is source with the table's watermark strategy offered to the
// connector (nil: none); pushed reports that the connector took it.
func (c *Connectors) scanSource(tr *Translator, t *catalog.Table, needed []bool, filters []Expr, wm *stream.WatermarkStrategy[types.Record]) (rows *Rows, pushed bool, err error) {
	ctx := c.context(tr, t)
	ctx.needed, ctx.Filters, ctx.watermarks = needed, filters, wm
	rows, err = c.factorySource(ctx, t)
	return rows, ctx.pushed, err
}

func (c *Connectors) factorySource(ctx *TableContext, t *catalog.Table) (*Rows, error) {
	conn := t.Options["connector"]
	if conn == "" {
		return nil, fmt.Errorf("table %s has no 'connector' option", t.Path)
	}
	if f, ok := c.Local[conn]; ok {
		return f(ctx)
	}
	registry.RLock()
	f, ok := registry.sources[conn]
	known := map[string]bool{}
	for k := range registry.sources {
		known[k] = true
	}
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("table %s: connector '%s' cannot be read (sources: %s)", t.Path, conn, keyList(known))
	}
	return f(ctx)
}

// Sink attaches a table's sink to a stream; updating says whether the
// stream carries updates, which sinks for appends refuse.
func (c *Connectors) Sink(tr *Translator, t *catalog.Table, in *Rows, fields []Field, updating bool, producer string) error {
	conn := t.Options["connector"]
	if conn == "" {
		return fmt.Errorf("table %s has no 'connector' option", t.Path)
	}
	registry.RLock()
	f, ok := registry.sinks[conn]
	known := map[string]bool{}
	for k := range registry.sinks {
		known[k] = true
	}
	registry.RUnlock()
	if !ok {
		return fmt.Errorf("table %s: connector '%s' cannot be written (sinks: %s)", t.Path, conn, keyList(known))
	}
	err := f(c.context(tr, t), in, fields, updating)
	if errors.Is(err, ErrUpdatesNotSupported) {
		return fmt.Errorf("Table sink '%s' doesn't support consuming update changes which is produced by node %s", t.Path, producer)
	}
	return err
}

func printSinkFactory(c *TableContext, in *Rows, fields []Field, _ bool) error {
	if err := c.CheckOptions([]string{"print-identifier", "standard-error", "sink.parallelism"}); err != nil {
		return err
	}
	w := c.Print
	if w == nil {
		w = os.Stdout
	}
	if c.Table.Options["standard-error"] == "true" {
		w = os.Stderr
	}
	prefix := c.Table.Options["print-identifier"]
	if prefix != "" {
		prefix += "> "
	}
	stream.SinkTo(in, &printSink{w: w, mu: c.printMu, prefix: prefix, types: fieldTypes(fields), loc: c.Loc}, c.Name()).UID(c.UID("print"))
	return nil
}

// optionError says which option of which table is wrong.
func optionError(t *catalog.Table, key, format string, args ...any) error {
	return fmt.Errorf("table %s, option '%s': %s", t.Path, key, fmt.Sprintf(format, args...))
}

// checkOptions refuses options a connector does not know, as Flink does,
// naming the ones it supports.
func checkOptions(t *catalog.Table, known []string, prefixes ...string) error {
	var unknown []string
	for k := range t.Options {
		if k == "connector" || slices.Contains(known, k) {
			continue
		}
		ok := false
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				ok = true
			}
		}
		if !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("table %s: unsupported options for connector '%s': %s (supported: %s)", t.Path, t.Options["connector"], strings.Join(unknown, ", "), strings.Join(append(slices.Clone(known), prefixes...), ", "))
	}
	return nil
}

// physical lists the table's physical columns.
func physical(t *catalog.Table) []int {
	var out []int
	for i, c := range t.Columns {
		if c.Kind == catalog.Physical {
			out = append(out, i)
		}
	}
	return out
}

// printSink writes rows as Flink's print connector does: "+I[1, a]".
type printSink struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string
	types  []types.DataType
	loc    *time.Location
}

func (s *printSink) NewWriter(_ context.Context, sc connector.SinkContext) (connector.SinkWriter[types.Record], error) {
	prefix := s.prefix
	if sc.Parallelism > 1 {
		prefix += strconv.Itoa(sc.Subtask+1) + "> "
	}
	return &printWriter{s: s, prefix: prefix}, nil
}

type printWriter struct {
	s      *printSink
	prefix string
	buf    []byte
}

// FormatRow renders a record as Flink prints it: +I[1, a, NULL].
func FormatRow(r types.Record, ts []types.DataType, loc *time.Location) string {
	var b strings.Builder
	b.WriteString(r.Kind.String())
	b.WriteByte('[')
	for i, v := range r.Row {
		if i > 0 {
			b.WriteString(", ")
		}
		if v == nil {
			b.WriteString("NULL")
			continue
		}
		b.WriteString(types.FormatIn(v, ts[i], loc))
	}
	b.WriteByte(']')
	return b.String()
}

func (w *printWriter) Write(r types.Record, _ int64) error {
	line := w.prefix + FormatRow(r, w.s.types, w.s.loc) + "\n"
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	_, err := io.WriteString(w.s.w, line)
	return err
}

func (w *printWriter) Flush() error { return nil }
func (w *printWriter) Close() error { return nil }

type blackhole struct{}

func (blackhole) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[types.Record], error) {
	return blackhole{}, nil
}
func (blackhole) Write(types.Record, int64) error { return nil }
func (blackhole) Flush() error                    { return nil }
func (blackhole) Close() error                    { return nil }

// datagen: Flink's data generator connector. Values are a function of the
// row number, so a restarted job generates the same rows.
func datagenSource(c *TableContext) (*Rows, error) {
	t := c.Table
	if err := checkOptions(t, []string{"number-of-rows", "rows-per-second", "scan.parallelism"}, "fields."); err != nil {
		return nil, err
	}
	count := int64(-1)
	if s, ok := t.Options["number-of-rows"]; ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return nil, optionError(t, "number-of-rows", "%q is not a non-negative integer", s)
		}
		count = n
	}
	rate := 10000.0
	if s, ok := t.Options["rows-per-second"]; ok {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r <= 0 {
			return nil, optionError(t, "rows-per-second", "%q is not a positive number", s)
		}
		rate = r
	}
	phys := physical(t)
	gens := make([]func(i int64) any, len(t.Columns))
	for _, ci := range phys {
		col := t.Columns[ci]
		g, n, err := fieldGenerator(t, col)
		if err != nil {
			return nil, err
		}
		gens[ci] = g
		// A sequence bounds the table to its length, as in Flink.
		if n >= 0 && (count < 0 || n < count) {
			count = n
		}
	}
	gen := &stream.Generator[types.Record]{Count: count, Rate: rate, Fn: func(i int64) types.Record {
		row := make(types.Row, len(gens))
		for j, g := range gens {
			if g != nil {
				row[j] = g(i)
			}
		}
		return types.Record{Kind: types.Insert, Row: row}
	}}
	return c.Rows(stream.FromSource[types.Record](c.Env, gen, c.Name()).UID(c.UID("datagen"))), nil
}

var seed = maphash.MakeSeed()

// mix is a stable pseudo-random 64-bit value of a row number and a column
// (splitmix64), the same in every process.
func mix(i int64, col string) uint64 {
	h := uint64(i) * 0x9e3779b97f4a7c15
	for _, c := range []byte(col) {
		h = (h ^ uint64(c)) * 0xbf58476d1ce4e5b9
	}
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	return h ^ h>>29
}

// fieldGenerator returns the generator of a column and, for sequences,
// how many values it has (-1 otherwise).
func fieldGenerator(t *catalog.Table, c catalog.Column) (func(int64) any, int64, error) {
	opt := func(k string) (string, bool) {
		v, ok := t.Options["fields."+c.Name+"."+k]
		return v, ok
	}
	num := func(k string, def float64) (float64, error) {
		s, ok := opt(k)
		if !ok {
			return def, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, optionError(t, "fields."+c.Name+"."+k, "%q is not a number", s)
		}
		return f, nil
	}
	kind, _ := opt("kind")
	if kind == "" {
		kind = "random"
	}
	nullRate, err := num("null-rate", 0)
	if err != nil {
		return nil, 0, err
	}
	ct := c.Type
	switch kind {
	case "sequence":
		start, err := num("start", math.NaN())
		if err != nil {
			return nil, 0, err
		}
		end, err := num("end", math.NaN())
		if err != nil {
			return nil, 0, err
		}
		if math.IsNaN(start) || math.IsNaN(end) || end < start {
			return nil, 0, optionError(t, "fields."+c.Name+".kind", "a sequence needs 'fields.%s.start' <= 'fields.%s.end'", c.Name, c.Name)
		}
		s := int64(start)
		gen := func(i int64) any {
			v, _ := types.Cast(s+i, types.BigInt(), ct)
			return v
		}
		if ct.Kind.IsCharacterString() {
			gen = func(i int64) any { return strconv.FormatInt(s+i, 10) }
		}
		return gen, int64(end) - s + 1, nil
	case "random":
	default:
		return nil, 0, optionError(t, "fields."+c.Name+".kind", "%q is not 'random' or 'sequence'", kind)
	}
	lo, err := num("min", math.NaN())
	if err != nil {
		return nil, 0, err
	}
	hi, err := num("max", math.NaN())
	if err != nil {
		return nil, 0, err
	}
	length, err := num("length", 100)
	if err != nil {
		return nil, 0, err
	}
	maxPast, _ := opt("max-past")
	var past time.Duration
	if maxPast != "" {
		if past, err = parseDuration(maxPast); err != nil {
			return nil, 0, optionError(t, "fields."+c.Name+".max-past", "%v", err)
		}
	}
	name := c.Name
	intRange := func(dlo, dhi float64) (int64, int64) {
		if math.IsNaN(lo) {
			lo = dlo
		}
		if math.IsNaN(hi) {
			hi = dhi
		}
		return int64(lo), int64(hi)
	}
	var gen func(i int64) any
	switch ct.Kind {
	case types.KindBoolean:
		gen = func(i int64) any { return mix(i, name)&1 == 1 }
	case types.KindTinyInt, types.KindSmallInt, types.KindInt, types.KindBigInt:
		bounds := map[types.Kind][2]float64{types.KindTinyInt: {math.MinInt8, math.MaxInt8}, types.KindSmallInt: {math.MinInt16, math.MaxInt16},
			types.KindInt: {math.MinInt32, math.MaxInt32}, types.KindBigInt: {math.MinInt64, math.MaxInt64}}[ct.Kind]
		l, h := intRange(bounds[0], bounds[1])
		span := uint64(h - l + 1)
		gen = func(i int64) any {
			v := l
			if span != 0 {
				v = l + int64(mix(i, name)%span)
			} else {
				v = int64(mix(i, name))
			}
			return types.NarrowInt(v, ct.Kind)
		}
	case types.KindFloat, types.KindDouble, types.KindDecimal:
		if math.IsNaN(lo) {
			lo = 0
		}
		if math.IsNaN(hi) {
			hi = 1
		}
		gen = func(i int64) any {
			f := lo + (hi-lo)*float64(mix(i, name)>>11)/float64(1<<53)
			v, _ := types.Cast(f, types.Double(), ct)
			return v
		}
	case types.KindChar, types.KindVarChar:
		n := int(length)
		if ct.Length > 0 && ct.Length < n {
			n = ct.Length
		}
		gen = func(i int64) any {
			b := make([]byte, n)
			h := mix(i, name)
			for j := range b {
				if j%10 == 0 && j > 0 {
					h = mix(int64(h), name)
				}
				b[j] = "0123456789abcdefghijklmnopqrstuvwxyz"[h%36]
				h /= 36
			}
			return string(b)
		}
	case types.KindTimestamp, types.KindTimestampLTZ:
		gen = func(i int64) any {
			now := time.Now().UnixMilli()
			if past > 0 {
				now -= int64(mix(i, name) % uint64(past.Milliseconds()+1))
			}
			if ct.Kind == types.KindTimestampLTZ {
				return types.TimestampLTZ{Millis: now}
			}
			return types.Timestamp{Millis: now}
		}
	case types.KindDate:
		gen = func(i int64) any { return types.Date(time.Now().Unix()/86400 - int64(mix(i, name)%365)) }
	default:
		return nil, 0, fmt.Errorf("table %s: datagen cannot generate column %s of type %s", t.Path, c.Name, ct)
	}
	if nullRate > 0 {
		inner := gen
		gen = func(i int64) any {
			if float64(mix(i, name+"\x00null")>>11)/float64(1<<53) < nullRate {
				return nil
			}
			return inner(i)
		}
	}
	return gen, -1, nil
}

// parseDuration reads Flink's durations: "5 s", "10min", "1 h", "500ms".
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		n, err := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * time.Millisecond, err
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	mult := map[string]time.Duration{"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
		"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
		"min": time.Minute, "minute": time.Minute, "minutes": time.Minute, "m": time.Minute,
		"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q", s, unit)
	}
	return time.Duration(n * float64(mult)), nil
}

func parseBytes(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for suf, m := range map[string]int64{"kb": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "m": 1 << 20, "gb": 1 << 30, "g": 1 << 30, "b": 1} {
		if strings.HasSuffix(s, suf) {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(s, suf)), 10, 64)
			if err == nil {
				return v * m, nil
			}
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return v * mult, nil
}

// rowFormat is the CSV or JSON lines format of a filesystem table whose
// files hold the columns cols (filesystem_partitions.go).
func rowFormat(t *catalog.Table, cols []int) (*lineFormat, error) {
	f := &lineFormat{loc: time.UTC}
	for _, i := range cols {
		f.cols = append(f.cols, i)
		f.names = append(f.names, t.Columns[i].Name)
		f.types = append(f.types, t.Columns[i].Type)
	}
	f.width = len(t.Columns)
	switch t.Options["format"] {
	case "csv":
		f.csv = true
		f.delim = ','
		if d, ok := t.Options["csv.field-delimiter"]; ok {
			r := []rune(d)
			if len(r) != 1 {
				return nil, optionError(t, "csv.field-delimiter", "%q is not a single character", d)
			}
			f.delim = r[0]
		}
		f.nullLiteral, f.hasNull = t.Options["csv.null-literal"]
		f.ignoreErrors = t.Options["csv.ignore-parse-errors"] == "true"
	case "json":
		f.ignoreErrors = t.Options["json.ignore-parse-errors"] == "true"
	case "":
		return nil, optionError(t, "format", "the filesystem connector needs a format (csv or json)")
	default:
		return nil, optionError(t, "format", "%q is not supported (csv, json)", t.Options["format"])
	}
	return f, nil
}

// lineFormat reads and writes rows as CSV or JSON lines.
type lineFormat struct {
	csv          bool
	delim        rune
	nullLiteral  string
	hasNull      bool
	ignoreErrors bool
	cols         []int  // table positions of the physical columns
	skip         []bool // by physical column: not read by the query (nil: none)
	names        []string
	types        []types.DataType
	width        int
	loc          *time.Location
}

func (f *lineFormat) Extension() string {
	if f.csv {
		return ".csv"
	}
	return ".json"
}

func (f *lineFormat) Bulk() bool { return false }

func (f *lineFormat) NewDecoder(in file.Input, pos int64) (file.Decoder[types.Record], error) {
	if pos < 0 || pos > in.Size {
		return nil, errors.New("position outside the file")
	}
	return &lineDecoder{f: f, r: bufio.NewReaderSize(io.NewSectionReader(in.R, pos, in.Size-pos), 64<<10), pos: pos}, nil
}

type lineDecoder struct {
	f    *lineFormat
	r    *bufio.Reader
	pos  int64
	line int64
}

func (d *lineDecoder) Next() (types.Record, error) {
	for {
		line, err := d.r.ReadString('\n')
		if err == io.EOF && line == "" {
			return types.Record{}, io.EOF
		}
		if err != nil && err != io.EOF {
			return types.Record{}, err
		}
		start := d.pos
		d.pos += int64(len(line))
		d.line++
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			continue
		}
		row, perr := d.f.parse(line)
		if perr != nil {
			if d.f.ignoreErrors {
				continue
			}
			return types.Record{}, fmt.Errorf("offset %d: %w (line %q)", start, perr, truncate(line))
		}
		return types.Record{Kind: types.Insert, Row: row}, nil
	}
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func (d *lineDecoder) Pos() int64   { return d.pos }
func (d *lineDecoder) Close() error { return nil }

func (f *lineFormat) parse(line string) (types.Row, error) {
	row := make(types.Row, f.width)
	if f.csv {
		r := csv.NewReader(strings.NewReader(line))
		r.Comma = f.delim
		r.FieldsPerRecord = -1
		r.LazyQuotes = true
		vals, err := r.Read()
		if err != nil {
			return nil, err
		}
		if len(vals) != len(f.cols) {
			return nil, fmt.Errorf("%d fields, want %d", len(vals), len(f.cols))
		}
		for i, s := range vals {
			t := f.types[i]
			if f.skip != nil && f.skip[i] {
				continue
			}
			if f.hasNull && s == f.nullLiteral || s == "" && !t.Kind.IsCharacterString() {
				continue
			}
			v, err := types.CastIn(s, types.String(), t, f.loc)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.names[i], err)
			}
			row[f.cols[i]] = v
		}
		return row, nil
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	for i, name := range f.names {
		raw, ok := obj[name]
		if !ok || raw == nil || f.skip != nil && f.skip[i] {
			continue
		}
		v, err := fromJSON(raw, f.types[i], f.loc)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", name, err)
		}
		row[f.cols[i]] = v
	}
	return row, nil
}

func fromJSON(raw any, t types.DataType, loc *time.Location) (any, error) {
	switch x := raw.(type) {
	case nil:
		return nil, nil
	case json.Number:
		return types.CastIn(x.String(), types.String(), t, loc)
	case string:
		return types.CastIn(x, types.String(), t, loc)
	case bool:
		return types.CastIn(x, types.Boolean(), t, loc)
	case []any:
		if t.Kind != types.KindArray {
			return nil, fmt.Errorf("an array for type %s", t)
		}
		out := make([]any, len(x))
		for i, e := range x {
			v, err := fromJSON(e, t.ElemType(), loc)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case map[string]any:
		switch t.Kind {
		case types.KindRow:
			out := make(types.Row, len(t.Fields))
			for i, f := range t.Fields {
				v, err := fromJSON(x[f.Name], f.Type, loc)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		case types.KindMap:
			m := &types.Map{}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				kv, err := types.CastIn(k, types.String(), t.KeyType(), loc)
				if err != nil {
					return nil, err
				}
				vv, err := fromJSON(x[k], t.ValueType(), loc)
				if err != nil {
					return nil, err
				}
				m.Keys, m.Values = append(m.Keys, kv), append(m.Values, vv)
			}
			return m, nil
		}
		return nil, fmt.Errorf("an object for type %s", t)
	}
	return nil, fmt.Errorf("unexpected JSON value %v", raw)
}

func toJSON(v any, t types.DataType, loc *time.Location) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case types.KindBoolean:
		return v
	case types.KindTinyInt, types.KindSmallInt, types.KindInt, types.KindBigInt, types.KindFloat, types.KindDouble, types.KindDecimal:
		return json.RawMessage(types.FormatIn(v, t, loc))
	case types.KindArray:
		arr := v.([]any)
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = toJSON(e, t.ElemType(), loc)
		}
		return out
	case types.KindRow:
		r := v.(types.Row)
		out := make(map[string]any, len(r))
		for i, f := range t.Fields {
			out[f.Name] = toJSON(r[i], f.Type, loc)
		}
		return out
	}
	return types.FormatIn(v, t, loc)
}

func (f *lineFormat) NewEncoder(w io.Writer) (file.Encoder[types.Record], error) {
	e := &lineEncoder{f: f, w: w}
	if f.csv {
		e.cw = csv.NewWriter(w)
		e.cw.Comma = f.delim
	}
	return e, nil
}

type lineEncoder struct {
	f   *lineFormat
	w   io.Writer
	cw  *csv.Writer
	buf []string
}

func (e *lineEncoder) Encode(r types.Record) error {
	if e.cw != nil {
		e.buf = e.buf[:0]
		for i, v := range r.Row {
			switch {
			case v == nil && e.f.hasNull:
				e.buf = append(e.buf, e.f.nullLiteral)
			case v == nil:
				e.buf = append(e.buf, "")
			default:
				e.buf = append(e.buf, types.FormatIn(v, e.f.types[i], e.f.loc))
			}
		}
		return e.cw.Write(e.buf)
	}
	obj := make(map[string]any, len(r.Row))
	for i, v := range r.Row {
		obj[e.f.names[i]] = toJSON(v, e.f.types[i], e.f.loc)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = e.w.Write(append(b, '\n'))
	return err
}

func (e *lineEncoder) Flush() error {
	if e.cw != nil {
		e.cw.Flush()
		return e.cw.Error()
	}
	return nil
}

func (e *lineEncoder) Close() error { return e.Flush() }
