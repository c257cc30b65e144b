package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Sentinel errors; the errors returned by this package wrap them with the
// peer address and the channel, so callers can test with errors.Is and
// still print something an operator can act on.
var (
	// ErrWrongToken means the two processes were configured with different
	// secret tokens (or only one of them with a token).
	ErrWrongToken = errors.New("wrong secret token")
	// ErrUnknownChannel means the producer's process has no subpartition
	// registered under the requested ChannelID (not deployed yet, already
	// released, or a stale attempt).
	ErrUnknownChannel = errors.New("unknown channel")
	// ErrAlreadyConsumed means another consumer already requested the
	// subpartition; a pipelined subpartition can be read once.
	ErrAlreadyConsumed = errors.New("channel already consumed")
	// ErrPeerClosed means the peer closed the channel or the connection
	// before the end of the partition.
	ErrPeerClosed = errors.New("peer closed the channel mid-stream")
	// ErrUnreachable means the peer's data server could not be dialed.
	ErrUnreachable = errors.New("peer unreachable")
	// ErrClosed means the local Manager, Gate or Sender was closed.
	ErrClosed = errors.New("closed")
	// ErrProtocol means the peer sent something this version does not
	// understand or violated flow control.
	ErrProtocol = errors.New("protocol violation")
	// ErrProducerFailed means the producer aborted the channel with an
	// error (Sender.Fail); the message is the producer's.
	ErrProducerFailed = errors.New("producer failed")
)

// ChannelID names one logical channel: the data one producer subtask
// writes for one consumer subtask. It maps to the execution graph as
// IntermediateResult (Result) → IntermediateResultPartition (Partition,
// produced by Attempt) → subpartition (the consumer subtask).
type ChannelID struct {
	// Job is the job ID.
	Job string
	// Result is the IntermediateDataSet ID (one per JobEdge).
	Result string
	// Partition is IntermediateResultPartition.PartitionNumber, the
	// producer subtask index.
	Partition int
	// Attempt is the producer's ExecutionAttemptID, so that a consumer
	// never reads the partition of a failed attempt after a restart.
	Attempt string
	// Subpartition is the consumer subtask index the data is for.
	Subpartition int
}

func (id ChannelID) String() string {
	return fmt.Sprintf("%s/%s/%d@%s->%d", id.Job, id.Result, id.Partition, id.Attempt, id.Subpartition)
}

// EventKind numbers match the runtime's EventKind, so the runtime can
// convert without a table.
type EventKind uint8

const (
	EventEndOfPartition EventKind = 1
	EventWatermark      EventKind = 2
	EventIdle           EventKind = 3
	EventActive         EventKind = 4
	EventBarrier        EventKind = 5
)

func (k EventKind) String() string {
	switch k {
	case EventEndOfPartition:
		return "end-of-partition"
	case EventWatermark:
		return "watermark"
	case EventIdle:
		return "idle"
	case EventActive:
		return "active"
	case EventBarrier:
		return "barrier"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is an in-band event: it travels on the channel's stream between
// data buffers and keeps its position.
type Event struct {
	Kind       EventKind
	Watermark  int64
	Checkpoint int64
}

// Frame types on a channel stream. Every frame is a 5-byte header (type,
// big-endian payload length) and the payload.
const (
	frameRequest  byte = 1 // consumer → producer: ChannelID, credit, buffer size
	frameResponse byte = 2 // producer → consumer: status, message
	frameData     byte = 3 // producer → consumer: one buffer, costs one credit
	frameEvent    byte = 4 // producer → consumer: kind, varints; no credit
	frameBacklog  byte = 5 // producer → consumer: blocked for credit, backlog
	frameError    byte = 6 // producer → consumer: the producer failed
	frameCredit   byte = 7 // consumer → producer: n more credits
)

const (
	frameHeaderSize = 5
	// maxControlFrame bounds every frame but data frames, whose bound is
	// the consumer's buffer size; a corrupt length must not make us
	// allocate gigabytes.
	maxControlFrame = 64 << 10
)

const (
	statusOK byte = iota
	statusUnknownChannel
	statusAlreadyConsumed
)

func putHeader(dst []byte, typ byte, n int) {
	dst[0] = typ
	binary.BigEndian.PutUint32(dst[1:5], uint32(n))
}

// readHeader reads a frame header; limit bounds the payload length.
func readHeader(r io.Reader, hdr []byte, limit int) (byte, int, error) {
	if _, err := io.ReadFull(r, hdr[:frameHeaderSize]); err != nil {
		return 0, 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:5]))
	if n > limit {
		return 0, 0, fmt.Errorf("%w: frame type %d of %d bytes exceeds %d", ErrProtocol, hdr[0], n, limit)
	}
	return hdr[0], n, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads the fields of a control frame; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint", ErrProtocol)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint", ErrProtocol)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: string of %d bytes in %d", ErrProtocol, n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = fmt.Errorf("%w: short frame", ErrProtocol)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func appendChannelID(dst []byte, id ChannelID) []byte {
	dst = appendString(dst, id.Job)
	dst = appendString(dst, id.Result)
	dst = binary.AppendUvarint(dst, uint64(id.Partition))
	dst = appendString(dst, id.Attempt)
	return binary.AppendUvarint(dst, uint64(id.Subpartition))
}

