package jdbc

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQL and MariaDB error numbers the sink handles.
const (
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
	errXANotA          = 1397 // XAER_NOTA: unknown XID
	errColumnNull      = 1048
	errDupEntry        = 1062
)

// transient reports whether err is worth retrying with a new connection:
// the connection broke, or the server gave the statement up because of
// other transactions (a deadlock, a lock wait timeout) or is too busy.
func transient(err error) bool {
	var lost *lostError
	if err == nil || errors.As(err, &lost) {
		return false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case errLockWaitTimeout, errDeadlock,
			1040,                   // too many connections
			1053,                   // server shutdown in progress
			1158, 1159, 1160, 1161, // network read/write errors and timeouts
			1927, // connection killed
			4031: // MySQL 8: disconnected for inactivity
			return true
		}
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}

// mysqlNumber returns the server's error number in err, or 0.
func mysqlNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// retry runs f until it succeeds, fails with an error that is not
// transient, or has failed retries+1 times, sleeping backoff, then twice
// as long each time (at most 5 s) in between.
func retry(ctx context.Context, retries int, backoff time.Duration, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil || !transient(err) || attempt >= retries {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return err
		}
		if serr := sleep(ctx, backoff); serr != nil {
			return errors.Join(err, serr)
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RecordError is the error of a write that the server refused because of
// one record's data: a value that does not fit its column (strict SQL
// mode), a NULL in a NOT NULL column, a duplicate or missing key.
type RecordError struct {
	Table  string
	Record any    // the record as the sink received it; nil if unknown
	Index  int    // the record's position in its batch, from 0; -1 if unknown
	Batch  int    // the number of rows in the batch
	Column string // the column the server named; "" if none
	Err    error  // the server's error
}

func (e *RecordError) Error() string {
	msg := fmt.Sprintf("jdbc: table %s refused ", e.Table)
	if e.Index >= 0 {
		msg += fmt.Sprintf("record %s (row %d of a batch of %d)", truncate(fmt.Sprintf("%+v", e.Record), 300), e.Index+1, e.Batch)
	} else {
		msg += fmt.Sprintf("a record of a batch of %d", e.Batch)
	}
	if e.Column != "" {
		msg += fmt.Sprintf(", column %q", e.Column)
	}
	return msg + ": " + e.Err.Error()
}

func (e *RecordError) Unwrap() error { return e.Err }

var (
	atRowRE = regexp.MustCompile(`at row (\d+)`)
	// MariaDB names a column 'c' or, in some messages, `db`.`table`.`c`.
	columnRE = regexp.MustCompile("(?i)column (?:'((?:[^']|'')*)'|(?:`(?:[^`]|``)*`\\.)*`((?:[^`]|``)*)`)")
	dupRE    = regexp.MustCompile(`Duplicate entry '((?:[^']|'')*)' for key '((?:[^']|'')*)'`)
)

// recordError explains a data error the server returned for a batch of
// rows: which record and which column. Servers number the rows of a
// multi-row INSERT from 1 in most data errors ("Data too long for column
// 'w' at row 3"); for the others the record is found by its values.
func recordError[T any](table string, columns []string, rows []row[T], err error) error {
	var me *mysql.MySQLError
	var lost *lostError
	if !errors.As(err, &me) || transient(err) || errors.As(err, &lost) {
		return nil
	}
	re := &RecordError{Table: table, Index: -1, Batch: len(rows), Err: err}
	if m := columnRE.FindStringSubmatch(me.Message); m != nil {
		re.Column = strings.ReplaceAll(m[1], "''", "'") + strings.ReplaceAll(m[2], "``", "`")
	}
	if m := atRowRE.FindStringSubmatch(me.Message); m != nil {
		if n, perr := strconv.Atoi(m[1]); perr == nil && n >= 1 && n <= len(rows) {
			re.Index = n - 1
		}
	}
	col := -1
	for i, c := range columns {
		if c == re.Column {
			col = i
		}
	}
	switch {
	case re.Index >= 0:
	case me.Number == errColumnNull && col >= 0:
		for i, r := range rows {
			if r.values[col] == nil {
				re.Index = i
				break
			}
		}
	case me.Number == errDupEntry:
		// The entry is the key's values joined by '-'; a record whose
		// value of some column prints as the entry is the likely culprit.
		if m := dupRE.FindStringSubmatch(me.Message); m != nil {
		find:
			for i, r := range rows {
				for j, v := range r.values {
					if v != nil && fmt.Sprint(deref(v)) == m[1] {
						re.Index, re.Column = i, columns[j]
						break find
					}
				}
			}
		}
	}
	if re.Index < 0 && me.Number < 1000 {
		return nil
	}
	if re.Index >= 0 {
		re.Record = rows[re.Index].rec
	}
	return re
}

func deref(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
