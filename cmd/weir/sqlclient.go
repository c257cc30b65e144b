package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chzyer/readline"
	"golang.org/x/sys/unix"

	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/table"
)

// The interactive SQL client: weir sql on a terminal, as Flink's
// sql-client.sh. Line editing and history come from chzyer/readline;
// results show in Flink's three result modes (sqlclient_view.go).

const (
	promptFirst        = "Flink SQL> "
	promptContinuation = "> "

	keyResultMode     = "sql-client.execution.result-mode"
	keyMaxColumnWidth = "sql-client.display.max-column-width"
	keyMaxTableRows   = "sql-client.execution.max-table-result.rows"
)

// isTerminalFile reports whether r is a terminal, where weir sql without -f
// runs the interactive client.
func isTerminalFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// historyPath is where the client keeps the statements typed:
// $WEIR_SQL_HISTORY, or ~/.weir_sql_history.
func historyPath() string {
	if p := os.Getenv("WEIR_SQL_HISTORY"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".weir_sql_history")
}

type sqlClient struct {
	ctx   context.Context
	tenv  *table.Environment
	out   io.Writer
	outFd int
	inFd  int
	kb    *keyboard
	rl    *readline.Instance

	// fg is the job of the query running in the foreground in tableau
	// mode, which Ctrl-C (SIGINT, the terminal being in cooked mode then)
	// cancels; interrupted says that it did.
	fg          atomic.Pointer[stream.JobClient]
	interrupted atomic.Bool

	mu   sync.Mutex
	jobs []*clientJob
}

// clientJob is a job the session started, for SHOW JOBS and STOP JOB.
type clientJob struct {
	id    string
	name  string
	start time.Time
	job   *stream.JobClient
}

func (j *clientJob) status() string {
	select {
	case <-j.job.Done():
	default:
		return "RUNNING"
	}
	switch err := j.job.Wait(); {
	case err == nil:
		return "FINISHED"
	case errors.Is(err, context.Canceled):
		return "CANCELED"
	}
	return "FAILED"
}

// runSQLClient runs the client on the terminal in and out until QUIT;,
// EXIT; or Ctrl-D.
func runSQLClient(ctx context.Context, tenv *table.Environment, in, out *os.File) error {
	// The command's context ends at the first SIGINT, which in the client
	// is Ctrl-C cancelling a query, not the session: jobs run under a
	// context without it, and SIGTERM ends the session below.
	ctx = context.WithoutCancel(ctx)
	for _, k := range []string{keyResultMode, keyMaxColumnWidth, keyMaxTableRows} {
		if v, ok := tenv.Setting(k); ok {
			if err := checkClientSetting(k, v); err != nil {
				return err
			}
		}
	}
	c := &sqlClient{ctx: ctx, tenv: tenv, out: out, outFd: int(out.Fd()), inFd: int(in.Fd()), kb: newKeyboard(in)}
	hist := historyPath()
	cfg := &readline.Config{
		Prompt:                 promptFirst,
		HistoryFile:            hist,
		DisableAutoSaveHistory: true,
		HistorySearchFold:      true,
		Stdin:                  c.kb,
		Stdout:                 out,
		Stderr:                 out,
		InterruptPrompt:        "^C",
		EOFPrompt:              "\n",
		FuncIsTerminal:         func() bool { return true },
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		return err
	}
	c.rl = rl
	restoreTTY := keepOutputOnInterrupt(c.inFd)
	defer func() {
		c.kb.Close()
		rl.Close()
		restoreTTY()
	}()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for sig := range sigs {
			j := c.fg.Load()
			if j != nil {
				c.interrupted.Store(true)
				j.Cancel()
			}
			if sig == syscall.SIGTERM {
				// Readline and the views see the end of input.
				c.kb.Close()
			}
		}
	}()

	fmt.Fprintln(out, "Welcome to weir's SQL client! Enter 'HELP;' to list all available commands. 'QUIT;' to exit.")
	if hist != "" {
		fmt.Fprintf(out, "\nCommand history file path: %s\n", hist)
	}
	fmt.Fprintln(out)

	buf := ""
	for {
		if buf == "" {
			rl.SetPrompt(promptFirst)
		} else {
			rl.SetPrompt(promptContinuation)
		}
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			// Ctrl-C at the prompt drops the statement being typed.
			buf = ""
			continue
		}
		if err != nil {
			// Ctrl-D, or the terminal went away.
			break
		}
		var stmts []string
		stmts, buf = splitStatements(buf + line + "\n")
		quit := false
		for _, s := range stmts {
			// History keeps a statement on one line, so that recalling it
			// brings back all of it.
			_ = rl.SaveHistory(oneLine(s))
			if quit = c.runStatement(s); quit {
				break
			}
		}
		if quit {
			break
		}
	}
	fmt.Fprintln(out, "\nShutting down the session...")
	c.stopJobs()
	fmt.Fprintln(out, "done.")
	return nil
}

