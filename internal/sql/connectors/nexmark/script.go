package nexmark

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/nexmark"
)

// The reference suite's SQL: ddl_gen.sql, ddl_views.sql and q0.sql to
// q22.sql of nexmark-flink (see queries/README.md), unchanged; Script
// adapts them as the reference's runner does.
//
//go:embed queries/*.sql
var queryFiles embed.FS

// QueryNames are the reference queries, q0 to q22.
func QueryNames() []string {
	out := make([]string, 23)
	for i := range out {
		out[i] = "q" + strconv.Itoa(i)
	}
	return out
}

// File returns one of the reference SQL files by name ("q5.sql",
// "ddl_gen.sql").
func File(name string) (string, error) {
	b, err := fs.ReadFile(queryFiles, "queries/"+name)
	return string(b), err
}

// ScriptOptions says how Script adapts the reference SQL.
type ScriptOptions struct {
	// Source is the generator's configuration and the number of events
	// of the datagen table.
	Source Source
	// Sink is the WITH clause's options for the queries' result tables
	// (nexmark_q0 ...), in place of the reference's: {'connector':
	// 'blackhole'} when nil.
	Sink map[string]string
	// SideInput is the CSV file of q13's side_input table (see
	// WriteSideInput).
	SideInput string
}

// Script returns the statements that run a reference query: the datagen
// table, the person, auction and bid views and the query's own file,
// adapted only where weir's connectors take other options than the
// reference's:
//
//   - the ${...} placeholders of ddl_gen.sql are the options' values, and
//     weir's own generator options follow the reference's when they differ
//     from the defaults; ${NEXMARK_TABLE} of ddl_views.sql is datagen;
//   - the WITH clause of the result table (nexmark_qN) is o.Sink: q10's
//     partitioned filesystem sink with partition commits becomes that too;
//   - q13's side_input table, in the reference a CSV file with legacy
//     options, is the filesystem connector's CSV file o.SideInput.
//
// q14's CREATE FUNCTION count_char stays as it is: the session resolves
// count_char to the Go function that RegisterFunctions registers.
func Script(query string, o ScriptOptions) (string, error) {
	if !slices.Contains(QueryNames(), query) {
		return "", fmt.Errorf("nexmark: unknown query %q (want q0 to q22)", query)
	}
	gen, err := File("ddl_gen.sql")
	if err != nil {
		return "", err
	}
	views, err := File("ddl_views.sql")
	if err != nil {
		return "", err
	}
	q, err := File(query + ".sql")
	if err != nil {
		return "", err
	}
	c := o.Source.Config
	events := max(o.Source.Events, 0)
	gen = strings.NewReplacer(
		"${TPS}", strconv.FormatInt(c.FirstEventRate, 10),
		"${EVENTS_NUM}", strconv.FormatInt(events, 10),
		"${PERSON_PROPORTION}", strconv.FormatInt(c.PersonProportion, 10),
		"${AUCTION_PROPORTION}", strconv.FormatInt(c.AuctionProportion, 10),
		"${BID_PROPORTION}", strconv.FormatInt(c.BidProportion, 10),
	).Replace(gen)
	if extra := extraOptions(o.Source); len(extra) > 0 {
		gen, err = replaceOptions(gen, "datagen", func(old string) string { return old + ",\n    " + extra })
		if err != nil {
			return "", err
		}
	}
	views = strings.ReplaceAll(views, "${NEXMARK_TABLE}", "datagen")
	sink := o.Sink
	if sink == nil {
		sink = map[string]string{"connector": "blackhole"}
	}
	q, err = replaceOptions(q, "nexmark_"+query, func(string) string { return optionList(sink) })
	if err != nil {
		return "", err
	}
	if query == "q13" {
		side := map[string]string{"connector": "filesystem", "path": o.SideInput, "format": "csv"}
		if q, err = replaceOptions(q, "side_input", func(string) string { return optionList(side) }); err != nil {
			return "", err
		}
	}
	return strings.TrimSpace(gen) + ";\n\n" + strings.TrimSpace(views) + "\n\n" + strings.TrimSpace(q) + "\n", nil
}

