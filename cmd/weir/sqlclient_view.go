package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chzyer/readline"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// The full-screen result views of the table and changelog result modes,
// drawn with ANSI escapes on the terminal's alternate screen, as Flink's
// client draws them.

// refreshIntervals are the steps of + and -.
var refreshIntervals = []time.Duration{
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
}

const defaultRefresh = 2 // 500 ms

// resultView holds what a view shows; the goroutine that reads the
// query's records updates it under mu.
type resultView struct {
	res       *table.Result
	changelog bool
	widths    []int

	mu      sync.Mutex
	mat     *table.MaterializedTable // table mode
	log     []types.Record           // changelog mode: the latest changes
	limit   int
	changes int
	updated time.Time
	ended   bool
	err     error

	page    int  // 0-based, when not following
	follow  bool // showing the last page
	refresh int  // index in refreshIntervals
	per     int  // rows a page holds on the screen, as last drawn
	// version counts what changes the screen; a refresh with nothing new
	// draws nothing.
	version int
}

// view shows a running query in the table or changelog mode until Q or
// Ctrl-C, cancelling the query if it still runs. It returns the query's
// error when it failed.
func (c *sqlClient) view(res *table.Result, mode string) error {
	opts := c.tenv.PrintOptions()
	limit := table.DefaultMaxTableRows
	if v, ok := c.tenv.Setting(keyMaxTableRows); ok {
		// SET checks the value; one given with -D is taken if it is good.
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			limit = n
		}
	}
	v := &resultView{res: res, changelog: mode == "changelog", limit: limit, follow: true, refresh: defaultRefresh, per: 10,
		widths: table.ColumnWidths(res.Columns, opts.MaxColumnWidth)}
	if !v.changelog {
		v.mat = table.NewMaterializedTable(res.Columns, limit)
	}

	// The records are read whatever the view does, so that the query
	// never blocks on the client and a cancel always gets through.
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for r := range res.Stream {
			v.mu.Lock()
			v.apply(r)
			v.mu.Unlock()
		}
		err := res.Job.Wait()
		v.mu.Lock()
		v.version++
		v.ended = true
		if err != nil && !errors.Is(err, context.Canceled) {
			v.err = err
		}
		v.mu.Unlock()
	}()

	state, err := readline.MakeRaw(c.inFd)
	if err != nil {
		res.Job.Cancel()
		<-ended
		return fmt.Errorf("the %s result mode needs a terminal: %w", mode, err)
	}
	fmt.Fprint(c.out, "\x1b[?1049h\x1b[?25l") // alternate screen, no cursor
	defer func() {
		fmt.Fprint(c.out, "\x1b[?25h\x1b[?1049l")
		_ = readline.Restore(c.inFd, state)
	}()

	endedSeen := ended
	timer := time.NewTimer(0)
	defer timer.Stop()
	keys := c.kb.takePending()
	drawn := screenState{version: -1}
	for {
		if len(keys) > 0 {
			if v.keys(keys) {
				break
			}
			keys = nil
		}
		drawn = c.draw(v, drawn)
		v.mu.Lock()
		every := refreshIntervals[v.refresh]
		v.mu.Unlock()
		timer.Reset(every)
		select {
		case b, ok := <-c.kb.ch:
			if !ok {
				// The terminal went away: stop the query, end the view.
				keys = []byte{'q'}
			} else {
				keys = b
			}
		case <-c.kb.done:
			keys = []byte{'q'}
		case <-timer.C:
		case <-endedSeen:
			endedSeen = nil // draw the final state once, then wait for Q
		}
	}
	res.Job.Cancel()
	<-ended
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

func (v *resultView) apply(r types.Record) {
	v.version++
	v.changes++
	v.updated = time.Now()
	if v.mat != nil {
		v.mat.Apply(r)
		return
	}
	v.log = append(v.log, r)
	if len(v.log) >= 2*v.limit {
		v.log = slices.Clone(v.log[len(v.log)-v.limit:])
	}
}

// keys handles what was typed; it reports Q or Ctrl-C.
func (v *resultView) keys(b []byte) (quit bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.version++
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case 'q', 'Q', 3: // 3 is Ctrl-C, in raw mode
			return true
		case 'n', 'N':
			v.nextPage()
		case 'p', 'P':
			v.prevPage()
		case 'l', 'L':
			v.follow = true
		case '+':
			v.refresh = min(v.refresh+1, len(refreshIntervals)-1)
		case '-':
			v.refresh = max(v.refresh-1, 0)
		case 0x1b:
			// Arrow keys and PgUp/PgDn: ESC [ A|B|5~|6~; other
			// sequences are skipped.
			rest := string(b[i+1:])
			switch {
			case strings.HasPrefix(rest, "[A"), strings.HasPrefix(rest, "[5~"):
				v.prevPage()
			case strings.HasPrefix(rest, "[B"), strings.HasPrefix(rest, "[6~"):
				v.nextPage()
			}
			if strings.HasPrefix(rest, "[") {
				j := strings.IndexFunc(rest[1:], func(r rune) bool { return r >= 0x40 && r <= 0x7e })
				if j < 0 {
					return false
				}
				i += 1 + j + 1
			}
		}
	}
	return false
}

