package jdbc

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// xaFormatID is the format ID of the sink's XA transaction IDs ("WEIR"),
// which sets them apart from those of other applications.
const xaFormatID = 0x57454952

// XAWriter is the exactly-once writer of a Sink with ExactlyOnce. The rows
// between two checkpoints go into one XA transaction on a connection of
// its own; at the checkpoint barrier the transaction is ended and
// prepared (PrepareCommit), and when the checkpoint completes it is
// committed (Commit), on the connection that prepared it while the writer
// still holds that. A prepared transaction survives the connection and
// the job: after a failure, the job commits the transactions of the
// checkpoint it resumes from, and the writer rolls back, before it starts
// its first transaction, every other prepared transaction of its SinkID
// and subtask that XA RECOVER lists (those of checkpoints that never
// completed).
//
// Why the connection is held: when a connection with a prepared
// transaction closes, MariaDB (10.5 and later) first makes the transaction
// available to other connections and only then detaches it from the
// closing session inside InnoDB. An XA COMMIT from another connection in
// that window is answered OK while InnoDB commits nothing (the server
// ignores the engine's "unknown XID"), and the transaction is gone from
// XA RECOVER: its rows are lost without an error. So a commit never runs
// from another connection while the server may still be closing the
// preparing one: the writer commits on the preparing connection itself,
// and where it had to close one (Close, Abort, too many checkpoints
// pending, a failed commit) it waits until the server has finished
// with that session before anyone commits from elsewhere.
type XAWriter[T any] struct{ *writer[T] }

// xaState is the XA transaction of a writer.
type xaState struct {
	nonce     string    // this writer's, in its transaction IDs
	seq       int       // transactions this writer started
	conn      *sql.Conn // the open transaction's connection, or nil
	thread    int64     // the server's ID of conn's session
	xid       xid
	rows      int  // statements written into the open transaction
	recovered bool // the stray transactions were rolled back
	// held are the prepared transactions not committed yet, oldest
	// first, each still on the connection that prepared it.
	held []heldTx
	// closing are server sessions this writer closed with a prepared
	// transaction in them, which the server may still be detaching.
	closing []int64
}

// heldTx is a prepared transaction and the connection that prepared it.
type heldTx struct {
	xid    xid
	conn   *sql.Conn
	thread int64
}

// maxHeld bounds the connections a writer holds for prepared
// transactions whose checkpoints have not completed yet; past it the
// oldest is closed, and its transaction is committed from another
// connection once its session has ended.
const maxHeld = 4

// sessionEndWait bounds how long the writer waits for the server to end
// a session it closed.
const sessionEndWait = 10 * time.Second

// sessionEndPause follows a session's end, for the server to finish
// releasing it (see awaitSessionsEnd).
const sessionEndPause = 5 * time.Millisecond

// xid is an XA transaction ID of the sink. Its gtrid says whose it is:
// w<sinkHash>.<subtask>.<nonce>.<seq>; the bqual is empty.
type xid struct {
	sinkHash string
	subtask  int
	nonce    string
	seq      int
}

func (x xid) gtrid() string {
	return "w" + x.sinkHash + "." + strconv.Itoa(x.subtask) + "." + x.nonce + "." + strconv.Itoa(x.seq)
}

// sql is the xid as SQL, as XA statements take it.
func (x xid) sql() string { return "'" + x.gtrid() + "',''," + strconv.Itoa(xaFormatID) }

func parseXID(formatID int64, gtrid string) (xid, bool) {
	if formatID != xaFormatID || !strings.HasPrefix(gtrid, "w") {
		return xid{}, false
	}
	p := strings.Split(gtrid[1:], ".")
	if len(p) != 4 {
		return xid{}, false
	}
	sub, err1 := strconv.Atoi(p[1])
	seq, err2 := strconv.Atoi(p[3])
	if err1 != nil || err2 != nil {
		return xid{}, false
	}
	return xid{sinkHash: p[0], subtask: sub, nonce: p[2], seq: seq}, true
}

