// Package nexmark is the SQL connector 'nexmark': the events of weir's
// nexmark package (its generator, split across subtasks as the DataStream
// source splits them) as the rows of the reference suite's table, the
// `datagen` table of nexmark-flink's ddl_gen.sql:
//
//	CREATE TABLE datagen (
//	    event_type INT,
//	    person ROW<id BIGINT, name VARCHAR, ...>,
//	    auction ROW<id BIGINT, itemName VARCHAR, ...>,
//	    bid ROW<auction BIGINT, bidder BIGINT, ...>,
//	    `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime` ... END,
//	    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
//	) WITH ('connector' = 'nexmark', 'events.num' = '1000000', ...);
//
// Event i of a table is Config.Event(i) of the configuration its options
// make (Options), so that a SQL query and a DataStream query of the
// nexmark package with the same configuration read the same events, and
// each subtask reads the same of them (every parallelism-th event).
//
// The package also holds the reference suite's SQL (Script) and the Go
// functions its queries call (RegisterFunctions).
package nexmark

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirproject/weir/internal/sql/catalog"
	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

func init() { planner.RegisterSource("nexmark", source) }

// The options of the connector: the reference's (NexmarkSourceOptions)
// and weir's generator's own.
const (
	OptEvents            = "events.num"
	OptFirstEventRate    = "first-event.rate"
	OptNextEventRate     = "next-event.rate"
	OptRateShape         = "rate.shape"
	OptRatePeriod        = "rate.period"
	OptMaxEmitSpeed      = "max-emit-speed"
	OptPersonProportion  = "person.proportion"
	OptAuctionProportion = "auction.proportion"
	OptBidProportion     = "bid.proportion"
	OptPersonAvgSize     = "person.avg-size"
	OptAuctionAvgSize    = "auction.avg-size"
	OptBidAvgSize        = "bid.avg-size"
	OptHotAuctions       = "bid.hot-ratio.auctions"
	OptHotBidders        = "bid.hot-ratio.bidders"
	OptHotSellers        = "auction.hot-ratio.sellers"
	// weir's: the generator's seed, its clock's start and the pools that
	// new auctions and bids pick people and auctions from.
	OptSeed             = "seed"
	OptBaseTime         = "base-time"
	OptActivePeople     = "people.active"
	OptInFlightAuctions = "auctions.in-flight"
)

var knownOptions = []string{OptEvents, OptFirstEventRate, OptNextEventRate, OptRateShape, OptRatePeriod, OptMaxEmitSpeed,
	OptPersonProportion, OptAuctionProportion, OptBidProportion, OptPersonAvgSize, OptAuctionAvgSize, OptBidAvgSize,
	OptHotAuctions, OptHotBidders, OptHotSellers, OptSeed, OptBaseTime, OptActivePeople, OptInFlightAuctions}

// Source describes what a nexmark table reads: the generator's
// configuration, the number of events (-1: unbounded) and whether the
// source paces itself to first-event.rate events per second of wall
// clock (max-emit-speed = false).
type Source struct {
	Config nexmark.Config
	Events int64
	Paced  bool
}

