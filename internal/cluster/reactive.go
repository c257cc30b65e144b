package cluster

// Reactive mode (scheduler-mode: reactive, Flink's name): a job runs at
// the parallelism the free slots allow, capped by its max parallelism.
// Before each attempt the JobManager sizes the job and, when the size
// changed, asks the job's program for its plan at the new parallelism
// (--plan=json -p N, as weir run does), so that the workers' graph
// fingerprint matches. While it runs, TaskManagers that join with free
// slots make the JobManager stop the attempt and start the next one,
// larger, from the latest checkpoint; a lost TaskManager fails the attempt
// as always, and the next one fits what is left. State moves by key
// groups on restore.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/config"
)

// reactiveCheckInterval is how often a running reactive job looks for
// free slots to grow into.
const reactiveCheckInterval = 500 * time.Millisecond

// maxParallelism is the largest parallelism the job's plan allows: the
// smallest max parallelism of its vertices (0 = none known).
func (p *JobPlan) maxParallelism() int {
	m := 0
	for _, v := range p.Vertices {
		if v.MaxParallelism > 0 && (m == 0 || v.MaxParallelism < m) {
			m = v.MaxParallelism
		}
	}
	return m
}

// reactiveSize is the parallelism that the free slots (with those the job
// holds) allow. It takes a slot per subtask: a job with several slot
// sharing groups needs more, and waits for them.
func (d *dispatcher) reactiveSize(j *job, held int) int {
	_, _, free := d.jm.pool.Totals()
	n := free + held
	if m := j.plan.maxParallelism(); m > 0 {
		n = min(n, m)
	}
	return n
}

// canGrow reports whether the running attempt could run at a higher
// parallelism now, and which.
func (d *dispatcher) canGrow(j *job, attempt int) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if j.attempt != attempt || !j.live || j.cancel || j.terminalSent == attempt || j.state != JobRunning {
		return 0, false
	}
	cur := j.plan.parallelism()
	to := d.reactiveSize(j, cur)
	return to, to > cur
}

// parallelism is the widest vertex's parallelism.
func (p *JobPlan) parallelism() int {
	n := 0
	for _, v := range p.Vertices {
		n = max(n, v.Parallelism)
	}
	return n
}

// resize makes the job's plan fit the free slots before an attempt. With
// no free slot it leaves the plan as it is (the job waits).
func (d *dispatcher) resize(j *job) error {
	d.mu.Lock()
	to, cur, asked := d.reactiveSize(j, 0), j.plan.parallelism(), j.sub.Parallelism
	// The size is the JobManager's to choose: a default parallelism that
	// the client passed along (weir run without -p) would override -p.
	j.sub.Options = slices.DeleteFunc(j.sub.Options, func(o string) bool {
		return strings.HasPrefix(o, config.Parallelism.Key+"=")
	})
	d.mu.Unlock()
	if to < 1 || to == cur && asked == to {
		// Replanned with -p before, or no slot to run on yet.
		return nil
	}
	plan, raw, err := d.planAt(j, to)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j.plan, j.sub.Plan, j.sub.Parallelism, j.slots = plan, raw, to, plan.SlotsNeeded()
	j.vertices = j.vertices[:0:0]
	for _, v := range plan.Vertices {
		j.vertices = append(j.vertices, JobVertexJSON{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, SlotSharingGroup: v.SlotSharingGroup})
	}
	d.jm.log.Info("reactive: job sized to the free slots", "job", j.id, "parallelism", to, "was", cur, "slots", j.slots)
	return nil
}

// planAt runs the job's program for its plan at parallelism p.
func (d *dispatcher) planAt(j *job, p int) (JobPlan, []byte, error) {
	ctx, cancel := context.WithTimeout(d.jm.ctx, time.Minute)
	defer cancel()
	plan, raw, err := planProgram(ctx, d.jm.artifacts.path(j.sub.Artifact), p, j.sub.Options, j.sub.Args)
	if err != nil {
		return JobPlan{}, nil, fmt.Errorf("reactive: parallelism %d: %w", p, err)
	}
	return plan, raw, nil
}

// planProgram runs the job program exe with --plan=json (and -p p when p
// is positive, -D for each option, then args), as weir run does, and
// returns the job graph it printed, decoded and as printed.
func planProgram(ctx context.Context, exe string, p int, options, args []string) (JobPlan, []byte, error) {
	planArgs := []string{"--plan=json"}
	if p > 0 {
		planArgs = append(planArgs, "-p", strconv.Itoa(p))
	}
	for _, o := range options {
		planArgs = append(planArgs, "-D", o)
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, append(planArgs, args...)...)
	cmd.Env = programEnv()
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return JobPlan{}, nil, fmt.Errorf("the job's program failed to print its plan with --plan=json (%v): %s", err, strings.TrimSpace(errOut.String()))
	}
	var plan JobPlan
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil {
		return JobPlan{}, nil, fmt.Errorf("the job's program printed no job graph with --plan=json (is it a weir job program?): %v", err)
	}
	if len(plan.Vertices) == 0 {
		return JobPlan{}, nil, errors.New("the job's program printed a job graph without vertices with --plan=json")
	}
	return plan, out.Bytes(), nil
}

// programEnv is the environment a job's program runs in, on a
// TaskManager or planning on the JobManager: this process's without its
// WEIR_ variables, since the program needs no cluster credentials.
func programEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "WEIR_") {
			env = append(env, e)
		}
	}
	return env
}
