package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/nexmark"
)

// runNexmarkOnCluster submits the query to a cluster, with this very
// executable as the job's artifact: a TaskManager runs it as
// "weir nexmark ..." in worker mode. It prints the job's throughput as the
// client saw it, from submission to the end, which includes scheduling,
// fetching the artifact and starting the worker.
func runNexmarkOnCluster(cmd *cobra.Command, o nexmarkOptions) error {
	if o.baseline || o.output != "" || o.cpuProfile != "" || o.memProfile != "" || o.pregenerate || o.runs > 1 || o.warmup > 0 {
		return usageErrorf(cmd, "--jobmanager runs the query once and alone: --baseline, --output, --cpuprofile, --memprofile, --pregenerate, --runs and --warmup work on the local mini cluster only")
	}
	q := nexmark.Queries[o.query]
	// The plan is built here exactly as the worker will build it, so
	// that its fingerprint matches.
	env, err := o.environment()
	if err != nil {
		return err
	}
	q.Attach(nexmark.Events(env, o.config(), o.events))
	jg, err := env.JobGraph("nexmark-" + q.Name)
	if err != nil {
		return err
	}
	var plan bytes.Buffer
	if err := jg.WriteJSON(&plan); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("nexmark: the weir executable: %w", err)
	}
	client, _, err := restClient(cmd, &o.clusterFlags, o.jobManager)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := cmd.Context()
	sum, err := uploadExecutable(ctx, client, exe)
	if err != nil {
		return err
	}
	args := []string{"nexmark", "--query", q.Name, "--events", strconv.FormatInt(o.events, 10),
		"--rate", strconv.FormatInt(o.rate, 10), "--seed", strconv.FormatUint(o.seed, 10),
		"--state-backend", o.backend, "--checkpoint-interval", o.checkpoint.String()}
	for _, d := range o.defines {
		args = append(args, "-D", d)
	}
	start := time.Now()
	id, err := client.SubmitJob(ctx, cluster.JobSubmission{Artifact: sum, Args: args, Parallelism: o.parallelism, Plan: plan.Bytes()})
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Job has been submitted with JobID %s\n", id)
	if err := followJob(ctx, client, id, 200*time.Millisecond, w, cmd.ErrOrStderr()); err != nil {
		return err
	}
	elapsed := time.Since(start)
	job, err := client.Job(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "query        %s: %s\n", q.Name, q.Description)
	fmt.Fprintf(w, "events       %d, parallelism %d, on TaskManager %s\n", o.events, o.parallelism, job.TaskManager)
	fmt.Fprintf(w, "elapsed      %.3f s from submission to the end (the job itself ran %.3f s)\n", elapsed.Seconds(), float64(job.Duration)/1000)
	fmt.Fprintf(w, "throughput   %s events/s (job run time)\n", rate(float64(o.events), time.Duration(job.Duration)*time.Millisecond))
	return nil
}
