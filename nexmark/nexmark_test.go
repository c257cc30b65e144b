package nexmark_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

const testEvents = 20_000

var testConfig = nexmark.DefaultConfig()

// events are the test input, generated once.
var events = nexmark.Generate(testConfig, testEvents)

// slowConfig spreads the test events over 100 s of event time, for the
// windowed queries.
var slowConfig = func() nexmark.Config {
	c := nexmark.DefaultConfig()
	c.FirstEventRate = 200
	return c
}()

var slowEvents = nexmark.Generate(slowConfig, testEvents)

func TestGeneratorDeterministic(t *testing.T) {
	other := testConfig
	other.Seed = 2
	differ := 0
	for _, i := range []int64{0, 1, 2, 3, 4, 5, 49, 50, 51, 12345} {
		a, b := testConfig.Event(i), testConfig.Event(i)
		if fmt.Sprintf("%+v %+v %+v", a.Person, a.Auction, a.Bid) != fmt.Sprintf("%+v %+v %+v", b.Person, b.Auction, b.Bid) {
			t.Errorf("event %d differs between two calls", i)
		}
		c := other.Event(i)
		if fmt.Sprintf("%+v %+v %+v", a.Person, a.Auction, a.Bid) != fmt.Sprintf("%+v %+v %+v", c.Person, c.Auction, c.Bid) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("seeds 1 and 2 generate the same events")
	}
}

func TestGeneratorShape(t *testing.T) {
	var kinds [3]int
	var size [3]int
	for i, e := range events {
		kinds[e.Kind]++
		if want := testConfig.KindOf(int64(i)); e.Kind != want {
			t.Fatalf("event %d is a %v, want %v", i, e.Kind, want)
		}
		if ts := e.Timestamp(); ts != testConfig.BaseTime+int64(i)/10 {
			t.Fatalf("event %d at %d, want %d (10,000 events/s)", i, ts, testConfig.BaseTime+int64(i)/10)
		}
		switch e.Kind {
		case nexmark.PersonKind:
			p := e.Person
			size[0] += 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State) + len(p.Extra)
			if want := int64(i/50) + nexmark.FirstPersonID; p.ID != want {
				t.Fatalf("person %d has ID %d, want %d", i, p.ID, want)
			}
		case nexmark.AuctionKind:
			a := e.Auction
			size[1] += 8 + len(a.ItemName) + len(a.Description) + 40 + len(a.Extra)
			if a.Category < 10 || a.Category > 14 || a.Expires <= a.DateTime || a.Reserve < a.InitialBid {
				t.Fatalf("auction %d: %+v", i, a)
			}
		case nexmark.BidKind:
			b := e.Bid
			size[2] += 32 + len(b.Extra)
			if b.Auction < nexmark.FirstAuctionID || b.Bidder < nexmark.FirstPersonID || b.Price <= 0 || b.Channel == "" || b.URL == "" {
				t.Fatalf("bid %d: %+v", i, b)
			}
		}
	}
	if kinds != [3]int{testEvents / 50, testEvents * 3 / 50, testEvents * 46 / 50} {
		t.Errorf("persons, auctions, bids = %v, want 1:3:46", kinds)
	}
	for k, want := range []int{200, 500, 100} {
		if avg := size[k] / kinds[k]; avg < want*9/10 || avg > want*11/10 {
			t.Errorf("%v: average size %d bytes, want about %d", nexmark.Kind(k), avg, want)
		}
	}
}

// run executes a query over the test events at parallelism p and returns
// its results.
func run[R any](t *testing.T, c nexmark.Config, p int, q func(*stream.Stream[nexmark.Event]) *stream.Stream[R]) []R {
	t.Helper()
	cfg := config.New()
	config.Parallelism.Set(cfg, p)
	env := stream.NewEnvironmentWithConfig(cfg)
	got := stream.Collect(q(nexmark.Events(env, c, testEvents)))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "nexmark-test"); err != nil {
		t.Fatal(err)
	}
	return got.Values()
}