// extraOptions are the WITH options, beyond those of ddl_gen.sql, that
// make the source's configuration.
func extraOptions(s Source) string {
	c, d := s.Config, nexmark.DefaultConfig()
	var out []string
	add := func(k, v string) { out = append(out, quote(k)+" = "+quote(v)) }
	if c.Seed != d.Seed {
		add(OptSeed, strconv.FormatUint(c.Seed, 10))
	}
	if c.BaseTime != d.BaseTime {
		add(OptBaseTime, strconv.FormatInt(c.BaseTime, 10))
	}
	if c.NumActivePeople != d.NumActivePeople {
		add(OptActivePeople, strconv.FormatInt(c.NumActivePeople, 10))
	}
	if c.NumInFlightAuctions != d.NumInFlightAuctions {
		add(OptInFlightAuctions, strconv.FormatInt(c.NumInFlightAuctions, 10))
	}
	for _, r := range []struct {
		k    string
		v, d int
	}{{OptHotAuctions, c.HotAuctionRatio, d.HotAuctionRatio}, {OptHotBidders, c.HotBiddersRatio, d.HotBiddersRatio}, {OptHotSellers, c.HotSellersRatio, d.HotSellersRatio}} {
		if r.v != r.d {
			add(r.k, strconv.Itoa(r.v))
		}
	}
	for _, r := range []struct {
		k    string
		v, d int
	}{{OptPersonAvgSize, c.AvgPersonByteSize, d.AvgPersonByteSize}, {OptAuctionAvgSize, c.AvgAuctionByteSize, d.AvgAuctionByteSize}, {OptBidAvgSize, c.AvgBidByteSize, d.AvgBidByteSize}} {
		if r.v != r.d {
			add(r.k, strconv.Itoa(r.v)+"b")
		}
	}
	if s.Paced {
		add(OptMaxEmitSpeed, "false")
	}
	return strings.Join(out, ",\n    ")
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func optionList(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	// 'connector' first, as the reference writes it.
	if i := slices.Index(keys, "connector"); i > 0 {
		keys = append([]string{"connector"}, slices.Delete(keys, i, i+1)...)
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = quote(k) + " = " + quote(m[k])
	}
	return "\n  " + strings.Join(parts, ",\n  ") + "\n"
}

// replaceOptions replaces the text inside the WITH ( ... ) of the CREATE
// TABLE of table in script with what edit makes of it.
func replaceOptions(script, table string, edit func(old string) string) (string, error) {
	lower := strings.ToLower(script)
	i := strings.Index(lower, "create table "+strings.ToLower(table))
	if i < 0 {
		return "", fmt.Errorf("nexmark: no CREATE TABLE %s in the script", table)
	}
	w := strings.Index(lower[i:], "with (")
	if w < 0 {
		return "", fmt.Errorf("nexmark: CREATE TABLE %s has no WITH clause", table)
	}
	open := i + w + len("with (")
	depth, inString := 1, false
	for j := open; j < len(script); j++ {
		switch ch := script[j]; {
		case ch == '\'':
			inString = !inString // '' inside a string toggles twice
		case inString:
		case ch == '(':
			depth++
		case ch == ')':
			depth--
			if depth == 0 {
				old := strings.TrimRight(script[open:j], " \n\t")
				return script[:open] + edit(old) + script[j:], nil
			}
		}
	}
	return "", fmt.Errorf("nexmark: the WITH clause of %s does not end", table)
}

// WriteSideInput writes q13's side input (nexmark.Q13SideInput, the
// table the DataStream query looks bids up in) to a CSV file of key and
// value, the side_input table's columns.
func WriteSideInput(path string) error {
	side := nexmark.Q13SideInput()
	keys := slices.Sorted(maps.Keys(side))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.FormatInt(k, 10))
		b.WriteByte(',')
		b.WriteString(side[k])
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// RegisterFunctions registers the user-defined functions of the
// reference queries in a session's registry: count_char(s, c), the
// number of occurrences of the character c in s (q14's CountChar).
func RegisterFunctions(r *functions.Registry) error {
	return r.RegisterScalar("count_char", functions.ScalarFunc{
		Args:       []types.DataType{types.String(), types.String()},
		Result:     types.BigInt(),
		NullOnNull: true,
		Eval: func(_ *functions.Context, args []any) (any, error) {
			s, c := args[0].(string), args[1].(string)
			if c == "" {
				return int64(0), nil
			}
			return int64(strings.Count(s, c[:1])), nil
		},
	})
}
