// Package stream is weir's DataStream API: a job is an ordinary Go program
// that creates an Environment, builds a dataflow of typed streams with
// sources, transformations and sinks, and calls Execute.
//
// Go methods cannot have type parameters, so transformations that change
// the record type are functions (Map, FlatMap, KeyBy, Process), while
// type-preserving ones and operator settings are methods (Filter, Name,
// UID, SetParallelism).
package stream

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
)

// Environment collects a job's dataflow and configuration and executes it.
// The program that builds the dataflow must be deterministic up to Execute:
// a worker process re-runs it to rebuild the identical graph.
type Environment struct {
	cfg    *config.Configuration
	graph  *graph.StreamGraph
	errs   []error
	plan   string // "", "text" or "json"
	out    io.Writer
	logger *slog.Logger
	clock  runtime.Clock

	restorePath string
	// distribution runs only this process's share of a job spread over
	// several workers (worker mode, and tests).
	distribution *runtime.Distribution
	// In worker mode: the JobManager, which confirms every checkpoint,
	// and the cluster's attempt number of the job.
	authority    runtime.CommitAuthority
	firstAttempt int
	// clusterRestarts: a cluster's worker, whose JobManager restarts
	// failed attempts.
	clusterRestarts bool
	// storageKey names the job's checkpoint directory: the cluster's
	// JobID and attempt.
	storageKey       string
	allowNonRestored bool
	// appJobArgs, in application mode ("myjob jobmanager ..."), are the
	// job's flags, which the TaskManager's worker gets too.
	appJobArgs []string
	// iterations counts the iterations built, which names them.
	iterations int
}

// RestoreFrom makes the next Execute start from a retained checkpoint (a
// chk-<n> directory or its _metadata file), matching state to operators by
// UID; allowNonRestored accepts state that no operator claims.
func (env *Environment) RestoreFrom(path string, allowNonRestored bool) *Environment {
	env.restorePath, env.allowNonRestored = path, allowNonRestored
	return env
}

// Flags are the standard flags every job program accepts.
type Flags struct {
	// settings holds -D definitions and the flags that are shorthands for
	// an option, in command-line order, so that of two that set one key
	// the later wins.
	settings     []setting
	configFile   string
	plan         planFlag
	fromSnapshot string
	allowMissing bool
}

// setting is one -D key=value (def, with key empty: it is parsed in
// Environment, so that its errors say "-D") or one option flag (key and
// value, validated when the flag was parsed).
type setting struct {
	source     string
	def        string
	key, value string
}

// RegisterFlags adds the standard job flags to fs: --parallelism (-p),
// -D key=value (repeatable), --config FILE, --plan[=json],
// --from-savepoint PATH, --allow-non-restored-state, and the shorthands
// --checkpoint-interval, --checkpoint-dir, --checkpoint-mode and
// --state-backend.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	const pUsage = "default parallelism of the job's operators, `N` (parallelism.default; 0 = CPU cores)"
	parallelism := func(name string) *optionFlag {
		return &optionFlag{settings: &f.settings, name: name, key: config.Parallelism.Key, parse: parseParallelism}
	}
	fs.Var(parallelism("--parallelism"), "parallelism", pUsage)
	fs.Var(parallelism("--parallelism"), "p", pUsage+" (shorthand)")
	fs.Var(&defineFlag{settings: &f.settings}, "D", "set a configuration option, `key=value` (repeatable; overrides --config; of -D and option flags that set one key, the last wins)")
	fs.StringVar(&f.configFile, "config", "", "YAML configuration `file` with Flink-style keys")
	fs.Var(&f.plan, "plan", "print the job graph instead of running the job (--plan or --plan=json)")
	fs.StringVar(&f.fromSnapshot, "from-savepoint", "", "start from a retained checkpoint: its chk-<n> `directory` or _metadata file")
	fs.BoolVar(&f.allowMissing, "allow-non-restored-state", false, "start from a checkpoint even if some of its state belongs to no operator of the job")
	fs.Var(&optionFlag{settings: &f.settings, name: "--checkpoint-interval", key: config.CheckpointInterval.Key, parse: parseInterval},
		"checkpoint-interval", "take a checkpoint every `duration`, e.g. 200ms or 10s; 0 disables checkpoints (execution.checkpointing.interval)")
	fs.Var(&optionFlag{settings: &f.settings, name: "--checkpoint-dir", key: config.CheckpointsDir.Key, parse: parseCheckpointDir},
		"checkpoint-dir", "write completed checkpoints under `path` or file:// URI, as <dir>/<job-id>/chk-<n> (state.checkpoints.dir)")
	fs.Var(&optionFlag{settings: &f.settings, name: "--checkpoint-mode", key: config.CheckpointMode.Key, parse: enumParser(config.CheckpointMode.Key)},
		"checkpoint-mode", "checkpoint guarantee, `mode` exactly-once or at-least-once (execution.checkpointing.mode)")
	fs.Var(&optionFlag{settings: &f.settings, name: "--state-backend", key: config.StateBackend.Key, parse: enumParser(config.StateBackend.Key)},
		"state-backend", "where keyed state lives, `type` hashmap or pebble (state.backend.type)")
	return f
}

