package stream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/graph"
)

// Application mode: one job binary is the whole deployment.
//
//	myjob jobmanager [job flags]   a JobManager that runs this job, then exits
//	myjob taskmanager --jobmanager HOST:PORT --slots N [-D key=value]...
//
// The JobManager's settings are options like the job's (-D
// jobmanager.rpc.port=6123, -D rest.port=8081, security.token, ...). Its
// Execute starts the JobManager, submits the job with this executable as
// the artifact and the same job flags, waits until the job ends, and
// stops the JobManager; a TaskManager runs the job in worker mode.

// appArgs is the role os.Args asks for, and the flags that follow it.
func appArgs() (role string, rest []string) {
	if len(os.Args) > 1 && (os.Args[1] == "jobmanager" || os.Args[1] == "taskmanager") {
		return os.Args[1], os.Args[2:]
	}
	return "", os.Args[1:]
}

// runAppTaskManager runs a TaskManager until SIGINT or SIGTERM and returns
// the process's exit status.
func runAppTaskManager(args []string) int {
	fs := flag.NewFlagSet(os.Args[0]+" taskmanager", flag.ContinueOnError)
	jobManager := fs.String("jobmanager", "", "`HOST:PORT` of the JobManager's RPC server (default jobmanager.rpc.address:jobmanager.rpc.port)")
	slots := fs.Int("slots", 1, "number of task slots")
	f := &Flags{}
	fs.Var(&defineFlag{settings: &f.settings}, "D", "set a configuration option, `key=value` (repeatable)")
	fs.StringVar(&f.configFile, "config", "", "YAML configuration `file`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	env, err := f.Environment()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s taskmanager: %v\n", os.Args[0], err)
		return 2
	}
	opts := cluster.TaskManagerOptionsFrom(env.cfg)
	opts.Slots = *slots
	if *jobManager != "" {
		opts.JobManagerAddress = *jobManager
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tm, err := cluster.NewTaskManager(opts)
	if err == nil {
		err = tm.Run(ctx)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s taskmanager: %v\n", os.Args[0], err)
		return 1
	}
	return 0
}

// runAsApplication runs the job on a JobManager started for it, in this
// process, and returns when the job ended.
func (env *Environment) runAsApplication(ctx context.Context, jg *graph.JobGraph) error {
	var plan bytes.Buffer
	if err := jg.WriteJSON(&plan); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("application mode: %w", err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		return fmt.Errorf("application mode: read the job's executable: %w", err)
	}
	sum := sha256.Sum256(data)
	opts := cluster.JobManagerOptionsFrom(env.cfg)
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	jm, err := cluster.StartJobManager(opts)
	if err != nil {
		return fmt.Errorf("jobmanager: %w", err)
	}
	defer jm.Close()
	fmt.Fprintf(env.out, "jobmanager rpc=%s rest=%s\n", jm.RPCAddr(), jm.RESTURL())
	client, err := cluster.NewRESTClient(jm.RESTURL(), cluster.SecurityFrom(env.cfg))
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.UploadArtifact(ctx, bytes.NewReader(data), hex.EncodeToString(sum[:])); err != nil {
		return err
	}
	id, err := client.SubmitJob(ctx, cluster.JobSubmission{Artifact: hex.EncodeToString(sum[:]), Args: env.appJobArgs,
		SavepointPath: env.restorePath, AllowNonRestoredState: env.allowNonRestored, Plan: plan.Bytes()})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.out, "job %s submitted; waiting for TaskManagers (%s taskmanager --jobmanager %s --slots N)\n", id, os.Args[0], jm.RPCAddr())
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		job, err := client.Job(ctx, id)
		if err != nil {
			return err
		}
		switch job.State {
		case cluster.JobFinished:
			fmt.Fprintf(env.out, "job %s finished\n", id)
			return nil
		case cluster.JobFailed, cluster.JobCanceled:
			msg := job.Error
			if msg == "" {
				msg = "no error reported"
			}
			return fmt.Errorf("job %s %s: %s", id, job.State, msg)
		}
	}
}
