package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnWriter is the exactly-once writer. Every checkpoint's records go in a
// transaction of their own, under a transactional ID of its own
// (<prefix>-<subtask>-<n>), written by a producer client made for it. At
// the barrier the client flushes and is closed with its transaction still
// open; the committable holds the transactional ID with the producer ID
// and epoch, which is all an EndTxn request needs to commit it later,
// from this process or from the one that recovers the job (Flink's
// FlinkKafkaInternalProducer.resumeTransaction does the same). A new ID
// per transaction is what lets the next one begin while the last waits
// for its checkpoint to complete.
type txnWriter[T any] struct {
	*writer[T]
	txnID string // of the open transaction, "" when none
	// cleaned: lingering transactions of earlier runs are aborted. It
	// waits for the first write, prepare or commit, since the runtime
	// commits the restored transactions after creating the writer, and
	// those must not be aborted.
	cleaned bool
}

// committable is a prepared transaction, or only the checkpoint when the
// writer had nothing to write (TxnID empty).
type committable struct {
	TxnID      string `json:"id,omitempty"`
	ProducerID int64  `json:"pid,omitempty"`
	Epoch      int16  `json:"epoch,omitempty"`
	Checkpoint int64  `json:"chk"`
}

// ctx bounds one step of the protocol (a flush, a commit, the cleanup):
// a broker that does not answer fails the task rather than stall it.
func (w *txnWriter[T]) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

// begin starts the transaction of the records up to the next checkpoint.
func (w *txnWriter[T]) begin() error {
	if err := w.cleanup(); err != nil {
		return err
	}
	id := fmt.Sprintf("%s-%d-%d", w.sink.opts.TransactionalIDPrefix, w.sc.Subtask, w.next)
	// The client's InitProducerID fences and aborts whatever an earlier
	// run left open under the same ID.
	cl, err := w.sink.client(kgo.TransactionalID(id), kgo.TransactionTimeout(w.sink.opts.TransactionTimeout))
	if err != nil {
		return err
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return fmt.Errorf("kafka sink: begin transaction %s: %w", id, err)
	}
	w.cl, w.txnID = cl, id
	w.mu.Lock()
	w.err = nil
	w.mu.Unlock()
	return nil
}

func (w *txnWriter[T]) Write(v T, ts int64) error {
	if w.cl == nil {
		if err := w.begin(); err != nil {
			return err
		}
	}
	return w.writer.Write(v, ts)
}

// Flush is not called for a committer: PrepareCommit flushes.
func (w *txnWriter[T]) Flush() error { return nil }

// PrepareCommit flushes the open transaction and closes its client
// without ending it.
func (w *txnWriter[T]) PrepareCommit(checkpointID int64) ([]byte, error) {
	if err := w.cleanup(); err != nil {
		return nil, err
	}
	c := committable{Checkpoint: checkpointID}
	if w.cl != nil {
		ctx, cancel := w.ctx()
		defer cancel()
		if err := w.cl.Flush(ctx); err != nil {
			return nil, fmt.Errorf("kafka sink: flush transaction %s: %w", w.txnID, err)
		}
		if err := w.produceErr(); err != nil {
			return nil, fmt.Errorf("transaction %s: %w", w.txnID, err)
		}
		pid, epoch, err := w.cl.ProducerID(ctx)
		if err != nil {
			return nil, fmt.Errorf("kafka sink: producer ID of transaction %s: %w", w.txnID, err)
		}
		c.TxnID, c.ProducerID, c.Epoch = w.txnID, pid, epoch
		w.cl.Close()
		w.cl, w.txnID = nil, ""
		w.next++
	}
	if checkpointID != math.MaxInt64 {
		w.next = max(w.next, checkpointID+1)
	}
	return json.Marshal(c)
}

// Commit ends the prepared transactions with EndTxn requests carrying
// their producer ID and epoch. It is idempotent: the broker answers a
// repeated commit of a committed transaction with success. It runs on
// recovery before the writer writes anything, and then also learns from
// the restored checkpoint how to number the next transactions.
func (w *txnWriter[T]) Commit(committables [][]byte) error {
	admin := w.admin
	if admin == nil {
		// The final commit comes after Close.
		var err error
		if admin, err = w.sink.client(); err != nil {
			return err
		}
		defer admin.Close()
	}
	for _, b := range committables {
		var c committable
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("kafka sink: decode committable %q: %w", b, err)
		}
		if !w.cleaned && c.Checkpoint != math.MaxInt64 {
			w.next = max(w.next, c.Checkpoint+1)
		}
		if c.TxnID == "" {
			continue
		}
		if err := w.commit(admin, c); err != nil {
			return err
		}
	}
	if w.admin != nil {
		return w.cleanup()
	}
	return nil
}

