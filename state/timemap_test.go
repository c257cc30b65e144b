package state

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// timeMapModel is the obviously correct time map: a map per key.
type timeMapModel map[string]map[int64]string

func (m timeMapModel) put(k string, ts int64, v string) {
	if m[k] == nil {
		m[k] = make(map[int64]string)
	}
	m[k][ts] = v
}

// timeMapRun drives a time map the way a keyed operator's timers do:
// values put at times around the watermark (some late), and at each
// watermark the entries it passed read and, mostly, removed, in time
// order; some are left behind, some are put again.
type timeMapRun struct {
	b     *Backend[string]
	tm    TimeMapState[string]
	model timeMapModel
	keys  []string
	wm    int64
	// timers are the (key, time) pairs put since their watermark.
	timers map[int64][]string
}

func newTimeMapRun(b *Backend[string], keys []string) *timeMapRun {
	return &timeMapRun{b: b, tm: TimeMap[string](b, "waiting"), model: timeMapModel{}, keys: keys, wm: math.MinInt64, timers: map[int64][]string{}}
}

func (r *timeMapRun) check(t *testing.T, when string) {
	t.Helper()
	for _, k := range r.keys {
		r.b.SetCurrentKey(k)
		for ts := r.wm - 50; ts < r.wm+200; ts++ {
			want, wok := r.model[k][ts]
			got, ok := r.tm.Get(ts)
			if ok != wok || got != want || r.tm.Contains(ts) != wok {
				t.Fatalf("%s: key %s time %d = %q, %v; want %q, %v", when, k, ts, got, ok, want, wok)
			}
		}
	}
}

func (r *timeMapRun) steps(rng *rand.Rand, n int) {
	base := max(r.wm, 0)
	for range n {
		k := r.keys[rng.IntN(len(r.keys))]
		ts := base + int64(rng.IntN(120)) - 10 // a few late
		v := fmt.Sprintf("%s@%d#%d", k, ts, rng.IntN(1000))
		r.b.SetCurrentKey(k)
		r.tm.Put(ts, v)
		r.model.put(k, ts, v)
		r.timers[ts] = append(r.timers[ts], k)
	}
}

// advance fires the timers up to wm as a keyed operator does: between
// WatermarkAdvancing and WatermarkAdvanced, by time.
func (r *timeMapRun) advance(t *testing.T, rng *rand.Rand, wm int64) {
	t.Helper()
	r.b.WatermarkAdvancing(wm)
	var due []int64
	for ts := range r.timers {
		if ts <= wm {
			due = append(due, ts)
		}
	}
	slices.Sort(due)
	type entry struct {
		k  string
		ts int64
	}
	var removed []entry
	for _, ts := range due {
		for _, k := range r.timers[ts] {
			r.b.SetCurrentKey(k)
			v, ok := r.tm.Get(ts)
			want, wok := r.model[k][ts]
			if ok != wok || v != want {
				t.Fatalf("timer %s@%d read %q, %v; want %q, %v", k, ts, v, ok, want, wok)
			}
			switch p := rng.IntN(20); {
			case p == 0: // left behind
			case p == 1: // put again
				r.tm.Put(ts, v+"'")
				r.model[k][ts] = v + "'"
			default:
				r.tm.Remove(ts)
				delete(r.model[k], ts)
				removed = append(removed, entry{k, ts})
			}
			// An entry removed earlier in this watermark, likely
			// evicted since, stays removed (unless put again).
			if len(removed) > 0 {
				e := removed[rng.IntN(len(removed))]
				r.b.SetCurrentKey(e.k)
				got, ok := r.tm.Get(e.ts)
				want, wok := r.model[e.k][e.ts]
				if ok != wok || got != want {
					t.Fatalf("%s@%d, removed, reads %q, %v; want %q, %v", e.k, e.ts, got, ok, want, wok)
				}
			}
		}
		delete(r.timers, ts)
	}
	r.b.WatermarkAdvanced(wm)
	r.wm = wm
}

