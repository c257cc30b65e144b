package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"time"
	"unsafe"
)

// Built-in codecs for the basic kinds. Their Append methods do not allocate
// when dst has enough capacity.
var (
	String  Codec[string]  = stringCodec{}
	Bytes   Codec[[]byte]  = bytesCodec{}
	Bool    Codec[bool]    = boolCodec{}
	Int     Codec[int]     = intCodec{}
	Int8    Codec[int8]    = int8Codec{}
	Int16   Codec[int16]   = int16Codec{}
	Int32   Codec[int32]   = int32Codec{}
	Int64   Codec[int64]   = int64Codec{}
	Uint    Codec[uint]    = uintCodec{}
	Uint8   Codec[uint8]   = uint8Codec{}
	Uint16  Codec[uint16]  = uint16Codec{}
	Uint32  Codec[uint32]  = uint32Codec{}
	Uint64  Codec[uint64]  = uint64Codec{}
	Float32 Codec[float32] = float32Codec{}
	Float64 Codec[float64] = float64Codec{}
	// Time encodes the instant only (Unix seconds and nanoseconds); decoded
	// values are in UTC and carry no monotonic clock reading.
	Time     Codec[time.Time]     = timeCodec{}
	Duration Codec[time.Duration] = castCodec[time.Duration, int64, int64Codec]{}
)

const maxInt = int(^uint(0) >> 1)

// Errors returned for malformed input. All wrap ErrCorrupt.
var (
	errTruncated = fmt.Errorf("%w: unexpected end of input", ErrCorrupt)
	errOverflow  = fmt.Errorf("%w: varint overflows 64 bits", ErrCorrupt)
	errRange     = fmt.Errorf("%w: integer out of range for its type", ErrCorrupt)
	errBool      = fmt.Errorf("%w: invalid bool byte", ErrCorrupt)
	errLength    = fmt.Errorf("%w: length prefix exceeds remaining input", ErrCorrupt)
	errNanos     = fmt.Errorf("%w: time nanoseconds out of range", ErrCorrupt)
	errFlag      = fmt.Errorf("%w: invalid pointer flag byte", ErrCorrupt)
	errDepth     = fmt.Errorf("%w: nesting exceeds %d levels", ErrCorrupt, maxDepth)
	errConsumed  = fmt.Errorf("%w: decoder reported an invalid consumed length", ErrCorrupt)
)

// ---- varints ----

func appendUvarint(dst []byte, x uint64) []byte {
	for x >= 0x80 {
		dst = append(dst, byte(x)|0x80)
		x >>= 7
	}
	return append(dst, byte(x))
}

func appendVarint(dst []byte, x int64) []byte {
	return appendUvarint(dst, uint64(x<<1)^uint64(x>>63))
}

func decodeUvarint(src []byte) (uint64, int, error) {
	if len(src) > 0 && src[0] < 0x80 {
		return uint64(src[0]), 1, nil
	}
	x, n := binary.Uvarint(src)
	if n > 0 {
		return x, n, nil
	}
	if n == 0 {
		return 0, 0, errTruncated
	}
	return 0, 0, errOverflow
}

func decodeVarint(src []byte) (int64, int, error) {
	u, n, err := decodeUvarint(src)
	return int64(u>>1) ^ -int64(u&1), n, err
}

// decodeLen decodes a uvarint length or count and checks that at least
// length*minSize bytes remain after it. minSize must be at least 1.
func decodeLen(src []byte, minSize int) (int, int, error) {
	l, n, err := decodeUvarint(src)
	if err != nil {
		return 0, 0, err
	}
	if l > uint64((len(src)-n)/minSize) {
		return 0, 0, errLength
	}
	return int(l), n, nil
}

// ---- primitive encoders and decoders shared by all codecs ----

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func decodeBool(src []byte) (bool, int, error) {
	if len(src) == 0 {
		return false, 0, errTruncated
	}
	switch src[0] {
	case 0:
		return false, 1, nil
	case 1:
		return true, 1, nil
	}
	return false, 0, errBool
}

func decodeByte(src []byte) (byte, int, error) {
	if len(src) == 0 {
		return 0, 0, errTruncated
	}
	return src[0], 1, nil
}

func decodeSigned(src []byte, lo, hi int64) (int64, int, error) {
	v, n, err := decodeVarint(src)
	if err != nil {
		return 0, 0, err
	}
	if v < lo || v > hi {
		return 0, 0, errRange
	}
	return v, n, nil
}

func decodeUnsigned(src []byte, hi uint64) (uint64, int, error) {
	v, n, err := decodeUvarint(src)
	if err != nil {
		return 0, 0, err
	}
	if v > hi {
		return 0, 0, errRange
	}
	return v, n, nil
}

func appendFloat32(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
}

