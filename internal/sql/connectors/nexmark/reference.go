package nexmark

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

// DataStream is the DataStream query of the nexmark package that a
// reference SQL query is checked against, with its results turned into
// the SQL query's final table.
type DataStream struct {
	// Attach adds the query to events with a collecting sink; after the
	// job, rows returns its final table in the columns of the SQL
	// query's result table (nexmark_qN): the DataStream queries emit
	// once, final, what the SQL query's changelog updates (q4, q6 and q18
	// emit every update of a row; rows keeps the last).
	Attach func(events *stream.Stream[nexmark.Event]) (rows func() [][]any)
	// Normalize, if set, reduces both sides' final tables to what they
	// must agree on (q12: the bids per bidder, whatever the
	// processing-time windows).
	Normalize func([][]any) [][]any
	// Differs says how the DataStream query's results differ by design
	// from the reference SQL's, if they do: its final table is then not
	// expected to equal the SQL's.
	Differs string
}

func attach[R any](q func(*stream.Stream[nexmark.Event]) *stream.Stream[R], final func([]R) [][]any) func(*stream.Stream[nexmark.Event]) func() [][]any {
	return func(events *stream.Stream[nexmark.Event]) func() [][]any {
		c := stream.Collect(q(events))
		return func() [][]any { return final(c.Values()) }
	}
}

// each turns every result into one row.
func each[R any](row func(R) []any) func([]R) [][]any {
	return func(rs []R) [][]any {
		out := make([][]any, len(rs))
		for i, r := range rs {
			out[i] = row(r)
		}
		return out
	}
}

// lastBy keeps, per key, the result that later (by less) is the last.
func lastBy[R any, K comparable](key func(R) K, later func(a, b R) bool, row func(R) []any) func([]R) [][]any {
	return func(rs []R) [][]any {
		last := map[K]R{}
		for _, r := range rs {
			k := key(r)
			if cur, ok := last[k]; !ok || later(r, cur) {
				last[k] = r
			}
		}
		out := make([][]any, 0, len(last))
		for _, r := range last {
			out = append(out, row(r))
		}
		return out
	}
}

func bidRow(b nexmark.Bid) []any {
	return []any{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, ts(b.DateTime), b.Extra}
}

func rankCounts(r nexmark.RankCounts) []any {
	return []any{r.TotalBids, r.Rank1Bids, r.Rank2Bids, r.Rank3Bids, r.TotalBidders, r.Rank1Bidders, r.Rank2Bidders, r.Rank3Bidders,
		r.TotalAuctions, r.Rank1Auctions, r.Rank2Auctions, r.Rank3Auctions}
}

// betterBid is the nexmark package's order of bids (its betterBid): the
// higher price, then the earlier, then a fixed order of the rest.
func betterBid(a, b nexmark.Bid) int {
	return cmp.Or(cmp.Compare(b.Price, a.Price), cmp.Compare(a.DateTime, b.DateTime), cmp.Compare(a.Bidder, b.Bidder),
		cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.URL, b.URL), cmp.Compare(a.Extra, b.Extra))
}

