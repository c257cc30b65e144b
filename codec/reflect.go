package codec

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"unsafe"
)

// maxDepth bounds the nesting of pointers, slices and maps while decoding so
// that hostile input cannot exhaust the goroutine stack.
const maxDepth = 10000

// node is the compiled codec for one type. enc and dec operate on a pointer
// to a value of the type; dec always overwrites the whole value (it never
// merges into what is there), which lets container decoders reuse scratch
// values.
//
// A node is created before its children are compiled and its functions are
// filled in afterwards, so recursive types refer to their own (not yet
// complete) node. The functions are read through the node at call time.
type node struct {
	t     reflect.Type
	k     kind // basic kind handled inline by encBasic/decBasic, or kOther
	enc   func(dst []byte, p unsafe.Pointer) []byte
	dec   func(src []byte, p unsafe.Pointer, depth int) (int, error)
	min   int  // minimum encoded size in bytes
	empty bool // the encoding is always empty (zero-size types)
	// flat lists the basic-kind fields of a struct made only of them
	// (nested such structs included, in order), for the batch fast path;
	// nil otherwise.
	flat []flatField
}

func (n *node) append(dst []byte, p unsafe.Pointer) []byte {
	if n.k != kOther {
		return encBasic(n.k, dst, p)
	}
	return n.enc(dst, p)
}

func (n *node) decode(src []byte, p unsafe.Pointer, depth int) (int, error) {
	if n.k != kOther {
		return decBasic(n.k, src, p)
	}
	return n.dec(src, p, depth)
}

var (
	compileMu sync.Mutex
	compiled  = map[reflect.Type]*node{} // complete nodes; guarded by compileMu
)

// nodeFor returns the compiled node for t, compiling it (and every type it
// references) on first use.
func nodeFor(t reflect.Type) (*node, error) {
	compileMu.Lock()
	defer compileMu.Unlock()
	c := compiler{building: map[reflect.Type]*node{}}
	n, err := c.compile(t)
	if err != nil {
		if e, ok := err.(*unsupportedError); ok {
			e.root = t
		}
		return nil, err
	}
	// Publish only complete nodes: on error everything built is dropped.
	for t, n := range c.building {
		compiled[t] = n
	}
	return n, nil
}

type compiler struct {
	building map[reflect.Type]*node
}

