package jdbc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/testmysql"
)

type kv struct {
	K string
	V int64
}

func kvRow(r kv) []any { return []any{r.K, r.V} }

// setup creates a database with table t (k, v) for the test.
func setup(t *testing.T, ddl string) (dsn string, db *sql.DB) {
	t.Helper()
	testmysql.Need(t, server)
	dsn = server.NewDatabase(t)
	db = testmysql.Open(t, dsn)
	if ddl == "" {
		ddl = "CREATE TABLE t (k VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, v BIGINT NOT NULL)"
	}
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	return dsn, db
}

func newWriter[T any](t *testing.T, opts SinkOptions, row func(T) []any, sc connector.SinkContext) connector.SinkWriter[T] {
	t.Helper()
	s, err := NewSink(opts, row)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Parallelism == 0 {
		sc.Parallelism = 1
	}
	w, err := s.NewWriter(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// contents returns the table's rows as sorted "k=v" strings.
func contents(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	if query == "" {
		query = "SELECT k, v FROM t"
	}
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func write[T any](t *testing.T, w connector.SinkWriter[T], recs ...T) {
	t.Helper()
	for _, r := range recs {
		if err := w.Write(r, 0); err != nil {
			t.Fatal(err)
		}
	}
}

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("table holds %q, want %q", got, want)
	}
}

// TestUpsertFlushOnSize: a batch is written when it is full, only the
// latest row of a key counts, and Flush writes the rest.
func TestUpsertFlushOnSize(t *testing.T) {
	dsn, db := setup(t, "")
	w := newWriter(t, SinkOptions{DSN: dsn, Table: "t", Columns: []string{"k", "v"}, Key: []string{"k"}, BatchSize: 3, BatchInterval: -1}, kvRow, connector.SinkContext{})
	write(t, w, kv{"a", 1}, kv{"b", 1}, kv{"a", 2}) // two keys: the batch is not full
	expect(t, contents(t, db, ""))
	write(t, w, kv{"Ä", 1}) // three keys: written
	expect(t, contents(t, db, ""), "a=2", "b=1", "Ä=1")
	write(t, w, kv{"a", 3}, kv{"ä", 7})
	expect(t, contents(t, db, ""), "a=2", "b=1", "Ä=1")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	expect(t, contents(t, db, ""), "a=3", "b=1", "Ä=1", "ä=7")
	if err := w.Flush(); err != nil { // nothing to write
		t.Fatal(err)
	}
	// The writer is at least once: it must not be taken for a
	// transactional one.
	if _, ok := w.(connector.Committer); ok {
		t.Fatal("the upsert writer implements Committer")
	}
}

// TestFlushOnTime: a row waits at most about BatchInterval.
func TestFlushOnTime(t *testing.T) {
	dsn, db := setup(t, "")
	w := newWriter(t, SinkOptions{DSN: dsn, Table: "t", Columns: []string{"k", "v"}, BatchSize: 1000, BatchInterval: 300 * time.Millisecond}, kvRow, connector.SinkContext{})
	start := time.Now()
	write(t, w, kv{"a", 1}, kv{"b", 2})
	if got := contents(t, db, ""); len(got) != 0 && time.Since(start) < 300*time.Millisecond {
		t.Fatalf("rows written before the batch interval passed: %q", got)
	}
	for len(contents(t, db, "")) == 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the batch was not written 10 s after its first row")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("written after %v, before the batch interval", d)
	}
	expect(t, contents(t, db, ""), "a=1", "b=2")
}