// beginLocked starts a transaction on a new connection. Nothing is
// written in it yet, so a transient failure here is retried.
func (w *writer[T]) beginLocked() error {
	if err := w.recoverLocked(); err != nil {
		return err
	}
	x := w.xa
	return retry(w.ctx, w.s.opts.MaxRetries, w.s.opts.RetryBackoff, func() error {
		conn, err := w.db.Conn(w.ctx)
		if err != nil {
			return err
		}
		var thread int64
		if err := conn.QueryRowContext(w.ctx, "SELECT CONNECTION_ID()").Scan(&thread); err != nil {
			discard(conn)
			return fmt.Errorf("CONNECTION_ID(): %w", err)
		}
		x.seq++
		id := xid{sinkHash: w.s.sinkHash, subtask: w.sc.Subtask, nonce: x.nonce, seq: x.seq}
		if _, err := conn.ExecContext(w.ctx, "XA START "+id.sql()); err != nil {
			discard(conn)
			return fmt.Errorf("XA START: %w", err)
		}
		x.conn, x.thread, x.xid, x.rows = conn, thread, id, 0
		return nil
	})
}

// discard closes a connection for good rather than returning it to the
// pool: a connection that was in an XA transaction is not reused.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// xaExec writes a statement into the open transaction, starting one if
// needed. A transient failure of the transaction's first statement is
// retried in a new transaction; later, a lost connection or a deadlock
// takes the rows written before with it, which are no longer here to write
// again: the job must resume from its last checkpoint.
func (w *writer[T]) xaExec(query string, args []any) error {
	x := w.xa
	return retry(w.ctx, w.s.opts.MaxRetries, w.s.opts.RetryBackoff, func() error {
		if x.conn == nil {
			if err := w.beginLocked(); err != nil {
				return err
			}
		}
		_, err := x.conn.ExecContext(w.ctx, query, args...)
		if err != nil && transient(err) {
			empty := x.rows == 0
			w.xaAbortLocked()
			if !empty {
				return &lostError{err}
			}
		}
		if err == nil {
			x.rows++
		}
		return err
	})
}

// PrepareCommit writes the batch into the open transaction, ends and
// prepares it, and returns its ID; nil if the writer had no rows since
// the last checkpoint.
func (w *XAWriter[T]) PrepareCommit(checkpointID int64) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return nil, w.failed
	}
	if err := w.ensureDB(); err != nil {
		return nil, err
	}
	if err := w.recoverLocked(); err != nil {
		return nil, err
	}
	if err := w.flushLocked(); err != nil {
		return nil, err
	}
	x := w.xa
	if x.conn == nil {
		return nil, nil
	}
	conn, id := x.conn, x.xid
	x.conn = nil
	if _, err := conn.ExecContext(w.ctx, "XA END "+id.sql()); err != nil {
		discard(conn)
		return nil, fmt.Errorf("jdbc: XA END of checkpoint %d's transaction %s: %w", checkpointID, id.gtrid(), err)
	}
	if _, err := conn.ExecContext(w.ctx, "XA PREPARE "+id.sql()); err != nil {
		// Whether the server prepared it is unknown: its session is
		// one to wait for before committing from elsewhere.
		w.closeSessionLocked(conn, x.thread)
		return nil, fmt.Errorf("jdbc: XA PREPARE of checkpoint %d's transaction %s: %w", checkpointID, id.gtrid(), err)
	}
	x.held = append(x.held, heldTx{xid: id, conn: conn, thread: x.thread})
	if len(x.held) > maxHeld {
		w.closeSessionLocked(x.held[0].conn, x.held[0].thread)
		x.held = slices.Delete(x.held, 0, 1)
	}
	return []byte(id.gtrid()), nil
}

// closeSessionLocked closes a connection that may hold a prepared
// transaction and notes its session, which must have ended before a
// commit from another connection.
func (w *writer[T]) closeSessionLocked(conn *sql.Conn, thread int64) {
	discard(conn)
	w.xa.closing = append(w.xa.closing, thread)
}