// Environment creates the environment the parsed flags describe: the
// configuration file, then -D and the option flags (--parallelism,
// --checkpoint-interval, ...) in command-line order, so that the last one
// to set a key wins.
func (f *Flags) Environment() (*Environment, error) {
	cfg := config.New()
	if f.configFile != "" {
		fileCfg, err := config.LoadFile(f.configFile)
		if err != nil {
			return nil, err
		}
		cfg = fileCfg
	}
	for _, s := range f.settings {
		key, value := s.key, s.value
		if s.key == "" {
			var err error
			if key, value, err = config.ParseDefinition(s.def); err != nil {
				return nil, err
			}
		}
		if err := cfg.SetFrom(s.source, key, value); err != nil {
			return nil, err
		}
	}
	env := NewEnvironmentWithConfig(cfg)
	env.plan = string(f.plan)
	env.restorePath, env.allowNonRestored = f.fromSnapshot, f.allowMissing
	return env, nil
}

// NewEnvironment registers the standard job flags on the command line's
// flag set, parses os.Args, and returns the environment they describe.
// Define the program's own flags (with the flag package) before calling
// it, and do not call flag.Parse yourself. Bad flags or configuration
// print an error naming them and exit with status 2.
//
// In application mode the program's first argument is a role: "myjob
// taskmanager ..." runs a TaskManager and exits without returning;
// "myjob jobmanager [job flags]" returns an environment whose Execute
// starts a JobManager and runs the job on the cluster's TaskManagers.
func NewEnvironment() *Environment {
	role, args := appArgs()
	if role == "taskmanager" {
		os.Exit(runAppTaskManager(args))
	}
	f := RegisterFlags(flag.CommandLine)
	if err := flag.CommandLine.Parse(args); err != nil {
		os.Exit(2) // flag printed the error and the usage
	}
	env, err := f.Environment()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[0], err)
		os.Exit(2)
	}
	if role == "jobmanager" {
		env.appJobArgs = args
	}
	return env
}

// NewEnvironmentWithConfig returns an environment with the given
// configuration (nil means defaults); tests and embedding programs use it.
func NewEnvironmentWithConfig(cfg *config.Configuration) *Environment {
	if cfg == nil {
		cfg = config.New()
	}
	return &Environment{cfg: cfg, graph: &graph.StreamGraph{}, out: os.Stdout}
}

// Config returns the job's configuration; changes apply to later calls of
// Execute.
func (env *Environment) Config() *config.Configuration { return env.cfg }

// SetParallelism sets the default parallelism of the job's operators.
func (env *Environment) SetParallelism(n int) *Environment {
	if n < 1 {
		env.fail(fmt.Errorf("stream: parallelism %d must be at least 1", n))
		return env
	}
	config.Parallelism.Set(env.cfg, n)
	return env
}

// Parallelism returns the default parallelism: parallelism.default, or the
// number of CPU cores when it is 0.
func (env *Environment) Parallelism() int {
	if p := config.Parallelism.Get(env.cfg); p > 0 {
		return p
	}
	return goruntime.NumCPU()
}

// RuntimeMode selects streaming or batch execution.
type RuntimeMode string

const (
	// Streaming emits results continuously (the default).
	Streaming RuntimeMode = "STREAMING"
	// Batch requires bounded sources; keyed aggregations emit only their
	// final result per key.
	Batch RuntimeMode = "BATCH"
	// Automatic is Batch when every source is bounded, Streaming otherwise.
	Automatic RuntimeMode = "AUTOMATIC"
)

