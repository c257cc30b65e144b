package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirproject/weir/connector"
)

// Delivery is a sink's guarantee.
type Delivery int

const (
	// ExactlyOnce writes each checkpoint's records in a Kafka transaction
	// that commits when the checkpoint completes: a read_committed
	// consumer sees every record once, however often the job failed.
	ExactlyOnce Delivery = iota
	// AtLeastOnce waits at every checkpoint until everything written is
	// acknowledged: nothing is lost, a restart may write records again.
	AtLeastOnce
	// None writes in the background and waits only at the end: records
	// may be lost or duplicated on failures.
	None
)

func (d Delivery) String() string {
	switch d {
	case ExactlyOnce:
		return "exactly-once"
	case AtLeastOnce:
		return "at-least-once"
	case None:
		return "none"
	}
	return fmt.Sprintf("Delivery(%d)", int(d))
}

// ParseDelivery parses exactly-once, at-least-once or none.
func ParseDelivery(s string) (Delivery, error) {
	for _, d := range []Delivery{ExactlyOnce, AtLeastOnce, None} {
		if d.String() == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("kafka: delivery %q: want exactly-once, at-least-once or none", s)
}

// SinkOptions configure a Sink. Brokers are required, and so is
// TransactionalIDPrefix for ExactlyOnce.
type SinkOptions struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Topic is where records go whose serializer set no topic.
	Topic string
	// Delivery is the guarantee; the zero value is ExactlyOnce.
	Delivery Delivery
	// TransactionalIDPrefix names the job's transactions:
	// <prefix>-<subtask>-<n>. It must be unique to the job and the same
	// when the job resumes from a checkpoint, which is how the lingering
	// transactions of a failed run are found and aborted.
	TransactionalIDPrefix string
	// TransactionTimeout is transaction.timeout.ms: a transaction open
	// longer is aborted by the broker, so it must cover a checkpoint
	// interval plus the time a checkpoint takes to complete, and any
	// time the job is down before it recovers. It may not exceed the
	// broker's transaction.max.timeout.ms. Default 15 minutes.
	TransactionTimeout time.Duration
	// CheckpointInterval is the job's checkpoint interval, to check that
	// TransactionTimeout is longer (0: not checked).
	CheckpointInterval time.Duration
	// Partitioner picks partitions; nil is Kafka's default (murmur2 of
	// the key, sticky for records without one). kgo.ManualPartitioner
	// takes Record.Partition.
	Partitioner kgo.Partitioner
	// ClientOptions are added to every franz-go client the sink makes.
	ClientOptions []kgo.Opt
	// Logger gets the sink's warnings; nil discards them.
	Logger *slog.Logger
}

// Sink writes stream values as Kafka records.
type Sink[T any] struct {
	opts      SinkOptions
	serialize Serializer[T]
}

// NewSink returns a sink that turns each value into a record with
// serialize.
func NewSink[T any](opts SinkOptions, serialize Serializer[T]) (*Sink[T], error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("kafka sink: no brokers")
	}
	if serialize == nil {
		return nil, errors.New("kafka sink: no serializer")
	}
	if opts.Delivery < ExactlyOnce || opts.Delivery > None {
		return nil, fmt.Errorf("kafka sink: unknown delivery %v", opts.Delivery)
	}
	if opts.TransactionTimeout == 0 {
		opts.TransactionTimeout = 15 * time.Minute
	}
	if opts.Delivery == ExactlyOnce {
		if opts.TransactionalIDPrefix == "" {
			return nil, errors.New("kafka sink: exactly-once needs a transactional ID prefix")
		}
		if opts.CheckpointInterval > 0 && opts.TransactionTimeout < opts.CheckpointInterval {
			return nil, fmt.Errorf("kafka sink: transaction.timeout.ms %d is shorter than the checkpoint interval %v: every transaction would be aborted before its checkpoint commits it",
				opts.TransactionTimeout.Milliseconds(), opts.CheckpointInterval)
		}
	}
	if opts.Partitioner == nil {
		opts.Partitioner = kgo.StickyKeyPartitioner(nil)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sink[T]{opts: opts, serialize: serialize}, nil
}

func (s *Sink[T]) client(extra ...kgo.Opt) (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(s.opts.Brokers...), kgo.RecordPartitioner(s.opts.Partitioner)}
	if s.opts.Topic != "" {
		opts = append(opts, kgo.DefaultProduceTopic(s.opts.Topic))
	}
	opts = append(opts, s.opts.ClientOptions...)
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka sink: %w", err)
	}
	return cl, nil
}

