package nexmark_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	sqlnexmark "github.com/weirproject/weir/internal/sql/connectors/nexmark"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/table"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOptions(t *testing.T) {
	s, err := sqlnexmark.Options(map[string]string{})
	if err != nil || s.Config != nexmark.DefaultConfig() || s.Events != -1 || s.Paced {
		t.Fatalf("no options: %+v, %v; want the default configuration, unbounded", s, err)
	}
	s, err = sqlnexmark.Options(map[string]string{
		"events.num": "123", "first-event.rate": "500", "next-event.rate": "500", "max-emit-speed": "false",
		"person.proportion": "2", "auction.proportion": "5", "bid.proportion": "40",
		"person.avg-size": "1kb", "auction.avg-size": "300", "bid.avg-size": "64b",
		"bid.hot-ratio.auctions": "3", "bid.hot-ratio.bidders": "5", "auction.hot-ratio.sellers": "6",
		"seed": "7", "base-time": "2024-01-02 03:04:05", "people.active": "50", "auctions.in-flight": "20",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := nexmark.Config{Seed: 7, FirstEventRate: 500, BaseTime: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli(),
		PersonProportion: 2, AuctionProportion: 5, BidProportion: 40, NumActivePeople: 50, NumInFlightAuctions: 20,
		HotAuctionRatio: 3, HotSellersRatio: 6, HotBiddersRatio: 5, AvgPersonByteSize: 1024, AvgAuctionByteSize: 300, AvgBidByteSize: 64}
	if s.Config != want || s.Events != 123 || !s.Paced {
		t.Errorf("got %+v (%d events, paced %v), want %+v (123, paced)", s.Config, s.Events, s.Paced, want)
	}
	for opts, msg := range map[[2]string]string{
		{"next-event.rate", "20"}:      "option 'next-event.rate': 20 differs from 'first-event.rate' (10000)",
		{"events.num", "-1"}:           "option 'events.num': \"-1\" is not an integer of at least 0",
		{"first-event.rate", "x"}:      "option 'first-event.rate': \"x\" is not an integer of at least 1",
		{"bid.avg-size", "1tb"}:        "option 'bid.avg-size': \"1tb\" is not a memory size",
		{"base-time", "yesterday"}:     "option 'base-time': \"yesterday\" is neither",
		{"max-emit-speed", "fast"}:     "option 'max-emit-speed': \"fast\" is not true or false",
		{"bid.hot-ratio.bidders", "0"}: "option 'bid.hot-ratio.bidders': \"0\" is not an integer of at least 1",
	} {
		_, err := sqlnexmark.Options(map[string]string{opts[0]: opts[1]})
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s = %s: error %v, want %q", opts[0], opts[1], err, msg)
		}
	}
}

func run(t *testing.T, stmts ...string) (*table.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tenv := table.NewEnvironment()
	var res *table.Result
	for _, s := range stmts {
		var err error
		if res, err = tenv.ExecuteSQL(ctx, s); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func ddl(t *testing.T, rate, n int64, extra string) string {
	t.Helper()
	gen, err := sqlnexmark.File("ddl_gen.sql")
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("${TPS}", itoa(rate), "${EVENTS_NUM}", itoa(n), "${PERSON_PROPORTION}", "1",
		"${AUCTION_PROPORTION}", "3", "${BID_PROPORTION}", "46")
	return strings.Replace(r.Replace(gen), "'bid.proportion' = '46'", "'bid.proportion' = '46'"+extra, 1)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The table's rows are the generator's events, at parallelism 2, each
// once, with the reference's computed dateTime.
func TestRowsAreTheGeneratorsEvents(t *testing.T) {
	const n = 3000
	res, err := run(t, "SET 'parallelism.default' = '2'", ddl(t, 2000, n, ", 'seed' = '3'"),
		"SELECT event_type, person.id, person.name, auction.id, auction.expires, bid.auction, bid.price, bid.url, `dateTime` FROM datagen")
	if err != nil {
		t.Fatal(err)
	}
	c := nexmark.DefaultConfig()
	c.FirstEventRate, c.Seed = 2000, 3
	want := map[string]int{}
	for e := range c.All(n) {
		row := make([]any, 9)
		row[0] = int32(e.Kind)
		switch e.Kind {
		case nexmark.PersonKind:
			row[1], row[2] = e.Person.ID, e.Person.Name
		case nexmark.AuctionKind:
			row[3], row[4] = e.Auction.ID, types.Timestamp{Millis: e.Auction.Expires}
		default:
			row[5], row[6], row[7] = e.Bid.Auction, e.Bid.Price, e.Bid.URL
		}
		row[8] = types.Timestamp{Millis: e.Timestamp()}
		want[types.Record{Kind: types.Insert, Row: row}.String()]++
	}
	if len(res.Rows) != n {
		t.Fatalf("%d rows, want %d", len(res.Rows), n)
	}
	for _, r := range res.Rows {
		k := r.String()
		if want[k] == 0 {
			t.Fatalf("row %s is not one of the generator's events", k)
		}
		want[k]--
	}
}

func TestTableErrors(t *testing.T) {
	for _, c := range []struct{ ddl, want string }{
		{ddl(t, 100, 10, ", 'speed' = 'fast'"), "unsupported options for connector 'nexmark': speed"},
		{strings.Replace(ddl(t, 100, 10, ""), "'events.num' = '10'", "'events.num' = 'ten'", 1), "option 'events.num': \"ten\" is not an integer"},
		{"CREATE TABLE datagen (event_type INT, nope BIGINT) WITH ('connector' = 'nexmark')", "the nexmark connector has no column nope"},
		{"CREATE TABLE datagen (bid ROW<price BIGINT, colour VARCHAR>) WITH ('connector' = 'nexmark')", "column bid has a field colour that the bid has not"},
		{"CREATE TABLE datagen (bid ROW<price INT>) WITH ('connector' = 'nexmark')", "field bid.price has type INT, want BIGINT"},
		{"CREATE TABLE datagen (bid BIGINT) WITH ('connector' = 'nexmark')", "column bid has type BIGINT, want a ROW"},
	} {
		_, err := run(t, c.ddl, "SELECT * FROM datagen")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.ddl[:min(len(c.ddl), 60)], err, c.want)
		}
	}
}

// Script gives statements that parse, with no placeholder left and the
// result table's options replaced.
func TestScript(t *testing.T) {
	src, _ := sqlnexmark.Options(map[string]string{"events.num": "10", "seed": "9"})
	for _, q := range sqlnexmark.QueryNames() {
		s, err := sqlnexmark.Script(q, sqlnexmark.ScriptOptions{Source: src, SideInput: "/tmp/side.csv",
			Sink: map[string]string{"connector": "print", "print-identifier": q}})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if strings.Contains(s, "${") || strings.Contains(s, "'blackhole'") || !strings.Contains(s, "'print-identifier' = '"+q+"'") || !strings.Contains(s, "'seed' = '9'") {
			t.Errorf("%s: script not adapted:\n%s", q, s)
		}
		if _, err := parser.ParseScript(s); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if _, err := sqlnexmark.Script("q99", sqlnexmark.ScriptOptions{}); err == nil {
		t.Error("q99 gave a script")
	}
}