// TestRetryLockWaitTimeout: a row locked by another transaction makes the
// sink's write time out (error 1205), which it retries until the lock is
// gone.
func TestRetryLockWaitTimeout(t *testing.T) {
	dsn, db := setup(t, "")
	if _, err := db.Exec("INSERT INTO t VALUES ('a', 0)"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"BEGIN", "SELECT * FROM t WHERE k = 'a' FOR UPDATE"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	released := make(chan time.Time, 1)
	timer := time.AfterFunc(1500*time.Millisecond, func() {
		released <- time.Now()
		conn.ExecContext(ctx, "ROLLBACK")
	})
	defer timer.Stop()
	w := newWriter(t, SinkOptions{DSN: dsn + "?innodb_lock_wait_timeout=1", Table: "t", Columns: []string{"k", "v"}, Key: []string{"k"},
		BatchInterval: -1, MaxRetries: 5, RetryBackoff: 50 * time.Millisecond}, kvRow, connector.SinkContext{})
	write(t, w, kv{"a", 5})
	if err := w.Flush(); err != nil {
		t.Fatalf("the write was not retried: %v", err)
	}
	select {
	case <-released:
	default:
		t.Fatal("the write succeeded while the row was locked")
	}
	expect(t, contents(t, db, ""), "a=5")

	// Without retries the lock wait timeout is the write's error.
	for _, q := range []string{"BEGIN", "SELECT * FROM t WHERE k = 'a' FOR UPDATE"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	w = newWriter(t, SinkOptions{DSN: dsn + "?innodb_lock_wait_timeout=1", Table: "t", Columns: []string{"k", "v"}, Key: []string{"k"},
		BatchInterval: -1, MaxRetries: -1}, kvRow, connector.SinkContext{})
	write(t, w, kv{"a", 6})
	if err := w.Flush(); mysqlNumber(err) != errLockWaitTimeout {
		t.Fatalf("got %v, want a lock wait timeout", err)
	}
}

// TestRecordErrors: the error of a refused batch names the record and the
// column.
func TestRecordErrors(t *testing.T) {
	type rec struct {
		ID   int64
		Name any
		Age  any
	}
	dsn, db := setup(t, "CREATE TABLE p (id BIGINT PRIMARY KEY, name VARCHAR(5) NOT NULL, age TINYINT UNSIGNED)")
	if _, err := db.Exec("INSERT INTO p VALUES (100, 'old', 1)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		bad    rec
		column string
		msg    string
	}{
		{"too long", rec{7, "abcdefgh", 3}, "name", "Data too long"},
		{"out of range", rec{7, "ok", 300}, "age", "Out of range"},
		{"wrong type", rec{7, "ok", "old"}, "age", "Incorrect integer value"},
		{"null", rec{7, nil, 3}, "name", "cannot be null"},
		{"duplicate", rec{100, "dup", 3}, "id", "Duplicate entry"},
	} {
		for _, exactly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/exactly-once=%v", tc.name, exactly), func(t *testing.T) {
				w := newWriter(t, SinkOptions{DSN: dsn, Table: "p", Columns: []string{"id", "name", "age"}, BatchInterval: -1,
					ExactlyOnce: exactly, SinkID: t.Name()}, func(r rec) []any { return []any{r.ID, r.Name, r.Age} }, connector.SinkContext{})
				write(t, w, rec{1, "a", 1}, rec{2, "b", 2}, tc.bad, rec{3, "c", 3})
				err := w.Flush()
				var re *RecordError
				if !errors.As(err, &re) {
					t.Fatalf("got %v, want a RecordError", err)
				}
				if re.Index != 2 || re.Record != any(tc.bad) || re.Column != tc.column || re.Batch != 4 {
					t.Fatalf("record %d (%v), column %q, batch %d; want record 2 (%v), column %q, batch 4: %v",
						re.Index, re.Record, re.Column, re.Batch, tc.bad, tc.column, err)
				}
				for _, want := range []string{"table p", fmt.Sprintf("%+v", tc.bad), "row 3 of a batch of 4", `column "` + tc.column + `"`, tc.msg} {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("the error %q does not say %q", err, want)
					}
				}
			})
		}
	}
	expect(t, contents(t, db, "SELECT name, id FROM p"), "old=100")
}

