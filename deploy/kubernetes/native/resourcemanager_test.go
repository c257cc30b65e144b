package native

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
)

const ns = "weir"

// fakeCluster is a JobManager as the resource manager sees it: the slots
// the jobs need, and the TaskManagers that registered.
type fakeCluster struct {
	mu     sync.Mutex
	demand int
	tms    map[string]*cluster.TaskManagerInfo
}

func newFakeCluster() *fakeCluster { return &fakeCluster{tms: map[string]*cluster.TaskManagerInfo{}} }

func (c *fakeCluster) SlotDemand() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.demand
}

func (c *fakeCluster) TaskManagers() []cluster.TaskManagerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cluster.TaskManagerInfo
	for _, tm := range c.tms {
		out = append(out, *tm)
	}
	slices.SortFunc(out, func(a, b cluster.TaskManagerInfo) int { return strings.Compare(a.ResourceID, b.ResourceID) })
	return out
}

func (c *fakeCluster) setDemand(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.demand = n
}

func (c *fakeCluster) register(id string, slots int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tms[id] = &cluster.TaskManagerInfo{Registration: cluster.Registration{ResourceID: id, Slots: slots}, FreeSlots: slots}
}

func (c *fakeCluster) unregister(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tms, id)
}

// use marks n slots of TaskManager id as taken (negative frees them).
func (c *fakeCluster) use(id string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tms[id].FreeSlots -= n
}

