package types

import (
	"bytes"
	"math"
	"math/big"
	"sort"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Compare orders two values of type t: negative, zero or positive. It is a
// total order: NULL sorts first (callers apply NULLS FIRST/LAST and SQL's
// three-valued logic themselves), -0.0 equals 0.0 and NaN sorts above
// every other number and equals itself (as Java's Double.compare but with
// the zeros merged), strings and binary strings compare by bytes (UTF-8
// byte order is code-point order, as Flink's BinaryStringData), ARRAY and
// ROW compare element-wise, MAP and MULTISET compare their entries in key
// order. AppendKey produces bytes in the same order.
func Compare(a, b any, t DataType) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	switch t.Kind {
	case KindBoolean:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt, KindDate, KindTime,
		KindIntervalYearMonth, KindIntervalDayTime:
		return cmpInt(asInt64(a), asInt64(b))
	case KindFloat, KindDouble:
		return cmpFloat(toFloat64(a), toFloat64(b))
	case KindDecimal:
		return a.(Decimal).Cmp(b.(Decimal))
	case KindChar, KindVarChar:
		return strings.Compare(a.(string), b.(string))
	case KindBinary, KindVarBinary:
		return bytes.Compare(a.([]byte), b.([]byte))
	case KindTimestamp:
		return a.(Timestamp).Compare(b.(Timestamp))
	case KindTimestampLTZ:
		return a.(TimestampLTZ).Compare(b.(TimestampLTZ))
	case KindArray:
		x, y := a.([]any), b.([]any)
		et := t.ElemType()
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := Compare(x[i], y[i], et); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(x)), int64(len(y)))
	case KindRow:
		x, y := a.(Row), b.(Row)
		for i, f := range t.Fields {
			var xv, yv any
			if i < len(x) {
				xv = x[i]
			}
			if i < len(y) {
				yv = y[i]
			}
			if c := Compare(xv, yv, f.Type); c != 0 {
				return c
			}
		}
		return 0
	case KindMap, KindMultiset:
		kt, vt := mapTypes(t)
		x, y := sortedEntries(a.(*Map), kt), sortedEntries(b.(*Map), kt)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := Compare(x[i].k, y[i].k, kt); c != 0 {
				return c
			}
			if c := Compare(x[i].v, y[i].v, vt); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(x)), int64(len(y)))
	}
	return 0
}

// Equal reports Compare(a, b, t) == 0 (NULL equals NULL here; SQL's = is
// in the functions package).
func Equal(a, b any, t DataType) bool { return Compare(a, b, t) == 0 }

func mapTypes(t DataType) (DataType, DataType) {
	if t.Kind == KindMultiset {
		return t.ElemType(), Int().NotNull()
	}
	return t.KeyType(), t.ValueType()
}

type entry struct{ k, v any }

