package nexmark

import (
	"slices"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// BidderAuction is the key of Q18: a bidder's bids on an auction.
type BidderAuction struct {
	Bidder  int64
	Auction int64
}

// Q18 is find last bid: the deduplication ROW_NUMBER() OVER (PARTITION BY
// bidder, auction ORDER BY dateTime DESC) = 1, as an append-only stream
// of the rows that become the last bid of their (bidder, auction) in
// event time. The reference's result changes with every such bid (it
// retracts the previous one); here each of them is emitted once the
// watermark passes its time, so that a bid that a parallel source
// delivers late cannot pass for the latest. Among the bids of a key in
// the same millisecond only one is the latest: the first in betterBid's
// order. The last row emitted for a key is the reference's final row for
// it.
func Q18(events *stream.Stream[Event]) *stream.Stream[Bid] {
	keyed := stream.KeyBy(Bids(events), func(b Bid) BidderAuction { return BidderAuction{Bidder: b.Bidder, Auction: b.Auction} })
	return stream.KeyedProcess(keyed, &q18Latest{}).Name("q18-last-bid").UID("q18-last-bid")
}

// q18Latest holds, per key, the latest bid of each millisecond that the
// watermark has not passed yet, and the time of the last bid emitted.
type q18Latest struct {
	pending state.TimeMapState[Bid]
	emitted state.ValueState[int64]
}

func (q *q18Latest) Open(ctx *stream.KeyedContext[BidderAuction]) error {
	q.pending = state.TimeMap[Bid](ctx.State(), "pending")
	q.emitted = state.Value[int64](ctx.State(), "emitted", 0)
	return nil
}

func (q *q18Latest) ProcessElement(b Bid, ctx *stream.KeyedContext[BidderAuction], _ stream.Collector[Bid]) error {
	if last, ok := q.emitted.Value(); ok && b.DateTime <= last {
		return nil // a late bid: a later one was the latest already
	}
	// The reference orders by dateTime only, which leaves ties to chance;
	// betterBid's order makes them fixed.
	if cur, ok := q.pending.Get(b.DateTime); ok && !betterBid(&b, &cur) {
		return nil
	}
	q.pending.Put(b.DateTime, b)
	ctx.RegisterEventTimeTimer(b.DateTime)
	return nil
}

func (q *q18Latest) OnTimer(ts int64, _ *stream.KeyedContext[BidderAuction], out stream.Collector[Bid]) error {
	b, ok := q.pending.Get(ts)
	if !ok {
		return nil
	}
	q.pending.Remove(ts)
	q.emitted.Update(ts)
	out.Collect(b)
	return nil
}

// Q19TopN is the number of bids Q19 ranks per auction.
const Q19TopN = 10

// Q19Result is a bid that entered its auction's top 10, with its rank
// (from 1) when it did.
type Q19Result struct {
	Bid
	RankNumber int64
}

// Q19 is auction top-10 price: the TOP-N query ROW_NUMBER() OVER
// (PARTITION BY auction ORDER BY price DESC) <= 10, as an append-only
// stream of the bids that enter their auction's top 10, with their rank
// at that moment. The reference's result is a changing table whose rows
// are retracted as better bids push them out (and whose ranks shift);
// here each bid is emitted once, when it enters, and the rows it pushes
// down are not repeated. Bids count in event time: a bid is ranked once
// the watermark passes its time, bids of the same millisecond best first,
// and price ties go to betterBid's order (the earlier bid first), so the
// result does not depend on how parallel sources interleave.
func Q19(events *stream.Stream[Event]) *stream.Stream[Q19Result] {
	keyed := stream.KeyBy(Bids(events), func(b Bid) int64 { return b.Auction })
	return stream.KeyedProcess(keyed, &q19TopN{}).Name("q19-top-10").UID("q19-top-10")
}

// q19TopN keeps an auction's top 10 (best first) and the bids waiting for
// the watermark, by time. A bid that is not better than the 10th of the
// top waits for nothing: every bid of the top is earlier, so it will
// still be there, or pushed out by a better one, when the bid's time
// comes. An auction rarely gets two bids in one millisecond, so the first
// bid of a time is a value of its own and only the others share a slice:
// waiting allocates nothing per bid.
type q19TopN struct {
	top    state.ListState[Bid]
	first  state.TimeMapState[Bid]
	more   state.TimeMapState[[]Bid]
	bids   []Bid // scratch for the bids a timer ranks
	newTop []Bid // scratch for a new auction's top, with room for Q19TopN
}

func (q *q19TopN) Open(ctx *stream.KeyedContext[int64]) error {
	q.top = state.List[Bid](ctx.State(), "top")
	q.first = state.TimeMap[Bid](ctx.State(), "first")
	q.more = state.TimeMap[[]Bid](ctx.State(), "more")
	q.newTop = make([]Bid, 0, Q19TopN)
	return nil
}

func (q *q19TopN) ProcessElement(b Bid, ctx *stream.KeyedContext[int64], _ stream.Collector[Q19Result]) error {
	if top := q.top.Get(); len(top) == Q19TopN && betterBid(&top[Q19TopN-1], &b) {
		return nil
	}
	if !q.first.Contains(b.DateTime) {
		q.first.Put(b.DateTime, b)
		ctx.RegisterEventTimeTimer(b.DateTime)
		return nil
	}
	// The slice is the state's own (or, with Pebble, a fresh decoding):
	// appending in place grows it by doubling, not by one copy per bid.
	more, _ := q.more.Get(b.DateTime)
	q.more.Put(b.DateTime, append(more, b))
	return nil
}

func (q *q19TopN) OnTimer(ts int64, _ *stream.KeyedContext[int64], out stream.Collector[Q19Result]) error {
	b, ok := q.first.Get(ts)
	if !ok {
		return nil
	}
	q.first.Remove(ts)
	bids := append(q.bids[:0], b)
	if more, ok := q.more.Get(ts); ok {
		bids = append(bids, more...)
		q.more.Remove(ts)
	}
	// On the heap the top's list is the state's own, with room for 10:
	// rankTopN changes it in place and Update keeps it without a copy. A
	// new auction's list starts in a scratch list with room for 10, which
	// Update copies once, capacity and all.
	top := q.top.Get()
	fresh := top == nil
	if fresh {
		top = q.newTop[:0]
	}
	top, changed := rankTopN(top, bids, out.Collect)
	if changed {
		q.top.Update(top)
	}
	if fresh {
		clear(q.newTop[:cap(q.newTop)]) // the strings of the bids copied
	}
	clear(bids) // the strings of the bids ranked
	q.bids = bids[:0]
	return nil
}

// rankTopN adds the bids of one millisecond to top (best first, at most
// Q19TopN), best first, and emits each that enters with its rank. It
// sorts bids and may reuse top's array.
func rankTopN(top, bids []Bid, emit func(Q19Result)) ([]Bid, bool) {
	slices.SortFunc(bids, compareBids)
	changed := false
	for _, b := range bids {
		i := 0
		for i < len(top) && betterBid(&top[i], &b) {
			i++
		}
		if i >= Q19TopN {
			continue
		}
		if len(top) < Q19TopN {
			if cap(top) < Q19TopN {
				// Room for the whole top at once, rather than growing it
				// bid by bid.
				top = append(make([]Bid, 0, Q19TopN), top...)
			}
			top = slices.Insert(top, i, b)
		} else {
			// Full: the last one drops out, in place.
			copy(top[i+1:], top[i:Q19TopN-1])
			top[i] = b
		}
		changed = true
		emit(Q19Result{Bid: b, RankNumber: int64(i + 1)})
	}
	return top, changed
}

func compareBids(a, b Bid) int {
	switch {
	case betterBid(&a, &b):
		return -1
	case betterBid(&b, &a):
		return 1
	}
	return 0
}

// Q20Result is a bid with its auction, in the columns of the reference.
type Q20Result struct {
	Auction         int64
	Bidder          int64
	Price           int64
	Channel         string
	URL             string
	BidDateTime     int64
	BidExtra        string
	ItemName        string
	Description     string
	InitialBid      int64
	Reserve         int64
	AuctionDateTime int64
	Expires         int64
	Seller          int64
	Category        int64
	AuctionExtra    string
}

func q20Row(b *Bid, a *Auction) Q20Result {
	return Q20Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, URL: b.URL, BidDateTime: b.DateTime, BidExtra: b.Extra,
		ItemName: a.ItemName, Description: a.Description, InitialBid: a.InitialBid, Reserve: a.Reserve, AuctionDateTime: a.DateTime,
		Expires: a.Expires, Seller: a.Seller, Category: a.Category, AuctionExtra: a.Extra}
}

