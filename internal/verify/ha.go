package verify

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/weirproject/weir/internal/cluster"
	"github.com/weirproject/weir/internal/ha"
)

// A highly available cluster for kill-jobmanager: an etcd server started
// by the harness, two JobManagers (a leader and a standby), TaskManagers
// and clients that find the leader through etcd.

// haLeaseTTL is the JobManagers' etcd lease: how long a killed leader
// holds on before the standby takes over.
const haLeaseTTL = 2 * time.Second

type haParts struct {
	config   string // the configuration file every process reads
	etcd     *exec.Cmd
	etcdDone chan struct{}
	services *ha.Services // the harness's own view of the election
}

// jobManager is one JobManager process.
type jobManager struct {
	cmd       *exec.Cmd
	done      chan struct{}
	rpc, rest string // RPC address, REST URL
	log       string
}

// startHA starts etcd and writes the configuration of the cluster's
// processes; an error says why kill-jobmanager cannot be injected.
func (c *localCluster) startHA(ctx context.Context) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return errors.New("no etcd binary (Debian: apt-get install etcd-server) to run a highly available cluster with")
	}
	client, peer := freeAddr(), freeAddr()
	if client == "" || peer == "" {
		return errors.New("no free loopback port for etcd")
	}
	dir := filepath.Join(c.dir, "etcd")
	logFile, err := os.Create(filepath.Join(c.dir, "etcd.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	h := &haParts{config: filepath.Join(c.dir, "ha.yaml"), etcdDone: make(chan struct{})}
	h.etcd = exec.Command(bin, "--name", "verify", "--data-dir", dir,
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "verify=http://"+peer)
	h.etcd.Stdout, h.etcd.Stderr = logFile, logFile
	if err := h.etcd.Start(); err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	go func() {
		// Owned by the process: ends when it exits.
		h.etcd.Wait()
		close(h.etcdDone)
	}()
	c.ha = h
	storage := filepath.Join(c.dir, "ha-storage")
	conf := fmt.Sprintf("high-availability.type: etcd\nhigh-availability.etcd.endpoints: %s\nhigh-availability.cluster-id: /verify\nhigh-availability.storageDir: file://%s\nhigh-availability.etcd.lease-ttl: %d s\n",
		client, storage, int(haLeaseTTL/time.Second))
	if err := os.WriteFile(h.config, []byte(conf), 0o644); err != nil {
		c.stopHA()
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		h.services, err = ha.Open(sctx, ha.Config{Endpoints: []string{client}, ClusterID: "/verify", StorageDir: "file://" + storage, LeaseTTL: haLeaseTTL})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || isClosed(h.etcdDone) {
			c.stopHA()
			return fmt.Errorf("etcd did not answer within 20 s: %v (see %s)", err, filepath.Join(c.dir, "etcd.log"))
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func (c *localCluster) stopHA() {
	h := c.ha
	if h == nil {
		return
	}
	if h.services != nil {
		h.services.Close()
	}
	h.etcd.Process.Kill()
	<-h.etcdDone
}

// startJobManager starts a JobManager with the cluster's arguments.
func (c *localCluster) startJobManager() (*jobManager, error) {
	c.mu.Lock()
	c.jmSeq++
	name := fmt.Sprintf("jobmanager-%d.log", c.jmSeq)
	c.mu.Unlock()
	if c.jmSeq == 1 {
		name = "jobmanager.log"
	}
	logPath := filepath.Join(c.dir, name)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	jm := &jobManager{cmd: exec.Command(c.weir, c.jmArgs...), done: make(chan struct{}), log: logPath}
	jm.cmd.Stderr = logFile
	stdout, err := jm.cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := jm.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("verify: starting a jobmanager: %w", err)
	}
	addrs := make(chan []string, 1)
	go func() {
		// Owned by the JobManager process: ends when its stdout closes,
		// then reaps it.
		defer close(jm.done)
		defer logFile.Close()
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			if m := jmAddrs.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addrs <- m[1:]
				sent = true
			}
		}
		if !sent {
			close(addrs)
		}
		jm.cmd.Wait()
	}()
	select {
	case m, ok := <-addrs:
		if !ok {
			<-jm.done
			return nil, fmt.Errorf("verify: the jobmanager exited; see %s", logPath)
		}
		jm.rpc, jm.rest = m[0], m[1]
	case <-time.After(30 * time.Second):
		jm.cmd.Process.Kill()
		<-jm.done
		return nil, errors.New("verify: the jobmanager printed no addresses within 30 s")
	}
	c.mu.Lock()
	c.jms = append(c.jms, jm)
	c.mu.Unlock()
	return jm, nil
}

// followLeader waits until the first JobManager leads, starts a standby,
// and points the harness's REST client at whichever leads.
func (c *localCluster) followLeader(ctx context.Context, first *jobManager) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if li, ok := c.leader(ctx); ok && li.REST == first.rest {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("verify: the first jobmanager was not elected within 30 s")
		}
		sleep(ctx, 50*time.Millisecond)
	}
	if _, err := c.startJobManager(); err != nil {
		return err
	}
	c.rest.FollowLeader(func(ctx context.Context) (string, error) {
		li, ok := c.leader(ctx)
		if !ok {
			return "", errors.New("no jobmanager leads")
		}
		return li.REST, nil
	}, nil)
	return nil
}

// leader reads the elected JobManager's addresses from etcd.
func (c *localCluster) leader(ctx context.Context) (cluster.LeaderInfo, bool) {
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	l, err := c.ha.services.LeaderAddress(lctx)
	if err != nil {
		return cluster.LeaderInfo{}, false
	}
	li, err := cluster.ParseLeaderInfo(l.Address)
	return li, err == nil
}

// leaderRPC is the leading JobManager's RPC address.
func (c *localCluster) leaderRPC(ctx context.Context) string {
	if c.ha == nil {
		return c.rpc
	}
	li, _ := c.leader(ctx)
	return li.RPC
}

// killLeader SIGKILLs the leading JobManager and starts a new standby,
// so that two candidates remain.
func (c *localCluster) killLeader(ctx context.Context) (string, error) {
	li, ok := c.leader(ctx)
	if !ok {
		return "", errors.New("no jobmanager leads")
	}
	c.mu.Lock()
	var victim *jobManager
	for _, jm := range c.jms {
		if jm.rest == li.REST && !isClosed(jm.done) {
			victim = jm
		}
	}
	c.mu.Unlock()
	if victim == nil {
		return "", fmt.Errorf("the leader %s is none of the harness's jobmanagers", li.REST)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return "", err
	}
	<-victim.done
	c.mu.Lock()
	for i, jm := range c.jms {
		if jm == victim {
			c.jms = append(c.jms[:i], c.jms[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	if _, err := c.startJobManager(); err != nil {
		return "", err
	}
	return "leader " + strings.TrimPrefix(li.REST, "http://"), nil
}

// freeAddr returns a free loopback host:port, or "".
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer ln.Close()
	return ln.Addr().String()
}
