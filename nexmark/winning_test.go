package nexmark_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

func TestQ8(t *testing.T) {
	size := nexmark.Q8Size.Milliseconds()
	var want []nexmark.Q8Result
	for _, p := range slowEvents {
		if p.Kind != nexmark.PersonKind {
			continue
		}
		start := p.Person.DateTime / size * size
		for _, a := range slowEvents {
			if a.Kind == nexmark.AuctionKind && a.Auction.Seller == p.Person.ID && a.Auction.DateTime/size*size == start {
				want = append(want, nexmark.Q8Result{ID: p.Person.ID, Name: p.Person.Name, WindowStart: start})
				break
			}
		}
	}
	check(t, slowConfig, nexmark.Q8, want, 10)
	var loop []nexmark.Q8Result
	nexmark.LoopQ8(nexmark.Slice(slowEvents), func(r nexmark.Q8Result) { loop = append(loop, r) })
	same(t, loop, want)
}

// bruteQ9 finds every auction's winner among all bids, in closing order.
func bruteQ9(events []nexmark.Event) []nexmark.Q9Result {
	var out []nexmark.Q9Result
	for _, ae := range events {
		a := ae.Auction
		if a == nil {
			continue
		}
		var best *nexmark.Bid
		for _, be := range events {
			b := be.Bid
			if b == nil || b.Auction != a.ID || b.DateTime < a.DateTime || b.DateTime > a.Expires {
				continue
			}
			if best == nil || b.Price > best.Price || b.Price == best.Price && b.DateTime < best.DateTime ||
				b.Price == best.Price && b.DateTime == best.DateTime && b.Bidder < best.Bidder {
				best = b
			}
		}
		if best != nil {
			out = append(out, nexmark.Q9Result{Auction: *a, Bid: *best})
		}
	}
	slices.SortFunc(out, func(x, y nexmark.Q9Result) int {
		if x.Auction.Expires != y.Auction.Expires {
			return int(x.Auction.Expires - y.Auction.Expires)
		}
		return int(x.Auction.ID - y.Auction.ID)
	})
	return out
}

var slowWinners = bruteQ9(slowEvents)

func TestQ9(t *testing.T) {
	want := slowWinners
	check(t, slowConfig, nexmark.Q9, want, 100)
	var loop []nexmark.Q9Result
	nexmark.LoopQ9(nexmark.Slice(slowEvents), func(r nexmark.Q9Result) { loop = append(loop, r) })
	same(t, loop, want)
	if !slices.IsSortedFunc(loop, func(x, y nexmark.Q9Result) int { return int(x.Auction.Expires - y.Auction.Expires) }) {
		t.Error("the loop emits winners out of expiry order")
	}
}

func TestQ4(t *testing.T) {
	// Every update recomputes its category's average from scratch.
	var want []nexmark.Q4Result
	for i, r := range slowWinners {
		var sum, n int64
		for _, s := range slowWinners[:i+1] {
			if s.Auction.Category == r.Auction.Category {
				sum += s.Bid.Price
				n++
			}
		}
		want = append(want, nexmark.Q4Result{Category: r.Auction.Category, Average: sum / n, Count: n})
	}
	check(t, slowConfig, nexmark.Q4, want, 100)
	var loop []nexmark.Q4Result
	nexmark.LoopQ4(nexmark.Slice(slowEvents), func(r nexmark.Q4Result) { loop = append(loop, r) })
	same(t, loop, want)
}

func TestQ6(t *testing.T) {
	// Every update looks back for the seller's last 10 closed auctions.
	var want []nexmark.Q6Result
	full := 0
	for i, r := range slowWinners {
		var sum, n int64
		for j := i; j >= 0 && n < nexmark.Q6Auctions; j-- {
			if s := slowWinners[j]; s.Auction.Seller == r.Auction.Seller {
				sum += s.Bid.Price
				n++
			}
		}
		if n == nexmark.Q6Auctions {
			full++
		}
		want = append(want, nexmark.Q6Result{Seller: r.Auction.Seller, Average: sum / n, Count: n})
	}
	if full == 0 {
		t.Fatal("no seller closes 10 auctions: the window of 10 is not tested")
	}
	t.Logf("%d updates over a full window of 10", full)
	check(t, slowConfig, nexmark.Q6, want, 100)
	var loop []nexmark.Q6Result
	nexmark.LoopQ6(nexmark.Slice(slowEvents), func(r nexmark.Q6Result) { loop = append(loop, r) })
	same(t, loop, want)
}

// TestQ9BidBeforeAuction moves a bid on each auction, at the auction's
// time, before the auction: it must wait for it, and count.
func TestQ9BidBeforeAuction(t *testing.T) {
	var in []nexmark.Event
	moved := 0
	for i := 0; i < len(events); i++ {
		e := events[i]
		if e.Auction != nil {
			for j := i + 1; j < min(i+50, len(events)); j++ {
				if b := events[j].Bid; b != nil && b.Auction == e.Auction.ID {
					early := *b
					early.DateTime = e.Auction.DateTime
					early.Price = 1_000_000_000 // the winner
					in = append(in, nexmark.Event{Kind: nexmark.BidKind, Bid: &early})
					moved++
					break
				}
			}
		}
		in = append(in, e)
	}
	want := bruteQ9(in)
	wins := 0
	for _, r := range want {
		if r.Bid.Price == 1_000_000_000 {
			wins++
		}
	}
	if wins != moved || moved < 100 {
		t.Fatalf("%d bids moved, %d of them win", moved, wins)
	}
	var loop []nexmark.Q9Result
	nexmark.LoopQ9(nexmark.Slice(in), func(r nexmark.Q9Result) { loop = append(loop, r) })
	same(t, loop, want)
	for _, p := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			cfg := config.New()
			config.Parallelism.Set(cfg, p)
			env := stream.NewEnvironmentWithConfig(cfg)
			got := stream.Collect(nexmark.Q9(nexmark.EventsOf(env, in)))
			if err := env.Execute(t.Context(), "q9-early-bids"); err != nil {
				t.Fatal(err)
			}
			same(t, got.Values(), want)
		})
	}
}

// TestQ9DefaultRate runs Q9 over the events at the default rate (10 a
// millisecond, auctions of up to a third of a second).
func TestQ9DefaultRate(t *testing.T) {
	want := bruteQ9(events)
	check(t, testConfig, nexmark.Q9, want, 100)
	var loop []nexmark.Q9Result
	nexmark.LoopQ9(nexmark.Slice(events), func(r nexmark.Q9Result) { loop = append(loop, r) })
	same(t, loop, want)
}