func (w *txnWriter[T]) commit(admin *kgo.Client, c committable) error {
	ctx, cancel := w.ctx()
	defer cancel()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = c.TxnID, c.ProducerID, c.Epoch, true
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		return fmt.Errorf("kafka sink: commit transaction %s: %w", c.TxnID, err)
	}
	err = kerr.ErrorForCode(resp.ErrorCode)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch),
		errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.InvalidProducerIDMapping):
		// As Flink: the transaction was finished already, by an earlier
		// commit that was not recorded, or it was aborted because it
		// outlived transaction.timeout.ms, which nothing can undo.
		w.sink.opts.Logger.Warn("kafka sink: transaction was finished before this commit; if its records are missing, transaction.timeout.ms is too short",
			"transactional_id", c.TxnID, "checkpoint", c.Checkpoint, "err", err)
		return nil
	}
	return fmt.Errorf("kafka sink: commit transaction %s of checkpoint %d: %w", c.TxnID, c.Checkpoint, err)
}

// cleanup aborts the transactions earlier runs of the job left open under
// its prefix, which would otherwise hold read_committed consumers back
// until they time out. Subtask i cleans up the IDs of the subtasks j with
// j mod parallelism = i, so that the IDs of a run with more subtasks are
// covered too and no two subtasks abort the same ID.
func (w *txnWriter[T]) cleanup() error {
	if w.cleaned {
		return nil
	}
	w.cleaned = true
	ctx, cancel := w.ctx()
	defer cancel()
	req := kmsg.NewPtrListTransactionsRequest()
	req.StateFilters = []string{"Ongoing"}
	req.DurationFilterMillis = -1
	resp, err := req.RequestWith(ctx, w.admin)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("kafka sink: list transactions to abort those an earlier run left open (needs Kafka 3.0 or later): %w", err)
	}
	prefix := w.sink.opts.TransactionalIDPrefix + "-"
	for _, ts := range resp.TransactionStates {
		rest, ok := strings.CutPrefix(ts.TransactionalID, prefix)
		if !ok || ts.TransactionalID == w.txnID {
			continue
		}
		sub, n, ok := strings.Cut(rest, "-")
		subtask, err1 := strconv.Atoi(sub)
		_, err2 := strconv.ParseInt(n, 10, 64)
		if !ok || err1 != nil || err2 != nil || subtask%w.sc.Parallelism != w.sc.Subtask {
			continue
		}
		if err := w.abort(ctx, ts.TransactionalID); err != nil {
			return err
		}
	}
	return nil
}

// abort fences the transactional ID with InitProducerID, which aborts its
// open transaction.
func (w *txnWriter[T]) abort(ctx context.Context, id string) error {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(id)
	req.TransactionTimeoutMillis = int32(w.sink.opts.TransactionTimeout.Milliseconds())
	req.ProducerID, req.ProducerEpoch = -1, -1
	for {
		resp, err := req.RequestWith(ctx, w.admin)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if errors.Is(err, kerr.ConcurrentTransactions) {
			// The broker is still writing the abort markers.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("kafka sink: abort lingering transaction %s: %w", id, err)
		}
		w.sink.opts.Logger.Info("kafka sink: aborted a transaction an earlier run left open", "transactional_id", id)
		return nil
	}
}

// Abort ends the open transaction without committing it, after a failure.
func (w *txnWriter[T]) Abort() error {
	if w.cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.cl.AbortBufferedRecords(ctx); err == nil {
			w.cl.EndTransaction(ctx, kgo.TryAbort) //nolint:errcheck // the next run aborts it otherwise
		}
	}
	return w.writer.Abort()
}

// Close closes; PrepareCommit at the end of the input took the last
// transaction.
func (w *txnWriter[T]) Close() error {
	if w.cl != nil {
		return w.Abort()
	}
	return w.writer.Close()
}
