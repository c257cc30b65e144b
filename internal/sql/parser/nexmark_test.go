package parser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readNexmark reads a Nexmark query file, substituting the one placeholder
// outside string literals as the Nexmark runner does.
func readNexmark(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range nexmarkDirs {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return strings.ReplaceAll(string(b), "${NEXMARK_TABLE}", "datagen")
		}
	}
	t.Fatalf("no Nexmark file %s in %v", name, nexmarkDirs)
	return ""
}

// nexmarkDirs hold the reference suite's files: those the nexmark SQL
// connector runs, and here only the suite's other variants (Kafka DDL,
// ddl_gen_v2, q23), which are parsed but not run.
var nexmarkDirs = []string{"../connectors/nexmark/queries", "testdata/nexmark"}

// nexmarkFiles lists the suite's files in both directories.
func nexmarkFiles() []string {
	var files []string
	for _, dir := range nexmarkDirs {
		fs, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
		files = append(files, fs...)
	}
	return files
}

// The statement kinds of each file, read off the files by hand.
var nexmarkKinds = map[string]string{
	"ddl_gen.sql": "CreateTable", "ddl_gen_v2.sql": "CreateTable", "ddl_kafka.sql": "CreateTable",
	"ddl_views.sql": "CreateView CreateView CreateView", "insert_kafka.sql": "Insert",
	"q0.sql": "CreateTable Insert", "q1.sql": "CreateTable Insert", "q2.sql": "CreateTable Insert",
	"q3.sql": "CreateTable Insert", "q4.sql": "CreateTable Insert", "q5.sql": "CreateTable Insert",
	"q6.sql": "CreateTable Insert", "q7.sql": "CreateTable Insert", "q8.sql": "CreateTable Insert",
	"q9.sql": "CreateTable Insert", "q10.sql": "CreateTable Insert", "q11.sql": "CreateTable Insert",
	"q12.sql": "CreateTable CreateView Insert", "q13.sql": "CreateTable CreateTable Insert",
	"q14.sql": "CreateFunction CreateTable Insert", "q15.sql": "CreateTable Insert",
	"q16.sql": "CreateTable Insert", "q17.sql": "CreateTable Insert", "q18.sql": "CreateTable Insert",
	"q19.sql": "CreateTable Insert", "q20.sql": "CreateTable Insert", "q21.sql": "CreateTable Insert",
	"q22.sql": "CreateTable Insert", "q23.sql": "CreateTable Insert",
}

