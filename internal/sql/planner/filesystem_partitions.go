package planner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
)

// The filesystem connector: CSV, JSON lines or Parquet files in a
// directory (or one file), read by the file connector and written by its
// exactly-once part-file sink. A table PARTITIONED BY (col, ...) keeps its
// rows in Hive-style directories, col=value/col2=value2/, as Flink's
// filesystem connector: the partition columns are not stored in the files
// but restored from the path, NULL and '' go to the default partition
// name, and characters that paths cannot hold are escaped as %XX. A scan
// with filters on partition columns reads only the directories they
// admit.

// defaultPartitionName is Flink's partition.default-name.
const defaultPartitionName = "__DEFAULT_PARTITION__"

// filesystemOptions are the options the filesystem connector knows.
var filesystemOptions = []string{"path", "format", "source.monitor-interval", "sink.rolling-policy.file-size",
	"sink.rolling-policy.rollover-interval", "sink.rolling-policy.inactivity-interval",
	"csv.field-delimiter", "csv.ignore-parse-errors", "csv.null-literal", "json.ignore-parse-errors",
	"partition.default-name", "sink.partition-commit.policy.kind", "sink.partition-commit.success-file.name",
	"parquet.compression"}

// fsTable is a filesystem table's layout: where its columns are, in the
// table's rows, in the sink's rows (the physical columns), and in its
// files.
type fsTable struct {
	t    *catalog.Table
	root string
	// part are the table positions of the partition columns, in
	// PARTITIONED BY order; partNames and partTypes go with them.
	part      []int
	partNames []string
	partTypes []types.DataType
	// data are the table positions of the physical columns stored in the
	// files.
	data []int
	// sinkPart and sinkData are the positions of the same columns in the
	// sink's rows, which hold the physical columns in table order.
	sinkPart, sinkData []int
	defaultName        string
	loc                *time.Location
}

func newFSTable(t *catalog.Table) (*fsTable, error) {
	if err := checkOptions(t, filesystemOptions); err != nil {
		return nil, err
	}
	ft := &fsTable{t: t, root: t.Options["path"], defaultName: defaultPartitionName, loc: time.UTC}
	if ft.root == "" {
		return nil, optionError(t, "path", "the filesystem connector needs a path")
	}
	if n, ok := t.Options["partition.default-name"]; ok {
		if n == "" || escapePartitionValue(n) != n {
			return nil, optionError(t, "partition.default-name", "%q is not a plain directory name", n)
		}
		ft.defaultName = n
	}
	phys := physical(t)
	for _, name := range t.PartitionBy {
		i := t.Column(name)
		if i < 0 || !slices.Contains(phys, i) {
			return nil, fmt.Errorf("table %s: partition column %s is not a physical column of the table", t.Path, name)
		}
		ct := t.Columns[i].Type
		switch ct.Kind {
		case types.KindArray, types.KindMap, types.KindMultiset, types.KindRow, types.KindBinary, types.KindVarBinary,
			types.KindIntervalDayTime, types.KindIntervalYearMonth:
			return nil, fmt.Errorf("table %s: partition column %s has type %s, which cannot name a directory", t.Path, name, ct)
		}
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil, fmt.Errorf("table %s: partition column %s starts with '.' or '_', which hides its directories from readers", t.Path, name)
		}
		ft.part = append(ft.part, i)
		ft.partNames = append(ft.partNames, name)
		ft.partTypes = append(ft.partTypes, ct)
	}
	for si, i := range phys {
		if j := slices.Index(ft.part, i); j >= 0 {
			continue
		}
		ft.data = append(ft.data, i)
		ft.sinkData = append(ft.sinkData, si)
	}
	for _, i := range ft.part {
		ft.sinkPart = append(ft.sinkPart, slices.Index(phys, i))
	}
	if len(ft.part) > 0 && len(ft.data) == 0 {
		return nil, fmt.Errorf("table %s: every physical column is a partition column; the files need at least one other", t.Path)
	}
	return ft, nil
}

// formats returns the table's file format over its data columns.
func (ft *fsTable) formats() (file.Encoding[types.Record], file.Decoding[types.Record], error) {
	t := ft.t
	switch t.Options["format"] {
	case "parquet":
		f, err := newParquetFormat(t, ft.data)
		if err != nil {
			return nil, nil, err
		}
		return f, f, nil
	case "csv", "json":
		f, err := rowFormat(t, ft.data)
		if err != nil {
			return nil, nil, err
		}
		return f, f, nil
	case "":
		return nil, nil, optionError(t, "format", "the filesystem connector needs a format (csv, json or parquet)")
	}
	return nil, nil, optionError(t, "format", "%q is not supported (csv, json, parquet)", t.Options["format"])
}

