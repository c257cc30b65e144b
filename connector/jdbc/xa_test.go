package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/connector"
)

func xaWriter(t *testing.T, dsn, sinkID string, subtask, parallelism int) *XAWriter[kv] {
	t.Helper()
	w := newWriter(t, SinkOptions{DSN: dsn, Table: "t", Columns: []string{"k", "v"}, ExactlyOnce: true, SinkID: sinkID, BatchSize: 2, BatchInterval: -1},
		kvRow, connector.SinkContext{Subtask: subtask, Parallelism: parallelism})
	x, ok := w.(*XAWriter[kv])
	if !ok {
		t.Fatalf("the exactly-once writer is a %T", w)
	}
	return x
}

func prepare(t *testing.T, w *XAWriter[kv], checkpoint int64, recs ...kv) []byte {
	t.Helper()
	write(t, w, recs...)
	c, err := w.PrepareCommit(checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 0 && len(c) == 0 {
		t.Fatal("no transaction prepared")
	}
	return c
}

// prepared lists the gtrids XA RECOVER shows.
func prepared(t *testing.T, db *sql.DB) []string {
	t.Helper()
	ids, err := recoverXIDs(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for id := range ids {
		out = append(out, id.gtrid())
	}
	slices.Sort(out)
	return out
}

// heldSessions lists the server sessions of the writer's prepared
// transactions.
func heldSessions(w *XAWriter[kv]) []int64 {
	var ids []int64
	for _, h := range w.xa.held {
		ids = append(ids, h.thread)
	}
	return ids
}

// sessionsListed returns those of the sessions the server lists.
func sessionsListed(t *testing.T, db *sql.DB, ids []int64) []int64 {
	t.Helper()
	var out []int64
	for _, id := range ids {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out = append(out, id)
		}
	}
	return out
}

// TestXACommit: rows are invisible until their checkpoint's transaction
// commits, a commit may repeat, and a checkpoint without rows prepares
// nothing.
func TestXACommit(t *testing.T) {
	dsn, db := setup(t, "")
	w := xaWriter(t, dsn, "job", 0, 1)
	// Five rows: two full batches are written into the transaction before
	// the barrier.
	c1 := prepare(t, w, 1, kv{"a", 1}, kv{"b", 1}, kv{"c", 1}, kv{"d", 1}, kv{"e", 1})
	expect(t, contents(t, db, ""))
	c2 := prepare(t, w, 2, kv{"f", 1})
	if c := prepare(t, w, 3); c != nil {
		t.Fatalf("a checkpoint without rows prepared %q", c)
	}
	expect(t, contents(t, db, ""))
	if got := prepared(t, db); !slices.Equal(got, []string{string(c1), string(c2)}) {
		t.Fatalf("prepared %q, want %q and %q", got, c1, c2)
	}
	// Both stay on the sessions that prepared them (see XAWriter).
	held := heldSessions(w)
	if len(held) != 2 || len(sessionsListed(t, db, held)) != 2 {
		t.Fatalf("the writer holds sessions %v, the server lists %v of them, want both prepared transactions' sessions open", held, sessionsListed(t, db, held))
	}
	if err := w.Commit([][]byte{c1}); err != nil {
		t.Fatal(err)
	}
	expect(t, contents(t, db, ""), "a=1", "b=1", "c=1", "d=1", "e=1")
	if err := w.Commit([][]byte{c1, c2, nil}); err != nil {
		t.Fatalf("committing again: %v", err)
	}
	expect(t, contents(t, db, ""), "a=1", "b=1", "c=1", "d=1", "e=1", "f=1")
	if got := prepared(t, db); len(got) != 0 {
		t.Fatalf("still prepared: %q", got)
	}
	// After Close, as at the end of a job, Commit still works: Close
	// returns once the server ended the session that prepared it.
	c4 := prepare(t, w, 4, kv{"g", 1})
	held = heldSessions(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 {
		t.Fatalf("the writer holds sessions %v, want checkpoint 4's", held)
	}
	if open := sessionsListed(t, db, held); len(open) > 0 {
		t.Fatalf("after Close the server still lists session %v", open)
	}
	if err := w.Commit([][]byte{c4}); err != nil {
		t.Fatal(err)
	}
	expect(t, contents(t, db, ""), "a=1", "b=1", "c=1", "d=1", "e=1", "f=1", "g=1")
}

// TestXARecover runs the recovery of a job that failed after checkpoint 2
// completed but before its transaction was committed, and after it had
// prepared checkpoint 3's transaction: on restore, checkpoint 2's
// transaction is committed, checkpoint 3's rolled back, and neither
// another job's prepared transaction nor another subtask's are touched.
func TestXARecover(t *testing.T) {
	dsn, db := setup(t, "")
	failed := xaWriter(t, dsn, "job", 0, 2)
	c1 := prepare(t, failed, 1, kv{"a", 1})
	if err := failed.Commit([][]byte{c1}); err != nil {
		t.Fatal(err)
	}
	c2 := prepare(t, failed, 2, kv{"b", 1}, kv{"c", 1}, kv{"d", 1})
	c3 := prepare(t, failed, 3, kv{"e", 1})
	// An open transaction that was not prepared yet: it dies with the
	// process, which the writer's Abort stands in for.
	write(t, failed, kv{"f", 1}, kv{"g", 1})
	sibling := xaWriter(t, dsn, "job", 1, 2)
	s3 := prepare(t, sibling, 3, kv{"s", 1})
	other := xaWriter(t, dsn, "another job", 0, 2)
	o3 := prepare(t, other, 3, kv{"o", 1})
	if err := failed.Abort(); err != nil {
		t.Fatal(err)
	}
	expect(t, contents(t, db, ""), "a=1")
	want := []string{string(c2), string(c3), string(s3), string(o3)}
	slices.Sort(want)
	if got := prepared(t, db); !slices.Equal(got, want) {
		t.Fatalf("prepared %q, want %q", got, want)
	}

	// The restored subtask 0: the runtime commits checkpoint 2's
	// transaction; the first checkpoint of the new run rolls back
	// checkpoint 3's.
	restored := xaWriter(t, dsn, "job", 0, 2)
	if err := restored.Commit([][]byte{c2}); err != nil {
		t.Fatal(err)
	}
	expect(t, contents(t, db, ""), "a=1", "b=1", "c=1", "d=1")
	want = []string{string(c3), string(s3), string(o3)}
	slices.Sort(want)
	if got := prepared(t, db); !slices.Equal(got, want) {
		t.Fatalf("after the restored commit: prepared %q, want %q", got, want)
	}
	// Checkpoint 3's rows are written again by the resumed job.
	c3b := prepare(t, restored, 3, kv{"e", 1}, kv{"f", 1})
	want = []string{string(c3b), string(s3), string(o3)}
	slices.Sort(want)
	if got := prepared(t, db); !slices.Equal(got, want) {
		t.Fatalf("after recovery: prepared %q, want %q", got, want)
	}
	if err := restored.Commit([][]byte{c3b}); err != nil {
		t.Fatal(err)
	}
	if err := other.Commit([][]byte{o3}); err != nil {
		t.Fatalf("the other job's transaction: %v", err)
	}
	if err := sibling.Commit([][]byte{s3}); err != nil {
		t.Fatalf("the sibling subtask's transaction: %v", err)
	}
	expect(t, contents(t, db, ""), "a=1", "b=1", "c=1", "d=1", "e=1", "f=1", "o=1", "s=1")
}

// TestXARecoverRescaled: a job that resumes at a lower parallelism rolls
// back the stray transactions of the subtasks that no longer exist in
// subtask 0.
func TestXARecoverRescaled(t *testing.T) {
	dsn, db := setup(t, "")
	var strays []string
	for sub := range 3 {
		w := xaWriter(t, dsn, "job", sub, 3)
		strays = append(strays, string(prepare(t, w, 5, kv{fmt.Sprint(sub), 1})))
		// The job fails: its writers are gone.
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
	}
	w1 := xaWriter(t, dsn, "job", 1, 2)
	prepare(t, w1, 5)
	if got := prepared(t, db); !slices.Equal(got, []string{strays[0], strays[2]}) && !slices.Equal(got, []string{strays[2], strays[0]}) {
		t.Fatalf("after subtask 1 of 2 recovered: prepared %q, want only those of subtasks 0 and 2 of 3", got)
	}
	w0 := xaWriter(t, dsn, "job", 0, 2)
	prepare(t, w0, 5)
	if got := prepared(t, db); len(got) != 0 {
		t.Fatalf("after subtask 0 of 2 recovered: prepared %q", got)
	}
	expect(t, contents(t, db, ""))
}

// TestXALostConnection: when the server drops the connection of an open
// transaction with rows in it, the next write fails and says that the job
// must resume from its checkpoint, and nothing of it becomes visible.
func TestXALostConnection(t *testing.T) {
	dsn, db := setup(t, "")
	w := xaWriter(t, dsn, "job", 0, 1)
	write(t, w, kv{"a", 1}, kv{"b", 1}) // a full batch: written
	var id int64
	if err := w.xa.conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
		t.Fatal(err)
	}
	write(t, w, kv{"c", 1})
	err := w.Write(kv{"d", 1}, 0)
	if err == nil || !strings.Contains(err.Error(), "must resume from its last checkpoint") {
		t.Fatalf("got %v, want a lost transaction", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	expect(t, contents(t, db, ""))
	if got := prepared(t, db); len(got) != 0 {
		t.Fatalf("prepared: %q", got)
	}
}

// TestXAManyPendingCheckpoints: with more checkpoints pending than the
// writer holds connections for, the oldest transactions are committed
// from another connection, after their sessions ended, and none is lost.
func TestXAManyPendingCheckpoints(t *testing.T) {
	dsn, db := setup(t, "")
	w := xaWriter(t, dsn, "job", 0, 1)
	var commits [][]byte
	var want []string
	for i := range maxHeld + 3 {
		k := fmt.Sprintf("k%d", i)
		commits = append(commits, prepare(t, w, int64(i+1), kv{k, 1}))
		want = append(want, k+"=1")
	}
	if len(w.xa.held) != maxHeld {
		t.Fatalf("the writer holds %d connections, want %d", len(w.xa.held), maxHeld)
	}
	if got := prepared(t, db); len(got) != len(commits) {
		t.Fatalf("prepared %q, want %d transactions", got, len(commits))
	}
	if err := w.Commit(commits); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	expect(t, contents(t, db, ""), want...)
	if got := prepared(t, db); len(got) != 0 {
		t.Fatalf("still prepared: %q", got)
	}
}
