package nexmark

import (
	"encoding/json"
	"iter"
	"slices"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
)

// Query is one Nexmark query as the benchmark runs it.
type Query struct {
	Name        string
	Description string
	// Attach adds the query to events with a Blackhole sink and returns
	// the sink's count of results.
	Attach func(events *stream.Stream[Event]) (count func() int64)
	// AttachOutput is Attach that also writes every result as a JSON line
	// to part files under dir (the text file sink, exactly once).
	AttachOutput func(events *stream.Stream[Event], dir string) (count func() int64)
	// Loop computes the query's result with one goroutine and returns the
	// number of results.
	Loop func(events iter.Seq[Event]) int64
}

func query[R any](name, desc string, q func(*stream.Stream[Event]) *stream.Stream[R], loop func(iter.Seq[Event], func(R))) Query {
	return Query{
		Name:        name,
		Description: desc,
		Attach: func(events *stream.Stream[Event]) func() int64 {
			return ToBlackhole(q(events)).Count
		},
		AttachOutput: func(events *stream.Stream[Event], dir string) func() int64 {
			results := q(events)
			stream.SinkTo(results, file.Text[R](dir, jsonLine[R]), "json-lines")
			return ToBlackhole(results).Count
		},
		Loop: func(events iter.Seq[Event]) int64 {
			var n int64
			loop(events, func(R) { n++ })
			return n
		},
	}
}

// jsonLine formats a result for --output; a value that cannot be encoded
// is written as a JSON error object rather than dropped.
func jsonLine[R any](v R) string {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return string(b)
}

// Queries are the queries this package implements, by name.
var Queries = map[string]Query{
	"q0": query("q0", "pass-through: every bid", Q0, LoopQ0),
	"q1": query("q1", "currency conversion: bid prices × 0.908", Q1, LoopQ1),
	"q2": query("q2", "selection: bids on auctions with ID % 123 == 0", Q2, LoopQ2),
	"q3": query("q3", "local item suggestion: auctions in category 10 joined with sellers in OR, ID, CA", Q3, LoopQ3),
	"q4": query("q4", "average winning price per category, updated as auctions close", Q4, LoopQ4),
	"q5": query("q5", "hot items: auctions with the most bids per 10 s sliding window (every 2 s)", Q5, LoopQ5),
	"q6": query("q6", "average winning price of each seller's last 10 closed auctions", Q6, LoopQ6),
	"q7": query("q7", "highest bid per 10 s tumbling window", Q7, LoopQ7),
	"q8": query("q8", "new users: people who registered and opened an auction in the same 10 s tumbling window", Q8, LoopQ8),
	"q9": query("q9", "winning bids: each auction's highest bid, when it expires", Q9, LoopQ9),
}

// QueryNames are the names of Queries, sorted.
func QueryNames() []string {
	var out []string
	for n := range Queries {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
