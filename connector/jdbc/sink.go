// Package jdbc connects weir jobs to MySQL and MariaDB through
// github.com/go-sql-driver/mysql: a sink that writes batches of rows
// (plain inserts, upserts by key, or exactly-once appends through XA
// transactions), and a bounded source that reads a query split across
// subtasks by ranges of a numeric column.
//
// The name follows Flink's JDBC connector, whose semantics it keeps.
package jdbc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/weirproject/weir/connector"
)

// SinkOptions configure a Sink. Zero values mean the documented defaults.
type SinkOptions struct {
	// DSN is the server and database in go-sql-driver's form,
	// user:pass@tcp(host:port)/db. The sink adds STRICT_ALL_TABLES to the
	// session's sql_mode unless the DSN sets sql_mode, so that a value
	// that does not fit its column is an error rather than silently cut,
	// and interpolates parameters on the client (one round trip a batch).
	DSN string
	// Table is the table to write to, optionally qualified by its
	// database (db.table).
	Table string
	// Columns are the table's columns the row function fills, in order.
	Columns []string
	// Key, when set, makes every write an upsert: INSERT ... ON
	// DUPLICATE KEY UPDATE of the other columns. The columns must form
	// the table's primary key or a unique index. Within a batch only the
	// latest row of a key is sent. Without Key the sink appends.
	Key []string
	// ExactlyOnce writes through XA transactions, one per subtask and
	// checkpoint, committed when the checkpoint completes: rows become
	// visible exactly once, however often the job fails and resumes.
	// Needs InnoDB and MariaDB 10.5+ or MySQL 5.7+ (a prepared XA
	// transaction must survive its connection). Without it the sink is
	// at least once: it flushes on every checkpoint, and rows written
	// after the last one are written again after a restart (harmless for
	// upserts).
	ExactlyOnce bool
	// SinkID names the job's sink in its XA transaction IDs; it must be
	// the same when the job resumes and differ from every other job and
	// sink writing exactly once to the same server, since on recovery a
	// sink rolls back the prepared transactions of its own SinkID that
	// no checkpoint needs. Required with ExactlyOnce.
	SinkID string
	// BatchSize is how many rows a batch holds before it is written
	// (default 1000).
	BatchSize int
	// BatchInterval is how long a row waits at most in a batch before it
	// is written (default 1 s; negative: only size and checkpoints
	// flush).
	BatchInterval time.Duration
	// MaxRetries is how often a write that failed with a transient error
	// (connection lost, deadlock, lock wait timeout) is tried again
	// (default 3; negative: never). In exactly-once mode only steps that
	// can be repeated safely are retried (starting a transaction,
	// committing and rolling back); a write into an open XA transaction
	// that failed this way fails the task, which resumes from the last
	// checkpoint.
	MaxRetries int
	// RetryBackoff is the first pause before a retry, doubled after each
	// (default 100 ms, at most 5 s).
	RetryBackoff time.Duration
}

func (o *SinkOptions) ensureDefaults() {
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.BatchInterval == 0 {
		o.BatchInterval = time.Second
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	} else if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 100 * time.Millisecond
	}
}

// Sink writes records of type T as rows of a table. Build it with NewSink.
type Sink[T any] struct {
	opts   SinkOptions
	row    func(T) []any
	cfg    *mysql.Config
	table  string // quoted
	keyIdx []int  // positions of the key columns in Columns
	insert string // "INSERT INTO t (a,b) VALUES "
	values string // "(?,?)"
	suffix string // " ON DUPLICATE KEY UPDATE ..." or ""
	// sinkHash identifies SinkID in XA transaction IDs, which may be at
	// most 64 bytes long.
	sinkHash string
	// isDelete, set by WithDeletes, says which records delete their key.
	isDelete func(T) bool
	delete   string // "DELETE FROM t WHERE (k) IN "
	keyTuple string // "(?)"
}

var _ connector.Sink[int] = (*Sink[int])(nil)

