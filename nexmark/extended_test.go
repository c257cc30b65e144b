package nexmark_test

import (
	"cmp"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

// dayConfig spreads the test events over 5.5 hours of event time, one a
// second, from 18:30 UTC: all three of Q14's times of day, hundreds of
// minutes for Q10 and Q16, and two days for the daily reports.
var dayConfig = func() nexmark.Config {
	c := nexmark.DefaultConfig()
	c.FirstEventRate = 1
	c.BaseTime = time.Date(2023, 11, 14, 18, 30, 0, 0, time.UTC).UnixMilli()
	return c
}()

var dayEvents = nexmark.Generate(dayConfig, testEvents)

func bidsOf(events []nexmark.Event) []nexmark.Bid {
	var out []nexmark.Bid
	for _, e := range events {
		if e.Bid != nil {
			out = append(out, *e.Bid)
		}
	}
	return out
}

// loopResults runs a loop over events.
func loopResults[R any](events []nexmark.Event, loop func(iter.Seq[nexmark.Event], func(R))) []R {
	var out []R
	loop(nexmark.Slice(events), func(r R) { out = append(out, r) })
	return out
}

func TestQ10(t *testing.T) {
	var want []nexmark.Q10Result
	days, minutes := map[string]bool{}, map[string]bool{}
	for _, b := range bidsOf(dayEvents) {
		tm := time.UnixMilli(b.DateTime).In(time.UTC)
		r := nexmark.Q10Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra,
			Dt: fmt.Sprintf("%04d-%02d-%02d", tm.Year(), tm.Month(), tm.Day()), Hm: fmt.Sprintf("%02d:%02d", tm.Hour(), tm.Minute())}
		days[r.Dt], minutes[r.Hm] = true, true
		want = append(want, r)
	}
	if len(days) != 2 || len(minutes) < 300 {
		t.Fatalf("%d days, %d minutes: the test wants 2 days and hundreds of minutes", len(days), len(minutes))
	}
	check(t, dayConfig, nexmark.Q10, want, testEvents*46/50)
	same(t, loopResults(dayEvents, nexmark.LoopQ10), want)
}

func TestQ11(t *testing.T) {
	gap := nexmark.Q11Gap.Milliseconds()
	times := map[int64][]int64{}
	for _, b := range bidsOf(slowEvents) {
		times[b.Bidder] = append(times[b.Bidder], b.DateTime)
	}
	var want []nexmark.BidderCount
	multi := 0
	for bidder, ts := range times {
		slices.Sort(ts)
		start := 0
		for i := 1; i <= len(ts); i++ {
			if i == len(ts) || ts[i]-ts[i-1] > gap {
				want = append(want, nexmark.BidderCount{Bidder: bidder, BidCount: int64(i - start), StartTime: ts[start], EndTime: ts[i-1] + gap})
				if i-start > 1 {
					multi++
				}
				start = i
			}
		}
	}
	if multi < 10 || len(want) < 2*len(times) {
		t.Fatalf("%d sessions of %d bidders, %d with several bids: too few to test sessions", len(want), len(times), multi)
	}
	check(t, slowConfig, nexmark.Q11, want, 100)
	same(t, loopResults(slowEvents, nexmark.LoopQ11), want)
}

// TestQ12 checks what does not depend on the wall clock: every bid is
// counted once, in aligned windows of 10 s, one row per bidder and window.
func TestQ12(t *testing.T) {
	want := map[int64]int64{}
	for _, b := range bidsOf(events) {
		want[b.Bidder]++
	}
	checkTotals := func(t *testing.T, got []nexmark.BidderCount) {
		t.Helper()
		size := nexmark.Q12Size.Milliseconds()
		totals := map[int64]int64{}
		seen := map[[2]int64]bool{}
		for _, r := range got {
			if r.StartTime%size != 0 || r.EndTime-r.StartTime != size || r.BidCount <= 0 {
				t.Fatalf("bad row %+v", r)
			}
			if k := [2]int64{r.Bidder, r.StartTime}; seen[k] {
				t.Fatalf("two rows for bidder %d and window %d", r.Bidder, r.StartTime)
			} else {
				seen[k] = true
			}
			totals[r.Bidder] += r.BidCount
		}
		if len(totals) != len(want) {
			t.Fatalf("%d bidders, want %d", len(totals), len(want))
		}
		for b, n := range want {
			if totals[b] != n {
				t.Fatalf("bidder %d: %d bids, want %d", b, totals[b], n)
			}
		}
	}
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) { checkTotals(t, run(t, testConfig, p, nexmark.Q12)) })
	}
	checkTotals(t, loopResults(events, nexmark.LoopQ12))
}

