package nexmark

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirproject/weir/stream"
)

// The stateless queries of the extended suite (q10, q13, q14, q21, q22):
// per-bid projections, filters and lookups. Each computes its row with a
// function that the loops share, as Q1 and LoopQ1 share q1Convert; the
// tests check those functions against independent brute-force code.

const (
	msPerHour = int64(time.Hour / time.Millisecond)
	msPerDay  = 24 * msPerHour
)

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// utc is a time of this package (milliseconds since the epoch) in UTC: the
// reference DDL declares dateTime a TIMESTAMP(3) without time zone, so
// DATE_FORMAT and HOUR see it as it is, whatever the local zone.
func utc(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Q10Result is a bid with the partition columns of the reference sink:
// its day (yyyy-MM-dd) and minute (HH:mm).
type Q10Result struct {
	Auction  int64
	Bidder   int64
	Price    int64
	DateTime int64
	Extra    string
	Dt       string
	Hm       string
}

// Q10 is log to file system: every bid with the day and minute that the
// reference query partitions its files by. The reference writes
// partitioned CSV files and commits partitions on processing time; here
// the columns are computed and the sink (a Blackhole, or --output) gets
// the rows, so the query measures the projection and its date formatting.
func Q10(events *stream.Stream[Event]) *stream.Stream[Q10Result] {
	return stream.Map(events.Filter(Event.IsBid).Name("bids"), func(e Event) Q10Result { return q10Row(e.Bid) }).Name("q10-partition")
}

func q10Row(b *Bid) Q10Result {
	t := utc(b.DateTime)
	return Q10Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra,
		Dt: t.Format(time.DateOnly), Hm: t.Format("15:04")}
}

// Q13Keys is the key space of Q13's side input: bids look up their
// auction ID modulo Q13Keys, as the reference query's mod(auction, 10000).
const Q13Keys = 10_000

// Q13SideInput is the bounded side input of Q13, made in code in place of
// the reference's side_input.txt: a value for every key below Q13Keys
// except those ending in 9, so that the inner join also drops bids.
var Q13SideInput = sync.OnceValue(func() map[int64]string {
	m := make(map[int64]string, Q13Keys)
	for k := int64(0); k < Q13Keys; k++ {
		if k%10 != 9 {
			m[k] = "side-" + strconv.FormatInt(k*7919%Q13Keys, 10)
		}
	}
	return m
})

// Q13Result is a bid with the side input's value for its auction.
type Q13Result struct {
	Auction  int64
	Bidder   int64
	Price    int64
	DateTime int64
	Value    string
}

// Q13 is bounded side input join: every bid whose auction ID modulo
// 10,000 has a value in the side input, with that value. The reference
// joins FOR SYSTEM_TIME AS OF the bid's processing time with a lookup
// table that never changes, so the join is a lookup in a table that every
// subtask loads when it opens.
func Q13(events *stream.Stream[Event]) *stream.Stream[Q13Result] {
	return stream.Process(events.Filter(Event.IsBid).Name("bids"), &q13Lookup{}).Name("q13-side-input-join")
}

type q13Lookup struct {
	side map[int64]string
}

func (q *q13Lookup) Open(*stream.Context) error {
	q.side = Q13SideInput()
	return nil
}

func (q *q13Lookup) ProcessElement(e Event, _ *stream.Context, out stream.Collector[Q13Result]) error {
	if r, ok := q13Join(q.side, e.Bid); ok {
		out.Collect(r)
	}
	return nil
}

func q13Join(side map[int64]string, b *Bid) (Q13Result, bool) {
	v, ok := side[floorMod(b.Auction, Q13Keys)]
	if !ok {
		return Q13Result{}, false
	}
	return Q13Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Value: v}, true
}

// Q14Result is a bid with its price in euros, the part of the day it was
// made in and the number of 'c' in its extra field.
type Q14Result struct {
	Auction     int64
	Bidder      int64
	Price       float64
	BidTimeType string
	DateTime    int64
	Extra       string
	CCounts     int64
}