// Options reads a nexmark table's options (option name → value, as in a
// WITH clause). Options not given keep the defaults of the reference
// (nexmark.DefaultConfig); 'events.num' = '0', the reference's default,
// is unbounded.
func Options(opts map[string]string) (Source, error) {
	s := Source{Config: nexmark.DefaultConfig(), Events: -1}
	c := &s.Config
	errf := func(key, format string, args ...any) error {
		return fmt.Errorf("option '%s': %s", key, fmt.Sprintf(format, args...))
	}
	integer := func(key string, min int64, dst *int64) error {
		v, ok := opts[key]
		if !ok {
			return nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < min {
			return errf(key, "%q is not an integer of at least %d", v, min)
		}
		*dst = n
		return nil
	}
	small := func(key string, min int64, dst *int) error {
		n := int64(*dst)
		if err := integer(key, min, &n); err != nil {
			return err
		}
		if n > 1<<31-1 {
			return errf(key, "%d is too large", n)
		}
		*dst = int(n)
		return nil
	}
	size := func(key string, dst *int) error {
		v, ok := opts[key]
		if !ok {
			return nil
		}
		n, err := parseMemorySize(v)
		if err != nil {
			return errf(key, "%v", err)
		}
		*dst = int(n)
		return nil
	}
	events := int64(0)
	if err := integer(OptEvents, 0, &events); err != nil {
		return s, err
	}
	if events > 0 {
		s.Events = events
	}
	if err := integer(OptFirstEventRate, 1, &c.FirstEventRate); err != nil {
		return s, err
	}
	// weir's generator has one rate: the reference's rate shapes between
	// two rates have no equivalent, and with equal rates they change
	// nothing.
	next := c.FirstEventRate
	if err := integer(OptNextEventRate, 1, &next); err != nil {
		return s, err
	}
	if next != c.FirstEventRate {
		return s, errf(OptNextEventRate, "%d differs from '%s' (%d): the generator has one event rate", next, OptFirstEventRate, c.FirstEventRate)
	}
	if v, ok := opts[OptRateShape]; ok && !strings.EqualFold(v, "square") && !strings.EqualFold(v, "sine") {
		return s, errf(OptRateShape, "%q is not SQUARE or SINE", v)
	}
	if v, ok := opts[OptMaxEmitSpeed]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return s, errf(OptMaxEmitSpeed, "%q is not true or false", v)
		}
		s.Paced = !b
	}
	for _, o := range []struct {
		key string
		dst *int64
		min int64
	}{
		{OptPersonProportion, &c.PersonProportion, 0}, {OptAuctionProportion, &c.AuctionProportion, 0}, {OptBidProportion, &c.BidProportion, 0},
		{OptActivePeople, &c.NumActivePeople, 1}, {OptInFlightAuctions, &c.NumInFlightAuctions, 1},
	} {
		if err := integer(o.key, o.min, o.dst); err != nil {
			return s, err
		}
	}
	if c.PersonProportion+c.AuctionProportion+c.BidProportion == 0 {
		return s, errf(OptPersonProportion, "the proportions of people, auctions and bids are all 0")
	}
	for _, o := range []struct {
		key string
		dst *int
	}{{OptHotAuctions, &c.HotAuctionRatio}, {OptHotBidders, &c.HotBiddersRatio}, {OptHotSellers, &c.HotSellersRatio}} {
		if err := small(o.key, 1, o.dst); err != nil {
			return s, err
		}
	}
	for _, o := range []struct {
		key string
		dst *int
	}{{OptPersonAvgSize, &c.AvgPersonByteSize}, {OptAuctionAvgSize, &c.AvgAuctionByteSize}, {OptBidAvgSize, &c.AvgBidByteSize}} {
		if err := size(o.key, o.dst); err != nil {
			return s, err
		}
	}
	if v, ok := opts[OptSeed]; ok {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return s, errf(OptSeed, "%q is not a non-negative integer", v)
		}
		c.Seed = n
	}
	if v, ok := opts[OptBaseTime]; ok {
		ms, err := parseBaseTime(v)
		if err != nil {
			return s, errf(OptBaseTime, "%v", err)
		}
		c.BaseTime = ms
	}
	return s, nil
}

// parseBaseTime reads milliseconds since the epoch, or a UTC timestamp
// as SQL writes it ('2023-11-14 22:13:20' or RFC 3339).
func parseBaseTime(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%q is neither milliseconds since the epoch nor a timestamp such as '2023-11-14 22:13:20'", v)
}

// parseMemorySize reads Flink's memory sizes: "200b", "1 kb", "2m", "100".
func parseMemorySize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	mult, ok := map[string]int64{"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20}[unit]
	if err != nil || !ok || n < 0 || n*mult > 1<<30 {
		return 0, fmt.Errorf("%q is not a memory size such as 200b, 1kb or 1mb (up to 1gb)", v)
	}
	return n * mult, nil
}

