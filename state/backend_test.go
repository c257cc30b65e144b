package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

const testMaxPar = 128

func testKeyGroup(k string) int { return int(xxhash.Sum64String(k) % testMaxPar) }

func newPebble(t testing.TB) *Backend[string] {
	t.Helper()
	return newPebbleCache(t, 0)
}

// newPebbleCache returns a Pebble backend whose cache of decoded values
// holds cacheSize bytes (0: the default; negative: no cache).
func newPebbleCache(t testing.TB, cacheSize int64) *Backend[string] {
	t.Helper()
	b, err := NewPebbleBackendWithOptions(PebbleOptions[string]{Dir: t.TempDir(), MaxParallelism: testMaxPar, KeyGroup: testKeyGroup, StateCacheSize: cacheSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

type avgAcc struct{ Sum, Count int }

// handles are every kind of state registered on one backend.
type handles struct {
	b   *Backend[string]
	val ValueState[int]
	lst ListState[string]
	mp  MapState[string, int]
	red ReducingState[int]
	agg AggregatingState[int, float64]
}

func register(b *Backend[string]) *handles {
	return &handles{
		b:   b,
		val: Value[int](b, "val", -1),
		lst: List[string](b, "list"),
		mp:  Map[string, int](b, "map"),
		red: Reducing[int](b, "sum", func(a, b int) int { return a + b }),
		agg: Aggregating[int, avgAcc, float64](b, "avg",
			func(a avgAcc, v int) avgAcc { a.Sum += v; a.Count++; return a },
			func(a avgAcc) float64 { return float64(a.Sum) / float64(a.Count) },
			func() avgAcc { return avgAcc{} }),
	}
}

// dump reads every state of key k.
func (h *handles) dump(k string) string {
	h.b.SetCurrentKey(k)
	v, vok := h.val.Value()
	r, rok := h.red.Get()
	a, aok := h.agg.Get()
	m := h.mp.All()
	keys := slices.Sorted(maps.Keys(m))
	var sb strings.Builder
	for _, mk := range keys {
		fmt.Fprintf(&sb, "%s=%d,", mk, m[mk])
	}
	return fmt.Sprintf("val=%d/%v list=%q map={%s} sum=%d/%v avg=%v/%v", v, vok, h.lst.Get(), sb.String(), r, rok, a, aok)
}

func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	return keys
}

// step applies one random operation to every backend and compares what
// they read.
func step(t *testing.T, rng *rand.Rand, keys []string, hs ...*handles) {
	t.Helper()
	stepN(t, rng, keys, 16, hs...)
}

// stepN is step with the first nops operations (15 leaves out Len).
func stepN(t *testing.T, rng *rand.Rand, keys []string, nops int, hs ...*handles) {
	t.Helper()
	k := keys[rng.IntN(len(keys))]
	op := rng.IntN(nops)
	x := rng.IntN(100)
	mk := fmt.Sprintf("m%d", rng.IntN(5))
	var reads []string
	for _, h := range hs {
		h.b.SetCurrentKey(k)
		var r string
		switch op {
		case 0:
			v, ok := h.val.Value()
			r = fmt.Sprint(v, ok)
		case 1:
			h.val.Update(x)
		case 2:
			h.val.Clear()
		case 3:
			r = fmt.Sprintf("%q", h.lst.Get())
		case 4:
			h.lst.Add(fmt.Sprint("e", x))
		case 5:
			vs := make([]string, x%3)
			for i := range vs {
				vs[i] = fmt.Sprint("u", x+i)
			}
			h.lst.Update(vs)
		case 6:
			h.lst.Clear()
		case 7:
			v, ok := h.mp.Get(mk)
			r = fmt.Sprint(v, ok, h.mp.Contains(mk))
		case 8:
			h.mp.Put(mk, x)
		case 9:
			h.mp.Remove(mk)
		case 10:
			if x < 20 {
				h.mp.Clear()
			}
			m := map[string]int{}
			h.mp.Range(func(k string, v int) bool { m[k] = v; return true })
			if !maps.Equal(m, h.mp.All()) {
				t.Fatalf("Range %v != All %v", m, h.mp.All())
			}
			r = fmt.Sprint(m)
		case 11:
			h.red.Add(x)
			v, ok := h.red.Get()
			r = fmt.Sprint(v, ok)
		case 12:
			h.red.Clear()
		case 13:
			h.agg.Add(x)
			v, ok := h.agg.Get()
			r = fmt.Sprint(v, ok)
		case 14:
			if x < 30 {
				h.agg.Clear()
			}
		case 15:
			r = fmt.Sprint(h.b.Len())
		}
		reads = append(reads, r)
	}
	for i := 1; i < len(reads); i++ {
		if reads[i] != reads[0] {
			t.Fatalf("op %d on %s: backend %d read %q, backend 0 read %q", op, k, i, reads[i], reads[0])
		}
	}
}

func compareAll(t *testing.T, keys []string, hs ...*handles) {
	t.Helper()
	for _, k := range keys {
		want := hs[0].dump(k)
		for i, h := range hs[1:] {
			if got := h.dump(k); got != want {
				t.Fatalf("key %s: backend %d has %s, backend 0 has %s", k, i+1, got, want)
			}
		}
	}
	for i, h := range hs[1:] {
		if h.b.Len() != hs[0].b.Len() {
			t.Fatalf("backend %d Len %d, backend 0 Len %d", i+1, h.b.Len(), hs[0].b.Len())
		}
	}
}

func TestHeapAndPebbleAgree(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			keys := testKeys(20)
			heap := register(NewBackend[string]())
			peb := register(newPebble(t))
			// A cache of 2 KiB evicts on most operations; none reads and
			// writes the store directly.
			tiny, uncached := register(newPebbleCache(t, 2<<10)), register(newPebbleCache(t, -1))
			for range 3000 {
				step(t, rng, keys, heap, peb, tiny, uncached)
			}
			compareAll(t, keys, heap, peb, tiny, uncached)
			if tiny.b.p.cache.stats.evictions == 0 {
				t.Fatal("the 2 KiB cache never evicted")
			}
			if _, err := tiny.b.Snapshot(); err != nil {
				t.Fatal(err)
			}
			compareAll(t, keys, heap, tiny)

			// Cross restores: heap -> pebble, pebble -> heap, handles
			// registered before or after Restore.
			hs, err := heap.b.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			ps, err := peb.b.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			p2 := newPebble(t)
			if err := p2.RestoreAll(hs); err != nil {
				t.Fatal(err)
			}
			peb2 := register(p2)
			heap2 := register(NewBackend[string]())
			if err := heap2.b.Restore(ps, nil); err != nil {
				t.Fatal(err)
			}
			compareAll(t, keys, heap, peb, peb2, heap2)

			// They keep agreeing after more operations.
			for range 2000 {
				step(t, rng, keys, heap, peb, peb2, heap2)
			}
			compareAll(t, keys, heap, peb, peb2, heap2)
		})
	}
}