func sortedEntries(m *Map, kt DataType) []entry {
	es := make([]entry, len(m.Keys))
	for i := range m.Keys {
		es[i] = entry{m.Keys[i], m.Values[i]}
	}
	sort.SliceStable(es, func(i, j int) bool { return Compare(es[i].k, es[j].k, kt) < 0 })
	return es
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var keyBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// Hash returns a hash of v as type t that is equal for Equal values and
// stable across processes and platforms (it hashes the canonical key
// encoding with xxhash64), so it can route keys to subtasks.
func Hash(v any, t DataType) uint64 {
	switch t.Kind {
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt, KindDate, KindTime,
		KindIntervalYearMonth, KindIntervalDayTime:
		if v != nil {
			return mix64(uint64(asInt64(v)))
		}
	case KindChar, KindVarChar:
		if v != nil {
			return xxhash.Sum64String(v.(string))
		}
	}
	bp := keyBufPool.Get().(*[]byte)
	b := AppendKey((*bp)[:0], t, v)
	h := xxhash.Sum64(b)
	*bp = b
	keyBufPool.Put(bp)
	return h
}

// mix64 is a bijective finaliser (from SplitMix64) so small integers spread
// over all buckets.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// AppendKey appends an order-preserving encoding of v as type t: for
// values a, b of type t, bytes.Compare(AppendKey(nil,t,a), AppendKey(nil,t,b))
// has the sign of Compare(a, b, t). NULL sorts first. Encodings are
// self-delimiting, so keys of several columns concatenate into a composite
// key that orders column by column (used for sorted state in Pebble).
func AppendKey(buf []byte, t DataType, v any) []byte {
	if v == nil {
		return append(buf, 0x00)
	}
	buf = append(buf, 0x01)
	switch t.Kind {
	case KindBoolean:
		if v.(bool) {
			return append(buf, 1)
		}
		return append(buf, 0)
	case KindTinyInt:
		return append(buf, uint8(v.(int8))^0x80)
	case KindSmallInt:
		u := uint16(v.(int16)) ^ 0x8000
		return append(buf, byte(u>>8), byte(u))
	case KindInt, KindDate, KindIntervalYearMonth:
		return appendU32(buf, uint32(int32(asInt64(v)))^0x80000000)
	case KindBigInt, KindTime, KindIntervalDayTime:
		return appendU64(buf, uint64(asInt64(v))^(1<<63))
	case KindFloat:
		f := v.(float32)
		bits := math.Float32bits(f)
		switch {
		case f == 0:
			bits = 0
		case f != f:
			bits = 0x7fc00000
		}
		if bits&(1<<31) != 0 {
			bits = ^bits
		} else {
			bits |= 1 << 31
		}
		return appendU32(buf, bits)
	case KindDouble:
		f := v.(float64)
		bits := math.Float64bits(f)
		switch {
		case f == 0:
			bits = 0
		case f != f:
			bits = 0x7ff8000000000000
		}
		if bits&(1<<63) != 0 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		return appendU64(buf, bits)
	case KindDecimal:
		d := v.(Decimal).Rescale(t.Scale)
		if t.Precision <= 18 {
			if u, ok := d.UnscaledInt64(); ok {
				return appendU64(buf, uint64(u)^(1<<63))
			}
		}
		return appendInt128Key(buf, d)
	case KindChar, KindVarChar:
		return appendEscaped(buf, v.(string))
	case KindBinary, KindVarBinary:
		return appendEscaped(buf, string(v.([]byte)))
	case KindTimestamp, KindTimestampLTZ:
		var ts Timestamp
		if t.Kind == KindTimestamp {
			ts = v.(Timestamp)
		} else {
			ts = Timestamp(v.(TimestampLTZ))
		}
		buf = appendU64(buf, uint64(ts.Millis)^(1<<63))
		return appendU32(buf, uint32(ts.NanoOfMilli))
	case KindArray:
		et := t.ElemType()
		for _, e := range v.([]any) {
			buf = append(buf, 0x01)
			buf = AppendKey(buf, et, e)
		}
		return append(buf, 0x00)
	case KindRow:
		r := v.(Row)
		for i, f := range t.Fields {
			var fv any
			if i < len(r) {
				fv = r[i]
			}
			buf = AppendKey(buf, f.Type, fv)
		}
		return buf
	case KindMap, KindMultiset:
		kt, vt := mapTypes(t)
		for _, e := range sortedEntries(v.(*Map), kt) {
			buf = append(buf, 0x01)
			buf = AppendKey(buf, kt, e.k)
			buf = AppendKey(buf, vt, e.v)
		}
		return append(buf, 0x00)
	}
	panic(errorf("AppendKey: unsupported type %s", t))
}

func appendU32(b []byte, u uint32) []byte {
	return append(b, byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

func appendU64(b []byte, u uint64) []byte {
	return append(b, byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32),
		byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

var two128 = new(big.Int).Lsh(big.NewInt(1), 128)

// appendInt128Key writes a decimal's unscaled value (|v| < 10^38 < 2^127)
// as 16-byte two's complement with the sign bit flipped.
func appendInt128Key(buf []byte, d Decimal) []byte {
	u := d.Unscaled()
	if u.Sign() < 0 {
		u.Add(u, two128)
	}
	var b [16]byte
	u.FillBytes(b[:])
	b[0] ^= 0x80
	return append(buf, b[:]...)
}

// appendEscaped writes s with 0x00 escaped as 0x00 0xFF and a 0x00 0x01
// terminator, so that a prefix sorts before its extensions.
func appendEscaped(buf []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			break
		}
		buf = append(buf, s[:i]...)
		buf = append(buf, 0x00, 0xff)
		s = s[i+1:]
	}
	buf = append(buf, s...)
	return append(buf, 0x00, 0x01)
}