func (v *resultView) total() int {
	if v.mat != nil {
		return v.mat.Len()
	}
	return min(len(v.log), v.limit)
}

func (v *resultView) pages(per int) int { return max(1, (v.total()+per-1)/per) }

func (v *resultView) nextPage() {
	if v.follow {
		return
	}
	v.page++
}

func (v *resultView) prevPage() {
	if v.follow {
		v.follow = false
		v.page = v.pages(v.per) - 1
	}
	v.page = max(v.page-1, 0)
}

// screenState is what the screen shows: the view's version on a screen
// of a size.
type screenState struct{ version, width, height int }

// draw paints the whole screen, unless it shows this already: a title, the
// status line, the column header, a page of rows and the keys.
func (c *sqlClient) draw(v *resultView, last screenState) screenState {
	width, height, err := readline.GetSize(c.outFd)
	if err != nil || width <= 0 || height <= 0 {
		width, height = 80, 24
	}
	per := max(height-6, 1)

	v.mu.Lock()
	now := screenState{v.version, width, height}
	if now == last {
		v.mu.Unlock()
		return now
	}
	v.per = per
	pages := v.pages(per)
	if v.follow || v.page >= pages-1 {
		v.follow, v.page = true, pages-1
	}
	first := v.page * per
	var records []types.Record
	if v.mat != nil {
		for _, r := range v.mat.Rows(first, per) {
			records = append(records, types.Record{Kind: types.Insert, Row: r})
		}
	} else {
		log := v.log[max(len(v.log)-v.limit, 0):]
		if v.follow {
			// Following, the view shows the latest changes, as a tail.
			first = max(len(log)-per, 0)
		}
		records = append(records, log[min(first, len(log)):min(first+per, len(log))]...)
	}
	total, changes, updated, ended, qerr := v.total(), v.changes, v.updated, v.ended, v.err
	refresh := refreshIntervals[v.refresh]
	pageName := fmt.Sprint(v.page + 1)
	if v.follow {
		pageName = "Last"
	}
	v.mu.Unlock()

	job := "RUNNING"
	switch {
	case qerr != nil:
		job = "FAILED"
	case ended:
		job = "FINISHED"
	}
	upd := "-"
	if !updated.IsZero() {
		upd = updated.Format("15:04:05.000")
	}
	title := "SQL Query Result (Table)"
	status := fmt.Sprintf("Rows: %d   Changes: %d   Refresh: %s   Page: %s of %d   Updated: %s   Job: %s",
		total, changes, refreshName(refresh), pageName, pages, upd, job)
	if v.changelog {
		title = "SQL Query Result (Changelog)"
		status = fmt.Sprintf("Changes: %d   Refresh: %s   Page: %s of %d   Updated: %s   Job: %s",
			changes, refreshName(refresh), pageName, pages, upd, job)
	}

	var b strings.Builder
	b.WriteString("\x1b[H")
	line := func(s string) {
		b.WriteString(cut(s, width))
		b.WriteString("\x1b[K\r\n")
	}
	line(strings.Repeat(" ", max((width-len(title))/2, 0)) + "\x1b[1m" + title + "\x1b[0m")
	line(" " + status)
	line("")
	names := make([]string, len(v.res.Columns))
	for i, col := range v.res.Columns {
		names[i] = col.Name
	}
	b.WriteString("\x1b[7m")
	line(v.row("op", names))
	b.WriteString("\x1b[0m")
	for i := range per {
		if i < len(records) {
			line(v.row(records[i].Kind.String(), v.res.FormatRow(records[i].Row)))
		} else {
			line("")
		}
	}
	if qerr != nil {
		line(" Query failed: " + strings.ReplaceAll(qerr.Error(), "\n", " "))
	} else if ended {
		line(" The query has ended; Q returns to the prompt.")
	} else {
		line("")
	}
	b.WriteString(cut(" Q Quit   + Inc Refresh   - Dec Refresh   N Next Page   P Prev Page   L Last Page", width))
	b.WriteString("\x1b[K")
	fmt.Fprint(c.out, b.String())
	return now
}

// row lays out one line of the table, with the op column in the
// changelog mode.
func (v *resultView) row(op string, cells []string) string {
	var b strings.Builder
	if v.changelog {
		b.WriteString(fmt.Sprintf(" %2s", op))
	}
	for i, s := range cells {
		b.WriteByte(' ')
		b.WriteString(table.FitCell(s, v.widths[i]))
	}
	return b.String()
}

// cut keeps the first width characters of a line, skipping ANSI escapes
// in the count.
func cut(s string, width int) string {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			j := strings.IndexByte(s[i:], 'm')
			if j < 0 {
				return s[:i]
			}
			i += j + 1
			continue
		}
		if n == width {
			return s[:i]
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return s
}

func refreshName(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return d.String()
}
