// Package manifests holds no code: its tests check the Kubernetes
// manifests in the directories next to them.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/weirproject/weir/config"
	nativemode "github.com/weirproject/weir/deploy/kubernetes/native"
)

// The modes, one directory each.
var dirs = []string{"session", "session-ha", "application", "native"}

// Secrets the manifests use but do not hold: docs/kubernetes.md says how
// to create them.
var externalSecrets = []string{"weir-token"}

// strict decodes with client-go's scheme and fails on unknown and
// duplicate fields.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// decode returns every object of a multi-document YAML file, decoded
// strictly into its typed Go struct.
func decode(data []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if isEmpty(doc) {
			continue
		}
		obj, _, err := strict.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}

// isEmpty reports whether a YAML document holds only comments.
func isEmpty(doc []byte) bool {
	for _, l := range strings.Split(string(doc), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}

// set is the objects of one directory, by kind and name.
type set struct {
	dir         string
	deployments map[string]*appsv1.Deployment
	jobs        map[string]*batchv1.Job
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	accounts    map[string]*corev1.ServiceAccount
	roles       map[string]*rbacv1.Role
	bindings    map[string]*rbacv1.RoleBinding
	claims      map[string]*corev1.PersistentVolumeClaim
}

// pods are the pod templates of the deployments and jobs.
func (s *set) pods() map[string]*corev1.PodTemplateSpec {
	m := map[string]*corev1.PodTemplateSpec{}
	for n, d := range s.deployments {
		m["deployment/"+n] = &d.Spec.Template
	}
	for n, j := range s.jobs {
		m["job/"+n] = &j.Spec.Template
	}
	return m
}

func load(t *testing.T, dir string) *set {
	t.Helper()
	s := &set{dir: dir, deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		accounts: map[string]*corev1.ServiceAccount{}, roles: map[string]*rbacv1.Role{},
		bindings: map[string]*rbacv1.RoleBinding{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no manifests (%v)", dir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, o := range objs {
			var name, ns string
			switch o := o.(type) {
			case *appsv1.Deployment:
				name, ns = o.Name, o.Namespace
				s.deployments[name] = o
			case *batchv1.Job:
				name, ns = o.Name, o.Namespace
				s.jobs[name] = o
			case *corev1.Service:
				name, ns = o.Name, o.Namespace
				s.services[name] = o
			case *corev1.ConfigMap:
				name, ns = o.Name, o.Namespace
				s.configMaps[name] = o
			case *corev1.ServiceAccount:
				name, ns = o.Name, o.Namespace
				s.accounts[name] = o
			case *rbacv1.Role:
				name, ns = o.Name, o.Namespace
				s.roles[name] = o
			case *rbacv1.RoleBinding:
				name, ns = o.Name, o.Namespace
				s.bindings[name] = o
			case *corev1.PersistentVolumeClaim:
				name, ns = o.Name, o.Namespace
				s.claims[name] = o
			default:
				t.Errorf("%s: unexpected kind %T", f, o)
			}
			if ns != "" {
				t.Errorf("%s: %s sets namespace %q; the manifests go into the namespace of kubectl -n", f, name, ns)
			}
		}
	}
	return s
}

func TestStrictDecodingCatchesMistakes(t *testing.T) {
	good := "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  ports:\n    - port: 1\n"
	if _, err := decode([]byte("# comment only\n---\n" + good)); err != nil {
		t.Fatalf("valid Service: %v", err)
	}
	for _, bad := range []string{
		strings.Replace(good, "  ports:", "  portz:", 1),                                     // unknown field
		strings.Replace(good, "    - port: 1", "    - port: one", 1),                         // wrong type
		strings.Replace(good, "  name: a", "  name: a\n  name: b", 1),                        // duplicate field
		strings.Replace(good, "kind: Service", "kind: Servize", 1),                           // unknown kind
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  replica: 1\n", // typo
	} {
		if _, err := decode([]byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

func TestManifests(t *testing.T) {
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			s := load(t, dir)
			checkDeployments(t, s)
			checkServices(t, s)
			checkPods(t, s)
			checkRBAC(t, s)
			checkConfig(t, s)
		})
	}
}

func checkDeployments(t *testing.T, s *set) {
	if len(s.deployments) == 0 {
		t.Error("no Deployment")
	}
	for n, d := range s.deployments {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			t.Errorf("deployment %s: selector: %v", n, err)
			continue
		}
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("deployment %s: selector %v does not match its pod labels %v", n, sel, d.Spec.Template.Labels)
		}
	}
}