// TestQ12ManualClock stops the clock inside a window: every bidder then
// has one row, that window's, which fires when the input ends.
func TestQ12ManualClock(t *testing.T) {
	const now = 1_800_000_004_321
	start := now / nexmark.Q12Size.Milliseconds() * nexmark.Q12Size.Milliseconds()
	counts := map[int64]int64{}
	for _, b := range bidsOf(events) {
		counts[b.Bidder]++
	}
	var want []nexmark.BidderCount
	for b, n := range counts {
		want = append(want, nexmark.BidderCount{Bidder: b, BidCount: n, StartTime: start, EndTime: start + nexmark.Q12Size.Milliseconds()})
	}
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			cfg := config.New()
			config.Parallelism.Set(cfg, p)
			env := stream.NewEnvironmentWithConfig(cfg).SetClock(runtime.NewManualClock(now))
			got := stream.Collect(nexmark.Q12(nexmark.Events(env, testConfig, testEvents)))
			if err := env.Execute(t.Context(), "q12-manual-clock"); err != nil {
				t.Fatal(err)
			}
			same(t, got.Values(), want)
		})
	}
}

func TestQ13(t *testing.T) {
	side := nexmark.Q13SideInput()
	var want []nexmark.Q13Result
	dropped := 0
	for _, b := range bidsOf(events) {
		if v, ok := side[b.Auction%10_000]; ok {
			want = append(want, nexmark.Q13Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Value: v})
		} else {
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatal("every bid finds a side value: the inner join is not tested")
	}
	check(t, testConfig, nexmark.Q13, want, testEvents/2)
	same(t, loopResults(events, nexmark.LoopQ13), want)
}

func TestQ14(t *testing.T) {
	var want []nexmark.Q14Result
	types := map[string]int{}
	for _, b := range bidsOf(dayEvents) {
		euros := float64(b.Price) * 0.908
		if !(euros > 1e6 && euros < 5e7) {
			continue
		}
		typ := "otherTime"
		switch h := time.UnixMilli(b.DateTime).UTC().Hour(); {
		case 8 <= h && h <= 18:
			typ = "dayTime"
		case h <= 6 || 20 <= h:
			typ = "nightTime"
		}
		types[typ]++
		c := 0
		for _, r := range b.Extra {
			if r == 'c' {
				c++
			}
		}
		want = append(want, nexmark.Q14Result{Auction: b.Auction, Bidder: b.Bidder, Price: euros, BidTimeType: typ, DateTime: b.DateTime, Extra: b.Extra, CCounts: int64(c)})
	}
	if len(types) != 3 {
		t.Fatalf("times of day %v: the test wants all three", types)
	}
	check(t, dayConfig, nexmark.Q14, want, 1000)
	same(t, loopResults(dayEvents, nexmark.LoopQ14), want)
}

// rankStats is the brute force of the daily reports: sets per group and
// rank, counted at the end.
type rankStats struct {
	bids            [4]int64
	bidders, auctns [4]map[int64]bool
	last            int64
}

func (s *rankStats) add(b nexmark.Bid) {
	rank := 3
	if b.Price < 10_000 {
		rank = 1
	} else if b.Price < 1_000_000 {
		rank = 2
	}
	for _, i := range []int{0, rank} {
		if s.bidders[i] == nil {
			s.bidders[i], s.auctns[i] = map[int64]bool{}, map[int64]bool{}
		}
		s.bids[i]++
		s.bidders[i][b.Bidder] = true
		s.auctns[i][b.Auction] = true
	}
	s.last = max(s.last, b.DateTime)
}

func (s *rankStats) counts() nexmark.RankCounts {
	return nexmark.RankCounts{
		TotalBids: s.bids[0], Rank1Bids: s.bids[1], Rank2Bids: s.bids[2], Rank3Bids: s.bids[3],
		TotalBidders: int64(len(s.bidders[0])), Rank1Bidders: int64(len(s.bidders[1])), Rank2Bidders: int64(len(s.bidders[2])), Rank3Bidders: int64(len(s.bidders[3])),
		TotalAuctions: int64(len(s.auctns[0])), Rank1Auctions: int64(len(s.auctns[1])), Rank2Auctions: int64(len(s.auctns[2])), Rank3Auctions: int64(len(s.auctns[3])),
	}
}

