package nexmark

import (
	"container/heap"
	"iter"
)

// LoopQ8 joins, per tumbling window (events come in time order, so one
// window at a time), the people who registered with the sellers of the
// auctions created in it.
func LoopQ8(events iter.Seq[Event], emit func(Q8Result)) {
	size := Q8Size.Milliseconds()
	current := int64(-1 << 62)
	persons := make(map[int64]string) // ID → name, in the current window
	sellers := make(map[int64]bool)   // sellers of the current window
	emitted := make(map[int64]bool)
	for e := range events {
		if e.Kind == BidKind {
			continue
		}
		if s := floorDiv(e.Timestamp(), size) * size; s != current {
			clear(persons)
			clear(sellers)
			clear(emitted)
			current = s
		}
		switch e.Kind {
		case PersonKind:
			p := e.Person
			persons[p.ID] = p.Name
			if sellers[p.ID] && !emitted[p.ID] {
				emitted[p.ID] = true
				emit(Q8Result{ID: p.ID, Name: p.Name, WindowStart: current})
			}
		case AuctionKind:
			s := e.Auction.Seller
			sellers[s] = true
			if name, ok := persons[s]; ok && !emitted[s] {
				emitted[s] = true
				emit(Q8Result{ID: s, Name: name, WindowStart: current})
			}
		}
	}
}

type openAuction struct {
	a    Auction
	best Bid
	has  bool
}

// expiryHeap orders open auctions by closing order.
type expiryHeap []*openAuction

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	a, b := &h[i].a, &h[j].a
	return a.Expires < b.Expires || a.Expires == b.Expires && a.ID < b.ID
}
func (h expiryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)   { *h = append(*h, x.(*openAuction)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// LoopQ9 keeps the open auctions in a map and a heap by expiry, and emits
// every auction's winning bid, in closing order (expiry, then ID), once
// an event after its expiry arrives (the rest at the end). A bid on an
// auction not seen yet can only count if the auction comes in the same
// millisecond, so only those bids wait.
func LoopQ9(events iter.Seq[Event], emit func(Q9Result)) {
	open := make(map[int64]*openAuction)
	var expiring expiryHeap
	var pending []Bid // bids of the current millisecond on unknown auctions
	pendingTime := int64(-1 << 62)
	offer := func(o *openAuction, b *Bid) {
		if inAuction(&o.a, b) && (!o.has || betterBid(b, &o.best)) {
			o.best, o.has = *b, true
		}
	}
	closeBefore := func(ts int64) {
		for len(expiring) > 0 && expiring[0].a.Expires < ts {
			o := heap.Pop(&expiring).(*openAuction)
			delete(open, o.a.ID)
			if o.has {
				emit(Q9Result{Auction: o.a, Bid: o.best})
			}
		}
	}
	for e := range events {
		ts := e.Timestamp()
		closeBefore(ts)
		if ts != pendingTime {
			pending, pendingTime = pending[:0], ts
		}
		switch e.Kind {
		case AuctionKind:
			o := &openAuction{a: *e.Auction}
			for i := range pending {
				offer(o, &pending[i])
			}
			open[o.a.ID] = o
			heap.Push(&expiring, o)
		case BidKind:
			if o, ok := open[e.Bid.Auction]; ok {
				offer(o, e.Bid)
			} else {
				pending = append(pending, *e.Bid)
			}
		}
	}
	closeBefore(1 << 62)
}

// LoopQ4 averages the winning prices of LoopQ9 per category.
func LoopQ4(events iter.Seq[Event], emit func(Q4Result)) {
	type acc struct{ sum, n int64 }
	cats := make(map[int64]*acc)
	LoopQ9(events, func(r Q9Result) {
		c := cats[r.Auction.Category]
		if c == nil {
			c = &acc{}
			cats[r.Auction.Category] = c
		}
		c.sum += r.Bid.Price
		c.n++
		emit(Q4Result{Category: r.Auction.Category, Average: c.sum / c.n, Count: c.n})
	})
}

// LoopQ6 averages the last Q6Auctions winning prices of LoopQ9 per seller.
func LoopQ6(events iter.Seq[Event], emit func(Q6Result)) {
	type last struct {
		prices [Q6Auctions]int64
		n      int64 // auctions seen
		sum    int64 // of the last min(n, Q6Auctions)
	}
	sellers := make(map[int64]*last)
	LoopQ9(events, func(r Q9Result) {
		s := sellers[r.Auction.Seller]
		if s == nil {
			s = &last{}
			sellers[r.Auction.Seller] = s
		}
		i := s.n % Q6Auctions
		if s.n >= Q6Auctions {
			s.sum -= s.prices[i]
		}
		s.prices[i] = r.Bid.Price
		s.sum += r.Bid.Price
		s.n++
		n := min(s.n, Q6Auctions)
		emit(Q6Result{Seller: r.Auction.Seller, Average: s.sum / n, Count: n})
	})
}