// TestTimeMapMatchesAMap runs a time map on the heap, on Pebble without a
// cache and on Pebble with a cache far smaller than the state (so that
// entries are evicted, read ahead, dropped by range and left behind),
// against a map, then restores each run's snapshots, full and
// incremental, into both backends and runs on.
func TestTimeMapMatchesAMap(t *testing.T) {
	backends := map[string]func() *Backend[string]{
		"heap":          func() *Backend[string] { return NewBackend[string]() },
		"pebble":        func() *Backend[string] { return newPebbleCache(t, -1) },
		"pebble-cached": func() *Backend[string] { return newPebbleCache(t, 16<<10) },
		// An eviction of so small a cache gathers a few entries: they
		// go to the store unless every one may go to the spill.
		"pebble-cached-spill": func() *Backend[string] { return spillingAll(newPebbleCache(t, 16<<10)) },
	}
	for name, newBackend := range backends {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			r := newTimeMapRun(newBackend(), testKeys(40))
			for i := range 30 {
				r.steps(rng, 200)
				r.advance(t, rng, int64(i*40))
				r.check(t, fmt.Sprintf("after watermark %d", r.wm))
			}
			if c := r.b.p; c != nil && c.cache != nil && c.cache.spillMin == 1 {
				// The run must have spilled, and read back, entries
				// of times to come, and hold some at the snapshot.
				if st := c.cache.stats; st.spilled == 0 || st.spillReads == 0 {
					t.Fatalf("nothing spilled or read back from the spill: %+v", st)
				}
				r.steps(rng, 400)
				if spilledFiles(t, r.b) == 0 {
					t.Fatal("no spill files before the snapshot")
				}
			}
			// The incremental snapshot first: the full one writes the
			// spill into the store.
			files := &dirFiles{dir: t.TempDir(), job: "j"}
			snaps := map[string][]byte{}
			if r.b.p != nil {
				spilled := spilledFiles(t, r.b)
				inc := snapshotInc(t, r.b, files)
				snaps["incremental"] = inc
				if r.b.p.cache != nil && r.b.p.cache.spillMin == 1 {
					// The spill's files go into the snapshot as
					// they are, and stay.
					parsed, _, err := parseIncremental(inc)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.HasPrefix(string(inc), incrementalSpillMagic) {
						t.Fatalf("a manifest with spill files starts %.26q", inc)
					}
					if len(parsed.Spill) == 0 || spilledFiles(t, r.b) != spilled {
						t.Fatalf("%d spill files before the incremental snapshot, %d after, %d spills in it", spilled, spilledFiles(t, r.b), len(parsed.Spill))
					}
				}
			}
			full, err := r.b.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			snaps["full"] = full
			for snapName, snap := range snaps {
				for into, restore := range backends {
					t.Run(snapName+"-into-"+into, func(t *testing.T) {
						b := restore()
						b.SetRestoreFiles(files)
						if err := b.Restore(snap, nil); err != nil {
							t.Fatal(err)
						}
						r2 := newTimeMapRun(b, r.keys)
						r2.model, r2.wm, r2.timers = cloneModel(r.model), r.wm, cloneTimers(r.timers)
						r2.check(t, "restored")
						rng := rand.New(rand.NewPCG(3, 4))
						for i := range 5 {
							r2.steps(rng, 200)
							r2.advance(t, rng, r2.wm+int64(i*40))
							r2.check(t, fmt.Sprintf("restored, after watermark %d", r2.wm))
						}
						r2.advance(t, rng, math.MaxInt64)
					})
				}
			}
		})
	}
}

func cloneModel(m timeMapModel) timeMapModel {
	out := timeMapModel{}
	for k, byTime := range m {
		for ts, v := range byTime {
			out.put(k, ts, v)
		}
	}
	return out
}

func cloneTimers(m map[int64][]string) map[int64][]string {
	out := make(map[int64][]string, len(m))
	for ts, ks := range m {
		out[ts] = append([]string(nil), ks...)
	}
	return out
}