// Q14 is calculation: the bids whose price in euros is strictly between
// 1,000,000 and 50,000,000 (cents), converted, with "dayTime" for the
// hours 8 to 18 (UTC), "nightTime" for 20 to 6 and "otherTime" for 7 and
// 19, and the count of 'c' in extra (the reference's count_char UDF).
func Q14(events *stream.Stream[Event]) *stream.Stream[Q14Result] {
	return stream.FlatMap(events.Filter(Event.IsBid).Name("bids"), func(e Event, out stream.Collector[Q14Result]) {
		if r, ok := q14Row(e.Bid); ok {
			out.Collect(r)
		}
	}).Name("q14-calculate")
}

func q14Row(b *Bid) (Q14Result, bool) {
	price := DollarToEuro * float64(b.Price)
	if price <= 1_000_000 || price >= 50_000_000 {
		return Q14Result{}, false
	}
	return Q14Result{Auction: b.Auction, Bidder: b.Bidder, Price: price, BidTimeType: bidTimeType(b.DateTime),
		DateTime: b.DateTime, Extra: b.Extra, CCounts: int64(strings.Count(b.Extra, "c"))}, true
}

func bidTimeType(ms int64) string {
	switch h := floorMod(ms, msPerDay) / msPerHour; {
	case h >= 8 && h <= 18:
		return "dayTime"
	case h <= 6 || h >= 20:
		return "nightTime"
	}
	return "otherTime"
}

// Q21Result is a bid with the ID of its channel.
type Q21Result struct {
	Auction   int64
	Bidder    int64
	Price     int64
	Channel   string
	ChannelID string
}

// Q21 is add channel ID: the bids of the four named channels (Apple,
// Google, Facebook and Baidu: IDs 0 to 3, compared case-insensitively)
// and of every other channel whose URL has a channel_id parameter (the
// reference's REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)), with
// that ID; the others are dropped.
func Q21(events *stream.Stream[Event]) *stream.Stream[Q21Result] {
	return stream.FlatMap(events.Filter(Event.IsBid).Name("bids"), func(e Event, out stream.Collector[Q21Result]) {
		if r, ok := q21Row(e.Bid); ok {
			out.Collect(r)
		}
	}).Name("q21-channel-id")
}

var q21Named = [...]string{"apple", "google", "facebook", "baidu"}

func q21Row(b *Bid) (Q21Result, bool) {
	r := Q21Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel}
	for i, c := range q21Named {
		if strings.EqualFold(b.Channel, c) {
			r.ChannelID = strconv.Itoa(i)
			return r, true
		}
	}
	id, ok := urlChannelID(b.URL)
	r.ChannelID = id
	return r, ok
}

// urlChannelID is the value of the first channel_id parameter of url that
// starts the string or follows an '&', up to the next '&': the leftmost
// match of the reference's regular expression, without one.
func urlChannelID(url string) (string, bool) {
	const param = "channel_id="
	v, ok := strings.CutPrefix(url, param)
	if !ok {
		i := strings.Index(url, "&"+param)
		if i < 0 {
			return "", false
		}
		v = url[i+1+len(param):]
	}
	if j := strings.IndexByte(v, '&'); j >= 0 {
		v = v[:j]
	}
	return v, true
}

// Q22Result is a bid with the first three directories of its URL's path.
type Q22Result struct {
	Auction int64
	Bidder  int64
	Price   int64
	Channel string
	Dir1    string
	Dir2    string
	Dir3    string
}

// Q22 is get URL directories: every bid with the fields 3, 4 and 5
// (counting from 0) of its URL split at '/', as the reference's
// SPLIT_INDEX(url, '/', i); a field the URL does not have (SQL's NULL) is
// the empty string.
func Q22(events *stream.Stream[Event]) *stream.Stream[Q22Result] {
	return stream.Map(events.Filter(Event.IsBid).Name("bids"), func(e Event) Q22Result { return q22Row(e.Bid) }).Name("q22-url-directories")
}

func q22Row(b *Bid) Q22Result {
	return Q22Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel,
		Dir1: splitIndex(b.URL, '/', 3), Dir2: splitIndex(b.URL, '/', 4), Dir3: splitIndex(b.URL, '/', 5)}
}

// splitIndex is field i of s split at sep, or "" if s has fewer fields,
// without splitting the whole string.
func splitIndex(s string, sep byte, i int) string {
	for ; i > 0; i-- {
		j := strings.IndexByte(s, sep)
		if j < 0 {
			return ""
		}
		s = s[j+1:]
	}
	if j := strings.IndexByte(s, sep); j >= 0 {
		s = s[:j]
	}
	return s
}
