package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/weirproject/weir/connector"
)

// DefaultShards is the least number of discovery shards of a monitoring
// Source (see Shards).
const DefaultShards = 8

// FormatSource reads records in a file format from files, either once
// (bounded) or by monitoring directories for new files (unbounded). Build
// it with Source.
type FormatSource[T any] struct {
	dec      Decoding[T]
	paths    []string
	interval time.Duration // > 0: monitor
	shards   int
	keep     func(path string) bool // nil: every file (FilterPaths)
	pacer    Pacer                  // nil: read at full speed (Pace)
}

var (
	_ connector.Source[int]      = (*FormatSource[int])(nil)
	_ connector.SplitSerializer  = (*FormatSource[int])(nil)
	_ connector.SplitReader[int] = (*formatReader[int])(nil)
	_ connector.Split            = (*RecordSplit)(nil)
	_ connector.Split            = (*MonitorSplit)(nil)
)

// Source returns a source of the records that dec decodes from the given
// files and directories. A directory stands for every regular file below
// it, except hidden ones (a name, or the name of a directory on the way,
// that starts with "." or "_"): that is where sinks such as Sink keep
// their unfinished files. Each file is read whole by one subtask, and a
// checkpoint records how far (Decoder.Pos), so that a restored job goes on
// after the last record it emitted.
//
// Without MonitorInterval the source is bounded: the files are listed
// when the job starts and the source ends when they are read.
func Source[T any](dec Decoding[T], paths ...string) *FormatSource[T] {
	return &FormatSource[T]{dec: dec, paths: append([]string(nil), paths...)}
}

// MonitorInterval makes the source unbounded: it lists the paths every d
// and reads each file it has not seen before, once, including those there
// at the start. Files must appear complete, as the sinks of weir and Flink
// and most tools make them (written under a hidden name, then renamed);
// a file that changes after it was seen is not read again. d <= 0 makes
// the source bounded again. It returns s.
//
// The paths read are remembered in checkpoints, so that a job restored
// from one reads every file exactly once; the list grows with the number
// of files, as in Flink's continuous file source.
func (s *FormatSource[T]) MonitorInterval(d time.Duration) *FormatSource[T] {
	s.interval = max(d, 0)
	return s
}

// Shards sets the number of discovery shards of a monitoring source when
// a job starts without a checkpoint: every file belongs to the shard that
// the hash of its path picks, and each shard is a split that one subtask
// owns, so every file is read by exactly one subtask, also after a
// restore at another parallelism. The number is fixed for the life of the
// job (a checkpoint keeps it), so it bounds how many subtasks discover
// files; 0 (the default) means max(DefaultShards, parallelism). It returns
// s.
func (s *FormatSource[T]) Shards(n int) *FormatSource[T] {
	s.shards = max(n, 0)
	return s
}

// Boundedness reports Unbounded for a monitoring source.
func (s *FormatSource[T]) Boundedness() connector.Boundedness {
	if s.interval > 0 {
		return connector.Unbounded
	}
	return connector.Bounded
}

// RecordSplit is one file, read from Pos (a Decoder position) on.
type RecordSplit struct {
	Path string
	Pos  int64
}

// SplitID is the file's path.
func (s *RecordSplit) SplitID() string { return "file:" + s.Path }

// MonitorSplit is one discovery shard of a monitoring source: the files
// whose path hashes to Shard (of Shards) and the ones of them seen so far.
type MonitorSplit struct {
	Shard, Shards int
	Seen          []string
}

// SplitID names the shard.
func (s *MonitorSplit) SplitID() string { return fmt.Sprintf("monitor-%d-of-%d", s.Shard, s.Shards) }

// Splits lists the files of a bounded source, one split each, and makes
// the discovery shards of a monitoring one.
func (s *FormatSource[T]) Splits(ctx context.Context, parallelism int) ([]connector.Split, error) {
	if parallelism < 1 {
		return nil, fmt.Errorf("file: parallelism %d, want at least 1", parallelism)
	}
	if len(s.paths) == 0 {
		return nil, errors.New("file: Source has no paths")
	}
	if s.dec == nil {
		return nil, errors.New("file: Source has no decoding")
	}
	if s.interval > 0 {
		n := s.shards
		if n == 0 {
			n = max(DefaultShards, parallelism)
		}
		out := make([]connector.Split, n)
		for i := range out {
			out[i] = &MonitorSplit{Shard: i, Shards: n}
		}
		return out, nil
	}
	files, err := listFiles(ctx, s.paths)
	if err != nil {
		return nil, err
	}
	var out []connector.Split
	for _, f := range files {
		if f.size > 0 && s.keeps(f.path) {
			out = append(out, &RecordSplit{Path: f.path})
		}
	}
	return out, nil
}