// kubelet registers a TaskManager for every pod that has none yet, as the
// pods' TaskManagers would, and forgets those whose pods are gone.
func kubelet(t *testing.T, client *fake.Clientset, c *fakeCluster, slots int) {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exists := map[string]bool{}
	for _, p := range pods.Items {
		exists[p.Name] = true
		c.mu.Lock()
		_, ok := c.tms[p.Name]
		c.mu.Unlock()
		if !ok {
			c.register(p.Name, slots)
		}
	}
	for _, tm := range c.TaskManagers() {
		if !exists[tm.ResourceID] {
			c.unregister(tm.ResourceID)
		}
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func testConfig(clk *clock) Config {
	return Config{
		Options: Options{
			ClusterID: "wc", Namespace: ns, Image: "weir:test",
			CPU: resource.MustParse("500m"), Memory: resource.MustParse("2Gi"),
			IdleTimeout: 30 * time.Second,
		},
		Slots: 2,
		Core:  config.New(),
		Now:   clk.now,
	}
}

func newRM(t *testing.T, cfg Config) (*ResourceManager, *fake.Clientset, *fakeCluster) {
	t.Helper()
	client := fake.NewClientset()
	c := newFakeCluster()
	rm, err := New(client, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rm, client, c
}

func reconcile(t *testing.T, rm *ResourceManager) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := rm.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func podNames(t *testing.T, client *fake.Clientset) []string {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func TestPodsCreatedAsJobsNeedSlots(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	rm, client, c := newRM(t, testConfig(clk))

	if res := reconcile(t, rm); len(res.Created) != 0 {
		t.Fatalf("no jobs, yet created %v", res.Created)
	}
	// A job that needs 5 slots, 2 per TaskManager: 3 pods.
	c.setDemand(5)
	res := reconcile(t, rm)
	want := []string{"wc-taskmanager-0", "wc-taskmanager-1", "wc-taskmanager-2"}
	if !slices.Equal(res.Created, want) || !slices.Equal(podNames(t, client), want) {
		t.Fatalf("created %v, pods %v; want %v", res.Created, podNames(t, client), want)
	}
	// Pods still starting count as supply: no more pods.
	for range 3 {
		if res := reconcile(t, rm); len(res.Created) != 0 || res.Supply != 6 {
			t.Fatalf("pods starting: created %v more, supply %d", res.Created, res.Supply)
		}
	}
	// Registered, the same.
	kubelet(t, client, c, 2)
	if res := reconcile(t, rm); len(res.Created) != 0 || res.Supply != 6 || res.Demand != 5 {
		t.Fatalf("registered: %+v", res)
	}
	// A second job of 3 slots: 8 needed, 6 there -> one more pod.
	c.setDemand(8)
	if res := reconcile(t, rm); !slices.Equal(res.Created, []string{"wc-taskmanager-3"}) {
		t.Fatalf("second job: created %v", res.Created)
	}
	// TaskManagers that are not pods of this cluster (a static one) count.
	c.register("static-tm", 4)
	c.setDemand(12)
	if res := reconcile(t, rm); len(res.Created) != 0 {
		t.Fatalf("static TaskManager's slots ignored: created %v", res.Created)
	}
}

func TestTaskManagerPodSpec(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	cfg := testConfig(clk)
	cfg.TokenSecret = "weir-token"
	cfg.ServiceAccount = "weir-tm"
	cfg.ExtraArgs = []string{"-D", "heartbeat.timeout=10s"}
	owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "wc-jobmanager", UID: "u-1"}
	cfg.Owner = owner
	rm, client, c := newRM(t, cfg)
	c.setDemand(1)
	reconcile(t, rm)
	pod, err := client.CoreV1().Pods(ns).Get(context.Background(), "wc-taskmanager-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[LabelApp] != "wc" || pod.Labels[LabelComponent] != "taskmanager" || pod.Labels[LabelType] != TypeNative {
		t.Errorf("labels %v", pod.Labels)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0] != *owner {
		t.Errorf("owner references %v", pod.OwnerReferences)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.ServiceAccountName != "weir-tm" {
		t.Errorf("restart policy %q, service account %q", pod.Spec.RestartPolicy, pod.Spec.ServiceAccountName)
	}
	ctr := pod.Spec.Containers[0]
	for _, rl := range []corev1.ResourceList{ctr.Resources.Requests, ctr.Resources.Limits} {
		if cpu := rl[corev1.ResourceCPU]; cpu.String() != "500m" {
			t.Errorf("cpu %s, want 500m (kubernetes.taskmanager.cpu)", cpu.String())
		}
		if mem := rl[corev1.ResourceMemory]; mem.String() != "2Gi" {
			t.Errorf("memory %s, want 2Gi (kubernetes.taskmanager.memory)", mem.String())
		}
	}
	args := strings.Join(ctr.Args, " ")
	for _, want := range []string{"taskmanager --config /opt/weir/conf/config.yaml --slots 2 --bind 0.0.0.0",
		"-D taskmanager.resource-id=wc-taskmanager-0", "-D taskmanager.host=$(POD_IP)", "-D heartbeat.timeout=10s"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if ctr.Image != "weir:test" || !slices.Equal(ctr.Command, []string{"weir"}) {
		t.Errorf("image %q command %v", ctr.Image, ctr.Command)
	}
	var token, podIP bool
	for _, e := range ctr.Env {
		if e.Name == "WEIR_TOKEN" && e.ValueFrom.SecretKeyRef.Name == "weir-token" && e.ValueFrom.SecretKeyRef.Key == "token" {
			token = true
		}
		if e.Name == "POD_IP" && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			podIP = true
		}
	}
	if !token || !podIP {
		t.Errorf("env %v: want WEIR_TOKEN from the secret and POD_IP", ctr.Env)
	}
	if v := pod.Spec.Volumes[0].ConfigMap; v == nil || v.Name != "wc-taskmanager-config" {
		t.Errorf("volumes %v", pod.Spec.Volumes)
	}
}

func TestIdleTaskManagersDeletedAfterTimeout(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	rm, client, c := newRM(t, testConfig(clk))
	// Two jobs of 2 slots each: two pods, each fully used.
	c.setDemand(4)
	reconcile(t, rm)
	kubelet(t, client, c, 2)
	c.use("wc-taskmanager-0", 2)
	c.use("wc-taskmanager-1", 2)
	clk.advance(time.Minute)
	if res := reconcile(t, rm); len(res.Deleted)+len(res.Created) != 0 {
		t.Fatalf("busy: %+v", res)
	}
	// The job on pod 1 ends.
	c.setDemand(2)
	c.use("wc-taskmanager-1", -2)
	if res := reconcile(t, rm); len(res.Deleted) != 0 {
		t.Fatalf("deleted at once: %v", res.Deleted)
	}
	clk.advance(30*time.Second - time.Millisecond)
	if res := reconcile(t, rm); len(res.Deleted) != 0 {
		t.Fatalf("deleted before the idle timeout: %v", res.Deleted)
	}
	clk.advance(time.Millisecond)
	if res := reconcile(t, rm); !slices.Equal(res.Deleted, []string{"wc-taskmanager-1"}) {
		t.Fatalf("after the idle timeout deleted %v, want the idle pod 1", res.Deleted)
	}
	if got := podNames(t, client); !slices.Equal(got, []string{"wc-taskmanager-0"}) {
		t.Fatalf("pods %v", got)
	}
	kubelet(t, client, c, 2)

	// An idle TaskManager that the demand still needs stays: a job that
	// waits for its slots.
	c.use("wc-taskmanager-0", -2)
	clk.advance(time.Hour)
	if res := reconcile(t, rm); len(res.Deleted) != 0 {
		t.Fatalf("demand 2 = supply 2, yet deleted %v", res.Deleted)
	}
	// Idleness that was interrupted starts again.
	c.use("wc-taskmanager-0", 1)
	reconcile(t, rm)
	c.use("wc-taskmanager-0", -1)
	c.setDemand(0)
	clk.advance(29 * time.Second)
	reconcile(t, rm)
	clk.advance(29 * time.Second)
	if res := reconcile(t, rm); len(res.Deleted) != 0 {
		t.Fatalf("idle for 29 s, deleted %v", res.Deleted)
	}
	clk.advance(time.Second)
	if res := reconcile(t, rm); !slices.Equal(res.Deleted, []string{"wc-taskmanager-0"}) {
		t.Fatalf("idle for 30 s, deleted %v", res.Deleted)
	}
	if got := podNames(t, client); len(got) != 0 {
		t.Fatalf("no jobs, pods %v left", got)
	}
}

func TestIdleDeletionKeepsEnoughSlots(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	rm, client, c := newRM(t, testConfig(clk))
	c.setDemand(6)
	reconcile(t, rm)
	kubelet(t, client, c, 2)
	// All three idle, and the demand drops to 3: only one may go (two
	// pods, 4 slots, still cover 3).
	c.setDemand(3)
	reconcile(t, rm)
	clk.advance(time.Minute)
	res := reconcile(t, rm)
	if len(res.Deleted) != 1 {
		t.Fatalf("deleted %v; want exactly one of three idle pods", res.Deleted)
	}
	if got := podNames(t, client); len(got) != 2 {
		t.Fatalf("pods %v", got)
	}
}

func TestEndedPodsReplaced(t *testing.T) {
	for _, phase := range []corev1.PodPhase{corev1.PodFailed, corev1.PodSucceeded} {
		t.Run(string(phase), func(t *testing.T) {
			clk := &clock{t: time.Unix(1000, 0)}
			rm, client, c := newRM(t, testConfig(clk))
			c.setDemand(4)
			reconcile(t, rm)
			kubelet(t, client, c, 2)

			// The TaskManager in pod 0 exits; the JobManager has not
			// noticed yet (its heartbeat timeout has not passed), so it
			// is still registered: its slots must not count.
			ctx := context.Background()
			pod, err := client.CoreV1().Pods(ns).Get(ctx, "wc-taskmanager-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod.Status.Phase = phase
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "taskmanager",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
			if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			res := reconcile(t, rm)
			if !slices.Equal(res.Failed, []string{"wc-taskmanager-0"}) || !slices.Equal(res.Created, []string{"wc-taskmanager-2"}) {
				t.Fatalf("failed %v created %v; want pod 0 replaced by pod 2", res.Failed, res.Created)
			}
			if got := podNames(t, client); !slices.Equal(got, []string{"wc-taskmanager-1", "wc-taskmanager-2"}) {
				t.Fatalf("pods %v", got)
			}
		})
	}
}

func TestMaxCount(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	cfg := testConfig(clk)
	cfg.MaxTaskManagers = 2
	rm, client, c := newRM(t, cfg)
	c.setDemand(100)
	reconcile(t, rm)
	reconcile(t, rm)
	if got := podNames(t, client); len(got) != 2 {
		t.Fatalf("max-count 2, pods %v", got)
	}
}

// A JobManager that took over (a restarted pod, or a new leader) adopts
// the cluster's pods and names new ones after them.
func TestAdoptsExistingPods(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	rm, client, c := newRM(t, testConfig(clk))
	c.setDemand(4)
	reconcile(t, rm)
	kubelet(t, client, c, 2)

	rm2, err := New(client, c, testConfig(clk))
	if err != nil {
		t.Fatal(err)
	}
	if res := reconcile(t, rm2); len(res.Created) != 0 {
		t.Fatalf("new resource manager created %v beside the existing pods", res.Created)
	}
	c.setDemand(6)
	if res := reconcile(t, rm2); !slices.Equal(res.Created, []string{"wc-taskmanager-2"}) {
		t.Fatalf("created %v", res.Created)
	}
	// Pods of another cluster in the namespace are not its business.
	other := testConfig(clk)
	other.ClusterID = "other"
	rm3, err := New(client, newFakeCluster(), other)
	if err != nil {
		t.Fatal(err)
	}
	if res := reconcile(t, rm3); res.Supply != 0 || len(res.Deleted)+len(res.Created)+len(res.Failed) != 0 {
		t.Fatalf("other cluster: %+v", res)
	}
}

// Jobs start and end over time: the pods follow the demand, and there are
// never more than the demand needs once the idle ones have timed out.
func TestPodsFollowJobs(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	rm, client, c := newRM(t, testConfig(clk))
	// job slots over time; each step lasts 10 s; idle timeout 30 s.
	demand := []int{0, 3, 3, 7, 7, 7, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 5}
	maxPods := 0
	for i, d := range demand {
		c.setDemand(d)
		// The TaskManagers' slots are used up to the demand, in name order.
		kubelet(t, client, c, 2)
		left := d
		for _, tm := range c.TaskManagers() {
			take := min(left, tm.Slots)
			c.mu.Lock()
			c.tms[tm.ResourceID].FreeSlots = tm.Slots - take
			c.mu.Unlock()
			left -= take
		}
		reconcile(t, rm)
		n := len(podNames(t, client))
		maxPods = max(maxPods, n)
		need := (d + 1) / 2
		if n < need {
			t.Fatalf("step %d: demand %d, %d pods", i, d, n)
		}
		if n > 4 {
			t.Fatalf("step %d: %d pods, more than the peak demand needs", i, n)
		}
		clk.advance(10 * time.Second)
	}
	if maxPods != 4 {
		t.Fatalf("peak %d pods, want 4 for 7 slots", maxPods)
	}
	// After the end: 5 slots -> 3 pods; the last long idle phase emptied it.
	if got := podNames(t, client); len(got) != 3 {
		t.Fatalf("pods at the end %v", got)
	}
}

func TestRunCreatesConfigMapAndPods(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	cfg := testConfig(clk)
	cfg.Now = nil
	cfg.PollInterval = 10 * time.Millisecond
	if err := cfg.Core.Set("jobmanager.rpc.address", "wc-jobmanager"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Core.Set("security.token", "s3cret-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	rm, client, c := newRM(t, cfg)
	c.setDemand(3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rm.Run(ctx) }()
	for len(podNames(t, client)) < 2 {
		if ctx.Err() != nil {
			t.Fatal("no pods within 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "wc-taskmanager-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := cm.Data[ConfigFile]
	if strings.Contains(data, "s3cret-0123456789abcdef") {
		t.Fatalf("the token is in the ConfigMap:\n%s", data)
	}
	path := t.TempDir() + "/config.yaml"
	writeFile(t, path, data)
	loaded, err := config.LoadFile(path)
	if err != nil {
		t.Fatalf("the TaskManagers' config does not load: %v\n%s", err, data)
	}
	if got := config.JobManagerRPCAddress.Get(loaded); got != "wc-jobmanager" {
		t.Fatalf("jobmanager.rpc.address %q in\n%s", got, data)
	}
}

func TestOwnerFor(t *testing.T) {
	ctx := context.Background()
	tr := true
	dep := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "jm", UID: "dep-uid", Controller: &tr}
	rsRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "jm-abc", UID: "rs-uid", Controller: &tr}
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "jm-abc-1", Namespace: ns, UID: "pod-uid", OwnerReferences: []metav1.OwnerReference{rsRef}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns, UID: "bare-uid"}},
	)
	if _, err := client.AppsV1().ReplicaSets(ns).Create(ctx, replicaSet("jm-abc", dep), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := OwnerFor(ctx, client, ns, "jm-abc-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != "Deployment" || got.Name != "jm" || got.UID != "dep-uid" {
		t.Fatalf("owner %+v, want the Deployment", got)
	}
	got, err = OwnerFor(ctx, client, ns, "bare")
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != "Pod" || got.Name != "bare" || got.UID != "bare-uid" {
		t.Fatalf("owner %+v, want the pod", got)
	}
	if _, err := OwnerFor(ctx, client, ns, "missing"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing pod: %v", err)
	}
}

func ExampleResourceManager_TaskManagerPod() {
	rm, _ := New(fake.NewClientset(), newFakeCluster(), Config{
		Options: Options{ClusterID: "wc", Namespace: "default", Image: "weir:1"}, Slots: 4, Core: config.New()})
	pod := rm.TaskManagerPod("wc-taskmanager-0")
	fmt.Println(strings.Join(pod.Spec.Containers[0].Args, " "))
	// Output: taskmanager --config /opt/weir/conf/config.yaml --slots 4 --bind 0.0.0.0 --rpc-port 6122 -D taskmanager.host=$(POD_IP) -D taskmanager.resource-id=wc-taskmanager-0
}

func TestPodsThatDoNotRegisterReplaced(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	cfg := testConfig(clk)
	cfg.RegistrationTimeout = time.Minute
	rm, client, c := newRM(t, cfg)
	c.setDemand(4)
	reconcile(t, rm) // pods 0 and 1
	c.register("wc-taskmanager-1", 2)
	clk.advance(time.Minute - time.Millisecond)
	if res := reconcile(t, rm); len(res.Failed)+len(res.Created) != 0 {
		t.Fatalf("before the registration timeout: %+v", res)
	}
	clk.advance(time.Millisecond)
	res := reconcile(t, rm)
	if !slices.Equal(res.Failed, []string{"wc-taskmanager-0"}) || !slices.Equal(res.Created, []string{"wc-taskmanager-2"}) {
		t.Fatalf("after the registration timeout failed %v created %v; want pod 0 replaced by pod 2", res.Failed, res.Created)
	}
	// The registered one stays, and the replacement gets its own time.
	clk.advance(time.Minute - time.Millisecond)
	if res := reconcile(t, rm); len(res.Failed) != 0 {
		t.Fatalf("failed %v", res.Failed)
	}
	if got := podNames(t, client); !slices.Equal(got, []string{"wc-taskmanager-1", "wc-taskmanager-2"}) {
		t.Fatalf("pods %v", got)
	}
}

// standbyCluster is a JobManager that does not lead: it sees no jobs.
type standbyCluster struct {
	*fakeCluster
	leading bool
}

func (s *standbyCluster) IsLeader() bool { return s.leading }

// TestStandbyLeavesPodsAlone: the resource manager of a standby
// JobManager (high availability) neither deletes the leader's idle
// TaskManagers nor creates any, and acts once it leads.
func TestStandbyLeavesPodsAlone(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	client := fake.NewClientset()
	c := &standbyCluster{fakeCluster: newFakeCluster(), leading: true}
	rm, err := New(client, c, testConfig(clk))
	if err != nil {
		t.Fatal(err)
	}
	c.setDemand(4)
	reconcile(t, rm)
	kubelet(t, client, c.fakeCluster, 2)
	c.leading = false
	c.setDemand(0)
	reconcile(t, rm)
	clk.advance(time.Hour)
	if res := reconcile(t, rm); len(res.Deleted)+len(res.Created) != 0 {
		t.Fatalf("a standby acted: %+v", res)
	}
	if got := podNames(t, client); len(got) != 2 {
		t.Fatalf("pods %v", got)
	}
	// Leading, it starts timing idleness.
	c.leading = true
	reconcile(t, rm)
	clk.advance(time.Hour)
	if res := reconcile(t, rm); len(res.Deleted) != 2 {
		t.Fatalf("leading with no demand, deleted %v; want both idle pods", res.Deleted)
	}
}
