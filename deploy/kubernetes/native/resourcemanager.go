// Package native is weir's native Kubernetes mode: a resource manager that
// runs next to the JobManager and starts TaskManager pods as jobs need
// slots, and deletes them when they have been idle for a while, as Flink's
// native Kubernetes integration does.
//
// The resource manager sees the JobManager only through [Cluster] (the
// slots that the unfinished jobs need, and the registered TaskManagers),
// and Kubernetes only through a kubernetes.Interface, so that tests drive
// it with a fake Cluster and client-go's fake clientset. It lives in its
// own module (deploy/kubernetes) so that client-go never becomes a
// dependency of the core module.
package native

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/cluster"
)

// Cluster is what the resource manager needs of a JobManager.
// *cluster.JobManager satisfies it through [JobManagerCluster].
type Cluster interface {
	// SlotDemand is the number of slots that the jobs which have not
	// ended need.
	SlotDemand() int
	// TaskManagers are the registered TaskManagers. A TaskManager that
	// runs in a pod of this resource manager has the pod's name as its
	// resource id (taskmanager.resource-id).
	TaskManagers() []cluster.TaskManagerInfo
}

// JobManagerCluster adapts a running JobManager to [Cluster].
func JobManagerCluster(jm *cluster.JobManager) Cluster { return jmCluster{jm} }

type jmCluster struct{ jm *cluster.JobManager }

// leader is a Cluster that may not lead (a standby JobManager): the
// resource manager acts only while it leads.
type leader interface{ IsLeader() bool }

func (c jmCluster) IsLeader() bool { return c.jm.IsLeader() }

func (c jmCluster) SlotDemand() int                         { return c.jm.SlotDemand() }
func (c jmCluster) TaskManagers() []cluster.TaskManagerInfo { return c.jm.Pool().TaskManagers() }

// Labels of every TaskManager pod and of the TaskManagers' ConfigMap.
const (
	LabelApp       = "app"       // the cluster-id
	LabelComponent = "component" // "taskmanager"
	LabelType      = "type"      // "weir-native-kubernetes"

	ComponentTaskManager = "taskmanager"
	TypeNative           = "weir-native-kubernetes"

	// ConfigDir is where TaskManager pods mount their configuration.
	ConfigDir = "/opt/weir/conf"
	// ConfigFile is the key of the configuration in the TaskManagers'
	// ConfigMap, and the file name under ConfigDir.
	ConfigFile = "config.yaml"
	// TaskManagerRPCPort is the port of a TaskManager pod's RPC server.
	TaskManagerRPCPort = 6122
)

