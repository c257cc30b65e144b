package nexmark

import (
	"math"
	"time"

	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// counter is the aggregate function COUNT(*).
func counter[T any]() window.AggregateFunction[T, int64, int64] {
	return window.NewAggregate(func() int64 { return 0 }, func(_ T, n int64) int64 { return n + 1 },
		func(n int64) int64 { return n }, func(a, b int64) int64 { return a + b })
}

// Q11Gap is the session gap of Q11.
const Q11Gap = 10 * time.Second

// BidderCount is the number of bids of a bidder in a window (a session
// for Q11, a processing-time window for Q12): [StartTime, EndTime).
type BidderCount struct {
	Bidder    int64
	BidCount  int64
	StartTime int64
	EndTime   int64
}

func bidderCount(bidder int64, ctx *window.ProcessContext, n []int64, out stream.Collector[BidderCount]) error {
	w := ctx.Window()
	out.Collect(BidderCount{Bidder: bidder, BidCount: n[0], StartTime: w.Start, EndTime: w.End})
	return nil
}

// Q11 is user sessions: the number of bids of every session of every
// bidder, a session ending after 10 s of event time without their bids.
// As SQL's SESSION_END, the end is the last bid's time plus the gap; bids
// exactly the gap apart are in the same session (the windows touch).
func Q11(events *stream.Stream[Event]) *stream.Stream[BidderCount] {
	return window.AggregateProcess(
		window.Of(stream.KeyBy(Bids(events), func(b Bid) int64 { return b.Bidder }), window.EventTimeSession(Q11Gap)),
		counter[Bid](), window.ProcessWindowFunc[int64, int64, BidderCount](bidderCount)).Name("q11-sessions").UID("q11-sessions")
}

// Q12Size is the processing-time window of Q12.
const Q12Size = 10 * time.Second

// Q12 is processing time windows: the number of bids of every bidder in
// every tumbling window of 10 s of processing time (the wall clock, or
// the environment's clock). The windows depend on when the bids are
// processed, so only the total per bidder is deterministic. Flink drops
// the processing-time windows still open when a bounded input ends, which
// for a run shorter than a window would drop every bid; here they fire at
// the end of the input instead (endOfInputTrigger), so that every bid is
// counted once.
func Q12(events *stream.Stream[Event]) *stream.Stream[BidderCount] {
	return window.AggregateProcess(
		window.Of(stream.KeyBy(Bids(events), func(b Bid) int64 { return b.Bidder }), window.TumblingProcessingTime(Q12Size)).
			Trigger(endOfInputTrigger{}),
		counter[Bid](), window.ProcessWindowFunc[int64, int64, BidderCount](bidderCount)).Name("q12-processing-time").UID("q12-processing-time")
}

// endOfInputTrigger fires a processing-time window when the clock passes
// its end, or when the input ends: the end of a bounded input is the
// maximum watermark (math.MaxInt64), so an event-time timer there fires
// exactly then.
type endOfInputTrigger struct{}

const endOfInput = math.MaxInt64

func (endOfInputTrigger) OnElement(_ int64, w window.TimeWindow, c window.TriggerContext) window.TriggerResult {
	c.RegisterProcessingTimeTimer(w.MaxTimestamp())
	c.RegisterEventTimeTimer(endOfInput)
	return window.Continue
}

func (endOfInputTrigger) OnEventTime(int64, window.TimeWindow, window.TriggerContext) window.TriggerResult {
	return window.FireAndPurge
}

func (endOfInputTrigger) OnProcessingTime(t int64, w window.TimeWindow, _ window.TriggerContext) window.TriggerResult {
	if t == w.MaxTimestamp() {
		return window.FireAndPurge
	}
	return window.Continue
}

func (endOfInputTrigger) Clear(w window.TimeWindow, c window.TriggerContext) {
	c.DeleteProcessingTimeTimer(w.MaxTimestamp())
	c.DeleteEventTimeTimer(endOfInput)
}

func (endOfInputTrigger) CanMerge() bool                                   { return false }
func (endOfInputTrigger) OnMerge(window.TimeWindow, window.TriggerContext) {}
func (endOfInputTrigger) String() string                                   { return "ProcessingTimeOrEndOfInputTrigger()" }

// Day is the window of the daily reports Q15, Q16 and Q17: a UTC day,
// as their GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd').
const Day = 24 * time.Hour

// The price ranks of the daily reports, in cents: rank 1 below 10,000,
// rank 2 below 1,000,000, rank 3 the rest.
func priceRank(p int64) int {
	switch {
	case p < 10_000:
		return 1
	case p < 1_000_000:
		return 2
	}
	return 3
}

// RankCounts are the bids, distinct bidders and distinct auctions of a
// group, in total and per price rank.
type RankCounts struct {
	TotalBids, Rank1Bids, Rank2Bids, Rank3Bids                 int64
	TotalBidders, Rank1Bidders, Rank2Bidders, Rank3Bidders     int64
	TotalAuctions, Rank1Auctions, Rank2Auctions, Rank3Auctions int64
}

// distinctRanks accumulates RankCounts: index 0 is the total, 1 to 3 the
// ranks. The sets are what COUNT(DISTINCT) must keep.
type distinctRanks struct {
	Bids     [4]int64
	Bidders  [4]map[int64]struct{}
	Auctions [4]map[int64]struct{}
}

func newDistinctRanks() *distinctRanks {
	d := &distinctRanks{}
	for i := range d.Bidders {
		d.Bidders[i] = make(map[int64]struct{})
		d.Auctions[i] = make(map[int64]struct{})
	}
	return d
}

func (d *distinctRanks) add(b *Bid) {
	for _, i := range [2]int{0, priceRank(b.Price)} {
		d.Bids[i]++
		d.Bidders[i][b.Bidder] = struct{}{}
		d.Auctions[i][b.Auction] = struct{}{}
	}
}

func (d *distinctRanks) merge(o *distinctRanks) *distinctRanks {
	for i := range d.Bids {
		d.Bids[i] += o.Bids[i]
		for k := range o.Bidders[i] {
			d.Bidders[i][k] = struct{}{}
		}
		for k := range o.Auctions[i] {
			d.Auctions[i][k] = struct{}{}
		}
	}
	return d
}

func (d *distinctRanks) counts() RankCounts {
	n := func(m map[int64]struct{}) int64 { return int64(len(m)) }
	return RankCounts{
		TotalBids: d.Bids[0], Rank1Bids: d.Bids[1], Rank2Bids: d.Bids[2], Rank3Bids: d.Bids[3],
		TotalBidders: n(d.Bidders[0]), Rank1Bidders: n(d.Bidders[1]), Rank2Bidders: n(d.Bidders[2]), Rank3Bidders: n(d.Bidders[3]),
		TotalAuctions: n(d.Auctions[0]), Rank1Auctions: n(d.Auctions[1]), Rank2Auctions: n(d.Auctions[2]), Rank3Auctions: n(d.Auctions[3]),
	}
}

func dayOf(ms int64) string { return utc(ms).Format(time.DateOnly) }

// Q15Result is the bidding statistics of a day.
type Q15Result struct {
	Day string
	RankCounts
}

// q15Acc is the accumulator of Q15 and Q16: the sets, and the latest bid
// time for Q16's minute.
type q15Acc struct {
	Ranks *distinctRanks
	Last  int64
}

func distinctRanksAggregate() window.AggregateFunction[Bid, q15Acc, q15Acc] {
	return window.NewAggregate(
		func() q15Acc { return q15Acc{Ranks: newDistinctRanks(), Last: -1 << 63} },
		func(b Bid, acc q15Acc) q15Acc {
			acc.Ranks.add(&b)
			acc.Last = max(acc.Last, b.DateTime)
			return acc
		},
		func(acc q15Acc) q15Acc { return acc },
		func(a, b q15Acc) q15Acc { return q15Acc{Ranks: a.Ranks.merge(b.Ranks), Last: max(a.Last, b.Last)} })
}

// Q15 is bidding statistics report: per day, the number of bids, distinct
// bidders and distinct auctions, in total and per price rank. The
// reference is an unbounded GROUP BY that updates a day's row with every
// bid; here a day's row is emitted once, final, when the watermark passes
// the day's end (a tumbling event-time window of a day): the last update
// of the reference, without the intermediate ones, whose values depend on
// the order in which parallel sources interleave.
func Q15(events *stream.Stream[Event]) *stream.Stream[Q15Result] {
	days := stream.KeyBy(Bids(events), func(b Bid) int64 { return floorDiv(b.DateTime, msPerDay) })
	return window.AggregateProcess(window.Of(days, window.TumblingEventTime(Day)), distinctRanksAggregate(),
		window.ProcessWindowFunc[int64, q15Acc, Q15Result](func(_ int64, ctx *window.ProcessContext, acc []q15Acc, out stream.Collector[Q15Result]) error {
			out.Collect(Q15Result{Day: dayOf(ctx.Window().Start), RankCounts: acc[0].Ranks.counts()})
			return nil
		})).Name("q15-daily-report").UID("q15-daily-report")
}

// Q16Result is the bidding statistics of a channel on a day, with the
// last minute (HH:mm) of the day that the channel had a bid in.
type Q16Result struct {
	Channel string
	Day     string
	Minute  string
	RankCounts
}

// Q16 is channel statistics report: Q15 per channel and day, with the
// latest minute of the day with a bid (the reference's
// max(DATE_FORMAT(dateTime, 'HH:mm'))), emitted once per channel and day
// as Q15.
func Q16(events *stream.Stream[Event]) *stream.Stream[Q16Result] {
	channels := stream.KeyBy(Bids(events), func(b Bid) string { return b.Channel })
	return window.AggregateProcess(window.Of(channels, window.TumblingEventTime(Day)), distinctRanksAggregate(),
		window.ProcessWindowFunc[string, q15Acc, Q16Result](func(channel string, ctx *window.ProcessContext, acc []q15Acc, out stream.Collector[Q16Result]) error {
			out.Collect(Q16Result{Channel: channel, Day: dayOf(ctx.Window().Start), Minute: utc(acc[0].Last).Format("15:04"), RankCounts: acc[0].Ranks.counts()})
			return nil
		})).Name("q16-channel-report").UID("q16-channel-report")
}

// Q17Result is the bids on an auction on a day and their prices.
type Q17Result struct {
	Auction   int64
	Day       string
	TotalBids int64
	Rank1Bids int64
	Rank2Bids int64
	Rank3Bids int64
	MinPrice  int64
	MaxPrice  int64
	AvgPrice  int64 // truncated, as SQL's AVG of a BIGINT
	SumPrice  int64
}

// q17Acc accumulates a Q17Result: the rank counts are indexed by rank.
type q17Acc struct {
	Bids          [4]int64
	Min, Max, Sum int64
}

func (a q17Acc) add(b *Bid) q17Acc {
	if a.Bids[0] == 0 {
		a.Min, a.Max = b.Price, b.Price
	}
	a.Bids[0]++
	a.Bids[priceRank(b.Price)]++
	a.Min, a.Max, a.Sum = min(a.Min, b.Price), max(a.Max, b.Price), a.Sum+b.Price
	return a
}

func (a q17Acc) merge(b q17Acc) q17Acc {
	switch {
	case a.Bids[0] == 0:
		return b
	case b.Bids[0] == 0:
		return a
	}
	for i := range a.Bids {
		a.Bids[i] += b.Bids[i]
	}
	a.Min, a.Max, a.Sum = min(a.Min, b.Min), max(a.Max, b.Max), a.Sum+b.Sum
	return a
}

func (a q17Acc) result(auction int64, day string) Q17Result {
	return Q17Result{Auction: auction, Day: day, TotalBids: a.Bids[0], Rank1Bids: a.Bids[1], Rank2Bids: a.Bids[2], Rank3Bids: a.Bids[3],
		MinPrice: a.Min, MaxPrice: a.Max, AvgPrice: a.Sum / a.Bids[0], SumPrice: a.Sum}
}

// Q17 is auction statistics report: per auction and day, the number of
// bids (in total and per price rank) and the minimum, maximum, average
// and sum of their prices, emitted once per auction and day as Q15.
func Q17(events *stream.Stream[Event]) *stream.Stream[Q17Result] {
	auctions := stream.KeyBy(Bids(events), func(b Bid) int64 { return b.Auction })
	return window.AggregateProcess(window.Of(auctions, window.TumblingEventTime(Day)),
		window.NewAggregate(func() q17Acc { return q17Acc{} }, func(b Bid, a q17Acc) q17Acc { return a.add(&b) },
			func(a q17Acc) q17Acc { return a }, q17Acc.merge),
		window.ProcessWindowFunc[int64, q17Acc, Q17Result](func(auction int64, ctx *window.ProcessContext, acc []q17Acc, out stream.Collector[Q17Result]) error {
			out.Collect(acc[0].result(auction, dayOf(ctx.Window().Start)))
			return nil
		})).Name("q17-auction-report").UID("q17-auction-report")
}