var (
	binaryAppenderType    = reflect.TypeFor[encoding.BinaryAppender]()
	binaryMarshalerType   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binaryUnmarshalerType = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

func (c *compiler) compile(t reflect.Type) (*node, error) {
	if n, ok := compiled[t]; ok {
		return n, nil
	}
	if n, ok := c.building[t]; ok {
		return n, nil // recursive reference; completed by the outer call
	}
	if k := basicKind(t); k != kOther {
		n := &node{t: t, k: k, min: k.minSize()}
		c.building[t] = n
		return n, nil
	}
	n := &node{t: t}
	c.building[t] = n
	var err error
	switch k := t.Kind(); {
	case k != reflect.Pointer && k != reflect.Interface && c.marshaler(n):
	case k == reflect.Struct:
		err = c.structNode(n)
	case k == reflect.Pointer:
		err = c.pointerNode(n)
	case k == reflect.Slice:
		err = c.sliceNode(n)
	case k == reflect.Array:
		err = c.arrayNode(n)
	case k == reflect.Map:
		err = c.mapNode(n)
	case k == reflect.Interface:
		err = unsupported(t, "interface types have no fixed encoding")
	case k == reflect.Func:
		err = unsupported(t, "functions cannot be encoded")
	case k == reflect.Chan:
		err = unsupported(t, "channels cannot be encoded")
	case k == reflect.UnsafePointer:
		err = unsupported(t, "unsafe pointers cannot be encoded")
	default:
		err = unsupported(t, "")
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

func unsupported(t reflect.Type, reason string) error {
	return &unsupportedError{typ: t, reason: reason}
}

// within records that the unsupported type was found at step of the parent.
func within(err error, step string) error {
	if e, ok := err.(*unsupportedError); ok {
		e.path = append(e.path, step)
	}
	return err
}

func (c *compiler) structNode(n *node) error {
	t := n.t
	type field struct {
		off uintptr
		n   *node
	}
	fields := make([]field, 0, t.NumField())
	n.empty = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			return unsupported(t, fmt.Sprintf("field %s is unexported (only exported fields can be encoded)", f.Name))
		}
		fn, err := c.compile(f.Type)
		if err != nil {
			return within(err, "."+f.Name)
		}
		fields = append(fields, field{off: f.Offset, n: fn})
		n.min = satAdd(n.min, fn.min)
		n.empty = n.empty && fn.empty
	}
	if n.empty {
		n.enc = func(dst []byte, _ unsafe.Pointer) []byte { return dst }
		n.dec = func([]byte, unsafe.Pointer, int) (int, error) { return 0, nil }
		return nil
	}
	// A struct of basic kinds, directly or in nested structs of them,
	// is encoded field after field without a call per field: the
	// common record shapes (tuples and structs of strings and numbers).
	flat := make([]flatField, 0, len(fields))
	for _, f := range fields {
		switch {
		case f.n.empty:
		case f.n.k != kOther:
			flat = append(flat, flatField{off: f.off, k: f.n.k})
		case f.n.flat != nil:
			for _, g := range f.n.flat {
				flat = append(flat, flatField{off: f.off + g.off, k: g.k})
			}
		default:
			flat = nil
		}
		if flat == nil {
			break
		}
	}
	if flat != nil {
		n.flat = flat
		n.enc = func(dst []byte, p unsafe.Pointer) []byte { return appendFlat(dst, p, flat) }
		n.dec = func(src []byte, p unsafe.Pointer, _ int) (int, error) { return decodeFlat(src, p, flat) }
		return nil
	}
	n.enc = func(dst []byte, p unsafe.Pointer) []byte {
		for _, f := range fields {
			fp := unsafe.Add(p, f.off)
			if f.n.k != kOther {
				dst = encBasic(f.n.k, dst, fp)
			} else {
				dst = f.n.enc(dst, fp)
			}
		}
		return dst
	}
	n.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		off := 0
		for _, f := range fields {
			fp := unsafe.Add(p, f.off)
			var m int
			var err error
			if f.n.k != kOther {
				m, err = decBasic(f.n.k, src[off:], fp)
			} else {
				m, err = f.n.dec(src[off:], fp, depth)
			}
			if err != nil {
				return 0, err
			}
			off += m
		}
		return off, nil
	}
	return nil
}

func (c *compiler) pointerNode(n *node) error {
	et := n.t.Elem()
	en, err := c.compile(et)
	if err != nil {
		return within(err, "*")
	}
	n.min = 1
	n.enc = func(dst []byte, p unsafe.Pointer) []byte {
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return append(dst, 0)
		}
		return en.append(append(dst, 1), q)
	}
	n.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		if len(src) == 0 {
			return 0, errTruncated
		}
		switch src[0] {
		case 0:
			*(*unsafe.Pointer)(p) = nil
			return 1, nil
		case 1:
		default:
			return 0, errFlag
		}
		if depth >= maxDepth {
			return 0, errDepth
		}
		q := reflect.New(et).UnsafePointer()
		m, err := en.decode(src[1:], q, depth+1)
		if err != nil {
			return 0, err
		}
		*(*unsafe.Pointer)(p) = q
		return 1 + m, nil
	}
	return nil
}

// sliceHeader is the memory layout of a slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

