package stream_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/network"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// distributedJob builds, in one environment per worker, a job whose
// source has parallelism 4, a map 4 and a keyed running count 3: the
// seeds' example. Its output is "key:count" per update, which does not
// depend on how the sources' records interleave.
func distributedJob(t *testing.T, n int64, kvs ...string) (*stream.Environment, *stream.Collected[string]) {
	env := newEnv(t, 4, append([]string{"taskmanager.network.buffer-records", "64"}, kvs...)...)
	src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
		if i%2000 == 0 {
			time.Sleep(time.Millisecond) // several checkpoints per run
		}
		return kv{K: i % 37, V: i}
	}}, "numbers").UID("numbers")
	ones := stream.Map(src, func(x kv) kv { return kv{K: x.K, V: 1} }).UID("ones")
	counts := stream.Sum(stream.KeyBy(ones, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("counts").SetParallelism(3)
	out := stream.Map(counts, func(x kv) string { return fmt.Sprintf("%d:%d", x.K, x.V) }).UID("format").SetParallelism(3)
	return env, stream.Collect(out)
}

// runDistributed runs the job of build on workers placed by placement,
// all in this process but exchanging records and control messages over
// TCP, and returns the union of what their sinks committed.
func runDistributed(t *testing.T, placement []int, build func() (*stream.Environment, *stream.Collected[string])) ([]string, []*stream.JobClient) {
	t.Helper()
	workers := slices.Max(placement) + 1
	var nets []*network.Manager
	var peers []string
	for range workers {
		nm, err := network.Listen(network.Config{Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nm.Close() })
		nets = append(nets, nm)
		peers = append(peers, nm.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var jobs []*stream.JobClient
	var sinks []*stream.Collected[string]
	for w := range workers {
		env, got := build()
		stream.SetDistribution(env, &runtime.Distribution{Self: w, Placement: placement, Net: nets[w], Peers: peers, Key: "job-1"})
		job, err := env.ExecuteAsync(ctx, "distributed")
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
		sinks = append(sinks, got)
	}
	var out []string
	for w, job := range jobs {
		if err := job.Wait(); err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
		out = append(out, sinks[w].Values()...)
	}
	slices.Sort(out)
	return out, jobs
}

func TestDistributedJob(t *testing.T) {
	const n = 40_000
	var want []string
	for k := range int64(37) {
		for c := int64(1); c <= (n-k+36)/37; c++ {
			want = append(want, fmt.Sprintf("%d:%d", k, c))
		}
	}
	slices.Sort(want)
	for _, tc := range []struct {
		name      string
		placement []int
		kvs       []string
	}{
		{"two workers, alternating slots", []int{0, 1, 0, 1}, nil},
		{"three workers", []int{0, 0, 1, 2}, nil},
		{"checkpoints", []int{0, 1, 1, 0}, []string{"execution.checkpointing.interval", "10 ms"}},
		{"checkpoints to files, pebble", []int{1, 0, 1, 0}, []string{"execution.checkpointing.interval", "10 ms",
			"state.backend.type", "pebble", "state.checkpoints.dir", filepath.Join(t.TempDir(), "chk")}},
		{"unaligned checkpoints", []int{0, 1, 0, 1}, []string{"execution.checkpointing.interval", "10 ms",
			"execution.checkpointing.unaligned.enabled", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, jobs := runDistributed(t, tc.placement, func() (*stream.Environment, *stream.Collected[string]) {
				return distributedJob(t, n, tc.kvs...)
			})
			if !slices.Equal(got, want) {
				var missing []string
				for _, w := range want {
					if _, ok := slices.BinarySearch(got, w); !ok {
						missing = append(missing, w)
					}
				}
				for w, j := range jobs {
					for _, m := range j.Metrics() {
						t.Logf("worker %d: %s in %d out %d", w, m.Task, m.RecordsIn, m.RecordsOut)
					}
				}
				t.Fatalf("committed %d records, want %d; %d missing, e.g. %v; checkpoints %d", len(got), len(want), len(missing), missing[:min(len(missing), 10)], jobs[0].CompletedCheckpoints())
			}
			if tc.kvs != nil && jobs[0].CompletedCheckpoints() == 0 {
				t.Fatal("no checkpoint completed")
			}
		})
	}
}
