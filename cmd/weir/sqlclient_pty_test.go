//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// The client is tested as a user meets it: the weir binary in a
// pseudo-terminal, typed at, its screen read back.

// ptyScreen collects what the client writes to its terminal.
type ptyScreen struct {
	t       *testing.T
	f       *os.File
	mu      sync.Mutex
	raw     []byte
	mark    int // offset in the cleaned text up to which expect has read
	changed chan struct{}
	closed  chan struct{}
}

func newPtyScreen(t *testing.T, f *os.File) *ptyScreen {
	s := &ptyScreen{t: t, f: f, changed: make(chan struct{}, 1), closed: make(chan struct{})}
	go func() {
		defer close(s.closed)
		buf := make([]byte, 32<<10)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				s.mu.Lock()
				s.raw = append(s.raw, buf[:n]...)
				s.mu.Unlock()
				select {
				case s.changed <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// ansi matches the escape sequences the client and readline write: CSI
// sequences (colours, cursor, clearing, the alternate screen) and the
// few two-byte ones.
var ansi = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|[()][0-9A-B]|[=>78])`)

// clean returns the screen text without escapes and carriage returns. An
// escape cut off at the end is left out until it is complete, so that
// offsets into the text stay valid as it grows.
func (s *ptyScreen) clean() string {
	s.mu.Lock()
	raw := string(s.raw)
	s.mu.Unlock()
	if i := strings.LastIndexByte(raw, 0x1b); i >= 0 && !ansi.MatchString(raw[i:]) && len(raw)-i < 32 {
		raw = raw[:i]
	}
	return strings.ReplaceAll(ansi.ReplaceAllString(raw, ""), "\r", "")
}

func (s *ptyScreen) send(text string) {
	s.t.Helper()
	if _, err := s.f.WriteString(text); err != nil {
		s.t.Fatalf("typing %q: %v", text, err)
	}
}

// expect waits up to timeout for re to match the text after the mark and
// moves the mark past the match.
func (s *ptyScreen) expect(re string, timeout time.Duration) []string {
	s.t.Helper()
	var out []string
	s.waitFor(timeout, "/"+re+"/", func(text string) int {
		m := regexp.MustCompile(re).FindStringSubmatchIndex(text)
		if m == nil {
			return -1
		}
		for i := 0; i < len(m); i += 2 {
			if m[i] < 0 {
				out = append(out, "")
			} else {
				out = append(out, text[m[i]:m[i+1]])
			}
		}
		return m[1]
	})
	return out
}

// waitFor calls match on the text after the mark until it returns the
// end of what it consumed (>= 0), or fails the test after timeout.
func (s *ptyScreen) waitFor(timeout time.Duration, what string, match func(text string) int) {
	s.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		text := s.clean()
		if end := match(text[s.mark:]); end >= 0 {
			s.mark += end
			return
		}
		select {
		case <-s.changed:
		case <-s.closed:
			// The last bytes may have come with the close.
			text := s.clean()
			if end := match(text[s.mark:]); end >= 0 {
				s.mark += end
				return
			}
			s.t.Fatalf("the client's terminal closed while waiting for %s; screen after the mark:\n%s", what, tail(text[s.mark:], 3000))
		case <-deadline.C:
			s.t.Fatalf("no %s within %v; screen after the mark:\n%s", what, timeout, tail(text[s.mark:], 3000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// frame is one drawing of a full-screen result view.
type frame struct {
	status map[string]string // Rows, Changes, Refresh, Page, Job
	rows   [][]string        // the cells of each row line
}

var (
	framePattern = regexp.MustCompile(`(?s)SQL Query Result \((Table|Changelog)\)\n(.*?)L Last Page`)
	statusField  = regexp.MustCompile(`(Rows|Changes|Refresh|Page|Updated|Job): (\S+(?: ms| of \d+)?)`)
)

// expectFrame waits for a drawing of the view for which ok holds and
// moves the mark past it.
func (s *ptyScreen) expectFrame(mode string, timeout time.Duration, what string, ok func(frame) bool) frame {
	s.t.Helper()
	var found frame
	s.waitFor(timeout, what, func(text string) int {
		for _, m := range framePattern.FindAllStringSubmatchIndex(text, -1) {
			if text[m[2]:m[3]] != mode {
				continue
			}
			f := parseFrame(text[m[4]:m[5]])
			if ok(f) {
				found = f
				return m[1]
			}
		}
		return -1
	})
	return found
}

func parseFrame(body string) frame {
	f := frame{status: map[string]string{}}
	lines := strings.Split(body, "\n")
	for _, m := range statusField.FindAllStringSubmatch(lines[0], -1) {
		f.status[m[1]] = m[2]
	}
	header := false
	for _, l := range lines[1:] {
		fields := strings.Fields(l)
		switch {
		case !header:
			header = len(fields) > 0 && fields[len(fields)-1] == "cnt"
		case len(fields) > 0 && (fields[0] == "Q" || fields[0] == "The" || fields[0] == "Query"):
			return f
		case len(fields) > 0:
			f.rows = append(f.rows, fields)
		}
	}
	return f
}

func (f frame) num(t *testing.T, key string) int {
	t.Helper()
	n, err := strconv.Atoi(f.status[key])
	if err != nil {
		t.Fatalf("status %s: %q is not a number (status %v)", key, f.status[key], f.status)
	}
	return n
}

type change struct {
	op        string
	user, cnt int
}

// checkCountChangelog checks a run of changes of SELECT user_id,
// COUNT(*) ... GROUP BY user_id as the updating aggregation must produce
// them: a user's first row is +I with count 1, and every -U of a count is
// followed by the +U of the count plus one. A window onto a longer
// changelog (complete = false) may start after a -U and end before a +U.
func checkCountChangelog(t *testing.T, where string, changes []change, complete bool) {
	t.Helper()
	last := map[int]int{} // user → last count seen
	for i, c := range changes {
		if c.user < 1 || c.user > 3 {
			t.Fatalf("%s: change %d %v: user_id outside 1..3", where, i, c)
		}
		switch c.op {
		case "+I":
			if c.cnt != 1 || last[c.user] != 0 {
				t.Fatalf("%s: change %d %v: +I of a user seen before, or a count other than 1", where, i, c)
			}
		case "-U":
			if i+1 < len(changes) {
				n := changes[i+1]
				if n.op != "+U" || n.user != c.user || n.cnt != c.cnt+1 {
					t.Fatalf("%s: change %d %v is followed by %v, want +U %d %d", where, i, c, n, c.user, c.cnt+1)
				}
			}
			if complete && last[c.user] != c.cnt {
				t.Fatalf("%s: change %d %v retracts a count the user did not have (%d)", where, i, c, last[c.user])
			}
		case "+U":
			if i > 0 {
				p := changes[i-1]
				if p.op != "-U" || p.user != c.user || p.cnt != c.cnt-1 {
					t.Fatalf("%s: change %d %v follows %v, want -U %d %d", where, i, c, p, c.user, c.cnt-1)
				}
			} else if complete {
				t.Fatalf("%s: the changelog starts with %v", where, c)
			}
		default:
			t.Fatalf("%s: change %d %v: op %q in an insert-or-update changelog", where, i, c, c.op)
		}
		last[c.user] = c.cnt
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

const (
	prompt = `Flink SQL> `
	// Every step is bounded; the bounds are generous because the machine
	// running the tests may be busy.
	step = 60 * time.Second
)

// TestSQLClientSession is a scripted interactive session: it creates an
// unbounded datagen table, runs an updating GROUP BY in the tableau,
// changelog and table result modes, cancels each (Ctrl-C, Q, Q), checks
// what the screen shows against what the aggregation must produce, that
// the jobs were cancelled, recalls a statement from the history, and
// quits.
func TestSQLClientSession(t *testing.T) {
	exe := buildWeir(t)
	hist := filepath.Join(t.TempDir(), "history")
	cmd := exec.Command(exe, "sql")
	cmd.Env = append(os.Environ(), "WEIR_SQL_HISTORY="+hist, "TERM=xterm")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	exited, exitErr := waitProcess(t, cmd, ptmx)
	s := newPtyScreen(t, ptmx)
	began := time.Now()
	phase := began
	lap := func(name string) {
		t.Logf("%-40s %6.2fs", name, time.Since(phase).Seconds())
		phase = time.Now()
	}

	s.expect(`Enter 'HELP;'`, step)
	s.expect(prompt, step)
	// Ctrl-C must not make the kernel discard the rows the tableau has
	// written but the terminal has not shown yet: the count printed after
	// the interrupt would then be larger than the rows on the screen.
	// (TCGETS on a pty's master reads its slave's, the client's, flags.)
	if tio, err := unix.IoctlGetTermios(int(ptmx.Fd()), unix.TCGETS); err != nil {
		t.Fatal(err)
	} else if tio.Lflag&unix.NOFLSH == 0 {
		t.Fatal("the client leaves NOFLSH off: Ctrl-C would discard output not yet shown")
	}
	lap("start")

	// A statement over three lines: the continuation prompt, then the
	// statement runs at the ';'.
	s.send("CREATE TABLE clicks (\r")
	s.expect(`\n> `, step)
	s.send("  user_id INT, url STRING -- a comment; not the end\r")
	s.expect(`\n> `, step)
	s.send(") WITH ('connector' = 'datagen', 'rows-per-second' = '40',\r 'fields.user_id.min' = '1', 'fields.user_id.max' = '3');\r")
	s.expect(`\[INFO\] Execute statement succeed\.`, step)
	s.expect(prompt, step)

	// A bad statement gets the parser's line and column and leaves the
	// session running.
	s.send("SELECT user_id FROM clicks WHERE;\r")
	s.expect(`\[ERROR\] Could not execute SQL statement\. Reason:\nline 1, column \d+: [^\n]+`, step)
	s.expect(prompt, step)
	s.send("SET 'sql-client.execution.result-mode' = 'tables';\r")
	s.expect(`\[ERROR\][^\n]*\n[^\n]*result-mode: "tables" is not 'table', 'changelog' or 'tableau'`, step)
	s.expect(prompt, step)
	lap("create table, errors")

	const query = "SELECT user_id, COUNT(*) AS cnt FROM clicks GROUP BY user_id;\r"

	// Tableau: rows printed as they come; Ctrl-C cancels the query.
	s.send("SET 'sql-client.execution.result-mode' = 'tableau';\r")
	s.expect(`\[INFO\] Execute statement succeed\.`, step)
	s.expect(prompt, step)
	s.send(query)
	s.expect(`\+----\+-+\+-+\+\n\| op \|\s+user_id \|\s+cnt \|\n\+----\+`, step)
	rowRe := regexp.MustCompile(`\| ([+-][IUD]) \|\s+(\d+) \|\s+(\d+) \|\n`)
	s.waitFor(step, "30 rows in tableau mode", func(text string) int {
		if len(rowRe.FindAllStringIndex(text, -1)) >= 30 {
			return 0
		}
		return -1
	})
	s.send("\x03")
	m := s.expect(`(?s)^(.*?)\+----\+-+\+-+\+\nQuery terminated, received a total of (\d+) rows\n`, step)
	var changes []change
	for _, r := range rowRe.FindAllStringSubmatch(m[1], -1) {
		changes = append(changes, change{r[1], atoi(t, r[2]), atoi(t, r[3])})
	}
	if got := atoi(t, m[2]); got != len(changes) || got < 30 {
		t.Fatalf("tableau: %q rows counted, %d printed, want the same and at least 30", m[2], len(changes))
	}
	checkCountChangelog(t, "tableau", changes, true)
	s.expect(prompt, step)
	lap("tableau: 30 rows, Ctrl-C")

	// Changelog: a full-screen view of the changes with their ops.
	s.send("SET 'sql-client.execution.result-mode' = 'changelog';\r")
	s.expect(`\[INFO\] Execute statement succeed\.`, step)
	s.expect(prompt, step)
	s.send(query)
	first := s.expectFrame("Changelog", step, "a changelog view with changes", func(f frame) bool {
		return f.status["Job"] == "RUNNING" && f.num(t, "Changes") > 0
	})
	later := s.expectFrame("Changelog", step, "a changelog view with 30 more changes", func(f frame) bool {
		return f.num(t, "Changes") >= first.num(t, "Changes")+30 && len(f.rows) >= 20
	})
	changes = changes[:0]
	for _, r := range later.rows {
		if len(r) != 3 {
			t.Fatalf("changelog: row %q, want op, user_id, cnt", r)
		}
		changes = append(changes, change{r[0], atoi(t, r[1]), atoi(t, r[2])})
	}
	checkCountChangelog(t, "changelog view", changes, false)
	s.send("q")
	s.expect(prompt, step)
	lap("changelog: 30 changes, q")

	// Table: the materialized result, updated in place.
	s.send("SET 'sql-client.execution.result-mode' = 'table';\r")
	s.expect(`\[INFO\] Execute statement succeed\.`, step)
	s.expect(prompt, step)
	s.send(query)
	tableOf := func(f frame) (map[int]int, int) {
		counts, sum := map[int]int{}, 0
		for _, r := range f.rows {
			if len(r) != 2 {
				t.Fatalf("table: row %q, want user_id, cnt", r)
			}
			u, c := atoi(t, r[0]), atoi(t, r[1])
			if _, dup := counts[u]; dup || u < 1 || u > 3 || c < 1 {
				t.Fatalf("table: rows %q: user %d twice, outside 1..3 or a count below 1", f.rows, u)
			}
			counts[u], sum = c, sum+c
		}
		if n := f.num(t, "Rows"); n != len(f.rows) {
			t.Fatalf("table: status says %d rows, the view shows %d", n, len(f.rows))
		}
		// Every input row is +I of a new user or -U, +U of a known one:
		// the changes applied so far give exactly this table.
		if want := 2*sum - len(counts); f.num(t, "Changes") != want {
			t.Fatalf("table: %d changes for counts %v, which take %d", f.num(t, "Changes"), counts, want)
		}
		return counts, sum
	}
	f1 := s.expectFrame("Table", step, "a table view of the three users", func(f frame) bool {
		tableOf(f) // every drawing must be right, not just the one waited for
		return f.status["Job"] == "RUNNING" && f.num(t, "Rows") == 3
	})
	c1, sum1 := tableOf(f1)
	f2 := s.expectFrame("Table", step, "a table view with 20 more rows counted", func(f frame) bool {
		_, sum := tableOf(f)
		return sum >= sum1+20
	})
	c2, _ := tableOf(f2)
	for u, c := range c1 {
		if c2[u] < c {
			t.Fatalf("table: user %d's count went from %d down to %d", u, c, c2[u])
		}
	}
	if f2.status["Refresh"] != "500 ms" || !strings.HasPrefix(f2.status["Page"], "Last of 1") {
		t.Fatalf("table: status %v, want Refresh 500 ms and Page Last of 1", f2.status)
	}
	s.send("q")
	s.expect(prompt, step)
	lap("table: 20 counted, q")

	// The three query jobs were cancelled, not left running.
	s.send("SHOW JOBS;\r")
	m = s.expect(`(?s)\| +job id \| +job name \| +status \| +start time \|\n\+[-+]+\n(.*?)\+[-+]+\n3 rows in set\n`, step)
	jobs := regexp.MustCompile(`\| [0-9a-f]{32} \| SELECT user_id, COUNT\(\*\) AS c... \| +(\w+) \|`).FindAllStringSubmatch(m[1], -1)
	if len(jobs) != 3 {
		t.Fatalf("SHOW JOBS lists %q, want the three queries", m[1])
	}
	for _, j := range jobs {
		if j[1] != "CANCELED" {
			t.Fatalf("SHOW JOBS: a query is %s, want CANCELED:\n%s", j[1], m[1])
		}
	}
	s.expect(prompt, step)
	// With no job left, the client is idle.
	if cpu, ok := cpuSeconds(cmd.Process.Pid); ok {
		time.Sleep(2 * time.Second)
		cpu2, _ := cpuSeconds(cmd.Process.Pid)
		t.Logf("CPU time of the idle client over 2 s: %.2fs", cpu2-cpu)
		if cpu2-cpu > 0.5 {
			t.Fatalf("the client used %.2fs of CPU in 2 s with no query running", cpu2-cpu)
		}
	}
	lap("show jobs, idle")

	// Up-arrow recalls the last statement from the history.
	s.send("\x1b[A")
	s.expect(`SHOW JOBS;`, step)
	s.send("\r")
	s.expect(`\n3 rows in set\n`, step)
	s.expect(prompt, step)

	s.send("QUIT;\r")
	s.expect(`Shutting down the session\.\.\.\ndone\.`, step)
	select {
	case <-exited:
		if err := *exitErr; err != nil {
			t.Fatalf("weir sql exited with %v", err)
		}
	case <-time.After(step):
		t.Fatal("weir sql still runs after QUIT;")
	}
	lap("history, quit")
	t.Logf("whole session %.1fs", time.Since(began).Seconds())

	h, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CREATE TABLE clicks ( user_id INT, url STRING ) WITH ('connector' = 'datagen', 'rows-per-second' = '40', 'fields.user_id.min'",
		"SELECT user_id, COUNT(*) AS cnt FROM clicks GROUP BY user_id;",
		"SHOW JOBS;",
	} {
		if !strings.Contains(string(h), want) {
			t.Errorf("history file lacks %q:\n%s", want, h)
		}
	}
}

// TestSQLClientCtrlD checks that Ctrl-D at an empty prompt ends the
// client with status 0.
func TestSQLClientCtrlD(t *testing.T) {
	exe := buildWeir(t)
	cmd := exec.Command(exe, "sql")
	cmd.Env = append(os.Environ(), "WEIR_SQL_HISTORY="+filepath.Join(t.TempDir(), "history"))
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	exited, exitErr := waitProcess(t, cmd, ptmx)
	s := newPtyScreen(t, ptmx)
	s.expect(prompt, step)
	s.send("SELECT\r")
	s.expect(`\n> `, step)
	// Ctrl-C drops the unfinished statement: the prompt is the first one
	// again.
	s.send("\x03")
	s.expect(prompt, step)
	s.send("\x04")
	s.expect(`Shutting down the session`, step)
	select {
	case <-exited:
		if err := *exitErr; err != nil {
			t.Fatalf("weir sql exited with %v", err)
		}
	case <-time.After(step):
		t.Fatal("weir sql still runs after Ctrl-D")
	}
}

// waitProcess returns a channel closed when the client has exited, and
// its exit error then; the client is killed if it still runs when the
// test ends.
func waitProcess(t *testing.T, cmd *exec.Cmd, ptmx *os.File) (<-chan struct{}, *error) {
	exited := make(chan struct{})
	var err error
	go func() {
		err = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		ptmx.Close()
	})
	return exited, &err
}

// cpuSeconds returns the user and system CPU time of a process, where
// /proc has it.
func cpuSeconds(pid int) (float64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	// Clock ticks; Linux reports them at 100 a second.
	return (ut + st) / 100, true
}
