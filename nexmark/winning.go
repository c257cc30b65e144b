package nexmark

import (
	"cmp"
	"slices"
	"time"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// Q8Size is the tumbling window of Q8.
const Q8Size = 10 * time.Second

// Q8Result is a person who registered and opened an auction in the same
// window.
type Q8Result struct {
	ID          int64
	Name        string
	WindowStart int64
}

// Q8 is monitor new users: the people who registered and created an
// auction in the same 10 s tumbling window — a window join of persons
// and auctions by person ID = seller, with one result per person and
// window however many auctions they created (the reference SQL groups
// both sides by ID and window before joining).
func Q8(events *stream.Stream[Event]) *stream.Stream[Q8Result] {
	size := Q8Size.Milliseconds()
	persons := stream.Map(events.Filter(Event.IsPerson).Name("q8-persons"), func(e Event) Person { return *e.Person }).Name("q8-person")
	auctions := stream.Map(events.Filter(Event.IsAuction).Name("q8-auctions"), func(e Event) Auction { return *e.Auction }).Name("q8-auction")
	joined := window.Join(
		stream.KeyBy(persons, func(p Person) int64 { return p.ID }),
		stream.KeyBy(auctions, func(a Auction) int64 { return a.Seller }),
		window.TumblingEventTime(Q8Size),
		func(p Person, _ Auction, out stream.Collector[Q8Result]) {
			out.Collect(Q8Result{ID: p.ID, Name: p.Name, WindowStart: floorDiv(p.DateTime, size) * size})
		}).Name("q8-join").UID("q8-join")
	return stream.KeyedProcess(stream.KeyBy(joined, func(r Q8Result) int64 { return r.ID }), &q8Distinct{}).Name("q8-distinct").UID("q8-distinct")
}

// q8Distinct keeps the first of a person's join results (one per auction
// of theirs in the window): they come together when the window fires, so
// the flag is dropped when the watermark passes the window's end.
type q8Distinct struct {
	seen state.ValueState[bool]
}

func (q *q8Distinct) Open(ctx *stream.KeyedContext[int64]) error {
	q.seen = state.Value[bool](ctx.State(), "seen", false)
	return nil
}

func (q *q8Distinct) ProcessElement(r Q8Result, ctx *stream.KeyedContext[int64], out stream.Collector[Q8Result]) error {
	if _, ok := q.seen.Value(); ok {
		return nil
	}
	q.seen.Update(true)
	ctx.RegisterEventTimeTimer(r.WindowStart + Q8Size.Milliseconds() - 1)
	out.Collect(r)
	return nil
}

func (q *q8Distinct) OnTimer(int64, *stream.KeyedContext[int64], stream.Collector[Q8Result]) error {
	q.seen.Clear()
	return nil
}

// Q9Result is an auction with its winning bid.
type Q9Result struct {
	Auction Auction
	Bid     Bid
}

// inAuction reports whether b counts for a: on it, at a time between its
// creation and its expiry (both included, as SQL's BETWEEN).
func inAuction(a *Auction, b *Bid) bool {
	return b.Auction == a.ID && b.DateTime >= a.DateTime && b.DateTime <= a.Expires
}

// betterBid reports whether a wins over b: the higher price, then the
// earlier bid (the reference ORDER BY price DESC, dateTime ASC), then an
// arbitrary but fixed order, so that the winner does not depend on the
// order the bids arrive in.
func betterBid(a, b *Bid) bool {
	// One field at a time: cmp.Or would compare the three strings of
	// every pair, though the price almost always decides.
	if a.Price != b.Price {
		return a.Price > b.Price
	}
	if a.DateTime != b.DateTime {
		return a.DateTime < b.DateTime
	}
	if a.Bidder != b.Bidder {
		return a.Bidder < b.Bidder
	}
	if c := cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.URL, b.URL), cmp.Compare(a.Extra, b.Extra)); c != 0 {
		return c < 0
	}
	return false
}

// WinningBids is the core of Q4, Q6 and Q9: for every auction, its
// highest bid among those between its creation and its expiry, emitted
// when the watermark passes the expiry (auctions without such a bid give
// nothing). Results carry the expiry as their timestamp. prefix names
// and identifies the operators.
func WinningBids(events *stream.Stream[Event], prefix string) *stream.Stream[Q9Result] {
	auctions := stream.Map(events.Filter(Event.IsAuction).Name(prefix+"-auctions"), func(e Event) Auction { return *e.Auction }).Name(prefix + "-auction")
	joined := stream.ConnectKeyed(
		stream.KeyBy(auctions, func(a Auction) int64 { return a.ID }),
		stream.KeyBy(Bids(events), func(b Bid) int64 { return b.Auction }))
	return stream.KeyedCoProcess(joined, &winningBid{}).Name(prefix + "-winning-bids").UID(prefix + "-winning-bids")
}