func checkServices(t *testing.T, s *set) {
	if len(s.services) == 0 {
		t.Error("no Service")
	}
	for n, svc := range s.services {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var matched []string
		for pn, p := range s.pods() {
			if len(svc.Spec.Selector) > 0 && sel.Matches(labels.Set(p.Labels)) {
				matched = append(matched, pn)
				for _, port := range svc.Spec.Ports {
					if !hasPort(p.Spec, port.TargetPort, port.Port) {
						t.Errorf("service %s: port %s targets %s, which %s's containers do not expose", n, port.Name, port.TargetPort.String(), pn)
					}
				}
			}
		}
		if len(matched) == 0 {
			t.Errorf("service %s: selector %v matches no pod template", n, svc.Spec.Selector)
		}
		if len(matched) > 1 {
			t.Errorf("service %s selects the pods of %v; want one workload", n, matched)
		}
	}
}

// hasPort reports whether a container of spec exposes target (a port
// name or number; unset means the Service's port).
func hasPort(spec corev1.PodSpec, target intstr.IntOrString, port int32) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			switch {
			case target.Type == intstr.String && target.StrVal != "" && p.Name == target.StrVal,
				target.Type == intstr.Int && target.IntVal != 0 && p.ContainerPort == target.IntVal,
				target.Type == intstr.Int && target.IntVal == 0 && p.ContainerPort == port:
				return true
			}
		}
	}
	return false
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func checkPods(t *testing.T, s *set) {
	for pn, p := range s.pods() {
		spec := p.Spec
		if spec.ServiceAccountName != "" && s.accounts[spec.ServiceAccountName] == nil {
			t.Errorf("%s: service account %q is not in %s", pn, spec.ServiceAccountName, s.dir)
		}
		volumes := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = v
			switch {
			case v.ConfigMap != nil:
				cm := s.configMaps[v.ConfigMap.Name]
				if cm == nil {
					t.Errorf("%s: volume %s mounts ConfigMap %q, which is not in %s", pn, v.Name, v.ConfigMap.Name, s.dir)
				}
				for _, it := range v.ConfigMap.Items {
					if cm != nil && cm.Data[it.Key] == "" {
						t.Errorf("%s: ConfigMap %s has no key %q", pn, v.ConfigMap.Name, it.Key)
					}
				}
			case v.PersistentVolumeClaim != nil:
				if s.claims[v.PersistentVolumeClaim.ClaimName] == nil {
					t.Errorf("%s: volume %s claims %q, which is not in %s", pn, v.Name, v.PersistentVolumeClaim.ClaimName, s.dir)
				}
			case v.EmptyDir != nil:
			default:
				t.Errorf("%s: volume %s of an unexpected type", pn, v.Name)
			}
		}
		for _, c := range spec.Containers {
			where := pn + "/" + c.Name
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !slices.Contains(externalSecrets, e.ValueFrom.SecretKeyRef.Name) {
					t.Errorf("%s: env %s from Secret %q, which is neither in %s nor documented", where, e.Name, e.ValueFrom.SecretKeyRef.Name, s.dir)
				}
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					ref := e.ValueFrom.ConfigMapKeyRef
					if cm := s.configMaps[ref.Name]; cm == nil || cm.Data[ref.Key] == "" {
						t.Errorf("%s: env %s from ConfigMap %s key %s, which is not in %s", where, e.Name, ref.Name, ref.Key, s.dir)
					}
				}
			}
			mounts := map[string]corev1.Volume{}
			for _, m := range c.VolumeMounts {
				v, ok := volumes[m.Name]
				if !ok {
					t.Errorf("%s: mounts volume %q, which the pod does not have", where, m.Name)
				}
				mounts[m.MountPath] = v
			}
			for _, a := range append(slices.Clone(c.Command), c.Args...) {
				for _, m := range varRef.FindAllStringSubmatch(a, -1) {
					if !env[m[1]] {
						t.Errorf("%s: argument %q refers to $(%s), which the container's env does not define", where, a, m[1])
					}
				}
			}
			checkCommand(t, s, where, c, mounts)
		}
	}
}

