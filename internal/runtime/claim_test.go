package runtime

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestClaimGivesEveryCheckpointDirectoryOneOwner: attempts of a job share
// its directory, and a zombie of an earlier attempt may still be taking
// checkpoints; each chk-<n> must belong to exactly one of them.
func TestClaimGivesEveryCheckpointDirectoryOneOwner(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first, err := newCheckpointStorage(dir, "job")
	if err != nil {
		t.Fatal(err)
	}
	second, err := newCheckpointStorage(dir, "job")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := first.claim(ctx, 1, "first"); err != nil || n != 1 {
		t.Fatalf("first claim = %d, %v; want 1", n, err)
	}
	// The second attempt restored checkpoint 0 and starts at 1 too.
	if n, err := second.claim(ctx, 1, "second"); err != nil || n != 2 {
		t.Fatalf("second claim = %d, %v; want 2 (1 is taken)", n, err)
	}
	if n, err := first.claim(ctx, 2, "first"); err != nil || n != 3 {
		t.Fatalf("first's next claim = %d, %v; want 3", n, err)
	}
	owner, err := os.ReadFile(filepath.Join(dir, "job", "chk-2", "_claim"))
	if err != nil || string(owner) != "second\n" {
		t.Fatalf("chk-2/_claim = %q, %v; want the second attempt's", owner, err)
	}

	// Racing claimants, as processes would be: every number once.
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for range 8 {
		s, err := newCheckpointStorage(dir, "race")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				n, err := s.claim(ctx, 1, "racer")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(got)
	for i, n := range got {
		if n != int64(i+1) {
			t.Fatalf("claims %v: want 1 to 80, each once", got)
		}
	}
}

func TestClaimInMemoryTakesTheNumberAsItIs(t *testing.T) {
	s, err := newCheckpointStorage("", "job")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.claim(context.Background(), 7, "x"); err != nil || n != 7 {
		t.Fatalf("claim = %d, %v; want 7", n, err)
	}
}
