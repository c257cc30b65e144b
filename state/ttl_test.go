package state

import (
	"testing"
	"time"
)

func TestValueWithTTL(t *testing.T) {
	now := int64(1000)
	for _, mk := range []func(t *testing.T) *Backend[string]{
		func(*testing.T) *Backend[string] { return NewBackend[string]() },
		func(t *testing.T) *Backend[string] {
			b, err := NewPebbleBackend[string](t.TempDir(), 128, func(string) int { return 0 })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		},
	} {
		b := mk(t)
		s := ValueWithTTL[int](b, "v", -1, TTL{TTL: time.Second, Now: func() int64 { return now }})
		b.SetCurrentKey("a")
		s.Update(7)
		now += 999
		if v, ok := s.Value(); !ok || v != 7 {
			t.Fatalf("before expiry: %d %v", v, ok)
		}
		s.Update(8) // writing renews
		now += 999
		if v, ok := s.Value(); !ok || v != 8 {
			t.Fatalf("after renewal: %d %v", v, ok)
		}
		now += 1
		if v, ok := s.Value(); ok || v != -1 {
			t.Fatalf("after expiry: %d %v", v, ok)
		}
		if n := b.Len(); n != 0 {
			t.Fatalf("an expired value was read but not removed: %d keys", n)
		}
	}
}