// weirFlags are the flags of the weir subcommands the manifests run, as
// declared in cmd/weir (checked against its sources by
// TestFlagsDeclared).
var weirFlags = map[string][]string{
	"jobmanager":  {"--config", "-D", "--define", "--token", "--rpc-port", "--rest-port", "--bind"},
	"taskmanager": {"--config", "-D", "--define", "--token", "--jobmanager", "--slots", "--bind", "--rpc-port"},
	"run":         {"--config", "-D", "--define", "--token", "--jobmanager", "-d", "--detached", "-p", "--parallelism", "-s", "--fromSavepoint", "-n", "--allowNonRestoredState", "--poll"},
}

// programFlags are the flags of a job program in application mode
// (stream/appmode.go, stream/env.go) and of examples/wordcount, the
// program of the application manifests. The Go flag package takes -x and
// --x alike.
var programFlags = map[string][]string{
	"jobmanager": {"config", "D", "p", "parallelism", "plan", "from-savepoint", "allow-non-restored-state",
		"checkpoint-interval", "checkpoint-dir", "checkpoint-mode", "state-backend",
		"input", "output", "mode", "monitor-interval", "socket", "count-parallelism", "sink", "jdbc-url", "jdbc-table", "jdbc-mode", "jdbc-sink-id"},
	"taskmanager": {"jobmanager", "slots", "D", "config"},
}

// programPath is where the job program image keeps the program.
const programPath = "/opt/weir/usrlib/wordcount"

var boolFlags = []string{"-d", "--detached", "-n", "--allowNonRestoredState", "allow-non-restored-state"}

// checkCommand checks what a container runs: weir with a known
// subcommand and flags, or weir-kubernetes; -D keys known to the loader
// that the command uses; the --config file present in a mounted ConfigMap.
func checkCommand(t *testing.T, s *set, where string, c corev1.Container, mounts map[string]corev1.Volume) {
	args := append(slices.Clone(c.Command), c.Args...)
	if len(args) == 0 {
		t.Errorf("%s: no command", where)
		return
	}
	var flags []string
	native := false
	switch args[0] {
	case "weir":
		if len(args) < 2 || weirFlags[args[1]] == nil {
			t.Errorf("%s: weir %v: unknown subcommand", where, args[1:])
			return
		}
		flags = weirFlags[args[1]]
		args = args[2:]
	case "weir-kubernetes":
		native = true
		flags = []string{"--config", "-D"}
		args = args[1:]
	case programPath:
		if len(args) < 2 || programFlags[args[1]] == nil {
			t.Errorf("%s: %v: expected the role jobmanager or taskmanager", where, args)
			return
		}
		for _, f := range programFlags[args[1]] {
			flags = append(flags, "-"+f, "--"+f)
		}
		args = args[2:]
	default:
		t.Errorf("%s: runs %q; expected weir, weir-kubernetes or %s", where, args[0], programPath)
		return
	}
	// The pods listen beyond loopback, which needs the token: weir and
	// weir-kubernetes read WEIR_TOKEN, a program takes it as -D.
	hasToken := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "WEIR_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
	})
	if c.Command[0] == programPath {
		hasToken = hasToken && slices.Contains(c.Args, "security.token=$(WEIR_TOKEN)")
	}
	if !hasToken {
		t.Errorf("%s: does not get the cluster's token from the Secret", where)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break // the program of weir run, and its arguments
		}
		name, value, hasValue := strings.Cut(a, "=")
		if !slices.Contains(flags, name) {
			t.Errorf("%s: unknown flag %s", where, name)
			continue
		}
		if !hasValue && !slices.Contains(boolFlags, name) {
			i++
			if i >= len(args) {
				t.Errorf("%s: %s without a value", where, name)
				continue
			}
			value = args[i]
		}
		switch name {
		case "-D", "--define":
			k, v, err := config.ParseDefinition(value)
			if err != nil {
				t.Errorf("%s: -D %q: %v", where, value, err)
				continue
			}
			v = varRef.ReplaceAllString(v, "10.1.2.3")
			if native {
				err = nativemode.NewSettings().Set("-D", k, v)
			} else {
				err = config.New().Set(k, v)
			}
			if err != nil {
				t.Errorf("%s: -D %s: %v", where, value, err)
			}
		case "--config":
			v, ok := mounts[path.Dir(value)]
			if !ok || v.ConfigMap == nil {
				t.Errorf("%s: --config %s: no ConfigMap is mounted at %s", where, value, path.Dir(value))
				continue
			}
			if cm := s.configMaps[v.ConfigMap.Name]; cm == nil || cm.Data[path.Base(value)] == "" {
				t.Errorf("%s: --config %s: ConfigMap %s has no key %s", where, value, v.ConfigMap.Name, path.Base(value))
			}
		}
	}
}

