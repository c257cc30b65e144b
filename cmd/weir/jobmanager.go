package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
)

// clusterFlags are the configuration flags every cluster command shares.
type clusterFlags struct {
	configFile string
	defines    []string
	token      string
}

func (f *clusterFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.configFile, "config", "", "YAML configuration `file` with Flink-style keys (see docs/configuration.md)")
	fs.StringArrayVarP(&f.defines, "define", "D", nil, "set a configuration option, `key=value` (repeatable; overrides --config)")
	fs.StringVar(&f.token, "token", "", "the cluster's security token (overrides security.token and WEIR_TOKEN; other users can see it in ps, so prefer WEIR_TOKEN)")
}

// load layers the configuration: the --config file, then the WEIR_TOKEN
// environment variable, then -D, then --token. Flags of single options
// (--rpc-port and the like) are applied by the command on top.
func (f *clusterFlags) load(cmd *cobra.Command) (*config.Configuration, error) {
	cfg := config.New()
	if f.configFile != "" {
		c, err := config.LoadFile(f.configFile)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	if t := os.Getenv("WEIR_TOKEN"); t != "" {
		if err := cfg.SetFrom("WEIR_TOKEN", config.SecurityToken.Key, t); err != nil {
			return nil, err
		}
	}
	for _, d := range f.defines {
		k, v, err := config.ParseDefinition(d)
		if err != nil {
			return nil, usageErrorf(cmd, "-D %q: want key=value", d)
		}
		if err := cfg.SetFrom("-D", k, v); err != nil {
			return nil, usageErrorf(cmd, "%v", err)
		}
	}
	if cmd.Flags().Changed("token") {
		if err := cfg.SetFrom("--token", config.SecurityToken.Key, f.token); err != nil {
			return nil, usageErrorf(cmd, "%v", err)
		}
	}
	return cfg, nil
}

// setFromFlag copies an integer or string flag that the user set onto key.
func setFromFlag(cmd *cobra.Command, cfg *config.Configuration, flag, key string) error {
	fl := cmd.Flags().Lookup(flag)
	if fl == nil || !fl.Changed {
		return nil
	}
	if err := cfg.SetFrom("--"+flag, key, fl.Value.String()); err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	return nil
}

// clusterLogger logs to the command's error output, where an operator
// running the process in a terminal or under a supervisor looks.
func clusterLogger(cmd *cobra.Command) *slog.Logger {
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
}

func newJobManagerCommand() *cobra.Command {
	var flags clusterFlags
	cmd := &cobra.Command{
		Use:   "jobmanager [flags]",
		Short: "Run a JobManager, the coordinator of a weir cluster",
		Long: `Run a JobManager in the foreground until it receives SIGINT or SIGTERM.

TaskManagers register their slots with it on the RPC port; the REST API
(GET /overview, /taskmanagers, /jobs, /jobs/{id}, /metrics; job submission
with weir run, and weir cancel, stop and savepoint) is on the REST port. Both listen on 127.0.0.1 unless --bind (jobmanager.bind-host) says
otherwise; any other address requires a token (security.token, WEIR_TOKEN
or --token), which TaskManagers and clients must then present. Flags
override the --config file and -D. Port 0 picks a free port; the
JobManager prints the ports it listens on. See docs/cluster.md.`,
		Example: `  weir jobmanager
  weir jobmanager --config conf.yaml --rest-port 9081
  WEIR_TOKEN=$(cat /etc/weir/token) weir jobmanager --bind 0.0.0.0 -D security.ssl.enabled=true`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := flags.load(cmd)
			if err != nil {
				return err
			}
			for flag, key := range map[string]string{
				"rpc-port":  config.JobManagerRPCPort.Key,
				"rest-port": config.RESTPort.Key,
				"bind":      config.JobManagerBindHost.Key,
			} {
				if err := setFromFlag(cmd, cfg, flag, key); err != nil {
					return err
				}
			}
			opts := cluster.JobManagerOptionsFrom(cfg)
			opts.Logger = clusterLogger(cmd)
			if opts.HA, err = openHA(cmd.Context(), cfg); err != nil {
				return fmt.Errorf("jobmanager: %w", err)
			}
			if opts.HA != nil {
				defer opts.HA.Close()
			}
			return runJobManager(cmd.Context(), cmd, opts)
		},
	}
	f := cmd.Flags()
	f.Int("rpc-port", config.JobManagerRPCPort.Default, "port of the RPC server (jobmanager.rpc.port)")
	f.Int("rest-port", config.RESTPort.Default, "port of the REST API (rest.port)")
	f.String("bind", config.JobManagerBindHost.Default, "interface to listen on (jobmanager.bind-host)")
	flags.register(cmd)
	return cmd
}

func runJobManager(ctx context.Context, cmd *cobra.Command, opts cluster.JobManagerOptions) error {
	jm, err := cluster.StartJobManager(opts)
	if err != nil {
		return fmt.Errorf("jobmanager: %w", err)
	}
	// One line on stdout, for scripts (and tests) that started the
	// JobManager with port 0 and need to know where it listens.
	fmt.Fprintf(cmd.OutOrStdout(), "jobmanager rpc=%s rest=%s\n", jm.RPCAddr(), jm.RESTURL())
	err = jm.Wait(ctx)
	jm.Close()
	return err
}

// intFlag returns the value of an integer flag.
func intFlag(cmd *cobra.Command, name string) int {
	v, _ := strconv.Atoi(cmd.Flags().Lookup(name).Value.String())
	return v
}
