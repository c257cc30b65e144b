package codec

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Codec encodes and decodes values of type T. Implementations must be safe
// for concurrent use.
type Codec[T any] interface {
	// Append appends the encoding of v to dst and returns the extended slice.
	Append(dst []byte, v T) []byte
	// Decode decodes one value from the front of src and returns it with the
	// number of bytes consumed. Truncated or malformed input returns an error
	// wrapping ErrCorrupt (never a panic, never a huge allocation from a bogus
	// length).
	Decode(src []byte) (v T, n int, err error)
}

// ErrCorrupt is wrapped by every error returned for truncated or malformed
// input.
var ErrCorrupt = errors.New("codec: corrupt or truncated input")

// ErrUnsupported is wrapped by the error [For] returns for types that have no
// codec.
var ErrUnsupported = errors.New("codec: unsupported type")

// sizer is implemented by the codecs of this package. It lets batch and
// container decoders bound an element count by the remaining input.
type sizer interface {
	// sizeInfo returns the minimum number of bytes one encoded value takes
	// and whether the encoding is always empty (zero-size types).
	sizeInfo() (min int, empty bool)
}

// For returns the codec for T.
//
// Basic kinds (and named types whose underlying kind is basic, such as
// type Word string) get the built-in encodings. Types whose value or pointer
// implements encoding.BinaryAppender or encoding.BinaryMarshaler, and whose
// pointer implements encoding.BinaryUnmarshaler, are encoded with those
// methods as a length-prefixed blob. Structs with only exported fields,
// pointers, slices, arrays and maps get a codec compiled from reflection once
// per type and cached; recursive types are supported.
//
// Interfaces, functions, channels, unsafe pointers and structs with
// unexported fields return an error wrapping [ErrUnsupported] that names the
// offending type (and field).
//
// For is cheap after the first call for a type, but callers should still
// obtain codecs once, outside the per-record path.
func For[T any]() (Codec[T], error) {
	t := reflect.TypeFor[T]()
	if e, ok := forCache.Load(t); ok {
		return entryCodec[T](e.(forEntry))
	}
	c, err := build[T](t)
	e, _ := forCache.LoadOrStore(t, forEntry{c: c, err: err})
	return entryCodec[T](e.(forEntry))
}

// MustFor is like [For] but panics if T has no codec. It is meant for
// package-level variables and tests.
func MustFor[T any]() Codec[T] {
	c, err := For[T]()
	if err != nil {
		panic(err)
	}
	return c
}

// forCache maps reflect.Type to a forEntry holding the Codec[T] for it.
var forCache sync.Map

type forEntry struct {
	c   any // Codec[T]
	err error
}

func entryCodec[T any](e forEntry) (Codec[T], error) {
	if e.err != nil {
		return nil, e.err
	}
	return e.c.(Codec[T]), nil
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
)

// builtins maps the exact types of the built-in codecs to them.
var builtins = map[reflect.Type]any{
	reflect.TypeFor[string]():  String,
	reflect.TypeFor[[]byte]():  Bytes,
	reflect.TypeFor[bool]():    Bool,
	reflect.TypeFor[int]():     Int,
	reflect.TypeFor[int8]():    Int8,
	reflect.TypeFor[int16]():   Int16,
	reflect.TypeFor[int32]():   Int32,
	reflect.TypeFor[int64]():   Int64,
	reflect.TypeFor[uint]():    Uint,
	reflect.TypeFor[uint8]():   Uint8,
	reflect.TypeFor[uint16]():  Uint16,
	reflect.TypeFor[uint32]():  Uint32,
	reflect.TypeFor[uint64]():  Uint64,
	reflect.TypeFor[float32](): Float32,
	reflect.TypeFor[float64](): Float64,
	timeType:                   Time,
	durationType:               Duration,
}

func build[T any](t reflect.Type) (Codec[T], error) {
	if c, ok := builtins[t]; ok {
		return c.(Codec[T]), nil
	}
	if c := castFor[T](basicKind(t)); c != nil {
		return c, nil
	}
	n, err := nodeFor(t)
	if err != nil {
		return nil, err
	}
	return reflectCodec[T]{n: n, scratch: &sync.Pool{New: func() any { return new(T) }}}, nil
}

// castFor returns a codec for a type T whose memory layout is that of the
// basic kind k, reusing the built-in codec through an unsafe conversion.
// It returns nil for kinds without a built-in codec.
func castFor[T any](k kind) Codec[T] {
	switch k {
	case kBool:
		return castCodec[T, bool, boolCodec]{}
	case kInt:
		return castCodec[T, int, intCodec]{}
	case kInt8:
		return castCodec[T, int8, int8Codec]{}
	case kInt16:
		return castCodec[T, int16, int16Codec]{}
	case kInt32:
		return castCodec[T, int32, int32Codec]{}
	case kInt64:
		return castCodec[T, int64, int64Codec]{}
	case kUint:
		return castCodec[T, uint, uintCodec]{}
	case kUint8:
		return castCodec[T, uint8, uint8Codec]{}
	case kUint16:
		return castCodec[T, uint16, uint16Codec]{}
	case kUint32:
		return castCodec[T, uint32, uint32Codec]{}
	case kUint64:
		return castCodec[T, uint64, uint64Codec]{}
	case kFloat32:
		return castCodec[T, float32, float32Codec]{}
	case kFloat64:
		return castCodec[T, float64, float64Codec]{}
	case kString:
		return castCodec[T, string, stringCodec]{}
	case kBytes:
		return castCodec[T, []byte, bytesCodec]{}
	case kTime:
		return castCodec[T, time.Time, timeCodec]{}
	}
	return nil
}

