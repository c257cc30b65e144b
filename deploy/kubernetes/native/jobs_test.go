package native

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
)

// podKubelet plays the kubelet for the fake API server: it runs a real,
// in-process TaskManager for each pod, registered under the pod's name,
// and stops it when the pod is deleted.
type podKubelet struct {
	t      *testing.T
	client *fake.Clientset
	jm     string

	mu      sync.Mutex
	running map[string]func() // pod -> stop its TaskManager
	maxPods int
}

func (k *podKubelet) run(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pods, err := k.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, p := range pods.Items {
			seen[p.Name] = true
			k.mu.Lock()
			_, ok := k.running[p.Name]
			k.mu.Unlock()
			if !ok {
				k.start(p.Name)
			}
		}
		k.mu.Lock()
		k.maxPods = max(k.maxPods, len(pods.Items))
		var gone []func()
		for name, stop := range k.running {
			if !seen[name] {
				gone = append(gone, stop)
				delete(k.running, name)
			}
		}
		k.mu.Unlock()
		for _, stop := range gone {
			stop()
		}
	}
}

func (k *podKubelet) start(pod string) {
	tm, err := cluster.NewTaskManager(cluster.TaskManagerOptions{
		JobManagerAddress: k.jm, ResourceID: pod, Slots: 2, BindHost: "127.0.0.1",
		RegistrationTimeout: 10 * time.Second, RPCTimeout: 2 * time.Second,
		WorkingDir: k.t.TempDir(), Hardware: &cluster.Hardware{CPUCores: 2, PhysicalMemory: 1 << 30},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		k.t.Error(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tm.Run(ctx) }()
	k.mu.Lock()
	k.running[pod] = func() { cancel(); <-done }
	k.mu.Unlock()
}

func (k *podKubelet) stopAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, stop := range k.running {
		stop()
		delete(k.running, name)
	}
}

// The whole loop with a real JobManager: jobs that need slots make the
// resource manager create pods, whose TaskManagers register and run the
// jobs; when the jobs end, the idle pods are deleted.
func TestPodsFollowRealJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	jm, err := cluster.StartJobManager(cluster.JobManagerOptions{
		BindHost: "127.0.0.1", HeartbeatInterval: 50 * time.Millisecond, HeartbeatTimeout: 2 * time.Second,
		RPCTimeout: 2 * time.Second, SlotRequestTimeout: 30 * time.Second, DefaultParallelism: 1,
		WorkingDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer jm.Close()

	client := fake.NewClientset()
	rm, err := New(client, JobManagerCluster(jm), Config{
		Options: Options{ClusterID: "jobs", Namespace: ns, Image: "weir:test",
			IdleTimeout: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond},
		Slots: 2, Core: config.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	k := &podKubelet{t: t, client: client, jm: jm.RPCAddr(), running: map[string]func(){}}
	bg, stopBG := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); rm.Run(bg) }()
	go func() { defer wg.Done(); k.run(bg) }()
	defer func() { stopBG(); wg.Wait(); k.stopAll() }()

	rest, err := cluster.NewRESTClient(jm.RESTURL(), cluster.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.Close()
	dir := t.TempDir()
	// A job of two slots (one TaskManager) whose worker runs until its
	// stop file appears.
	submit := func(name string) (id, stopFile string) {
		stopFile = filepath.Join(dir, name+".stop")
		script := fmt.Sprintf("#!/bin/sh\nwhile [ ! -e %q ]; do sleep 0.02; done\nexit 0\n", stopFile)
		sum := sha256.Sum256([]byte(script))
		hexSum := hex.EncodeToString(sum[:])
		if err := rest.UploadArtifact(ctx, strings.NewReader(script), hexSum); err != nil {
			t.Fatal(err)
		}
		plan, _ := json.Marshal(map[string]any{"JobName": name, "Vertices": []map[string]any{
			{"ID": "src", "Name": "source", "Parallelism": 2, "SlotSharingGroup": "default"}}})
		id, err := rest.SubmitJob(ctx, cluster.JobSubmission{Artifact: hexSum, Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		return id, stopFile
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s; pods %v", what, podNames(t, client))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	state := func(id string) string {
		d, err := rest.Job(ctx, id)
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		return d.State // "" once the test timed out; waitFor reports it
	}
	pods := func() int { return len(podNames(t, client)) }

	if jm.SlotDemand() != 0 || pods() != 0 {
		t.Fatalf("no jobs: demand %d, pods %d", jm.SlotDemand(), pods())
	}
	a, stopA := submit("a")
	waitFor("job a running on a new pod", func() bool { return state(a) == cluster.JobRunning && pods() == 1 })
	b, stopB := submit("b")
	waitFor("job b running on a second pod", func() bool { return state(b) == cluster.JobRunning && pods() == 2 })

	if err := os.WriteFile(stopA, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("job a finished", func() bool { return state(a) == cluster.JobFinished })
	waitFor("the idle pod deleted", func() bool { return pods() == 1 })
	if state(b) != cluster.JobRunning {
		t.Fatalf("job b %s after a's pod went", state(b))
	}
	if err := os.WriteFile(stopB, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("job b finished", func() bool { return state(b) == cluster.JobFinished })
	waitFor("every pod deleted", func() bool { return pods() == 0 })
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.maxPods != 2 {
		t.Fatalf("at most %d pods at once; two jobs of one TaskManager each need 2", k.maxPods)
	}
}
