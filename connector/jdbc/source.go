package jdbc

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/weirproject/weir/connector"
)

// SourceOptions configure a Source. Zero values mean the documented
// defaults.
type SourceOptions struct {
	// DSN is the server and database, as for the sink.
	DSN string
	// Query is a SELECT whose result the source reads; it is used as a
	// derived table, so it may have its own WHERE, joins and so on, but
	// no ORDER BY or LIMIT that the split ranges would change.
	Query string
	// SplitColumn is an integer column of the query's result by whose
	// values the source splits the query into ranges. Rows whose value
	// is NULL are not read. Each split is read in the order of the
	// column, and its position in checkpoints is the last value it read
	// completely, so a resumed job reads on from there: the query's
	// result must not change while the job runs (a bounded snapshot).
	SplitColumn string
	// Lower and Upper bound the values of SplitColumn to read, both
	// included; when nil, the query's MIN and MAX.
	Lower, Upper *int64
	// Splits is the number of ranges (default: the source's
	// parallelism).
	Splits int
	// PollRows is about how many rows one Poll emits (default 500); a
	// Poll always ends after the last row of a value of SplitColumn.
	PollRows int
}

// Source reads the rows of a query, split into ranges of a numeric
// column, as a bounded source. Build it with NewSource.
type Source[T any] struct {
	opts SourceOptions
	cfg  *mysql.Config
	scan func(scan func(dest ...any) error) (T, error)
	col  string // quoted
}

var (
	_ connector.Source[int]     = (*Source[int])(nil)
	_ connector.SplitSerializer = (*Source[int])(nil)
)

// NewSource returns a source that reads opts.Query. For every row it calls
// scan, which calls its argument with pointers to scan the query's
// columns into (as sql.Rows.Scan) and returns the record.
func NewSource[T any](opts SourceOptions, scan func(scan func(dest ...any) error) (T, error)) (*Source[T], error) {
	if scan == nil {
		return nil, errors.New("jdbc: no scan function")
	}
	cfg, err := parseDSN(opts.DSN)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.Query) == "" {
		return nil, errors.New("jdbc: no query")
	}
	if opts.SplitColumn == "" {
		return nil, errors.New("jdbc: no split column")
	}
	if opts.Lower != nil && opts.Upper != nil && *opts.Lower > *opts.Upper {
		return nil, fmt.Errorf("jdbc: split bounds [%d, %d] are empty", *opts.Lower, *opts.Upper)
	}
	if opts.Splits < 0 {
		return nil, fmt.Errorf("jdbc: %d splits", opts.Splits)
	}
	if opts.PollRows <= 0 {
		opts.PollRows = 500
	}
	return &Source[T]{opts: opts, cfg: cfg, scan: scan, col: quoteIdent(opts.SplitColumn)}, nil
}

func (s *Source[T]) Boundedness() connector.Boundedness { return connector.Bounded }

// RangeSplit is a range of the split column's values, both bounds
// included, and how far it was read.
type RangeSplit struct {
	ID     string
	Lo, Hi int64
	// Read is true when every row whose value is at most Last was
	// emitted.
	Read bool
	Last int64
}

func (r *RangeSplit) SplitID() string { return r.ID }

func (s *Source[T]) openDB() *sql.DB {
	c, _ := mysql.NewConnector(s.cfg) // the config was checked in NewSource
	return sql.OpenDB(c)
}

// Splits cuts [Lower, Upper] into ranges of about the same width.
func (s *Source[T]) Splits(ctx context.Context, parallelism int) ([]connector.Split, error) {
	n := s.opts.Splits
	if n == 0 {
		n = max(parallelism, 1)
	}
	lo, hi := s.opts.Lower, s.opts.Upper
	if lo == nil || hi == nil {
		db := s.openDB()
		defer db.Close()
		var min, max sql.NullInt64
		q := "SELECT MIN(q." + s.col + "), MAX(q." + s.col + ") FROM (" + s.opts.Query + ") AS q"
		err := retry(ctx, 3, 100*time.Millisecond, func() error { return db.QueryRowContext(ctx, q).Scan(&min, &max) })
		if err != nil {
			return nil, fmt.Errorf("jdbc: the bounds of split column %s: %w", s.opts.SplitColumn, err)
		}
		if !min.Valid {
			return nil, nil // no rows
		}
		if lo == nil {
			lo = &min.Int64
		}
		if hi == nil {
			hi = &max.Int64
		}
		if *lo > *hi {
			return nil, nil
		}
	}
	return rangeSplits(*lo, *hi, n), nil
}

// rangeSplits cuts [lo, hi] into at most n ranges whose numbers of values
// differ by at most one. Range i starts at lo + floor(i*total/n), computed
// in big integers since total may be 2^64.
func rangeSplits(lo, hi int64, n int) []connector.Split {
	total := new(big.Int).Sub(big.NewInt(hi), big.NewInt(lo))
	total.Add(total, big.NewInt(1))
	if total.Cmp(big.NewInt(int64(n))) < 0 {
		n = int(total.Int64())
	}
	bound := func(i int) *big.Int {
		b := new(big.Int).Mul(total, big.NewInt(int64(i)))
		b.Div(b, big.NewInt(int64(n)))
		return b.Add(b, big.NewInt(lo))
	}
	out := make([]connector.Split, n)
	for i := range n {
		end := bound(i + 1)
		end.Sub(end, big.NewInt(1))
		out[i] = &RangeSplit{ID: fmt.Sprintf("range-%d-of-%d", i, n), Lo: bound(i).Int64(), Hi: end.Int64()}
	}
	return out
}