// Event types, the values of the event_type column.
const (
	PersonType  = int32(nexmark.PersonKind)
	AuctionType = int32(nexmark.AuctionKind)
	BidType     = int32(nexmark.BidKind)
)

// field is a ROW field the connector fills: its type and its value.
type field[T any] struct {
	t   types.DataType
	get func(*T) any
}

func ts(ms int64) any { return types.Timestamp{Millis: ms} }

var (
	bigint = types.BigInt()
	str    = types.String()
	time3  = types.TimestampType(3)
)

var personFields = map[string]field[nexmark.Person]{
	"id":           {bigint, func(p *nexmark.Person) any { return p.ID }},
	"name":         {str, func(p *nexmark.Person) any { return p.Name }},
	"emailaddress": {str, func(p *nexmark.Person) any { return p.EmailAddress }},
	"creditcard":   {str, func(p *nexmark.Person) any { return p.CreditCard }},
	"city":         {str, func(p *nexmark.Person) any { return p.City }},
	"state":        {str, func(p *nexmark.Person) any { return p.State }},
	"datetime":     {time3, func(p *nexmark.Person) any { return ts(p.DateTime) }},
	"extra":        {str, func(p *nexmark.Person) any { return p.Extra }},
}

var auctionFields = map[string]field[nexmark.Auction]{
	"id":          {bigint, func(a *nexmark.Auction) any { return a.ID }},
	"itemname":    {str, func(a *nexmark.Auction) any { return a.ItemName }},
	"description": {str, func(a *nexmark.Auction) any { return a.Description }},
	"initialbid":  {bigint, func(a *nexmark.Auction) any { return a.InitialBid }},
	"reserve":     {bigint, func(a *nexmark.Auction) any { return a.Reserve }},
	"datetime":    {time3, func(a *nexmark.Auction) any { return ts(a.DateTime) }},
	"expires":     {time3, func(a *nexmark.Auction) any { return ts(a.Expires) }},
	"seller":      {bigint, func(a *nexmark.Auction) any { return a.Seller }},
	"category":    {bigint, func(a *nexmark.Auction) any { return a.Category }},
	"extra":       {str, func(a *nexmark.Auction) any { return a.Extra }},
}

var bidFields = map[string]field[nexmark.Bid]{
	"auction":  {bigint, func(b *nexmark.Bid) any { return b.Auction }},
	"bidder":   {bigint, func(b *nexmark.Bid) any { return b.Bidder }},
	"price":    {bigint, func(b *nexmark.Bid) any { return b.Price }},
	"channel":  {str, func(b *nexmark.Bid) any { return b.Channel }},
	"url":      {str, func(b *nexmark.Bid) any { return b.URL }},
	"datetime": {time3, func(b *nexmark.Bid) any { return ts(b.DateTime) }},
	"extra":    {str, func(b *nexmark.Bid) any { return b.Extra }},
}

// rowGetter makes the function that turns a person, auction or bid into
// the value of a ROW column: the fields the column declares, by name
// (case-insensitively, in any order, any subset).
func rowGetter[T any](t *catalog.Table, col catalog.Column, known map[string]field[T]) (func(*T) any, error) {
	if col.Type.Kind != types.KindRow {
		return nil, fmt.Errorf("table %s: column %s has type %s, want a ROW of the %s's fields", t.Path, col.Name, col.Type, col.Name)
	}
	gets := make([]func(*T) any, len(col.Type.Fields))
	for i, f := range col.Type.Fields {
		k, ok := known[strings.ToLower(f.Name)]
		if !ok {
			return nil, fmt.Errorf("table %s: column %s has a field %s that the %s has not (fields: %s)", t.Path, col.Name, f.Name, col.Name, fieldNames(known))
		}
		if !compatible(k.t, f.Type) {
			return nil, fmt.Errorf("table %s: field %s.%s has type %s, want %s", t.Path, col.Name, f.Name, f.Type, k.t)
		}
		gets[i] = k.get
	}
	return func(v *T) any {
		row := make(types.Row, len(gets))
		for i, g := range gets {
			row[i] = g(v)
		}
		return row
	}, nil
}