// NewWriter implements connector.Sink.
func (s *Sink[T]) NewWriter(ctx context.Context, sc connector.SinkContext) (connector.SinkWriter[T], error) {
	w := &writer[T]{sink: s, sc: sc, next: 1}
	if s.opts.Delivery != ExactlyOnce {
		cl, err := s.client()
		if err != nil {
			return nil, err
		}
		w.cl = cl
		return w, nil
	}
	admin, err := s.client()
	if err != nil {
		return nil, err
	}
	if err := s.checkTransactionTimeout(ctx, admin); err != nil {
		admin.Close()
		return nil, err
	}
	w.admin = admin
	return &txnWriter[T]{writer: w}, nil
}

// checkTransactionTimeout compares the transaction timeout with the
// brokers' transaction.max.timeout.ms, which would otherwise refuse every
// transaction with a less telling error.
func (s *Sink[T]) checkTransactionTimeout(ctx context.Context, admin *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
	if err != nil {
		return fmt.Errorf("kafka sink: connect to %v: %w", s.opts.Brokers, err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, b := range meta.Brokers {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeBroker
		r.ResourceName = strconv.Itoa(int(b.NodeID))
		r.ConfigNames = []string{"transaction.max.timeout.ms"}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		return fmt.Errorf("kafka sink: read the brokers' transaction.max.timeout.ms: %w", err)
	}
	timeout := s.opts.TransactionTimeout.Milliseconds()
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			s.opts.Logger.Warn("kafka sink: cannot read transaction.max.timeout.ms", "broker", r.ResourceName, "err", err)
			continue
		}
		for _, c := range r.Configs {
			if c.Name != "transaction.max.timeout.ms" || c.Value == nil {
				continue
			}
			limit, err := strconv.ParseInt(*c.Value, 10, 64)
			if err == nil && timeout > limit {
				return fmt.Errorf("kafka sink: transaction.timeout.ms %d exceeds the transaction.max.timeout.ms %d of broker %s: lower the sink's TransactionTimeout or raise the broker's limit",
					timeout, limit, r.ResourceName)
			}
		}
	}
	return nil
}

// writer is the writer of the none and at-least-once deliveries, and the
// shared part of the exactly-once one.
type writer[T any] struct {
	sink  *Sink[T]
	sc    connector.SinkContext
	cl    *kgo.Client // none, at-least-once: the producer
	admin *kgo.Client // exactly-once: commits, aborts
	rec   Record

	mu      sync.Mutex
	err     error // the first failed produce
	closing bool  // Close is flushing delivery none
	// next numbers the next transaction: <prefix>-<subtask>-<next>.
	next int64
}

// promise records the first produce failure; the task's next call
// returns it.
func (w *writer[T]) promise(_ *kgo.Record, err error) {
	if err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
	}
}

func (w *writer[T]) produceErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return fmt.Errorf("kafka sink: produce: %w", w.err)
	}
	return nil
}

// record serializes v.
func (w *writer[T]) record(v T, ts int64) (*kgo.Record, error) {
	w.rec = Record{Partition: -1}
	if err := w.sink.serialize(v, &w.rec); err != nil {
		return nil, fmt.Errorf("kafka sink: serialize %T: %w", v, err)
	}
	if w.rec.Timestamp.IsZero() && ts != math.MinInt64 {
		w.rec.Timestamp = time.UnixMilli(ts)
	}
	if w.rec.Topic == "" && w.sink.opts.Topic == "" {
		return nil, errors.New("kafka sink: a record has no topic and the sink has no default topic")
	}
	return toKgo(&w.rec), nil
}

func (w *writer[T]) Write(v T, ts int64) error {
	if err := w.produceErr(); err != nil {
		return err
	}
	kr, err := w.record(v, ts)
	if err != nil {
		return err
	}
	w.cl.Produce(context.Background(), kr, w.promise)
	return nil
}

// Flush waits for every record to be acknowledged. The runtime calls it at
// every checkpoint and at the end; with delivery none only the end waits.
func (w *writer[T]) Flush() error {
	if w.sink.opts.Delivery == None && !w.closing {
		return w.produceErr()
	}
	if err := w.cl.Flush(context.Background()); err != nil {
		return fmt.Errorf("kafka sink: flush: %w", err)
	}
	return w.produceErr()
}

// Close flushes what delivery none left in the buffers, and closes.
func (w *writer[T]) Close() error {
	var err error
	if w.cl != nil {
		if w.sink.opts.Delivery == None {
			w.closing = true
			err = w.Flush()
		}
		w.cl.Close()
		w.cl = nil
	}
	if w.admin != nil {
		w.admin.Close()
		w.admin = nil
	}
	return err
}

// Abort closes without waiting, after a failure.
func (w *writer[T]) Abort() error {
	if w.cl != nil {
		w.cl.Close()
		w.cl = nil
	}
	if w.admin != nil {
		w.admin.Close()
		w.admin = nil
	}
	return nil
}
