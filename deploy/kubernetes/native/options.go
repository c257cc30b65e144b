package native

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/weirproject/weir/config"
)

// The native mode's own options. They live here, not in the core's
// catalog (config/options.go), so that the core module knows nothing of
// Kubernetes; LoadConfig takes them out of the same YAML file as the
// core's options, as Flink keeps kubernetes.* in its one configuration.
const (
	KeyClusterID       = "kubernetes.cluster-id"
	KeyNamespace       = "kubernetes.namespace"
	KeyImage           = "kubernetes.container.image"
	KeyImagePullPolicy = "kubernetes.container.image.pull-policy"
	KeyTMCPU           = "kubernetes.taskmanager.cpu"
	KeyTMMemory        = "kubernetes.taskmanager.memory"
	KeyTMIdleTimeout   = "kubernetes.taskmanager.idle-timeout"
	KeyTMMaxCount      = "kubernetes.taskmanager.max-count"
	KeyTMRegTimeout    = "kubernetes.taskmanager.registration-timeout"
	KeyServiceAccount  = "kubernetes.taskmanager.service-account"
	KeyTokenSecret     = "kubernetes.token-secret"
	KeyPollInterval    = "kubernetes.resource-manager.poll-interval"
)

// Options are the kubernetes.* options with their defaults applied.
type Options struct {
	ClusterID           string            // kubernetes.cluster-id: required; names and labels every object
	Namespace           string            // kubernetes.namespace: empty means the JobManager pod's own
	Image               string            // kubernetes.container.image: required; TaskManager pods run it
	ImagePullPolicy     corev1.PullPolicy // kubernetes.container.image.pull-policy
	CPU                 resource.Quantity // kubernetes.taskmanager.cpu: request and limit
	Memory              resource.Quantity // kubernetes.taskmanager.memory: request and limit
	IdleTimeout         time.Duration     // kubernetes.taskmanager.idle-timeout
	MaxTaskManagers     int               // kubernetes.taskmanager.max-count: 0 is no limit
	RegistrationTimeout time.Duration     // kubernetes.taskmanager.registration-timeout
	ServiceAccount      string            // kubernetes.taskmanager.service-account: empty is the namespace's default
	TokenSecret         string            // kubernetes.token-secret: Secret whose key "token" TaskManagers get as WEIR_TOKEN
	PollInterval        time.Duration     // kubernetes.resource-manager.poll-interval
}

type nativeOption struct {
	def  string
	desc string
	set  func(o *Options, v string) error
}

// nativeOptions is the catalog of the kubernetes.* keys.
var nativeOptions = map[string]nativeOption{
	KeyClusterID: {"", "Name of the native cluster: a DNS-1123 label of at most 40 characters. TaskManager pods are named <cluster-id>-taskmanager-<n> and labelled app=<cluster-id>. Required.",
		func(o *Options, v string) error {
			if len(v) > 40 {
				return fmt.Errorf("%q is longer than 40 characters", v)
			}
			if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
				return fmt.Errorf("%q is not a DNS-1123 label: %s", v, strings.Join(errs, "; "))
			}
			o.ClusterID = v
			return nil
		}},
	KeyNamespace: {"", "Namespace of the TaskManager pods. Empty uses the JobManager pod's namespace.",
		func(o *Options, v string) error {
			if v != "" {
				if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
					return fmt.Errorf("%q is not a namespace name: %s", v, strings.Join(errs, "; "))
				}
			}
			o.Namespace = v
			return nil
		}},
	KeyImage: {"", "Container image of the TaskManager pods: one with the weir binary (deploy/docker/Dockerfile). Required.",
		func(o *Options, v string) error { o.Image = v; return nil }},
	KeyImagePullPolicy: {"IfNotPresent", "Pull policy of the TaskManager image: Always, IfNotPresent or Never.",
		func(o *Options, v string) error {
			p := corev1.PullPolicy(v)
			if !slices.Contains([]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}, p) {
				return fmt.Errorf("%q: expected Always, IfNotPresent or Never", v)
			}
			o.ImagePullPolicy = p
			return nil
		}},
	KeyTMCPU: {"1", "CPU of a TaskManager pod, a Kubernetes quantity (1, 500m); its request and its limit.",
		func(o *Options, v string) error { return setQuantity(&o.CPU, v) }},
	KeyTMMemory: {"1Gi", "Memory of a TaskManager pod, a Kubernetes quantity (1Gi, 512Mi); its request and its limit.",
		func(o *Options, v string) error { return setQuantity(&o.Memory, v) }},
	KeyTMIdleTimeout: {"30s", "How long a TaskManager pod whose slots are all free is kept while the jobs need fewer slots than there are, before it is deleted (Go duration).",
		func(o *Options, v string) error { return setDuration(&o.IdleTimeout, v) }},
	KeyTMMaxCount: {"0", "Most TaskManager pods at once; 0 is no limit.",
		func(o *Options, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%q: expected a whole number >= 0", v)
			}
			o.MaxTaskManagers = n
			return nil
		}},
	KeyTMRegTimeout: {"5m", "How long a TaskManager pod may take to register with the JobManager (to be scheduled, pull its image, start and register) before it is deleted, and replaced if its slots are still needed (Go duration).",
		func(o *Options, v string) error { return setDuration(&o.RegistrationTimeout, v) }},
	KeyServiceAccount: {"", "Service account of the TaskManager pods (they need no API access). Empty uses the namespace's default.",
		func(o *Options, v string) error { o.ServiceAccount = v; return nil }},
	KeyTokenSecret: {"", "Name of a Secret whose key \"token\" TaskManager pods get as WEIR_TOKEN, the cluster's security token. Needed whenever the cluster listens beyond loopback, as it does in pods.",
		func(o *Options, v string) error { o.TokenSecret = v; return nil }},
	KeyPollInterval: {"1s", "How often the resource manager compares the JobManager's slot demand with the TaskManager pods (Go duration).",
		func(o *Options, v string) error { return setDuration(&o.PollInterval, v) }},
}

