package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/table"
)

type sqlOptions struct {
	file        string
	catalogFile string
	defines     []string
	parallelism int
	// clusterParallelism is the parallelism.default of the cluster that
	// --jobmanager names: the session's default unless -p gives one. 0
	// on the embedded cluster, which keeps its own default.
	clusterParallelism int
	restore            string
	// jobManager sends INSERT jobs to a cluster (sql_cluster.go).
	jobManager   string
	clusterFlags clusterFlags
	// jobCatalog and jobScript are set by a TaskManager running weir sql
	// as a job's worker: the client's catalog and the statements of the
	// job; allowNonRestored comes with --from-savepoint there.
	jobCatalog       string
	jobScript        string
	allowNonRestored bool
}

func newSQLCommand() *cobra.Command {
	var o sqlOptions
	cmd := &cobra.Command{
		Use:   "sql [flags]",
		Short: "Run SQL: a script with -f, or statements read from standard input",
		Long: `Run Flink SQL on weir's embedded local cluster.

With -f, weir sql runs the statements of a script in order (SET, CREATE,
DROP, ALTER, SHOW, DESCRIBE, EXPLAIN, INSERT INTO, EXECUTE STATEMENT SET and
queries) and prints what each returns, as Flink's SQL client does in its
tableau result mode: query results as a table, or, for a streaming query,
as a changelog (an op column with +I, -U, +U, -D) row by row as they
come. Without -f, on a terminal, it is an interactive SQL client like
Flink's (line editing, history in ~/.weir_sql_history or $WEIR_SQL_HISTORY,
the table, changelog and tableau result modes; HELP; lists its commands);
with standard input not a terminal it runs the statements read from it.

INSERT INTO waits for its job to finish unless 'table.dml-sync' is set to
'false' (in scripts; the interactive client submits and goes on).

With --jobmanager HOST:PORT, INSERT INTO and EXECUTE STATEMENT SET jobs run
on that weir cluster instead of the embedded one: weir plans the statement,
uploads its own executable to the JobManager and submits the job, which a
TaskManager runs as "weir sql" in worker mode with the session's catalog
and settings and the statement passed inline (no file of the client's is
read there, but paths in table options are opened on the TaskManagers).
weir prints the job's ID and goes on, as Flink's client does; with
SET 'table.dml-sync' = 'true' it waits for the job to finish. Queries
(SELECT) are refused with --jobmanager. Jobs run at the cluster's
parallelism.default unless -p, -D or SET 'parallelism.default' gives
another; weir says at once when a job needs more slots than the cluster
has.

SET 'execution.runtime-mode' = 'batch' runs bounded queries in batch mode, where GROUP BY gives final rows instead of a changelog.`,
		Example: `  weir sql
  weir sql -f pipeline.sql
  weir sql -f report.sql -p 4 -D execution.runtime-mode=batch
  echo "SELECT 1 + 1;" | weir sql
  weir sql --jobmanager localhost:8081 -f pipeline.sql`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var extra []table.Option
			var sub *sqlSubmitter
			if o.jobManager != "" {
				if o.jobScript != "" {
					return usageErrorf(cmd, "--job-script runs a job's statements in a worker: not with --jobmanager")
				}
				var err error
				if sub, err = newSQLSubmitter(cmd, &o); err != nil {
					return err
				}
				defer sub.Close()
				o.clusterParallelism = sub.parallelism
				extra = append(extra, table.WithJobSubmitter(sub.submit), func(e *table.Environment) { sub.cat = e.Catalog() })
			}
			return runSQL(cmd.Context(), cmd.OutOrStdout(), cmd.InOrStdin(), o, extra...)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "run the SQL `script` in this file")
	f.StringVar(&o.catalogFile, "catalog-file", "", "keep the catalog (tables, views, functions) in this JSON `file`, so that later sessions see it")
	f.StringArrayVarP(&o.defines, "define", "D", nil, "set a configuration option, `key=value` (repeatable), as SET does")
	f.IntVarP(&o.parallelism, "parallelism", "p", 0, "default parallelism of the jobs (default: the CPU count, or the cluster's parallelism.default with --jobmanager)")
	f.StringVar(&o.restore, "from-savepoint", "", "start the jobs from a savepoint or retained checkpoint (its `directory`), as SET 'execution.savepoint.path' does")
	f.StringVar(&o.jobManager, "jobmanager", "", "submit INSERT INTO jobs to the cluster whose JobManager's REST API is at `HOST:PORT` instead of the embedded local cluster")
	f.StringVar(&o.clusterFlags.token, "token", "", "the cluster's security token, with --jobmanager (prefer WEIR_TOKEN)")
	f.StringVar(&o.jobCatalog, "job-catalog", "", "worker mode: the catalog of the job, as JSON")
	f.StringVar(&o.jobScript, "job-script", "", "worker mode: the statements of the job")
	f.BoolVar(&o.allowNonRestored, "allow-non-restored-state", false, "with --from-savepoint, accept state no operator claims")
	for _, n := range []string{"job-catalog", "job-script", "allow-non-restored-state"} {
		_ = f.MarkHidden(n)
	}
	return cmd
}