// Config configures a [ResourceManager].
type Config struct {
	Options            // the kubernetes.* options; Namespace must be set
	Slots     int      // slots of each TaskManager (taskmanager.numberOfTaskSlots)
	Command   []string // the TaskManager container's command; default ["weir"]
	ExtraArgs []string // appended to the TaskManager's arguments
	Env       []corev1.EnvVar
	// Core is the configuration the TaskManagers get, written into the
	// ConfigMap <cluster-id>-taskmanager-config. security.token is left
	// out of it: TaskManagers get the token from Options.TokenSecret.
	Core *config.Configuration
	// Owner, when set, becomes the owner of every pod and of the
	// ConfigMap, so that deleting the JobManager's Deployment (or pod)
	// deletes them too.
	Owner *metav1.OwnerReference
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// ResourceManager reconciles TaskManager pods with a JobManager's demand
// for slots. Reconcile is one round; Run repeats it. Its methods must not
// be called concurrently.
type ResourceManager struct {
	client  kubernetes.Interface
	cluster Cluster
	cfg     Config
	log     *slog.Logger

	next      int                  // index of the next pod name; -1 until the pods were first listed
	idleSince map[string]time.Time // registered pod -> when all its slots were first seen free
	seenSince map[string]time.Time // pod not registered yet -> when this resource manager created or first saw it
}

// New returns a resource manager for the pods of cfg.ClusterID in
// cfg.Namespace.
func New(client kubernetes.Interface, c Cluster, cfg Config) (*ResourceManager, error) {
	if cfg.ClusterID == "" || cfg.Image == "" || cfg.Namespace == "" {
		return nil, errors.New("native: the cluster-id, the image and the namespace are required")
	}
	if cfg.Slots < 1 {
		return nil, fmt.Errorf("native: %d slots per TaskManager; need at least 1", cfg.Slots)
	}
	if cfg.CPU.IsZero() {
		cfg.CPU = resource.MustParse("1")
	}
	if cfg.Memory.IsZero() {
		cfg.Memory = resource.MustParse("1Gi")
	}
	if cfg.ImagePullPolicy == "" {
		cfg.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.RegistrationTimeout <= 0 {
		cfg.RegistrationTimeout = 5 * time.Minute
	}
	if len(cfg.Command) == 0 {
		cfg.Command = []string{"weir"}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ResourceManager{
		client: client, cluster: c, cfg: cfg,
		log:       log.With("component", "kubernetes-resource-manager", "cluster-id", cfg.ClusterID),
		next:      -1,
		idleSince: map[string]time.Time{},
		seenSince: map[string]time.Time{},
	}, nil
}

// PodLabels are the labels of the cluster's TaskManager pods.
func (rm *ResourceManager) PodLabels() map[string]string {
	return map[string]string{LabelApp: rm.cfg.ClusterID, LabelComponent: ComponentTaskManager, LabelType: TypeNative}
}

// ConfigMapName is the name of the TaskManagers' ConfigMap.
func (rm *ResourceManager) ConfigMapName() string { return rm.cfg.ClusterID + "-taskmanager-config" }

// Result tells what one round did.
type Result struct {
	Demand  int // slots the jobs need
	Supply  int // registered slots plus the slots of pods not registered yet
	Created []string
	Deleted []string // idle TaskManagers
	Failed  []string // pods that had ended or did not register in time, deleted to be replaced
}

// Reconcile is one round: it deletes the pods that ended or whose
// TaskManager did not register within the registration timeout, creates pods
// while the jobs need more slots than the registered TaskManagers and the
// pods still starting offer, and deletes pods whose TaskManager has had
// all its slots free for the idle timeout, as long as the rest still
// cover the demand.
func (rm *ResourceManager) Reconcile(ctx context.Context) (Result, error) {
	var res Result
	if l, ok := rm.cluster.(leader); ok && !l.IsLeader() {
		// A standby JobManager (high availability) sees no jobs: its
		// demand of 0 must not delete the leader's TaskManagers.
		return res, nil
	}
	now := rm.cfg.Now()
	pods, err := rm.client.CoreV1().Pods(rm.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(rm.PodLabels()).String(),
	})
	if err != nil {
		return res, fmt.Errorf("native: list TaskManager pods: %w", err)
	}
	if rm.next < 0 {
		rm.next = 0
		for _, p := range pods.Items {
			if i, ok := rm.podIndex(p.Name); ok && i >= rm.next {
				rm.next = i + 1
			}
		}
	}

	// Pods that ended (a TaskManager that exited: restartPolicy is Never)
	// are deleted and no longer count; pods being deleted do not count.
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			if err := rm.deletePod(ctx, p); err != nil {
				return res, err
			}
			rm.log.Warn("TaskManager pod ended; deleted, to be replaced if its slots are needed",
				"pod", p.Name, "phase", p.Status.Phase, "reason", podReason(p))
			res.Failed = append(res.Failed, p.Name)
			continue
		}
		live = append(live, p)
	}

	registered := map[string]cluster.TaskManagerInfo{}
	for _, tm := range rm.cluster.TaskManagers() {
		registered[tm.ResourceID] = tm
	}
	// A pod whose TaskManager has not registered within the registration
	// timeout (unschedulable, its image not pulled, the JobManager not
	// reachable) is deleted like one that ended.
	livePods := map[string]bool{}
	started := live[:0]
	for _, p := range live {
		if _, ok := registered[p.Name]; ok {
			delete(rm.seenSince, p.Name)
		} else {
			since, seen := rm.seenSince[p.Name]
			if !seen {
				since = now
				rm.seenSince[p.Name] = now
			}
			if now.Sub(since) >= rm.cfg.RegistrationTimeout {
				if err := rm.deletePod(ctx, p); err != nil {
					return res, err
				}
				rm.log.Warn("TaskManager pod did not register in time; deleted, to be replaced if its slots are needed",
					"pod", p.Name, "phase", p.Status.Phase, "timeout", rm.cfg.RegistrationTimeout)
				delete(rm.seenSince, p.Name)
				res.Failed = append(res.Failed, p.Name)
				continue
			}
			res.Supply += rm.cfg.Slots // starting: its slots are on their way
		}
		livePods[p.Name] = true
		started = append(started, p)
	}
	live = started
	for name := range rm.seenSince {
		if !livePods[name] {
			delete(rm.seenSince, name)
		}
	}
	// The registered slots: those of TaskManagers in live pods, and of
	// TaskManagers that are not this cluster's pods (started otherwise).
	// A TaskManager whose pod ended, is being deleted or is gone counts no
	// more, although the JobManager keeps it until it unregisters or its
	// heartbeats time out: its replacement must not wait for that.
	for id, tm := range registered {
		if _, ours := rm.podIndex(id); ours && !livePods[id] {
			delete(registered, id)
			continue
		}
		res.Supply += tm.Slots
	}
	res.Demand = rm.cluster.SlotDemand()

	// Idle bookkeeping: since when each registered pod has had all its
	// slots free.
	for name := range rm.idleSince {
		if tm, ok := registered[name]; !ok || !livePods[name] || tm.FreeSlots < tm.Slots {
			delete(rm.idleSince, name)
		}
	}
	for _, p := range live {
		if tm, ok := registered[p.Name]; ok && tm.FreeSlots >= tm.Slots {
			if _, seen := rm.idleSince[p.Name]; !seen {
				rm.idleSince[p.Name] = now
			}
		}
	}

	switch {
	case res.Demand > res.Supply:
		n := (res.Demand - res.Supply + rm.cfg.Slots - 1) / rm.cfg.Slots
		if m := rm.cfg.MaxTaskManagers; m > 0 && len(live)+n > m {
			n = max(0, m-len(live))
			rm.log.Warn("jobs need more TaskManagers than kubernetes.taskmanager.max-count allows",
				"demand", res.Demand, "supply", res.Supply, "max", m)
		}
		for range n {
			name, err := rm.createPod(ctx)
			if err != nil {
				return res, err
			}
			res.Created = append(res.Created, name)
		}
	case res.Demand < res.Supply:
		idle := slices.Collect(maps.Keys(rm.idleSince))
		slices.SortFunc(idle, func(a, b string) int {
			return cmp.Or(rm.idleSince[a].Compare(rm.idleSince[b]), cmp.Compare(a, b))
		})
		surplus := res.Supply - res.Demand
		for _, name := range idle {
			tm := registered[name]
			if now.Sub(rm.idleSince[name]) < rm.cfg.IdleTimeout || tm.Slots > surplus {
				continue
			}
			var pod corev1.Pod
			for _, p := range live {
				if p.Name == name {
					pod = p
				}
			}
			if err := rm.deletePod(ctx, pod); err != nil {
				return res, err
			}
			rm.log.Info("deleted idle TaskManager pod", "pod", name, "idle", now.Sub(rm.idleSince[name]),
				"demand", res.Demand, "supply", res.Supply)
			delete(rm.idleSince, name)
			surplus -= tm.Slots
			res.Deleted = append(res.Deleted, name)
		}
	}
	return res, nil
}

