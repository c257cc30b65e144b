package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
)

// jobManagerFlag adds --jobmanager to a command that talks to the REST API.
func jobManagerFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "jobmanager", "", "`HOST:PORT` of the JobManager's REST API (default rest.address:rest.port)")
}

// restClient returns a client of the REST API that the flags name.
func restClient(cmd *cobra.Command, flags *clusterFlags, addr string) (*cluster.RESTClient, *config.Configuration, error) {
	cfg, err := flags.load(cmd)
	if err != nil {
		return nil, nil, err
	}
	c, err := newRESTClient(cmd, cfg, addr)
	return c, cfg, err
}

type runOptions struct {
	detached         bool
	parallelism      int
	savepoint        string
	allowNonRestored bool
	jobManager       string
	poll             time.Duration
	flags            clusterFlags
}

func newRunCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] PROGRAM [ARGS...]",
		Short: "Submit a job program to a weir cluster",
		Long: `Submit a job program to the cluster whose JobManager's REST API is at
--jobmanager, and (unless -d) follow it until it ends.

PROGRAM is a Go main package (a directory, built with "go build" in it, or
an import path, built in the current directory) or an executable. weir runs
it with --plan=json to get its job graph and the slots it needs, uploads the
executable to the JobManager (content-addressed by SHA-256), and submits
the job with ARGS. A TaskManager with enough free slots fetches the
executable and runs it as a worker with ARGS: paths in ARGS (inputs,
outputs, checkpoint directories) are opened there, so give absolute paths
that every TaskManager can reach.

Attached, weir prints the job's state, records per vertex and completed
checkpoints as they change, and exits with status 0 when the job finishes,
1 when it fails or is cancelled. Ctrl-C detaches; the job keeps running.
-D options go to the job (as -D) and configure its restarts on the cluster
(restart-strategy.*) and slot.request.timeout; see docs/cluster.md.`,
		Example: `  weir run -p 3 ./examples/wordcount --input /data/words.txt --output /data/counts
  weir run -d ./bin/wordcount --mode streaming --checkpoint-dir file:///shared/chk ...
  weir run -s /shared/savepoints/savepoint-1a2b ./bin/wordcount --mode streaming ...`,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "run needs a PROGRAM: a Go main package (directory or import path) or an executable file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("parallelism") && o.parallelism < 1 {
				return usageErrorf(cmd, "--parallelism %d must be at least 1", o.parallelism)
			}
			return o.run(cmd, args[0], args[1:])
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after PROGRAM belong to the program
	f.BoolVarP(&o.detached, "detached", "d", false, "submit the job, print its ID and return")
	f.IntVarP(&o.parallelism, "parallelism", "p", 0, "default parallelism of the job's operators (passed as -p)")
	f.StringVarP(&o.savepoint, "fromSavepoint", "s", "", "start the job from a savepoint or retained checkpoint at `PATH`")
	f.BoolVarP(&o.allowNonRestored, "allowNonRestoredState", "n", false, "start from the savepoint even if some of its state belongs to no operator")
	f.DurationVar(&o.poll, "poll", 500*time.Millisecond, "how often to fetch the job's progress when attached")
	jobManagerFlag(cmd, &o.jobManager)
	o.flags.register(cmd)
	return cmd
}

