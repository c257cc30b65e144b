package cluster

// High availability of the JobManager through etcd (docs/ha.md). Every
// JobManager of a cluster campaigns; the leader serves, the others are
// standbys that refuse the control plane and redirect REST clients to the
// leader. The leader persists each submission (internal/ha's job store,
// the program's artifact under storageDir) before acknowledging it, and
// records each checkpoint it confirms in etcd before the workers may
// commit what the checkpoint covers; both writes are fenced by its term,
// so a deposed leader changes nothing. A new leader recovers every job
// that had not ended from its latest recorded checkpoint. Every order a
// leader gives a TaskManager carries its term, and TaskManagers refuse
// terms older than the newest they have seen.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/ha"
)

// LeaderInfo is what a JobManager publishes as its address in the
// election: where TaskManagers (RPC) and clients (REST) reach it.
type LeaderInfo struct {
	RPC  string `json:"rpc"`
	REST string `json:"rest"` // base URL
}

// ParseLeaderInfo reads a leader's published address.
func ParseLeaderInfo(address string) (LeaderInfo, error) {
	var li LeaderInfo
	if err := json.Unmarshal([]byte(address), &li); err != nil || li.RPC == "" || li.REST == "" {
		return LeaderInfo{}, fmt.Errorf("the leader's published address %q is not a weir JobManager's {rpc, rest}", address)
	}
	return li, nil
}

// haState is the JobManager's part in the election.
type haState struct {
	services   *ha.Services
	leadership atomic.Pointer[ha.Leadership]
	term       atomic.Int64 // 0 until it leads
	// recovered is set once the jobs of earlier leaders run again: only
	// then does the JobManager serve as leader (a client that sees
	// "leader": true sees every job).
	recovered atomic.Bool
	// deposed is set once leadership was lost: from then on the JobManager
	// acts on nothing and exits (Wait returns the error).
	deposed atomic.Bool
}

// storedJob is a submission as the job store keeps it: a new leader
// recovers the job from it under the same ID.
type storedJob struct {
	JobID      string        `json:"jobId"`
	Submission JobSubmission `json:"submission"`
}

// retainedCheckpointPointers is how many completed-checkpoint pointers
// etcd keeps per job; a new leader restores from the newest.
const retainedCheckpointPointers = 3

// leaderTerm is the term to put on orders to TaskManagers: 0 without high
// availability.
func (jm *JobManager) leaderTerm() int64 {
	if jm.ha == nil {
		return 0
	}
	return jm.ha.term.Load()
}

// leading reports whether this JobManager may act: always without high
// availability; with it, from election until leadership is lost.
func (jm *JobManager) leading() bool {
	return jm.ha == nil || (jm.ha.recovered.Load() && !jm.ha.deposed.Load())
}

// IsLeader reports whether the JobManager leads its cluster (always, without
// high availability).
func (jm *JobManager) IsLeader() bool { return jm.leading() }

// campaign runs the election: it waits for leadership, recovers the
// stored jobs, and ends the JobManager when leadership is lost.
func (jm *JobManager) campaign() {
	defer jm.wg.Done()
	self, _ := json.Marshal(jm.advertised())
	jm.log.Info("standby: campaigning for leadership", "cluster-id", jm.ha.services.Config().ClusterID)
	l, err := jm.ha.services.Campaign(jm.ctx, string(self))
	if err != nil {
		if jm.ctx.Err() == nil {
			jm.failed <- fmt.Errorf("jobmanager: leader election: %w", err)
		}
		return
	}
	jm.ha.leadership.Store(l)
	jm.ha.term.Store(l.Term())
	jm.log.Info("elected leader", "term", l.Term())
	if err := jm.recoverJobs(l); err != nil {
		jm.failed <- fmt.Errorf("jobmanager: recovering the jobs of the previous leader: %w", err)
		return
	}
	jm.ha.recovered.Store(true)
	select {
	case <-jm.ctx.Done():
		// Close resigns once the jobs' goroutines stopped.
	case <-l.Done():
		jm.ha.deposed.Store(true)
		jm.log.Error("leadership lost: another JobManager leads now or etcd is unreachable; stopping without touching any job", "term", l.Term())
		jm.failed <- fmt.Errorf("jobmanager: lost leadership (term %d); the new leader runs the jobs", l.Term())
	}
}

