package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"unsafe"

	"github.com/weirproject/weir/codec"
)

// heapHandle is implemented by the heap state kinds.
type heapHandle[K comparable] interface {
	keys() int
	// snapshot writes one entry per key.
	snapshot(kc codec.Codec[K], w *stateWriter) error
	// restoreEntry loads one snapshot entry, replacing the key's state.
	restoreEntry(k K, v []byte) error
}

// heapCloner is implemented by heap states that can copy their entries
// for a snapshot to encode later.
type heapCloner[K comparable] interface {
	// clone returns a function that writes the entries as they are now,
	// or nil when the keys or values are not plain values.
	clone() func(kc codec.Codec[K], w *stateWriter) error
}

// cloneValues copies m for snapshotValues when a shallow copy is a deep
// one.
func cloneValues[K comparable, T any](m map[K]T) func(kc codec.Codec[K], w *stateWriter) error {
	if !plainValue[K]() || !plainValue[T]() {
		return nil
	}
	c := maps.Clone(m)
	return func(kc codec.Codec[K], w *stateWriter) error { return snapshotValues(c, kc, w) }
}

// plainTypes caches plainType by type.
var plainTypes sync.Map // reflect.Type -> bool

// plainValue reports whether copying a T copies everything it holds:
// numbers, booleans, strings (immutable), and arrays and structs of
// them; not pointers, slices, maps, channels, functions or interfaces,
// whose targets user code may change in place.
func plainValue[T any]() bool {
	t := reflect.TypeFor[T]()
	if v, ok := plainTypes.Load(t); ok {
		return v.(bool)
	}
	v := plainType(t)
	plainTypes.Store(t, v)
	return v
}

