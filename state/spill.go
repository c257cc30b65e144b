package state

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// A time map's spill holds the entries of times to come that the cache
// evicted, outside Pebble: in files of their own, one per eviction,
// each sorted by store key (so by time), read back in order when the
// watermark reaches them and deleted once it passed them.
//
// Through Pebble such an entry costs a write into the memtable, a flush,
// compactions and then a range deletion, for a value that lives a few
// seconds and is read once (q19 at a tenth of its state spent most of
// its time there). A spilled entry is written once, sequentially, and
// read once, sequentially.
//
// An incremental snapshot takes the spill's files as they are (link,
// with their cursors and the stale keys); a full one, like any other
// write-back of the whole cache, writes what the spill holds into the
// store (stateCache.flush). A restore writes the files' current records
// into the restored store (applySpills) and starts without a spill.
// Between snapshots a key's current value
// is in one place: the cache if it holds the key; else the spill if it
// holds the key unread (after its cursor, not taken); else the store.
// Only keys the store never held are spilled, and a spilled entry leaves
// the spill when it is read (into the cache, as dirty) or overwritten
// (taken), so that the store and the spill never both hold a key.
type timeSpill struct {
	dir  string
	name string // the state's name, in errors and file names
	// segments are the files not yet passed, oldest first.
	segments []*spillSegment
	seq      uint64
	// taken maps keys read or overwritten out of the spill by point to
	// the last segment then written: the copies in that segment and
	// older ones are stale.
	taken map[string]uint64
	// pending gathers an eviction's entries, written by seal.
	pending []spillRecord
	arena   []byte
	w       *bufio.Writer
}

// spillKeepArena is the most the spill keeps of the buffer of an
// eviction's values between evictions.
const spillKeepArena = 1 << 20

type spillRecord struct {
	key string
	val []byte
}

// spillIndexEvery is how many records apart the in-memory index of a
// segment points into it: a point read reads that many at most.
const spillIndexEvery = 16

// spillMinRecords is the fewest entries an eviction writes to a file of
// their own; fewer go into the store.
const spillMinRecords = 32

// spillReadBuffer is what a segment's cursor reads at once.
const spillReadBuffer = 32 << 10

type spillSegment struct {
	seq              uint64
	path             string
	f                *os.File
	size             int64
	minTime, maxTime int64
	index            []spillIndexEntry
	// keys filters the segment's keys: it goes with the segment, so
	// that the spill's filters hold only the keys of live segments.
	keys bloomFilter
	// The cursor: off is where the next unread record starts; key and
	// val hold it once read (ready).
	off   int64
	rd    *bufio.Reader
	key   []byte
	val   []byte
	ready bool
}

type spillIndexEntry struct {
	key string
	off int64
}

func newTimeSpill(dir, name string) *timeSpill {
	return &timeSpill{dir: dir, name: name}
}

// empty reports whether the spill holds nothing; a time map without a
// cache has no spill (nil), which is empty.
func (s *timeSpill) empty() bool { return s == nil || len(s.segments) == 0 }

// mayHold reports whether the spill may hold key: whether a segment
// whose times span key's has it in its filter.
func (s *timeSpill) mayHold(key []byte) bool {
	if s.empty() {
		return false
	}
	ts := timeOf(key[idLen:timeKeyLen])
	var h1, h2 uint64
	hashed := false
	for _, g := range s.segments {
		if ts < g.minTime || ts > g.maxTime {
			continue
		}
		if !hashed {
			h1, h2 = bloomHashes(key)
			hashed = true
		}
		if g.keys.has(h1, h2) {
			return true
		}
	}
	return false
}

// push gathers an evicted entry for the next seal: its value is what
// the caller appended to s.arena from start on.
func (s *timeSpill) push(key string, start int) {
	s.pending = append(s.pending, spillRecord{key: key, val: s.arena[start:len(s.arena):len(s.arena)]})
}