// DataStreams are the DataStream forms of q0 to q22, by name.
var DataStreams = map[string]DataStream{
	"q0": {Attach: attach(nexmark.Q0, each(func(b nexmark.Bid) []any { return []any{b.Auction, b.Bidder, b.Price, ts(b.DateTime), b.Extra} }))},
	"q1": {Attach: attach(nexmark.Q1, each(func(r nexmark.Q1Result) []any { return []any{r.Auction, r.Bidder, r.Price, ts(r.DateTime), r.Extra} }))},
	"q2": {Attach: attach(nexmark.Q2, each(func(r nexmark.Q2Result) []any { return []any{r.Auction, r.Price} }))},
	"q3": {Attach: attach(nexmark.Q3, each(func(r nexmark.Q3Result) []any { return []any{r.Name, r.City, r.State, r.ID} }))},
	"q4": {Attach: attach(nexmark.Q4, lastBy(func(r nexmark.Q4Result) int64 { return r.Category },
		func(a, b nexmark.Q4Result) bool { return a.Count > b.Count },
		func(r nexmark.Q4Result) []any { return []any{r.Category, r.Average} }))},
	"q5": {Attach: attach(nexmark.Q5, each(func(r nexmark.AuctionCount) []any { return []any{r.Auction, r.Count} }))},
	"q6": {Attach: attach(nexmark.Q6, lastBy(func(r nexmark.Q6Result) int64 { return r.Seller },
		func(a, b nexmark.Q6Result) bool { return a.Count > b.Count },
		func(r nexmark.Q6Result) []any { return []any{strconv.FormatInt(r.Seller, 10), r.Average} })),
		Differs: "the DataStream query averages a seller's last 10 auctions as the query's description says, the SQL's ROWS BETWEEN 10 PRECEDING AND CURRENT ROW 11, and emits one row per closed auction"},
	// The SQL selects B.auction, B.price, B.bidder into the columns
	// auction, bidder, price: the result's bidder column holds the price.
	"q7": {Attach: attach(nexmark.Q7, each(func(r nexmark.Q7Result) []any {
		return []any{r.Bid.Auction, r.Bid.Price, r.Bid.Bidder, ts(r.Bid.DateTime), r.Bid.Extra}
	}))},
	"q8": {Attach: attach(nexmark.Q8, each(func(r nexmark.Q8Result) []any { return []any{r.ID, r.Name, ts(r.WindowStart)} }))},
	"q9": {Attach: attach(nexmark.Q9, each(func(r nexmark.Q9Result) []any {
		a, b := r.Auction, r.Bid
		return []any{a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, ts(a.DateTime), ts(a.Expires), a.Seller, a.Category, a.Extra,
			b.Auction, b.Bidder, b.Price, ts(b.DateTime), b.Extra}
	}))},
	"q10": {Attach: attach(nexmark.Q10, each(func(r nexmark.Q10Result) []any {
		return []any{r.Auction, r.Bidder, r.Price, ts(r.DateTime), r.Extra, r.Dt, r.Hm}
	}))},
	"q11": {Attach: attach(nexmark.Q11, each(func(r nexmark.BidderCount) []any {
		return []any{r.Bidder, r.BidCount, ts(r.StartTime), ts(r.EndTime)}
	}))},
	"q12": {Attach: attach(nexmark.Q12, each(func(r nexmark.BidderCount) []any {
		return []any{r.Bidder, r.BidCount, ts(r.StartTime), ts(r.EndTime)}
	})), Normalize: bidsPerBidder},
	"q13": {Attach: attach(nexmark.Q13, each(func(r nexmark.Q13Result) []any {
		return []any{r.Auction, r.Bidder, r.Price, ts(r.DateTime), r.Value}
	}))},
	"q14": {Attach: attach(nexmark.Q14, each(func(r nexmark.Q14Result) []any {
		return []any{r.Auction, r.Bidder, r.Price, r.BidTimeType, ts(r.DateTime), r.Extra, r.CCounts}
	}))},
	"q15": {Attach: attach(nexmark.Q15, each(func(r nexmark.Q15Result) []any { return append([]any{r.Day}, rankCounts(r.RankCounts)...) }))},
	"q16": {Attach: attach(nexmark.Q16, each(func(r nexmark.Q16Result) []any {
		return append([]any{r.Channel, r.Day, r.Minute}, rankCounts(r.RankCounts)...)
	}))},
	"q17": {Attach: attach(nexmark.Q17, each(func(r nexmark.Q17Result) []any {
		return []any{r.Auction, r.Day, r.TotalBids, r.Rank1Bids, r.Rank2Bids, r.Rank3Bids, r.MinPrice, r.MaxPrice, r.AvgPrice, r.SumPrice}
	}))},
	"q18": {Attach: attach(nexmark.Q18, lastBy(func(b nexmark.Bid) nexmark.BidderAuction {
		return nexmark.BidderAuction{Bidder: b.Bidder, Auction: b.Auction}
	},
		func(a, b nexmark.Bid) bool { return a.DateTime > b.DateTime }, bidRow))},
	"q19": {Attach: attach(nexmark.Q19, topTen), Normalize: rankTies},
	"q20": {Attach: attach(nexmark.Q20, each(func(r nexmark.Q20Result) []any {
		return []any{r.Auction, r.Bidder, r.Price, r.Channel, r.URL, ts(r.BidDateTime), r.BidExtra,
			r.ItemName, r.Description, r.InitialBid, r.Reserve, ts(r.AuctionDateTime), ts(r.Expires), r.Seller, r.Category, r.AuctionExtra}
	}))},
	"q21": {Attach: attach(nexmark.Q21, each(func(r nexmark.Q21Result) []any {
		return []any{r.Auction, r.Bidder, r.Price, r.Channel, r.ChannelID}
	}))},
	"q22": {Attach: attach(nexmark.Q22, each(func(r nexmark.Q22Result) []any {
		return []any{r.Auction, r.Bidder, r.Price, r.Channel, r.Dir1, r.Dir2, r.Dir3}
	}))},
}

