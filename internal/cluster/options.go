package cluster

import (
	"net"
	"strconv"
	"strings"

	"github.com/weirproject/weir/config"
)

// SecurityFrom reads the security.* options.
func SecurityFrom(cfg *config.Configuration) Security {
	return Security{
		Token: config.SecurityToken.Get(cfg),
		TLS: TLSFiles{
			Enabled: config.SSLEnabled.Get(cfg),
			Mutual:  config.SSLMutual.Get(cfg),
			Cert:    config.SSLCert.Get(cfg),
			Key:     config.SSLKey.Get(cfg),
			CA:      config.SSLCA.Get(cfg),
		},
	}
}

// JobManagerOptionsFrom reads a JobManager's options from cfg.
func JobManagerOptionsFrom(cfg *config.Configuration) JobManagerOptions {
	return JobManagerOptions{
		BindHost:          config.JobManagerBindHost.Get(cfg),
		RPCPort:           config.JobManagerRPCPort.Get(cfg),
		RESTPort:          config.RESTPort.Get(cfg),
		HeartbeatInterval: config.HeartbeatInterval.Get(cfg),
		HeartbeatTimeout:  config.HeartbeatTimeout.Get(cfg),
		RPCTimeout:        config.RPCTimeout.Get(cfg),
		Security:          SecurityFrom(cfg),

		SlotRequestTimeout:   config.SlotRequestTimeout.Get(cfg),
		EvenlySpreadOutSlots: config.ClusterEvenlySpreadOutSlots.Get(cfg),
		DefaultParallelism:   max(1, config.Parallelism.Get(cfg)),
		WorkingDir:           config.ProcessWorkingDir.Get(cfg),
		MaxContentLength:     config.RESTServerMaxContentLength.Get(cfg),
		AdvertisedHost:       advertisedJobManagerHost(cfg),
		Reactive:             config.SchedulerMode.Get(cfg) == config.SchedulerModeReactive,
		PrometheusPort:       config.PrometheusPort.Get(cfg),
		AllowedHosts:         allowedRESTHosts(cfg),
	}
}

// allowedRESTHosts are rest.address and the names of rest.allowed-hosts:
// the names under which clients reach the REST API besides the server's
// own.
func allowedRESTHosts(cfg *config.Configuration) []string {
	hosts := []string{config.RESTAddress.Get(cfg)}
	for _, h := range strings.Split(config.RESTAllowedHosts.Get(cfg), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// advertisedJobManagerHost is jobmanager.rpc.address when the
// configuration sets it: the address a highly available JobManager
// publishes (in Kubernetes, the pod's IP).
func advertisedJobManagerHost(cfg *config.Configuration) string {
	if cfg.IsSet(config.JobManagerRPCAddress.Key) {
		return config.JobManagerRPCAddress.Get(cfg)
	}
	return ""
}

// TaskManagerOptionsFrom reads a TaskManager's options from cfg. A
// taskmanager.numberOfTaskSlots of 0, which means "as many as needed" to
// the mini cluster, is one slot here: a process cannot grow slots on demand.
func TaskManagerOptionsFrom(cfg *config.Configuration) TaskManagerOptions {
	return TaskManagerOptions{
		JobManagerAddress:   net.JoinHostPort(config.JobManagerRPCAddress.Get(cfg), strconv.Itoa(config.JobManagerRPCPort.Get(cfg))),
		ResourceID:          config.TaskManagerResourceID.Get(cfg),
		Slots:               max(1, config.NumTaskSlots.Get(cfg)),
		BindHost:            config.TaskManagerBindHost.Get(cfg),
		Host:                config.TaskManagerHost.Get(cfg),
		RPCPort:             config.TaskManagerRPCPort.Get(cfg),
		RegistrationTimeout: config.TaskManagerRegistrationTimeout.Get(cfg),
		RPCTimeout:          config.RPCTimeout.Get(cfg),
		Security:            SecurityFrom(cfg),
		WorkingDir:          config.ProcessWorkingDir.Get(cfg),
		PrometheusPort:      config.PrometheusPort.Get(cfg),
		AllowedHosts:        allowedRESTHosts(cfg),
	}
}

// RESTAddressFrom returns the host:port at which clients reach the REST API.
func RESTAddressFrom(cfg *config.Configuration) string {
	return net.JoinHostPort(config.RESTAddress.Get(cfg), strconv.Itoa(config.RESTPort.Get(cfg)))
}
