// Package ha provides high-availability services for a weir cluster on
// etcd: leader election among JobManagers, the published leader address,
// and stores for submitted jobs, checkpoint IDs and completed-checkpoint
// pointers whose writes are fenced by the writer's leadership term.
//
// etcd holds only small records and pointers; job graphs and artifacts are
// blobs under high-availability.storageDir, written through
// internal/storage. See docs/ha.md for the design.
package ha

import (
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/weirproject/weir/config"
)

// Config is the validated HA configuration.
type Config struct {
	// Endpoints are the etcd client endpoints, host:port.
	Endpoints []string
	// ClusterID names the cluster, without leading or trailing slashes.
	ClusterID string
	// StorageDir is where job graphs and artifacts are written (a path,
	// file:// or s3:// URI).
	StorageDir string
	// LeaseTTL is the etcd session lease's time-to-live (whole seconds).
	LeaseTTL time.Duration
	// DialTimeout bounds the first connection to etcd; 0 means 5 s.
	DialTimeout time.Duration
	// dialOptions are extra gRPC options (tests shorten the reconnect
	// backoff).
	dialOptions []grpc.DialOption
}

// FromConfiguration reads the high-availability.* options. It returns
// enabled=false when high-availability.type is none. Errors name the
// option at fault.
func FromConfiguration(c *config.Configuration) (cfg Config, enabled bool, err error) {
	if config.HAType.Get(c) != config.HATypeEtcd {
		return Config{}, false, nil
	}
	eps, err := config.ParseEndpoints(config.HAEtcdEndpoints.Get(c))
	if err != nil {
		return Config{}, false, fmt.Errorf("ha: %s: %w", config.HAEtcdEndpoints.Key, err)
	}
	cfg = Config{
		Endpoints:  eps,
		ClusterID:  config.HAClusterID.Get(c),
		StorageDir: config.HAStorageDir.Get(c),
		LeaseTTL:   config.HAEtcdLeaseTTL.Get(c),
	}
	if err := cfg.validate(); err != nil {
		return Config{}, false, err
	}
	return cfg, true, nil
}

// validate checks cfg and normalizes its ClusterID.
func (cfg *Config) validate() error {
	if len(cfg.Endpoints) == 0 {
		return fmt.Errorf("ha: %s is %s but %s is not set; give the etcd client endpoints as host:port,host:port",
			config.HAType.Key, config.HATypeEtcd, config.HAEtcdEndpoints.Key)
	}
	for _, e := range cfg.Endpoints {
		if _, err := config.ParseEndpoints(e); err != nil {
			return fmt.Errorf("ha: %s: %w", config.HAEtcdEndpoints.Key, err)
		}
	}
	id, err := config.NormalizeClusterID(cfg.ClusterID)
	if err != nil {
		return fmt.Errorf("ha: %s: %w", config.HAClusterID.Key, err)
	}
	cfg.ClusterID = id
	if cfg.StorageDir == "" {
		return fmt.Errorf("ha: %s is %s but %s is not set; give a directory shared by all JobManagers (path, file:// or s3://)",
			config.HAType.Key, config.HATypeEtcd, config.HAStorageDir.Key)
	}
	if cfg.LeaseTTL < time.Second || cfg.LeaseTTL%time.Second != 0 {
		return fmt.Errorf("ha: %s is %v; etcd leases need a whole number of seconds, at least 1 s",
			config.HAEtcdLeaseTTL.Key, cfg.LeaseTTL)
	}
	return nil
}