func TestSinkOptionErrors(t *testing.T) {
	row := func(kv) []any { return nil }
	for _, tc := range []struct {
		opts SinkOptions
		want string
	}{
		{SinkOptions{Table: "t", Columns: []string{"k"}}, "no DSN"},
		{SinkOptions{DSN: "nonsense", Table: "t", Columns: []string{"k"}}, "want user:pass@tcp(host:port)/db"},
		{SinkOptions{DSN: "u:secret@tcp(h:1)/d", Columns: []string{"k"}}, "no table"},
		{SinkOptions{DSN: "u@tcp(h:1)/d", Table: "a.b.c", Columns: []string{"k"}}, "want table or db.table"},
		{SinkOptions{DSN: "u@tcp(h:1)/d", Table: "t"}, "no columns"},
		{SinkOptions{DSN: "u@tcp(h:1)/d", Table: "t", Columns: []string{"k", "k"}}, `"k" of table t is listed twice`},
		{SinkOptions{DSN: "u@tcp(h:1)/d", Table: "t", Columns: []string{"k"}, Key: []string{"x"}}, `key column "x"`},
		{SinkOptions{DSN: "u@tcp(h:1)/d", Table: "t", Columns: []string{"k"}, ExactlyOnce: true}, "needs a SinkID"},
	} {
		_, err := NewSink(tc.opts, row)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.opts, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	// A missing table or column fails at the start, not at the first
	// batch.
	dsn, _ := setup(t, "")
	for _, opts := range []SinkOptions{
		{DSN: dsn, Table: "missing", Columns: []string{"k", "v"}},
		{DSN: dsn, Table: "t", Columns: []string{"k", "nope"}},
	} {
		s, err := NewSink(opts, kvRow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1}); err == nil {
			t.Errorf("%s %q: NewWriter succeeded", opts.Table, opts.Columns)
		}
	}
	// A row function that gives the wrong number of values.
	s, err := NewSink(SinkOptions{DSN: dsn, Table: "t", Columns: []string{"k", "v"}}, func(kv) []any { return []any{"x"} })
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(kv{"x", 1}, 0); err == nil || !strings.Contains(err.Error(), "1 values for the 2 columns") {
		t.Fatalf("got %v", err)
	}
}

// TestUpsertWithDeletes: a changelog of upserts and deletes, flushed in
// batches of every size from 1 to 7, leaves the table equal to a map that
// applied the same changes; keys are deleted across batches and within
// one, and deleting a key that is not there changes nothing.
func TestUpsertWithDeletes(t *testing.T) {
	type change struct {
		kv
		del bool
	}
	var changes []change
	for i := range 200 {
		changes = append(changes, change{kv{fmt.Sprintf("k%d", i*7%13), int64(i)}, i%3 == 2})
	}
	for size := 1; size <= 7; size++ {
		dsn, db := setup(t, "")
		s, err := NewSink(SinkOptions{DSN: dsn, Table: "t", Columns: []string{"k", "v"}, Key: []string{"k"}, BatchSize: size, BatchInterval: -1},
			func(c change) []any { return kvRow(c.kv) })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.WithDeletes(func(c change) bool { return c.del }); err != nil {
			t.Fatal(err)
		}
		w, err := s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1})
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]int64{}
		for _, c := range changes {
			if c.del {
				delete(model, c.K)
			} else {
				model[c.K] = c.V
			}
			write(t, w, c)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		var want []string
		for k, v := range model {
			want = append(want, fmt.Sprintf("%s=%d", k, v))
		}
		expect(t, contents(t, db, ""), want...)
	}
	if _, err := mustSink(t, SinkOptions{DSN: "u@tcp(127.0.0.1:1)/d", Table: "t", Columns: []string{"k", "v"}}).WithDeletes(func(kv) bool { return false }); err == nil {
		t.Fatal("deletes without a key were accepted")
	}
}

func mustSink(t *testing.T, opts SinkOptions) *Sink[kv] {
	s, err := NewSink(opts, kvRow)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