func (c *compiler) sliceNode(n *node) error {
	t := n.t
	en, err := c.compile(t.Elem())
	if err != nil {
		return within(err, "[]")
	}
	esize := t.Elem().Size()
	n.min = 1
	n.enc = func(dst []byte, p unsafe.Pointer) []byte {
		h := (*sliceHeader)(p)
		dst = appendUvarint(dst, uint64(h.len))
		if en.empty {
			return dst
		}
		data, l := h.data, h.len
		if en.k != kOther {
			for i := range l {
				dst = encBasic(en.k, dst, unsafe.Add(data, uintptr(i)*esize))
			}
			return dst
		}
		for i := range l {
			dst = en.enc(dst, unsafe.Add(data, uintptr(i)*esize))
		}
		return dst
	}
	n.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		l, off, err := decodeCount(src, en)
		if err != nil {
			return 0, err
		}
		if l == 0 {
			*(*sliceHeader)(p) = sliceHeader{}
			return off, nil
		}
		if depth >= maxDepth {
			return 0, errDepth
		}
		data := reflect.MakeSlice(t, l, l).UnsafePointer()
		if !en.empty {
			for i := range l {
				m, err := en.decode(src[off:], unsafe.Add(data, uintptr(i)*esize), depth+1)
				if err != nil {
					return 0, err
				}
				off += m
			}
		}
		*(*sliceHeader)(p) = sliceHeader{data: data, len: l, cap: l}
		return off, nil
	}
	return nil
}

// decodeCount decodes an element count for elements encoded by en and bounds
// it by the remaining input. Counts of always-empty elements are bounded by
// maxInt only; they are never iterated over or backed by memory.
func decodeCount(src []byte, en *node) (int, int, error) {
	if en.empty {
		l, n, err := decodeUvarint(src)
		if err != nil {
			return 0, 0, err
		}
		if l > uint64(maxInt) {
			return 0, 0, errLength
		}
		return int(l), n, nil
	}
	return decodeLen(src, max(en.min, 1))
}

func (c *compiler) arrayNode(n *node) error {
	t := n.t
	l := t.Len()
	en, err := c.compile(t.Elem())
	if err != nil {
		return within(err, fmt.Sprintf("[%d]", l))
	}
	n.min = satMul(l, en.min)
	n.empty = l == 0 || en.empty
	if n.empty {
		n.enc = func(dst []byte, _ unsafe.Pointer) []byte { return dst }
		n.dec = func([]byte, unsafe.Pointer, int) (int, error) { return 0, nil }
		return nil
	}
	if en.k == kUint8 || en.k == kInt8 {
		// Byte arrays (e.g. IDs and hashes) are copied verbatim.
		n.enc = func(dst []byte, p unsafe.Pointer) []byte {
			return append(dst, unsafe.Slice((*byte)(p), l)...)
		}
		n.dec = func(src []byte, p unsafe.Pointer, _ int) (int, error) {
			if len(src) < l {
				return 0, errTruncated
			}
			copy(unsafe.Slice((*byte)(p), l), src)
			return l, nil
		}
		return nil
	}
	esize := t.Elem().Size()
	n.enc = func(dst []byte, p unsafe.Pointer) []byte {
		for i := range l {
			dst = en.append(dst, unsafe.Add(p, uintptr(i)*esize))
		}
		return dst
	}
	n.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		off := 0
		for i := range l {
			m, err := en.decode(src[off:], unsafe.Add(p, uintptr(i)*esize), depth)
			if err != nil {
				return 0, err
			}
			off += m
		}
		return off, nil
	}
	return nil
}

func (c *compiler) mapNode(n *node) error {
	t := n.t
	kt, vt := t.Key(), t.Elem()
	kn, err := c.compile(kt)
	if err != nil {
		return within(err, "[key]")
	}
	vn, err := c.compile(vt)
	if err != nil {
		return within(err, "[value]")
	}
	n.min = 1
	n.enc = func(dst []byte, p unsafe.Pointer) []byte {
		mp := *(*unsafe.Pointer)(p)
		if mp == nil {
			return append(dst, 0)
		}
		// mp is copied into a variable of its own so that the reflect.Value
		// (and iterator) below never refer to p, which may point into the
		// caller's stack.
		m := reflect.NewAt(t, unsafe.Pointer(&mp)).Elem()
		dst = appendUvarint(dst, uint64(m.Len()))
		if m.Len() == 0 {
			return dst
		}
		kv := reflect.New(kt)
		vv := reflect.New(vt)
		kp, vp := kv.UnsafePointer(), vv.UnsafePointer()
		ke, ve := kv.Elem(), vv.Elem()
		it := m.MapRange()
		for it.Next() {
			ke.SetIterKey(it)
			ve.SetIterValue(it)
			dst = kn.append(dst, kp)
			dst = vn.append(dst, vp)
		}
		return dst
	}
	n.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		l, off, err := decodeMapLen(src, kn, vn)
		if err != nil {
			return 0, err
		}
		if l == 0 {
			*(*unsafe.Pointer)(p) = nil
			return off, nil
		}
		if depth >= maxDepth {
			return 0, errDepth
		}
		m := reflect.MakeMapWithSize(t, l)
		kv := reflect.New(kt)
		vv := reflect.New(vt)
		kp, vp := kv.UnsafePointer(), vv.UnsafePointer()
		ke, ve := kv.Elem(), vv.Elem()
		for range l {
			k, err := kn.decode(src[off:], kp, depth+1)
			if err != nil {
				return 0, err
			}
			off += k
			v, err := vn.decode(src[off:], vp, depth+1)
			if err != nil {
				return 0, err
			}
			off += v
			m.SetMapIndex(ke, ve)
		}
		*(*unsafe.Pointer)(p) = m.UnsafePointer()
		return off, nil
	}
	return nil
}