// awaitSessionsEnd waits until the server lists none of the sessions the
// writer closed with prepared transactions in them (see XAWriter). The
// server unlists a session right before InnoDB lets go of its
// transaction, with no waiting in between, so a short pause after the
// last one covers that. A session ID still listed after sessionEndWait
// (the server restarted and gave it to another connection) is waited for
// no longer.
func (w *writer[T]) awaitSessionsEnd(db *sql.DB) error {
	if len(w.xa.closing) == 0 {
		return nil
	}
	defer time.Sleep(sessionEndPause)
	ctx := context.Background()
	deadline := time.Now().Add(sessionEndWait)
	for len(w.xa.closing) > 0 {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", w.xa.closing[0]).Scan(&n)
		if err != nil {
			return fmt.Errorf("jdbc: waiting for session %d to end: %w", w.xa.closing[0], err)
		}
		if n == 0 || time.Now().After(deadline) {
			w.xa.closing = w.xa.closing[1:]
			continue
		}
		time.Sleep(2 * time.Millisecond)
	}
	w.xa.closing = nil
	return nil
}

// releaseHeldLocked closes the connections of all held transactions and
// waits until their sessions ended, so that whoever commits them next,
// from any connection, finds them detached. db may be nil when the
// writer never opened one.
func (w *writer[T]) releaseHeldLocked(db *sql.DB) error {
	for _, h := range w.xa.held {
		w.closeSessionLocked(h.conn, h.thread)
	}
	w.xa.held = nil
	if db == nil {
		return nil
	}
	return w.awaitSessionsEnd(db)
}

// takeHeld removes and returns the held transaction id, if the writer
// holds it.
func (w *writer[T]) takeHeld(id xid) (heldTx, bool) {
	for i, h := range w.xa.held {
		if h.xid == id {
			w.xa.held = slices.Delete(w.xa.held, i, i+1)
			return h, true
		}
	}
	return heldTx{}, false
}

// Commit commits prepared transactions. A transaction the server does
// not know any more was committed before (Commit runs again on recovery);
// one the server lists but will not commit yet is still held by the
// connection that prepared it, which the server has not noticed closing:
// Commit waits for that.
func (w *XAWriter[T]) Commit(committables [][]byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	db := w.db
	for _, c := range committables {
		if len(c) == 0 {
			continue
		}
		id, ok := parseXID(xaFormatID, string(c))
		if !ok {
			return fmt.Errorf("jdbc: %q in the checkpoint is not a transaction ID of this sink", c)
		}
		if h, ok := w.takeHeld(id); ok {
			_, err := h.conn.ExecContext(context.Background(), "XA COMMIT "+id.sql())
			if err == nil {
				discard(h.conn)
				continue
			}
			// Committed or not, the server has it: find out from
			// another connection once this session has ended.
			w.closeSessionLocked(h.conn, h.thread)
		}
		if db == nil {
			// On recovery, before the first write, and after Close at
			// the end of the job.
			var err error
			if db, err = w.s.openDB(); err != nil {
				return err
			}
			defer db.Close()
		}
		if err := w.awaitSessionsEnd(db); err != nil {
			return err
		}
		if err := w.finish(db, "COMMIT", id); err != nil {
			return err
		}
	}
	return nil
}

// finishWait bounds how long COMMIT or ROLLBACK waits for the server to
// release a prepared transaction from a closed connection.
const finishWait = 30 * time.Second

// unlistedGrace is how long a transaction must stay unknown to COMMIT and
// absent from XA RECOVER before finish takes it for finished.
const unlistedGrace = 2 * time.Second

