package stream

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/runtime"
)

// HashJoin joins two bounded keyed streams on equal keys, as a batch hash
// join with build as the build side: fn gets every pair of a probe record
// and a build record with the same key (an inner join), when both inputs
// ended. Both inputs are split by key hash into hashJoinPartitions
// partitions as they arrive, held encoded in memory while the operator is
// within its share of taskmanager.memory.managed.size; past it, the
// largest partition of either side goes to a file under io.tmp.dirs, and
// its later records follow it there (Grace hash join). At the end each
// partition's build records are loaded into a hash table and its probe
// records stream past it, so memory holds one build partition at a time:
// a build side up to hashJoinPartitions times the share. Use it when one
// side is much smaller than the other; SortMergeJoin sorts both.
func HashJoin[K comparable, A, B, O any](probe *KeyedStream[K, A], build *KeyedStream[K, B], fn func(a A, b B, out Collector[O]) error) *Stream[O] {
	return TransformTwoInput(Connect(probe.s, build.s), "hash-join", "HashJoin", func(oc *runtime.OperatorContext, out runtime.Output[O]) (runtime.TwoInput[A, B], error) {
		ac, err := codec.For[A]()
		if err != nil {
			return nil, fmt.Errorf("HashJoin: probe record codec: %w", err)
		}
		bc, err := codec.For[B]()
		if err != nil {
			return nil, fmt.Errorf("HashJoin: build record codec: %w", err)
		}
		hasher, err := runtime.NewKeyHasher[K]()
		if err != nil {
			return nil, err
		}
		j := &hashJoinOp[K, A, B, O]{oc: oc, mem: managedMemoryOf(oc), ac: ac, bc: bc, hash: hasher,
			probeKey: probe.key, buildKey: build.key, fn: fn, col: collector[O]{oc: oc, out: out, ts: runtime.NoTimestamp}}
		j.mem.register(oc)
		oc.OnCleanup(j.removeFiles)
		oc.Register(j)
		return j, nil
	})
}

// hashJoinPartitions is the number of partitions of a hash join's inputs.
const hashJoinPartitions = 32

// joinSide is one input's share of a partition: its records encoded as
// key length, key, value length, value, in memory or in a file.
type joinSide struct {
	mem  []byte
	file *os.File
	w    *bufio.Writer
}

type hashJoinOp[K comparable, A, B, O any] struct {
	oc       *runtime.OperatorContext
	mem      *managedMemory
	ac       codec.Codec[A]
	bc       codec.Codec[B]
	hash     runtime.KeyHasher[K]
	probeKey func(A) K
	buildKey func(B) K
	fn       func(A, B, Collector[O]) error
	col      collector[O]
	// parts[i][0] holds partition i's probe records, parts[i][1] its
	// build records.
	parts   [hashJoinPartitions][2]joinSide
	held    int64 // bytes in memory over all partitions
	scratch []byte
	spilled int64
	failed  error
}

func (j *hashJoinOp[K, A, B, O]) Emit1(v A, _ int64) {
	k := j.probeKey(v)
	j.scratch = j.ac.Append(j.scratch[:0], v)
	j.add(k, 0)
}

func (j *hashJoinOp[K, A, B, O]) Emit2(v B, _ int64) {
	k := j.buildKey(v)
	j.scratch = j.bc.Append(j.scratch[:0], v)
	j.add(k, 1)
}

// add appends the record in scratch with key k to its partition's side.
func (j *hashJoinOp[K, A, B, O]) add(k K, side int) {
	if j.failed != nil {
		return
	}
	p := &j.parts[j.hash(k)%hashJoinPartitions][side]
	// A record is an empty key and the encoded record: the key is the
	// record's own, read again at the end, and the runs' reader reads
	// (key, value) pairs.
	var hdr [1 + binary.MaxVarintLen64]byte
	n := 1 + binary.PutUvarint(hdr[1:], uint64(len(j.scratch)))
	if p.file != nil {
		// The partition's side was spilled: its records follow it.
		p.w.Write(hdr[:n])
		if _, err := p.w.Write(j.scratch); err != nil {
			j.fail(fmt.Errorf("HashJoin: spill to %s: %w", p.file.Name(), err))
		}
		return
	}
	p.mem = append(p.mem, hdr[:n]...)
	p.mem = append(p.mem, j.scratch...)
	j.held += int64(n + len(j.scratch))
	for j.held > j.mem.share() {
		if !j.spillLargest() {
			break
		}
	}
}