func (s *Source[T]) EncodeSplits(splits []connector.Split) ([]byte, error) {
	rs := make([]*RangeSplit, len(splits))
	for i, sp := range splits {
		r, ok := sp.(*RangeSplit)
		if !ok {
			return nil, fmt.Errorf("%w: %T", connector.ErrUnsupportedSplit, sp)
		}
		rs[i] = r
	}
	return json.Marshal(rs)
}

func (s *Source[T]) DecodeSplits(data []byte) ([]connector.Split, error) {
	var rs []*RangeSplit
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("jdbc: decode splits: %w", err)
	}
	out := make([]connector.Split, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out, nil
}

func (s *Source[T]) NewReader(ctx context.Context, sc connector.SplitContext) (connector.SplitReader[T], error) {
	return &reader[T]{s: s, ctx: ctx}, nil
}

// reader reads its splits one after the other, each with one query
// ordered by the split column whose result it streams across polls.
type reader[T any] struct {
	s      *Source[T]
	ctx    context.Context
	db     *sql.DB
	splits []*RangeSplit
	rows   *sql.Rows
	// peeked is the first row of the next value, read to know that the
	// previous value was complete; it is emitted by the next poll.
	peeked    *T
	peekedKey int64
}

func (r *reader[T]) AddSplits(splits []connector.Split) error {
	for _, sp := range splits {
		rs, ok := sp.(*RangeSplit)
		if !ok {
			return fmt.Errorf("%w: %T", connector.ErrUnsupportedSplit, sp)
		}
		c := *rs
		r.splits = append(r.splits, &c)
	}
	return nil
}

// open runs the split's query from where it was read to; rows stays nil
// when nothing is left.
func (r *reader[T]) open(sp *RangeSplit) error {
	lo := sp.Lo
	if sp.Read {
		if sp.Last >= sp.Hi {
			return nil
		}
		lo = sp.Last + 1
	}
	if r.db == nil {
		r.db = r.s.openDB()
	}
	col := "q." + r.s.col
	q := "SELECT " + col + ", q.* FROM (" + r.s.opts.Query + ") AS q WHERE " + col + " BETWEEN ? AND ? ORDER BY " + col
	return retry(r.ctx, 3, 100*time.Millisecond, func() error {
		rows, err := r.db.QueryContext(r.ctx, q, lo, sp.Hi)
		if err != nil {
			return err
		}
		r.rows = rows
		return nil
	})
}

// Poll emits about PollRows rows of the current split and always every
// row of the last value of the split column it emits, so that the split's
// position, Last, is a value read completely.
func (r *reader[T]) Poll(ctx context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	if len(r.splits) == 0 {
		return connector.EndOfInput, nil
	}
	sp := r.splits[0]
	if r.rows == nil {
		if err := r.open(sp); err != nil {
			return 0, fmt.Errorf("jdbc: query split %s [%d, %d]: %w", sp.ID, sp.Lo, sp.Hi, err)
		}
		if r.rows == nil {
			r.splits = r.splits[1:]
			return r.status(), nil
		}
	}
	n := 0
	var last int64
	if r.peeked != nil {
		out.Collect(*r.peeked)
		last, n, r.peeked = r.peekedKey, 1, nil
	}
	for r.rows.Next() {
		var key int64
		rec, err := r.s.scan(func(dest ...any) error {
			return r.rows.Scan(append([]any{&key}, dest...)...)
		})
		if err != nil {
			return 0, fmt.Errorf("jdbc: split %s: scan a row where %s = %d: %w", sp.ID, r.s.opts.SplitColumn, key, err)
		}
		if n >= r.s.opts.PollRows && key != last {
			// The first row of the next value: the last one is complete.
			r.peeked, r.peekedKey = &rec, key
			sp.Read, sp.Last = true, last
			return connector.MoreAvailable, nil
		}
		out.Collect(rec)
		last = key
		n++
	}
	err := r.rows.Err()
	r.rows.Close()
	r.rows = nil
	if err != nil {
		return 0, fmt.Errorf("jdbc: read split %s: %w", sp.ID, err)
	}
	r.splits = r.splits[1:]
	return r.status(), nil
}

func (r *reader[T]) status() connector.ReadStatus {
	if len(r.splits) == 0 {
		return connector.EndOfInput
	}
	return connector.MoreAvailable
}

// Snapshot returns the unfinished splits with their positions.
func (r *reader[T]) Snapshot() ([]connector.Split, error) {
	out := make([]connector.Split, len(r.splits))
	for i, sp := range r.splits {
		c := *sp
		out[i] = &c
	}
	return out, nil
}

func (r *reader[T]) Close() error {
	var err error
	if r.rows != nil {
		err = r.rows.Close()
		r.rows = nil
	}
	if r.db != nil {
		err = errors.Join(err, r.db.Close())
		r.db = nil
	}
	return err
}