// resign hands leadership over at once on a clean shutdown, rather than
// after the lease's TTL.
func (jm *JobManager) resign() {
	if jm.ha == nil {
		return
	}
	if l := jm.ha.leadership.Load(); l != nil && !jm.ha.deposed.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := l.Resign(ctx); err != nil {
			jm.log.Warn("could not resign leadership; a standby takes over when the lease expires", "error", err)
		}
	}
}

// recoverJobs restarts every job that the store holds (submitted and not
// ended under an earlier leader) from its latest recorded checkpoint.
func (jm *JobManager) recoverJobs(l *ha.Leadership) error {
	ctx, cancel := context.WithTimeout(jm.ctx, time.Minute)
	defer cancel()
	recs, err := l.Jobs().List(ctx)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		blob, err := l.Jobs().ReadGraph(ctx, rec)
		if err != nil {
			return fmt.Errorf("job %s: %w", rec.JobID, err)
		}
		var sj storedJob
		if err := json.Unmarshal(blob, &sj); err != nil {
			return fmt.Errorf("job %s: stored submission is corrupt: %w", rec.JobID, err)
		}
		if err := jm.fetchArtifact(ctx, sj.Submission.Artifact); err != nil {
			return fmt.Errorf("job %s: %w", rec.JobID, err)
		}
		latest, ok, err := l.CompletedCheckpoints(retainedCheckpointPointers).Latest(ctx, rec.JobID)
		if err != nil {
			return fmt.Errorf("job %s: %w", rec.JobID, err)
		}
		restore := ""
		if ok {
			restore = latest.Pointer
		}
		if err := jm.dispatcher.recover(sj, restore); err != nil {
			// A stored job that this JobManager cannot run (an option it
			// refuses) is failed for good, not retried by every leader.
			jm.log.Error("a recovered job cannot run", "job", rec.JobID, "error", err)
			if rerr := l.Jobs().Remove(ctx, rec.JobID); rerr != nil {
				return rerr
			}
			continue
		}
		jm.log.Info("job recovered", "job", rec.JobID, "name", rec.Name, "restore", restore, "stored-by-term", rec.Term)
	}
	return nil
}

// persistJob stores a submission and its artifact before the submission
// is acknowledged.
func (jm *JobManager) persistJob(j *job) error {
	l := jm.ha.leadership.Load()
	if l == nil || !jm.leading() {
		return errNotLeader
	}
	ctx, cancel := context.WithTimeout(jm.ctx, 2*time.Minute)
	defer cancel()
	name := "artifacts/" + j.sub.Artifact
	blobs := jm.ha.services.Blobs()
	if ok, err := blobs.Exists(ctx, name); err != nil {
		return err
	} else if !ok {
		if _, err := blobs.Upload(ctx, name, jm.artifacts.path(j.sub.Artifact)); err != nil {
			return fmt.Errorf("storing the artifact in high-availability.storageDir: %w", err)
		}
	}
	blob, err := json.Marshal(storedJob{JobID: j.id, Submission: j.sub})
	if err != nil {
		return err
	}
	_, err = l.Jobs().Put(ctx, j.id, j.name, blob)
	return err
}

