package nexmark

import (
	"iter"
	"slices"
	"sort"
)

// The loops compute each query's result with one goroutine over a
// sequence of events: the baseline the engine is measured against, and
// the reference of the tests. Windowed loops assume what the generator
// guarantees: events come in event-time order, so a window is complete
// once an event past its end arrives (they emit every window at the end).

// LoopQ0 emits every bid.
func LoopQ0(events iter.Seq[Event], emit func(Bid)) {
	for e := range events {
		if e.Kind == BidKind {
			emit(*e.Bid)
		}
	}
}

// LoopQ1 emits every bid with its price in euros.
func LoopQ1(events iter.Seq[Event], emit func(Q1Result)) {
	for e := range events {
		if e.Kind == BidKind {
			emit(q1Convert(e))
		}
	}
}

// LoopQ2 emits the bids on auctions whose ID is a multiple of 123.
func LoopQ2(events iter.Seq[Event], emit func(Q2Result)) {
	for e := range events {
		if e.Kind == BidKind && e.Bid.Auction%Q2Modulus == 0 {
			emit(Q2Result{Auction: e.Bid.Auction, Price: e.Bid.Price})
		}
	}
}

// LoopQ3 joins auctions in category 10 with their sellers in OR, ID or CA
// with two maps.
func LoopQ3(events iter.Seq[Event], emit func(Q3Result)) {
	persons := make(map[int64]Q3Result)
	pending := make(map[int64][]int64)
	for e := range events {
		switch {
		case q3Auction(e):
			a := e.Auction
			if p, ok := persons[a.Seller]; ok {
				p.ID = a.ID
				emit(p)
			} else {
				pending[a.Seller] = append(pending[a.Seller], a.ID)
			}
		case q3Person(e):
			p := e.Person
			r := Q3Result{Name: p.Name, City: p.City, State: p.State}
			persons[p.ID] = r
			for _, id := range pending[p.ID] {
				r.ID = id
				emit(r)
			}
			delete(pending, p.ID)
		}
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// LoopQ5 counts bids per auction and sliding window and emits, per
// window in order of its end, the auctions with the most bids.
func LoopQ5(events iter.Seq[Event], emit func(AuctionCount)) {
	size, slide := Q5Size.Milliseconds(), Q5Slide.Milliseconds()
	windows := make(map[int64]map[int64]int64) // start → auction → count
	flush := func(before int64) {
		var starts []int64
		for s := range windows {
			if s+size <= before {
				starts = append(starts, s)
			}
		}
		slices.Sort(starts)
		for _, s := range starts {
			counts := windows[s]
			var most int64
			for _, n := range counts {
				most = max(most, n)
			}
			auctions := make([]int64, 0, len(counts))
			for a, n := range counts {
				if n == most {
					auctions = append(auctions, a)
				}
			}
			slices.Sort(auctions)
			for _, a := range auctions {
				emit(AuctionCount{Auction: a, Count: most, WindowStart: s, WindowEnd: s + size})
			}
			delete(windows, s)
		}
	}
	next := int64(-1 << 62) // the earliest end of an open window
	for e := range events {
		if e.Kind != BidKind {
			continue
		}
		ts := e.Bid.DateTime
		if ts >= next {
			flush(ts)
			next = 1 << 62
			for s := range windows {
				next = min(next, s+size)
			}
		}
		last := floorDiv(ts, slide) * slide
		for s := last; s > ts-size; s -= slide {
			m := windows[s]
			if m == nil {
				m = make(map[int64]int64)
				windows[s] = m
			}
			m[e.Bid.Auction]++
			next = min(next, s+size)
		}
	}
	flush(1 << 62)
}

// LoopQ7 emits, per tumbling window in order, the bids with the highest
// price.
func LoopQ7(events iter.Seq[Event], emit func(Q7Result)) {
	size := Q7Size.Milliseconds()
	type best struct {
		price int64
		bids  []Bid
	}
	windows := make(map[int64]*best)
	flush := func(before int64) {
		var starts []int64
		for s := range windows {
			if s+size <= before {
				starts = append(starts, s)
			}
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
		for _, s := range starts {
			for _, b := range windows[s].bids {
				emit(Q7Result{WindowEnd: s + size, Bid: b})
			}
			delete(windows, s)
		}
	}
	current := int64(-1 << 62)
	for e := range events {
		if e.Kind != BidKind {
			continue
		}
		b := e.Bid
		s := floorDiv(b.DateTime, size) * size
		if s > current {
			flush(b.DateTime)
			current = s
		}
		w := windows[s]
		switch {
		case w == nil:
			windows[s] = &best{price: b.Price, bids: []Bid{*b}}
		case b.Price > w.price:
			w.price, w.bids = b.Price, append(w.bids[:0], *b)
		case b.Price == w.price:
			w.bids = append(w.bids, *b)
		}
	}
	flush(1 << 62)
}