func checkRBAC(t *testing.T, s *set) {
	for n, b := range s.bindings {
		if b.RoleRef.Kind != "Role" || s.roles[b.RoleRef.Name] == nil {
			t.Errorf("rolebinding %s: role %s %q is not in %s", n, b.RoleRef.Kind, b.RoleRef.Name, s.dir)
		}
		for _, sub := range b.Subjects {
			if sub.Kind != "ServiceAccount" || s.accounts[sub.Name] == nil {
				t.Errorf("rolebinding %s: subject %s %q is not in %s", n, sub.Kind, sub.Name, s.dir)
			}
		}
	}
	if len(s.accounts) == 0 {
		t.Error("no ServiceAccount")
	}
}

// allows reports whether the Roles bound to account grant verb on
// group/resource.
func (s *set) allows(account, group, resource, verb string) bool {
	for _, b := range s.bindings {
		if !slices.ContainsFunc(b.Subjects, func(sub rbacv1.Subject) bool { return sub.Kind == "ServiceAccount" && sub.Name == account }) {
			continue
		}
		r := s.roles[b.RoleRef.Name]
		if r == nil {
			continue
		}
		for _, rule := range r.Rules {
			if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) && slices.Contains(rule.Verbs, verb) {
				return true
			}
		}
	}
	return false
}

