// Command cluster measures examples/wordcount on a standalone cluster of
// real processes (a JobManager and TaskManagers on 127.0.0.1, the job
// spread over them so that part of its shuffle crosses TCP) against the
// same program on the local mini cluster at the same parallelism, and
// both against a hand-written single-goroutine loop with the same
// tokenizer.
//
//	go run ./bench/cluster [--words N] [--parallelism P] [--taskmanagers T] [--runs R]
//
// It builds weir and the example, writes a generated text file (lines of
// about 10 words drawn from a Zipf distribution), and for every run times
// the local process and the cluster job, checking that both commit the
// same counts. The cluster job is timed twice from the JobManager's
// details: its duration (scheduling, starting the workers, their
// rendezvous and the run; not the upload of the executable), and its run
// alone, from the last worker's start to the job's end, which is what
// compares with the local process. The table shows the median and min–max of the runs, by
// wall-clock and by CPU time.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/examples/wordcount/wc"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/internal/cluster"
)

func main() {
	words := flag.Int64("words", 20_000_000, "words in the generated text")
	parallelism := flag.Int("parallelism", 2, "parallelism of the job, locally and on the cluster")
	taskManagers := flag.Int("taskmanagers", 2, "TaskManager processes; the job's slots are spread over them")
	runs := flag.Int("runs", 5, "timed runs of each")
	flag.Parse()
	if err := run(*words, *parallelism, *taskManagers, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cluster:", err)
		os.Exit(1)
	}
}