// rankTies makes q19's final tables comparable where bids tie on price.
// ROW_NUMBER numbers tied rows in the order they arrive, which at
// parallelism > 1 depends on how the sources' subtasks interleave, while
// the DataStream query breaks ties by time: within each auction, the ranks
// are renumbered in one fixed order (price descending, then the whole
// row), and where an auction's top 10 is full, the bids at its lowest
// price keep only auction, price and rank, since which of several tied
// bids made the cut is arrival order too.
func rankTies(rows [][]any) [][]any {
	byAuction := map[string][][]any{}
	var order []string
	for _, r := range rows {
		a := canonicalRow(r[:1])
		if _, ok := byAuction[a]; !ok {
			order = append(order, a)
		}
		byAuction[a] = append(byAuction[a], r)
	}
	type ranked struct {
		row []any
		key string // the row without its rank, canonical
	}
	var out [][]any
	for _, a := range order {
		group := make([]ranked, len(byAuction[a]))
		for i, r := range byAuction[a] {
			group[i] = ranked{r, canonicalRow(r[:len(r)-1])}
		}
		slices.SortFunc(group, func(x, y ranked) int {
			return cmp.Or(comparePrice(y.row[2], x.row[2]), strings.Compare(x.key, y.key))
		})
		lowest := group[len(group)-1].row[2]
		// Renumber a run of tied bids only if its ranks are the run's
		// positions in some order: a rank out of price order must still
		// show as a difference.
		renumber := make([]bool, len(group))
		for s := 0; s < len(group); {
			e := s + 1
			for e < len(group) && comparePrice(group[e].row[2], group[s].row[2]) == 0 {
				e++
			}
			var ranks []int64
			for _, g := range group[s:e] {
				ranks = append(ranks, toInt(g.row[len(g.row)-1]))
			}
			slices.Sort(ranks)
			ok := true
			for i, rk := range ranks {
				ok = ok && rk == int64(s+i+1)
			}
			for i := s; i < e; i++ {
				renumber[i] = ok
			}
			s = e
		}
		for i, g := range group {
			r := slices.Clone(g.row)
			if renumber[i] {
				r[len(r)-1] = int64(i + 1)
			}
			if len(group) == nexmark.Q19TopN && comparePrice(r[2], lowest) == 0 {
				for j := range r[:len(r)-1] {
					if j != 0 && j != 2 {
						r[j] = nil
					}
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// comparePrice orders two prices, whichever integer type a side holds.
func comparePrice(a, b any) int { return cmp.Compare(toInt(a), toInt(b)) }

// topTen is q19's final table from the bids that entered their auction's
// top 10: every bid of the final top 10 entered it, so the final top 10
// are the best 10 of those, ranked.
func topTen(rs []nexmark.Q19Result) [][]any {
	byAuction := map[int64][]nexmark.Bid{}
	for _, r := range rs {
		byAuction[r.Auction] = append(byAuction[r.Auction], r.Bid)
	}
	var out [][]any
	for _, bids := range byAuction {
		slices.SortFunc(bids, betterBid)
		for i, b := range bids[:min(len(bids), nexmark.Q19TopN)] {
			out = append(out, append(bidRow(b), int64(i+1)))
		}
	}
	return out
}

// bidsPerBidder reduces q12's rows (bidder, bid_count, starttime,
// endtime) to (bidder, bids in all windows).
func bidsPerBidder(rows [][]any) [][]any {
	sum := map[string]int64{}
	for _, r := range rows {
		sum[Canonical(r[0])] += toInt(r[1])
	}
	out := make([][]any, 0, len(sum))
	for _, k := range slices.Sorted(maps.Keys(sum)) {
		out = append(out, []any{k, sum[k]})
	}
	return out
}

func toInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int16:
		return int64(v)
	case int8:
		return int64(v)
	}
	return 0
}

// FinalTable applies a changelog: the rows that +I and +U add and -U and
// -D withdraw, as a multiset. A withdrawal of a row that is not there is
// an error.
func FinalTable(records []types.Record) ([][]any, error) {
	type entry struct {
		row []any
		n   int
	}
	table := map[string]*entry{}
	for i, r := range records {
		k := fmt.Sprint([]any(r.Row))
		switch r.Kind {
		case types.Insert, types.UpdateAfter:
			e := table[k]
			if e == nil {
				e = &entry{row: r.Row}
				table[k] = e
			}
			e.n++
		case types.UpdateBefore, types.Delete:
			e := table[k]
			if e == nil || e.n == 0 {
				return nil, fmt.Errorf("record %d: %s withdraws a row the table does not hold", i, r)
			}
			e.n--
		}
	}
	var out [][]any
	for _, k := range slices.Sorted(maps.Keys(table)) {
		for range table[k].n {
			out = append(out, table[k].row)
		}
	}
	return out, nil
}

// Canonical renders a value the same whichever side made it: integers of
// any width in decimal, timestamps as SQL prints them (UTC), decimals and
// floating-point numbers with 9 significant digits (Compare checks them
// with a tolerance), NULL as NULL.
func Canonical(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(v)
	case int64, int32, int16, int8:
		return strconv.FormatInt(toInt(v), 10)
	case float64:
		return strconv.FormatFloat(v, 'g', 9, 64)
	case types.Decimal:
		return strconv.FormatFloat(v.Float64(), 'g', 9, 64)
	case types.Timestamp:
		return time.UnixMilli(v.Millis).UTC().Format("2006-01-02 15:04:05.000")
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case types.Decimal:
		return v.Float64(), true
	}
	return 0, false
}

func canonicalRow(r []any) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = Canonical(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Compare compares two tables as multisets of rows in canonical form;
// floating-point and decimal values agree within the relative tolerance
// tol. It returns "" when they are equal, and otherwise the numbers of
// rows and the first rows that differ.
func Compare(got, want [][]any, tol float64) string {
	sorted := func(rows [][]any) ([]string, [][]any) {
		idx := make([]int, len(rows))
		keys := make([]string, len(rows))
		for i, r := range rows {
			idx[i], keys[i] = i, canonicalRow(r)
		}
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		ks, rs := make([]string, len(rows)), make([][]any, len(rows))
		for i, j := range idx {
			ks[i], rs[i] = keys[j], rows[j]
		}
		return ks, rs
	}
	gk, gr := sorted(got)
	wk, wr := sorted(want)
	var diffs []string
	i, j := 0, 0
	for (i < len(gk) || j < len(wk)) && len(diffs) < 5 {
		switch {
		case i < len(gk) && j < len(wk) && sameRow(gr[i], wr[j], tol):
			i++
			j++
		case j >= len(wk) || i < len(gk) && gk[i] < wk[j]:
			diffs = append(diffs, "unexpected "+gk[i])
			i++
		default:
			diffs = append(diffs, "missing    "+wk[j])
			j++
		}
	}
	if len(diffs) == 0 && len(gk) == len(wk) {
		return ""
	}
	return fmt.Sprintf("%d rows, want %d; first differences:\n  %s", len(gk), len(wk), strings.Join(diffs, "\n  "))
}

func sameRow(a, b []any, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		x, xok := number(a[k])
		y, yok := number(b[k])
		if xok && yok {
			if x != y && math.Abs(x-y) > tol*math.Max(math.Abs(x), math.Abs(y)) {
				return false
			}
			continue
		}
		if Canonical(a[k]) != Canonical(b[k]) {
			return false
		}
	}
	return true
}