func (o *runOptions) run(cmd *cobra.Command, prog string, args []string) error {
	client, _, err := restClient(cmd, &o.flags, o.jobManager)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()

	exe, cleanup, err := buildProgram(ctx, prog)
	if err != nil {
		return err
	}
	defer cleanup()

	// Without -p, a job runs at the cluster's default parallelism (the
	// JobManager's parallelism.default), not at the client's CPU count;
	// the job's own -D and ARGS still override it, since they come later.
	options := jobDefines(o.flags.defines)
	if o.parallelism == 0 {
		cfg, err := client.JobManagerConfig(ctx)
		if err != nil {
			return fmt.Errorf("reading the cluster's default parallelism: %w", err)
		}
		if p := cfg[config.Parallelism.Key]; p != "" {
			options = append([]string{config.Parallelism.Key + "=" + p}, options...)
		}
	}
	planArgs := []string{"--plan=json"}
	if o.parallelism > 0 {
		planArgs = append(planArgs, "-p", strconv.Itoa(o.parallelism))
	}
	for _, d := range options {
		planArgs = append(planArgs, "-D", d)
	}
	var planOut, planErr bytes.Buffer
	pc := exec.CommandContext(ctx, exe, append(planArgs, args...)...)
	pc.Stdout, pc.Stderr = &planOut, &planErr
	pc.WaitDelay = time.Second
	if err := pc.Run(); err != nil {
		return fmt.Errorf("%s --plan=json failed (%v): %s", prog, err, strings.TrimSpace(planErr.String()))
	}
	var plan cluster.JobPlan
	if err := json.Unmarshal(planOut.Bytes(), &plan); err != nil || len(plan.Vertices) == 0 {
		return fmt.Errorf("%s --plan=json printed no job graph (is it a weir job program?): %v", prog, err)
	}

	sum, err := uploadExecutable(ctx, client, exe)
	if err != nil {
		return err
	}
	sub := cluster.JobSubmission{
		Artifact:              sum,
		Args:                  args,
		Parallelism:           o.parallelism,
		SavepointPath:         absLocal(o.savepoint),
		AllowNonRestoredState: o.allowNonRestored,
		Options:               options,
		Plan:                  planOut.Bytes(),
	}
	id, err := client.SubmitJob(ctx, sub)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Job has been submitted with JobID %s (%q, %d slots)\n", id, plan.JobName, plan.SlotsNeeded())
	warnFewSlots(ctx, client, &plan, sub.SavepointPath, stderr, "weir run", "-p %[1]d")
	if o.detached {
		return nil
	}
	return followJob(ctx, client, id, o.poll, stdout, stderr)
}

// warnFewSlots says at once when the whole cluster has fewer slots than
// the job needs: the job waits up to slot.request.timeout for
// TaskManagers to join, which is not what a user who forgot -p wants to
// find out five minutes later. who names the command ("weir run"), and
// lower how to ask for a lower parallelism, a format whose %[1]d is the
// one that fits ("-p %[1]d"). A job that runs in stages (batch) runs in
// the slots there are, and needs no warning, unless it restores a
// savepoint (restore), which it does pipelined.
func warnFewSlots(ctx context.Context, client *cluster.RESTClient, plan *cluster.JobPlan, restore string, w io.Writer, who, lower string) {
	needed := plan.SlotsNeeded()
	if plan.Staged && restore == "" {
		return
	}
	ov, err := client.Overview(ctx)
	if err != nil || ov.SlotsTotal >= needed {
		return
	}
	wait := "slot.request.timeout"
	if cfg, err := client.JobManagerConfig(ctx); err == nil && cfg[config.SlotRequestTimeout.Key] != "" {
		wait += " (" + cfg[config.SlotRequestTimeout.Key] + ")"
	}
	fmt.Fprintf(w, "%s: the job needs %d slots, but the cluster has %d (%d free, %d TaskManagers); it waits up to %s for more, then fails. "+
		"Give a lower parallelism (%s), start more TaskManagers (weir taskmanager), or give them more slots (--slots).\n",
		who, needed, ov.SlotsTotal, ov.SlotsAvailable, ov.TaskManagers, wait, fmt.Sprintf(lower, max(1, ov.SlotsTotal)))
}

// jobDefines returns the -D options that go to the job: all but the
// security.* ones, which configure this client's connection to the
// cluster. A token among them would otherwise appear on the command lines
// of the job's processes, which every local user can read.
func jobDefines(defines []string) []string {
	var out []string
	for _, d := range defines {
		if k, _, err := config.ParseDefinition(d); err == nil && strings.HasPrefix(k, "security.") {
			continue
		}
		out = append(out, d)
	}
	return out
}

