package nexmark

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"time"
)

// The loops of q10 to q22, under the assumptions of loops.go: one
// goroutine, events in event-time order.

// LoopQ10 emits every bid with its day and minute.
func LoopQ10(events iter.Seq[Event], emit func(Q10Result)) {
	for e := range events {
		if e.Kind == BidKind {
			emit(q10Row(e.Bid))
		}
	}
}

// LoopQ11 keeps every bidder's open session and emits it when a bid comes
// more than the gap after its last one; the open sessions at the end.
func LoopQ11(events iter.Seq[Event], emit func(BidderCount)) {
	gap := Q11Gap.Milliseconds()
	type session struct{ start, last, n int64 }
	open := make(map[int64]*session)
	for e := range events {
		if e.Kind != BidKind {
			continue
		}
		b := e.Bid
		s := open[b.Bidder]
		switch {
		case s == nil:
			open[b.Bidder] = &session{start: b.DateTime, last: b.DateTime, n: 1}
		case b.DateTime > s.last+gap:
			emit(BidderCount{Bidder: b.Bidder, BidCount: s.n, StartTime: s.start, EndTime: s.last + gap})
			*s = session{start: b.DateTime, last: b.DateTime, n: 1}
		default:
			s.last = max(s.last, b.DateTime)
			s.n++
		}
	}
	for _, bidder := range slices.Sorted(maps.Keys(open)) {
		s := open[bidder]
		emit(BidderCount{Bidder: bidder, BidCount: s.n, StartTime: s.start, EndTime: s.last + gap})
	}
}

// LoopQ12 counts bids per bidder in tumbling windows of the wall clock,
// read at every bid as the engine's window assigner does.
func LoopQ12(events iter.Seq[Event], emit func(BidderCount)) {
	size := Q12Size.Milliseconds()
	counts := make(map[int64]int64)
	start := int64(-1 << 62)
	flush := func() {
		for _, bidder := range slices.Sorted(maps.Keys(counts)) {
			emit(BidderCount{Bidder: bidder, BidCount: counts[bidder], StartTime: start, EndTime: start + size})
		}
		clear(counts)
	}
	for e := range events {
		if e.Kind != BidKind {
			continue
		}
		if s := floorDiv(time.Now().UnixMilli(), size) * size; s != start {
			flush()
			start = s
		}
		counts[e.Bid.Bidder]++
	}
	flush()
}

// LoopQ13 looks every bid up in the side input.
func LoopQ13(events iter.Seq[Event], emit func(Q13Result)) {
	side := Q13SideInput()
	for e := range events {
		if e.Kind == BidKind {
			if r, ok := q13Join(side, e.Bid); ok {
				emit(r)
			}
		}
	}
}

// LoopQ14 emits the converted bids in the price range.
func LoopQ14(events iter.Seq[Event], emit func(Q14Result)) {
	for e := range events {
		if e.Kind == BidKind {
			if r, ok := q14Row(e.Bid); ok {
				emit(r)
			}
		}
	}
}

// dailyLoop groups bids by key and UTC day and, when a bid of a later day
// comes (and at the end), hands every group of the days before it to
// flush, in key order.
func dailyLoop[K cmp.Ordered, A any](events iter.Seq[Event], key func(*Bid) K, add func(*A, *Bid), flush func(day int64, k K, a *A)) {
	groups := make(map[K]*A)
	day := int64(-1 << 62)
	done := func() {
		for _, k := range slices.Sorted(maps.Keys(groups)) {
			flush(day, k, groups[k])
		}
		clear(groups)
	}
	for e := range events {
		if e.Kind != BidKind {
			continue
		}
		b := e.Bid
		if d := floorDiv(b.DateTime, msPerDay); d != day {
			done()
			day = d
		}
		k := key(b)
		a := groups[k]
		if a == nil {
			a = new(A)
			groups[k] = a
		}
		add(a, b)
	}
	done()
}

type q15Loop struct {
	ranks *distinctRanks
	last  int64
}

func (l *q15Loop) add(b *Bid) {
	if l.ranks == nil {
		l.ranks = newDistinctRanks()
	}
	l.ranks.add(b)
	l.last = max(l.last, b.DateTime)
}

// LoopQ15 computes the daily statistics with sets per day.
func LoopQ15(events iter.Seq[Event], emit func(Q15Result)) {
	dailyLoop(events, func(*Bid) int64 { return 0 }, (*q15Loop).add, func(day, _ int64, l *q15Loop) {
		emit(Q15Result{Day: dayOf(day * msPerDay), RankCounts: l.ranks.counts()})
	})
}