// decodeMapLen decodes the entry count of a map with key and value nodes kn
// and vn and bounds it by the remaining input.
func decodeMapLen(src []byte, kn, vn *node) (int, int, error) {
	if kn.empty && vn.empty {
		// Entries encode to nothing, and there is only one key of a
		// zero-size type.
		l, n, err := decodeUvarint(src)
		if err == nil && l > 1 {
			err = errLength
		}
		if err != nil {
			return 0, 0, err
		}
		return int(l), n, nil
	}
	return decodeLen(src, max(satAdd(kn.min, vn.min), 1))
}

// marshaler sets up n to use the encoding.Binary* methods of n.t if it has
// them (BinaryAppender or BinaryMarshaler on T or *T, and BinaryUnmarshaler on
// *T) and reports whether it did.
//
// The value is always copied to the heap before a method is called, so user
// code never sees a pointer into the caller's stack.
func (c *compiler) marshaler(n *node) bool {
	t := n.t
	pt := reflect.PointerTo(t)
	// Methods promoted from an embedded field (struct{ time.Time; Name
	// string }) are ignored: using them would silently drop the other
	// fields.
	own := func(name string) bool { return t.Kind() != reflect.Struct || !promoted(t, name) }
	if !pt.Implements(binaryUnmarshalerType) || !own("UnmarshalBinary") {
		return false
	}
	var encode func(v reflect.Value, dst []byte) ([]byte, error)
	switch appender, marshaler := own("AppendBinary"), own("MarshalBinary"); {
	case appender && t.Implements(binaryAppenderType):
		encode = func(v reflect.Value, dst []byte) ([]byte, error) {
			return v.Elem().Interface().(encoding.BinaryAppender).AppendBinary(dst)
		}
	case appender && pt.Implements(binaryAppenderType):
		encode = func(v reflect.Value, dst []byte) ([]byte, error) {
			return v.Interface().(encoding.BinaryAppender).AppendBinary(dst)
		}
	case marshaler && t.Implements(binaryMarshalerType):
		encode = func(v reflect.Value, dst []byte) ([]byte, error) {
			b, err := v.Elem().Interface().(encoding.BinaryMarshaler).MarshalBinary()
			return append(dst, b...), err
		}
	case marshaler && pt.Implements(binaryMarshalerType):
		encode = func(v reflect.Value, dst []byte) ([]byte, error) {
			b, err := v.Interface().(encoding.BinaryMarshaler).MarshalBinary()
			return append(dst, b...), err
		}
	default:
		return false
	}
	n.min = 1
	n.enc = func(dst []byte, p unsafe.Pointer) []byte {
		v := reflect.New(t)
		v.Elem().Set(reflect.NewAt(t, p).Elem())
		// Reserve one byte for the length, which is usually enough, and
		// move the payload if its length needs a longer varint.
		start := len(dst)
		dst = append(dst, 0)
		out, err := encode(v, dst)
		if err != nil {
			panic(fmt.Sprintf("codec: encoding %v: %v", t, err))
		}
		dst = out
		l := len(dst) - start - 1
		if l < 0x80 {
			dst[start] = byte(l)
			return dst
		}
		var lb [binary.MaxVarintLen64]byte
		h := appendUvarint(lb[:0], uint64(l))
		extra := len(h) - 1
		dst = append(dst, h[1:]...) // grow by extra bytes
		copy(dst[start+len(h):], dst[start+1:len(dst)-extra])
		copy(dst[start:], h)
		return dst
	}
	n.dec = func(src []byte, p unsafe.Pointer, _ int) (int, error) {
		l, off, err := decodeLen(src, 1)
		if err != nil {
			return 0, err
		}
		v := reflect.New(t)
		if err := v.Interface().(encoding.BinaryUnmarshaler).UnmarshalBinary(src[off : off+l : off+l]); err != nil {
			return 0, fmt.Errorf("%w: %v: %w", ErrCorrupt, t, err)
		}
		reflect.NewAt(t, p).Elem().Set(v.Elem())
		return off + l, nil
	}
	return true
}

