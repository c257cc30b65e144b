package codec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// roundTrip encodes v with c, checks the decoded value against want with eq
// (reflect.DeepEqual when nil), checks that decoding consumes exactly the
// encoding even with trailing bytes, and that every strict prefix of the
// encoding is reported as corrupt. It returns the encoding.
func roundTrip[T any](t *testing.T, c Codec[T], v, want T, eq func(a, b T) bool) []byte {
	t.Helper()
	if eq == nil {
		eq = func(a, b T) bool { return reflect.DeepEqual(a, b) }
	}
	enc := c.Append(nil, v)

	// Appending to a non-empty buffer must leave the prefix alone and
	// produce the same bytes.
	prefix := []byte("prefix")
	enc2 := c.Append(append([]byte(nil), prefix...), v)
	if !bytes.HasPrefix(enc2, prefix) {
		t.Fatalf("%T: Append clobbered dst prefix: %x", v, enc2)
	}

	got, n, err := c.Decode(enc)
	if err != nil {
		t.Fatalf("%T: Decode(%x) (value %#v): %v", v, enc, v, err)
	}
	if n != len(enc) {
		t.Fatalf("%T: Decode consumed %d of %d bytes (%x)", v, n, len(enc), enc)
	}
	if !eq(got, want) {
		t.Fatalf("%T: round trip mismatch:\n got  %#v\n want %#v\n enc  %x", v, got, want, enc)
	}

	// Trailing data is left alone.
	withTail := append(append([]byte(nil), enc...), 0xff, 0x01, 0x02)
	got, n, err = c.Decode(withTail)
	if err != nil || n != len(enc) || !eq(got, want) {
		t.Fatalf("%T: Decode with trailing bytes: n=%d err=%v got %#v", v, n, err, got)
	}

	// The decoded value must not alias the input buffer.
	got, _, _ = c.Decode(withTail)
	for i := range withTail {
		withTail[i] = 0xAA
	}
	if !eq(got, want) {
		t.Fatalf("%T: decoded value aliases the input buffer: %#v", v, got)
	}

	checkTruncations(t, c, enc)
	return enc
}

// checkTruncations checks that every strict prefix of enc fails to decode
// with an error wrapping ErrCorrupt.
func checkTruncations[T any](t *testing.T, c Codec[T], enc []byte) {
	t.Helper()
	for i := range len(enc) {
		// Copy so that reads past the prefix hit the race detector/asan
		// bounds rather than the rest of enc.
		buf := append([]byte(nil), enc[:i]...)
		_, n, err := c.Decode(buf)
		if err == nil {
			t.Fatalf("%T: Decode of %d-byte prefix of %x succeeded (n=%d)", *new(T), i, enc, n)
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%T: Decode of %d-byte prefix: error %v does not wrap ErrCorrupt", *new(T), i, err)
		}
		if n != 0 {
			t.Fatalf("%T: Decode of %d-byte prefix returned n=%d with error", *new(T), i, n)
		}
	}
}