// LoopQ16 computes the daily statistics per channel.
func LoopQ16(events iter.Seq[Event], emit func(Q16Result)) {
	dailyLoop(events, func(b *Bid) string { return b.Channel }, (*q15Loop).add, func(day int64, channel string, l *q15Loop) {
		emit(Q16Result{Channel: channel, Day: dayOf(day * msPerDay), Minute: utc(l.last).Format("15:04"), RankCounts: l.ranks.counts()})
	})
}

// LoopQ17 computes the daily statistics per auction.
func LoopQ17(events iter.Seq[Event], emit func(Q17Result)) {
	dailyLoop(events, func(b *Bid) int64 { return b.Auction }, func(a *q17Acc, b *Bid) { *a = a.add(b) }, func(day, auction int64, a *q17Acc) {
		emit(a.result(auction, dayOf(day*msPerDay)))
	})
}

// LoopQ18 keeps the latest bid of every (bidder, auction) and emits it
// when a bid of a later millisecond replaces it; the rest at the end.
func LoopQ18(events iter.Seq[Event], emit func(Bid)) {
	latest := make(map[BidderAuction]Bid)
	for e := range events {
		if e.Kind != BidKind {
			continue
		}
		b := e.Bid
		k := BidderAuction{Bidder: b.Bidder, Auction: b.Auction}
		cur, ok := latest[k]
		switch {
		case !ok:
		case b.DateTime > cur.DateTime:
			emit(cur)
		case b.DateTime < cur.DateTime || !betterBid(b, &cur):
			continue
		}
		latest[k] = *b
	}
	keys := slices.SortedFunc(maps.Keys(latest), func(a, b BidderAuction) int {
		return cmp.Or(cmp.Compare(a.Bidder, b.Bidder), cmp.Compare(a.Auction, b.Auction))
	})
	for _, k := range keys {
		emit(latest[k])
	}
}

// LoopQ19 ranks the bids of each millisecond into their auction's top 10,
// a millisecond at a time, by auction and best first.
func LoopQ19(events iter.Seq[Event], emit func(Q19Result)) {
	tops := make(map[int64][]Bid)
	var batch []Bid
	flush := func() {
		slices.SortFunc(batch, func(a, b Bid) int { return cmp.Or(cmp.Compare(a.Auction, b.Auction), compareBids(a, b)) })
		for i := 0; i < len(batch); {
			j := i + 1
			for j < len(batch) && batch[j].Auction == batch[i].Auction {
				j++
			}
			a := batch[i].Auction
			if top, changed := rankTopN(tops[a], batch[i:j], emit); changed {
				tops[a] = top
			}
			i = j
		}
		batch = batch[:0]
	}
	for e := range events {
		if e.Kind != BidKind {
			continue
		}
		if len(batch) > 0 && batch[0].DateTime != e.Bid.DateTime {
			flush()
		}
		batch = append(batch, *e.Bid)
	}
	flush()
}

// LoopQ20 joins bids with the auctions of category 10 in two maps.
func LoopQ20(events iter.Seq[Event], emit func(Q20Result)) {
	auctions := make(map[int64]*Auction) // nil: another category
	pending := make(map[int64][]Bid)
	for e := range events {
		switch e.Kind {
		case AuctionKind:
			a := e.Auction
			if a.Category != Q20Category {
				auctions[a.ID] = nil
			} else {
				auctions[a.ID] = a
				for _, b := range pending[a.ID] {
					emit(q20Row(&b, a))
				}
			}
			delete(pending, a.ID)
		case BidKind:
			b := e.Bid
			a, ok := auctions[b.Auction]
			switch {
			case !ok:
				pending[b.Auction] = append(pending[b.Auction], *b)
			case a != nil:
				emit(q20Row(b, a))
			}
		}
	}
}

// LoopQ21 emits the bids with a channel ID.
func LoopQ21(events iter.Seq[Event], emit func(Q21Result)) {
	for e := range events {
		if e.Kind == BidKind {
			if r, ok := q21Row(e.Bid); ok {
				emit(r)
			}
		}
	}
}

// LoopQ22 emits every bid with its URL's directories.
func LoopQ22(events iter.Seq[Event], emit func(Q22Result)) {
	for e := range events {
		if e.Kind == BidKind {
			emit(q22Row(e.Bid))
		}
	}
}