func TestNexmarkParsesAndRoundTrips(t *testing.T) {
	files := nexmarkFiles()
	if len(files) != len(nexmarkKinds) {
		t.Fatalf("found %d query files, want %d", len(files), len(nexmarkKinds))
	}
	for _, path := range files {
		name := filepath.Base(path)
		src := readNexmark(t, name)
		stmts, err := ParseScript(src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var kinds []string
		for _, s := range stmts {
			kinds = append(kinds, strings.TrimPrefix(strings.TrimPrefix(typeName(s), "*parser."), "*"))
			if !strings.Contains(src, s.SourceText()) || src[s.Pos().Offset:s.Pos().Offset+len(s.SourceText())] != s.SourceText() {
				t.Errorf("%s: statement text does not match the source at its offset", name)
			}
			checkRoundTrip(t, s)
		}
		if got := strings.Join(kinds, " "); got != nexmarkKinds[name] {
			t.Errorf("%s: statements %s, want %s", name, got, nexmarkKinds[name])
		}
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *CreateTable:
		return "CreateTable"
	case *CreateView:
		return "CreateView"
	case *CreateFunction:
		return "CreateFunction"
	case *Insert:
		return "Insert"
	}
	return "other"
}

func nexmarkInsert(t *testing.T, name string) *Select {
	t.Helper()
	stmts, err := ParseScript(readNexmark(t, name))
	if err != nil {
		t.Fatal(err)
	}
	ins := stmts[len(stmts)-1].(*Insert)
	return ins.Query.(*Select)
}

func TestNexmarkSpotChecks(t *testing.T) {
	// q5: two HOP window aggregations joined.
	q5 := nexmarkInsert(t, "q5.sql")
	join := q5.From.(*Join)
	if join.Type != InnerJoin {
		t.Errorf("q5 join type %s", join.Type)
	}
	auctionBids := join.Left.(*DerivedTable)
	if auctionBids.Alias.Name != "AuctionBids" {
		t.Errorf("q5 left alias %q", auctionBids.Alias.Name)
	}
	inner := auctionBids.Query.(*Select)
	if got, want := sx(inner.From), "(HOP data=bid timecol=dateTime size=(interval '10' SECOND) slide=(interval '2' SECOND))"; got != want {
		t.Errorf("q5 TVF\n got  %s\n want %s", got, want)
	}
	if got, want := sxList(inner.GroupBy), "auction window_start window_end"; got != want {
		t.Errorf("q5 GROUP BY %s", got)
	}
	if got, want := sx(join.On), "(AND (AND (= AuctionBids.starttime MaxBids.starttime) (= AuctionBids.endtime MaxBids.endtime)) (>= AuctionBids.num MaxBids.maxn))"; got != want {
		t.Errorf("q5 ON\n got  %s\n want %s", got, want)
	}

	// q7: TUMBLE max joined back to the bids of the window.
	q7 := nexmarkInsert(t, "q7.sql")
	if got, want := sx(q7.From), "(INNER bid AS B (DERIVED (SELECT (call MAX price)@maxprice window_end@dateTime FROM (TUMBLE data=bid timecol=dateTime size=(interval '10' SECOND)) GROUP window_start window_end) AS B1) ON (= B.price B1.maxprice))"; got != want {
		t.Errorf("q7 FROM\n got  %s\n want %s", got, want)
	}
	if got, want := sx(q7.Where), "(BETWEEN B.dateTime (- B1.dateTime (interval '10' SECOND)) B1.dateTime)"; got != want {
		t.Errorf("q7 WHERE\n got  %s\n want %s", got, want)
	}

	// q13: processing-time temporal join against the side input.
	q13 := nexmarkInsert(t, "q13.sql")
	j13 := q13.From.(*Join)
	if got, want := sx(j13.Right), "side_input asof=B.p_time AS S"; got != want {
		t.Errorf("q13 right\n got  %s\n want %s", got, want)
	}
	if got, want := sx(j13.On), "(= (call mod B.auction integer:10000) S.key)"; got != want {
		t.Errorf("q13 ON %s", got)
	}
	if got, want := sx(j13.Left), "(DERIVED (SELECT * (call PROCTIME)@p_time FROM bid) AS B)"; got != want {
		t.Errorf("q13 left %s", got)
	}

	// q19: Top-N with ROW_NUMBER.
	q19 := nexmarkInsert(t, "q19.sql")
	sub := q19.From.(*DerivedTable).Query.(*Select)
	if got, want := sx(sub.Items[1].Expr), "(call ROW_NUMBER over {partition=auction; order=[price DESC]})"; got != want || sub.Items[1].Alias != "rank_number" {
		t.Errorf("q19 ROW_NUMBER %s AS %s", got, sub.Items[1].Alias)
	}
	if got, want := sx(q19.Where), "(<= rank_number integer:10)"; got != want {
		t.Errorf("q19 WHERE %s", got)
	}

	// q11: legacy group window in GROUP BY.
	q11 := nexmarkInsert(t, "q11.sql")
	if got, want := sxList(q11.GroupBy), "B.bidder (call SESSION B.dateTime (interval '10' SECOND))"; got != want {
		t.Errorf("q11 GROUP BY %s", got)
	}

	// ddl_gen: the generator table.
	stmts, err := ParseScript(readNexmark(t, "ddl_gen.sql"))
	if err != nil {
		t.Fatal(err)
	}
	ct := stmts[0].(*CreateTable)
	var cols []string
	for _, c := range ct.Schema.Columns {
		if c.Kind == ComputedColumn {
			cols = append(cols, c.Name+"=computed")
		} else {
			cols = append(cols, c.Name+":"+sxType(c.Type))
		}
	}
	want := "event_type:INT " +
		"person:ROW<id BIGINT,name VARCHAR,emailAddress VARCHAR,creditCard VARCHAR,city VARCHAR,state VARCHAR,dateTime TIMESTAMP(3),extra VARCHAR> " +
		"auction:ROW<id BIGINT,itemName VARCHAR,description VARCHAR,initialBid BIGINT,reserve BIGINT,dateTime TIMESTAMP(3),expires TIMESTAMP(3),seller BIGINT,category BIGINT,extra VARCHAR> " +
		"bid:ROW<auction BIGINT,bidder BIGINT,price BIGINT,channel VARCHAR,url VARCHAR,dateTime TIMESTAMP(3),extra VARCHAR> " +
		"dateTime=computed"
	if got := strings.Join(cols, " "); got != want {
		t.Errorf("ddl_gen columns\n got  %s\n want %s", got, want)
	}
	if got, want := sx(ct.Schema.Columns[4].Expr), "(CASE (WHEN (= event_type integer:0) person.dateTime) (WHEN (= event_type integer:1) auction.dateTime) (ELSE bid.dateTime))"; got != want {
		t.Errorf("ddl_gen computed column %s", got)
	}
	if got, want := sx(ct.Schema.Watermark.Column)+" "+sx(ct.Schema.Watermark.Expr), "dateTime (- dateTime (interval '4' SECOND))"; got != want {
		t.Errorf("ddl_gen watermark %s", got)
	}
	if len(ct.Options) != 7 || ct.Options[0].Key != "connector" || ct.Options[0].Value != "nexmark" || ct.Options[1].Value != "${TPS}" {
		t.Errorf("ddl_gen options %v", Format(ct))
	}

	// q10: partitioned filesystem sink.
	stmts, err = ParseScript(readNexmark(t, "q10.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stmts[0].(*CreateTable).PartitionBy, ","); got != "dt,hm" {
		t.Errorf("q10 PARTITIONED BY %s", got)
	}
}

// Without the runner's substitution, ddl_views.sql is not SQL: the error
// points at the placeholder.
func TestNexmarkUnsubstituted(t *testing.T) {
	b, err := os.ReadFile("../connectors/nexmark/queries/ddl_views.sql")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseScript(string(b))
	want := "line 11, column 6: unexpected character '$'"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func BenchmarkParseNexmark(b *testing.B) {
	files := nexmarkFiles()
	var srcs []string
	size := 0
	for _, f := range files {
		s := readNexmark(b, filepath.Base(f))
		srcs = append(srcs, s)
		size += len(s)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range srcs {
			if _, err := ParseScript(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkFormatNexmark(b *testing.B) {
	files := nexmarkFiles()
	var stmts []Statement
	for _, f := range files {
		ss, err := ParseScript(readNexmark(b, filepath.Base(f)))
		if err != nil {
			b.Fatal(err)
		}
		stmts = append(stmts, ss...)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range stmts {
			_ = Format(s)
		}
	}
}
