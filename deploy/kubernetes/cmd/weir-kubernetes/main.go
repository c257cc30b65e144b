// Command weir-kubernetes runs a weir JobManager in native Kubernetes mode:
// the JobManager of `weir jobmanager`, plus a resource manager that creates
// TaskManager pods as jobs need slots and deletes them when they have been
// idle (package native). It runs inside a pod, with the pod's service
// account (which needs get/list/create/delete on pods and
// create/update on configmaps; see deploy/kubernetes/manifests/native).
//
//	weir-kubernetes --config /opt/weir/conf/config.yaml [-D key=value]...
//
// The configuration file holds the core options (docs/configuration.md)
// and the kubernetes.* options of the native mode (docs/kubernetes.md);
// -D sets either kind and overrides the file. WEIR_TOKEN sets
// security.token. POD_NAME (from the downward API) names the JobManager's
// pod, whose Deployment then owns the TaskManager pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/deploy/kubernetes/native"
	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/ha"
)

// namespaceFile is where Kubernetes mounts the pod's namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, inCluster)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir-kubernetes:", err)
		os.Exit(1)
	}
}

func inCluster() (kubernetes.Interface, error) {
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("not running in a Kubernetes pod: %w", err)
	}
	return kubernetes.NewForConfig(rc)
}

type defines []string

func (d *defines) String() string     { return strings.Join(*d, " ") }
func (d *defines) Set(s string) error { *d = append(*d, s); return nil }

// run is the command; env, the output and the client are injected for
// tests.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer,
	newClient func() (kubernetes.Interface, error)) error {
	fs := flag.NewFlagSet("weir-kubernetes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "YAML configuration `file` with the core and the kubernetes.* options")
	var defs defines
	fs.Var(&defs, "D", "set an option, `key=value` (repeatable; overrides --config)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	s, err := loadSettings(*configFile, defs, env)
	if err != nil {
		return err
	}
	opts, err := s.Options()
	if err != nil {
		return err
	}
	if config.SSLEnabled.Get(s.Core) {
		return errors.New("security.ssl.enabled: the native mode does not mount TLS files into TaskManager pods yet; " +
			"use a session cluster (deploy/kubernetes/manifests/session) for TLS")
	}
	// StartJobManager would refuse the token too, but only after the
	// client and the owner lookup; refused here, nothing has started.
	if err := cluster.CheckToken(config.SecurityToken.Get(s.Core)); err != nil {
		return err
	}
	if opts.TokenSecret == "" {
		return fmt.Errorf("%s is required: TaskManager pods listen on their pod IP, which needs the cluster's token, "+
			"and get it from that Secret (key \"token\")", native.KeyTokenSecret)
	}
	if opts.Namespace == "" {
		opts.Namespace = env("POD_NAMESPACE")
	}
	if opts.Namespace == "" {
		b, err := os.ReadFile(namespaceFile)
		if err != nil {
			return fmt.Errorf("%s is not set and the pod's namespace is unknown: %w", native.KeyNamespace, err)
		}
		opts.Namespace = strings.TrimSpace(string(b))
	}
	client, err := newClient()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	var owner *metav1.OwnerReference
	if pod := env("POD_NAME"); pod != "" {
		owner, err = native.OwnerFor(ctx, client, opts.Namespace, pod)
		if err != nil {
			// Without an owner the pods outlive the cluster; say so, but run.
			log.Warn("TaskManager pods get no owner reference", "err", err)
		}
	}

	jmOpts := cluster.JobManagerOptionsFrom(s.Core)
	jmOpts.Logger = log
	// With high-availability.type etcd, several replicas elect a leader;
	// only the leader's resource manager acts.
	hc, haOn, err := ha.FromConfiguration(s.Core)
	if err != nil {
		return err
	}
	if haOn {
		if jmOpts.HA, err = ha.Open(ctx, hc); err != nil {
			return fmt.Errorf("jobmanager: %w", err)
		}
		defer jmOpts.HA.Close()
	}
	jm, err := cluster.StartJobManager(jmOpts)
	if err != nil {
		return fmt.Errorf("jobmanager: %w", err)
	}
	defer jm.Close()
	fmt.Fprintf(stdout, "jobmanager rpc=%s rest=%s\n", jm.RPCAddr(), jm.RESTURL())

	rm, err := native.New(client, native.JobManagerCluster(jm), native.Config{
		Options: opts,
		Slots:   max(1, config.NumTaskSlots.Get(s.Core)),
		Core:    s.Core,
		Owner:   owner,
		Logger:  log,
	})
	if err != nil {
		return err
	}
	rmCtx, stopRM := context.WithCancel(ctx)
	rmDone := make(chan error, 1)
	go func() { rmDone <- rm.Run(rmCtx) }()
	err = jm.Wait(ctx)
	stopRM()
	if rerr := <-rmDone; err == nil {
		err = rerr
	}
	return err
}

// loadSettings layers the configuration as weir jobmanager does: the file,
// then WEIR_TOKEN, then -D.
func loadSettings(file string, defs []string, env func(string) string) (*native.Settings, error) {
	s := native.NewSettings()
	if file != "" {
		if err := s.LoadFile(file); err != nil {
			return nil, err
		}
	}
	if t := env("WEIR_TOKEN"); t != "" {
		if err := s.Set("WEIR_TOKEN", config.SecurityToken.Key, t); err != nil {
			return nil, err
		}
	}
	for _, d := range defs {
		k, v, err := config.ParseDefinition(d)
		if err != nil {
			return nil, err
		}
		if err := s.Set("-D", k, v); err != nil {
			return nil, err
		}
	}
	return s, nil
}
