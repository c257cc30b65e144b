package cluster

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

// The TaskManager's side of JobManager high availability: it follows the
// elected leader, registers with each new one, and refuses the orders of
// a deposed one by their leadership term.

type closerFunc func()

func (f closerFunc) Close() { f() }

// connect points the TaskManager's JobManager client at addr, replacing
// the connection to another address.
func (tm *TaskManager) connect(addr string) error {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.conn != nil && tm.jmAddr == addr {
		return nil
	}
	conn, err := grpc.NewClient(addr, tm.dialOpts...)
	if err != nil {
		return fmt.Errorf("jobmanager address %q: %w", addr, err)
	}
	if tm.conn != nil {
		tm.conn.Close()
	}
	tm.conn, tm.jmc, tm.jmAddr = conn, rpcpb.NewJobManagerClient(conn), addr
	return nil
}

func (tm *TaskManager) closeConn() {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.conn != nil {
		tm.conn.Close()
		tm.conn, tm.jmc = nil, nil
	}
}

// errNoJobManager answers calls before any JobManager is known.
var errNoJobManager = status.Error(codes.Unavailable, "no jobmanager known yet")

// jobManager returns the client of the current JobManager.
func (tm *TaskManager) jobManager() rpcpb.JobManagerClient {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.jmc == nil {
		return unavailableJobManager{}
	}
	return tm.jmc
}

func (tm *TaskManager) jobManagerAddr() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.jmAddr
}

// newestTerm is the newest leadership term the TaskManager has seen.
func (tm *TaskManager) newestTerm() int64 {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return max(tm.term, tm.leader.Term)
}

// checkTerm refuses an order of a JobManager whose leadership term is
// older than the newest seen, and remembers a newer one.
func (tm *TaskManager) checkTerm(term int64) error {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if newest := max(tm.term, tm.leader.Term); term < newest {
		tm.log.Warn("taskmanager refuses an order of a deposed jobmanager", "term", term, "leading-term", newest)
		return status.Errorf(codes.FailedPrecondition,
			"taskmanager %s refuses an order of the jobmanager of leadership term %d: term %d leads now (a deposed leader must not act)",
			tm.opts.ResourceID, term, newest)
	}
	tm.term = term
	return nil
}

// leaderRPC connects to the elected leader, or says that none is known.
func (tm *TaskManager) leaderRPC() (string, error) {
	tm.mu.Lock()
	l := tm.leader
	tm.mu.Unlock()
	if l.Address == "" {
		return "", status.Error(codes.Unavailable, "no jobmanager is elected leader yet (high availability)")
	}
	li, err := ParseLeaderInfo(l.Address)
	if err != nil {
		return "", status.Error(codes.Unavailable, err.Error())
	}
	return li.RPC, tm.connect(li.RPC)
}

// followLeader observes the election until ctx ends and signals each
// newer leader to Run.
func (tm *TaskManager) followLeader(ctx context.Context) {
	for l := range tm.opts.HA.ObserveLeader(ctx) {
		tm.mu.Lock()
		newer := l.Term > tm.leader.Term
		if newer {
			tm.leader = l
		}
		tm.mu.Unlock()
		if newer {
			tm.log.Info("jobmanager leader observed", "term", l.Term, "leader", l.Address)
			select {
			case tm.leaderChanged <- struct{}{}:
			default:
			}
		}
	}
}

// unavailableJobManager stands for the JobManager before one is known.
type unavailableJobManager struct{ rpcpb.JobManagerClient }

func (unavailableJobManager) RegisterTaskManager(context.Context, *rpcpb.RegisterTaskManagerRequest, ...grpc.CallOption) (*rpcpb.RegisterTaskManagerResponse, error) {
	return nil, errNoJobManager
}
func (unavailableJobManager) UnregisterTaskManager(context.Context, *rpcpb.UnregisterTaskManagerRequest, ...grpc.CallOption) (*rpcpb.UnregisterTaskManagerResponse, error) {
	return nil, errNoJobManager
}
func (unavailableJobManager) FetchArtifact(context.Context, *rpcpb.FetchArtifactRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[rpcpb.ArtifactChunk], error) {
	return nil, errNoJobManager
}
func (unavailableJobManager) ReportWorker(context.Context, *rpcpb.ReportWorkerRequest, ...grpc.CallOption) (*rpcpb.ReportWorkerResponse, error) {
	return nil, errNoJobManager
}
func (unavailableJobManager) RequestHeartbeat(context.Context, *rpcpb.RequestHeartbeatRequest, ...grpc.CallOption) (*rpcpb.RequestHeartbeatResponse, error) {
	return nil, errNoJobManager
}
func (unavailableJobManager) ConfirmCheckpoint(context.Context, *rpcpb.ConfirmCheckpointRequest, ...grpc.CallOption) (*rpcpb.ConfirmCheckpointResponse, error) {
	return nil, errNoJobManager
}