func day(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }

func TestQ15(t *testing.T) {
	groups := map[string]*rankStats{}
	for _, b := range bidsOf(dayEvents) {
		if groups[day(b.DateTime)] == nil {
			groups[day(b.DateTime)] = &rankStats{}
		}
		groups[day(b.DateTime)].add(b)
	}
	var want []nexmark.Q15Result
	for d, s := range groups {
		want = append(want, nexmark.Q15Result{Day: d, RankCounts: s.counts()})
	}
	if want[0].Rank1Bids == 0 || want[0].Rank2Bids == 0 || want[0].Rank3Bids == 0 {
		t.Fatalf("a rank has no bids: %+v", want[0])
	}
	check(t, dayConfig, nexmark.Q15, want, 2)
	same(t, loopResults(dayEvents, nexmark.LoopQ15), want)
}

func TestQ16(t *testing.T) {
	type key struct{ channel, day string }
	groups := map[key]*rankStats{}
	for _, b := range bidsOf(dayEvents) {
		k := key{b.Channel, day(b.DateTime)}
		if groups[k] == nil {
			groups[k] = &rankStats{}
		}
		groups[k].add(b)
	}
	var want []nexmark.Q16Result
	for k, s := range groups {
		want = append(want, nexmark.Q16Result{Channel: k.channel, Day: k.day, Minute: time.UnixMilli(s.last).UTC().Format("15:04"), RankCounts: s.counts()})
	}
	check(t, dayConfig, nexmark.Q16, want, 100)
	same(t, loopResults(dayEvents, nexmark.LoopQ16), want)
}

func TestQ17(t *testing.T) {
	type key struct {
		auction int64
		day     string
	}
	groups := map[key][]int64{}
	for _, b := range bidsOf(dayEvents) {
		k := key{b.Auction, day(b.DateTime)}
		groups[k] = append(groups[k], b.Price)
	}
	var want []nexmark.Q17Result
	for k, prices := range groups {
		r := nexmark.Q17Result{Auction: k.auction, Day: k.day, TotalBids: int64(len(prices)), MinPrice: slices.Min(prices), MaxPrice: slices.Max(prices)}
		for _, p := range prices {
			r.SumPrice += p
			switch {
			case p < 10_000:
				r.Rank1Bids++
			case p < 1_000_000:
				r.Rank2Bids++
			default:
				r.Rank3Bids++
			}
		}
		r.AvgPrice = r.SumPrice / r.TotalBids
		want = append(want, r)
	}
	check(t, dayConfig, nexmark.Q17, want, 100)
	same(t, loopResults(dayEvents, nexmark.LoopQ17), want)
}

// better is the order of bids of the tests of Q18 and Q19: higher price,
// then earlier, then the other fields, as the package's tie-break.
func better(a, b nexmark.Bid) int {
	return cmp.Or(cmp.Compare(b.Price, a.Price), cmp.Compare(a.DateTime, b.DateTime), cmp.Compare(a.Bidder, b.Bidder),
		cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.URL, b.URL), cmp.Compare(a.Extra, b.Extra))
}

func TestQ18(t *testing.T) {
	// The rows that are the latest of their key in event time: per key
	// and millisecond, the first of the bids in the tie-break order.
	type key struct{ bidder, auction, ms int64 }
	best := map[key]nexmark.Bid{}
	ties := 0
	for _, b := range bidsOf(events) {
		k := key{b.Bidder, b.Auction, b.DateTime}
		if cur, ok := best[k]; ok {
			ties++
			if better(b, cur) >= 0 {
				continue
			}
		}
		best[k] = b
	}
	var want []nexmark.Bid
	for _, b := range best {
		want = append(want, b)
	}
	if ties < 100 {
		t.Fatalf("%d bids share their key and millisecond: the deduplication is not tested", ties)
	}
	t.Logf("%d ties", ties)
	check(t, testConfig, nexmark.Q18, want, 1000)
	loop := loopResults(events, nexmark.LoopQ18)
	same(t, loop, want)

	// The last row of each key is the SQL's result: the bid with the
	// latest dateTime.
	last := map[[2]int64]nexmark.Bid{}
	for _, b := range loop {
		k := [2]int64{b.Bidder, b.Auction}
		if cur, ok := last[k]; !ok || b.DateTime > cur.DateTime {
			last[k] = b
		}
	}
	for _, b := range bidsOf(events) {
		if l := last[[2]int64{b.Bidder, b.Auction}]; b.DateTime > l.DateTime {
			t.Fatalf("bid %+v is later than the last row %+v", b, l)
		}
	}
}