func runSQL(ctx context.Context, out io.Writer, in io.Reader, o sqlOptions, extra ...table.Option) error {
	cfg := config.New()
	switch {
	case o.parallelism > 0:
		config.Parallelism.Set(cfg, o.parallelism)
	case o.clusterParallelism > 0:
		config.Parallelism.Set(cfg, o.clusterParallelism)
	}
	var sessionDefines [][2]string
	for _, d := range o.defines {
		k, v, ok := strings.Cut(d, "=")
		if !ok {
			return fmt.Errorf("-D %q: want key=value", d)
		}
		sessionDefines = append(sessionDefines, [2]string{k, v})
	}
	opts := []table.Option{table.WithConfig(cfg), table.WithPrintOutput(out)}
	switch {
	case o.jobScript != "":
		if o.catalogFile != "" || o.file != "" {
			return errors.New("--job-script (worker mode) takes neither -f nor --catalog-file")
		}
		c, err := catalog.FromSnapshot([]byte(o.jobCatalog))
		if err != nil {
			return err
		}
		opts = append(opts, table.WithCatalog(c))
	case o.catalogFile != "":
		c, err := catalog.Load(o.catalogFile)
		if err != nil {
			return err
		}
		opts = append(opts, table.WithCatalog(c))
	}
	tenv := table.NewEnvironment(append(opts, extra...)...)
	// On a terminal without -f, weir sql is the interactive client.
	termOut, _ := out.(*os.File)
	interactive := o.file == "" && o.jobScript == "" && isTerminalFile(in) && termOut != nil && isTerminalFile(termOut)
	var first [][2]string
	if !interactive && o.jobManager == "" {
		// Scripts wait for their INSERT jobs: the embedded cluster ends
		// with the process. The client submits them and goes on, as
		// Flink's does; they run while it does.
		first = append(first, [2]string{"table.dml-sync", "true"})
	}
	if o.restore != "" {
		first = append(first, [2]string{"execution.savepoint.path", o.restore})
		if o.allowNonRestored {
			first = append(first, [2]string{"execution.savepoint.ignore-unclaimed-state", "true"})
		}
	}
	for _, kv := range append(first, sessionDefines...) {
		if _, err := tenv.Execute(ctx, &parser.Set{HasKey: true, Key: kv[0], Value: kv[1]}); err != nil {
			return err
		}
	}
	if interactive {
		return runSQLClient(ctx, tenv, in.(*os.File), termOut)
	}
	var src []byte
	var err error
	switch {
	case o.jobScript != "":
		src = []byte(o.jobScript)
	case o.file != "":
		src, err = os.ReadFile(o.file)
	default:
		src, err = io.ReadAll(bufio.NewReader(in))
	}
	if err != nil {
		return err
	}
	stmts, err := parser.ParseScript(string(src))
	if err != nil {
		if o.file != "" {
			return fmt.Errorf("%s: %w", o.file, err)
		}
		return err
	}
	for _, st := range stmts {
		if err := runStatement(ctx, out, tenv, st); err != nil {
			where := ""
			if o.file != "" {
				where = o.file + ": "
			}
			return fmt.Errorf("%sstatement at line %d: %w", where, st.Pos().Line, err)
		}
	}
	return nil
}

func runStatement(ctx context.Context, out io.Writer, tenv *table.Environment, st parser.Statement) error {
	if q, ok := st.(*parser.QueryStatement); ok {
		res, err := tenv.Query(ctx, q)
		if err != nil {
			return err
		}
		if res.Updating || !tenv.Batch() {
			table.PrintStream(out, res)
			fmt.Fprintln(out)
			return res.Job.Wait()
		}
		for r := range res.Stream {
			res.Rows = append(res.Rows, r)
		}
		if err := res.Job.Wait(); err != nil {
			return err
		}
		table.PrintRows(out, res)
		fmt.Fprintln(out)
		return nil
	}
	res, err := tenv.Execute(ctx, st)
	if err != nil {
		return err
	}
	switch res.Kind {
	case table.ResultOK:
		fmt.Fprintln(out, "[INFO] Execute statement succeed.")
	case table.ResultRows:
		table.PrintRows(out, res)
	case table.ResultText:
		fmt.Fprintln(out, strings.TrimRight(res.Text, "\n"))
	case table.ResultJob:
		if res.JobID != "" {
			printRemoteJob(out, res.JobID)
			break
		}
		fmt.Fprintln(out, "[INFO] Submitting SQL update statement to the cluster...")
		fmt.Fprintln(out, "[INFO] SQL update statement has been successfully submitted to the cluster.")
	default:
		return errors.New("unknown result")
	}
	fmt.Fprintln(out)
	return nil
}
