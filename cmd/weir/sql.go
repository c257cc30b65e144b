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
	restore     string
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
'false'. SET 'execution.runtime-mode' = 'batch' runs bounded queries in
batch mode, where GROUP BY gives final rows instead of a changelog.`,
		Example: `  weir sql
  weir sql -f pipeline.sql
  weir sql -f report.sql -p 4 -D execution.runtime-mode=batch
  echo "SELECT 1 + 1;" | weir sql`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSQL(cmd.Context(), cmd.OutOrStdout(), cmd.InOrStdin(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "run the SQL `script` in this file")
	f.StringVar(&o.catalogFile, "catalog-file", "", "keep the catalog (tables, views, functions) in this JSON `file`, so that later sessions see it")
	f.StringArrayVarP(&o.defines, "define", "D", nil, "set a configuration option, `key=value` (repeatable), as SET does")
	f.IntVarP(&o.parallelism, "parallelism", "p", 0, "default parallelism of the jobs")
	f.StringVar(&o.restore, "from-savepoint", "", "start the jobs from a savepoint or retained checkpoint (its `directory`), as SET 'execution.savepoint.path' does")
	return cmd
}

func runSQL(ctx context.Context, out io.Writer, in io.Reader, o sqlOptions) error {
	cfg := config.New()
	if o.parallelism > 0 {
		config.Parallelism.Set(cfg, o.parallelism)
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
	if o.catalogFile != "" {
		c, err := catalog.Load(o.catalogFile)
		if err != nil {
			return err
		}
		opts = append(opts, table.WithCatalog(c))
	}
	tenv := table.NewEnvironment(opts...)
	// On a terminal without -f, weir sql is the interactive client.
	termOut, _ := out.(*os.File)
	interactive := o.file == "" && isTerminalFile(in) && termOut != nil && isTerminalFile(termOut)
	var first [][2]string
	if !interactive {
		// Scripts wait for their INSERT jobs: the embedded cluster ends
		// with the process. The client submits them and goes on, as
		// Flink's does; they run while it does.
		first = append(first, [2]string{"table.dml-sync", "true"})
	}
	if o.restore != "" {
		first = append(first, [2]string{"execution.savepoint.path", o.restore})
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
	if o.file != "" {
		src, err = os.ReadFile(o.file)
	} else {
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
		fmt.Fprintln(out, "[INFO] Submitting SQL update statement to the cluster...")
		fmt.Fprintln(out, "[INFO] SQL update statement has been successfully submitted to the cluster.")
	default:
		return errors.New("unknown result")
	}
	fmt.Fprintln(out)
	return nil
}