func TestQ19(t *testing.T) {
	// A bid enters its auction's top 10 if fewer than 10 bids before it
	// (earlier, or of the same millisecond and better) are better; its
	// rank is one more than their number.
	perAuction := map[int64][]nexmark.Bid{}
	for _, b := range bidsOf(events) {
		perAuction[b.Auction] = append(perAuction[b.Auction], b)
	}
	var want []nexmark.Q19Result
	for _, bids := range perAuction {
		for _, b := range bids {
			n := 0
			for _, c := range bids {
				if better(c, b) < 0 && c.DateTime <= b.DateTime {
					n++
				}
			}
			if n < 10 {
				want = append(want, nexmark.Q19Result{Bid: b, RankNumber: int64(n + 1)})
			}
		}
	}
	check(t, testConfig, nexmark.Q19, want, 1000)
	same(t, loopResults(events, nexmark.LoopQ19), want)
}

func TestQ20(t *testing.T) {
	auctions := map[int64]*nexmark.Auction{}
	for _, e := range events {
		if e.Auction != nil {
			auctions[e.Auction.ID] = e.Auction
		}
	}
	var want []nexmark.Q20Result
	for _, b := range bidsOf(events) {
		if a := auctions[b.Auction]; a != nil && a.Category == 10 {
			want = append(want, nexmark.Q20Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, URL: b.URL,
				BidDateTime: b.DateTime, BidExtra: b.Extra, ItemName: a.ItemName, Description: a.Description, InitialBid: a.InitialBid,
				Reserve: a.Reserve, AuctionDateTime: a.DateTime, Expires: a.Expires, Seller: a.Seller, Category: a.Category, AuctionExtra: a.Extra})
		}
	}
	// Bids on an auction not created yet must wait for it.
	early, seen := 0, map[int64]bool{}
	for _, e := range events {
		switch {
		case e.Auction != nil:
			seen[e.Auction.ID] = true
		case e.Bid != nil && !seen[e.Bid.Auction] && auctions[e.Bid.Auction] != nil && auctions[e.Bid.Auction].Category == 10:
			early++
		}
	}
	if early == 0 {
		t.Fatal("no bid comes before its auction: the waiting side of the join is not tested")
	}
	t.Logf("%d bids before their auction", early)
	check(t, testConfig, nexmark.Q20, want, 1000)
	same(t, loopResults(events, nexmark.LoopQ20), want)
}

func TestQ21(t *testing.T) {
	re := regexp.MustCompile(`(&|^)channel_id=([^&]*)`)
	named := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
	var want []nexmark.Q21Result
	fromURL := 0
	for _, b := range bidsOf(events) {
		id, ok := named[strings.ToLower(b.Channel)]
		if !ok {
			m := re.FindStringSubmatch(b.URL)
			if m == nil {
				continue
			}
			id = m[2]
			fromURL++
		}
		want = append(want, nexmark.Q21Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, ChannelID: id})
	}
	if fromURL == 0 || len(want) == len(bidsOf(events)) {
		t.Fatalf("%d of %d bids kept, %d IDs from URLs", len(want), len(bidsOf(events)), fromURL)
	}
	check(t, testConfig, nexmark.Q21, want, 1000)
	same(t, loopResults(events, nexmark.LoopQ21), want)
}

func TestQ22(t *testing.T) {
	var want []nexmark.Q22Result
	for _, b := range bidsOf(events) {
		parts := strings.Split(b.URL, "/")
		field := func(i int) string {
			if i < len(parts) {
				return parts[i]
			}
			return ""
		}
		want = append(want, nexmark.Q22Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, Dir1: field(3), Dir2: field(4), Dir3: field(5)})
	}
	if want[0].Dir3 == "" {
		t.Fatalf("no third directory: %+v", want[0])
	}
	check(t, testConfig, nexmark.Q22, want, testEvents*46/50)
	same(t, loopResults(events, nexmark.LoopQ22), want)
}