// same compares results as multisets.
func same[R any](t *testing.T, got, want []R) {
	t.Helper()
	str := func(rs []R) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = fmt.Sprintf("%+v", r)
		}
		slices.Sort(out)
		return out
	}
	g, w := str(got), str(want)
	if len(g) != len(w) {
		t.Fatalf("%d results, want %d", len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("results differ: got %s\nwant %s", g[i], w[i])
		}
	}
}

func check[R any](t *testing.T, c nexmark.Config, q func(*stream.Stream[nexmark.Event]) *stream.Stream[R], want []R, minResults int) {
	if len(want) < minResults {
		t.Fatalf("the brute force finds %d results; the test wants at least %d", len(want), minResults)
	}
	t.Logf("%d results", len(want))
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			same(t, run(t, c, p, q), want)
		})
	}
}

func TestQ0(t *testing.T) {
	var want []nexmark.Bid
	for _, e := range events {
		if e.Kind == nexmark.BidKind {
			want = append(want, *e.Bid)
		}
	}
	check(t, testConfig, nexmark.Q0, want, testEvents*46/50)
}

func TestQ1(t *testing.T) {
	var want []nexmark.Q1Result
	for _, e := range events {
		if b := e.Bid; b != nil {
			want = append(want, nexmark.Q1Result{Auction: b.Auction, Bidder: b.Bidder, Price: float64(b.Price) * 0.908, DateTime: b.DateTime, Extra: b.Extra})
		}
	}
	check(t, testConfig, nexmark.Q1, want, testEvents*46/50)
}

func TestQ2(t *testing.T) {
	var want []nexmark.Q2Result
	for _, e := range events {
		if b := e.Bid; b != nil && b.Auction%123 == 0 {
			want = append(want, nexmark.Q2Result{Auction: b.Auction, Price: b.Price})
		}
	}
	check(t, testConfig, nexmark.Q2, want, 10)
}

func TestQ3(t *testing.T) {
	// The join by nested loops over the whole input.
	var want []nexmark.Q3Result
	for _, a := range events {
		if a.Kind != nexmark.AuctionKind || a.Auction.Category != 10 {
			continue
		}
		for _, p := range events {
			if p.Kind == nexmark.PersonKind && p.Person.ID == a.Auction.Seller &&
				(p.Person.State == "OR" || p.Person.State == "ID" || p.Person.State == "CA") {
				want = append(want, nexmark.Q3Result{Name: p.Person.Name, City: p.Person.City, State: p.Person.State, ID: a.Auction.ID})
			}
		}
	}
	check(t, testConfig, nexmark.Q3, want, 10)
	var loop []nexmark.Q3Result
	nexmark.LoopQ3(nexmark.Slice(events), func(r nexmark.Q3Result) { loop = append(loop, r) })
	same(t, loop, want)
}

// bruteQ5 recomputes every window from scratch.
func bruteQ5() []nexmark.AuctionCount {
	size, slide := nexmark.Q5Size.Milliseconds(), nexmark.Q5Slide.Milliseconds()
	var bids []nexmark.Bid
	for _, e := range slowEvents {
		if e.Bid != nil {
			bids = append(bids, *e.Bid)
		}
	}
	first := bids[0].DateTime/slide*slide - size
	last := bids[len(bids)-1].DateTime
	var out []nexmark.AuctionCount
	for s := first; s <= last; s += slide {
		counts := map[int64]int64{}
		for _, b := range bids {
			if b.DateTime >= s && b.DateTime < s+size {
				counts[b.Auction]++
			}
		}
		var most int64
		for _, n := range counts {
			most = max(most, n)
		}
		for a, n := range counts {
			if n == most {
				out = append(out, nexmark.AuctionCount{Auction: a, Count: n, WindowStart: s, WindowEnd: s + size})
			}
		}
	}
	return out
}

func TestQ5(t *testing.T) {
	want := bruteQ5()
	check(t, slowConfig, nexmark.Q5, want, 40)
	var loop []nexmark.AuctionCount
	nexmark.LoopQ5(nexmark.Slice(slowEvents), func(r nexmark.AuctionCount) { loop = append(loop, r) })
	same(t, loop, want)
}

