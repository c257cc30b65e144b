package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// ttlHandles are the TTL states of one backend.
type ttlHandles struct {
	b   *Backend[string]
	val ValueState[string]
	lst ListState[string]
	mp  MapState[string, string]
}

func registerTTL(b *Backend[string], ttl TTL) *ttlHandles {
	return &ttlHandles{
		b:   b,
		val: ValueWithTTL[string](b, "tval", "none", ttl),
		lst: ListWithTTL[string](b, "tlist", ttl),
		mp:  MapWithTTL[string, string](b, "tmap", ttl),
	}
}

// timed is a model value with its expiry.
type timed struct {
	v   string
	exp int64
}

// ttlModel is what the TTL states must read: per key a value, a list of
// elements and a map, each with its expiry. It keeps expired data, and
// reads leave it out, so that it does not depend on when the backends
// clean up.
type ttlModel struct {
	ttl  int64
	renw bool // OnReadAndWrite
	val  map[string]timed
	lst  map[string][]timed
	mp   map[string]map[string]timed
}

func (m *ttlModel) live(now int64, e timed) bool { return now < e.exp }

// liveKeys is Backend.Len once every expired entry is gone.
func (m *ttlModel) liveKeys(now int64) int {
	n := 0
	for _, e := range m.val {
		if m.live(now, e) {
			n++
		}
	}
	for _, es := range m.lst {
		if slices.ContainsFunc(es, func(e timed) bool { return m.live(now, e) }) {
			n++
		}
	}
	for _, mm := range m.mp {
		for _, e := range mm {
			if m.live(now, e) {
				n++
				break
			}
		}
	}
	return n
}

// ttlStep applies one random operation to h and the model at time *now
// (which it may advance) and fails if h reads what the model does not.
func ttlStep(t *testing.T, rng *rand.Rand, now *int64, keys []string, h *ttlHandles, m *ttlModel) {
	t.Helper()
	if rng.IntN(60) == 0 {
		*now += m.ttl / 2 * int64(1+rng.IntN(3)) // expires much at once
	} else {
		*now += int64(rng.IntN(4))
	}
	k := keys[rng.IntN(len(keys))]
	x := fmt.Sprint("x", rng.IntN(1000))
	mk := fmt.Sprint("m", rng.IntN(6))
	exp := *now + m.ttl
	h.b.SetCurrentKey(k)
	mm := m.mp[k]
	if mm == nil {
		mm = make(map[string]timed)
		m.mp[k] = mm
	}
	var got, want string
	op := rng.IntN(14)
	switch op {
	case 0:
		v, ok := h.val.Value()
		got = fmt.Sprint(v, ok)
		e, ok := m.val[k]
		if ok && m.live(*now, e) {
			want = fmt.Sprint(e.v, true)
			if m.renw {
				m.val[k] = timed{e.v, exp}
			}
		} else {
			want = fmt.Sprint("none", false)
		}
	case 1:
		h.val.Update(x)
		m.val[k] = timed{x, exp}
	case 2:
		h.val.Clear()
		delete(m.val, k)
	case 3:
		got = fmt.Sprintf("%q", h.lst.Get())
		var live []string
		var kept []timed
		for _, e := range m.lst[k] {
			if m.live(*now, e) {
				live = append(live, e.v)
				if m.renw {
					e.exp = exp
				}
				kept = append(kept, e)
			}
		}
		m.lst[k] = kept
		want = fmt.Sprintf("%q", live)
	case 4:
		h.lst.Add(x)
		m.lst[k] = append(m.lst[k], timed{x, exp})
	case 5:
		vs := make([]string, rng.IntN(4))
		m.lst[k] = nil
		for i := range vs {
			vs[i] = fmt.Sprint(x, "-", i)
			m.lst[k] = append(m.lst[k], timed{vs[i], exp})
		}
		h.lst.Update(vs)
	case 6:
		h.lst.Clear()
		delete(m.lst, k)
	case 7, 8:
		if op == 7 {
			v, ok := h.mp.Get(mk)
			got = fmt.Sprint(v, ok)
		} else {
			got = fmt.Sprint(h.mp.Contains(mk))
		}
		e, ok := mm[mk]
		ok = ok && m.live(*now, e)
		if !ok {
			e.v = ""
		} else if m.renw {
			mm[mk] = timed{e.v, exp}
		}
		if op == 7 {
			want = fmt.Sprint(e.v, ok)
		} else {
			want = fmt.Sprint(ok)
		}
	case 9:
		h.mp.Put(mk, x)
		mm[mk] = timed{x, exp}
	case 10:
		h.mp.Remove(mk)
		delete(mm, mk)
	case 11:
		all := h.mp.All()
		live := map[string]string{}
		for mk, e := range mm {
			if m.live(*now, e) {
				live[mk] = e.v
				if m.renw {
					mm[mk] = timed{e.v, exp}
				}
			}
		}
		if len(live) == 0 {
			live = nil
		}
		got, want = fmt.Sprint(all), fmt.Sprint(live)
		if (all == nil) != (live == nil) {
			got += fmt.Sprintf(" (nil %v)", all == nil)
		}
	case 12:
		// Range stops early; the model renews exactly what it passed on.
		limit := 1 + rng.IntN(3)
		seen := map[string]string{}
		h.mp.Range(func(mk, v string) bool {
			seen[mk] = v
			return len(seen) < limit
		})
		live := 0
		for mk, e := range mm {
			if m.live(*now, e) {
				live++
				if v, ok := seen[mk]; ok {
					if v != e.v {
						t.Fatalf("key %s: Range passed %s=%s, want %s", k, mk, v, e.v)
					}
					if m.renw {
						mm[mk] = timed{e.v, exp}
					}
				}
			}
		}
		for mk := range seen {
			if e, ok := mm[mk]; !ok || !m.live(*now, e) {
				t.Fatalf("key %s: Range passed %s, which is gone", k, mk)
			}
		}
		got, want = fmt.Sprint(len(seen)), fmt.Sprint(min(limit, live))
	case 13:
		h.mp.Clear()
		delete(m.mp, k)
	}
	if got != want {
		t.Fatalf("at %d, key %s, op %d: read %s, want %s", *now, k, op, got, want)
	}
}