// SetRuntimeMode sets execution.runtime-mode unless the configuration
// (file or -D) already did.
func (env *Environment) SetRuntimeMode(m RuntimeMode) *Environment {
	if !env.cfg.IsSet(config.RuntimeMode.Key) {
		if err := env.cfg.Set(config.RuntimeMode.Key, string(m)); err != nil {
			env.fail(err)
		}
	}
	return env
}

// SetLogger sets the logger of the job's runtime (default: discard).
func (env *Environment) SetLogger(l *slog.Logger) *Environment {
	env.logger = l
	return env
}

// SetClock replaces the processing-time clock of every task, for tests
// (runtime.NewManualClock).
func (env *Environment) SetClock(c runtime.Clock) *Environment {
	env.clock = c
	return env
}

// SetOutput redirects what Print sinks and --plan write (default stdout).
func (env *Environment) SetOutput(w io.Writer) *Environment {
	env.out = w
	return env
}

// Fail records a mistake in building the dataflow, for packages that
// build on stream (window, connectors); Execute and --plan report all of
// them before anything runs.
func (env *Environment) Fail(err error) { env.errs = append(env.errs, err) }

func (env *Environment) fail(err error) { env.Fail(err) }

// JobGraph builds the job graph of the dataflow defined so far.
func (env *Environment) JobGraph(jobName string) (*graph.JobGraph, error) {
	if len(env.errs) > 0 {
		return nil, errors.Join(env.errs...)
	}
	if name := config.PipelineName.Get(env.cfg); name != "" {
		jobName = name
	}
	env.graph.JobName = jobName
	if err := env.checkIterations(); err != nil {
		return nil, err
	}
	if config.RuntimeMode.Get(env.cfg) == string(Batch) {
		for _, n := range env.graph.Nodes {
			if n.Kind == "source" && !n.Bounded {
				return nil, fmt.Errorf("stream: source %q is unbounded, but execution.runtime-mode is BATCH", n.Name)
			}
		}
	}
	jg, err := graph.BuildJobGraph(env.graph, graph.BuildOptions{
		DefaultParallelism:    env.Parallelism(),
		DefaultMaxParallelism: config.MaxParallelism.Get(env.cfg),
		ChainingEnabled:       config.OperatorChaining.Get(env.cfg),
	})
	if err != nil {
		return nil, err
	}
	jg.Staged = runtime.RunsInStages(env.cfg, env.graph)
	jg.Configuration = shippedConfiguration(env.cfg)
	if err := checkCodecs(jg); err != nil {
		return nil, err
	}
	return jg, nil
}