// promoted reports whether the method name of struct type t (or *t) is
// promoted from an embedded field rather than declared on t. Promoted
// methods are compiler-generated wrappers.
func promoted(t reflect.Type, name string) bool {
	m, ok := t.MethodByName(name)
	if !ok {
		if m, ok = reflect.PointerTo(t).MethodByName(name); !ok {
			return false
		}
	}
	pc := m.Func.Pointer()
	f := runtime.FuncForPC(pc)
	if f == nil {
		return false
	}
	file, _ := f.FileLine(pc)
	return file == "<autogenerated>"
}

func satAdd(a, b int) int {
	if a > maxInt-b {
		return maxInt
	}
	return a + b
}

func satMul(a, b int) int {
	if a != 0 && b > maxInt/a {
		return maxInt
	}
	return a * b
}

// reflectCodec is the Codec[T] backed by a compiled node.
type reflectCodec[T any] struct {
	n *node
	// scratch holds heap values to encode from and decode into: the
	// compiled functions work on pointers, and a pointer to a stack
	// variable hidden from escape analysis is not safe across a stack
	// move (checkptr under -race caught a decode writing to a stack that
	// had moved). Pooled, so that no call allocates.
	scratch *sync.Pool
}

func (c reflectCodec[T]) Append(dst []byte, v T) []byte {
	p := c.scratch.Get().(*T)
	*p = v
	dst = c.n.append(dst, unsafe.Pointer(p))
	var zero T
	*p = zero // drop references, so the pool does not keep them alive
	c.scratch.Put(p)
	return dst
}

func (c reflectCodec[T]) Decode(src []byte) (v T, n int, err error) {
	p := c.scratch.Get().(*T)
	n, err = c.n.decode(src, unsafe.Pointer(p), 0)
	v = *p
	var zero T
	*p = zero
	c.scratch.Put(p)
	if err != nil {
		return zero, 0, err
	}
	return v, n, nil
}

// appendSlice and decodeSlice work on a slice's elements in place, which
// are on the heap: the slice reaches the compiled functions through an
// interface call, so escape analysis moves any backing array there. No
// scratch value, and no pool, per record; flat structs' nodes are the
// one-loop fast path of flat.go.
func (c reflectCodec[T]) appendSlice(dst []byte, vs []T) []byte {
	if flat := c.n.flat; flat != nil {
		// Direct, not through the node's closure: 2 ns a record of 7.
		for i := range vs {
			dst = appendFlat(dst, unsafe.Pointer(&vs[i]), flat)
		}
		return dst
	}
	for i := range vs {
		dst = c.n.append(dst, unsafe.Pointer(&vs[i]))
	}
	return dst
}

// decodeSlice decodes len(vs) values into vs.
func (c reflectCodec[T]) decodeSlice(vs []T, src []byte) (int, error) {
	off := 0
	for i := range vs {
		m, err := c.n.decode(src[off:], unsafe.Pointer(&vs[i]), 0)
		if err != nil {
			return 0, err
		}
		off += m
	}
	return off, nil
}

func (c reflectCodec[T]) sizeInfo() (int, bool) { return c.n.min, c.n.empty }
