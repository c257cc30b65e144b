package ha

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcd values stay small: records and pointers only. etcd refuses requests
// over 1.5 MiB by default and slows down long before.
const (
	maxRecordBytes  = 16 << 10
	maxPointerBytes = 4 << 10
)

// fencedTxn commits ops only if this leadership still holds: the election
// key exists with the create revision that is the term. Otherwise it
// returns ErrNotLeader and nothing is applied. extra are further
// conditions; when they fail (but the fence holds) it returns
// (false, nil).
func (l *Leadership) fencedTxn(ctx context.Context, extra []clientv3.Cmp, ops ...clientv3.Op) (*clientv3.TxnResponse, bool, error) {
	select {
	case <-l.done:
		return nil, false, ErrNotLeader
	default:
	}
	fence := clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.term)
	// On failure, tell the fence from the extra conditions.
	resp, err := l.s.client.Txn(ctx).
		If(append([]clientv3.Cmp{fence}, extra...)...).
		Then(ops...).
		Else(clientv3.OpGet(l.key)).
		Commit()
	if err != nil {
		return nil, false, fmt.Errorf("ha: etcd transaction: %w", err)
	}
	if resp.Succeeded {
		return resp, true, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || kvs[0].CreateRevision != l.term {
		return nil, false, ErrNotLeader
	}
	return resp, false, nil
}

func checkJobID(jobID string) error {
	if jobID == "" {
		return errors.New("ha: empty job id")
	}
	for _, r := range jobID {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("ha: job id %q contains %q; expected letters, digits and - _ . only", jobID, r)
		}
	}
	return nil
}

// ---- job store ----

// JobRecord is a submitted job as kept in etcd: small, with the job graph
// in a blob under storageDir.
type JobRecord struct {
	JobID string `json:"jobId"`
	Name  string `json:"name,omitempty"`
	// Graph is the job graph's blob, relative to the cluster's directory
	// under storageDir; read it with JobStore.ReadGraph.
	Graph       string    `json:"graph"`
	SubmittedAt time.Time `json:"submittedAt"`
	// Term is the leadership term that stored the record.
	Term int64 `json:"term"`
}

// JobStore keeps the cluster's submitted jobs: put when a job is
// submitted, removed when it ends (so that a new leader recovers exactly
// the jobs that had not ended).
type JobStore struct{ l *Leadership }

// Jobs returns the job store, fenced by l.
func (l *Leadership) Jobs() *JobStore { return &JobStore{l} }

func (s *Services) jobKey(jobID string) string    { return s.prefix + "jobs/" + jobID }
func (s *Services) jobPrefix(jobID string) string { return s.prefix + "checkpoints/" + jobID + "/" }

// Put writes the job graph to storageDir and then, fenced, the job's
// record to etcd, replacing any earlier record of the job. A deposed
// leader gets ErrNotLeader and its blob is deleted again.
func (j *JobStore) Put(ctx context.Context, jobID, name string, graph []byte) (JobRecord, error) {
	if err := checkJobID(jobID); err != nil {
		return JobRecord{}, err
	}
	l := j.l
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return JobRecord{}, err
	}
	// A fresh name per put: a record never points at a blob that a later
	// (or a deposed leader's concurrent) put overwrites.
	blobName := fmt.Sprintf("jobs/%s/graph-%d-%s", jobID, l.term, hex.EncodeToString(nonce[:]))
	rec := JobRecord{JobID: jobID, Name: name, Graph: blobName, SubmittedAt: time.Now().UTC(), Term: l.term}
	val, err := json.Marshal(rec)
	if err != nil {
		return JobRecord{}, err
	}
	if len(val) > maxRecordBytes {
		return JobRecord{}, fmt.Errorf("ha: record of job %s is %d bytes, more than %d; keep names short (the graph goes to storageDir)", jobID, len(val), maxRecordBytes)
	}
	if err := l.s.storage.Write(ctx, blobName, graph); err != nil {
		return JobRecord{}, fmt.Errorf("ha: store graph of job %s: %w", jobID, err)
	}
	old, _ := j.Get(ctx, jobID)
	if _, _, err := l.fencedTxn(ctx, nil, clientv3.OpPut(l.s.jobKey(jobID), string(val))); err != nil {
		_ = l.s.storage.Delete(context.WithoutCancel(ctx), blobName)
		return JobRecord{}, err
	}
	if old != nil && old.Graph != blobName {
		_ = l.s.storage.Delete(ctx, old.Graph)
	}
	return rec, nil
}