func setQuantity(q *resource.Quantity, v string) error {
	p, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("%q is not a Kubernetes quantity: %w", v, err)
	}
	if p.Sign() <= 0 {
		return fmt.Errorf("%q: expected a positive quantity", v)
	}
	*q = p
	return nil
}

func setDuration(d *time.Duration, v string) error {
	p, err := time.ParseDuration(strings.ReplaceAll(v, " ", ""))
	if err != nil || p <= 0 {
		return fmt.Errorf("%q: expected a positive Go duration such as 30s", v)
	}
	*d = p
	return nil
}

// IsNativeKey reports whether key belongs to the native mode's options
// (the kubernetes.* prefix), not to the core's catalog.
func IsNativeKey(key string) bool { return strings.HasPrefix(key, "kubernetes.") }

// NativeKeys returns the known kubernetes.* keys, sorted.
func NativeKeys() []string {
	keys := make([]string, 0, len(nativeOptions))
	for k := range nativeOptions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Describe returns the default and the description of a kubernetes.* key.
func Describe(key string) (def, desc string, ok bool) {
	o, ok := nativeOptions[key]
	return o.def, o.desc, ok
}

// Settings collects option values from a file and flags before they are
// checked: kubernetes.* keys into Native, every other key into Core (with
// the core's strict validation as they are set).
type Settings struct {
	Core   *config.Configuration
	Native map[string]string
}

// NewSettings returns empty settings.
func NewSettings() *Settings {
	return &Settings{Core: config.New(), Native: map[string]string{}}
}

// Set routes key to the native options or to the core configuration.
// source names where the value came from, for errors.
func (s *Settings) Set(source, key, value string) error {
	if IsNativeKey(key) {
		if _, ok := nativeOptions[key]; !ok {
			return fmt.Errorf("config: unknown key %q (%s); the kubernetes.* keys are %s", key, source, strings.Join(NativeKeys(), ", "))
		}
		s.Native[key] = value
		return nil
	}
	return s.Core.SetFrom(source, key, value)
}

// Options checks the kubernetes.* values and applies the defaults.
func (s *Settings) Options() (Options, error) {
	var o Options
	var errs []error
	for _, k := range NativeKeys() {
		v, set := s.Native[k]
		if !set {
			v = nativeOptions[k].def
		}
		if !set && v == "" {
			continue
		}
		if err := nativeOptions[k].set(&o, v); err != nil {
			errs = append(errs, fmt.Errorf("config: invalid value for %q: %w", k, err))
		}
	}
	if o.ClusterID == "" {
		errs = append(errs, fmt.Errorf("config: %s is required in native mode", KeyClusterID))
	}
	if o.Image == "" {
		errs = append(errs, fmt.Errorf("config: %s is required in native mode", KeyImage))
	}
	return o, errors.Join(errs...)
}

// LoadFile reads a YAML configuration file that may hold both the core's
// options and the kubernetes.* ones, written flat or nested as the core's
// loader (config.LoadFile) accepts them, and sets each on s. Every problem
// is reported, with the file and line.
func (s *Settings) LoadFile(path string) error {
	data, err := config.ReadFile(path)
	if err != nil {
		return err
	}
	return s.LoadYAML(path, data)
}

// LoadYAML is LoadFile on data, with name in errors: the core's YAML
// reading, with the kubernetes.* keys kept here.
func (s *Settings) LoadYAML(name string, data []byte) error {
	return config.ReadYAML(name, data, s.Set)
}