func decodeFloat32(src []byte) (float32, int, error) {
	if len(src) < 4 {
		return 0, 0, errTruncated
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(src)), 4, nil
}

func appendFloat64(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

func decodeFloat64(src []byte) (float64, int, error) {
	if len(src) < 8 {
		return 0, 0, errTruncated
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(src)), 8, nil
}

func appendString(dst []byte, s string) []byte {
	dst = appendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeString copies: the result never aliases src.
func decodeString(src []byte) (string, int, error) {
	l, n, err := decodeLen(src, 1)
	if err != nil {
		return "", 0, err
	}
	return string(src[n : n+l]), n + l, nil
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = appendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// decodeBytes copies: the result never aliases src. Empty input decodes as nil.
func decodeBytes(src []byte) ([]byte, int, error) {
	l, n, err := decodeLen(src, 1)
	if err != nil || l == 0 {
		return nil, n, err
	}
	b := make([]byte, l)
	copy(b, src[n:])
	return b, n + l, nil
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = appendVarint(dst, t.Unix())
	return appendUvarint(dst, uint64(t.Nanosecond()))
}

func decodeTime(src []byte) (time.Time, int, error) {
	sec, n, err := decodeVarint(src)
	if err != nil {
		return time.Time{}, 0, err
	}
	ns, m, err := decodeUvarint(src[n:])
	if err != nil {
		return time.Time{}, 0, err
	}
	if ns >= 1e9 {
		return time.Time{}, 0, errNanos
	}
	return time.Unix(sec, int64(ns)).UTC(), n + m, nil
}

// ---- basic kinds ----

// kind identifies a type whose memory layout is that of a basic kind handled
// without reflection. kOther means "not basic".
type kind uint8

const (
	kOther kind = iota
	kBool
	kInt
	kInt8
	kInt16
	kInt32
	kInt64
	kUint
	kUint8
	kUint16
	kUint32
	kUint64
	kUintptr
	kFloat32
	kFloat64
	kComplex64
	kComplex128
	kString
	kBytes // slice of a uint8-kind element
	kTime  // time.Time or a type defined as time.Time
)

// basicKind classifies t. Named types count by their underlying kind.
func basicKind(t reflect.Type) kind {
	switch t.Kind() {
	case reflect.Bool:
		return kBool
	case reflect.Int:
		return kInt
	case reflect.Int8:
		return kInt8
	case reflect.Int16:
		return kInt16
	case reflect.Int32:
		return kInt32
	case reflect.Int64:
		return kInt64
	case reflect.Uint:
		return kUint
	case reflect.Uint8:
		return kUint8
	case reflect.Uint16:
		return kUint16
	case reflect.Uint32:
		return kUint32
	case reflect.Uint64:
		return kUint64
	case reflect.Uintptr:
		return kUintptr
	case reflect.Float32:
		return kFloat32
	case reflect.Float64:
		return kFloat64
	case reflect.Complex64:
		return kComplex64
	case reflect.Complex128:
		return kComplex128
	case reflect.String:
		return kString
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return kBytes
		}
	case reflect.Struct:
		// time.Time has unexported fields; types defined from it
		// (type Stamp time.Time) share its layout.
		if t == timeType || t.ConvertibleTo(timeType) {
			return kTime
		}
	}
	return kOther
}

// minSize is the minimum encoded size of a value of basic kind k.
func (k kind) minSize() int {
	switch k {
	case kFloat32:
		return 4
	case kFloat64, kComplex64:
		return 8
	case kComplex128:
		return 16
	case kTime:
		return 2
	}
	return 1
}

// encBasic appends the encoding of the value of basic kind k at p.
func encBasic(k kind, dst []byte, p unsafe.Pointer) []byte {
	switch k {
	case kBool:
		return appendBool(dst, *(*bool)(p))
	case kInt:
		return appendVarint(dst, int64(*(*int)(p)))
	case kInt8:
		return append(dst, byte(*(*int8)(p)))
	case kInt16:
		return appendVarint(dst, int64(*(*int16)(p)))
	case kInt32:
		return appendVarint(dst, int64(*(*int32)(p)))
	case kInt64:
		return appendVarint(dst, *(*int64)(p))
	case kUint:
		return appendUvarint(dst, uint64(*(*uint)(p)))
	case kUint8:
		return append(dst, *(*uint8)(p))
	case kUint16:
		return appendUvarint(dst, uint64(*(*uint16)(p)))
	case kUint32:
		return appendUvarint(dst, uint64(*(*uint32)(p)))
	case kUint64:
		return appendUvarint(dst, *(*uint64)(p))
	case kUintptr:
		return appendUvarint(dst, uint64(*(*uintptr)(p)))
	case kFloat32:
		return appendFloat32(dst, *(*float32)(p))
	case kFloat64:
		return appendFloat64(dst, *(*float64)(p))
	case kComplex64:
		c := *(*complex64)(p)
		return appendFloat32(appendFloat32(dst, real(c)), imag(c))
	case kComplex128:
		c := *(*complex128)(p)
		return appendFloat64(appendFloat64(dst, real(c)), imag(c))
	case kString:
		return appendString(dst, *(*string)(p))
	case kBytes:
		return appendBytes(dst, *(*[]byte)(p))
	case kTime:
		return appendTime(dst, *(*time.Time)(p))
	}
	panic("codec: internal error: not a basic kind")
}

// decBasic decodes a value of basic kind k from src into p, overwriting it.
func decBasic(k kind, src []byte, p unsafe.Pointer) (int, error) {
	switch k {
	case kBool:
		v, n, err := decodeBool(src)
		*(*bool)(p) = v
		return n, err
	case kInt:
		v, n, err := decodeSigned(src, math.MinInt, math.MaxInt)
		*(*int)(p) = int(v)
		return n, err
	case kInt8:
		v, n, err := decodeByte(src)
		*(*int8)(p) = int8(v)
		return n, err
	case kInt16:
		v, n, err := decodeSigned(src, math.MinInt16, math.MaxInt16)
		*(*int16)(p) = int16(v)
		return n, err
	case kInt32:
		v, n, err := decodeSigned(src, math.MinInt32, math.MaxInt32)
		*(*int32)(p) = int32(v)
		return n, err
	case kInt64:
		v, n, err := decodeVarint(src)
		*(*int64)(p) = v
		return n, err
	case kUint:
		v, n, err := decodeUnsigned(src, math.MaxUint)
		*(*uint)(p) = uint(v)
		return n, err
	case kUint8:
		v, n, err := decodeByte(src)
		*(*uint8)(p) = v
		return n, err
	case kUint16:
		v, n, err := decodeUnsigned(src, math.MaxUint16)
		*(*uint16)(p) = uint16(v)
		return n, err
	case kUint32:
		v, n, err := decodeUnsigned(src, math.MaxUint32)
		*(*uint32)(p) = uint32(v)
		return n, err
	case kUint64:
		v, n, err := decodeUvarint(src)
		*(*uint64)(p) = v
		return n, err
	case kUintptr:
		v, n, err := decodeUnsigned(src, uint64(^uintptr(0)))
		*(*uintptr)(p) = uintptr(v)
		return n, err
	case kFloat32:
		v, n, err := decodeFloat32(src)
		*(*float32)(p) = v
		return n, err
	case kFloat64:
		v, n, err := decodeFloat64(src)
		*(*float64)(p) = v
		return n, err
	case kComplex64:
		if len(src) < 8 {
			return 0, errTruncated
		}
		re, _, _ := decodeFloat32(src)
		im, _, _ := decodeFloat32(src[4:])
		*(*complex64)(p) = complex(re, im)
		return 8, nil
	case kComplex128:
		if len(src) < 16 {
			return 0, errTruncated
		}
		re, _, _ := decodeFloat64(src)
		im, _, _ := decodeFloat64(src[8:])
		*(*complex128)(p) = complex(re, im)
		return 16, nil
	case kString:
		v, n, err := decodeString(src)
		*(*string)(p) = v
		return n, err
	case kBytes:
		v, n, err := decodeBytes(src)
		*(*[]byte)(p) = v
		return n, err
	case kTime:
		v, n, err := decodeTime(src)
		*(*time.Time)(p) = v
		return n, err
	}
	panic("codec: internal error: not a basic kind")
}

// ---- built-in codec types ----

type stringCodec struct{}

func (stringCodec) Append(dst []byte, v string) []byte { return appendString(dst, v) }

func (stringCodec) Decode(src []byte) (string, int, error) { return decodeString(src) }

func (stringCodec) sizeInfo() (int, bool) { return 1, false }

type bytesCodec struct{}

func (bytesCodec) Append(dst []byte, v []byte) []byte { return appendBytes(dst, v) }

func (bytesCodec) Decode(src []byte) ([]byte, int, error) { return decodeBytes(src) }

func (bytesCodec) sizeInfo() (int, bool) { return 1, false }

type boolCodec struct{}

func (boolCodec) Append(dst []byte, v bool) []byte { return appendBool(dst, v) }

func (boolCodec) Decode(src []byte) (bool, int, error) { return decodeBool(src) }

func (boolCodec) sizeInfo() (int, bool) { return 1, false }

type intCodec struct{}

func (intCodec) Append(dst []byte, v int) []byte { return appendVarint(dst, int64(v)) }

func (intCodec) Decode(src []byte) (int, int, error) {
	v, n, err := decodeSigned(src, math.MinInt, math.MaxInt)
	return int(v), n, err
}

func (intCodec) sizeInfo() (int, bool) { return 1, false }

type int8Codec struct{}

func (int8Codec) Append(dst []byte, v int8) []byte { return append(dst, byte(v)) }

func (int8Codec) Decode(src []byte) (int8, int, error) {
	v, n, err := decodeByte(src)
	return int8(v), n, err
}

func (int8Codec) sizeInfo() (int, bool) { return 1, false }

type int16Codec struct{}

func (int16Codec) Append(dst []byte, v int16) []byte { return appendVarint(dst, int64(v)) }

func (int16Codec) Decode(src []byte) (int16, int, error) {
	v, n, err := decodeSigned(src, math.MinInt16, math.MaxInt16)
	return int16(v), n, err
}

func (int16Codec) sizeInfo() (int, bool) { return 1, false }

type int32Codec struct{}

func (int32Codec) Append(dst []byte, v int32) []byte { return appendVarint(dst, int64(v)) }

func (int32Codec) Decode(src []byte) (int32, int, error) {
	v, n, err := decodeSigned(src, math.MinInt32, math.MaxInt32)
	return int32(v), n, err
}

func (int32Codec) sizeInfo() (int, bool) { return 1, false }

type int64Codec struct{}

func (int64Codec) Append(dst []byte, v int64) []byte { return appendVarint(dst, v) }

func (int64Codec) Decode(src []byte) (int64, int, error) { return decodeVarint(src) }

func (int64Codec) sizeInfo() (int, bool) { return 1, false }

type uintCodec struct{}

func (uintCodec) Append(dst []byte, v uint) []byte { return appendUvarint(dst, uint64(v)) }

func (uintCodec) Decode(src []byte) (uint, int, error) {
	v, n, err := decodeUnsigned(src, math.MaxUint)
	return uint(v), n, err
}

func (uintCodec) sizeInfo() (int, bool) { return 1, false }

type uint8Codec struct{}

func (uint8Codec) Append(dst []byte, v uint8) []byte { return append(dst, v) }

func (uint8Codec) Decode(src []byte) (uint8, int, error) { return decodeByte(src) }

func (uint8Codec) sizeInfo() (int, bool) { return 1, false }

type uint16Codec struct{}

func (uint16Codec) Append(dst []byte, v uint16) []byte { return appendUvarint(dst, uint64(v)) }

func (uint16Codec) Decode(src []byte) (uint16, int, error) {
	v, n, err := decodeUnsigned(src, math.MaxUint16)
	return uint16(v), n, err
}

func (uint16Codec) sizeInfo() (int, bool) { return 1, false }

type uint32Codec struct{}

func (uint32Codec) Append(dst []byte, v uint32) []byte { return appendUvarint(dst, uint64(v)) }

func (uint32Codec) Decode(src []byte) (uint32, int, error) {
	v, n, err := decodeUnsigned(src, math.MaxUint32)
	return uint32(v), n, err
}

func (uint32Codec) sizeInfo() (int, bool) { return 1, false }

type uint64Codec struct{}

func (uint64Codec) Append(dst []byte, v uint64) []byte { return appendUvarint(dst, v) }

func (uint64Codec) Decode(src []byte) (uint64, int, error) { return decodeUvarint(src) }

func (uint64Codec) sizeInfo() (int, bool) { return 1, false }

type float32Codec struct{}

func (float32Codec) Append(dst []byte, v float32) []byte { return appendFloat32(dst, v) }

func (float32Codec) Decode(src []byte) (float32, int, error) { return decodeFloat32(src) }

func (float32Codec) sizeInfo() (int, bool) { return 4, false }

type float64Codec struct{}

func (float64Codec) Append(dst []byte, v float64) []byte { return appendFloat64(dst, v) }

func (float64Codec) Decode(src []byte) (float64, int, error) { return decodeFloat64(src) }

func (float64Codec) sizeInfo() (int, bool) { return 8, false }

type timeCodec struct{}

func (timeCodec) Append(dst []byte, v time.Time) []byte { return appendTime(dst, v) }

func (timeCodec) Decode(src []byte) (time.Time, int, error) { return decodeTime(src) }

func (timeCodec) sizeInfo() (int, bool) { return 2, false }

// castCodec encodes T, a type with the memory layout of U (a named type whose
// underlying type is U's), with the built-in codec C for U.
type castCodec[T, U any, C Codec[U]] struct{ c C }

func (k castCodec[T, U, C]) Append(dst []byte, v T) []byte {
	return k.c.Append(dst, *(*U)(unsafe.Pointer(&v)))
}

func (k castCodec[T, U, C]) Decode(src []byte) (T, int, error) {
	u, n, err := k.c.Decode(src)
	return *(*T)(unsafe.Pointer(&u)), n, err
}

func (k castCodec[T, U, C]) sizeInfo() (int, bool) {
	if s, ok := any(k.c).(sizer); ok {
		return s.sizeInfo()
	}
	return 1, false
}
