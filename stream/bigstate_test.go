package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// bigStateReport is what the child process of TestStateLargerThanMemory
// measured.
type bigStateReport struct {
	Records, Checked int64
	MaxStoreBytes    int64
	MaxHeapBytes     uint64
	// PeakRSSBytes is the process's peak resident set (VmHWM in
	// /proc/self/status), which also counts the pages of the test binary
	// itself; MaxAnonBytes the peak of its anonymous resident memory
	// (RssAnon, sampled): Go heap, runtime, stacks and whatever Pebble
	// allocates outside the Go heap — the memory the state costs.
	PeakRSSBytes int64
	MaxAnonBytes int64
	Checkpoints  int
	Err          string
}

const bigStateLimit = 32 << 20 // the child's GOMEMLIMIT

// bigStateAnonLimit bounds the child's anonymous resident memory; the
// state grows to several times more.
const bigStateAnonLimit = 56 << 20

// TestStateLargerThanMemory runs a keyed job on the pebble backend whose
// state grows to more than 4 times the Go memory limit given to the
// process (GOMEMLIMIT), with incremental checkpoints, in a child process
// so that the limit is the whole process's. The process's anonymous
// resident memory, read from /proc (Go heap, runtime and Pebble's own
// allocations), must stay below bigStateAnonLimit while the state grows
// to at least 2.5 times that. Every record checks the value its key held
// before, so lost or stale state fails the job.
func TestStateLargerThanMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes ~190 MB of state; too slow under -short and -race")
	}
	if os.Getenv("WEIR_BIGSTATE_CHILD") != "" {
		t.Skip("child runs only bigStateChild")
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBigStateChild$", "-test.v")
	// GOGC=off leaves collection to the memory limit alone, the strictest
	// setting: the heap may grow only up to GOMEMLIMIT.
	cmd.Env = append(os.Environ(), "WEIR_BIGSTATE_CHILD="+tmp, fmt.Sprintf("GOMEMLIMIT=%d", bigStateLimit), "GOGC=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(tmp, "report.json"))
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	var r bigStateReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("records %d, checked %d, state store peak %d MiB, live heap peak %d MiB (GOMEMLIMIT %d MiB), "+
		"anonymous resident memory peak %d MiB (limit %d MiB), peak RSS with the binary's pages %d MiB, %d checkpoints",
		r.Records, r.Checked, r.MaxStoreBytes>>20, r.MaxHeapBytes>>20, bigStateLimit>>20,
		r.MaxAnonBytes>>20, bigStateAnonLimit>>20, r.PeakRSSBytes>>20, r.Checkpoints)
	if r.Err != "" {
		t.Fatalf("the job failed: %s", r.Err)
	}
	if r.MaxStoreBytes < 4*bigStateLimit {
		t.Fatalf("state reached %d MiB, less than 4 x the %d MiB memory limit: the test proves nothing", r.MaxStoreBytes>>20, bigStateLimit>>20)
	}
	if r.MaxAnonBytes <= 0 {
		t.Fatal("no RssAnon in /proc/self/status: the memory bound cannot be checked")
	}
	if r.MaxAnonBytes > bigStateAnonLimit {
		t.Errorf("anonymous resident memory reached %d MiB, more than the %d MiB the state may cost", r.MaxAnonBytes>>20, bigStateAnonLimit>>20)
	}
	if 2*r.MaxStoreBytes < 5*bigStateAnonLimit {
		t.Errorf("state reached %d MiB, less than 2.5 x the %d MiB resident limit: the test proves nothing", r.MaxStoreBytes>>20, bigStateAnonLimit>>20)
	}
	if r.Checked != r.Records-bigStateKeys {
		t.Fatalf("%d records found their key's previous value, want %d", r.Checked, r.Records-bigStateKeys)
	}
	if r.Checkpoints == 0 {
		t.Fatal("no checkpoint completed")
	}
}

const (
	bigStateKeys   = 250_000
	bigStateRounds = 2
	bigStateValue  = 384
)

// bigValue is key k's value in round r: random bytes, so that the store
// cannot compress them away.
func bigValue(k, r int64) string {
	rng := rand.New(rand.NewPCG(uint64(k), uint64(r)))
	b := make([]byte, bigStateValue)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

type bigStateFn struct {
	val     state.ValueState[string]
	checked *atomic.Int64
}

func (f *bigStateFn) Open(ctx *stream.KeyedContext[int64]) error {
	f.val = state.Value[string](ctx.State(), "v", "")
	return nil
}

func (f *bigStateFn) ProcessElement(i int64, ctx *stream.KeyedContext[int64], out stream.Collector[int64]) error {
	k, round := i%bigStateKeys, i/bigStateKeys
	prev, ok := f.val.Value()
	if round > 0 {
		if !ok || prev != bigValue(k, round-1) {
			return fmt.Errorf("key %d round %d: state holds %.20q (found %v), want the value of round %d", k, round, prev, ok, round-1)
		}
		f.checked.Add(1)
	} else if ok {
		return fmt.Errorf("key %d has state before it was written", k)
	}
	f.val.Update(bigValue(k, round))
	return nil
}

func TestBigStateChild(t *testing.T) {
	dir := os.Getenv("WEIR_BIGSTATE_CHILD")
	if dir == "" {
		t.Skip("runs as the child of TestStateLargerThanMemory")
	}
	report := bigStateReport{}
	defer func() {
		data, _ := json.Marshal(report)
		_ = os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644)
	}()
	tmpDirs := filepath.Join(dir, "tmp")
	env := newEnv(t, 1,
		"state.backend.type", "pebble",
		"io.tmp.dirs", tmpDirs,
		"state.checkpoints.dir", filepath.Join(dir, "checkpoints"),
		"execution.checkpointing.interval", "2 s",
		"state.backend.pebble.block-cache-size", "8 mb",
		"state.backend.pebble.cache-size", "8 mb")
	n := int64(bigStateKeys * bigStateRounds)
	src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: n, Fn: func(i int64) int64 { return i }}, "numbers")
	var checked atomic.Int64
	processed := stream.KeyedProcess[int64, int64, int64](stream.KeyBy(src, func(i int64) int64 { return i % bigStateKeys }), &bigStateFn{checked: &checked})
	stream.Print(processed)
	job, err := env.ExecuteAsync(context.Background(), "big-state")
	if err != nil {
		report.Err = err.Error()
		return
	}
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-job.Done():
			done = true
		case <-tick.C:
		}
		metrics.Read(samples)
		report.MaxHeapBytes = max(report.MaxHeapBytes, samples[0].Value.Uint64())
		report.MaxStoreBytes = max(report.MaxStoreBytes, dirSize(tmpDirs))
		report.MaxAnonBytes = max(report.MaxAnonBytes, procStatus(t, "RssAnon:"))
	}
	if err := job.Wait(); err != nil {
		report.Err = err.Error()
	}
	report.Records = n
	report.Checked = checked.Load()
	report.PeakRSSBytes = procStatus(t, "VmHWM:")
	report.Checkpoints = job.CompletedCheckpoints()
}

// procStatus reads a size in kB from /proc/self/status, -1 if it cannot.
func procStatus(t *testing.T, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Logf("no /proc/self/status: %v", err)
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// dirSize is the size of the SST files under dir: the store's state.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".sst") && !strings.Contains(path, "-checkpoints") {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