// NewSink returns a sink that writes row(v) for every record v: the
// values of opts.Columns, in order, of types database/sql accepts.
func NewSink[T any](opts SinkOptions, row func(T) []any) (*Sink[T], error) {
	opts.ensureDefaults()
	if row == nil {
		return nil, errors.New("jdbc: no row function")
	}
	cfg, err := parseDSN(opts.DSN)
	if err != nil {
		return nil, err
	}
	table, err := quoteTable(opts.Table)
	if err != nil {
		return nil, err
	}
	if len(opts.Columns) == 0 {
		return nil, fmt.Errorf("jdbc: no columns for table %s", opts.Table)
	}
	s := &Sink[T]{opts: opts, row: row, cfg: cfg, table: table}
	cols := make([]string, len(opts.Columns))
	seen := make(map[string]int)
	for i, c := range opts.Columns {
		if c == "" {
			return nil, fmt.Errorf("jdbc: column %d of table %s has no name", i+1, opts.Table)
		}
		if _, dup := seen[c]; dup {
			return nil, fmt.Errorf("jdbc: column %q of table %s is listed twice", c, opts.Table)
		}
		seen[c] = i
		cols[i] = quoteIdent(c)
	}
	isKey := make(map[int]bool)
	for _, k := range opts.Key {
		i, ok := seen[k]
		if !ok {
			return nil, fmt.Errorf("jdbc: key column %q is not among the columns %q", k, opts.Columns)
		}
		s.keyIdx = append(s.keyIdx, i)
		isKey[i] = true
	}
	s.insert = "INSERT INTO " + table + " (" + strings.Join(cols, ",") + ") VALUES "
	s.values = "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
	if len(opts.Key) > 0 {
		var upd []string
		for i, c := range cols {
			if !isKey[i] {
				upd = append(upd, c+"=VALUES("+c+")")
			}
		}
		if len(upd) == 0 {
			// Every column is the key: a duplicate changes nothing.
			upd = append(upd, cols[s.keyIdx[0]]+"="+cols[s.keyIdx[0]])
		}
		s.suffix = " ON DUPLICATE KEY UPDATE " + strings.Join(upd, ",")
	}
	if opts.ExactlyOnce {
		if opts.SinkID == "" {
			return nil, errors.New("jdbc: an exactly-once sink needs a SinkID, unique among the jobs writing to the server and the same when the job resumes")
		}
		h := sha256.Sum256([]byte(opts.SinkID))
		s.sinkHash = hex.EncodeToString(h[:8])
	}
	return s, nil
}

// WithDeletes makes the sink delete the row of a record's key, instead of
// upserting it, when isDelete says so: a changelog's deletions (Flink's
// JDBC sink with a primary key does the same). It needs Key. Within a
// batch only the latest change of a key counts, so a delete and an upsert
// of one key never meet in one flush; the batch's deletes run after its
// upserts, as one DELETE ... WHERE (key) IN (...).
func (s *Sink[T]) WithDeletes(isDelete func(T) bool) (*Sink[T], error) {
	if len(s.keyIdx) == 0 {
		return nil, fmt.Errorf("jdbc: deletes into table %s need a key", s.opts.Table)
	}
	keys := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		keys[i] = quoteIdent(s.opts.Columns[k])
	}
	s.isDelete = isDelete
	s.delete = "DELETE FROM " + s.table + " WHERE (" + strings.Join(keys, ",") + ") IN ("
	s.keyTuple = "(" + strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",") + ")"
	return s, nil
}

// parseDSN parses a go-sql-driver DSN and sets what the sink relies on.
func parseDSN(dsn string) (*mysql.Config, error) {
	if dsn == "" {
		return nil, errors.New("jdbc: no DSN (want user:pass@tcp(host:port)/db)")
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("jdbc: DSN %q: %w (want user:pass@tcp(host:port)/db)", redactDSN(dsn), err)
	}
	if _, ok := cfg.Params["sql_mode"]; !ok {
		if cfg.Params == nil {
			cfg.Params = make(map[string]string)
		}
		cfg.Params["sql_mode"] = "CONCAT(@@sql_mode,',STRICT_ALL_TABLES')"
	}
	cfg.InterpolateParams = true
	return cfg, nil
}