// TestTimeMapRestoresAMapsSnapshot: a map state's snapshot restores into
// a time map of the same name (and the other way), moving the entries to
// the other layout, whichever was registered first.
func TestTimeMapRestoresAMapsSnapshot(t *testing.T) {
	src := newPebbleCache(t, 0)
	m := Map[int64, string](src, "waiting")
	for i, k := range testKeys(20) {
		src.SetCurrentKey(k)
		m.Put(int64(i), k)
		m.Put(int64(100+i), k+"!")
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, registerFirst := range []bool{false, true} {
		dst := newPebbleCache(t, 0)
		var tm TimeMapState[string]
		if registerFirst {
			tm = TimeMap[string](dst, "waiting")
		}
		if err := dst.Restore(snap, nil); err != nil {
			t.Fatal(err)
		}
		if !registerFirst {
			tm = TimeMap[string](dst, "waiting")
		}
		for i, k := range testKeys(20) {
			dst.SetCurrentKey(k)
			if v, ok := tm.Get(int64(i)); !ok || v != k {
				t.Fatalf("registered first %v: %s@%d = %q, %v", registerFirst, k, i, v, ok)
			}
			if v, ok := tm.Get(int64(100 + i)); !ok || v != k+"!" {
				t.Fatalf("registered first %v: %s@%d = %q, %v", registerFirst, k, 100+i, v, ok)
			}
			if tm.Contains(int64(50 + i)) {
				t.Fatalf("%s@%d appeared", k, 50+i)
			}
		}
		// And back: the time map's snapshots, full and incremental (its
		// files in the time-ordered layout), restore into a map.
		full, err := dst.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		files := &dirFiles{dir: t.TempDir(), job: "j"}
		inc := snapshotInc(t, dst, files)
		for _, c := range []struct {
			back *Backend[string]
			snap []byte
		}{{NewBackend[string](), full}, {newPebbleCache(t, 0), full}, {newPebbleCache(t, 0), inc}} {
			back := c.back
			back.SetRestoreFiles(files)
			if err := back.Restore(c.snap, nil); err != nil {
				t.Fatal(err)
			}
			m := Map[int64, string](back, "waiting")
			for i, k := range testKeys(20) {
				back.SetCurrentKey(k)
				if got := m.All(); len(got) != 2 || got[int64(i)] != k || got[int64(100+i)] != k+"!" {
					t.Fatalf("%s in the map restored from the time map: %v", k, got)
				}
			}
		}
	}
}

// TestTimeMapDropsRemovedEntriesWithoutTombstones: entries evicted to the
// store, read by their timers and removed, leave with the watermark's
// range deletion: the cache writes back no tombstone for them, and the
// store holds none of them afterwards.
func TestTimeMapDropsRemovedEntriesWithoutTombstones(t *testing.T) {
	b := newPebbleCache(t, 64<<10)
	tm := TimeMap[string](b, "waiting")
	keys := testKeys(50)
	val := string(make([]byte, 200))
	for ts := range int64(40) {
		for _, k := range keys {
			b.SetCurrentKey(k)
			tm.Put(ts, val)
		}
	}
	if err := b.p.flushCache(); err != nil {
		t.Fatal(err)
	}
	written := b.p.cache.stats.writeBacks
	b.WatermarkAdvancing(39)
	for ts := range int64(40) {
		for _, k := range keys {
			b.SetCurrentKey(k)
			if _, ok := tm.Get(ts); !ok {
				t.Fatalf("%s@%d is missing", k, ts)
			}
			tm.Remove(ts)
		}
	}
	b.WatermarkAdvanced(39)
	if err := b.p.flushCache(); err != nil {
		t.Fatal(err)
	}
	if n := b.p.cache.stats.writeBacks - written; n > int64(len(keys)) {
		t.Fatalf("the cache wrote back %d entries for 2000 removed ones: tombstones", n)
	}
	if n := b.Len(); n != 0 {
		t.Fatalf("the store holds %d keys after every entry was removed", n)
	}
}

// TestTimeMapKeepsTheEntriesDueFirst: when the entries waiting for the
// watermark take twice the cache, the cache keeps those the watermark
// reaches first and evicts those it reaches last, so that a good share of
// the timers' reads are hits. By recency it would evict each entry, the
// oldest first, just before its timer reads it: every entry would be
// written back and read again.
func TestTimeMapKeepsTheEntriesDueFirst(t *testing.T) {
	b := newPebbleCache(t, 128<<10)
	tm := TimeMap[string](b, "waiting")
	keys := testKeys(20)
	val := string(make([]byte, 200))
	const lag, steps = 40, 400 // 800 entries wait: about twice the cache
	written := b.p.cache.stats.writeBacks + b.p.cache.stats.spilled
	for wm := int64(0); wm < steps; wm++ {
		for _, k := range keys {
			b.SetCurrentKey(k)
			tm.Put(wm+lag, k+val)
		}
		b.WatermarkAdvancing(wm)
		for _, k := range keys {
			b.SetCurrentKey(k)
			if v, ok := tm.Get(wm); ok != (wm >= lag) || ok && v != k+val {
				t.Fatalf("%s@%d = %.10q, %v", k, wm, v, ok)
			}
			tm.Remove(wm)
		}
		b.WatermarkAdvanced(wm)
	}
	n := b.p.cache.stats.writeBacks + b.p.cache.stats.spilled - written
	put := int64(len(keys) * steps)
	t.Logf("%d of %d entries written back", n, put)
	if n > put*2/3 {
		t.Fatalf("%d of %d entries were evicted before their timer: the cache kept those due last", n, put)
	}
}

// spillingAll makes b's time maps spill however few entries an eviction
// gathers.
func spillingAll(b *Backend[string]) *Backend[string] {
	b.p.cache.spillMin = 1
	return b
}

// spilledFiles counts the files in the backend's spill directory.
func spilledFiles(t *testing.T, b *Backend[string]) int {
	t.Helper()
	entries, err := os.ReadDir(b.p.dir + spillSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestTimeMapSpillsEntriesOfTimesToCome: entries of times to come that
// the cache evicts go to the spill, not the store; their timers read them
// back, and the files go once the watermark passed them. The entries the
// timers leave behind, and those a snapshot finds spilled, end in the
// store.
func TestTimeMapSpillsEntriesOfTimesToCome(t *testing.T) {
	b := spillingAll(newPebbleCache(t, 64<<10))
	tm := TimeMap[string](b, "waiting")
	keys := testKeys(50)
	val := string(make([]byte, 200))
	const steps = 40 // 2,000 entries of 270 bytes: 8 times the cache
	for ts := range int64(steps) {
		for _, k := range keys {
			b.SetCurrentKey(k)
			tm.Put(ts, k+val)
		}
	}
	st := b.p.cache.stats
	if st.writeBacks != 0 || st.spilled < 1500 {
		t.Fatalf("%d entries written to the store, %d spilled; want 0 and most", st.writeBacks, st.spilled)
	}
	if m := b.Metrics(); m.CacheSpilled != st.spilled || m.CacheWriteBacks != 0 {
		t.Fatalf("metrics: %d spilled, %d written back; want %d, 0", m.CacheSpilled, m.CacheWriteBacks, st.spilled)
	}
	files := spilledFiles(t, b)
	if files == 0 {
		t.Fatal("no spill files")
	}
	// A point read of a spilled entry, out of the timers' window, and
	// a blind write over one.
	b.SetCurrentKey(keys[7])
	if v, ok := tm.Get(3); !ok || v != keys[7]+val {
		t.Fatalf("%s@3 = %.10q, %v", keys[7], v, ok)
	}
	b.SetCurrentKey(keys[8])
	tm.Put(4, "new")
	for wm := range int64(steps / 2) {
		b.WatermarkAdvancing(wm)
		for i, k := range keys {
			b.SetCurrentKey(k)
			want := k + val
			if wm == 4 && k == keys[8] {
				want = "new"
			}
			if v, ok := tm.Get(wm); !ok || v != want {
				t.Fatalf("%s@%d = %.10q, %v; want %.10q", k, wm, v, ok, want)
			}
			if i%10 != 0 { // every tenth left behind
				tm.Remove(wm)
			}
		}
		b.WatermarkAdvanced(wm)
	}
	if n := spilledFiles(t, b); n >= files {
		t.Fatalf("%d spill files after half the times passed, %d before", n, files)
	}
	if m := b.Metrics(); m.CacheSpillReads == 0 {
		t.Fatal("no entry read back from the spill")
	}
	// A snapshot finds the rest spilled: the store takes them.
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if n := spilledFiles(t, b); n != 0 {
		t.Fatalf("%d spill files after a snapshot", n)
	}
	back := newPebbleCache(t, 64<<10)
	if err := back.Restore(snap, nil); err != nil {
		t.Fatal(err)
	}
	tm2 := TimeMap[string](back, "waiting")
	for ts := range int64(steps) {
		for i, k := range keys {
			back.SetCurrentKey(k)
			v, ok := tm2.Get(ts)
			want, wok := k+val, ts >= steps/2 || i%10 == 0
			if ts == 4 && k == keys[8] {
				want = "new"
			}
			if ok != wok || ok && v != want {
				t.Fatalf("restored %s@%d = %.10q, %v; want %.10q, %v", k, ts, v, ok, want, wok)
			}
		}
	}
}

// TestTimeMapSpillFailureSaysWhere: a spill file that cannot be written
// fails the state access that evicted, naming the state and the path,
// rather than dropping the evicted entries (the task then fails and the
// job resumes from its last checkpoint).
func TestTimeMapSpillFailureSaysWhere(t *testing.T) {
	b := spillingAll(newPebbleCache(t, 64<<10))
	tm := TimeMap[string](b, "waiting")
	// A file where the spill's directory goes fails it as a disk that
	// cannot take it would.
	dir := b.p.dir + spillSuffix
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	val := string(make([]byte, 200))
	defer func() {
		err, _ := recover().(error)
		if err == nil || strings.Count(err.Error(), `state "waiting"`) != 1 || !strings.Contains(err.Error(), dir) {
			t.Fatalf("got %v, want the state's name once and %s", err, dir)
		}
		t.Log(err)
	}()
	for ts := range int64(40) {
		for _, k := range testKeys(50) {
			b.SetCurrentKey(k)
			tm.Put(ts, k+val)
		}
	}
	t.Fatal("entries 8 times the cache were evicted without a spill file")
}