func run(words int64, p, tms, runs int) error {
	dir, err := os.MkdirTemp("", "weir-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	weir, program := filepath.Join(dir, "weir"), filepath.Join(dir, "wordcount")
	for out, pkg := range map[string]string{weir: "./cmd/weir", program: "./examples/wordcount"} {
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	input := filepath.Join(dir, "input.txt")
	size, err := writeText(input, words)
	if err != nil {
		return err
	}
	fmt.Printf("text: %d words, %.0f MiB; parallelism %d; %d TaskManagers with %d slots each\n",
		words, float64(size)/(1<<20), p, tms, (p+tms-1)/tms)

	c, err := startCluster(weir, dir, tms, (p+tms-1)/tms)
	if err != nil {
		return err
	}
	defer c.stop()

	// Each run times the loop, the local program, the local program with
	// every record serialized, and the cluster job, in that order, so
	// that the ratios of the i-th runs compare like with like. CPU time
	// is the loop's own, the local process's, and the cluster's
	// processes' (JobManager, TaskManagers and the workers they reaped).
	var loop, local, serialized, remote, running, loopCPU, localCPU, serializedCPU, remoteCPU []float64
	for r := range runs {
		w, cpu := timeLoop(input)
		loop, loopCPU = append(loop, w.Seconds()), append(loopCPU, cpu.Seconds())
		localOut, clusterOut := filepath.Join(dir, fmt.Sprintf("local-%d", r)), filepath.Join(dir, fmt.Sprintf("cluster-%d", r))
		w, cpu, err := runLocal(program, "-p", strconv.Itoa(p), "--input", input, "--output", localOut)
		if err != nil {
			return err
		}
		local, localCPU = append(local, w.Seconds()), append(localCPU, cpu.Seconds())
		// The same, encoding and decoding every record between tasks as
		// the network does: the cost of serialization alone.
		serializedOut := filepath.Join(dir, fmt.Sprintf("serialized-%d", r))
		w, cpu, err = runLocal(program, "-p", strconv.Itoa(p), "--input", input, "--output", serializedOut,
			"-D", "pipeline.force-serialization=true")
		if err != nil {
			return err
		}
		serialized, serializedCPU = append(serialized, w.Seconds()), append(serializedCPU, cpu.Seconds())
		os.RemoveAll(serializedOut)
		cpu0, err := c.cpu()
		if err != nil {
			return err
		}
		d, run, err := c.runJob(weir, program, p, input, clusterOut)
		if err != nil {
			return err
		}
		cpu1, err := c.cpu()
		if err != nil {
			return err
		}
		remote, remoteCPU = append(remote, d.Seconds()), append(remoteCPU, (cpu1-cpu0).Seconds())
		running = append(running, run.Seconds())
		if err := sameLines(localOut, clusterOut); err != nil {
			return err
		}
		os.RemoveAll(localOut)
		os.RemoveAll(clusterOut)
		fmt.Fprintf(os.Stderr, "run %d: loop %.2fs, local %.2fs, serialized %.2fs, cluster %.2fs (running %.2fs)\n", r+1, loop[r], local[r], serialized[r], remote[r], running[r])
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "run\tseconds\tM words/s\tCPU s\tratio to loop\tper core\tratio to local\tper core\t\n")
	row := func(name string, w, cpu []float64) {
		wps := benchstat.Of(benchstat.Scale(float64(words)/1e6, w))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, benchstat.Of(w).Format("%.2f"), wps.Format("%.2f"), benchstat.Of(cpu).Format("%.2f"),
			benchstat.Of(benchstat.Ratios(loop, w)), benchstat.Of(benchstat.Ratios(loopCPU, cpu)),
			benchstat.Of(benchstat.Ratios(local, w)), benchstat.Of(benchstat.Ratios(localCPU, cpu)))
	}
	fmt.Printf("median (min–max) of %d runs\n", runs)
	row("loop (1 goroutine)", loop, loopCPU)
	row(fmt.Sprintf("local mini cluster p=%d", p), local, localCPU)
	row("local, every record serialized", serialized, serializedCPU)
	row(fmt.Sprintf("%d TaskManagers p=%d", tms, p), remote, remoteCPU)
	// The same CPU time: the deployment's is in it, so the per-core
	// ratios of this row are those of the row above.
	row(fmt.Sprintf("%d TaskManagers p=%d, deployed", tms, p), running, remoteCPU)
	return tw.Flush()
}

// runLocal runs the program and returns its wall-clock and CPU time.
func runLocal(program string, args ...string) (time.Duration, time.Duration, error) {
	cmd := exec.Command(program, args...)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("local run: %v\n%s", err, b)
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// writeText writes lines of about 10 words, drawn with a Zipf
// distribution from a vocabulary of 100k random words.
func writeText(path string, words int64) (int64, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 100_000)
	for i := range vocab {
		b := make([]byte, 3+rng.IntN(8))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		vocab[i] = string(b)
	}
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(vocab)-1))
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := int64(0); i < words; i++ {
		w.WriteString(vocab[zipf.Uint64()])
		if i%10 == 9 {
			w.WriteString(".\n")
		} else {
			w.WriteByte(' ')
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

// timeLoop counts the words of the file in one goroutine, the physical
// limit of the same work.
func timeLoop(path string) (time.Duration, time.Duration) {
	runtime.GC()
	start, cpu := time.Now(), benchstat.ProcessCPU()
	f, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	counts := make(map[string]int64)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		wc.Tokenize(sc.Text(), func(w string) { counts[w]++ })
	}
	return time.Since(start), benchstat.ProcessCPU() - cpu
}

type standalone struct {
	procs  []*exec.Cmd
	rest   string
	client *cluster.RESTClient
}

var jmAddrs = regexp.MustCompile(`jobmanager rpc=(\S+) rest=(\S+)`)

func startCluster(weir, dir string, tms, slots int) (*standalone, error) {
	c := &standalone{}
	jm := exec.Command(weir, "jobmanager", "--rpc-port", "0", "--rest-port", "0")
	out, err := jm.StdoutPipe()
	if err != nil {
		return nil, err
	}
	jm.Stderr = nil
	if err := jm.Start(); err != nil {
		return nil, err
	}
	c.procs = append(c.procs, jm)
	sc := bufio.NewScanner(out)
	var rpc string
	for sc.Scan() {
		if m := jmAddrs.FindStringSubmatch(sc.Text()); m != nil {
			rpc, c.rest = m[1], strings.TrimPrefix(m[2], "http://")
			break
		}
	}
	if rpc == "" {
		c.stop()
		return nil, fmt.Errorf("the jobmanager printed no addresses")
	}
	go sc.Scan() // keep draining; owned by the process, ends with it
	for range tms {
		tm := exec.Command(weir, "taskmanager", "--jobmanager", rpc, "--slots", strconv.Itoa(slots))
		tm.Dir = dir
		if err := tm.Start(); err != nil {
			c.stop()
			return nil, err
		}
		c.procs = append(c.procs, tm)
	}
	if c.client, err = cluster.NewRESTClient(c.rest, cluster.Security{}); err != nil {
		c.stop()
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		o, err := c.client.Overview(context.Background())
		if err == nil && o.TaskManagers == tms {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("%d TaskManagers did not register within 30s: %+v %v", tms, o, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var submitted = regexp.MustCompile(`JobID ([0-9a-f]+)`)

// runJob runs the program attached and returns the job's duration as the
// JobManager measured it, and the part of it after deployment: from the
// last worker's start (once it had met its peers) to the job's end.
func (c *standalone) runJob(weir, program string, p int, input, output string) (time.Duration, time.Duration, error) {
	b, err := exec.Command(weir, "run", "--jobmanager", c.rest, "-p", strconv.Itoa(p), program, "--input", input, "--output", output).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("weir run: %v\n%s", err, b)
	}
	m := submitted.FindSubmatch(b)
	if m == nil {
		return 0, 0, fmt.Errorf("weir run printed no job ID:\n%s", b)
	}
	d, err := c.client.Job(context.Background(), string(m[1]))
	if err != nil {
		return 0, 0, err
	}
	if d.State != cluster.JobFinished || len(d.Workers) < 2 {
		return 0, 0, fmt.Errorf("job %s: %s on %d workers; want FINISHED on several", d.ID, d.State, len(d.Workers))
	}
	var started int64
	for _, w := range d.Workers {
		if w.StartTime <= 0 {
			return 0, 0, fmt.Errorf("job %s: worker %d reported no start time", d.ID, w.Index)
		}
		started = max(started, w.StartTime)
	}
	return time.Duration(d.Duration) * time.Millisecond, time.Duration(d.EndTime-started) * time.Millisecond, nil
}

// cpu is the CPU time the cluster's processes have used, their reaped
// children (the workers) included, from /proc/PID/stat.
func (c *standalone) cpu() (time.Duration, error) {
	var total time.Duration
	for _, p := range c.procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
		if err != nil {
			return 0, err
		}
		// Fields after the command name, which is in parentheses: utime
		// is the 14th field of the line, stime, cutime and cstime follow.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		for _, i := range []int{11, 12, 13, 14} {
			ticks, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/stat: %v", p.Process.Pid, err)
			}
			total += time.Duration(ticks) * time.Second / clockTicks
		}
	}
	return total, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

func (c *standalone) stop() {
	if c.client != nil {
		c.client.Close()
	}
	for _, p := range slices.Backward(c.procs) {
		p.Process.Kill()
		p.Wait()
	}
}

func sameLines(a, b string) error {
	la, err := file.ReadLines(a)
	if err != nil {
		return err
	}
	lb, err := file.ReadLines(b)
	if err != nil {
		return err
	}
	slices.Sort(la)
	slices.Sort(lb)
	if !slices.Equal(la, lb) {
		return fmt.Errorf("the cluster committed %d lines, the local run %d, and they differ", len(lb), len(la))
	}
	return nil
}
