package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/table"
)

// weir sql --jobmanager: INSERT INTO jobs go to a cluster, as Flink's SQL
// client submits to a remote cluster. The client plans the statement here,
// uploads this very executable as the job's artifact and submits it with
// the arguments that make a TaskManager run "weir sql" in worker mode:
// --job-catalog (the session's catalog, inline) and --job-script (SET
// statements of the session's SQL settings and the one INSERT INTO or
// EXECUTE STATEMENT SET). Nothing the worker needs is a path on the
// client's machine. The worker plans the same statement into the same job
// graph (the cluster checks its fingerprint) and runs it.

// maxWorkerArg keeps an argument under Linux's limit on one argument of a
// command line (MAX_ARG_STRLEN, 128 KiB).
const maxWorkerArg = 120 << 10

type sqlSubmitter struct {
	client *cluster.RESTClient
	addr   string
	o      *sqlOptions
	// cat is the session's catalog, set once the session exists.
	cat *catalog.Catalog
	// parallelism is the cluster's parallelism.default, the session's
	// default parallelism unless -p gives one.
	parallelism int
	stderr      io.Writer

	mu       sync.Mutex
	artifact string // SHA-256 of the uploaded executable
}

// newSQLSubmitter connects to the JobManager at o.jobManager and checks
// that it answers, so that a wrong address fails at once.
func newSQLSubmitter(cmd *cobra.Command, o *sqlOptions) (*sqlSubmitter, error) {
	client, _, err := restClient(cmd, &o.clusterFlags, o.jobManager)
	if err != nil {
		return nil, fmt.Errorf("--jobmanager %s: %w", o.jobManager, err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	if _, err := client.Overview(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("cannot reach the JobManager at %s: %w", o.jobManager, err)
	}
	// A job runs at the cluster's default parallelism, as Flink's SQL
	// client submits it: the client's CPU count says nothing about the
	// cluster.
	cfg, err := client.JobManagerConfig(ctx)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("reading the cluster's default parallelism from the JobManager at %s: %w", o.jobManager, err)
	}
	p := 1
	if v := cfg[config.Parallelism.Key]; v != "" {
		if p, err = strconv.Atoi(v); err != nil || p < 1 {
			client.Close()
			return nil, fmt.Errorf("the JobManager at %s has %s = %q", o.jobManager, config.Parallelism.Key, v)
		}
	}
	return &sqlSubmitter{client: client, addr: o.jobManager, o: o, parallelism: p, stderr: cmd.ErrOrStderr()}, nil
}

func (s *sqlSubmitter) Close() { s.client.Close() }

// upload sends the executable once per session.
func (s *sqlSubmitter) upload(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.artifact != "" {
		return s.artifact, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the weir executable: %w", err)
	}
	sum, err := uploadExecutable(ctx, s.client, exe)
	if err != nil {
		return "", fmt.Errorf("uploading the weir executable to the JobManager at %s: %w", s.addr, err)
	}
	s.artifact = sum
	return sum, nil
}

// workerSettings splits the session's settings: keys of the runtime's
// configuration go to the job as options (-D, which the JobManager reads
// too, for the restart strategy); the SQL layer's own keys go into the
// worker's script as SET statements. The savepoint to start from goes as
// the submission's, which the cluster replaces by the latest checkpoint
// when it restarts the job; table.dml-sync and the client's own keys stay
// here (the worker always waits for its job).
func workerSettings(settings map[string]string) (options []string, sets string, restore string, allowNonRestored bool) {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		switch {
		case k == "execution.savepoint.path":
			restore = v
		case k == "execution.savepoint.ignore-unclaimed-state":
			allowNonRestored = strings.EqualFold(v, "true")
		case k == "table.dml-sync", strings.HasPrefix(k, "sql-client."):
		case config.New().Set(k, v) == nil:
			options = append(options, k+"="+v)
		default:
			fmt.Fprintf(&b, "SET %s = %s;\n", sqlString(k), sqlString(v))
		}
	}
	return options, b.String(), restore, allowNonRestored
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// submit is the session's table.JobSubmitter.
func (s *sqlSubmitter) submit(ctx context.Context, sub table.JobSubmission) (string, error) {
	jg, err := sub.Env.JobGraph(sub.JobName)
	if err != nil {
		return "", err
	}
	var plan bytes.Buffer
	if err := jg.WriteJSON(&plan); err != nil {
		return "", err
	}
	cat, err := s.cat.Snapshot()
	if err != nil {
		return "", err
	}
	var jp cluster.JobPlan
	if err := json.Unmarshal(plan.Bytes(), &jp); err != nil {
		return "", err
	}
	options, sets, restore, allowNonRestored := workerSettings(sub.Settings)
	if _, set := sub.Settings[config.Parallelism.Key]; !set && s.o.parallelism == 0 {
		// The worker plans at the parallelism the client planned at: the
		// cluster's default, which is no setting of the session's.
		options = append([]string{config.Parallelism.Key + "=" + strconv.Itoa(s.parallelism)}, options...)
	}
	script := sets + sub.Statement + ";\n"
	if len(cat) > maxWorkerArg || len(script) > maxWorkerArg {
		return "", fmt.Errorf("the catalog (%d bytes) or the statement (%d bytes) is too large to pass to the worker on its command line (at most %d bytes each)",
			len(cat), len(script), maxWorkerArg)
	}
	sum, err := s.upload(ctx)
	if err != nil {
		return "", err
	}
	id, err := s.client.SubmitJob(ctx, cluster.JobSubmission{
		Artifact:              sum,
		Args:                  []string{"sql", "--job-catalog", string(cat), "--job-script", script},
		Parallelism:           s.o.parallelism,
		Plan:                  plan.Bytes(),
		Options:               options,
		SavepointPath:         restore,
		AllowNonRestoredState: allowNonRestored,
	})
	if err != nil {
		return "", fmt.Errorf("submitting to the JobManager at %s: %w", s.addr, err)
	}
	warnFewSlots(ctx, s.client, &jp, restore, s.stderr, "weir sql", "-p %[1]d or SET 'parallelism.default' = '%[1]d'")
	if strings.EqualFold(sub.Settings["table.dml-sync"], "true") {
		if err := s.wait(ctx, id); err != nil {
			return id, err
		}
	}
	return id, nil
}

// wait polls the job until it ends, riding out a short outage of the
// JobManager.
func (s *sqlSubmitter) wait(ctx context.Context, id string) error {
	var failingSince time.Time
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		d, err := s.client.Job(rctx, id)
		cancel()
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("stopped waiting for job %s, which keeps running on the cluster: %w", id, ctx.Err())
		case err != nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) > 15*time.Second {
				return fmt.Errorf("lost track of job %s at the JobManager %s: %w", id, s.addr, err)
			}
		default:
			failingSince = time.Time{}
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
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printRemoteJob prints what Flink's client prints for a statement
// submitted to a cluster.
func printRemoteJob(out io.Writer, id string) {
	fmt.Fprintln(out, "[INFO] Submitting SQL update statement to the cluster...")
	fmt.Fprintf(out, "[INFO] SQL update statement has been successfully submitted to the cluster:\nJob ID: %s\n", id)
}
