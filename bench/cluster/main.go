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
// the local process and the cluster job (from the JobManager's job
// duration: scheduling, starting the workers, their rendezvous and the
// run; not the upload of the executable), checking that both commit the
// same counts. The table shows the medians.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/examples/wordcount/wc"
	"github.com/weirproject/weir/internal/cluster"
)

func main() {
	words := flag.Int64("words", 20_000_000, "words in the generated text")
	parallelism := flag.Int("parallelism", 2, "parallelism of the job, locally and on the cluster")
	taskManagers := flag.Int("taskmanagers", 2, "TaskManager processes; the job's slots are spread over them")
	runs := flag.Int("runs", 3, "timed runs of each")
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

	loop := timeLoop(input)
	c, err := startCluster(weir, dir, tms, (p+tms-1)/tms)
	if err != nil {
		return err
	}
	defer c.stop()

	var local, serialized, remote []time.Duration
	for r := range runs {
		localOut, clusterOut := filepath.Join(dir, fmt.Sprintf("local-%d", r)), filepath.Join(dir, fmt.Sprintf("cluster-%d", r))
		start := time.Now()
		if b, err := exec.Command(program, "-p", strconv.Itoa(p), "--input", input, "--output", localOut).CombinedOutput(); err != nil {
			return fmt.Errorf("local run: %v\n%s", err, b)
		}
		local = append(local, time.Since(start))
		// The same, encoding and decoding every record between tasks as
		// the network does: the cost of serialization alone.
		serializedOut := filepath.Join(dir, fmt.Sprintf("serialized-%d", r))
		start = time.Now()
		if b, err := exec.Command(program, "-p", strconv.Itoa(p), "--input", input, "--output", serializedOut,
			"-D", "pipeline.force-serialization=true").CombinedOutput(); err != nil {
			return fmt.Errorf("local run: %v\n%s", err, b)
		}
		serialized = append(serialized, time.Since(start))
		os.RemoveAll(serializedOut)
		d, err := c.runJob(weir, program, p, input, clusterOut)
		if err != nil {
			return err
		}
		remote = append(remote, d)
		if err := sameLines(localOut, clusterOut); err != nil {
			return err
		}
		os.RemoveAll(localOut)
		os.RemoveAll(clusterOut)
	}
	slices.Sort(local)
	slices.Sort(serialized)
	slices.Sort(remote)
	lm, sm, rm := local[len(local)/2], serialized[len(serialized)/2], remote[len(remote)/2]
	rate := func(d time.Duration) float64 { return float64(words) / d.Seconds() / 1e6 }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tseconds\tM words/s\tratio to loop\tratio to local\t")
	fmt.Fprintf(tw, "loop (1 goroutine)\t%.2f\t%.2f\t1.00\t\t\n", loop.Seconds(), rate(loop))
	fmt.Fprintf(tw, "local mini cluster p=%d\t%.2f\t%.2f\t%.2f\t1.00\t\n", p, lm.Seconds(), rate(lm), loop.Seconds()/lm.Seconds())
	fmt.Fprintf(tw, "local, every record serialized\t%.2f\t%.2f\t%.2f\t%.2f\t\n", sm.Seconds(), rate(sm), loop.Seconds()/sm.Seconds(), lm.Seconds()/sm.Seconds())
	fmt.Fprintf(tw, "%d TaskManagers p=%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", tms, p, rm.Seconds(), rate(rm), loop.Seconds()/rm.Seconds(), lm.Seconds()/rm.Seconds())
	return tw.Flush()
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
func timeLoop(path string) time.Duration {
	start := time.Now()
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
	return time.Since(start)
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
// JobManager measured it.
func (c *standalone) runJob(weir, program string, p int, input, output string) (time.Duration, error) {
	b, err := exec.Command(weir, "run", "--jobmanager", c.rest, "-p", strconv.Itoa(p), program, "--input", input, "--output", output).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("weir run: %v\n%s", err, b)
	}
	m := submitted.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("weir run printed no job ID:\n%s", b)
	}
	d, err := c.client.Job(context.Background(), string(m[1]))
	if err != nil {
		return 0, err
	}
	if d.State != cluster.JobFinished || len(d.Workers) < 2 {
		return 0, fmt.Errorf("job %s: %s on %d workers; want FINISHED on several", d.ID, d.State, len(d.Workers))
	}
	return time.Duration(d.Duration) * time.Millisecond, nil
}

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
