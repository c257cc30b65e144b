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
// records stream past it, so memory holds one build partition at a time.
// A partition whose build side exceeds the share is partitioned again by
// another hash, up to maxHashJoinLevels times; one that still does (a key
// with very many records) is joined in blocks of the build side that
// fit, the probe side read once per block. Use it when one side is much
// smaller than the other; SortMergeJoin sorts both.
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
	// n counts the side's encoded bytes, in memory or in its file.
	n int64
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
	if p.file != nil {
		// The partition's side was spilled: its records follow it.
		if err := p.write(j.scratch); err != nil {
			j.fail(err)
		}
		return
	}
	before := len(p.mem)
	p.mem = appendJoinRecord(p.mem, j.scratch)
	p.n += int64(len(p.mem) - before)
	j.held += int64(len(p.mem) - before)
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
	big.file, big.w = f, bufio.NewWriterSize(f, hashJoinBufferSize)
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
	for i := range j.parts {
		err := j.joinPartition(&j.parts[i][0], &j.parts[i][1], 0)
		j.parts[i][0].close()
		j.parts[i][1].close()
		j.parts[i] = [2]joinSide{}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxHashJoinLevels bounds how often a partition whose build side exceeds
// the memory share is partitioned again: 32^3 partitions hold any build
// side whose keys spread; one whose keys do not (a few keys with very
// many records) is joined in blocks instead.
const maxHashJoinLevels = 3

// joinPartition joins the two sides of one partition, made by the
// partitioning of level level. The caller closes both.
func (j *hashJoinOp[K, A, B, O]) joinPartition(probe, build *joinSide, level int) error {
	if probe.n == 0 || build.n == 0 {
		return nil // an inner join: no pairs
	}
	share := j.mem.share()
	if build.n > share && level < maxHashJoinLevels {
		return j.repartition(probe, build, level+1)
	}
	return j.joinBlocks(probe, build, share)
}

// repartition splits both sides of a partition by another hash of their
// keys into files of their own, and joins the new partitions one by one
// (recursive partitioning, as Flink's hybrid hash join does).
func (j *hashJoinOp[K, A, B, O]) repartition(probe, build *joinSide, level int) error {
	var children [hashJoinPartitions][2]joinSide
	defer func() {
		for i := range children {
			children[i][0].close()
			children[i][1].close()
		}
	}()
	repartitioned.Add(1)
	dir := tmpDir(j.oc.Config)
	for side, src := range [2]*joinSide{probe, build} {
		err := src.scan(func(_, val []byte) error {
			var k K
			if side == 0 {
				a, _, err := j.ac.Decode(val)
				if err != nil {
					return fmt.Errorf("HashJoin: read probe input: %w", err)
				}
				k = j.probeKey(a)
			} else {
				b, _, err := j.bc.Decode(val)
				if err != nil {
					return fmt.Errorf("HashJoin: read build input: %w", err)
				}
				k = j.buildKey(b)
			}
			c := &children[levelHash(j.hash(k), level)%hashJoinPartitions][side]
			if c.file == nil {
				f, err := os.CreateTemp(dir, "weir-spill-hashjoin-")
				if err != nil {
					return fmt.Errorf("HashJoin: spill to %s: %w", dir, err)
				}
				c.file, c.w = f, bufio.NewWriterSize(f, hashJoinBufferSize)
			}
			return c.write(val)
		})
		src.close()
		if err != nil {
			return err
		}
	}
	for i := range children {
		if err := j.joinPartition(&children[i][0], &children[i][1], level); err != nil {
			return err
		}
		children[i][0].close()
		children[i][1].close()
	}
	return nil
}

// levelHash mixes a key's hash anew for each level of partitioning, so
// that the records of one partition spread over the next level's.
func levelHash(h uint64, level int) uint64 {
	if level == 0 {
		return h
	}
	// The finalizer of splitmix64.
	h ^= uint64(level) * 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return h ^ h>>31
}

// joinBlocks loads the build side into hash tables of about share bytes,
// one after another, and streams the probe side past each: once when the
// build side fits.
func (j *hashJoinOp[K, A, B, O]) joinBlocks(probe, build *joinSide, share int64) error {
	table := make(map[K][]B)
	var loaded int64
	probeTable := func() error {
		if len(table) == 0 {
			return nil
		}
		defer func() {
			clear(table)
			loaded = 0
		}()
		return probe.scan(func(_, val []byte) error {
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
	}
	err := build.scan(func(_, val []byte) error {
		b, _, err := j.bc.Decode(val)
		if err != nil {
			return fmt.Errorf("HashJoin: read build input: %w", err)
		}
		k := j.buildKey(b)
		table[k] = append(table[k], b)
		if loaded += int64(len(val)) + entryOverhead; loaded > share {
			return probeTable()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return probeTable()
}

// hashJoinBufferSize is the buffer of a spilled side's file.
const hashJoinBufferSize = 64 << 10

// appendJoinRecord appends a record, an empty key and the encoded value val,
// to buf: the runs' reader reads (key, value) pairs.
func appendJoinRecord(buf, val []byte) []byte {
	buf = append(buf, 0)
	buf = binary.AppendUvarint(buf, uint64(len(val)))
	return append(buf, val...)
}

// write appends a record to the side's file.
func (s *joinSide) write(val []byte) error {
	var hdr [1 + binary.MaxVarintLen64]byte
	n := 1 + binary.PutUvarint(hdr[1:], uint64(len(val)))
	s.w.Write(hdr[:n])
	if _, err := s.w.Write(val); err != nil {
		return fmt.Errorf("HashJoin: spill to %s: %w", s.file.Name(), err)
	}
	s.n += int64(n + len(val))
	return nil
}

// scan calls fn for every record of the side, from memory or its file;
// it may scan again.
func (s *joinSide) scan(fn func(key, val []byte) error) error {
	if s.file == nil {
		return eachEncoded(s.mem, fn)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("HashJoin: spill to %s: %w", s.file.Name(), err)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	rd := &runReader{r: bufio.NewReaderSize(s.file, hashJoinBufferSize), name: s.file.Name()}
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

// close drops the side's records and removes its file.
func (s *joinSide) close() {
	s.mem = nil
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