// Q9 is winning bids: every auction with its highest bid (the earliest
// of the highest), when it expires.
func Q9(events *stream.Stream[Event]) *stream.Stream[Q9Result] {
	return WinningBids(events, "q9")
}

// winningBid keeps, per auction, the auction, its best bid so far and the
// bids that came before the auction (records of different source splits
// can overtake one another). An event-time timer at the expiry emits the
// winner; one at a pending bid's time drops it if its auction has not come
// by then (the watermark says it never will with an earlier creation
// time, so the bid cannot count).
type winningBid struct {
	auction state.ValueState[Auction]
	best    state.ValueState[Bid]
	pending state.ListState[Bid]
}

func (w *winningBid) Open(ctx *stream.KeyedContext[int64]) error {
	w.auction = state.Value[Auction](ctx.State(), "auction", Auction{})
	w.best = state.Value[Bid](ctx.State(), "best", Bid{})
	w.pending = state.List[Bid](ctx.State(), "pending-bids")
	return nil
}

func (w *winningBid) offer(b *Bid) {
	if best, ok := w.best.Value(); !ok || betterBid(b, &best) {
		w.best.Update(*b)
	}
}

func (w *winningBid) ProcessElement1(a Auction, ctx *stream.KeyedContext[int64], _ stream.Collector[Q9Result]) error {
	w.auction.Update(a)
	ctx.RegisterEventTimeTimer(a.Expires)
	for _, b := range w.pending.Get() {
		if inAuction(&a, &b) {
			w.offer(&b)
		}
	}
	w.pending.Clear()
	return nil
}

func (w *winningBid) ProcessElement2(b Bid, ctx *stream.KeyedContext[int64], _ stream.Collector[Q9Result]) error {
	if a, ok := w.auction.Value(); ok {
		if inAuction(&a, &b) {
			w.offer(&b)
		}
		return nil
	}
	w.pending.Add(b)
	ctx.RegisterEventTimeTimer(b.DateTime)
	return nil
}

func (w *winningBid) OnTimer(ts int64, _ *stream.KeyedContext[int64], out stream.Collector[Q9Result]) error {
	if a, ok := w.auction.Value(); ok {
		if ts == a.Expires {
			if b, ok := w.best.Value(); ok {
				out.Collect(Q9Result{Auction: a, Bid: b})
			}
			w.auction.Clear()
			w.best.Clear()
		}
		return nil
	}
	var keep []Bid
	for _, b := range w.pending.Get() {
		if b.DateTime > ts {
			keep = append(keep, b)
		}
	}
	if len(keep) == 0 {
		w.pending.Clear()
	} else {
		w.pending.Update(keep)
	}
	return nil
}

// closingOrder orders winning bids by the expiry of their auction, then
// by auction ID: the order in which auctions close.
func closingOrder(a, b Q9Result) int {
	return cmp.Or(cmp.Compare(a.Auction.Expires, b.Auction.Expires), cmp.Compare(a.Auction.ID, b.Auction.ID))
}

// closed buffers winning bids until the watermark passes their auction's
// expiry, and then takes them in closing order: the rolling aggregates
// of Q4 and Q6 then do not depend on how the winners of parallel subtasks
// interleave.
type closed struct {
	// pending holds the winners by their auction's expiry: a timer at
	// each expiry takes exactly its entry, so closing an auction costs
	// one lookup however many auctions are open.
	pending state.MapState[int64, []Q9Result]
}

func (c *closed) open(ctx *stream.KeyedContext[int64]) {
	c.pending = state.Map[int64, []Q9Result](ctx.State(), "pending-winners")
}

func (c *closed) add(r Q9Result, ctx *stream.KeyedContext[int64]) {
	rs, _ := c.pending.Get(r.Auction.Expires)
	c.pending.Put(r.Auction.Expires, append(slices.Clip(rs), r))
	ctx.RegisterEventTimeTimer(r.Auction.Expires)
}