// Run creates the TaskManagers' ConfigMap and reconciles every poll
// interval until ctx ends. Errors of a round (the API server unreachable,
// say) are logged and the next round tries again.
func (rm *ResourceManager) Run(ctx context.Context) error {
	t := time.NewTicker(rm.cfg.PollInterval)
	defer t.Stop()
	cmReady := false
	for {
		if !cmReady {
			if err := rm.EnsureConfigMap(ctx); err != nil {
				rm.log.Error("cannot write the TaskManagers' ConfigMap", "err", err)
			} else {
				cmReady = true
			}
		}
		if cmReady {
			res, err := rm.Reconcile(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				rm.log.Error("reconciling TaskManager pods", "err", err)
			case len(res.Created)+len(res.Deleted)+len(res.Failed) > 0:
				rm.log.Info("reconciled TaskManager pods", "demand", res.Demand, "supply", res.Supply,
					"created", res.Created, "deleted", res.Deleted, "failed", res.Failed)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// TaskManagerConfigYAML is the configuration file the TaskManager pods
// get: the core configuration without security.token.
func (rm *ResourceManager) TaskManagerConfigYAML() ([]byte, error) {
	m := rm.cfg.Core.Map()
	delete(m, config.SecurityToken.Key)
	delete(m, config.TaskManagerResourceID.Key) // each pod sets its own
	return yaml.Marshal(m)
}

// EnsureConfigMap creates the TaskManagers' ConfigMap, or updates it to
// the current configuration.
func (rm *ResourceManager) EnsureConfigMap(ctx context.Context) error {
	data, err := rm.TaskManagerConfigYAML()
	if err != nil {
		return fmt.Errorf("native: TaskManager configuration: %w", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: rm.objectMeta(rm.ConfigMapName()),
		Data:       map[string]string{ConfigFile: string(data)},
	}
	cms := rm.client.CoreV1().ConfigMaps(rm.cfg.Namespace)
	_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("native: write ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

func (rm *ResourceManager) objectMeta(name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: rm.cfg.Namespace, Labels: rm.PodLabels()}
	if rm.cfg.Owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{*rm.cfg.Owner}
	}
	return m
}

func (rm *ResourceManager) podName(i int) string {
	return rm.cfg.ClusterID + "-taskmanager-" + strconv.Itoa(i)
}

func (rm *ResourceManager) podIndex(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, rm.cfg.ClusterID+"-taskmanager-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

// createPod creates the next TaskManager pod, skipping names that exist
// already (pods that another JobManager of the cluster created).
func (rm *ResourceManager) createPod(ctx context.Context) (string, error) {
	for range 100 {
		pod := rm.TaskManagerPod(rm.podName(rm.next))
		rm.next++
		_, err := rm.client.CoreV1().Pods(rm.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("native: create TaskManager pod %s: %w", pod.Name, err)
		}
		rm.seenSince[pod.Name] = rm.cfg.Now() // its registration timeout starts now
		rm.log.Info("created TaskManager pod", "pod", pod.Name, "slots", rm.cfg.Slots)
		return pod.Name, nil
	}
	return "", errors.New("native: create TaskManager pod: 100 names in a row exist already")
}

func (rm *ResourceManager) deletePod(ctx context.Context, p corev1.Pod) error {
	opts := metav1.DeleteOptions{}
	if p.UID != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(p.UID))
	}
	err := rm.client.CoreV1().Pods(rm.cfg.Namespace).Delete(ctx, p.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("native: delete TaskManager pod %s: %w", p.Name, err)
	}
	return nil
}

// TaskManagerPod is the pod that runs one TaskManager named name: weir
// taskmanager with the slots, listening on the pod's IP and advertising
// it, its resource id the pod's name, its configuration mounted from the
// ConfigMap, and the CPU and memory as requests and limits.
func (rm *ResourceManager) TaskManagerPod(name string) *corev1.Pod {
	c := rm.cfg
	res := corev1.ResourceList{corev1.ResourceCPU: c.CPU, corev1.ResourceMemory: c.Memory}
	args := []string{"taskmanager",
		"--config", ConfigDir + "/" + ConfigFile,
		"--slots", strconv.Itoa(c.Slots),
		"--bind", "0.0.0.0",
		"--rpc-port", strconv.Itoa(TaskManagerRPCPort),
		"-D", config.TaskManagerHost.Key + "=$(POD_IP)",
		"-D", config.TaskManagerResourceID.Key + "=" + name,
	}
	args = append(args, c.ExtraArgs...)
	env := []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}}
	if c.TokenSecret != "" {
		env = append(env, corev1.EnvVar{Name: "WEIR_TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: c.TokenSecret}, Key: "token"}}})
	}
	env = append(env, c.Env...)
	return &corev1.Pod{
		ObjectMeta: rm.objectMeta(name),
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: c.ServiceAccount,
			// A TaskManager never calls the Kubernetes API.
			AutomountServiceAccountToken: new(false),
			Containers: []corev1.Container{{
				Name:            ComponentTaskManager,
				Image:           c.Image,
				ImagePullPolicy: c.ImagePullPolicy,
				Command:         c.Command,
				Args:            args,
				Env:             env,
				Ports:           []corev1.ContainerPort{{Name: "rpc", ContainerPort: TaskManagerRPCPort, Protocol: corev1.ProtocolTCP}},
				Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
				VolumeMounts:    []corev1.VolumeMount{{Name: "weir-config", MountPath: ConfigDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "weir-config", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: rm.ConfigMapName()}}}}},
		},
	}
}

func podReason(p corev1.Pod) string {
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
		}
	}
	return ""
}
