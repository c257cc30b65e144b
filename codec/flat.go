package codec

import (
	"math"
	"unsafe"
)

// The fast path for flat structs: records whose fields are all of basic
// kinds (strings, integers, floats, bools, byte slices, times), directly
// or in nested structs of such fields, the shape of most records (tuples,
// WordCount's struct of a word and a count). Their fields are encoded in
// one loop without a call per field, and strings and integers that fit a
// one-byte length or varint, the usual case, take an inlined path. The
// encoding is the same as the general path's.

// flatField is one basic-kind field of a flat struct at offset off.
type flatField struct {
	off uintptr
	k   kind
}

// appendFlat appends the fields of the flat struct at p.
func appendFlat(dst []byte, p unsafe.Pointer, fields []flatField) []byte {
	for _, f := range fields {
		fp := unsafe.Add(p, f.off)
		switch f.k {
		case kString:
			s := *(*string)(fp)
			if len(s) < 0x80 {
				dst = append(dst, byte(len(s)))
			} else {
				dst = appendUvarint(dst, uint64(len(s)))
			}
			dst = append(dst, s...)
		case kInt64:
			dst = appendVarint(dst, *(*int64)(fp))
		case kInt:
			dst = appendVarint(dst, int64(*(*int)(fp)))
		default:
			dst = encBasic(f.k, dst, fp)
		}
	}
	return dst
}

// decodeFlat decodes the fields of a flat struct from src into p,
// overwriting every field. Strings are allocated one by one: sharing an
// allocation between the strings of a batch saves about 6 ns a record,
// but a string kept in state would keep its neighbours' bytes alive.
func decodeFlat(src []byte, p unsafe.Pointer, fields []flatField) (int, error) {
	off := 0
	for _, f := range fields {
		fp := unsafe.Add(p, f.off)
		switch f.k {
		case kString:
			l, n := 0, 1
			if off < len(src) && src[off] < 0x80 {
				l = int(src[off])
			} else {
				var err error
				if l, n, err = decodeLen(src[off:], 1); err != nil {
					return 0, err
				}
			}
			off += n
			if l > len(src)-off {
				return 0, errLength
			}
			*(*string)(fp) = string(src[off : off+l])
			off += l
		case kInt64, kInt:
			var v int64
			if off < len(src) && src[off] < 0x80 {
				u := uint64(src[off])
				v = int64(u>>1) ^ -int64(u&1)
				off++
			} else {
				var n int
				var err error
				if f.k == kInt {
					v, n, err = decodeSigned(src[off:], math.MinInt, math.MaxInt)
				} else {
					v, n, err = decodeVarint(src[off:])
				}
				if err != nil {
					return 0, err
				}
				off += n
			}
			if f.k == kInt {
				*(*int)(fp) = int(v)
			} else {
				*(*int64)(fp) = v
			}
		default:
			m, err := decBasic(f.k, src[off:], fp)
			if err != nil {
				return 0, err
			}
			off += m
		}
	}
	return off, nil
}