// seal writes the gathered entries as a new segment, sorted by key.
func (s *timeSpill) seal() error {
	if len(s.pending) == 0 {
		return nil
	}
	defer s.clearPending()
	slices.SortFunc(s.pending, func(a, b spillRecord) int { return strings.Compare(a.key, b.key) })
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("state %q: spill: %w", s.name, err)
	}
	s.seq++
	seg := &spillSegment{seq: s.seq, path: filepath.Join(s.dir, fmt.Sprintf("%s-%06d", safeName(s.name), s.seq))}
	f, err := os.OpenFile(seg.path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("state %q: spill: %w", s.name, err)
	}
	if s.w == nil {
		s.w = bufio.NewWriterSize(f, spillReadBuffer)
	} else {
		s.w.Reset(f)
	}
	var off int64
	var head [2 * binary.MaxVarintLen64]byte
	seg.keys = newBloomFilter(len(s.pending))
	for i, r := range s.pending {
		if i%spillIndexEvery == 0 {
			seg.index = append(seg.index, spillIndexEntry{key: r.key, off: off})
		}
		n := binary.PutUvarint(head[:], uint64(len(r.key)))
		s.w.Write(head[:n])
		s.w.WriteString(r.key)
		m := binary.PutUvarint(head[:], uint64(len(r.val)))
		s.w.Write(head[:m])
		s.w.Write(r.val)
		off += int64(n + len(r.key) + m + len(r.val))
		seg.keys.add(bloomHashes([]byte(r.key)))
	}
	if err := s.w.Flush(); err != nil {
		s.w.Reset(nil)
		f.Close()
		os.Remove(seg.path)
		return fmt.Errorf("state %q: spill to %s: %w", s.name, seg.path, err)
	}
	s.w.Reset(nil)
	seg.f, seg.size = f, off
	seg.minTime = timeOf([]byte(s.pending[0].key[idLen:timeKeyLen]))
	seg.maxTime = timeOf([]byte(s.pending[len(s.pending)-1].key[idLen:timeKeyLen]))
	s.segments = append(s.segments, seg)
	return nil
}

func (s *timeSpill) clearPending() {
	clear(s.pending)
	s.pending, s.arena = s.pending[:0], s.arena[:0]
	if cap(s.arena) > spillKeepArena {
		s.arena = nil // a large cache's eviction: not kept between them
	}
}

// safeName makes a state's name usable in a file name.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, name)
}

// next makes the segment's cursor hold its next unread record, if any
// (ready).
func (g *spillSegment) next() error {
	if g.ready {
		return nil
	}
	if g.off >= g.size {
		return nil
	}
	if g.rd == nil {
		g.rd = bufio.NewReaderSize(io.NewSectionReader(g.f, g.off, g.size-g.off), spillReadBuffer)
	}
	var err error
	if g.key, err = readSpillField(g.rd, g.key[:0]); err != nil {
		return fmt.Errorf("spill segment %s at %d: %w", g.path, g.off, err)
	}
	if g.val, err = readSpillField(g.rd, g.val[:0]); err != nil {
		return fmt.Errorf("spill segment %s at %d: %w", g.path, g.off, err)
	}
	g.ready = true
	return nil
}

// unopenedFrom reports whether the segment is unread and starts at hi or
// after it: its cursor need not read (nor take a buffer) yet.
func (g *spillSegment) unopenedFrom(hi []byte) bool {
	return g.off == 0 && !g.ready && g.index[0].key >= string(hi)
}

// advance moves the cursor past the record it holds.
func (g *spillSegment) advance() {
	g.off += int64(uvarintLen(uint64(len(g.key))) + len(g.key) + uvarintLen(uint64(len(g.val))) + len(g.val))
	g.ready = false
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func readSpillField(rd *bufio.Reader, dst []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(rd)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, int(n))[:n]
	_, err = io.ReadFull(rd, dst)
	return dst, err
}

// valid reports whether the record under key in segment g is current.
func (s *timeSpill) valid(g *spillSegment, key []byte) bool {
	if len(s.taken) == 0 {
		return true
	}
	t, ok := s.taken[string(key)]
	return !ok || t < g.seq
}

// nextBefore returns the segment whose cursor holds the least unread
// record with a key below hi, or nil.
func (s *timeSpill) nextBefore(hi []byte) (*spillSegment, error) {
	var best *spillSegment
	for _, g := range s.segments {
		if g.unopenedFrom(hi) {
			continue
		}
		if err := g.next(); err != nil {
			return nil, err
		}
		if !g.ready || bytes.Compare(g.key, hi) >= 0 {
			continue
		}
		if best == nil || bytes.Compare(g.key, best.key) < 0 {
			best = g
		}
	}
	return best, nil
}