// index reads a partition or subpartition index: a uvarint that must fit
// an int32, so that a corrupt one never turns into a negative index.
func (d *decoder) index(what string) int {
	v := d.uvarint()
	if d.err == nil && v > math.MaxInt32 {
		d.err = fmt.Errorf("%w: %s index %d out of range", ErrProtocol, what, v)
		return 0
	}
	return int(v)
}

func (d *decoder) channelID() ChannelID {
	var id ChannelID
	id.Job = d.string()
	id.Result = d.string()
	id.Partition = d.index("partition")
	id.Attempt = d.string()
	id.Subpartition = d.index("subpartition")
	return id
}

const (
	// maxCredit bounds the credit a consumer may announce at once, and
	// maxBufferSize the buffer size it may ask for.
	maxCredit     = 1 << 20
	maxBufferSize = 1 << 30
)

func appendRequest(dst []byte, id ChannelID, credit, bufSize int) []byte {
	dst = appendChannelID(dst, id)
	dst = binary.AppendUvarint(dst, uint64(credit))
	return binary.AppendUvarint(dst, uint64(bufSize))
}

// decodeRequest parses the payload of a request frame: the channel, the
// consumer's initial credit and its buffer size.
func decodeRequest(b []byte) (id ChannelID, credit, bufSize int, err error) {
	d := decoder{b: b}
	id = d.channelID()
	c := d.uvarint()
	s := d.uvarint()
	switch {
	case d.err != nil:
		return ChannelID{}, 0, 0, d.err
	case c > maxCredit:
		return ChannelID{}, 0, 0, fmt.Errorf("%w: credit %d exceeds %d", ErrProtocol, c, maxCredit)
	case s == 0 || s > maxBufferSize:
		return ChannelID{}, 0, 0, fmt.Errorf("%w: buffer size %d not in [1, %d]", ErrProtocol, s, maxBufferSize)
	}
	return id, int(c), int(s), nil
}

func appendCredit(dst []byte, n int) []byte { return binary.AppendUvarint(dst, uint64(n)) }

// decodeCredit parses the payload of a credit frame.
func decodeCredit(b []byte) (int, error) {
	d := decoder{b: b}
	c := d.uvarint()
	if d.err != nil {
		return 0, d.err
	}
	if c > maxCredit {
		return 0, fmt.Errorf("%w: credit %d exceeds %d", ErrProtocol, c, maxCredit)
	}
	return int(c), nil
}

// decodeResponse parses the payload of a response frame: a status byte
// and a message.
func decodeResponse(b []byte) (status byte, msg string, err error) {
	if len(b) == 0 {
		return 0, "", fmt.Errorf("%w: empty response", ErrProtocol)
	}
	return b[0], string(b[1:]), nil
}

func appendEvent(dst []byte, e Event) []byte {
	dst = append(dst, byte(e.Kind))
	dst = binary.AppendVarint(dst, e.Watermark)
	return binary.AppendVarint(dst, e.Checkpoint)
}

func decodeEvent(b []byte) (Event, error) {
	d := decoder{b: b}
	e := Event{Kind: EventKind(d.byte())}
	e.Watermark = d.varint()
	e.Checkpoint = d.varint()
	if d.err != nil {
		return Event{}, d.err
	}
	if e.Kind < EventEndOfPartition || e.Kind > EventBarrier {
		return Event{}, fmt.Errorf("%w: unknown event kind %d", ErrProtocol, e.Kind)
	}
	return e, nil
}

// writeFrame writes a control frame in one Write, so that a frame is one
// yamux frame and never interleaves with another writer's.
func writeFrame(w io.Writer, typ byte, payload []byte) error {
	buf := make([]byte, frameHeaderSize+len(payload))
	putHeader(buf, typ, len(payload))
	copy(buf[frameHeaderSize:], payload)
	_, err := w.Write(buf)
	return err
}
