package runtime

import (
	"math"
	"reflect"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/weirproject/weir/codec"
)

// KeyHasher returns a hash of a key that is the same in every process and
// every run, which Go's built-in map hash is not: key groups, and with them
// the placement of keyed state, must not change when a job restarts.
type KeyHasher[K any] func(K) uint64

// NewKeyHasher picks a fast hasher for K's kind, or hashes the key's codec
// encoding for composite keys.
func NewKeyHasher[K any]() (KeyHasher[K], error) {
	var zero K
	switch reflect.TypeOf(&zero).Elem().Kind() {
	case reflect.String:
		return func(k K) uint64 { return xxhash.Sum64String(*(*string)(unsafe.Pointer(&k))) }, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return func(k K) uint64 { return mix64(*(*uint64)(unsafe.Pointer(&k))) }, nil
	case reflect.Int32, reflect.Uint32:
		return func(k K) uint64 { return mix64(uint64(*(*uint32)(unsafe.Pointer(&k)))) }, nil
	case reflect.Int16, reflect.Uint16:
		return func(k K) uint64 { return mix64(uint64(*(*uint16)(unsafe.Pointer(&k)))) }, nil
	case reflect.Int8, reflect.Uint8, reflect.Bool:
		return func(k K) uint64 { return mix64(uint64(*(*uint8)(unsafe.Pointer(&k)))) }, nil
	case reflect.Float64:
		return func(k K) uint64 { return mix64(math.Float64bits(*(*float64)(unsafe.Pointer(&k)))) }, nil
	}
	c, err := codec.For[K]()
	if err != nil {
		return nil, err
	}
	return func(k K) uint64 {
		var buf [64]byte
		return xxhash.Sum64(c.Append(buf[:0], k))
	}, nil
}

// mix64 is the finalizer of MurmurHash3: it spreads small integers over
// all key groups.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// KeyGroupFor maps a key hash to one of maxParallelism key groups.
func KeyGroupFor(hash uint64, maxParallelism int) int {
	return int(hash % uint64(maxParallelism))
}

// OperatorIndexForKeyGroup is the subtask that owns a key group (Flink's
// KeyGroupRangeAssignment): subtasks own contiguous ranges.
func OperatorIndexForKeyGroup(keyGroup, maxParallelism, parallelism int) int {
	return keyGroup * parallelism / maxParallelism
}

// KeyGroupRange is an inclusive range of key groups.
type KeyGroupRange struct{ Start, End int }

// KeyGroupRangeForSubtask returns the key groups subtask i of p owns.
func KeyGroupRangeForSubtask(maxParallelism, parallelism, i int) KeyGroupRange {
	start := (i*maxParallelism + parallelism - 1) / parallelism
	end := ((i+1)*maxParallelism - 1) / parallelism
	return KeyGroupRange{Start: start, End: end}
}

// KeyFilter returns, for an operator restoring a rescaled checkpoint, the
// test that a key belongs to this subtask's key groups; nil when every
// restored key is the subtask's own.
func KeyFilter[K any](oc *OperatorContext, hash KeyHasher[K]) func(K) bool {
	if oc.Task == nil || !oc.Rescaled() || oc.Info.MaxParallelism <= 0 {
		return nil
	}
	r, maxP := oc.KeyGroups(), oc.Info.MaxParallelism
	return func(k K) bool {
		kg := KeyGroupFor(hash(k), maxP)
		return kg >= r.Start && kg <= r.End
	}
}