// stopJobs cancels the jobs still running: they run in this process's
// embedded cluster, which ends with the client.
func (c *sqlClient) stopJobs() {
	c.mu.Lock()
	jobs := c.jobs
	c.mu.Unlock()
	for _, j := range jobs {
		j.job.Cancel()
	}
	deadline := time.After(10 * time.Second)
	for _, j := range jobs {
		select {
		case <-j.job.Done():
		case <-deadline:
			return
		}
	}
}

func (c *sqlClient) errorf(err error) {
	fmt.Fprintf(c.out, "[ERROR] Could not execute SQL statement. Reason:\n%v\n\n", err)
}

func (c *sqlClient) info(msg string) {
	fmt.Fprintf(c.out, "[INFO] %s\n\n", msg)
}

// clientCommand returns the client's own command a statement is (QUIT,
// EXIT, HELP, CLEAR), or "".
func clientCommand(stmt string) string {
	s := strings.ToUpper(strings.Join(strings.Fields(strings.TrimRight(stmt, "; \t\r\n")), " "))
	switch s {
	case "QUIT", "EXIT", "HELP", "CLEAR":
		return s
	}
	return ""
}

// runStatement runs one statement and prints what it returns; it
// reports whether the client should end.
func (c *sqlClient) runStatement(text string) (quit bool) {
	switch clientCommand(text) {
	case "QUIT", "EXIT":
		return true
	case "HELP":
		fmt.Fprint(c.out, clientHelp)
		return false
	case "CLEAR":
		fmt.Fprint(c.out, "\x1b[H\x1b[2J")
		return false
	}
	st, err := parser.ParseStatement(text)
	if err != nil {
		c.errorf(err)
		return false
	}
	switch s := st.(type) {
	case *parser.QueryStatement:
		c.query(s)
		return false
	case *parser.Set:
		if s.HasKey {
			if err := checkClientSetting(s.Key, s.Value); err != nil {
				c.errorf(err)
				return false
			}
		}
	case *parser.Show:
		if s.Kind == parser.ShowJobs {
			c.showJobs()
			return false
		}
	case *parser.StopJob:
		c.stopJob(s)
		return false
	}
	res, err := c.tenv.Execute(c.ctx, st)
	if err != nil {
		c.errorf(err)
		return false
	}
	switch res.Kind {
	case table.ResultOK:
		c.info("Execute statement succeed.")
	case table.ResultRows:
		table.PrintRowsWith(c.out, res, c.tenv.PrintOptions())
		fmt.Fprintln(c.out)
	case table.ResultText:
		fmt.Fprintf(c.out, "%s\n\n", strings.TrimRight(res.Text, "\n"))
	case table.ResultJob:
		if res.JobID != "" {
			// On the remote cluster (--jobmanager): weir list shows it.
			printRemoteJob(c.out, res.JobID)
			fmt.Fprintln(c.out)
			break
		}
		j := c.register(res.Job)
		fmt.Fprintln(c.out, "[INFO] Submitting SQL update statement to the cluster...")
		fmt.Fprintf(c.out, "[INFO] SQL update statement has been successfully submitted to the cluster:\nJob ID: %s\n\n", j.id)
	}
	return false
}