// compatible says whether a declared type holds the generator's values
// as they are: BIGINT, a string type, or TIMESTAMP(3). Lengths of string
// types are not enforced, as in Flink, where the reference's VARCHAR
// fields hold strings of any length.
func compatible(want, got types.DataType) bool {
	switch want.Kind {
	case types.KindVarChar:
		return got.Kind.IsCharacterString()
	case types.KindTimestamp:
		return got.Kind == types.KindTimestamp && got.Precision == 3
	}
	return got.Kind == want.Kind
}

func fieldNames[T any](m map[string]field[T]) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// source is the connector's SourceFactory.
func source(c *planner.TableContext) (*planner.Rows, error) {
	t := c.Table
	if err := c.CheckOptions(knownOptions); err != nil {
		return nil, err
	}
	s, err := Options(t.Options)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Path, err)
	}
	row, err := rowMaker(t)
	if err != nil {
		return nil, err
	}
	cfg := s.Config
	fn := func(i int64) types.Record { return types.Record{Kind: types.Insert, Row: row(cfg.Event(i))} }
	if s.Paced {
		// As the reference with max-emit-speed off: event i leaves when
		// the wall clock has run as long since the start as the
		// generator's clock since event 0.
		var start atomic.Int64
		inner := fn
		fn = func(i int64) types.Record {
			st := start.Load()
			if st == 0 {
				start.CompareAndSwap(0, time.Now().UnixMilli())
				st = start.Load()
			}
			if d := time.Duration(st+cfg.Timestamp(i)-cfg.BaseTime-time.Now().UnixMilli()) * time.Millisecond; d > 0 {
				time.Sleep(d)
			}
			return inner(i)
		}
	}
	gen := &stream.Generator[types.Record]{Count: s.Events, Fn: fn, Timestamps: cfg.Timestamp}
	return c.Rows(stream.FromSource[types.Record](c.Env, gen, c.Name()).UID(c.UID("nexmark"))), nil
}

// rowMaker checks the table's physical columns and returns the function
// that makes the row of an event: a value at every column position, NULL
// at the computed ones (the planner computes them) and at the ROW
// columns of the other kinds of events.
func rowMaker(t *catalog.Table) (func(nexmark.Event) types.Row, error) {
	width := len(t.Columns)
	typeAt, personAt, auctionAt, bidAt := -1, -1, -1, -1
	var person func(*nexmark.Person) any
	var auction func(*nexmark.Auction) any
	var bid func(*nexmark.Bid) any
	for i, col := range t.Columns {
		if col.Kind != catalog.Physical {
			continue
		}
		var err error
		switch strings.ToLower(col.Name) {
		case "event_type":
			if k := col.Type.Kind; k != types.KindInt && k != types.KindBigInt && k != types.KindTinyInt && k != types.KindSmallInt {
				return nil, fmt.Errorf("table %s: column event_type has type %s, want INT", t.Path, col.Type)
			}
			typeAt = i
		case "person":
			personAt = i
			person, err = rowGetter(t, col, personFields)
		case "auction":
			auctionAt = i
			auction, err = rowGetter(t, col, auctionFields)
		case "bid":
			bidAt = i
			bid, err = rowGetter(t, col, bidFields)
		default:
			return nil, fmt.Errorf("table %s: the nexmark connector has no column %s (it has event_type, person, auction and bid)", t.Path, col.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	var typeKind types.Kind
	if typeAt >= 0 {
		typeKind = t.Columns[typeAt].Type.Kind
	}
	return func(e nexmark.Event) types.Row {
		row := make(types.Row, width)
		if typeAt >= 0 {
			row[typeAt] = types.NarrowInt(int64(e.Kind), typeKind)
		}
		switch e.Kind {
		case nexmark.PersonKind:
			if personAt >= 0 {
				row[personAt] = person(e.Person)
			}
		case nexmark.AuctionKind:
			if auctionAt >= 0 {
				row[auctionAt] = auction(e.Auction)
			}
		default:
			if bidAt >= 0 {
				row[bidAt] = bid(e.Bid)
			}
		}
		return row
	}, nil
}
