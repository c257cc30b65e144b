package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/weirproject/weir/internal/cluster"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const baseConfig = `
kubernetes.cluster-id: wc
kubernetes.namespace: weir
kubernetes.container.image: weir:test
kubernetes.token-secret: weir-token
kubernetes.taskmanager.idle-timeout: 300ms
kubernetes.resource-manager.poll-interval: 20ms
jobmanager.rpc.port: 0
rest.port: 0
heartbeat.interval: 50ms
heartbeat.timeout: 1s
`

func TestRunRejects(t *testing.T) {
	noClient := func() (kubernetes.Interface, error) { t.Fatal("client made before the checks"); return nil, nil }
	for _, tc := range []struct {
		config string
		args   []string
		env    map[string]string
		want   string
	}{
		{"kubernetes.cluster-id: wc\nkubernetes.container.image: i\n", nil, nil, "kubernetes.token-secret is required"},
		{baseConfig, []string{"-D", "kubernetes.taskmanager.gpus=1"}, nil, `unknown key "kubernetes.taskmanager.gpus"`},
		{baseConfig, []string{"-D", "security.ssl.enabled=true"}, nil, "does not mount TLS files"},
		{baseConfig + "taskmanager.slotz: 2\n", nil, nil, `unknown key "taskmanager.slotz"`},
		{"kubernetes.container.image: i\n", nil, nil, "kubernetes.cluster-id is required"},
		{baseConfig, nil, map[string]string{"WEIR_TOKEN": "s3cret"}, "security.token: 6 characters; a token needs at least 16"},
		{baseConfig, nil, map[string]string{"WEIR_TOKEN": strings.Repeat(" ", 20)}, "security.token: 20 characters, all white space"},
		{baseConfig, nil, map[string]string{"WEIR_TOKEN": "0123456789abcdef0123\n"}, "security.token: white space at its start or end"},
	} {
		args := append([]string{"--config", writeConfig(t, tc.config)}, tc.args...)
		err := run(context.Background(), args, envOf(tc.env), io.Discard, io.Discard, noClient)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// The command runs a real JobManager and the resource manager against a
// fake API server: the TaskManagers' ConfigMap appears, owned by the
// JobManager's pod; a TaskManager pod that it adopts, whose (real,
// in-process) TaskManager registered under the pod's name, is deleted once
// idle, since no job needs it.
func TestRunDeletesIdleAdoptedPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	labels := map[string]string{"app": "wc", "component": "taskmanager", "type": "weir-native-kubernetes"}
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager-0", Namespace: "weir", UID: "jm-uid"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-taskmanager-0", Namespace: "weir", Labels: labels},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	)
	var stdout syncBuffer
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, []string{"--config", writeConfig(t, baseConfig)}, envOf(map[string]string{"POD_NAME": "wc-jobmanager-0"}),
			&stdout, io.Discard, func() (kubernetes.Interface, error) { return client, nil })
	}()
	defer func() {
		stopRun()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	addr := regexp.MustCompile(`jobmanager rpc=(\S+) `)
	var rpcAddr string
	for rpcAddr == "" {
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			rpcAddr = m[1]
		}
		select {
		case <-ctx.Done():
			t.Fatal("the JobManager did not start")
		case err := <-done:
			t.Fatalf("run ended: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}

	// The pod's TaskManager.
	tm, err := cluster.NewTaskManager(cluster.TaskManagerOptions{
		JobManagerAddress: rpcAddr, ResourceID: "wc-taskmanager-0", Slots: 2, BindHost: "127.0.0.1",
		RegistrationTimeout: 10 * time.Second, RPCTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	tmCtx, stopTM := context.WithCancel(ctx)
	tmDone := make(chan error, 1)
	go func() { tmDone <- tm.Run(tmCtx) }()
	defer func() { stopTM(); <-tmDone }()

	start := time.Now()
	for {
		_, err := client.CoreV1().Pods("weir").Get(ctx, "wc-taskmanager-0", metav1.GetOptions{})
		if err != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the idle TaskManager pod was not deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Not before it registered and was idle for the timeout.
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("deleted after %v, before the idle timeout", d)
	}
	cm, err := client.CoreV1().ConfigMaps("weir").Get(ctx, "wc-taskmanager-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := cm.OwnerReferences; len(o) != 1 || o[0].Kind != "Pod" || o[0].UID != "jm-uid" {
		t.Fatalf("ConfigMap owners %v, want the JobManager's pod", o)
	}
	if strings.Contains(cm.Data["config.yaml"], "kubernetes.") {
		t.Fatalf("the TaskManagers' config holds native keys:\n%s", cm.Data["config.yaml"])
	}
}