// mayHoldUnread reports whether a segment's cursor is at key or before
// it: the spill reads in key order, so a key below every cursor was read
// already (or never spilled).
func (s *timeSpill) mayHoldUnread(key []byte) (bool, error) {
	for _, g := range s.segments {
		switch {
		case g.ready:
			if bytes.Compare(g.key, key) <= 0 {
				return true, nil
			}
		case g.off == 0:
			// Not read yet: its first key is its index's.
			if g.index[0].key <= string(key) {
				return true, nil
			}
		default:
			if err := g.next(); err != nil {
				return false, err
			}
			if g.ready && bytes.Compare(g.key, key) <= 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// readAhead passes the spill's unread records with keys below hi to fn in
// key order, current ones only, until fn returns false; each record
// passed is read (fn must keep it).
func (s *timeSpill) readAhead(hi []byte, fn func(key, val []byte) (bool, error)) error {
	for {
		g, err := s.nextBefore(hi)
		if g == nil || err != nil {
			return err
		}
		if !s.valid(g, g.key) {
			g.advance()
			continue
		}
		more, err := fn(g.key, g.val)
		g.advance()
		if err != nil || !more {
			return err
		}
	}
}

// take returns the current value of key in the spill, if it holds one
// unread, and makes the spill's copy stale: the caller keeps the value
// (or overwrites it) in the cache.
func (s *timeSpill) take(key []byte) ([]byte, bool, error) {
	if !s.mayHold(key) {
		return nil, false, nil
	}
	ts := timeOf(key[idLen:timeKeyLen])
	for i := len(s.segments) - 1; i >= 0; i-- {
		g := s.segments[i]
		if ts < g.minTime || ts > g.maxTime {
			continue
		}
		off, val, found, err := g.find(key)
		if err != nil {
			return nil, false, err
		}
		if !found {
			continue
		}
		// The newest copy decides: read already, or stale, the spill
		// does not hold the key.
		if off < g.off || !s.valid(g, key) {
			return nil, false, nil
		}
		if s.taken == nil {
			s.taken = make(map[string]uint64)
		}
		s.taken[string(key)] = s.seq
		return val, true, nil
	}
	return nil, false, nil
}

// overwritten makes the spill's copy of key, if any, stale: the cache
// holds a newer value.
func (s *timeSpill) overwritten(key []byte) {
	if !s.mayHold(key) {
		return
	}
	if s.taken == nil {
		s.taken = make(map[string]uint64)
	}
	s.taken[string(key)] = s.seq
}

// find reads the record of key in segment g by its index.
func (g *spillSegment) find(key []byte) (off int64, val []byte, found bool, err error) {
	i, _ := slices.BinarySearchFunc(g.index, key, func(e spillIndexEntry, k []byte) int {
		return strings.Compare(e.key, string(k))
	})
	if i < len(g.index) && g.index[i].key == string(key) {
		// an exact hit: the block starts with it
	} else if i == 0 {
		return 0, nil, false, nil
	} else {
		i--
	}
	start, end := g.index[i].off, g.size
	if i+1 < len(g.index) {
		end = g.index[i+1].off
	}
	block := make([]byte, end-start)
	if _, err := g.f.ReadAt(block, start); err != nil {
		return 0, nil, false, fmt.Errorf("spill segment %s at %d: %w", g.path, start, err)
	}
	for pos := 0; pos < len(block); {
		k, v, n, err := spillRecordAt(block[pos:])
		if err != nil {
			return 0, nil, false, fmt.Errorf("spill segment %s at %d: %w", g.path, start+int64(pos), err)
		}
		if bytes.Equal(k, key) {
			return start + int64(pos), v, true, nil
		}
		pos += n
	}
	return 0, nil, false, nil
}

// spillRecordAt decodes the record that b starts with: its key, its
// value and its length.
func spillRecordAt(b []byte) (key, val []byte, n int, err error) {
	key, k, err := spillField(b)
	if err != nil {
		return nil, nil, 0, err
	}
	val, v, err := spillField(b[k:])
	if err != nil {
		return nil, nil, 0, err
	}
	return key, val, k + v, nil
}

func spillField(b []byte) ([]byte, int, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, 0, errors.New("truncated record")
	}
	return b[k : k+int(n)], k + int(n), nil
}

// passTo writes the unread current records with keys below hi into
// batch, but for those cached (cached reports it), and deletes the
// segments that are then read in full: the watermark passed them, and
// the store keeps what their timers left; stored learns the keys.
func (s *timeSpill) passTo(hi []byte, batch *pebble.Batch, cached func(key []byte) bool, stored *storedKeys) error {
	for _, g := range s.segments {
		for !g.unopenedFrom(hi) {
			if err := g.next(); err != nil {
				return err
			}
			if !g.ready || bytes.Compare(g.key, hi) >= 0 {
				break
			}
			if s.valid(g, g.key) && !cached(g.key) {
				if err := batch.Set(g.key, g.val, nil); err != nil {
					return err
				}
				stored.add(g.key)
			}
			g.advance()
		}
	}
	return s.dropRead(hi)
}

// dropRead deletes the segments read in full and the taken marks of
// keys below hi.
func (s *timeSpill) dropRead(hi []byte) error {
	var err error
	s.segments = slices.DeleteFunc(s.segments, func(g *spillSegment) bool {
		if g.off < g.size {
			return false
		}
		err = errors.Join(err, g.remove())
		return true
	})
	for k := range s.taken {
		if k < string(hi) {
			delete(s.taken, k)
		}
	}
	if len(s.segments) == 0 {
		s.reset()
	}
	return err
}

// reset forgets the spill's stale keys; its segments are gone.
func (s *timeSpill) reset() {
	clear(s.segments)
	s.segments = s.segments[:0]
	clear(s.taken)
}

func (g *spillSegment) remove() error {
	err := g.f.Close()
	return errors.Join(err, os.Remove(g.path))
}

// closeAll deletes every segment, for a store that closes.
func (s *timeSpill) closeAll() error {
	var err error
	for _, g := range s.segments {
		err = errors.Join(err, g.remove())
	}
	s.reset()
	return err
}

// spillSnapshot is a time map's spill in an incremental snapshot: its
// files, each from its cursor on, and its stale keys. A restore writes
// their current records into the store.
type spillSnapshot struct {
	State string
	Files []spillFile
	Stale []staleKey `json:",omitempty"`
}

type spillFile struct {
	File   string // name in the snapshot's local directory
	Handle string `json:",omitempty"`
	Seq    uint64
	From   int64 // the first unread record
	Size   int64
}

type staleKey struct {
	Key []byte
	Seq uint64 // the copies in files up to Seq are stale
}

// link hard-links the spill's files into dir and returns what a restore
// needs of them.
func (s *timeSpill) link(dir string) (spillSnapshot, error) {
	snap := spillSnapshot{State: s.name}
	if s.empty() {
		return snap, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return snap, err
	}
	for _, g := range s.segments {
		// The names of a store's spill files never repeat (state name,
		// then the spill's sequence): a name uploaded once is that file.
		name := "spill-" + filepath.Base(g.path)
		if err := os.Link(g.path, filepath.Join(dir, name)); err != nil {
			return snap, fmt.Errorf("state %q: link spill file: %w", s.name, err)
		}
		snap.Files = append(snap.Files, spillFile{File: name, Seq: g.seq, From: g.off, Size: g.size})
	}
	for k, seq := range s.taken {
		snap.Stale = append(snap.Stale, staleKey{Key: []byte(k), Seq: seq})
	}
	return snap, nil
}

// restoreSpill writes the current records of a snapshot's spill files,
// found in dir, into batch.
func restoreSpill(dir string, snap spillSnapshot, batch *pebble.Batch) error {
	stale := make(map[string]uint64, len(snap.Stale))
	for _, k := range snap.Stale {
		stale[string(k.Key)] = k.Seq
	}
	for _, f := range snap.Files {
		data, err := os.ReadFile(filepath.Join(dir, f.File))
		if err != nil {
			return fmt.Errorf("state %q: restore spill: %w", snap.State, err)
		}
		if int64(len(data)) != f.Size || f.From < 0 || f.From > f.Size {
			return fmt.Errorf("state %q: spill file %s holds %d bytes, the snapshot says %d from %d", snap.State, f.File, len(data), f.Size, f.From)
		}
		for pos := f.From; pos < f.Size; {
			k, v, n, err := spillRecordAt(data[pos:])
			if err != nil {
				return fmt.Errorf("state %q: spill file %s at %d: %w", snap.State, f.File, pos, err)
			}
			pos += int64(n)
			if seq, ok := stale[string(k)]; ok && seq >= f.Seq {
				continue
			}
			if err := batch.Set(k, v, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// applySpills writes the current records of an incremental snapshot's
// spill files, downloaded into spillDir, into its store in dir.
func applySpills(dir, spillDir string, spills []spillSnapshot) error {
	opts := &pebble.Options{Logger: quietLogger{}, Merger: listMerger, DisableWAL: true}
	// The records become an SST of the store, which an adopting store
	// keeps: with the Bloom filters its own SSTs have (NewPebbleBackend).
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return fmt.Errorf("state: open restored store: %w", err)
	}
	batch := db.NewBatch()
	err = func() error {
		for _, sp := range spills {
			if err := restoreSpill(spillDir, sp, batch); err != nil {
				return err
			}
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			return err
		}
		return db.Flush()
	}()
	batch.Close()
	return errors.Join(err, db.Close())
}
