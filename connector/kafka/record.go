package kafka

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is one Kafka record, as a source reads it and as a sink's
// serializer fills it in.
type Record struct {
	Topic     string
	Partition int32 // a sink's partitioner decides unless it is kgo.ManualPartitioner
	Offset    int64 // set by the source; ignored by the sink
	Key       []byte
	Value     []byte
	Headers   []Header
	// Timestamp is the record's time. The source emits it as the record's
	// event time; a sink that leaves it zero writes the stream record's
	// timestamp, or the produce time when the stream record has none.
	Timestamp time.Time
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Deserializer turns a Kafka record into a stream value. Returning ErrSkip
// drops the record; any other error fails the job with the record's
// topic, partition and offset.
type Deserializer[T any] func(r *Record) (T, error)

// ErrSkip, returned by a Deserializer, drops the record.
var ErrSkip = errors.New("kafka: skip record")

// Bytes is the deserializer of raw values.
func Bytes(r *Record) ([]byte, error) { return r.Value, nil }

// String is the deserializer of values as text.
func String(r *Record) (string, error) { return string(r.Value), nil }

// JSON returns a deserializer that decodes each value as a JSON document
// into a T.
func JSON[T any]() Deserializer[T] {
	return func(r *Record) (T, error) {
		var v T
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return v, fmt.Errorf("decode JSON into %T: %w", v, err)
		}
		return v, nil
	}
}

// Serializer fills in the Kafka record for a stream value: at least its
// Value, optionally Key, Headers, Timestamp, Topic (the sink's topic when
// empty) and Partition (for kgo.ManualPartitioner).
type Serializer[T any] func(v T, r *Record) error

// StringValues is the serializer that writes a string as the value.
func StringValues(v string, r *Record) error { r.Value = []byte(v); return nil }

// BytesValues is the serializer that writes raw bytes as the value.
func BytesValues(v []byte, r *Record) error { r.Value = v; return nil }

// JSONValues returns a serializer that writes each value as a JSON
// document.
func JSONValues[T any]() Serializer[T] {
	return func(v T, r *Record) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %T as JSON: %w", v, err)
		}
		r.Value = b
		return nil
	}
}

func fromKgo(kr *kgo.Record, r *Record) {
	r.Topic, r.Partition, r.Offset = kr.Topic, kr.Partition, kr.Offset
	r.Key, r.Value, r.Timestamp = kr.Key, kr.Value, kr.Timestamp
	r.Headers = nil
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, Header{Key: h.Key, Value: h.Value})
	}
}

func toKgo(r *Record) *kgo.Record {
	kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	if len(r.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			kr.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	return kr
}