// NewReader returns the reader of one subtask.
func (s *FormatSource[T]) NewReader(ctx context.Context, sc connector.SplitContext) (connector.SplitReader[T], error) {
	return &formatReader[T]{ctx: ctx, src: s, shards: make(map[int]*shard), subtask: sc.Subtask}, nil
}

// shard is a MonitorSplit being served.
type shard struct {
	n    int
	seen map[string]bool
}

// shardOf picks the shard of a path. FNV-1a is stable across processes
// and versions, which a checkpoint needs.
func shardOf(path string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(path))
	return int(h.Sum32() % uint32(n))
}

type formatReader[T any] struct {
	ctx    context.Context // the reader's life, for reads from object stores
	src    *FormatSource[T]
	shards map[int]*shard // by shard index
	queue  []*RecordSplit // files to read, in discovery order

	cur      *RecordSplit // the file being read, nil if none
	f        readerAtCloser
	dec      Decoder[T]
	nextScan time.Time
	closed   bool
	// subtask and permitted serve a Pacer: permitted is set by the Poll
	// that got the permission, and the next Poll emits the record.
	subtask   int
	permitted bool
}

func (r *formatReader[T]) AddSplits(splits []connector.Split) error {
	if r.closed {
		return errors.New("file: AddSplits on a closed reader")
	}
	for _, s := range splits {
		switch s := s.(type) {
		case *RecordSplit:
			if s == nil || s.Pos < 0 || s.Path == "" {
				return fmt.Errorf("file: invalid split %+v", s)
			}
			cp := *s
			r.queue = append(r.queue, &cp)
		case *MonitorSplit:
			if s == nil || s.Shards < 1 || s.Shard < 0 || s.Shard >= s.Shards {
				return fmt.Errorf("file: invalid split %+v", s)
			}
			sh := &shard{n: s.Shards, seen: make(map[string]bool, len(s.Seen))}
			for _, p := range s.Seen {
				sh.seen[p] = true
			}
			r.shards[s.Shard] = sh
		default:
			return fmt.Errorf("%w: %T (want *file.RecordSplit or *file.MonitorSplit)", connector.ErrUnsupportedSplit, s)
		}
	}
	return nil
}