// Remove deletes, fenced, the job's record together with its checkpoint
// ID counter and completed-checkpoint pointers, and then its graph blob.
// Removing a job that is not stored is not an error.
func (j *JobStore) Remove(ctx context.Context, jobID string) error {
	if err := checkJobID(jobID); err != nil {
		return err
	}
	l := j.l
	old, err := j.Get(ctx, jobID)
	if err != nil {
		return err
	}
	if _, _, err := l.fencedTxn(ctx, nil,
		clientv3.OpDelete(l.s.jobKey(jobID)),
		clientv3.OpDelete(l.s.jobPrefix(jobID), clientv3.WithPrefix())); err != nil {
		return err
	}
	if old != nil {
		// After etcd: a crash in between leaves an orphaned blob, never
		// a record pointing at nothing.
		if err := l.s.storage.Delete(ctx, old.Graph); err != nil {
			return fmt.Errorf("ha: job %s removed, but its graph blob was not: %w", jobID, err)
		}
	}
	return nil
}

// Get returns the job's record, or nil if it is not stored.
func (j *JobStore) Get(ctx context.Context, jobID string) (*JobRecord, error) {
	if err := checkJobID(jobID); err != nil {
		return nil, err
	}
	resp, err := j.l.s.client.Get(ctx, j.l.s.jobKey(jobID))
	if err != nil {
		return nil, fmt.Errorf("ha: read job %s: %w", jobID, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var rec JobRecord
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return nil, fmt.Errorf("ha: job record %s is corrupt: %w", resp.Kvs[0].Key, err)
	}
	return &rec, nil
}

// List returns every stored job, ordered by job id.
func (j *JobStore) List(ctx context.Context) ([]JobRecord, error) {
	pfx := j.l.s.prefix + "jobs/"
	resp, err := j.l.s.client.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("ha: list jobs: %w", err)
	}
	recs := make([]JobRecord, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var rec JobRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("ha: job record %s is corrupt: %w", kv.Key, err)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// ReadGraph reads the job graph that rec points to.
func (j *JobStore) ReadGraph(ctx context.Context, rec JobRecord) ([]byte, error) {
	return j.l.s.storage.Read(ctx, rec.Graph)
}

// ---- checkpoint ID counter ----

// CheckpointIDCounter hands out checkpoint IDs per job, strictly
// increasing across leaders: the counter lives in etcd and every increment
// is fenced.
type CheckpointIDCounter struct{ l *Leadership }

// CheckpointIDs returns the checkpoint ID counter, fenced by l.
func (l *Leadership) CheckpointIDs() *CheckpointIDCounter { return &CheckpointIDCounter{l} }

func (s *Services) counterKey(jobID string) string { return s.jobPrefix(jobID) + "counter" }

// Next returns the job's next checkpoint ID, starting at 1.
func (c *CheckpointIDCounter) Next(ctx context.Context, jobID string) (int64, error) {
	return c.advance(ctx, jobID, func(cur int64) (int64, bool) { return cur + 1, true })
}

// EnsureAbove makes the next ID greater than id (a job restored from a
// checkpoint or savepoint with that ID must not reuse it).
func (c *CheckpointIDCounter) EnsureAbove(ctx context.Context, jobID string, id int64) error {
	_, err := c.advance(ctx, jobID, func(cur int64) (int64, bool) { return id, id > cur })
	return err
}

// Current returns the last ID handed out for the job, 0 if none.
func (c *CheckpointIDCounter) Current(ctx context.Context, jobID string) (int64, error) {
	if err := checkJobID(jobID); err != nil {
		return 0, err
	}
	resp, err := c.l.s.client.Get(ctx, c.l.s.counterKey(jobID))
	if err != nil {
		return 0, fmt.Errorf("ha: read checkpoint counter of job %s: %w", jobID, err)
	}
	cur, _, err := parseCounter(resp.Kvs, jobID)
	return cur, err
}

func parseCounter(kvs []*mvccKV, jobID string) (cur, modRev int64, err error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	cur, err = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || cur < 0 {
		return 0, 0, fmt.Errorf("ha: checkpoint counter of job %s is corrupt: %q", jobID, kvs[0].Value)
	}
	return cur, kvs[0].ModRevision, nil
}

// advance sets the counter to f(current) if f says so, with a
// compare-and-swap on the counter's revision inside the fence.
func (c *CheckpointIDCounter) advance(ctx context.Context, jobID string, f func(int64) (int64, bool)) (int64, error) {
	if err := checkJobID(jobID); err != nil {
		return 0, err
	}
	key := c.l.s.counterKey(jobID)
	for {
		resp, err := c.l.s.client.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("ha: read checkpoint counter of job %s: %w", jobID, err)
		}
		cur, modRev, err := parseCounter(resp.Kvs, jobID)
		if err != nil {
			return 0, err
		}
		next, change := f(cur)
		if !change {
			return cur, nil
		}
		_, ok, err := c.l.fencedTxn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", modRev)},
			clientv3.OpPut(key, strconv.FormatInt(next, 10)))
		if err != nil {
			return 0, err
		}
		if ok {
			return next, nil
		}
		// Another writer (a concurrent Next of the same leader) moved
		// the counter: read it again.
	}
}