// fetchArtifact makes a stored artifact local.
func (jm *JobManager) fetchArtifact(ctx context.Context, sum string) error {
	if !sha256Hex.MatchString(sum) {
		return fmt.Errorf("artifact %q is not a hex SHA-256", sum)
	}
	if jm.artifacts.has(sum) {
		return nil
	}
	tmp := filepath.Join(jm.artifacts.dir, ".fetch-"+sum)
	defer os.Remove(tmp)
	if err := jm.ha.services.Blobs().Download(ctx, "artifacts/"+sum, tmp); err != nil {
		return fmt.Errorf("artifact %s from high-availability.storageDir: %w", sum, err)
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = jm.artifacts.put(f, sum)
	return err
}

// forgetJob removes a job that ended for good from the store, so that no
// later leader runs it again. A JobManager that is shutting down or lost
// leadership leaves its jobs to the next leader.
func (jm *JobManager) forgetJob(id string) {
	if jm.ha == nil || jm.ctx.Err() != nil || !jm.leading() {
		return
	}
	l := jm.ha.leadership.Load()
	ctx, cancel := context.WithTimeout(jm.ctx, 10*time.Second)
	defer cancel()
	if err := l.Jobs().Remove(ctx, id); err != nil {
		jm.log.Error("could not remove an ended job from the high-availability store; a new leader would run it again", "job", id, "error", err)
	}
}

// recordCheckpoint records, fenced, a checkpoint the JobManager is about
// to confirm: a new leader restores from it.
func (jm *JobManager) recordCheckpoint(jobID string, id int64, path string) error {
	if jm.ha == nil {
		return nil
	}
	l := jm.ha.leadership.Load()
	if l == nil || !jm.leading() {
		return errNotLeader
	}
	ctx, cancel := context.WithTimeout(jm.ctx, jm.opts.RPCTimeout)
	defer cancel()
	_, err := l.CompletedCheckpoints(retainedCheckpointPointers).AddCompleted(ctx, jobID, id, path)
	return err
}

var errNotLeader = errors.New("this JobManager is not the leader")

// standbyError is the answer of a JobManager that may not act.
func (jm *JobManager) standbyError() error {
	if jm.ha != nil && jm.ha.deposed.Load() {
		return status.Error(codes.Unavailable, "this JobManager lost its leadership; find the new leader through high availability")
	}
	msg := "this JobManager is a standby"
	if li, ok := jm.currentLeader(); ok {
		msg += "; the leader is at " + li.RPC
	}
	return status.Error(codes.Unavailable, msg)
}

// currentLeader reads the elected leader's address from etcd.
func (jm *JobManager) currentLeader() (LeaderInfo, bool) {
	ctx, cancel := context.WithTimeout(jm.ctx, 2*time.Second)
	defer cancel()
	l, err := jm.ha.services.LeaderAddress(ctx)
	if err != nil {
		return LeaderInfo{}, false
	}
	li, err := ParseLeaderInfo(l.Address)
	return li, err == nil
}

// standbyInterceptors refuse the control plane while the JobManager does
// not lead.
func (jm *JobManager) standbyInterceptors() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if !jm.leading() {
				return nil, jm.standbyError()
			}
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if !jm.leading() {
				return jm.standbyError()
			}
			return handler(srv, ss)
		}),
	}
}

// standbyREST answers GET /overview itself (it says whether this
// JobManager leads) and redirects every other request to the leader, or
// answers 503 while none is elected.
func (jm *JobManager) standbyREST(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if jm.leading() || r.URL.Path == "/overview" || r.URL.Path == "/metrics" {
			next.ServeHTTP(w, r)
			return
		}
		li, ok := jm.currentLeader()
		if !ok || jm.ha.deposed.Load() && li.REST == jm.advertised().REST {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "no JobManager leads the cluster at the moment (high availability: an election is under way); retry shortly")
			return
		}
		target := strings.TrimSuffix(li.REST, "/") + r.URL.RequestURI()
		// 307 keeps the method and body: a submission goes to the leader.
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	})
}

// advertised is what the JobManager publishes when it leads: its
// listeners' ports on the host others reach it at.
func (jm *JobManager) advertised() LeaderInfo {
	host := jm.opts.AdvertisedHost
	if host == "" {
		host = jm.opts.BindHost
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "localhost"
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
	}
	scheme := "http"
	if jm.opts.Security.TLS.Enabled {
		scheme = "https"
	}
	return LeaderInfo{
		RPC:  net.JoinHostPort(host, strconv.Itoa(jm.rpcLn.Addr().(*net.TCPAddr).Port)),
		REST: scheme + "://" + net.JoinHostPort(host, strconv.Itoa(jm.restLn.Addr().(*net.TCPAddr).Port)),
	}
}