// Q20Category is the category of the auctions Q20 keeps.
const Q20Category = 10

// Q20 is expand bid with auction: every bid joined with its auction, for
// the auctions of category 10 — an unbounded inner join by auction ID in
// keyed state, as the reference's regular join (bids on an auction not
// seen yet wait for it, whenever it comes).
func Q20(events *stream.Stream[Event]) *stream.Stream[Q20Result] {
	auctions := stream.Map(events.Filter(Event.IsAuction).Name("q20-auctions"), func(e Event) Auction { return *e.Auction }).Name("q20-auction")
	joined := stream.ConnectKeyed(
		stream.KeyBy(auctions, func(a Auction) int64 { return a.ID }),
		stream.KeyBy(Bids(events), func(b Bid) int64 { return b.Auction }))
	return stream.KeyedCoProcess(joined, &q20Join{}).Name("q20-join").UID("q20-join")
}

// q20Join keeps every auction: those of category 10 whole, the others as
// their ID and category only, so that their bids are dropped at once
// rather than waiting forever for a category-10 auction (filtering the
// auctions before the join would make every bid on another category wait
// in state).
type q20Join struct {
	auction state.ValueState[Auction]
	pending state.ListState[Bid]
}

func (j *q20Join) Open(ctx *stream.KeyedContext[int64]) error {
	j.auction = state.Value[Auction](ctx.State(), "auction", Auction{})
	j.pending = state.List[Bid](ctx.State(), "pending-bids")
	return nil
}

func (j *q20Join) ProcessElement1(a Auction, _ *stream.KeyedContext[int64], out stream.Collector[Q20Result]) error {
	if a.Category != Q20Category {
		j.auction.Update(Auction{ID: a.ID, Category: a.Category})
		j.pending.Clear()
		return nil
	}
	j.auction.Update(a)
	for _, b := range j.pending.Get() {
		out.Collect(q20Row(&b, &a))
	}
	j.pending.Clear()
	return nil
}

func (j *q20Join) ProcessElement2(b Bid, _ *stream.KeyedContext[int64], out stream.Collector[Q20Result]) error {
	a, ok := j.auction.Value()
	switch {
	case !ok:
		j.pending.Add(b)
	case a.Category == Q20Category:
		out.Collect(q20Row(&b, &a))
	}
	return nil
}