// TestTTLStatesAgainstModel runs random operations on the TTL states
// under a manual clock and compares every read with the model, moving the
// state between backends by every kind of snapshot midway.
func TestTTLStatesAgainstModel(t *testing.T) {
	// Each phase runs on a backend restored from the previous phase's
	// snapshot: heap→pebble (full), pebble→pebble (incremental, adopting
	// the files), pebble→heap (incremental), heap→heap, heap→pebble,
	// pebble→heap (full).
	phases := []struct{ pebble, incremental bool }{
		{false, false}, {true, true}, {true, true}, {false, false},
		{false, false}, {true, false}, {false, false},
	}
	for _, upd := range []TTLUpdate{OnCreateAndWrite, OnReadAndWrite} {
		t.Run(fmt.Sprint("update=", upd), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(upd)))
			now := int64(1_000_000)
			ttl := TTL{TTL: 100 * time.Millisecond, Now: func() int64 { return now }, Update: upd}
			m := &ttlModel{ttl: 100, renw: upd == OnReadAndWrite,
				val: map[string]timed{}, lst: map[string][]timed{}, mp: map[string]map[string]timed{}}
			keys := testKeys(8)
			files := &dirFiles{dir: t.TempDir(), job: "j"}
			newB := func(pebble bool) *Backend[string] {
				if pebble {
					return newPebble(t)
				}
				return NewBackend[string]()
			}
			h := registerTTL(newB(phases[0].pebble), ttl)
			for i, ph := range phases {
				for range 500 {
					ttlStep(t, rng, &now, keys, h, m)
				}
				if i == len(phases)-1 {
					break
				}
				var snap []byte
				if ph.incremental {
					snap = snapshotInc(t, h.b, files)
				} else {
					var err error
					if snap, err = h.b.Snapshot(); err != nil {
						t.Fatal(err)
					}
				}
				want := m.liveKeys(now)
				if got := h.b.Len(); got != want {
					t.Fatalf("phase %d: after the snapshot %d keys have state, want %d (expired entries stayed)", i, got, want)
				}
				b := newB(phases[i+1].pebble)
				b.SetRestoreFiles(files)
				if err := b.RestoreAll(snap); err != nil {
					t.Fatalf("phase %d: %v", i, err)
				}
				h = registerTTL(b, ttl)
				if got := h.b.Len(); got != want {
					t.Fatalf("phase %d: restored %d keys with state, want %d", i, got, want)
				}
			}
		})
	}
}