func plainType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Array:
		return plainType(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !plainType(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

var errTrailing = errors.New("trailing bytes after value")

// decodeAll decodes one value that must fill data.
func decodeAll[T any](c codec.Codec[T], data []byte) (T, error) {
	v, n, err := c.Decode(data)
	if err == nil && n != len(data) {
		err = errTrailing
	}
	return v, err
}

// appendList encodes a list as the concatenation of its elements.
func appendList[T any](dst []byte, c codec.Codec[T], vs []T) []byte {
	for _, v := range vs {
		dst = c.Append(dst, v)
	}
	return dst
}

// decodeList decodes a concatenation of elements.
func decodeList[T any](c codec.Codec[T], data []byte) ([]T, error) {
	var out []T
	for len(data) > 0 {
		v, n, err := c.Decode(data)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, fmt.Errorf("list element of zero size")
		}
		out = append(out, v)
		data = data[n:]
	}
	return out, nil
}

// mapPairs iterates the snapshot form of a map: uvarint count, then per
// entry the uvarint length and bytes of the map key and of the value.
func mapPairs(data []byte, fn func(k, v []byte) error) error {
	n, m := binary.Uvarint(data)
	if m <= 0 {
		return codec.ErrCorrupt
	}
	data = data[m:]
	for i := uint64(0); i < n; i++ {
		var kv [2][]byte
		for j := range kv {
			l, m := binary.Uvarint(data)
			if m <= 0 || uint64(len(data)-m) < l {
				return codec.ErrCorrupt
			}
			kv[j] = data[m : m+int(l)]
			data = data[m+int(l):]
		}
		if err := fn(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if len(data) != 0 {
		return errTrailing
	}
	return nil
}

func appendLenPrefixed(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

type valueState[K comparable, T any] struct {
	b   *Backend[K]
	m   map[K]T
	def T
}

func (s *valueState[K, T]) Value() (T, bool) {
	v, ok := s.m[s.b.current]
	if !ok {
		return s.def, false
	}
	return v, true
}
func (s *valueState[K, T]) Update(v T) { s.m[s.b.current] = v }
func (s *valueState[K, T]) Clear()     { delete(s.m, s.b.current) }
func (s *valueState[K, T]) keys() int  { return len(s.m) }

func (s *valueState[K, T]) snapshot(kc codec.Codec[K], w *stateWriter) error {
	return snapshotValues(s.m, kc, w)
}

func (s *valueState[K, T]) clone() func(codec.Codec[K], *stateWriter) error {
	return cloneValues(s.m)
}

func (s *valueState[K, T]) restoreEntry(k K, data []byte) error {
	return restoreValue(s.m, k, data)
}

func snapshotValues[K comparable, T any](m map[K]T, kc codec.Codec[K], w *stateWriter) error {
	vc, err := codec.For[T]()
	if err != nil {
		return err
	}
	for k, v := range m {
		w.kb = kc.Append(w.kb[:0], k)
		w.vb = vc.Append(w.vb[:0], v)
		w.entry(w.kb, w.vb)
	}
	return nil
}

func restoreValue[K comparable, T any](m map[K]T, k K, data []byte) error {
	vc, err := codec.For[T]()
	if err != nil {
		return err
	}
	v, err := decodeAll(vc, data)
	if err != nil {
		return err
	}
	m[k] = v
	return nil
}

type listState[K comparable, T any] struct {
	b *Backend[K]
	m map[K][]T
}

func (s *listState[K, T]) Get() []T { return s.m[s.b.current] }
func (s *listState[K, T]) Add(v T)  { s.m[s.b.current] = append(s.m[s.b.current], v) }
func (s *listState[K, T]) Update(v []T) {
	if len(v) == 0 {
		delete(s.m, s.b.current)
		return
	}
	if sameArray(s.m[s.b.current], v) {
		// The list Get returned, changed in place: it is the state's own
		// already, and copying it on every update would cost an
		// allocation per record in operators that keep a sorted list.
		s.m[s.b.current] = v
		return
	}
	// A copy with the caller's spare capacity, so that a list built to
	// be changed in place can be; but not a scratch buffer's, which
	// every key would then hold.
	c := len(v)
	if cap(v) <= 2*len(v)+8 {
		c = cap(v)
	}
	s.m[s.b.current] = append(make([]T, 0, c), v...)
}

// sameArray reports whether two slices share their backing array's end,
// which a slice and any of its reslices do.
func sameArray[T any](a, b []T) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][cap(a)-1] == &b[:cap(b)][cap(b)-1]
}
func (s *listState[K, T]) Clear()    { delete(s.m, s.b.current) }
func (s *listState[K, T]) keys() int { return len(s.m) }

func (s *listState[K, T]) snapshot(kc codec.Codec[K], w *stateWriter) error {
	vc, err := codec.For[T]()
	if err != nil {
		return err
	}
	for k, vs := range s.m {
		w.kb = kc.Append(w.kb[:0], k)
		w.vb = appendList(w.vb[:0], vc, vs)
		w.entry(w.kb, w.vb)
	}
	return nil
}

func (s *listState[K, T]) restoreEntry(k K, data []byte) error {
	vc, err := codec.For[T]()
	if err != nil {
		return err
	}
	vs, err := decodeList(vc, data)
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		delete(s.m, k)
	} else {
		s.m[k] = vs
	}
	return nil
}

type mapState[K, MK comparable, MV any] struct {
	b *Backend[K]
	m map[K]map[MK]MV
	// spare holds maps that emptied, cleared, for the next key that needs
	// one: keys whose maps fill and empty again and again (entries waiting
	// for a timer) would otherwise allocate a map, and grow it, each time.
	spare []map[MK]MV
	// sawLarge is set once a key's map grew past large entries: a
	// cleared map keeps its size, and such a state keeps no spares.
	sawLarge bool
	large    int
}

// maxSpareMaps bounds the emptied maps a map state keeps for reuse, and
// spareMapBytes the slots of each (its entries' keys and values as stored
// in the map; what they point to is released by clearing it), so that a
// state's spares hold at most a few megabytes whatever its entry type.
const (
	maxSpareMaps  = 64
	spareMapBytes = 64 << 10
)

func newMapState[K, MK comparable, MV any](b *Backend[K]) *mapState[K, MK, MV] {
	var (
		k MK
		v MV
	)
	entry := max(int(unsafe.Sizeof(k)+unsafe.Sizeof(v)), 1)
	return &mapState[K, MK, MV]{b: b, m: make(map[K]map[MK]MV), large: min(max(spareMapBytes/entry, 8), 1024)}
}

func (s *mapState[K, MK, MV]) Get(k MK) (MV, bool) {
	v, ok := s.m[s.b.current][k]
	return v, ok
}

func (s *mapState[K, MK, MV]) Put(k MK, v MV) {
	m := s.m[s.b.current]
	if m == nil {
		if n := len(s.spare); n > 0 {
			m = s.spare[n-1]
			s.spare = s.spare[:n-1]
		} else {
			m = make(map[MK]MV)
		}
		s.m[s.b.current] = m
	}
	m[k] = v
	if len(m) > s.large && !s.sawLarge {
		s.sawLarge, s.spare = true, nil
	}
}

func (s *mapState[K, MK, MV]) Remove(k MK) {
	if m := s.m[s.b.current]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(s.m, s.b.current)
			s.recycle(m)
		}
	}
}

// recycle keeps a map that is no longer a key's for reuse.
func (s *mapState[K, MK, MV]) recycle(m map[MK]MV) {
	if len(s.spare) < maxSpareMaps && !s.sawLarge && len(m) <= s.large {
		clear(m)
		s.spare = append(s.spare, m)
	}
}

