package nexmark

import (
	"time"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// Bids are the bids of events.
func Bids(events *stream.Stream[Event]) *stream.Stream[Bid] {
	return stream.Map(events.Filter(Event.IsBid).Name("bids"), func(e Event) Bid { return *e.Bid }).Name("bid")
}

// Q0 is the pass-through query: every bid, unchanged (the reference q0,
// SELECT auction, bidder, price, dateTime, extra FROM bid, which measures
// the cost of the source and the sink).
func Q0(events *stream.Stream[Event]) *stream.Stream[Bid] {
	return Bids(events)
}

// DollarToEuro is the exchange rate of Q1.
const DollarToEuro = 0.908

// Q1Result is a bid with its price in euros.
type Q1Result struct {
	Auction  int64
	Bidder   int64
	Price    float64
	DateTime int64
	Extra    string
}

// Q1 is currency conversion: every bid with its price × 0.908.
func Q1(events *stream.Stream[Event]) *stream.Stream[Q1Result] {
	return stream.Map(events.Filter(Event.IsBid).Name("bids"), q1Convert).Name("q1-convert")
}

func q1Convert(e Event) Q1Result {
	b := e.Bid
	return Q1Result{Auction: b.Auction, Bidder: b.Bidder, Price: DollarToEuro * float64(b.Price), DateTime: b.DateTime, Extra: b.Extra}
}

// Q2Result is the auction and price of a selected bid.
type Q2Result struct {
	Auction int64
	Price   int64
}

// Q2Modulus selects the auctions of Q2: those whose ID it divides.
const Q2Modulus = 123

// Q2 is selection: the bids on auctions whose ID is a multiple of 123.
func Q2(events *stream.Stream[Event]) *stream.Stream[Q2Result] {
	return stream.Map(events.Filter(q2Keep).Name("q2-filter"), func(e Event) Q2Result {
		return Q2Result{Auction: e.Bid.Auction, Price: e.Bid.Price}
	}).Name("q2-project")
}

func q2Keep(e Event) bool { return e.Kind == BidKind && e.Bid.Auction%Q2Modulus == 0 }

// Q3Result is a local item suggestion: a seller in OR, ID or CA and an
// auction of theirs in category 10.
type Q3Result struct {
	Name  string
	City  string
	State string
	ID    int64 // the auction
}

// Q3 is local item suggestion: who is selling in OR, ID or CA in category
// 10, and for what auction IDs — an unbounded inner join of auctions with
// their seller, kept in keyed state (the person, and the auctions that
// arrive before their seller).
func Q3(events *stream.Stream[Event]) *stream.Stream[Q3Result] {
	auctions := stream.Map(events.Filter(q3Auction).Name("q3-auctions"), func(e Event) Auction { return *e.Auction }).Name("q3-auction")
	persons := stream.Map(events.Filter(q3Person).Name("q3-persons"), func(e Event) Person { return *e.Person }).Name("q3-person")
	joined := stream.ConnectKeyed(
		stream.KeyBy(auctions, func(a Auction) int64 { return a.Seller }),
		stream.KeyBy(persons, func(p Person) int64 { return p.ID }))
	return stream.KeyedCoProcess(joined, &q3Join{}).Name("q3-join").UID("q3-join")
}

func q3Auction(e Event) bool { return e.Kind == AuctionKind && e.Auction.Category == 10 }

func q3Person(e Event) bool {
	if e.Kind != PersonKind {
		return false
	}
	s := e.Person.State
	return s == "OR" || s == "ID" || s == "CA"
}

// q3Join joins by seller: the person (name, city, state) once seen, and
// the IDs of the auctions seen before it.
type q3Join struct {
	person  state.ValueState[Q3Result]
	pending state.ListState[int64]
}

func (j *q3Join) Open(ctx *stream.KeyedContext[int64]) error {
	j.person = state.Value[Q3Result](ctx.State(), "person", Q3Result{})
	j.pending = state.List[int64](ctx.State(), "pending-auctions")
	return nil
}

func (j *q3Join) ProcessElement1(a Auction, _ *stream.KeyedContext[int64], out stream.Collector[Q3Result]) error {
	if p, ok := j.person.Value(); ok {
		p.ID = a.ID
		out.Collect(p)
		return nil
	}
	j.pending.Add(a.ID)
	return nil
}

func (j *q3Join) ProcessElement2(p Person, _ *stream.KeyedContext[int64], out stream.Collector[Q3Result]) error {
	r := Q3Result{Name: p.Name, City: p.City, State: p.State}
	j.person.Update(r)
	for _, id := range j.pending.Get() {
		r.ID = id
		out.Collect(r)
	}
	j.pending.Clear()
	return nil
}

// Q5 window sizes: the number of bids per auction in the last 10 s,
// every 2 s.
const (
	Q5Size  = 10 * time.Second
	Q5Slide = 2 * time.Second
)

// AuctionCount is the number of bids on an auction in a window.
type AuctionCount struct {
	Auction     int64
	Count       int64
	WindowStart int64
	WindowEnd   int64
}

// Q5 is hot items: for every sliding window of 10 s (every 2 s), the
// auctions with the most bids, with their count.
func Q5(events *stream.Stream[Event]) *stream.Stream[AuctionCount] {
	bids := Bids(events)
	counts := window.AggregateProcess(
		window.Of(stream.KeyBy(bids, func(b Bid) int64 { return b.Auction }), window.SlidingEventTime(Q5Size, Q5Slide)),
		window.NewAggregate(func() int64 { return 0 }, func(_ Bid, n int64) int64 { return n + 1 },
			func(n int64) int64 { return n }, func(a, b int64) int64 { return a + b }),
		window.ProcessWindowFunc[int64, int64, AuctionCount](func(auction int64, ctx *window.ProcessContext, n []int64, out stream.Collector[AuctionCount]) error {
			w := ctx.Window()
			out.Collect(AuctionCount{Auction: auction, Count: n[0], WindowStart: w.Start, WindowEnd: w.End})
			return nil
		})).Name("q5-count").UID("q5-count")
	return stream.KeyedProcess(stream.KeyBy(counts, func(c AuctionCount) int64 { return c.WindowEnd }), &q5Max{}).Name("q5-max").UID("q5-max")
}

// q5Max collects a window's counts (they carry the window's end − 1 as
// their timestamp and precede the watermark that fired it) and, when the
// watermark passes, emits those with the highest count.
type q5Max struct {
	counts state.ListState[AuctionCount]
}

func (q *q5Max) Open(ctx *stream.KeyedContext[int64]) error {
	q.counts = state.List[AuctionCount](ctx.State(), "counts")
	return nil
}

func (q *q5Max) ProcessElement(c AuctionCount, ctx *stream.KeyedContext[int64], _ stream.Collector[AuctionCount]) error {
	q.counts.Add(c)
	ctx.RegisterEventTimeTimer(c.WindowEnd - 1)
	return nil
}

func (q *q5Max) OnTimer(_ int64, _ *stream.KeyedContext[int64], out stream.Collector[AuctionCount]) error {
	counts := q.counts.Get()
	var most int64
	for _, c := range counts {
		most = max(most, c.Count)
	}
	for _, c := range counts {
		if c.Count == most {
			out.Collect(c)
		}
	}
	q.counts.Clear()
	return nil
}

// Q7Size is the window of Q7.
const Q7Size = 10 * time.Second

// Q7Result is a bid with the highest price of its window.
type Q7Result struct {
	WindowEnd int64
	Bid       Bid
}

type q7Acc struct {
	Price int64
	Bids  []Bid
}

// Q7 is highest bid: for every tumbling window of 10 s, the bids with the
// highest price (all of them when several share it). The windows are
// [start, end) as in the window package; the reference SQL's BETWEEN also
// matches a bid at the end instant of the previous window.
func Q7(events *stream.Stream[Event]) *stream.Stream[Q7Result] {
	bids := Bids(events)
	// Pre-aggregate per auction in parallel, then the maximum over all.
	highest := func(v Bid, acc q7Acc) q7Acc {
		switch {
		case len(acc.Bids) == 0 || v.Price > acc.Price:
			return q7Acc{Price: v.Price, Bids: []Bid{v}}
		case v.Price == acc.Price:
			acc.Bids = append(acc.Bids, v)
		}
		return acc
	}
	merge := func(a, b q7Acc) q7Acc {
		switch {
		case len(a.Bids) == 0 || b.Price > a.Price:
			return b
		case len(b.Bids) == 0 || a.Price > b.Price:
			return a
		}
		return q7Acc{Price: a.Price, Bids: append(append([]Bid(nil), a.Bids...), b.Bids...)}
	}
	perAuction := window.Aggregate(
		window.Of(stream.KeyBy(bids, func(b Bid) int64 { return b.Auction }), window.TumblingEventTime(Q7Size)),
		window.NewAggregate(func() q7Acc { return q7Acc{} }, highest, func(a q7Acc) q7Acc { return a }, merge)).Name("q7-local-max")
	return window.AggregateProcess(
		window.All(perAuction, window.TumblingEventTime(Q7Size)),
		window.NewAggregate(func() q7Acc { return q7Acc{} }, func(v q7Acc, acc q7Acc) q7Acc { return merge(acc, v) }, func(a q7Acc) q7Acc { return a }, merge),
		window.ProcessWindowFunc[struct{}, q7Acc, Q7Result](func(_ struct{}, ctx *window.ProcessContext, accs []q7Acc, out stream.Collector[Q7Result]) error {
			end := ctx.Window().End
			for _, b := range accs[0].Bids {
				out.Collect(Q7Result{WindowEnd: end, Bid: b})
			}
			return nil
		})).Name("q7-max").UID("q7-max")
}
