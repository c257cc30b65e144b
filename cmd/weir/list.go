package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
)

func newListCommand() *cobra.Command {
	var flags clusterFlags
	var jobManager string
	var all bool
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List the jobs of a weir cluster",
		Long: `List the jobs that run on the cluster whose JobManager's REST API is at
--jobmanager (default rest.address:rest.port), from its GET /jobs. With
--all, finished, cancelled and failed jobs are listed too.`,
		Example: `  weir list
  WEIR_TOKEN=$(cat /etc/weir/token) weir list --jobmanager jm.example.com:8081`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := flags.load(cmd)
			if err != nil {
				return err
			}
			client, err := newRESTClient(cmd, cfg, jobManager)
			if err != nil {
				return err
			}
			defer client.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), config.RPCTimeout.Get(cfg))
			defer cancel()
			jobs, err := client.Jobs(ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			n := 0
			for _, j := range jobs {
				if !all && isTerminal(j.Status) {
					continue
				}
				if n == 0 {
					fmt.Fprintln(w, "JOB ID\tSTATUS\tNAME")
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", j.ID, j.Status, j.Name)
				n++
			}
			if n == 0 {
				if all {
					fmt.Fprintln(w, "No jobs.")
				} else {
					fmt.Fprintln(w, "No running jobs.")
				}
			}
			return w.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&jobManager, "jobmanager", "", "`HOST:PORT` of the JobManager's REST API (default rest.address:rest.port)")
	f.BoolVar(&all, "all", false, "also list finished, cancelled and failed jobs")
	flags.register(cmd)
	return cmd
}

// isTerminal reports whether a job status (Flink's names) is final.
func isTerminal(status string) bool {
	return cluster.IsTerminalJobState(status)
}