// spillLargest writes the largest side of a partition held in memory to a
// file of its own; false when nothing is left in memory.
func (j *hashJoinOp[K, A, B, O]) spillLargest() bool {
	var big *joinSide
	for i := range j.parts {
		for s := range 2 {
			if p := &j.parts[i][s]; p.file == nil && len(p.mem) > 0 && (big == nil || len(p.mem) > len(big.mem)) {
				big = p
			}
		}
	}
	if big == nil {
		return false
	}
	dir := tmpDir(j.oc.Config)
	f, err := os.CreateTemp(dir, "weir-spill-hashjoin-")
	if err != nil {
		j.fail(fmt.Errorf("HashJoin: spill to %s: %w", dir, err))
		return false
	}
	big.file, big.w = f, bufio.NewWriterSize(f, 64<<10)
	if _, err := big.w.Write(big.mem); err != nil {
		j.fail(fmt.Errorf("HashJoin: spill to %s: %w", f.Name(), err))
	}
	j.spilled += int64(len(big.mem))
	j.held -= int64(len(big.mem))
	big.mem = nil
	spilledRuns.Add(1)
	return true
}

func (j *hashJoinOp[K, A, B, O]) fail(err error) {
	if j.failed == nil {
		j.failed = err
		j.oc.Fail(err)
	}
}

func (j *hashJoinOp[K, A, B, O]) EmitWatermark(int64) {}
func (j *hashJoinOp[K, A, B, O]) Open() error         { return nil }
func (j *hashJoinOp[K, A, B, O]) Close() error        { return nil }

// Finish joins partition by partition: the build side into a hash table,
// the probe side streamed past it.
func (j *hashJoinOp[K, A, B, O]) Finish() error {
	if j.failed != nil {
		return j.failed
	}
	table := make(map[K][]B)
	for i := range j.parts {
		clear(table)
		err := j.parts[i][1].each(func(_, val []byte) error {
			b, _, err := j.bc.Decode(val)
			if err != nil {
				return fmt.Errorf("HashJoin: read build input: %w", err)
			}
			k := j.buildKey(b)
			table[k] = append(table[k], b)
			return nil
		})
		if err != nil {
			return err
		}
		j.parts[i][1] = joinSide{}
		if len(table) == 0 {
			j.parts[i][0].close()
			continue
		}
		err = j.parts[i][0].each(func(_, val []byte) error {
			a, _, err := j.ac.Decode(val)
			if err != nil {
				return fmt.Errorf("HashJoin: read probe input: %w", err)
			}
			for _, b := range table[j.probeKey(a)] {
				j.oc.Enter()
				if err := j.fn(a, b, &j.col); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		j.parts[i][0] = joinSide{}
	}
	return nil
}

// each calls fn for every record of the side, from memory or its file,
// and then removes the file.
func (s *joinSide) each(fn func(key, val []byte) error) error {
	if s.file == nil {
		return eachEncoded(s.mem, fn)
	}
	defer s.close()
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("HashJoin: spill to %s: %w", s.file.Name(), err)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	rd := &runReader{r: bufio.NewReaderSize(s.file, 64<<10), name: s.file.Name()}
	for {
		ok, err := rd.next()
		if err != nil {
			return fmt.Errorf("HashJoin: read spilled partition %s: %w", s.file.Name(), err)
		}
		if !ok {
			return nil
		}
		if err := fn(rd.key, rd.val); err != nil {
			return err
		}
	}
}

func (s *joinSide) close() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
		s.file = nil
	}
}

func (j *hashJoinOp[K, A, B, O]) removeFiles() {
	for i := range j.parts {
		j.parts[i][0].close()
		j.parts[i][1].close()
	}
}

// eachEncoded calls fn for every (key, value) record of buf.
func eachEncoded(buf []byte, fn func(key, val []byte) error) error {
	for len(buf) > 0 {
		var fields [2][]byte
		for f := range fields {
			n, m := binary.Uvarint(buf)
			if m <= 0 || uint64(len(buf)-m) < n {
				return fmt.Errorf("HashJoin: corrupt partition buffer: %w", codec.ErrCorrupt)
			}
			fields[f] = buf[m : m+int(n)]
			buf = buf[m+int(n):]
		}
		if err := fn(fields[0], fields[1]); err != nil {
			return err
		}
	}
	return nil
}