// Poll emits up to pollLines records of the current file, looking for new
// files first when a scan is due.
func (r *formatReader[T]) Poll(ctx context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	if r.closed {
		return 0, errors.New("file: Poll on a closed reader")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(r.shards) > 0 {
		if now := time.Now(); !now.Before(r.nextScan) {
			if err := r.scan(ctx); err != nil {
				return 0, err
			}
			r.nextScan = now.Add(r.src.interval)
		}
	}
	if r.cur == nil {
		if len(r.queue) == 0 {
			if len(r.shards) > 0 {
				return connector.NothingAvailable, nil
			}
			return connector.EndOfInput, nil
		}
		if err := r.open(); err != nil {
			return 0, err
		}
	}
	if p := r.src.pacer; p != nil {
		return r.pollPaced(ctx, out, p)
	}
	start := time.Now()
	for n := 1; ; n++ {
		v, err := r.dec.Next()
		if err == io.EOF {
			r.finish()
			break
		}
		if err != nil {
			return 0, fmt.Errorf("file: %s: %w", r.cur.Path, err)
		}
		out.Collect(v)
		r.cur.Pos = r.dec.Pos()
		if n >= pollLines || n%pollTimeCheck == 0 && time.Since(start) >= pollTime {
			break
		}
	}
	if r.cur == nil && len(r.queue) == 0 && len(r.shards) == 0 {
		return connector.EndOfInput, nil
	}
	return connector.MoreAvailable, nil
}

// scan lists the paths and queues the files of this reader's shards that
// it has not seen.
func (r *formatReader[T]) scan(ctx context.Context) error {
	files, err := listFiles(ctx, r.src.paths)
	if err != nil {
		return err
	}
	for _, f := range files {
		for i, sh := range r.shards {
			if sh.seen[f.path] || shardOf(f.path, sh.n) != i {
				continue
			}
			sh.seen[f.path] = true
			if f.size > 0 && r.src.keeps(f.path) {
				r.queue = append(r.queue, &RecordSplit{Path: f.path})
			}
			break
		}
	}
	return nil
}

func (r *formatReader[T]) open() error {
	s := r.queue[0]
	r.queue[0] = nil
	r.queue = r.queue[1:]
	f, size, err := openRandom(r.ctx, s.Path)
	if err != nil {
		return err
	}
	dec, err := r.src.dec.NewDecoder(Input{R: f, Size: size, Path: s.Path}, s.Pos)
	if err != nil {
		f.Close()
		return fmt.Errorf("file: %s: %w", s.Path, err)
	}
	r.cur, r.f, r.dec = s, f, dec
	return nil
}

func (r *formatReader[T]) finish() {
	r.dec.Close()
	r.f.Close() // read-only: a close error loses nothing
	r.cur, r.f, r.dec = nil, nil, nil
}

// Snapshot returns the shards with the files they have seen, the file
// being read with its position and the queued files.
func (r *formatReader[T]) Snapshot() ([]connector.Split, error) {
	if r.closed {
		return nil, errors.New("file: Snapshot on a closed reader")
	}
	out := make([]connector.Split, 0, len(r.shards)+len(r.queue)+1)
	for _, i := range slices.Sorted(maps.Keys(r.shards)) {
		sh := r.shards[i]
		seen := slices.Sorted(maps.Keys(sh.seen))
		out = append(out, &MonitorSplit{Shard: i, Shards: sh.n, Seen: seen})
	}
	if r.cur != nil {
		cp := *r.cur
		out = append(out, &cp)
	}
	for _, q := range r.queue {
		cp := *q
		out = append(out, &cp)
	}
	return out, nil
}

// pollPaced emits the one record a Pacer permitted in a Poll before.
func (r *formatReader[T]) pollPaced(ctx context.Context, out connector.Output[T], p Pacer) (connector.ReadStatus, error) {
	if !r.permitted {
		if !p.Next(ctx, r.subtask) {
			return connector.NothingAvailable, nil
		}
		r.permitted = true
		return connector.MoreAvailable, nil
	}
	v, err := r.dec.Next()
	if err == io.EOF {
		r.finish()
	} else if err != nil {
		return 0, fmt.Errorf("file: %s: %w", r.cur.Path, err)
	} else {
		r.permitted = false
		out.Collect(v)
		r.cur.Pos = r.dec.Pos()
		p.Emitted(r.subtask)
	}
	if r.cur == nil && len(r.queue) == 0 && len(r.shards) == 0 {
		return connector.EndOfInput, nil
	}
	return connector.MoreAvailable, nil
}

func (r *formatReader[T]) Close() error {
	if r.closed {
		return nil
	}
	if p := r.src.pacer; p != nil {
		defer p.Closed(r.subtask)
	}
	r.closed = true
	if r.cur != nil {
		r.finish()
	}
	r.queue = nil
	return nil
}

// taggedSplit is the checkpoint form of a split of a FormatSource.
type taggedSplit struct {
	File    *RecordSplit  `json:"file,omitempty"`
	Monitor *MonitorSplit `json:"monitor,omitempty"`
}

// EncodeSplits implements connector.SplitSerializer.
func (s *FormatSource[T]) EncodeSplits(splits []connector.Split) ([]byte, error) {
	out := make([]taggedSplit, len(splits))
	for i, sp := range splits {
		switch sp := sp.(type) {
		case *RecordSplit:
			out[i].File = sp
		case *MonitorSplit:
			out[i].Monitor = sp
		default:
			return nil, fmt.Errorf("file: split %q: %w", sp.SplitID(), connector.ErrUnsupportedSplit)
		}
	}
	return json.Marshal(out)
}

// DecodeSplits implements connector.SplitSerializer.
func (s *FormatSource[T]) DecodeSplits(data []byte) ([]connector.Split, error) {
	var in []taggedSplit
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("file: decode splits: %w", err)
	}
	out := make([]connector.Split, len(in))
	for i, t := range in {
		switch {
		case t.File != nil && t.Monitor == nil:
			out[i] = t.File
		case t.Monitor != nil && t.File == nil:
			out[i] = t.Monitor
		default:
			return nil, fmt.Errorf("file: decode splits: split %d is neither a file nor a monitor shard", i)
		}
	}
	return out, nil
}

// ReadAll decodes every record of the given files and directories, in
// the order Source lists them, in this goroutine. It is for tests and
// small tools: reading a sink's output, say.
func ReadAll[T any](dec Decoding[T], paths ...string) ([]T, error) {
	files, err := listFiles(context.Background(), paths)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, fi := range files {
		if fi.size == 0 {
			continue
		}
		if out, err = readFile(dec, fi.path, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readFile[T any](dec Decoding[T], path string, out []T) ([]T, error) {
	f, size, err := openRandom(context.Background(), path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := dec.NewDecoder(Input{R: f, Size: size, Path: path}, 0)
	if err != nil {
		return nil, fmt.Errorf("file: %s: %w", path, err)
	}
	defer d.Close()
	for {
		v, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("file: %s: %w", path, err)
		}
		out = append(out, v)
	}
}