// checkClientSetting refuses values of the client's own settings that it
// could not use, at SET rather than at the next query.
func checkClientSetting(key, value string) error {
	switch key {
	case keyResultMode:
		switch strings.ToLower(value) {
		case "table", "changelog", "tableau":
			return nil
		}
		return fmt.Errorf("%s: %q is not 'table', 'changelog' or 'tableau'", key, value)
	case keyMaxColumnWidth, keyMaxTableRows:
		if n, err := strconv.Atoi(value); err != nil || n <= 0 {
			return fmt.Errorf("%s: %q is not a positive integer", key, value)
		}
	}
	return nil
}

func (c *sqlClient) resultMode() string {
	if v, ok := c.tenv.Setting(keyResultMode); ok {
		return strings.ToLower(v)
	}
	return "table"
}

func (c *sqlClient) register(job *stream.JobClient) *clientJob {
	var id [16]byte
	_, _ = rand.Read(id[:])
	j := &clientJob{id: hex.EncodeToString(id[:]), start: time.Now(), job: job}
	if job.Graph != nil {
		j.name = job.Graph.JobName
	}
	c.mu.Lock()
	c.jobs = append(c.jobs, j)
	c.mu.Unlock()
	return j
}

func (c *sqlClient) showJobs() {
	c.mu.Lock()
	jobs := append([]*clientJob(nil), c.jobs...)
	c.mu.Unlock()
	str := types.String().NotNull()
	res := &table.Result{Kind: table.ResultRows, Columns: []table.Column{
		{Name: "job id", Type: str}, {Name: "job name", Type: str}, {Name: "status", Type: str}, {Name: "start time", Type: str},
	}}
	for _, j := range jobs {
		res.Rows = append(res.Rows, types.Record{Row: types.Row{j.id, j.name, j.status(), j.start.Format("2006-01-02T15:04:05.000")}})
	}
	// Job ids are printed whole, whatever the column width, so that they
	// can be copied into STOP JOB.
	table.PrintRowsWith(c.out, res, table.PrintOptions{MaxColumnWidth: max(c.tenv.PrintOptions().MaxColumnWidth, 32)})
	fmt.Fprintln(c.out)
}

func (c *sqlClient) stopJob(s *parser.StopJob) {
	c.mu.Lock()
	var j *clientJob
	for _, cj := range c.jobs {
		if cj.id == s.JobID {
			j = cj
		}
	}
	c.mu.Unlock()
	switch {
	case j == nil:
		c.errorf(fmt.Errorf("line %d, column %d: no job %q in this session (SHOW JOBS lists them)", s.Pos().Line, s.Pos().Column, s.JobID))
		return
	case s.WithSavepoint:
		c.errorf(fmt.Errorf("line %d, column %d: STOP JOB ... WITH SAVEPOINT is not supported by the client yet", s.Pos().Line, s.Pos().Column))
		return
	}
	j.job.Cancel()
	<-j.job.Done()
	c.info("Execute statement succeed.")
}

// query runs a query and shows its result in the session's result mode.
func (c *sqlClient) query(s *parser.QueryStatement) {
	res, err := c.tenv.Query(c.ctx, s)
	if err != nil {
		c.errorf(err)
		return
	}
	c.register(res.Job)
	if c.resultMode() == "tableau" {
		c.tableau(res)
		return
	}
	if err := c.view(res, c.resultMode()); err != nil {
		c.errorf(err)
	}
}

