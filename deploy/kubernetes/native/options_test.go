package native

import (
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
)

func TestLoadYAMLSplitsNativeAndCoreKeys(t *testing.T) {
	s := NewSettings()
	err := s.LoadYAML("conf.yaml", []byte(`
kubernetes.cluster-id: wordcount
kubernetes:
  container.image: registry.example.com/weir:1.0
  taskmanager:
    cpu: 1500m
    memory: 3Gi
    idle-timeout: 45s
    max-count: 8
    registration-timeout: 2m
taskmanager.numberOfTaskSlots: 4
jobmanager:
  rpc.address: wordcount-jobmanager
`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.ClusterID != "wordcount" || o.Image != "registry.example.com/weir:1.0" || o.CPU.String() != "1500m" ||
		o.Memory.String() != "3Gi" || o.IdleTimeout != 45*time.Second || o.MaxTaskManagers != 8 || o.RegistrationTimeout != 2*time.Minute ||
		o.PollInterval != time.Second || o.ImagePullPolicy != "IfNotPresent" {
		t.Fatalf("options %+v", o)
	}
	if config.NumTaskSlots.Get(s.Core) != 4 || config.JobManagerRPCAddress.Get(s.Core) != "wordcount-jobmanager" {
		t.Fatalf("core %v", s.Core.Map())
	}
	for _, k := range s.Core.Keys() {
		if IsNativeKey(k) {
			t.Fatalf("core holds %s", k)
		}
	}
}

func TestLoadYAMLRejects(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"kubernetes.taskmanager.cpus: 2", `unknown key "kubernetes.taskmanager.cpus" (conf.yaml:1)`},
		{"taskmanager.slots: 2", `unknown key "taskmanager.slots"`},
		{"parallelism.default: many", `invalid value "many" for "parallelism.default"`},
		{"a: 1\na: 2", `duplicate key "a"`},
		{"kubernetes.cluster-id: x\nkubernetes:\n  cluster-id: y", `duplicate key "kubernetes.cluster-id"`},
	} {
		err := NewSettings().LoadYAML("conf.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestOptionsChecked(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{KeyImage: "i"}, "kubernetes.cluster-id is required"},
		{map[string]string{KeyClusterID: "c"}, "kubernetes.container.image is required"},
		{map[string]string{KeyClusterID: "Word_Count", KeyImage: "i"}, "not a DNS-1123 label"},
		{map[string]string{KeyClusterID: strings.Repeat("a", 41), KeyImage: "i"}, "longer than 40"},
		{map[string]string{KeyClusterID: "c", KeyImage: "i", KeyTMCPU: "lots"}, "kubernetes.taskmanager.cpu"},
		{map[string]string{KeyClusterID: "c", KeyImage: "i", KeyTMMemory: "-1Gi"}, "positive quantity"},
		{map[string]string{KeyClusterID: "c", KeyImage: "i", KeyTMIdleTimeout: "0s"}, "positive Go duration"},
		{map[string]string{KeyClusterID: "c", KeyImage: "i", KeyImagePullPolicy: "Sometimes"}, "Always, IfNotPresent or Never"},
		{map[string]string{KeyClusterID: "c", KeyImage: "i", KeyTMMaxCount: "-1"}, "whole number"},
	} {
		s := NewSettings()
		for k, v := range tc.set {
			if err := s.Set("-D", k, v); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.Options()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.set, err, tc.want)
		}
	}
}
