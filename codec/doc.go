// Package codec provides explicit, fast binary codecs for the records that
// cross task boundaries in weir: records shipped over the network exchange
// between worker processes, and records written into state backends.
//
// # Why explicit codecs
//
// A weir job is a graph of tasks that may run in different processes on
// different machines. The exchange that moves records between tasks never
// assumes the producer and the consumer share a process, so a record cannot
// be handed over as a Go value: it has to become bytes on one side and a
// fresh value on the other. The same holds for keyed state, which outlives
// any single process (checkpoints, restores, rescaling). Making the codec an
// explicit value of type [Codec] keeps that boundary visible in the API,
// lets an operator choose the representation of its records, and lets the
// runtime encode and decode without per-record reflection or interface
// boxing.
//
// # Obtaining a codec
//
// The built-in codecs ([String], [Bytes], [Bool], [Int], ..., [Float64],
// [Time], [Duration]) cover the basic kinds. [For] returns a codec for any
// supported type T:
//
//   - basic kinds and named types whose underlying kind is basic
//     (type Word string) reuse the built-in encodings;
//   - types implementing encoding.BinaryAppender or encoding.BinaryMarshaler
//     together with encoding.BinaryUnmarshaler (on T or *T) use those methods
//     (basic kinds take precedence, and methods a struct only gets by
//     embedding, as in struct{ time.Time; Name string }, are ignored so
//     that no field is silently dropped); Append panics if such a method
//     returns an error, since Append cannot report one;
//   - structs (exported fields only), pointers, slices, arrays and maps are
//     handled by a codec compiled once per type from reflection and cached.
//     Recursive types such as linked lists and trees are supported.
//
// Interfaces, functions, channels, unsafe pointers and structs with
// unexported fields are rejected with an error wrapping [ErrUnsupported].
// [Func] builds a codec from a pair of functions for anything else.
//
// # Wire format
//
// The format is compact and not self-describing; both sides must use the
// same codec for the same type.
//
//   - bool: one byte, 0 or 1.
//   - int8, uint8: one byte (two's complement for int8).
//   - int, int16, int32, int64 and time.Duration: zig-zag varint.
//   - uint, uint16, uint32, uint64, uintptr: unsigned varint.
//   - float32, float64: 4 or 8 bytes, IEEE 754 bits, little endian
//     (NaN payloads are preserved); complex numbers are two floats.
//   - string, []byte: uvarint length followed by the bytes, verbatim (strings
//     need not be valid UTF-8).
//   - time.Time: zig-zag varint Unix seconds, then uvarint nanoseconds
//     (0..999999999). The location and the monotonic clock reading are not
//     encoded; decoded times are in UTC.
//   - struct: the exported fields in declaration order, with no framing.
//   - array: the elements in order, with no length.
//   - pointer: one byte, 0 for nil or 1 followed by the pointee.
//   - slice: uvarint length followed by the elements.
//   - map: uvarint length followed by key, value pairs in map iteration
//     order (so the encoding of a map with more than one entry is not
//     deterministic and must not be used as a key or compared bytewise).
//   - BinaryAppender/BinaryMarshaler types: uvarint length followed by the
//     marshaled bytes.
//
// Empty slices, byte slices and maps decode as nil: nil and empty are not
// distinguished on the wire.
//
// # Safety
//
// Decoding never panics on malformed input and never trusts a length
// prefix: every length is checked against the remaining input before
// anything is allocated, so an allocation is bounded by a small multiple of
// the input size. Truncated or malformed input yields an error wrapping
// [ErrCorrupt]. Nesting of pointers, slices and maps in decoded values is
// limited to 10000 levels (deeper input is reported as corrupt), which keeps
// hostile input from exhausting the stack. Decoded values never alias the
// input buffer, which the exchange reuses.
//
// # Batches
//
// [AppendSlice] and [DecodeSlice] encode and decode a batch in place.
// Structs whose fields are all of basic kinds, directly or in nested
// structs of them (tuples, a word and a count), take a faster path with
// the same encoding: one loop over their fields, without a call per
// field.
package codec