// checkConfig loads the configuration ConfigMap with the loader of the
// command that reads it, and checks the addresses and the mode's keys.
func checkConfig(t *testing.T, s *set) {
	cm := s.configMaps[map[string]string{
		"session": "weir-config", "session-ha": "weir-ha-config", "application": "wordcount-config", "native": "weir-native-config",
	}[s.dir]]
	if cm == nil {
		t.Fatalf("%s: no configuration ConfigMap", s.dir)
	}
	data := cm.Data["config.yaml"]
	var core *config.Configuration
	var nativeOpts nativemode.Options
	if s.dir == "native" {
		st := nativemode.NewSettings()
		if err := st.LoadYAML(cm.Name+"/config.yaml", []byte(data)); err != nil {
			t.Fatalf("the configuration does not load: %v", err)
		}
		var err error
		if nativeOpts, err = st.Options(); err != nil {
			t.Fatal(err)
		}
		core = st.Core
	} else {
		f := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		if core, err = config.LoadFile(f); err != nil {
			t.Fatalf("the configuration does not load with weir's loader: %v", err)
		}
	}

	// The addresses that TaskManagers and clients dial are Services of
	// the directory, on the ports the JobManager listens on.
	for _, a := range []struct {
		host string
		port int
		what string
	}{
		{config.JobManagerRPCAddress.Get(core), config.JobManagerRPCPort.Get(core), "jobmanager.rpc"},
		{config.RESTAddress.Get(core), config.RESTPort.Get(core), "rest"},
	} {
		svc := s.services[a.host]
		if svc == nil {
			t.Errorf("%s.address %q is not a Service of %s", a.what, a.host, s.dir)
			continue
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int(p.Port) == a.port }) {
			t.Errorf("%s.port %d is not a port of Service %s", a.what, a.port, a.host)
		}
		behind := 0
		for pn, p := range s.pods() {
			if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels)) {
				behind++
				if !hasPort(p.Spec, intstr.FromInt(a.port), int32(a.port)) {
					t.Errorf("%s.port %d: %s behind Service %s does not expose it", a.what, a.port, pn, a.host)
				}
			}
		}
		if behind == 0 {
			t.Errorf("no JobManager behind Service %s", a.host)
		}
	}
	if bind := config.JobManagerBindHost.Get(core); bind != "0.0.0.0" {
		t.Errorf("jobmanager.bind-host %q: in a pod the JobManager must listen on 0.0.0.0", bind)
	}

	switch s.dir {
	case "session-ha":
		checkHA(t, s, core)
	case "native":
		checkNative(t, s, core, nativeOpts)
	default:
		if config.HAType.Get(core) != config.HATypeNone {
			t.Errorf("%s is not an HA setup, yet high-availability.type is %s", s.dir, config.HAType.Get(core))
		}
	}
}

// checkHA: etcd, two JobManagers, and the storageDir and checkpoints on a
// shared volume that the pods that read and write them mount.
func checkHA(t *testing.T, s *set, core *config.Configuration) {
	if config.HAType.Get(core) != config.HATypeEtcd || config.HAEtcdEndpoints.Get(core) == "" {
		t.Errorf("high-availability.type %q endpoints %q; want etcd and endpoints", config.HAType.Get(core), config.HAEtcdEndpoints.Get(core))
	}
	jm := s.deployments["weir-ha-jobmanager"]
	if jm == nil || jm.Spec.Replicas == nil || *jm.Spec.Replicas < 2 {
		t.Fatalf("want at least two JobManager replicas")
	}
	for _, c := range []struct{ key, value, deployment string }{
		{"high-availability.storageDir", config.HAStorageDir.Get(core), "weir-ha-jobmanager"},
		{"state.checkpoints.dir", config.CheckpointsDir.Get(core), "weir-ha-jobmanager"},
		{"state.checkpoints.dir", config.CheckpointsDir.Get(core), "weir-ha-taskmanager"},
	} {
		u, err := url.Parse(c.value)
		if err != nil || u.Scheme != "file" {
			t.Errorf("%s %q: want a file:// URI on the shared volume", c.key, c.value)
			continue
		}
		d := s.deployments[c.deployment]
		if d == nil {
			t.Errorf("no Deployment %s", c.deployment)
			continue
		}
		if !onSharedVolume(s, d.Spec.Template.Spec, u.Path) {
			t.Errorf("%s %s: %s does not mount a ReadWriteMany claim above it", c.key, u.Path, c.deployment)
		}
	}
}

func onSharedVolume(s *set, spec corev1.PodSpec, p string) bool {
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if !strings.HasPrefix(p+"/", strings.TrimSuffix(m.MountPath, "/")+"/") {
				continue
			}
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim != nil {
					pvc := s.claims[v.PersistentVolumeClaim.ClaimName]
					if pvc != nil && slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
						return true
					}
				}
			}
		}
	}
	return false
}