func TestUnregisteredStateSurvivesSnapshot(t *testing.T) {
	keys := testKeys(10)
	src := register(NewBackend[string]())
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		step(t, rng, keys, src)
	}
	snap, err := src.b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, mk := range []func(testing.TB) *Backend[string]{
		func(testing.TB) *Backend[string] { return NewBackend[string]() },
		newPebble,
	} {
		// Restore, snapshot again without registering, restore that.
		mid := mk(t)
		if err := mid.RestoreAll(snap); err != nil {
			t.Fatal(err)
		}
		Value[int](mid, "val", -1) // only one state registered
		again, err := mid.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		dst := mk(t)
		if err := dst.RestoreAll(again); err != nil {
			t.Fatal(err)
		}
		compareAll(t, keys, src, register(dst))
	}
}

// TestRestoreRescale splits two subtasks' state (parallelism 2) into three
// (parallelism 3), filtering each snapshot by key-group range.
func TestRestoreRescale(t *testing.T) {
	keys := testKeys(200)
	owner := func(k string, par int) int { return testKeyGroup(k) * par / testMaxPar }
	old := []*handles{register(NewBackend[string]()), register(newPebble(t))}
	all := register(NewBackend[string]()) // the union, for reference
	rng := rand.New(rand.NewPCG(3, 4))
	for range 4000 {
		k := keys[rng.IntN(len(keys))]
		stepN(t, rand.New(rand.NewPCG(uint64(rng.Uint32()), 1)), []string{k}, 15, old[owner(k, 2)], all)
	}
	var snaps [][]byte
	for _, h := range old {
		s, err := h.b.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	for i := range 3 {
		var b *Backend[string]
		if i%2 == 0 {
			b = newPebble(t)
		} else {
			b = NewBackend[string]()
		}
		// Register only some handles before the restores.
		Value[int](b, "val", -1)
		keep := func(k string) bool { return owner(k, 3) == i }
		for _, s := range snaps {
			if err := b.Restore(s, keep); err != nil {
				t.Fatal(err)
			}
		}
		h := register(b)
		empty := register(NewBackend[string]())
		for _, k := range keys {
			want := empty.dump(k)
			if owner(k, 3) == i {
				want = all.dump(k)
			}
			if got := h.dump(k); got != want {
				t.Fatalf("subtask %d key %s: got %s, want %s", i, k, got, want)
			}
		}
	}
}

func TestReducingAndAggregating(t *testing.T) {
	for name, b := range map[string]*Backend[string]{"heap": NewBackend[string](), "pebble": newPebble(t)} {
		t.Run(name, func(t *testing.T) {
			mx := Reducing[int](b, "max", func(a, b int) int { return max(a, b) })
			words := Aggregating[string, []string, string](b, "words",
				func(acc []string, w string) []string { return append(acc, w) },
				func(acc []string) string { return strings.Join(acc, " ") },
				func() []string { return nil })
			b.SetCurrentKey("a")
			if _, ok := mx.Get(); ok {
				t.Fatal("empty reducing state has a value")
			}
			if _, ok := words.Get(); ok {
				t.Fatal("empty aggregating state has a value")
			}
			for _, v := range []int{3, 9, 2} {
				mx.Add(v)
			}
			words.Add("hello")
			words.Add("world")
			b.SetCurrentKey("b")
			mx.Add(-5)
			words.Add("x")
			b.SetCurrentKey("a")
			if v, ok := mx.Get(); v != 9 || !ok {
				t.Fatalf("max = %d, %v", v, ok)
			}
			if v, _ := words.Get(); v != "hello world" {
				t.Fatalf("words = %q", v)
			}
			b.SetCurrentKey("b")
			if v, _ := mx.Get(); v != -5 {
				t.Fatalf("max(b) = %d", v)
			}
			if v, _ := words.Get(); v != "x" {
				t.Fatalf("words(b) = %q", v)
			}
			mx.Clear()
			words.Clear()
			if _, ok := mx.Get(); ok {
				t.Fatal("cleared")
			}
			if _, ok := words.Get(); ok {
				t.Fatal("cleared")
			}
			if n := b.Len(); n != 2 {
				t.Fatalf("Len = %d, want 2", n)
			}
		})
	}
}

func TestKindMismatch(t *testing.T) {
	b := NewBackend[string]()
	List[int](b, "x")
	b.SetCurrentKey("k")
	List[int](b, "x").Add(1)
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, b2 := range []*Backend[string]{NewBackend[string](), newPebble(t)} {
		Value[int](b2, "x", 0)
		if err := b2.RestoreAll(snap); err == nil {
			t.Fatal("restoring a list into a value state succeeded")
		}
	}
	if err := NewBackend[string]().RestoreAll([]byte("{}")); err == nil {
		t.Fatal("restoring garbage succeeded")
	}
}

// TestPebbleBeyondCache writes far more state than the block cache and the
// memtable hold, and reads it back.
// TestPebbleBeyondCache writes 20 MB of values with a 1 MiB block cache
// and memtable, without a cache of decoded values and with a 1 MiB one:
// random reads return what was written, and the store holds the data on
// disk.
func TestPebbleBeyondCache(t *testing.T) {
	for _, cacheSize := range []int64{-1, 1 << 20} {
		t.Run(fmt.Sprint("state-cache=", cacheSize), func(t *testing.T) { pebbleBeyondCache(t, cacheSize) })
	}
}

func pebbleBeyondCache(t *testing.T, stateCache int64) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	parent := t.TempDir()
	b, err := NewPebbleBackendWithOptions(PebbleOptions[string]{
		Dir: parent, MaxParallelism: testMaxPar, KeyGroup: testKeyGroup,
		CacheSize: 1 << 20, MemTableSize: 1 << 20, StateCacheSize: stateCache,
	})
	if err != nil {
		t.Fatal(err)
	}
	// ~100 bytes of poorly compressible data per key: ~20 MB in all.
	val := func(i int) string {
		var sb strings.Builder
		for j := range 6 {
			fmt.Fprintf(&sb, "%016x", xxhash.Sum64String(fmt.Sprint(i, "/", j)))
		}
		return sb.String()
	}
	v := Value[string](b, "v", "")
	for i := range n {
		b.SetCurrentKey(fmt.Sprint("key-", i))
		v.Update(val(i))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20_000 {
		i := rng.IntN(n)
		b.SetCurrentKey(fmt.Sprint("key-", i))
		if got, ok := v.Value(); !ok || got != val(i) {
			t.Fatalf("key %d: %q %v", i, got, ok)
		}
	}
	if got := b.Len(); got != n {
		t.Fatalf("Len = %d, want %d", got, n)
	}
	m := b.p.db.Metrics()
	t.Logf("%d keys; store on disk %d bytes; block cache 1 MiB, memtable 1 MiB", n, m.DiskSpaceUsage())
	if n == 200_000 && m.DiskSpaceUsage() < 8<<20 {
		t.Errorf("store holds %d bytes on disk, want more than the cache and memtable", m.DiskSpaceUsage())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("Close left %v in %s", ents, parent)
	}
}

func BenchmarkValue(b *testing.B) {
	for _, impl := range []string{"heap", "pebble", "pebble-uncached"} {
		var be *Backend[string]
		switch impl {
		case "heap":
			be = NewBackend[string]()
		case "pebble":
			be = newPebble(b)
		default:
			be = newPebbleCache(b, -1)
		}
		v := Value[int64](be, "v", 0)
		keys := testKeys(10_000)
		for i, k := range keys {
			be.SetCurrentKey(k)
			v.Update(int64(i))
		}
		b.Run(impl+"/get", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				be.SetCurrentKey(keys[i%len(keys)])
				v.Value()
			}
		})
		b.Run(impl+"/update", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				be.SetCurrentKey(keys[i%len(keys)])
				x, _ := v.Value()
				v.Update(x + 1)
			}
		})
	}
}