// escapePartitionValue escapes what Flink's PartitionPathUtils escapes:
// control characters and "#%'*/:=?\{[]^ and DEL, as %XX. Other
// characters, non-ASCII ones included, stay.
func escapePartitionValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unescapePartitionValue undoes escapePartitionValue; a '%' not followed
// by two hex digits stays, as in Flink.
func unescapePartitionValue(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, lo := unhex(s[i+1]), unhex(s[i+2]); hi >= 0 && lo >= 0 {
				b.WriteByte(byte(hi<<4 | lo))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// bucket names the partition directory of a sink row.
func (ft *fsTable) bucket(row types.Row) (string, error) {
	elems := make([]string, len(ft.sinkPart))
	for i, p := range ft.sinkPart {
		v := row[p]
		s := ""
		if v != nil {
			s = types.FormatIn(v, ft.partTypes[i], ft.loc)
		}
		if s == "" {
			s = ft.defaultName
		} else {
			s = escapePartitionValue(s)
		}
		elems[i] = ft.partNames[i] + "=" + s
	}
	return path.Join(elems...), nil
}

// partitionValues reads the partition columns' values from the
// directories a file is in: the last len(part) directories must be
// col=value for the partition columns in order.
func (ft *fsTable) partitionValues(p string) ([]any, error) {
	dirs := strings.Split(filepath.ToSlash(p), "/")
	dirs = dirs[:len(dirs)-1]
	if len(dirs) < len(ft.part) {
		return nil, fmt.Errorf("file %s is not in a partition directory (%s=.../...)", p, ft.partNames[0])
	}
	dirs = dirs[len(dirs)-len(ft.part):]
	vals := make([]any, len(ft.part))
	for i, d := range dirs {
		raw, ok := strings.CutPrefix(d, ft.partNames[i]+"=")
		if !ok {
			return nil, fmt.Errorf("file %s: directory %q is not %s=value (the table is PARTITIONED BY (%s))", p, d, ft.partNames[i], strings.Join(ft.partNames, ", "))
		}
		if raw == ft.defaultName {
			continue
		}
		v, err := types.CastIn(unescapePartitionValue(raw), types.String(), ft.partTypes[i], ft.loc)
		if err != nil {
			return nil, fmt.Errorf("file %s: partition %s: %w", p, ft.partNames[i], err)
		}
		vals[i] = v
	}
	return vals, nil
}

// filesystemSource reads a filesystem table.
func filesystemSource(c *TableContext) (*Rows, error) {
	ft, err := newFSTable(c.Table)
	if err != nil {
		return nil, err
	}
	_, dec, err := ft.formats()
	if err != nil {
		return nil, err
	}
	t := c.Table
	if lf, ok := dec.(*lineFormat); ok {
		// Projection push-down: columns the query does not read are not
		// parsed.
		lf.skip = make([]bool, len(lf.cols))
		for i, col := range lf.cols {
			lf.skip[i] = !c.Needed(col)
		}
	}
	if len(ft.part) > 0 {
		dec = &partitionDecoding{inner: dec, ft: ft}
	}
	src := file.Source[types.Record](dec, ft.root)
	if len(ft.part) > 0 {
		if keep := ft.pruner(c); keep != nil {
			src.FilterPaths(keep)
		}
	}
	if p := c.tr.Connectors.Pacers[ft.root]; p != nil {
		src.Pace(p)
	}
	if s, ok := t.Options["source.monitor-interval"]; ok {
		d, err := parseDuration(s)
		if err != nil {
			return nil, optionError(t, "source.monitor-interval", "%v", err)
		}
		src.MonitorInterval(d)
	}
	return c.Rows(stream.FromSource[types.Record](c.Env, src, c.Name()).UID(c.UID("files"))), nil
}

// pruner returns the test of a file's path by the scan's filters on
// partition columns alone, or nil when there are none. A file whose path
// does not parse is kept, so that reading it reports the problem.
func (ft *fsTable) pruner(c *TableContext) func(string) bool {
	var conds []Expr
	for _, f := range c.Filters {
		for _, cj := range conjuncts(f) {
			set := map[int]bool{}
			refs(cj, set)
			only := len(set) > 0
			for i := range set {
				if !slices.Contains(ft.part, i) {
					only = false
				}
			}
			if only && deterministic(cj) {
				conds = append(conds, cj)
			}
		}
	}
	if len(conds) == 0 {
		return nil
	}
	evals := make([]evaluator, len(conds))
	for i, cj := range conds {
		evals[i] = compile(cj)
	}
	base := c.tr.Ctx
	width := len(ft.t.Columns)
	var mu sync.Mutex
	return func(p string) bool {
		vals, err := ft.partitionValues(p)
		if err != nil {
			return true
		}
		row := make(types.Row, width)
		for i, col := range ft.part {
			row[col] = vals[i]
		}
		mu.Lock()
		defer mu.Unlock()
		ctx := subtaskContext(base)
		for _, ev := range evals {
			v, err := ev(ctx, row)
			if err == nil && v != true {
				return false
			}
		}
		return true
	}
}

// deterministic reports an expression without calls whose value changes
// from row to row on the same input (RAND, NOW and the like).
func deterministic(e Expr) bool {
	ok := true
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case *Call:
			if !x.Fn.Deterministic {
				ok = false
			}
			for _, a := range x.Args {
				walk(a)
			}
		case *CastExpr:
			walk(x.Expr)
		case *CaseExpr:
			for i := range x.Conds {
				walk(x.Conds[i])
				walk(x.Results[i])
			}
			if x.Else != nil {
				walk(x.Else)
			}
		case *InputRef, *Literal:
		default:
			ok = false
		}
	}
	walk(e)
	return ok
}