// checkNative: the JobManager runs weir-kubernetes with a service account
// whose Role allows what the resource manager does, and the TaskManager
// pods it would create reach the JobManager's Service.
func checkNative(t *testing.T, s *set, core *config.Configuration, o nativemode.Options) {
	jm := s.deployments["weir-native-jobmanager"]
	if jm == nil {
		t.Fatal("no Deployment weir-native-jobmanager")
	}
	if r := jm.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("the native JobManager must have exactly one replica: its resource manager is not leader-elected")
	}
	spec := jm.Spec.Template.Spec
	if spec.Containers[0].Image != o.Image {
		t.Errorf("kubernetes.container.image %q differs from the JobManager's image %q", o.Image, spec.Containers[0].Image)
	}
	for _, need := range []struct{ group, resource, verb string }{
		{"", "pods", "list"}, {"", "pods", "create"}, {"", "pods", "delete"}, {"", "pods", "get"},
		{"", "configmaps", "create"}, {"", "configmaps", "update"},
		{"apps", "replicasets", "get"}, {"apps", "deployments", "get"},
	} {
		if !s.allows(spec.ServiceAccountName, need.group, need.resource, need.verb) {
			t.Errorf("service account %q may not %s %s (group %q), which the resource manager does", spec.ServiceAccountName, need.verb, need.resource, need.group)
		}
	}
	env := map[string]bool{}
	for _, e := range spec.Containers[0].Env {
		env[e.Name] = true
	}
	if !env["POD_NAME"] || !env["POD_NAMESPACE"] {
		t.Error("the JobManager needs POD_NAME (the owner of the TaskManager pods) and POD_NAMESPACE")
	}
	// A TaskManager pod as the resource manager would create it.
	o.Namespace = "default"
	rm, err := nativemode.New(fake.NewClientset(), nil, nativemode.Config{Options: o, Slots: max(1, config.NumTaskSlots.Get(core)), Core: core})
	if err != nil {
		t.Fatal(err)
	}
	pod := rm.TaskManagerPod("weir-native-taskmanager-0")
	for _, svc := range s.services {
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			t.Errorf("service %s selects the TaskManager pods", svc.Name)
		}
	}
	for _, e := range pod.Spec.Containers[0].Env {
		if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && !slices.Contains(externalSecrets, r.SecretKeyRef.Name) {
			t.Errorf("TaskManager pods read Secret %q, which is not documented", r.SecretKeyRef.Name)
		}
	}
	yaml, err := rm.TaskManagerConfigYAML()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "tm.yaml")
	if err := os.WriteFile(f, yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	tmCfg, err := config.LoadFile(f)
	if err != nil {
		t.Fatalf("the TaskManagers' configuration does not load: %v", err)
	}
	if s.services[config.JobManagerRPCAddress.Get(tmCfg)] == nil {
		t.Errorf("TaskManager pods dial %s, which is not a Service", config.JobManagerRPCAddress.Get(tmCfg))
	}
}

// The flags the test accepts are declared by cmd/weir, and by the stream
// package and examples/wordcount for the application's program.
func TestFlagsDeclared(t *testing.T) {
	read := func(files ...string) string {
		var src strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join("..", "..", "..", f))
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
		return src.String()
	}
	weir := read("cmd/weir/jobmanager.go", "cmd/weir/taskmanager.go", "cmd/weir/run.go")
	for sub, flags := range weirFlags {
		for _, f := range flags {
			if name := strings.TrimLeft(f, "-"); !strings.Contains(weir, strconv.Quote(name)) {
				t.Errorf("weir %s %s: cmd/weir declares no flag %q", sub, f, name)
			}
		}
	}
	program := map[string]string{
		"jobmanager":  read("stream/env.go", "examples/wordcount/main.go"),
		"taskmanager": read("stream/appmode.go"),
	}
	for role, flags := range programFlags {
		for _, name := range flags {
			if !strings.Contains(program[role], strconv.Quote(name)) {
				t.Errorf("wordcount %s -%s: not declared", role, name)
			}
		}
	}
}
