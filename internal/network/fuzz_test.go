package network

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
)

// FuzzHandshake feeds arbitrary bytes to the server's side of the
// connection handshake (readHello) and to the dialer's (readReply), as a
// stranger on the data port could. A hello that parses is re-encoded by
// writeHello and must read back the same.
func FuzzHandshake(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"secret", "10.0.0.1:6121"}, {"\xff\x00", "[::1]:1"}} {
		var b bytes.Buffer
		writeHello(&b, s[0], s[1])
		f.Add(b.Bytes())
	}
	var b bytes.Buffer
	writeReply(&b, helloBadVersion, "protocol version 2, want 1")
	f.Add(b.Bytes())
	f.Add([]byte("WEIR\x01\xff\xff\xff\xff"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		version, token, addr, err := readHello(bytes.NewReader(data))
		if err == nil {
			if len(token)+len(addr) > len(data) {
				t.Fatalf("hello of %d bytes gave %d bytes of token and address", len(data), len(token)+len(addr))
			}
			var b bytes.Buffer
			if err := writeHello(&b, token, addr); err != nil {
				t.Fatal(err)
			}
			enc := b.Bytes()
			enc[4] = version
			v2, token2, addr2, err := readHello(bytes.NewReader(enc))
			if err != nil || v2 != version || token2 != token || addr2 != addr {
				t.Fatalf("round trip: %d %q %q -> %d %q %q %v", version, token, addr, v2, token2, addr2, err)
			}
		} else if !errors.Is(err, ErrProtocol) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("unexpected error %v", err)
		}

		status, msg, err := readReply(bytes.NewReader(data))
		if err == nil {
			var b bytes.Buffer
			writeReply(&b, status, msg)
			s2, msg2, err := readReply(&b)
			if err != nil || s2 != status || msg2 != msg {
				t.Fatalf("reply round trip: %d %q -> %d %q %v", status, msg, s2, msg2, err)
			}
		}
	})
}

// FuzzFrames reads arbitrary bytes as a channel stream: frame headers and
// the control payloads both ends parse (request, response, event, credit),
// as the producer's and the consumer's read loops do. Every payload that
// decodes is re-encoded and must decode to the same value.
func FuzzFrames(f *testing.F) {
	frame := func(typ byte, payload []byte) []byte {
		var b bytes.Buffer
		writeFrame(&b, typ, payload)
		return b.Bytes()
	}
	id := ChannelID{Job: "job", Result: "r1", Partition: 3, Attempt: "a-1", Subpartition: 7}
	var stream []byte
	stream = append(stream, frame(frameRequest, appendRequest(nil, id, 2, 32<<10))...)
	stream = append(stream, frame(frameResponse, []byte{statusOK})...)
	stream = append(stream, frame(frameData, []byte("hello"))...)
	stream = append(stream, frame(frameEvent, appendEvent(nil, Event{Kind: EventBarrier, Watermark: -1, Checkpoint: 42}))...)
	stream = append(stream, frame(frameBacklog, nil)...)
	stream = append(stream, frame(frameCredit, appendCredit(nil, 5))...)
	stream = append(stream, frame(frameError, []byte("boom"))...)
	f.Add(stream)
	f.Add(frame(frameRequest, appendRequest(nil, ChannelID{Partition: math.MaxInt32, Subpartition: 0}, 0, 1)))
	f.Add(frame(frameResponse, append([]byte{statusUnknownChannel}, "no channel"...)))
	f.Add(frame(frameEvent, appendEvent(nil, Event{Kind: EventWatermark, Watermark: math.MinInt64})))
	f.Add([]byte{frameData, 0xff, 0xff, 0xff, 0xff})

	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var hdr [frameHeaderSize]byte
		for {
			typ, n, err := readHeader(r, hdr[:], maxControlFrame)
			if err != nil {
				if n != 0 || !errors.Is(err, ErrProtocol) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("header: n=%d err=%v", n, err)
				}
				return
			}
			if n < 0 || n > maxControlFrame {
				t.Fatalf("frame of %d bytes passed the limit %d", n, maxControlFrame)
			}
			if n > r.Len() {
				return // a truncated frame: the read loops fail on ReadFull
			}
			payload := make([]byte, n)
			io.ReadFull(r, payload)
			switch typ {
			case frameRequest:
				id, credit, bufSize, err := decodeRequest(payload)
				if err != nil {
					checkProtocol(t, err)
					break
				}
				if id.Partition < 0 || id.Subpartition < 0 || credit < 0 || credit > maxCredit || bufSize < 1 || bufSize > maxBufferSize {
					t.Fatalf("request out of range: %+v credit %d buffer %d", id, credit, bufSize)
				}
				id2, c2, b2, err := decodeRequest(appendRequest(nil, id, credit, bufSize))
				if err != nil || id2 != id || c2 != credit || b2 != bufSize {
					t.Fatalf("request round trip: %+v %d %d -> %+v %d %d %v", id, credit, bufSize, id2, c2, b2, err)
				}
			case frameResponse:
				status, msg, err := decodeResponse(payload)
				if err != nil {
					checkProtocol(t, err)
					break
				}
				s2, m2, err := decodeResponse(append([]byte{status}, msg...))
				if err != nil || s2 != status || m2 != msg {
					t.Fatalf("response round trip: %d %q -> %d %q %v", status, msg, s2, m2, err)
				}
			case frameEvent:
				e, err := decodeEvent(payload)
				if err != nil {
					checkProtocol(t, err)
					break
				}
				if e2, err := decodeEvent(appendEvent(nil, e)); err != nil || e2 != e {
					t.Fatalf("event round trip: %+v -> %+v %v", e, e2, err)
				}
			case frameCredit:
				c, err := decodeCredit(payload)
				if err != nil {
					checkProtocol(t, err)
					break
				}
				if c < 0 || c > maxCredit {
					t.Fatalf("credit %d out of range", c)
				}
				if c2, err := decodeCredit(appendCredit(nil, c)); err != nil || c2 != c {
					t.Fatalf("credit round trip: %d -> %d %v", c, c2, err)
				}
			}
		}
	})
}

func checkProtocol(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("error %v does not wrap ErrProtocol", err)
	}
}

// TestDecodeRequestIndexes: a partition index that does not fit an int32
// is an error, not a negative index.
func TestDecodeRequestIndexes(t *testing.T) {
	b := appendString(nil, "job")
	b = appendString(b, "r")
	b = binary.AppendUvarint(b, math.MaxUint64)
	b = appendString(b, "a")
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, 1)
	if _, _, _, err := decodeRequest(b); !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v, want a protocol error", err)
	}
}
