package main

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
)

func newTaskManagerCommand() *cobra.Command {
	var flags clusterFlags
	var jobManager string
	cmd := &cobra.Command{
		Use:   "taskmanager [flags]",
		Short: "Run a TaskManager, which offers task slots to a JobManager",
		Long: `Run a TaskManager in the foreground until it receives SIGINT or SIGTERM.

The TaskManager registers its slots with the JobManager at --jobmanager
(default jobmanager.rpc.address:jobmanager.rpc.port) and answers its
heartbeats on its own RPC port, which the JobManager dials. If it cannot
register within taskmanager.registration.timeout (5 min by default), at
start or after it lost the JobManager, it exits with status 1 and an
error naming the JobManager's address. A wrong token fails at once.
See docs/cluster.md.`,
		Example: `  weir taskmanager --jobmanager 127.0.0.1:6123 --slots 4
  WEIR_TOKEN=$(cat /etc/weir/token) weir taskmanager --jobmanager jm.example.com:6123 --bind 0.0.0.0 --slots 8`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := flags.load(cmd)
			if err != nil {
				return err
			}
			for flag, key := range map[string]string{
				"slots":    config.NumTaskSlots.Key,
				"bind":     config.TaskManagerBindHost.Key,
				"rpc-port": config.TaskManagerRPCPort.Key,
			} {
				if err := setFromFlag(cmd, cfg, flag, key); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("slots") && intFlag(cmd, "slots") < 1 {
				return usageErrorf(cmd, "--slots %d: a taskmanager needs at least 1 slot", intFlag(cmd, "slots"))
			}
			opts := cluster.TaskManagerOptionsFrom(cfg)
			if jobManager != "" {
				if _, _, err := net.SplitHostPort(jobManager); err != nil {
					return usageErrorf(cmd, "--jobmanager %q: want HOST:PORT of the jobmanager's RPC server", jobManager)
				}
				opts.JobManagerAddress = jobManager
			}
			opts.Logger = clusterLogger(cmd)
			if opts.HA, err = openHA(cmd.Context(), cfg); err != nil {
				return fmt.Errorf("taskmanager: %w", err)
			}
			if opts.HA != nil {
				if jobManager != "" {
					return usageErrorf(cmd, "--jobmanager names a JobManager, but with high-availability.type etcd the TaskManager follows the elected leader; drop --jobmanager")
				}
				defer opts.HA.Close()
			}
			tm, err := cluster.NewTaskManager(opts)
			if err != nil {
				return fmt.Errorf("taskmanager: %w", err)
			}
			if err := tm.Run(cmd.Context()); err != nil {
				return fmt.Errorf("taskmanager: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&jobManager, "jobmanager", "", "`HOST:PORT` of the JobManager's RPC server (default jobmanager.rpc.address:jobmanager.rpc.port)")
	f.Int("slots", 1, "number of task slots (taskmanager.numberOfTaskSlots)")
	f.String("bind", config.TaskManagerBindHost.Default, "interface of the TaskManager's RPC server (taskmanager.bind-host)")
	f.Int("rpc-port", config.TaskManagerRPCPort.Default, "port of the TaskManager's RPC server; 0 picks a free one (taskmanager.rpc.port)")
	flags.register(cmd)
	return cmd
}