// ready removes and returns, in closing order, the winners whose auction
// expired at ts (the timer of each expiry fires once, in order).
func (c *closed) ready(ts int64) []Q9Result {
	ready, ok := c.pending.Get(ts)
	if !ok {
		return nil
	}
	c.pending.Remove(ts)
	slices.SortFunc(ready, closingOrder)
	return ready
}

// Q4Result is the average winning price of a category's closed auctions
// so far, updated as each auction closes.
type Q4Result struct {
	Category int64
	Average  int64 // the sum over the count, truncated as SQL's AVG of a BIGINT
	Count    int64 // the closed auctions averaged
}

// Q4 is average price for a category: the average of the winning bid
// prices of every category's closed auctions, one update per auction as
// it closes (in order of expiry, then auction ID).
func Q4(events *stream.Stream[Event]) *stream.Stream[Q4Result] {
	winners := WinningBids(events, "q4")
	return stream.KeyedProcess(stream.KeyBy(winners, func(r Q9Result) int64 { return r.Auction.Category }), &q4Average{}).Name("q4-average").UID("q4-average")
}

type q4Average struct {
	closed
	sum, count state.ValueState[int64]
}

func (q *q4Average) Open(ctx *stream.KeyedContext[int64]) error {
	q.open(ctx)
	q.sum = state.Value[int64](ctx.State(), "sum", 0)
	q.count = state.Value[int64](ctx.State(), "count", 0)
	return nil
}

func (q *q4Average) ProcessElement(r Q9Result, ctx *stream.KeyedContext[int64], _ stream.Collector[Q4Result]) error {
	q.add(r, ctx)
	return nil
}

func (q *q4Average) OnTimer(ts int64, ctx *stream.KeyedContext[int64], out stream.Collector[Q4Result]) error {
	ready := q.ready(ts)
	if len(ready) == 0 {
		return nil
	}
	sum, _ := q.sum.Value()
	n, _ := q.count.Value()
	for _, r := range ready {
		sum += r.Bid.Price
		n++
		out.Collect(Q4Result{Category: ctx.CurrentKey(), Average: sum / n, Count: n})
	}
	q.sum.Update(sum)
	q.count.Update(n)
	return nil
}

// Q6Auctions is the number of a seller's last closed auctions that Q6
// averages.
const Q6Auctions = 10

// Q6Result is the average winning price of a seller's last (up to) 10
// closed auctions, updated as each closes.
type Q6Result struct {
	Seller  int64
	Average int64 // truncated, as Q4Result.Average
	Count   int64 // the auctions averaged, at most Q6Auctions
}

// Q6 is average selling price by seller: per seller, the average winning
// price of their last 10 closed auctions, one update per auction as it
// closes (in order of expiry, then auction ID). Flink SQL cannot run the
// reference query (an OVER window over retractions); its ROWS BETWEEN 10
// PRECEDING AND CURRENT ROW would span 11 rows, while the query's
// description, followed here, says 10.
func Q6(events *stream.Stream[Event]) *stream.Stream[Q6Result] {
	winners := WinningBids(events, "q6")
	return stream.KeyedProcess(stream.KeyBy(winners, func(r Q9Result) int64 { return r.Auction.Seller }), &q6Average{}).Name("q6-average").UID("q6-average")
}

type q6Average struct {
	closed
	prices state.ListState[int64] // the last Q6Auctions winning prices, oldest first
}

func (q *q6Average) Open(ctx *stream.KeyedContext[int64]) error {
	q.open(ctx)
	q.prices = state.List[int64](ctx.State(), "last-prices")
	return nil
}

func (q *q6Average) ProcessElement(r Q9Result, ctx *stream.KeyedContext[int64], _ stream.Collector[Q6Result]) error {
	q.add(r, ctx)
	return nil
}

func (q *q6Average) OnTimer(ts int64, ctx *stream.KeyedContext[int64], out stream.Collector[Q6Result]) error {
	ready := q.ready(ts)
	if len(ready) == 0 {
		return nil
	}
	prices := slices.Clone(q.prices.Get())
	for _, r := range ready {
		prices = append(prices, r.Bid.Price)
		if len(prices) > Q6Auctions {
			prices = slices.Delete(prices, 0, len(prices)-Q6Auctions)
		}
		var sum int64
		for _, p := range prices {
			sum += p
		}
		n := int64(len(prices))
		out.Collect(Q6Result{Seller: ctx.CurrentKey(), Average: sum / n, Count: n})
	}
	q.prices.Update(prices)
	return nil
}