// finish commits or rolls back a prepared transaction.
func (w *writer[T]) finish(db *sql.DB, op string, id xid) error {
	ctx := context.Background() // the job may be ending; the commit must not
	deadline := time.Now().Add(finishWait)
	backoff := 10 * time.Millisecond
	var unlisted time.Time // since when XA RECOVER has not listed it
	for {
		err := retry(ctx, w.s.opts.MaxRetries, w.s.opts.RetryBackoff, func() error {
			_, err := db.ExecContext(ctx, "XA "+op+" "+id.sql())
			return err
		})
		if err == nil {
			return nil
		}
		if mysqlNumber(err) != errXANotA {
			return fmt.Errorf("jdbc: XA %s %s: %w", op, id.gtrid(), err)
		}
		prepared, rerr := recoverXIDs(ctx, db)
		if rerr != nil {
			return fmt.Errorf("jdbc: XA %s %s: %w; XA RECOVER: %w", op, id.gtrid(), err, rerr)
		}
		if !prepared[id] {
			// Unknown and not listed: finished before — or the server is
			// still detaching it from the connection that prepared it,
			// which was just closed (a commit right after the prepare, or
			// a restart in the same process). For a moment then neither
			// COMMIT nor XA RECOVER sees it; taking that for "finished"
			// lost a checkpoint's rows. Only an absence that lasts counts.
			if unlisted.IsZero() {
				unlisted = time.Now()
			}
			if time.Since(unlisted) >= unlistedGrace {
				return nil
			}
		} else {
			unlisted = time.Time{}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jdbc: XA %s %s: the transaction is prepared but still held by a connection after %v: %w", op, id.gtrid(), finishWait, err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// recoverXIDs lists the prepared transactions of the sink's format.
func recoverXIDs(ctx context.Context, db *sql.DB) (map[xid]bool, error) {
	rows, err := db.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[xid]bool)
	for rows.Next() {
		var format, glen, blen int64
		var data []byte
		if err := rows.Scan(&format, &glen, &blen, &data); err != nil {
			return nil, err
		}
		if glen < 0 || int(glen) > len(data) {
			continue
		}
		if id, ok := parseXID(format, string(data[:glen])); ok && blen == 0 {
			out[id] = true
		}
	}
	return out, rows.Err()
}

// recoverLocked rolls back, once, before the writer's first transaction,
// the prepared transactions of earlier runs that are this subtask's to
// clean up: those of its SinkID written by the same subtask, or by a
// subtask that no longer exists at this parallelism (subtask 0 cleans up
// after those). It runs after the runtime committed the restored
// checkpoint's transactions, so what is still prepared is no
// checkpoint's: it would otherwise hold its locks forever, and its rows
// are written again by the resumed job.
func (w *writer[T]) recoverLocked() error {
	x := w.xa
	if x.recovered {
		return nil
	}
	var prepared map[xid]bool
	err := retry(w.ctx, w.s.opts.MaxRetries, w.s.opts.RetryBackoff, func() (err error) {
		prepared, err = recoverXIDs(w.ctx, w.db)
		return err
	})
	if err != nil {
		return fmt.Errorf("jdbc: XA RECOVER: %w", err)
	}
	for id := range prepared {
		if !w.owns(id) {
			continue
		}
		if err := w.finish(w.db, "ROLLBACK", id); err != nil {
			return err
		}
	}
	x.recovered = true
	return nil
}

func (w *writer[T]) owns(id xid) bool {
	if id.sinkHash != w.s.sinkHash || id.nonce == w.xa.nonce {
		return false
	}
	return id.subtask == w.sc.Subtask || (id.subtask >= w.sc.Parallelism && w.sc.Subtask == 0)
}

// xaAbortLocked gives the open transaction up: closing its connection
// rolls it back, since it was not prepared.
func (w *writer[T]) xaAbortLocked() error {
	if w.xa.conn == nil {
		return nil
	}
	conn := w.xa.conn
	w.xa.conn = nil
	_, err := conn.ExecContext(context.Background(), "XA END "+w.xa.xid.sql())
	if err == nil {
		_, err = conn.ExecContext(context.Background(), "XA ROLLBACK "+w.xa.xid.sql())
	}
	discard(conn)
	if err != nil && !transient(err) {
		return fmt.Errorf("jdbc: roll back %s: %w", w.xa.xid.gtrid(), err)
	}
	return nil
}

// lostError is a transient error that must not be retried: it took an XA
// transaction with rows in it.
type lostError struct{ err error }

func (e *lostError) Error() string {
	return "the XA transaction is lost, the job must resume from its last checkpoint: " + e.err.Error()
}

func (e *lostError) Unwrap() error { return e.err }