// fileOpenedHook, when set (by tests), sees the path of every file a
// filesystem table's source starts to decode.
var fileOpenedHook func(path string)

// partitionDecoding restores the partition columns of a file's rows from
// its path.
type partitionDecoding struct {
	inner file.Decoding[types.Record]
	ft    *fsTable
}

func (d *partitionDecoding) NewDecoder(in file.Input, pos int64) (file.Decoder[types.Record], error) {
	if h := fileOpenedHook; h != nil {
		h(in.Path)
	}
	vals, err := d.ft.partitionValues(in.Path)
	if err != nil {
		return nil, err
	}
	dec, err := d.inner.NewDecoder(in, pos)
	if err != nil {
		return nil, err
	}
	return &partitionDecoder{Decoder: dec, cols: d.ft.part, vals: vals}, nil
}

type partitionDecoder struct {
	file.Decoder[types.Record]
	cols []int
	vals []any
}

func (d *partitionDecoder) Next() (types.Record, error) {
	r, err := d.Decoder.Next()
	if err != nil {
		return r, err
	}
	for i, c := range d.cols {
		r.Row[c] = d.vals[i]
	}
	return r, nil
}

// filesystemSink writes a filesystem table.
func filesystemSink(c *TableContext, in *Rows, fields []Field, updating bool) error {
	t := c.Table
	if updating {
		return ErrUpdatesNotSupported
	}
	ft, err := newFSTable(t)
	if err != nil {
		return err
	}
	if len(fields) != len(physical(t)) {
		return fmt.Errorf("table %s: the query has %d columns, the table %d physical ones", t.Path, len(fields), len(physical(t)))
	}
	enc, _, err := ft.formats()
	if err != nil {
		return err
	}
	var success string
	switch kind := t.Options["sink.partition-commit.policy.kind"]; kind {
	case "":
	case "success-file":
		if len(ft.part) == 0 {
			return optionError(t, "sink.partition-commit.policy.kind", "needs a partitioned table (PARTITIONED BY)")
		}
		success = "_SUCCESS"
		if n, ok := t.Options["sink.partition-commit.success-file.name"]; ok {
			if n == "" || strings.ContainsAny(n, `/\`) {
				return optionError(t, "sink.partition-commit.success-file.name", "%q is not a file name", n)
			}
			success = n
		}
		if strings.Contains(ft.root, "://") && !strings.HasPrefix(ft.root, "file://") {
			return optionError(t, "sink.partition-commit.policy.kind", "success-file needs a local path, not %s", ft.root)
		}
	default:
		return optionError(t, "sink.partition-commit.policy.kind", "%q is not supported (success-file)", kind)
	}
	if len(ft.part) > 0 {
		enc = &projectEncoding{inner: enc, keep: ft.sinkData}
	}
	sink := file.Sink[types.Record](ft.root, enc)
	if s, ok := t.Options["sink.rolling-policy.file-size"]; ok {
		n, err := parseBytes(s)
		if err != nil {
			return optionError(t, "sink.rolling-policy.file-size", "%v", err)
		}
		sink.RollOnSize(n)
	}
	rollover, inactivity := file.DefaultRolloverInterval, file.DefaultInactivityInterval
	for key, d := range map[string]*time.Duration{"sink.rolling-policy.rollover-interval": &rollover, "sink.rolling-policy.inactivity-interval": &inactivity} {
		if s, ok := t.Options[key]; ok {
			v, err := parseDuration(s)
			if err != nil {
				return optionError(t, key, "%v", err)
			}
			*d = v
		}
	}
	sink.RollOnTime(rollover, inactivity)
	// As Flink's filesystem table sink, part files close at every
	// checkpoint, so that rows are visible once the checkpoint after them
	// completes (and a committed partition holds all rows before it).
	sink.RollOnCheckpoint(true)
	if len(ft.part) > 0 {
		sink.Buckets(func(r types.Record, _ int64, _ time.Time) (string, error) { return ft.bucket(r.Row) })
	}
	var s connector.Sink[types.Record] = sink
	if success != "" {
		s = &successFileSink{inner: sink, ft: ft, name: success}
	}
	stream.SinkTo(in, s, c.Name()).UID(c.UID("files"))
	return nil
}

// projectEncoding writes the data columns of the sink's rows: a
// partitioned table's files leave the partition columns out.
type projectEncoding struct {
	inner file.Encoding[types.Record]
	keep  []int
}

func (p *projectEncoding) Extension() string { return p.inner.Extension() }
func (p *projectEncoding) Bulk() bool        { return p.inner.Bulk() }

func (p *projectEncoding) NewEncoder(w io.Writer) (file.Encoder[types.Record], error) {
	e, err := p.inner.NewEncoder(w)
	if err != nil {
		return nil, err
	}
	return &projectEncoder{Encoder: e, keep: p.keep, row: make(types.Row, len(p.keep))}, nil
}

type projectEncoder struct {
	file.Encoder[types.Record]
	keep []int
	row  types.Row
}

func (e *projectEncoder) Encode(r types.Record) error {
	for i, k := range e.keep {
		e.row[i] = r.Row[k]
	}
	return e.Encoder.Encode(types.Record{Kind: r.Kind, Row: e.row})
}

// Buffered passes on the inner encoder's estimate (Parquet's row group).
func (e *projectEncoder) Buffered() int64 {
	if b, ok := e.Encoder.(file.BufferedSizer); ok {
		return b.Buffered()
	}
	return 0
}

// successFileSink writes the success file into the partitions whose
// files a commit published (sink.partition-commit.policy.kind =
// 'success-file'), as Flink's default partition-commit trigger
// (process-time, no delay) does: a streaming job at every checkpoint that
// published files of the partition, a batch job at its end.
type successFileSink struct {
	inner *file.PartSink[types.Record]
	ft    *fsTable
	name  string
}

func (s *successFileSink) NewWriter(ctx context.Context, sc connector.SinkContext) (connector.SinkWriter[types.Record], error) {
	w, err := s.inner.NewWriter(ctx, sc)
	if err != nil {
		return nil, err
	}
	pw, ok := w.(*file.PartWriter[types.Record])
	if !ok {
		return nil, fmt.Errorf("filesystem sink: unexpected writer %T", w)
	}
	return &successFileWriter{PartWriter: pw, s: s, buckets: map[string]bool{}, prepared: map[string][]string{}}, nil
}

type successFileWriter struct {
	*file.PartWriter[types.Record]
	s *successFileSink
	// buckets were written since the last PrepareCommit; prepared holds
	// the buckets of each prepared committable until it commits. The
	// committables of a restored checkpoint have none here: their
	// partitions get their success files with the next commit that
	// publishes files there.
	buckets  map[string]bool
	prepared map[string][]string
}

func (w *successFileWriter) Write(r types.Record, ts int64) error {
	if err := w.PartWriter.Write(r, ts); err != nil {
		return err
	}
	b, err := w.s.ft.bucket(r.Row)
	if err != nil {
		return err
	}
	w.buckets[b] = true
	return nil
}

func (w *successFileWriter) PrepareCommit(checkpointID int64) ([]byte, error) {
	c, err := w.PartWriter.PrepareCommit(checkpointID)
	if err != nil {
		return nil, err
	}
	if len(w.buckets) > 0 {
		w.prepared[string(c)] = append(w.prepared[string(c)], slices.Sorted(maps.Keys(w.buckets))...)
		w.buckets = map[string]bool{}
	}
	return c, nil
}

// Commit publishes the files, then marks their partitions.
func (w *successFileWriter) Commit(committables [][]byte) error {
	if err := w.PartWriter.Commit(committables); err != nil {
		return err
	}
	root := strings.TrimPrefix(w.s.ft.root, "file://")
	marked := map[string]bool{}
	for _, c := range committables {
		for _, b := range w.prepared[string(c)] {
			if marked[b] {
				continue
			}
			marked[b] = true
			f, err := os.OpenFile(filepath.Join(root, filepath.FromSlash(b), w.s.name), os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("filesystem sink: success file: %w", err)
			}
			if err := f.Close(); err != nil {
				return errors.Join(errors.New("filesystem sink: success file"), err)
			}
		}
		delete(w.prepared, string(c))
	}
	return nil
}

// SetFileOpenedHook makes h see the path of every file a partitioned
// filesystem table's source starts to decode, for tests of partition
// pruning; nil removes it. Not for concurrent jobs.
func SetFileOpenedHook(h func(path string)) { fileOpenedHook = h }
