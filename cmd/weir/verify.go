package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/internal/verify"
)

func newVerifyCommand() *cobra.Command {
	o := verify.Options{}
	var faults, report string
	var seed int64
	cmd := &cobra.Command{
		Use:   "verify [flags] PROGRAM [ARGS...]",
		Short: "Prove a job exactly-once: run it on a local cluster under random faults",
		Long: `Run a job program on a local cluster of real processes (one JobManager and
--taskmanagers TaskManagers on 127.0.0.1), inject faults at random while it
runs, and compare what it committed with what a failure-free run of the
same program commits. Rounds repeat until --duration has passed or
--max-faults were injected (or --rounds ran); at least one round runs.

The program's arguments must contain {output}, replaced in each run by the
directory its sink commits to (part files, read as lines), and may contain
{checkpoints}, replaced by a fresh checkpoint directory, and {run}, the
run's name (reference, round_1, ...). For a sink that commits to a
database, bench/verify/jdbc.sh reads each run's table instead. Give the program
a restart strategy that outlasts the faults (-D restart-strategy.type=...).

Faults (--faults, comma-separated):
  kill-taskmanager  SIGKILL of a TaskManager, then a replacement starts
  kill-worker       SIGKILL of one worker process of the job
  stop-taskmanager  SIGSTOP of a TaskManager for --stop-for, longer than
                    the heartbeat timeout, then SIGCONT: its workers go on
                    running while the job restarts elsewhere, and must
                    commit nothing
  panic-task        a task panics, as faulty user code would (SIGUSR1 to a
                    worker; the job runs with execution.fault-injection.signals)
  error-task        a task fails with an error (SIGUSR2)
  cut-connections   the TCP connections to a worker's data plane or the
                    JobManager's RPC port are reset (ss -K)
  fill-storage      the checkpoint storage (a tmpfs of --storage-size that
                    the harness mounts; needs root) is full for --fill-for
  kill-jobmanager   SIGKILL of the leading JobManager, then a new standby
                    starts; asking for it runs the cluster highly
                    available (an etcd server the harness starts, needs
                    Debian's etcd-server; two JobManagers, lease TTL 2 s)
clock-jump is named but not injected, and the report says why.

It prints a summary and writes a JSON report (faults by kind, restarts,
recovery times, checkpoints, lines lost and duplicated). A run that loses
or duplicates anything, or whose job does not finish, exits with status 1
and keeps the round's output and the cluster's logs as evidence.`,
		Example: `  weir verify -p 2 --duration 30m -D restart-strategy.type=fixed-delay \
      -D restart-strategy.fixed-delay.attempts=100000 -D restart-strategy.fixed-delay.delay=200ms \
      ./examples/wordcount --mode streaming --input words.txt --output {output} \
      --checkpoint-dir file://{checkpoints} --checkpoint-interval 300ms --rate 20000`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range strings.Split(faults, ",") {
				if f = strings.TrimSpace(f); f != "" {
					o.Faults = append(o.Faults, f)
				}
			}
			if o.Dir == "" {
				dir, err := os.MkdirTemp("", "weir-verify-")
				if err != nil {
					return err
				}
				o.Dir = dir
			}
			if seed == 0 {
				seed = time.Now().UnixNano()
			}
			o.Seed = uint64(seed)
			weirExe, err := os.Executable()
			if err != nil {
				return err
			}
			o.Weir = weirExe
			exe, cleanup, err := buildProgram(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer cleanup()
			if o.Program, err = filepath.Abs(exe); err != nil {
				return err
			}
			o.Args = args[1:]
			o.Log = cmd.ErrOrStderr()
			rep, err := verify.Run(cmd.Context(), o)
			if rep == nil {
				return err
			}
			if report == "" {
				report = filepath.Join(o.Dir, "report.json")
			}
			if werr := rep.WriteJSON(report); werr != nil {
				return werr
			}
			fmt.Fprint(cmd.OutOrStdout(), rep.Summary())
			fmt.Fprintf(cmd.OutOrStdout(), "  report: %s\n", report)
			if err != nil {
				return err
			}
			if !rep.OK {
				return errors.New("verify: exactly-once violated or the job did not finish; see the report")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after PROGRAM are the program's
	f.IntVarP(&o.Parallelism, "parallelism", "p", 2, "parallelism of the job")
	f.IntVar(&o.TaskManagers, "taskmanagers", 3, "TaskManagers of the local cluster")
	f.IntVar(&o.Slots, "slots", 2, "slots of each TaskManager")
	f.StringVar(&faults, "faults", strings.Join(verify.Kinds, ","), "fault kinds to inject, comma-separated")
	f.DurationVar(&o.Duration, "duration", 0, "start rounds until this much time has passed (0: one round)")
	f.IntVar(&o.Rounds, "rounds", 0, "run exactly this many rounds (overrides --duration and --max-faults)")
	f.IntVar(&o.MaxFaults, "max-faults", 0, "stop after the round in which this many faults were injected (0: no limit)")
	f.DurationVar(&o.MinInterval, "min-interval", 3*time.Second, "shortest pause before a fault")
	f.DurationVar(&o.MaxInterval, "max-interval", 5*time.Second, "longest pause before a fault")
	f.BoolVar(&o.Batch, "batch", false, "the job runs in batch mode (no checkpoints): inject faults once it runs, not after its first checkpoint")
	f.DurationVar(&o.StopFor, "stop-for", 8*time.Second, "how long stop-taskmanager keeps a TaskManager stopped")
	f.DurationVar(&o.FillFor, "fill-for", 3*time.Second, "how long fill-storage keeps the checkpoint storage full")
	f.Int64Var(&o.StorageSize, "storage-size", 512<<20, "bytes of the tmpfs that holds the checkpoints (for fill-storage)")
	f.BoolVar(&o.Spread, "spread", false, "spread jobs over as many TaskManagers as they can (cluster.evenly-spread-out-slots)")
	f.DurationVar(&o.HeartbeatInterval, "heartbeat-interval", time.Second, "heartbeat.interval of the cluster")
	f.DurationVar(&o.HeartbeatTimeout, "heartbeat-timeout", 5*time.Second, "heartbeat.timeout of the cluster")
	f.DurationVar(&o.RoundTimeout, "round-timeout", 10*time.Minute, "longest a round's job may run")
	f.StringVar(&o.Dir, "dir", "", "working directory for rounds, logs and evidence (default: a new temporary one)")
	f.StringVar(&report, "report", "", "where to write the JSON report (default DIR/report.json)")
	f.Int64Var(&seed, "seed", 0, "seed of the random choices (default: from the clock; the report names it)")
	f.StringArrayVarP(&o.Defines, "define", "D", nil, "configuration option of the job, `key=value` (repeatable)")
	return cmd
}