// shippedConfiguration is the configuration that travels with the job
// graph to a cluster's JobManager: all of it but the security.* keys
// (tokens, key files), which a JobManager shows to whoever reads its REST
// API and which the job's workers get from their TaskManager instead.
func shippedConfiguration(cfg *config.Configuration) map[string]string {
	m := cfg.Map()
	for k := range m {
		if strings.HasPrefix(k, "security.") {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// checkCodecs fails a job whose records cross a task boundary without a
// codec: the exchange may cross processes, so every such type needs one.
func checkCodecs(jg *graph.JobGraph) error {
	for _, e := range jg.Edges {
		if c, ok := e.StreamEdge.Type.(interface{ codecErr() error }); ok {
			if err := c.codecErr(); err != nil {
				src, dst := jg.Stream.Node(e.SourceNode), jg.Stream.Node(e.TargetNode)
				return fmt.Errorf("stream: records from %s to %s cross a task boundary but have no codec: %w; set one with Codec",
					src.DisplayName(), dst.DisplayName(), err)
			}
		}
	}
	return nil
}

// Execute runs the job on the local mini cluster and returns when it ends:
// when its bounded sources are exhausted, it fails, or ctx is cancelled.
// With --plan it prints the job graph instead.
func (env *Environment) Execute(ctx context.Context, jobName string) error {
	jg, err := env.JobGraph(jobName)
	if err != nil {
		return err
	}
	switch env.plan {
	case "text":
		return jg.WriteText(env.out)
	case "json":
		return jg.WriteJSON(env.out)
	}
	if env.appJobArgs != nil {
		return env.runAsApplication(ctx, jg)
	}
	w, err := newWorker(jg)
	if err != nil {
		return err
	}
	if err := w.prepare(ctx, env); err != nil {
		return err
	}
	defer w.close()
	job, err := env.submit(ctx, jg)
	if err != nil {
		return err
	}
	jc := &JobClient{job: job, Graph: jg}
	w.start(jc)
	return w.wait(jc)
}

// ExecuteAsync starts the job and returns a handle to watch or cancel it.
func (env *Environment) ExecuteAsync(ctx context.Context, jobName string) (*JobClient, error) {
	jg, err := env.JobGraph(jobName)
	if err != nil {
		return nil, err
	}
	w, err := newWorker(jg)
	if err != nil {
		return nil, err
	}
	if err := w.prepare(ctx, env); err != nil {
		return nil, err
	}
	job, err := env.submit(ctx, jg)
	if err != nil {
		w.close()
		return nil, err
	}
	jc := &JobClient{job: job, Graph: jg, worker: w}
	w.start(jc)
	if w != nil && w.net != nil {
		go func() {
			// Owned by the job: ends with it.
			<-job.Done()
			w.close()
		}()
	}
	return jc, nil
}

func (env *Environment) submit(ctx context.Context, jg *graph.JobGraph) (*runtime.Job, error) {
	mc := &runtime.MiniCluster{Config: env.cfg, Logger: env.logger, Clock: env.clock, Distribution: env.distribution,
		Authority: env.authority, FirstAttempt: env.firstAttempt, JobID: env.storageKey, ClusterRestarts: env.clusterRestarts}
	if dir := config.CheckpointsDir.Get(env.cfg); mc.JobID == "" && dir != "" {
		// A local run names its checkpoint directory after a JobID of its
		// own, which the user needs to find them (and to resume).
		mc.JobID = string(graph.NewAttemptID())
		fmt.Fprintf(os.Stderr, "weir: job %q runs as JobID %s; its checkpoints go to %s/%s/\n", jg.JobName, mc.JobID, strings.TrimSuffix(dir, "/"), mc.JobID)
	}
	if env.restorePath != "" {
		cp, err := runtime.LoadCheckpoint(env.restorePath)
		if err != nil {
			return nil, err
		}
		if err := runtime.CheckRestore(cp, jg, env.allowNonRestored); err != nil {
			return nil, err
		}
		mc.Restore = cp
	}
	return mc.Submit(ctx, jg)
}

// JobClient is a handle on a running job.
type JobClient struct {
	Graph *graph.JobGraph
	job   *runtime.Job
	// worker, in worker mode, reports on the job; Wait waits for its
	// final status too, so that a program that exits after Wait (weir
	// sql's INSERT) leaves the TaskManager the job's outcome.
	worker *worker
}

// Wait blocks until the job ends and returns its error.
func (c *JobClient) Wait() error {
	err := c.job.Wait()
	if c.worker != nil {
		<-c.worker.done
	}
	return err
}

// Done is closed when the job has ended and its goroutines have returned.
func (c *JobClient) Done() <-chan struct{} { return c.job.Done() }

// Cancel stops the job.
func (c *JobClient) Cancel() { c.job.Cancel() }

// Metrics returns a snapshot of every subtask's counters.
func (c *JobClient) Metrics() []runtime.TaskMetrics { return c.job.Metrics() }

// ExecutionGraph returns the job's execution graph (attempts, states, slots).
func (c *JobClient) ExecutionGraph() *graph.ExecutionGraph { return c.job.Graph }

// TriggerSavepoint takes a savepoint into a new directory under dir and
// returns its path; the job keeps running. A savepoint is
// self-contained: it may be moved before a job resumes from it
// (RestoreFrom, --from-savepoint).
func (c *JobClient) TriggerSavepoint(ctx context.Context, dir string) (string, error) {
	return c.job.TriggerSavepoint(ctx, dir, false, false)
}

// StopWithSavepoint takes a savepoint and ends the job (Wait returns nil).
// With drain, the sources first emit the maximum watermark, so that every
// event-time window and timer fires before the savepoint; use it when the
// job will not be resumed.
func (c *JobClient) StopWithSavepoint(ctx context.Context, dir string, drain bool) (string, error) {
	return c.job.TriggerSavepoint(ctx, dir, true, drain)
}

// Restarts returns how many times the job restarted after failures.
func (c *JobClient) Restarts() int { return c.job.Restarts() }

// CompletedCheckpoints returns how many checkpoints completed.
func (c *JobClient) CompletedCheckpoints() int { return c.job.CompletedCheckpoints() }

// Slots returns the task slots the job runs in.
func (c *JobClient) Slots() []*runtime.Slot { return c.job.Slots }

// OperatorError is the error of a job that failed in an operator; it names
// the operator and the subtask.
type OperatorError = runtime.OperatorError

// PanicError is the cause of an OperatorError raised by a panic.
type PanicError = runtime.PanicError

// defineFlag is -D: it appends key=value definitions to the shared,
// ordered settings of a Flags.
type defineFlag struct {
	settings *[]setting
	defs     []string
}

func (d *defineFlag) String() string {
	if d == nil {
		return ""
	}
	return strings.Join(d.defs, ",")
}

func (d *defineFlag) Set(s string) error {
	d.defs = append(d.defs, s)
	*d.settings = append(*d.settings, setting{source: "-D", def: s})
	return nil
}

// optionFlag is a flag that stands for one configuration option: setting
// it is the same as -D key=value at the same place on the command line.
// parse validates the flag's value when it is parsed, so that a bad value
// is reported with the flag's name and the values it accepts, and returns
// the option's value.
type optionFlag struct {
	settings *[]setting
	name     string
	key      string
	parse    func(string) (string, error)
	value    string
}

func (o *optionFlag) String() string {
	if o == nil {
		return ""
	}
	return o.value
}

func (o *optionFlag) Set(s string) error {
	v, err := o.parse(s)
	if err != nil {
		return err
	}
	o.value = s
	*o.settings = append(*o.settings, setting{source: o.name, key: o.key, value: v})
	return nil
}

func parseParallelism(s string) (string, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return "", errors.New("want a number of subtasks >= 1, or 0 for the number of CPU cores")
	}
	return strconv.Itoa(n), nil
}

// parseInterval accepts what execution.checkpointing.interval accepts:
// Go durations (200ms, 1m30s) and Flink's ("200 ms", "10 s", a bare
// number of milliseconds).
func parseInterval(s string) (string, error) {
	if err := config.New().Set(config.CheckpointInterval.Key, s); err != nil {
		return "", errors.New("want a duration >= 0 such as 200ms, 10s or 1m (0 disables checkpoints)")
	}
	return s, nil
}

// parseCheckpointDir leaves the choice of supported URI schemes to the
// checkpoint storage, which reports an unsupported one when the job
// starts; here it only rejects what cannot be a location at all.
func parseCheckpointDir(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", errors.New("want a directory path or a file:// URI")
	}
	if strings.Contains(s, "://") {
		if _, err := url.Parse(s); err != nil {
			return "", fmt.Errorf("want a directory path or a file:// URI: %w", err)
		}
	}
	return s, nil
}

// enumParser accepts the values of the catalog's Enum option key in flag
// spelling (lower case, "-" for "_": exactly-once for EXACTLY_ONCE) or in
// the option's own, case-insensitively, and returns the option's
// spelling. The values come from the catalog so that a value added there
// is accepted here too.
func enumParser(key string) func(string) (string, error) {
	var values []string
	for _, o := range config.Options() {
		if o.Key == key {
			values = o.Values
		}
	}
	if len(values) == 0 {
		panic(fmt.Sprintf("stream: %q is not an Enum option of the catalog", key))
	}
	spell := func(v string) string { return strings.ReplaceAll(strings.ToLower(v), "_", "-") }
	accepted := make([]string, len(values))
	for i, v := range values {
		accepted[i] = spell(v)
	}
	want := "want " + strings.Join(accepted, " or ")
	if len(accepted) > 2 {
		want = "want one of " + strings.Join(accepted, ", ")
	}
	return func(s string) (string, error) {
		in := spell(strings.TrimSpace(s))
		for i, v := range accepted {
			if in == v {
				return values[i], nil
			}
		}
		return "", errors.New(want)
	}
}

// planFlag is a flag that may stand alone (--plan, text) or take a value
// (--plan=json).
type planFlag string

func (p *planFlag) String() string   { return string(*p) }
func (p *planFlag) IsBoolFlag() bool { return true }
func (p *planFlag) Set(s string) error {
	switch strings.ToLower(s) {
	case "true", "text":
		*p = "text"
	case "json":
		*p = "json"
	case "false":
		*p = ""
	default:
		return fmt.Errorf("want --plan or --plan=json, not --plan=%s", s)
	}
	return nil
}