func (s *mapState[K, MK, MV]) Contains(k MK) bool {
	_, ok := s.m[s.b.current][k]
	return ok
}

func (s *mapState[K, MK, MV]) All() map[MK]MV { return s.m[s.b.current] }

func (s *mapState[K, MK, MV]) Range(fn func(MK, MV) bool) {
	for k, v := range s.m[s.b.current] {
		if !fn(k, v) {
			return
		}
	}
}

func (s *mapState[K, MK, MV]) Clear() {
	if m := s.m[s.b.current]; m != nil {
		delete(s.m, s.b.current)
		s.recycle(m)
	}
}

func (s *mapState[K, MK, MV]) keys() int { return len(s.m) }

func (s *mapState[K, MK, MV]) snapshot(kc codec.Codec[K], w *stateWriter) error {
	mkc, err := codec.For[MK]()
	if err != nil {
		return err
	}
	mvc, err := codec.For[MV]()
	if err != nil {
		return err
	}
	var scratch []byte
	for k, m := range s.m {
		w.kb = kc.Append(w.kb[:0], k)
		w.vb = binary.AppendUvarint(w.vb[:0], uint64(len(m)))
		for mk, mv := range m {
			scratch = mkc.Append(scratch[:0], mk)
			w.vb = appendLenPrefixed(w.vb, scratch)
			scratch = mvc.Append(scratch[:0], mv)
			w.vb = appendLenPrefixed(w.vb, scratch)
		}
		w.entry(w.kb, w.vb)
	}
	return nil
}

func (s *mapState[K, MK, MV]) restoreEntry(k K, data []byte) error {
	mkc, err := codec.For[MK]()
	if err != nil {
		return err
	}
	mvc, err := codec.For[MV]()
	if err != nil {
		return err
	}
	m := make(map[MK]MV)
	err = mapPairs(data, func(kb, vb []byte) error {
		mk, err := decodeAll(mkc, kb)
		if err != nil {
			return err
		}
		mv, err := decodeAll(mvc, vb)
		if err != nil {
			return err
		}
		m[mk] = mv
		return nil
	})
	if err != nil {
		return err
	}
	if len(m) == 0 {
		delete(s.m, k)
	} else {
		s.m[k] = m
	}
	if len(m) > s.large {
		s.sawLarge, s.spare = true, nil
	}
	return nil
}

type reducingState[K comparable, T any] struct {
	b      *Backend[K]
	m      map[K]T
	reduce func(a, b T) T
}

func (s *reducingState[K, T]) Get() (T, bool) {
	v, ok := s.m[s.b.current]
	return v, ok
}

func (s *reducingState[K, T]) Add(v T) {
	if old, ok := s.m[s.b.current]; ok {
		v = s.reduce(old, v)
	}
	s.m[s.b.current] = v
}

func (s *reducingState[K, T]) Clear()    { delete(s.m, s.b.current) }
func (s *reducingState[K, T]) keys() int { return len(s.m) }
func (s *reducingState[K, T]) snapshot(kc codec.Codec[K], w *stateWriter) error {
	return snapshotValues(s.m, kc, w)
}
func (s *reducingState[K, T]) clone() func(codec.Codec[K], *stateWriter) error {
	return cloneValues(s.m)
}
func (s *reducingState[K, T]) restoreEntry(k K, data []byte) error {
	return restoreValue(s.m, k, data)
}

type aggregatingState[K comparable, IN, ACC, OUT any] struct {
	b      *Backend[K]
	m      map[K]ACC
	add    func(ACC, IN) ACC
	result func(ACC) OUT
	zero   func() ACC
}

func (s *aggregatingState[K, IN, ACC, OUT]) Get() (OUT, bool) {
	acc, ok := s.m[s.b.current]
	if !ok {
		var zero OUT
		return zero, false
	}
	return s.result(acc), true
}

func (s *aggregatingState[K, IN, ACC, OUT]) Add(v IN) {
	acc, ok := s.m[s.b.current]
	if !ok {
		acc = s.zero()
	}
	s.m[s.b.current] = s.add(acc, v)
}

func (s *aggregatingState[K, IN, ACC, OUT]) Clear()    { delete(s.m, s.b.current) }
func (s *aggregatingState[K, IN, ACC, OUT]) keys() int { return len(s.m) }
func (s *aggregatingState[K, IN, ACC, OUT]) snapshot(kc codec.Codec[K], w *stateWriter) error {
	return snapshotValues(s.m, kc, w)
}
func (s *aggregatingState[K, IN, ACC, OUT]) clone() func(codec.Codec[K], *stateWriter) error {
	return cloneValues(s.m)
}
func (s *aggregatingState[K, IN, ACC, OUT]) restoreEntry(k K, data []byte) error {
	return restoreValue(s.m, k, data)
}