// TestTTLCleanup checks that expired list elements and map entries leave
// the store: on reads, and for every key when a snapshot is taken, so that
// a key whose entries all expired no longer counts in Len.
func TestTTLCleanup(t *testing.T) {
	for _, c := range []struct {
		name        string
		pebble, inc bool
	}{{"heap", false, false}, {"pebble", true, false}, {"pebble-incremental", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			now := int64(0)
			ttl := TTL{TTL: 100 * time.Millisecond, Now: func() int64 { return now }}
			b := NewBackend[string]()
			if c.pebble {
				b = newPebble(t)
			}
			lst := ListWithTTL[string](b, "l", ttl)
			mp := MapWithTTL[string, string](b, "m", ttl)
			for _, k := range []string{"a", "b", "c"} {
				b.SetCurrentKey(k)
				lst.Add("old")
				if k != "c" {
					mp.Put("old", "v")
				}
			}
			now = 50
			b.SetCurrentKey("b")
			lst.Add("new")
			mp.Put("new", "v")
			now = 100 // everything written at 0 expired
			if n := b.Len(); n != 5 {
				t.Fatalf("Len before any cleanup = %d, want 5", n)
			}
			b.SetCurrentKey("c")
			if vs := lst.Get(); vs != nil {
				t.Fatalf("expired list reads %q", vs)
			}
			if n := b.Len(); n != 4 {
				t.Fatalf("Len after reading the expired list = %d, want 4", n)
			}
			b.SetCurrentKey("a")
			if mp.Contains("old") {
				t.Fatal("expired map entry is there")
			}
			if n := b.Len(); n != 3 {
				t.Fatalf("Len after reading the expired map entry = %d, want 3", n)
			}

			files := &dirFiles{dir: t.TempDir(), job: "j"}
			var snap []byte
			if c.inc {
				snap = snapshotInc(t, b, files)
			} else {
				var err error
				if snap, err = b.Snapshot(); err != nil {
					t.Fatal(err)
				}
			}
			if n := b.Len(); n != 2 {
				t.Fatalf("Len after the snapshot = %d, want 2 (key b in both states)", n)
			}
			// What is stored for b has lost its expired parts too, and so
			// has what the snapshot restores.
			restored := NewBackend[string]()
			restored.SetRestoreFiles(files)
			if err := restored.RestoreAll(snap); err != nil {
				t.Fatal(err)
			}
			for _, x := range []*Backend[string]{b, restored} {
				rawL, rawM := List[Expiring[string]](x, "l"), Map[string, Expiring[string]](x, "m")
				x.SetCurrentKey("b")
				if got := fmt.Sprint(rawL.Get(), rawM.All()); got != "[{new 150}] map[new:{v 150}]" {
					t.Fatalf("stored for b: %s", got)
				}
				if n := x.Len(); n != 2 {
					t.Fatalf("Len = %d, want 2", n)
				}
			}
		})
	}
}

// TestTTLHeapAddDropsExpired checks that appending to a heap list whose
// oldest element expired drops the expired elements, so that a list only
// ever appended to (never read) stays bounded between snapshots.
func TestTTLHeapAddDropsExpired(t *testing.T) {
	now := int64(0)
	b := NewBackend[string]()
	lst := ListWithTTL[int](b, "l", TTL{TTL: 10 * time.Millisecond, Now: func() int64 { return now }})
	raw := List[Expiring[int]](b, "l")
	b.SetCurrentKey("k")
	longest := 0
	for i := range 1000 {
		lst.Add(i)
		longest = max(longest, len(raw.Get()))
		now++
	}
	if longest > 11 {
		t.Fatalf("appending one element per ms with a TTL of 10ms, the list grew to %d elements", longest)
	}
	if got, want := lst.Get(), []int{991, 992, 993, 994, 995, 996, 997, 998, 999}; !slices.Equal(got, want) {
		t.Fatalf("Get = %v, want %v", got, want)
	}
}

// TestTTLReadRenews checks the update types on every TTL state of both
// backends: a read renews with OnReadAndWrite only.
func TestTTLReadRenews(t *testing.T) {
	for _, pebble := range []bool{false, true} {
		for _, upd := range []TTLUpdate{OnCreateAndWrite, OnReadAndWrite} {
			now := int64(0)
			b := NewBackend[string]()
			if pebble {
				b = newPebble(t)
			}
			h := registerTTL(b, TTL{TTL: 100 * time.Millisecond, Now: func() int64 { return now }, Update: upd})
			b.SetCurrentKey("k")
			h.val.Update("v")
			h.lst.Add("e")
			h.mp.Put("a", "1")
			h.mp.Put("b", "2")
			now = 99
			read := func() string {
				v, _ := h.val.Value()
				return fmt.Sprintf("%s %v %v", v, h.lst.Get(), h.mp.All())
			}
			if got := read(); got != "v [e] map[a:1 b:2]" {
				t.Fatalf("pebble=%v %v: before expiry: %s", pebble, upd, got)
			}
			now = 150
			want := "none [] map[]"
			if upd == OnReadAndWrite {
				want = "v [e] map[a:1 b:2]"
			}
			if got := read(); got != want {
				t.Fatalf("pebble=%v %v: after the first write's expiry: %s, want %s", pebble, upd, got, want)
			}
		}
	}
}

func TestTTLConfigChecked(t *testing.T) {
	for _, ttl := range []TTL{
		{TTL: time.Second},
		{TTL: time.Microsecond, Now: func() int64 { return 0 }},
		{TTL: time.Second, Now: func() int64 { return 0 }, Update: 7},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v accepted", ttl)
				}
			}()
			ListWithTTL[int](NewBackend[string](), "l", ttl)
		}()
	}
}
