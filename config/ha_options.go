package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// High-availability options (Flink's high-availability.* keys), read by
// internal/ha. Only etcd is supported as the HA store.
const (
	HATypeNone = "none"
	HATypeEtcd = "etcd"
)

var (
	HAType = enumOption("high-availability.type", HATypeNone, []string{HATypeNone, HATypeEtcd},
		"High-availability mode of the cluster. none: one JobManager, whose failure loses every job. "+
			"etcd: any number of JobManagers with the same high-availability.cluster-id elect a leader "+
			"through etcd (high-availability.etcd.endpoints), which also holds the pointers to submitted "+
			"jobs and completed checkpoints; the data they point to is kept under high-availability.storageDir.")

	HAEtcdEndpoints = endpointsOption("high-availability.etcd.endpoints", "",
		"Comma-separated host:port list of the etcd cluster's client endpoints, "+
			"such as etcd1:2379,etcd2:2379. Required with high-availability.type etcd.")

	HAClusterID = clusterIDOption("high-availability.cluster-id", "/default",
		"Name of the cluster in the HA store: JobManagers with the same cluster-id compete for leadership "+
			"of the same jobs; different clusters can share one etcd and one storageDir. "+
			"Letters, digits and . _ - / only; leading and trailing slashes are ignored.")

	HAStorageDir = stringOption("high-availability.storageDir", "",
		"Directory (a path, file:// or s3:// URI) where the HA services keep the job graphs and artifacts "+
			"of submitted jobs; etcd holds only small pointers into it. Required with high-availability.type etcd, "+
			"and must be shared by every JobManager of the cluster.")

	HAEtcdLeaseTTL = durationOption("high-availability.etcd.lease-ttl", 10*time.Second, false,
		"Time-to-live of a JobManager's etcd lease, in whole seconds (at least 1 s). A leader that cannot "+
			"renew its lease within this time (crashed, paused or cut off from etcd) loses leadership, and a "+
			"standby takes over; shorter means faster takeover but less tolerance for pauses.")
)

// endpointsOption declares a String option holding a comma-separated
// host:port list; the value is kept with the spaces around the commas
// removed.
func endpointsOption(key, def, desc string) Option[string] {
	return Option[string]{Key: key, Default: def, Description: desc, kind: kind[string]{
		name: "String",
		parse: func(s string) (string, error) {
			eps, err := ParseEndpoints(s)
			if err != nil {
				return "", err
			}
			return strings.Join(eps, ","), nil
		},
		format: func(s string) string { return s },
	}}
}

// ParseEndpoints splits a comma-separated host:port list and checks every
// element. The empty string is an empty list.
func ParseEndpoints(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var eps []string
	for i, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("endpoint %d is empty; expected a comma-separated host:port list", i+1)
		}
		if strings.Contains(e, "://") {
			return nil, fmt.Errorf("endpoint %q: expected host:port without a scheme", e)
		}
		host, port, err := net.SplitHostPort(e)
		if err != nil {
			return nil, fmt.Errorf("endpoint %q: expected host:port", e)
		}
		if host == "" {
			return nil, fmt.Errorf("endpoint %q: the host is missing", e)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("endpoint %q: port %q is not between 1 and 65535", e, port)
		}
		eps = append(eps, e)
	}
	return eps, nil
}

// clusterIDOption declares a String option naming a cluster in the HA
// store. The value becomes part of etcd keys and storage paths, so it is
// restricted to a safe alphabet; it is kept verbatim.
func clusterIDOption(key, def, desc string) Option[string] {
	return Option[string]{Key: key, Default: def, Description: desc, kind: kind[string]{
		name: "String",
		parse: func(s string) (string, error) {
			if _, err := NormalizeClusterID(s); err != nil {
				return "", err
			}
			return s, nil
		},
		format: func(s string) string { return s },
	}}
}

// NormalizeClusterID checks a cluster-id and returns it without leading
// and trailing slashes, as used in etcd keys and storage paths.
func NormalizeClusterID(s string) (string, error) {
	id := strings.Trim(s, "/")
	if id == "" {
		return "", errors.New("expected a non-empty cluster id")
	}
	for _, seg := range strings.Split(id, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("cluster id %q has an empty, . or .. path segment", s)
		}
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)) {
			return "", fmt.Errorf("cluster id %q contains %q; expected letters, digits and . _ - / only", s, r)
		}
	}
	return id, nil
}