// ---- completed checkpoints ----

// CompletedCheckpoint is a pointer to a completed checkpoint's metadata
// (its external pointer in the checkpoint storage).
type CompletedCheckpoint struct {
	ID      int64
	Pointer string
}

// CompletedCheckpointStore keeps the pointers of a job's last completed
// checkpoints, newest last.
type CompletedCheckpointStore struct {
	l      *Leadership
	retain int
}

// CompletedCheckpoints returns the completed-checkpoint store, fenced by
// l, keeping the last retain pointers per job (at least 1).
func (l *Leadership) CompletedCheckpoints(retain int) *CompletedCheckpointStore {
	return &CompletedCheckpointStore{l: l, retain: max(retain, 1)}
}

func (s *Services) completedPrefix(jobID string) string { return s.jobPrefix(jobID) + "completed/" }

// completedKey orders by ID as a string: 20 digits hold every int64.
func (s *Services) completedKey(jobID string, id int64) string {
	return fmt.Sprintf("%s%020d", s.completedPrefix(jobID), id)
}

// AddCompleted records, fenced, that checkpoint id of the job completed
// with the given pointer, and drops the pointers beyond the newest retain.
// It returns the dropped ones, whose data the caller may now discard. id
// must be greater than every recorded one.
func (c *CompletedCheckpointStore) AddCompleted(ctx context.Context, jobID string, id int64, pointer string) ([]CompletedCheckpoint, error) {
	if err := checkJobID(jobID); err != nil {
		return nil, err
	}
	if id <= 0 {
		return nil, fmt.Errorf("ha: checkpoint id %d of job %s is not positive", id, jobID)
	}
	if pointer == "" || len(pointer) > maxPointerBytes {
		return nil, fmt.Errorf("ha: pointer of checkpoint %d of job %s is %d bytes; expected 1 to %d", id, jobID, len(pointer), maxPointerBytes)
	}
	s := c.l.s
	for {
		all, rev, err := c.list(ctx, jobID)
		if err != nil {
			return nil, err
		}
		if n := len(all); n > 0 && all[n-1].ID >= id {
			return nil, fmt.Errorf("ha: checkpoint %d of job %s is not newer than the latest recorded, %d", id, jobID, all[n-1].ID)
		}
		all = append(all, CompletedCheckpoint{ID: id, Pointer: pointer})
		var dropped []CompletedCheckpoint
		if len(all) > c.retain {
			dropped = all[:len(all)-c.retain]
		}
		ops := []clientv3.Op{clientv3.OpPut(s.completedKey(jobID, id), pointer)}
		for _, d := range dropped {
			ops = append(ops, clientv3.OpDelete(s.completedKey(jobID, d.ID)))
		}
		// Nothing under the prefix changed since the list.
		pfx := s.completedPrefix(jobID)
		unchanged := clientv3.Compare(clientv3.ModRevision(pfx).WithPrefix(), "<", rev+1)
		_, ok, err := c.l.fencedTxn(ctx, []clientv3.Cmp{unchanged}, ops...)
		if err != nil {
			return nil, err
		}
		if ok {
			return dropped, nil
		}
	}
}

// Latest returns the job's newest completed checkpoint; ok is false if
// none is recorded.
func (c *CompletedCheckpointStore) Latest(ctx context.Context, jobID string) (cp CompletedCheckpoint, ok bool, err error) {
	all, err := c.All(ctx, jobID)
	if err != nil || len(all) == 0 {
		return CompletedCheckpoint{}, false, err
	}
	return all[len(all)-1], true, nil
}

// All returns the job's recorded completed checkpoints, oldest first.
func (c *CompletedCheckpointStore) All(ctx context.Context, jobID string) ([]CompletedCheckpoint, error) {
	if err := checkJobID(jobID); err != nil {
		return nil, err
	}
	all, _, err := c.list(ctx, jobID)
	return all, err
}

func (c *CompletedCheckpointStore) list(ctx context.Context, jobID string) ([]CompletedCheckpoint, int64, error) {
	pfx := c.l.s.completedPrefix(jobID)
	resp, err := c.l.s.client.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, 0, fmt.Errorf("ha: read completed checkpoints of job %s: %w", jobID, err)
	}
	out := make([]CompletedCheckpoint, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		id, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), pfx), 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("ha: completed checkpoint key %q is corrupt", kv.Key)
		}
		out = append(out, CompletedCheckpoint{ID: id, Pointer: string(kv.Value)})
	}
	return out, resp.Header.Revision, nil
}