// redactDSN hides the password of a DSN in error messages.
func redactDSN(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	colon := strings.Index(dsn, ":")
	if at < 0 || colon < 0 || colon > at {
		return dsn
	}
	return dsn[:colon+1] + "***" + dsn[at:]
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func quoteTable(t string) (string, error) {
	if t == "" {
		return "", errors.New("jdbc: no table")
	}
	parts := strings.Split(t, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("jdbc: table %q: want table or db.table", t)
	}
	for i, p := range parts {
		if p == "" {
			return "", fmt.Errorf("jdbc: table %q: want table or db.table", t)
		}
		parts[i] = quoteIdent(p)
	}
	return strings.Join(parts, "."), nil
}

func (s *Sink[T]) openDB() (*sql.DB, error) {
	c, err := mysql.NewConnector(s.cfg)
	if err != nil {
		return nil, fmt.Errorf("jdbc: %w", err)
	}
	return sql.OpenDB(c), nil
}

// NewWriter checks that the server answers and that the table has the
// columns, so that a wrong DSN or table fails the job at once.
func (s *Sink[T]) NewWriter(ctx context.Context, sc connector.SinkContext) (connector.SinkWriter[T], error) {
	db, err := s.openDB()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	cols := make([]string, len(s.opts.Columns))
	for i, c := range s.opts.Columns {
		cols[i] = quoteIdent(c)
	}
	q := "SELECT " + strings.Join(cols, ",") + " FROM " + s.table + " LIMIT 0"
	err = retry(ctx, s.opts.MaxRetries, s.opts.RetryBackoff, func() error {
		rows, err := db.QueryContext(ctx, q)
		if err == nil {
			err = rows.Close()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jdbc: table %s at %s: %w", s.opts.Table, s.cfg.Addr, err)
	}
	w := &writer[T]{s: s, sc: sc, ctx: ctx}
	if len(s.keyIdx) > 0 {
		w.index = make(map[string]int)
	}
	if !s.opts.ExactlyOnce {
		return w, nil
	}
	var nonce [8]byte
	rand.Read(nonce[:])
	w.xa = &xaState{nonce: hex.EncodeToString(nonce[:])}
	return &XAWriter[T]{w}, nil
}

// row is a record and its column values, waiting in a batch.
type row[T any] struct {
	rec    T
	values []any
	del    bool // delete the key's row (WithDeletes)
}

// writer is the at-least-once writer, and the core of XAWriter: it
// batches rows and writes them on size, time and checkpoints.
//
// The methods of connector.SinkWriter come from the task's goroutine; the
// timer that flushes old rows runs in a goroutine of its own, so mu
// guards the batch, the connections and the XA transaction.
type writer[T any] struct {
	s   *Sink[T]
	sc  connector.SinkContext
	ctx context.Context

	mu     sync.Mutex
	db     *sql.DB // opened at the first write
	batch  []row[T]
	index  map[string]int // upserts: the position of a key in batch
	oldest time.Time      // when the first row of the batch came
	failed error          // the timer's flush failed: the next call says so
	closed bool
	xa     *xaState // nil when at least once

	stopTimer chan struct{}
	timerDone chan struct{}
}

// Write adds a row to the batch and writes the batch when it is full.
func (w *writer[T]) Write(v T, _ int64) error {
	vals := w.s.row(v)
	if len(vals) != len(w.s.opts.Columns) {
		return fmt.Errorf("jdbc: the row function gave %d values for the %d columns %q of table %s (record %+v)",
			len(vals), len(w.s.opts.Columns), w.s.opts.Columns, w.s.opts.Table, v)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return w.failed
	}
	if w.stopTimer == nil && w.s.opts.BatchInterval > 0 {
		w.startTimer()
	}
	if len(w.batch) == 0 {
		w.oldest = time.Now()
	}
	r := row[T]{rec: v, values: vals, del: w.s.isDelete != nil && w.s.isDelete(v)}
	if r.del && nullKey(vals, w.s.keyIdx) {
		// No row has a NULL key to delete: unique keys never match NULL.
		return nil
	}
	if w.index != nil && !nullKey(vals, w.s.keyIdx) {
		k := keyString(vals, w.s.keyIdx)
		if i, ok := w.index[k]; ok {
			// A newer row of the key replaces the older one: an upsert
			// keeps only the latest anyway.
			w.batch[i] = r
			return nil
		}
		w.index[k] = len(w.batch)
	}
	w.batch = append(w.batch, r)
	if len(w.batch) >= w.s.opts.BatchSize {
		return w.flushLocked()
	}
	return nil
}

// Flush writes the batch. At least once, the rows are then durable; in
// exactly-once mode they are part of the open XA transaction.
func (w *writer[T]) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return w.failed
	}
	return w.flushLocked()
}

func (w *writer[T]) startTimer() {
	w.stopTimer, w.timerDone = make(chan struct{}), make(chan struct{})
	every := w.s.opts.BatchInterval
	go func() {
		defer close(w.timerDone)
		// Ticking at a quarter of the interval keeps a row's wait below
		// 1.25 intervals without a timer per batch.
		t := time.NewTicker(max(every/4, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-w.stopTimer:
				return
			case <-t.C:
			}
			w.mu.Lock()
			if w.failed == nil && len(w.batch) > 0 && time.Since(w.oldest) >= every {
				w.failed = w.flushLocked()
			}
			w.mu.Unlock()
		}
	}()
}

// stop ends the timer; it must be called without mu held.
func (w *writer[T]) stop() {
	if w.stopTimer != nil {
		close(w.stopTimer)
		<-w.timerDone
		w.stopTimer = nil
	}
}

func (w *writer[T]) ensureDB() error {
	if w.db != nil {
		return nil
	}
	if w.closed {
		return errors.New("jdbc: writer is closed")
	}
	db, err := w.s.openDB()
	if err != nil {
		return err
	}
	w.db = db
	return nil
}

// flushLocked writes the batch as one multi-row INSERT.
func (w *writer[T]) flushLocked() error {
	if len(w.batch) == 0 {
		return nil
	}
	if err := w.ensureDB(); err != nil {
		return err
	}
	ups, dels := w.batch, []row[T](nil)
	if w.s.isDelete != nil {
		ups = make([]row[T], 0, len(w.batch))
		for _, r := range w.batch {
			if r.del {
				dels = append(dels, r)
			} else {
				ups = append(ups, r)
			}
		}
	}
	for _, part := range [][]row[T]{ups, dels} {
		if len(part) == 0 {
			continue
		}
		query, args := w.statement(part)
		var err error
		if w.xa != nil {
			err = w.xaExec(query, args)
		} else {
			err = retry(w.ctx, w.s.opts.MaxRetries, w.s.opts.RetryBackoff, func() error {
				_, err := w.db.ExecContext(w.ctx, query, args...)
				return err
			})
		}
		if err != nil {
			if re := recordError(w.s.opts.Table, w.s.opts.Columns, part, err); re != nil {
				return re
			}
			return fmt.Errorf("jdbc: write %d rows to table %s: %w", len(part), w.s.opts.Table, err)
		}
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	clear(w.index)
	return nil
}

// statement is the INSERT of rows, or the DELETE of their keys when they
// are deletions.
func (w *writer[T]) statement(rows []row[T]) (string, []any) {
	var b strings.Builder
	if rows[0].del {
		b.WriteString(w.s.delete)
		args := make([]any, 0, len(rows)*len(w.s.keyIdx))
		for i, r := range rows {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(w.s.keyTuple)
			for _, k := range w.s.keyIdx {
				args = append(args, r.values[k])
			}
		}
		b.WriteByte(')')
		return b.String(), args
	}
	b.Grow(len(w.s.insert) + len(rows)*(len(w.s.values)+1) + len(w.s.suffix))
	b.WriteString(w.s.insert)
	args := make([]any, 0, len(rows)*len(w.s.opts.Columns))
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(w.s.values)
		args = append(args, r.values...)
	}
	b.WriteString(w.s.suffix)
	return b.String(), args
}

// Close releases the connections. Rows not flushed are dropped: the
// runtime flushes at the end of the input, and after a failure the rows
// since the last checkpoint are written again.
func (w *writer[T]) Close() error {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	var err error
	if w.xa != nil {
		err = errors.Join(w.xaAbortLocked(), w.releaseHeldLocked(w.db))
	}
	if w.db != nil {
		err = errors.Join(err, w.db.Close())
		w.db = nil
	}
	return err
}

// Abort is Close after a failure.
func (w *writer[T]) Abort() error { return w.Close() }

// keyString encodes the key values of a row for the batch's index.
func keyString(vals []any, idx []int) string {
	var b []byte
	for _, i := range idx {
		switch v := vals[i].(type) {
		case string:
			b = strconv.AppendQuote(b, v)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case []byte:
			b = strconv.AppendQuote(b, string(v))
		case nil:
			b = append(b, "NULL"...)
		default:
			b = fmt.Appendf(b, "%T:%v", v, v)
		}
		b = append(b, 0)
	}
	return string(b)
}

// nullKey reports whether a key value is NULL: unique indexes allow any
// number of rows with NULL in them, so such rows are never merged.
func nullKey(vals []any, idx []int) bool {
	for _, i := range idx {
		if vals[i] == nil {
			return true
		}
	}
	return false
}

// QuoteTable quotes a table name, optionally qualified by its database
// (db.table), for SQL.
func QuoteTable(table string) string {
	q, err := quoteTable(table)
	if err != nil {
		return quoteIdent(table)
	}
	return q
}

// Exec runs one statement (CREATE TABLE, say) against the DSN's server,
// with the retries of the sink.
func Exec(ctx context.Context, dsn, statement string) error {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("jdbc: %w", err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	return retry(ctx, 3, 100*time.Millisecond, func() error {
		_, err := db.ExecContext(ctx, statement)
		return err
	})
}
