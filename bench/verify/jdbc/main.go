// Command jdbc runs issue 8's fault injection (internal/verify) against
// the exactly-once JDBC sink: the streaming WordCount writes a row (word,
// n) for every occurrence through XA transactions into a MariaDB server
// this program starts, on a local cluster of a JobManager and three
// TaskManagers whose processes the harness kills and stops. Each round
// writes a table of its own, words_<run>; a round passes when its table
// holds exactly the rows of the failure-free reference run, and the run
// fails if any XA transaction is left prepared at the end.
//
// bench/verify/jdbc.sh builds the binaries and runs it.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/weirproject/weir/internal/testmysql"
	"github.com/weirproject/weir/internal/verify"
)

func main() {
	weirBin := flag.String("weir", "", "the weir binary")
	program := flag.String("program", "", "the wordcount example's binary")
	input := flag.String("input", "", "the input text")
	rate := flag.Int("rate", 2000, "lines a second the job reads")
	rounds := flag.Int("rounds", 1, "rounds of the job under faults")
	faults := flag.String("faults", "kill-taskmanager,kill-worker,stop-taskmanager", "fault kinds, comma-separated")
	dir := flag.String("dir", "", "where rounds, logs and evidence go")
	report := flag.String("report", "", "where the JSON report goes (default DIR/report.json)")
	flag.Parse()
	if *weirBin == "" || *program == "" || *input == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "jdbc: --weir, --program, --input and --dir are required")
		os.Exit(2)
	}
	if err := run(*weirBin, *program, *input, *rate, *rounds, strings.Split(*faults, ","), *dir, *report); err != nil {
		fmt.Fprintln(os.Stderr, "jdbc:", err)
		os.Exit(1)
	}
}

func run(weirBin, program, input string, rate, rounds int, faults []string, dir, report string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	server, err := testmysql.Start()
	if err != nil {
		return err
	}
	defer server.Stop()
	admin, err := sql.Open("mysql", server.DSN(""))
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE verify CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		return err
	}
	dsn := server.DSN("verify")
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	o := verify.Options{
		Weir: weirBin, Program: program,
		Args: []string{"--mode", "streaming", "--input", input,
			"--sink", "jdbc", "--jdbc-url", dsn, "--jdbc-table", "words_{run}", "--jdbc-mode", "exactly-once",
			"--checkpoint-dir", "file://{checkpoints}", "--checkpoint-interval", "300ms", "--rate", fmt.Sprint(rate)},
		Defines: []string{"restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.attempts=1000",
			"restart-strategy.fixed-delay.delay=200ms"},
		Parallelism: 2, TaskManagers: 3, Slots: 2,
		Faults: faults, Rounds: rounds,
		MinInterval: 3 * time.Second, MaxInterval: 5 * time.Second, StopFor: 8 * time.Second,
		HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second,
		RoundTimeout: 10 * time.Minute,
		Dir:          dir, Seed: uint64(time.Now().UnixNano()), Log: os.Stderr,
		Committed: func(run string) ([]string, error) {
			return tableLines(ctx, db, "words_"+run)
		},
	}
	rep, err := verify.Run(ctx, o)
	if rep == nil {
		return err
	}
	if report == "" {
		report = dir + "/report.json"
	}
	if werr := rep.WriteJSON(report); werr != nil {
		return werr
	}
	fmt.Print(rep.Summary())
	fmt.Printf("  report: %s\n", report)
	if err != nil {
		return err
	}
	var prepared int
	rows, err := db.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return err
	}
	for rows.Next() {
		prepared++
	}
	if err := rows.Close(); err != nil {
		return err
	}
	fmt.Printf("  XA transactions left prepared: %d\n", prepared)
	if !rep.OK || prepared > 0 {
		return fmt.Errorf("exactly-once violated, a job did not finish, or transactions were left prepared; see %s", report)
	}
	return nil
}

// tableLines returns a run's rows as "word n" lines.
func tableLines(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT word, n FROM `"+table+"`")
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var word string
		var n int64
		if err := rows.Scan(&word, &n); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s %d", word, n))
	}
	return out, rows.Err()
}