// tableau prints the query's rows as they come, until the query ends or
// Ctrl-C cancels it.
func (c *sqlClient) tableau(res *table.Result) {
	c.interrupted.Store(false)
	c.fg.Store(res.Job)
	defer c.fg.Store(nil)
	opts := c.tenv.PrintOptions()
	var n int
	if c.tenv.Batch() && !res.Updating {
		// A batch query's rows are printed once all are in, sized to fit.
		for r := range res.Stream {
			res.Rows = append(res.Rows, r)
		}
		if err := res.Job.Wait(); err == nil {
			table.PrintRowsWith(c.out, res, opts)
			fmt.Fprintln(c.out)
			return
		}
		n = len(res.Rows)
	} else {
		p := table.NewStreamPrinter(c.out, res, opts)
		for r := range res.Stream {
			// After Ctrl-C the rows still in flight are dropped.
			if !c.interrupted.Load() {
				p.Row(r)
			}
		}
		n = p.End()
	}
	err := res.Job.Wait()
	switch {
	case c.interrupted.Load():
		fmt.Fprintf(c.out, "Query terminated, received a total of %d %s\n\n", n, plural(n, "row", "rows"))
	case err != nil:
		c.errorf(err)
	default:
		fmt.Fprintf(c.out, "Received a total of %d %s\n\n", n, plural(n, "row", "rows"))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// keyboard reads the terminal for both readline and the result views:
// readline reads only while it edits a line, the views only while they
// show, so one reader serves both without losing keys to the other.
type keyboard struct {
	ch        chan []byte
	done      chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	pending   []byte
}

func newKeyboard(f *os.File) *keyboard {
	k := &keyboard{ch: make(chan []byte), done: make(chan struct{})}
	go func() {
		defer close(k.ch)
		for {
			buf := make([]byte, 256)
			n, err := f.Read(buf)
			if n > 0 {
				select {
				case k.ch <- buf[:n]:
				case <-k.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return k
}

// Read is for readline.
func (k *keyboard) Read(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) == 0 {
		select {
		case b, ok := <-k.ch:
			if !ok {
				return 0, io.EOF
			}
			k.pending = b
		case <-k.done:
			return 0, io.EOF
		}
	}
	n := copy(p, k.pending)
	k.pending = k.pending[n:]
	return n, nil
}

// takePending returns what a Read left over, for a view.
func (k *keyboard) takePending() []byte {
	if !k.mu.TryLock() {
		return nil
	}
	defer k.mu.Unlock()
	b := k.pending
	k.pending = nil
	return b
}

func (k *keyboard) Close() error {
	k.closeOnce.Do(func() { close(k.done) })
	return nil
}

const clientHelp = `The following commands are available:

CLEAR           Clears the terminal.
HELP            Prints the available commands.
QUIT or EXIT    Quits the SQL client (Ctrl-D too).
CREATE TABLE    Creates a table: CREATE TABLE t (...) WITH ('connector' = '...');
CREATE VIEW     Creates a view: CREATE VIEW v AS <query>;
DROP TABLE      Drops a table: DROP TABLE [IF EXISTS] t;
ALTER TABLE     Changes a table's options or name.
DESCRIBE        Describes a table's schema: DESCRIBE t;
EXPLAIN         Prints the plans of a query or INSERT.
INSERT INTO     Submits a job that writes a query's rows into a table.
EXECUTE STATEMENT SET BEGIN ... END
                Submits several INSERT INTO statements as one job.
SELECT          Runs a query and shows its result in the result mode.
SET             Sets a session property: SET 'key' = 'value'; SET; lists them.
RESET           Resets a session property: RESET 'key'; RESET; resets all.
SHOW            SHOW TABLES, VIEWS, FUNCTIONS, DATABASES, CATALOGS, CREATE TABLE t.
SHOW JOBS       Lists the jobs of this session and their status.
STOP JOB 'id'   Cancels a job of this session.
USE             Sets the current database: USE db; USE CATALOG c;

Result modes (SET 'sql-client.execution.result-mode' = '...'):
  table       a full-screen view of the current result table, updated as it changes (default)
  changelog   a full-screen view of the changes (+I, -U, +U, -D) as they come
  tableau     rows printed below the statement as they come; Ctrl-C cancels the query

In the full-screen views: Q (or Ctrl-C) cancels the query and returns to the prompt,
N/P or the arrow keys page, L follows the last page, + and - change the refresh interval.

Hint: Make sure that a statement ends with ';' for finalizing (multi-line) statements.

`

// keepOutputOnInterrupt sets NOFLSH on the terminal: by default the
// kernel discards the output not yet shown when Ctrl-C raises SIGINT,
// which would drop rows the tableau printed (and counted) just before
// the interrupt. Readline and the views save and restore the terminal's
// state around their raw mode, so they keep the flag. The returned
// function puts the terminal back as it was.
func keepOutputOnInterrupt(fd int) (restore func()) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil || t.Lflag&unix.NOFLSH != 0 {
		return func() {}
	}
	saved := *t
	t.Lflag |= unix.NOFLSH
	if unix.IoctlSetTermios(fd, unix.TCSETS, t) != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, &saved) }
}
