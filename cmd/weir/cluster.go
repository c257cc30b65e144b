package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/internal/cluster"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start or stop a local standalone cluster, or make certificates for it",
		Long: `Start or stop a standalone cluster on this machine: one JobManager and
some TaskManagers as background processes (like Flink's start-cluster.sh
and stop-cluster.sh). Their pid and log files are in --dir. weir cluster
certs makes a self-signed CA and certificate for trials of (mutual) TLS.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newClusterStartCommand(), newClusterStopCommand(), newClusterCertsCommand())
	return cmd
}

// defaultClusterDir is the --dir default of weir cluster start and stop,
// the same for both so that stop finds what start wrote. When there is
// none (no usable runtime, state or home directory) it is empty and
// requireDir explains.
func defaultClusterDir() string {
	dir, _ := cluster.DefaultStandaloneDir()
	return dir
}

func requireDir(dir string) error {
	if dir != "" {
		return nil
	}
	_, err := cluster.DefaultStandaloneDir()
	return err
}

func newClusterStartCommand() *cobra.Command {
	var flags clusterFlags
	var dir string
	var taskManagers, slots int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "start [flags]",
		Short: "Start a JobManager and TaskManagers in the background",
		Long: `Start a JobManager and --taskmanagers TaskManagers as background processes,
write their pid files (jobmanager.pid, taskmanager-N.pid) and logs into
--dir, and wait until every TaskManager has registered. --config and -D
are passed to every process, and so are security settings: a --token is
handed over in the WEIR_TOKEN environment variable, not the command line.

--dir defaults to $XDG_RUNTIME_DIR/weir/cluster, or without a usable
XDG_RUNTIME_DIR to $XDG_STATE_HOME/weir/cluster or
~/.local/state/weir/cluster. It is created with mode 0700; one that
belongs to another user or that group or others can write is refused.`,
		Example: `  weir cluster start --taskmanagers 2 --slots 4
  weir cluster start --config conf.yaml --dir /var/run/weir`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireDir(dir); err != nil {
				return fmt.Errorf("cluster start: %w", err)
			}
			cfg, err := flags.load(cmd)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			var passed, env []string
			if flags.configFile != "" {
				abs, err := filepath.Abs(flags.configFile)
				if err != nil {
					return err
				}
				passed = append(passed, "--config", abs)
			}
			for _, d := range flags.defines {
				passed = append(passed, "-D", d)
			}
			if cmd.Flags().Changed("token") {
				env = append(env, "WEIR_TOKEN="+flags.token)
			}
			opts := cluster.StandaloneOptions{
				Exe: exe, Dir: dir, TaskManagers: taskManagers, Slots: slots,
				Args: passed, Env: env,
				RESTAddress: cluster.RESTAddressFrom(cfg), Security: cluster.SecurityFrom(cfg),
				Wait: wait,
			}
			if err := cluster.StartStandalone(cmd.Context(), opts); err != nil {
				return fmt.Errorf("cluster start: %w", err)
			}
			scheme := "http"
			if opts.Security.TLS.Enabled {
				scheme = "https"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Started a JobManager and %d TaskManagers with %d slots each; REST API at %s://%s; pid and log files in %s\n",
				taskManagers, slots, scheme, opts.RESTAddress, dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", defaultClusterDir(), "`directory` of the pid and log files")
	f.IntVar(&taskManagers, "taskmanagers", 1, "number of TaskManagers")
	f.IntVar(&slots, "slots", 1, "task slots per TaskManager")
	f.DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the TaskManagers to register")
	flags.register(cmd)
	return cmd
}

func newClusterStopCommand() *cobra.Command {
	var dir string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "stop [flags]",
		Short: "Stop the cluster that weir cluster start started",
		Long: `Stop the processes whose pid files are in --dir: SIGTERM, then SIGKILL for
those still running after --grace. TaskManagers are stopped before the
JobManager. Pid files of processes that are gone are removed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireDir(dir); err != nil {
				return fmt.Errorf("cluster stop: %w", err)
			}
			stopped, err := cluster.StopStandalone(dir, grace)
			if len(stopped) == 0 && err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "No cluster processes running from %s\n", dir)
				return nil
			}
			for _, name := range stopped {
				fmt.Fprintf(cmd.OutOrStdout(), "Stopped %s\n", name)
			}
			if err != nil {
				return fmt.Errorf("cluster stop: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultClusterDir(), "`directory` of the pid files")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long each process may take to stop before SIGKILL")
	return cmd
}