// followJob prints a job's progress until it ends.
func followJob(ctx context.Context, client *cluster.RESTClient, id string, poll time.Duration, stdout, stderr io.Writer) error {
	var last string
	var lastPrint time.Time
	var failingSince time.Time
	view := newProgress(stdout)
	// The first looks come soon after the submission and then ever less
	// often, up to every poll: a job that ends within moments is seen
	// ending then, not a whole poll later.
	poll = max(poll, 10*time.Millisecond)
	wait := min(10*time.Millisecond, poll)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		d, err := client.Job(rctx, id)
		cancel()
		switch {
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "Detached from job %s; it keeps running (weir cancel %s stops it).\n", id, id)
			return ctx.Err()
		case err != nil:
			// Ride out a short outage of the JobManager.
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			// A change of leader takes the lease's TTL, the election and
			// the recovery of the jobs.
			outage := 15 * time.Second
			if client.FollowsLeader() {
				outage = 2 * time.Minute
			}
			if time.Since(failingSince) > outage {
				return fmt.Errorf("lost track of job %s: %w", id, err)
			}
		default:
			failingSince = time.Time{}
			key := fmt.Sprintf("%s/%d/%d/%s/%s", d.State, d.Attempt, d.Checkpoints.Completed, d.Waiting, d.TaskManager)
			every := 2 * time.Second
			if view.tty {
				every = 500 * time.Millisecond
			}
			if key != last || time.Since(lastPrint) >= every || cluster.IsTerminalJobState(d.State) {
				views, latest := view.observe(ctx, client, d)
				view.show(d, views, latest)
				last, lastPrint = key, time.Now()
			}
			switch d.State {
			case cluster.JobFinished:
				return nil
			case cluster.JobFailed:
				return fmt.Errorf("job %s failed: %s", id, d.Error)
			case cluster.JobCanceled:
				return fmt.Errorf("job %s was cancelled", id)
			}
		}
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		wait = min(2*wait, poll)
		timer.Reset(wait)
	}
}

func progressLine(d cluster.JobDetails) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", time.Now().Format("15:04:05.000"), d.State)
	if d.Attempt > 0 {
		fmt.Fprintf(&b, " attempt %d", d.Attempt)
	}
	if len(d.Workers) > 1 {
		fmt.Fprintf(&b, " on %d TaskManagers (leader %s)", len(d.Workers), d.TaskManager)
	} else if d.TaskManager != "" {
		fmt.Fprintf(&b, " on %s", d.TaskManager)
	}
	if d.Waiting != "" {
		fmt.Fprintf(&b, ", waiting: %s", d.Waiting)
	}
	fmt.Fprintf(&b, ", checkpoints %d", d.Checkpoints.Completed)
	if d.Error != "" && d.State != cluster.JobRunning {
		fmt.Fprintf(&b, "\n  error: %s", d.Error)
	}
	return b.String()
}