// TestHeapListUpdateCopiesOnlyForeignLists: Update keeps a list that Get
// returned and the caller changed in place, copies any other (so that the
// caller's later changes do not reach the state), and does not keep a
// scratch buffer's capacity for every key.
func TestHeapListUpdateCopiesOnlyForeignLists(t *testing.T) {
	b := NewBackend[string]()
	l := List[int](b, "l")
	b.SetCurrentKey("a")
	mine := make([]int, 0, 10)
	mine = append(mine, 1, 2)
	l.Update(mine)
	mine[0] = 99
	if got := l.Get(); got[0] != 1 || cap(got) != 10 {
		t.Fatalf("after Update of the caller's list: %v (cap %d), want a copy [1 2] with its capacity 10", got, cap(got))
	}
	got := l.Get()
	got = append(got, 3) // in place: room for it
	got[0] = 7
	l.Update(got)
	if again := l.Get(); &again[0] != &got[0] || len(again) != 3 || again[0] != 7 {
		t.Fatalf("an in-place change was copied or lost: %v", again)
	}
	scratch := make([]int, 1, 1<<16)
	b.SetCurrentKey("b")
	l.Update(scratch)
	if c := cap(l.Get()); c > 16 {
		t.Fatalf("the state keeps a scratch buffer's capacity %d for one element", c)
	}
}

// TestL0CompactionThreshold: the store takes the threshold it is given,
// and DefaultL0CompactionThreshold without one; writes stop well past it.
func TestL0CompactionThreshold(t *testing.T) {
	for _, c := range []struct{ set, want int }{{0, DefaultL0CompactionThreshold}, {7, 7}} {
		b, err := NewPebbleBackendWithOptions(PebbleOptions[string]{Dir: t.TempDir(), MaxParallelism: testMaxPar, KeyGroup: testKeyGroup, L0CompactionThreshold: c.set})
		if err != nil {
			t.Fatal(err)
		}
		o := b.p.opts
		if o.L0CompactionThreshold != c.want || o.L0StopWritesThreshold != 4*c.want {
			t.Errorf("threshold %d: the store compacts level 0 at %d sublevels and stops writes at %d, want %d and %d",
				c.set, o.L0CompactionThreshold, o.L0StopWritesThreshold, c.want, 4*c.want)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