// Func makes a codec from two functions. decodeFn must follow the contract of
// [Codec.Decode]; a consumed count outside [0, len(src)] is reported as
// corrupt input. Func panics if either function is nil.
func Func[T any](appendFn func([]byte, T) []byte, decodeFn func([]byte) (T, int, error)) Codec[T] {
	if appendFn == nil || decodeFn == nil {
		panic("codec: Func called with a nil function")
	}
	return funcCodec[T]{app: appendFn, dec: decodeFn}
}

type funcCodec[T any] struct {
	app func([]byte, T) []byte
	dec func([]byte) (T, int, error)
}

func (c funcCodec[T]) Append(dst []byte, v T) []byte { return c.app(dst, v) }

func (c funcCodec[T]) Decode(src []byte) (T, int, error) {
	v, n, err := c.dec(src)
	if err == nil && (n < 0 || n > len(src)) {
		var zero T
		return zero, 0, errConsumed
	}
	return v, n, err
}

// AppendSlice appends a batch: the uvarint count of vs followed by each
// element encoded with c.
func AppendSlice[T any](c Codec[T], dst []byte, vs []T) []byte {
	dst = appendUvarint(dst, uint64(len(vs)))
	if sc, ok := c.(sliceAppender[T]); ok {
		return sc.appendSlice(dst, vs)
	}
	for i := range vs {
		dst = c.Append(dst, vs[i])
	}
	return dst
}

// sliceAppender and sliceDecoder are implemented by codecs that encode a
// batch faster than element by element. decodeSlice decodes len(vs)
// elements from src into vs, which holds zero values, and returns the
// bytes consumed.
type sliceAppender[T any] interface {
	appendSlice(dst []byte, vs []T) []byte
}

type sliceDecoder[T any] interface {
	decodeSlice(vs []T, src []byte) (int, error)
}

// DecodeSlice decodes a batch written by [AppendSlice] from the front of src,
// appending the elements to dst (reusing its capacity). It returns the
// extended slice and the number of bytes consumed. On error it returns dst
// with its original length.
//
// The count is checked against the remaining input before anything is
// allocated. For codecs not created by this package every element is assumed
// to take at least one byte.
func DecodeSlice[T any](c Codec[T], dst []T, src []byte) ([]T, int, error) {
	cnt, n, err := decodeUvarint(src)
	if err != nil {
		return dst, 0, err
	}
	minSize, empty := 1, false
	if s, ok := c.(sizer); ok {
		minSize, empty = s.sizeInfo()
		minSize = max(minSize, 1)
	}
	if empty {
		// Values of zero-size types encode to nothing; decoding them yields
		// the zero value and consumes nothing.
		var zero T
		if unsafe.Sizeof(zero) == 0 {
			if cnt > uint64(maxInt-len(dst)) {
				return dst, 0, errLength
			}
			return append(dst, make([]T, int(cnt))...), n, nil
		}
	}
	if cnt > uint64((len(src)-n)/minSize) {
		return dst, 0, errLength
	}
	orig := len(dst)
	dst = slices.Grow(dst, int(cnt))
	if sd, ok := c.(sliceDecoder[T]); ok {
		dst = dst[:orig+int(cnt)]
		m, err := sd.decodeSlice(dst[orig:], src[n:])
		if err == nil && (m < 0 || m > len(src)-n) {
			err = errConsumed
		}
		if err != nil {
			clear(dst[orig:])
			return dst[:orig], 0, err
		}
		return dst, n + m, nil
	}
	for range cnt {
		v, m, err := c.Decode(src[n:])
		if err == nil && (m < 0 || m > len(src)-n) {
			err = errConsumed
		}
		if err != nil {
			clear(dst[orig:])
			return dst[:orig], 0, err
		}
		dst = append(dst, v)
		n += m
	}
	return dst, n, nil
}

// unsupportedError reports a type without a codec.
type unsupportedError struct {
	root   reflect.Type // the type passed to For
	typ    reflect.Type // the offending type
	path   []string     // from typ up to root, innermost first
	reason string
}

func (e *unsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "codec: unsupported type %v", e.typ)
	if e.root != nil && e.root != e.typ {
		fmt.Fprintf(&b, " (in %v at ", e.root)
		for i := len(e.path) - 1; i >= 0; i-- {
			b.WriteString(e.path[i])
		}
		b.WriteString(")")
	}
	if e.reason != "" {
		b.WriteString(": ")
		b.WriteString(e.reason)
	}
	return b.String()
}

func (e *unsupportedError) Unwrap() error { return ErrUnsupported }