// buildProgram returns an executable of prog, building it if it is a
// package; cleanup removes what it built.
func buildProgram(ctx context.Context, prog string) (exe string, cleanup func(), err error) {
	exe, pkg, err := resolveProgram(prog)
	if err != nil {
		return "", nil, err
	}
	if pkg == "" {
		return exe, func() {}, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", nil, fmt.Errorf("the go command is needed to build %s: %w", prog, err)
	}
	dir, err := os.MkdirTemp("", "weir-run-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	exe = filepath.Join(dir, "job")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	c := exec.CommandContext(ctx, goTool, "build", "-o", exe)
	if fi, err := os.Stat(pkg); err == nil && fi.IsDir() {
		// Build in the package's directory, so that a program in a
		// module of its own builds with that module.
		c.Dir = pkg
		c.Args = append(c.Args, ".")
	} else {
		c.Args = append(c.Args, pkg)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.WaitDelay = time.Second
	if err := c.Run(); err != nil {
		cleanup()
		if ctx.Err() != nil {
			return "", nil, context.Cause(ctx)
		}
		return "", nil, fmt.Errorf("cannot build %s: %v\n%s", prog, err, strings.TrimSpace(out.String()))
	}
	return exe, cleanup, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// absLocal makes a local path absolute, since the TaskManager's worker
// resolves it from another directory; URIs stay as they are.
func absLocal(p string) string {
	if p == "" || strings.Contains(p, "://") {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func newCancelCommand() *cobra.Command {
	var flags clusterFlags
	var jobManager string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel [flags] JOBID",
		Short: "Cancel a job on a weir cluster",
		Long: `Cancel a job (PATCH /jobs/{id}?mode=cancel) and wait up to --wait for it to
end. Its worker gets SIGTERM, and SIGKILL 10 s later if it has not ended;
retained checkpoints stay as the job's retention setting says.`,
		Args: exactlyOneJobID,
		RunE: func(cmd *cobra.Command, args []string) error {
			client, _, err := restClient(cmd, &flags, jobManager)
			if err != nil {
				return err
			}
			defer client.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), wait+10*time.Second)
			defer cancel()
			id := args[0]
			if err := client.CancelJob(ctx, id); err != nil {
				return err
			}
			deadline := time.Now().Add(wait)
			for {
				d, err := client.Job(ctx, id)
				if err != nil {
					return err
				}
				if cluster.IsTerminalJobState(d.State) {
					if d.State == cluster.JobCanceled {
						fmt.Fprintf(cmd.OutOrStdout(), "Cancelled job %s.\n", id)
						return nil
					}
					return fmt.Errorf("job %s had already ended: %s", id, d.State)
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("job %s is still %s after %v", id, d.State, wait)
				}
				time.Sleep(100 * time.Millisecond)
			}
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the job to end")
	jobManagerFlag(cmd, &jobManager)
	flags.register(cmd)
	return cmd
}

func newSavepointCommand() *cobra.Command {
	var flags clusterFlags
	var jobManager string
	cmd := &cobra.Command{
		Use:   "savepoint [flags] JOBID DIR",
		Short: "Take a savepoint of a running job",
		Long: `Take a savepoint of a running job into a new directory under DIR (POST
/jobs/{id}/savepoints), wait for it and print its path. The job keeps
running. DIR must be reachable from the TaskManager that runs the job; a
job started from it later (weir run -s PATH) may run on another one.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf(cmd, "savepoint needs a JOBID and a target DIR")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			client, _, err := restClient(cmd, &flags, jobManager)
			if err != nil {
				return err
			}
			defer client.Close()
			id := args[0]
			tid, err := client.TriggerSavepoint(cmd.Context(), id, absLocal(args[1]))
			if err != nil {
				return err
			}
			return awaitSavepoint(cmd, client, id, tid)
		},
	}
	jobManagerFlag(cmd, &jobManager)
	flags.register(cmd)
	return cmd
}

func newStopCommand() *cobra.Command {
	var flags clusterFlags
	var jobManager, dir string
	var drain bool
	cmd := &cobra.Command{
		Use:   "stop [flags] --savepoint-path DIR JOBID",
		Short: "Stop a job with a savepoint",
		Long: `Take a savepoint of a running job into a new directory under
--savepoint-path and end the job (POST /jobs/{id}/stop); the job ends
FINISHED. With --drain the sources first emit the maximum watermark, so
that every event-time window and timer fires: use it when the job will not
be resumed.`,
		Args: exactlyOneJobID,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageErrorf(cmd, "stop needs --savepoint-path DIR")
			}
			client, _, err := restClient(cmd, &flags, jobManager)
			if err != nil {
				return err
			}
			defer client.Close()
			id := args[0]
			tid, err := client.StopJob(cmd.Context(), id, absLocal(dir), drain)
			if err != nil {
				return err
			}
			return awaitSavepoint(cmd, client, id, tid)
		},
	}
	cmd.Flags().StringVarP(&dir, "savepoint-path", "p", "", "directory under which the savepoint is written")
	cmd.Flags().BoolVarP(&drain, "drain", "d", false, "emit the maximum watermark before the savepoint")
	jobManagerFlag(cmd, &jobManager)
	flags.register(cmd)
	return cmd
}

// awaitSavepoint polls a savepoint trigger until it completes.
func awaitSavepoint(cmd *cobra.Command, client *cluster.RESTClient, id, tid string) error {
	ctx := cmd.Context()
	for {
		st, err := client.SavepointStatus(ctx, id, tid)
		if err != nil {
			return err
		}
		if st.Status.ID == "COMPLETED" && st.Operation != nil {
			if st.Operation.FailureCause != "" {
				return fmt.Errorf("savepoint of job %s failed: %s", id, st.Operation.FailureCause)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Savepoint completed. Path: %s\n", st.Operation.Location)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func exactlyOneJobID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf(cmd, "%s needs exactly one JOBID", cmd.Name())
	}
	if args[0] == "" {
		return usageErrorf(cmd, "empty JOBID")
	}
	return nil
}

// uploadExecutable uploads exe as a job's artifact and returns its
// SHA-256, by which a submission names it.
func uploadExecutable(ctx context.Context, client *cluster.RESTClient, exe string) (string, error) {
	sum, err := fileSHA256(exe)
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return sum, client.UploadArtifact(ctx, f, sum)
}