func TestQ7(t *testing.T) {
	size := nexmark.Q7Size.Milliseconds()
	maxPrice := map[int64]int64{}
	for _, e := range slowEvents {
		if b := e.Bid; b != nil {
			end := b.DateTime/size*size + size
			maxPrice[end] = max(maxPrice[end], b.Price)
		}
	}
	var want []nexmark.Q7Result
	for _, e := range slowEvents {
		if b := e.Bid; b != nil {
			end := b.DateTime/size*size + size
			if b.Price == maxPrice[end] {
				want = append(want, nexmark.Q7Result{WindowEnd: end, Bid: *b})
			}
		}
	}
	check(t, slowConfig, nexmark.Q7, want, 10)
	var loop []nexmark.Q7Result
	nexmark.LoopQ7(nexmark.Slice(slowEvents), func(r nexmark.Q7Result) { loop = append(loop, r) })
	same(t, loop, want)
}

// TestLoopsMatchBruteForce checks the loops that the benchmark compares the
// engine with on the simple queries.
func TestLoopsMatchBruteForce(t *testing.T) {
	for name, q := range nexmark.Queries {
		if n := q.Loop(nexmark.Slice(events)); n == 0 {
			t.Errorf("%s: the loop finds no results", name)
		}
	}
	var n0, n2 int64
	for _, e := range events {
		if e.Bid != nil {
			n0++
			if e.Bid.Auction%123 == 0 {
				n2++
			}
		}
	}
	if got := nexmark.Queries["q0"].Loop(nexmark.Slice(events)); got != n0 {
		t.Errorf("q0 loop: %d results, want %d", got, n0)
	}
	if got := nexmark.Queries["q2"].Loop(nexmark.Slice(events)); got != n2 {
		t.Errorf("q2 loop: %d results, want %d", got, n2)
	}
}

// TestEngineDigestsEqualLoops checks what the benchmark checks on every
// run: engine and loop produce the same results (count and an
// order-independent hash of their contents), here at parallelism 2.
func TestEngineDigestsEqualLoops(t *testing.T) {
	for _, name := range nexmark.QueryNames() {
		q := nexmark.Queries[name]
		env := stream.NewEnvironmentWithConfig(config.New()).SetParallelism(2)
		digest := q.AttachDigest(nexmark.Events(env, testConfig, testEvents))
		if err := env.Execute(t.Context(), "nexmark-"+name); err != nil {
			t.Fatal(name, err)
		}
		if q.WallClock {
			continue // the windows depend on the clock (TestQ12)
		}
		got, want := digest(), q.LoopDigest(testConfig.All(testEvents))
		if got != want {
			t.Errorf("%s: the engine's results are %v, the loop's %v", name, got, want)
		}
		if got.Count != q.Loop(testConfig.All(testEvents)) {
			t.Errorf("%s: the loop digest counts %d results, the loop %d", name, got.Count, q.Loop(testConfig.All(testEvents)))
		}
	}
}

// TestWaitingQueriesOnPebbleEqualLoops runs the queries whose records wait
// for the watermark in time maps (Q18, Q19) on Pebble with a cache far
// smaller than their state, so that waiting entries are evicted, read
// ahead, dropped by range and restored from the store, and compares the
// results with the loops'.
func TestWaitingQueriesOnPebbleEqualLoops(t *testing.T) {
	for _, name := range []string{"q18", "q19"} {
		q := nexmark.Queries[name]
		cfg := config.New()
		config.StateBackend.Set(cfg, config.StateBackendPebble)
		config.PebbleStateCacheSize.Set(cfg, 64<<10)
		env := stream.NewEnvironmentWithConfig(cfg).SetParallelism(2)
		digest := q.AttachDigest(nexmark.Events(env, testConfig, testEvents))
		if err := env.Execute(t.Context(), "nexmark-pebble-"+name); err != nil {
			t.Fatal(name, err)
		}
		if got, want := digest(), q.LoopDigest(testConfig.All(testEvents)); got != want {
			t.Errorf("%s on Pebble: the engine's results are %v, the loop's %v", name, got, want)
		}
	}
}
