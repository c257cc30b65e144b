package nexmark

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
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
	// AttachOutput is AttachDigest that also writes every result as a
	// JSON line to part files under dir (the text file sink, exactly
	// once): the results written can still be checked against the loop's.
	AttachOutput func(events *stream.Stream[Event], dir string) (digest func() Digest)
	// Loop computes the query's result with one goroutine and returns the
	// number of results.
	Loop func(events iter.Seq[Event]) int64
	// LoopOutput is LoopDigest that also writes every result to w as a
	// JSON line, as AttachOutput formats them.
	LoopOutput func(events iter.Seq[Event], w io.Writer) (Digest, error)
	// AttachDigest is Attach into a DigestSink, whose digest of the
	// results it returns.
	AttachDigest func(events *stream.Stream[Event]) (digest func() Digest)
	// LoopDigest is Loop that returns the digest of the results.
	LoopDigest func(events iter.Seq[Event]) Digest
	// WallClock says that the results depend on the processing time (the
	// windows of Q12): the engine and the loop count the same events, in
	// windows that need not match.
	WallClock bool
}

func query[R any](name, desc string, q func(*stream.Stream[Event]) *stream.Stream[R], loop func(iter.Seq[Event], func(R))) Query {
	return Query{
		Name:        name,
		Description: desc,
		Attach: func(events *stream.Stream[Event]) func() int64 {
			return ToBlackhole(q(events)).Count
		},
		AttachOutput: func(events *stream.Stream[Event], dir string) func() Digest {
			results := q(events)
			stream.SinkTo(results, file.Text[R](dir, jsonLine[R]), "json-lines")
			return ToDigest(results).Digest
		},
		AttachDigest: func(events *stream.Stream[Event]) func() Digest {
			return ToDigest(q(events)).Digest
		},
		LoopDigest: func(events iter.Seq[Event]) Digest {
			var d Digest
			h := newDigester[R]()
			loop(events, func(r R) { h.add(&d, r) })
			return d
		},
		Loop: func(events iter.Seq[Event]) int64 {
			var n int64
			loop(events, func(R) { n++ })
			return n
		},
		LoopOutput: func(events iter.Seq[Event], w io.Writer) (Digest, error) {
			bw := bufio.NewWriterSize(w, 1<<16)
			var d Digest
			h := newDigester[R]()
			var err error
			loop(events, func(r R) {
				h.add(&d, r)
				if err == nil {
					_, err = bw.WriteString(jsonLine(r) + "\n")
				}
			})
			if err != nil {
				return d, err
			}
			return d, bw.Flush()
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
	"q0":  query("q0", "pass-through: every bid", Q0, LoopQ0),
	"q1":  query("q1", "currency conversion: bid prices × 0.908", Q1, LoopQ1),
	"q2":  query("q2", "selection: bids on auctions with ID % 123 == 0", Q2, LoopQ2),
	"q3":  query("q3", "local item suggestion: auctions in category 10 joined with sellers in OR, ID, CA", Q3, LoopQ3),
	"q4":  query("q4", "average winning price per category, updated as auctions close", Q4, LoopQ4),
	"q5":  query("q5", "hot items: auctions with the most bids per 10 s sliding window (every 2 s)", Q5, LoopQ5),
	"q6":  query("q6", "average winning price of each seller's last 10 closed auctions", Q6, LoopQ6),
	"q7":  query("q7", "highest bid per 10 s tumbling window", Q7, LoopQ7),
	"q8":  query("q8", "new users: people who registered and opened an auction in the same 10 s tumbling window", Q8, LoopQ8),
	"q9":  query("q9", "winning bids: each auction's highest bid, when it expires", Q9, LoopQ9),
	"q10": query("q10", "log to file system: every bid with its day and minute (the partition columns)", Q10, LoopQ10),
	"q11": query("q11", "user sessions: bids per bidder and session (gap 10 s)", Q11, LoopQ11),
	"q12": wallClock(query("q12", "processing time windows: bids per bidder per 10 s of processing time", Q12, LoopQ12)),
	"q13": query("q13", "bounded side input join: bids enriched from a static table by auction % 10,000", Q13, LoopQ13),
	"q14": query("q14", "calculation: bids in a price range, converted, with time of day and a character count", Q14, LoopQ14),
	"q15": query("q15", "bidding statistics report: bids, distinct bidders and auctions per day and price rank", Q15, LoopQ15),
	"q16": query("q16", "channel statistics report: Q15 per channel and day", Q16, LoopQ16),
	"q17": query("q17", "auction statistics report: bids and prices per auction and day", Q17, LoopQ17),
	"q18": query("q18", "find last bid: the latest bid of each bidder on each auction, as it changes", Q18, LoopQ18),
	"q19": query("q19", "auction top-10 price: bids as they enter their auction's top 10, with their rank", Q19, LoopQ19),
	"q20": query("q20", "expand bid with auction: bids joined with their auction, in category 10", Q20, LoopQ20),
	"q21": query("q21", "add channel ID: bids with the ID of a named channel or from their URL", Q21, LoopQ21),
	"q22": query("q22", "get URL directories: bids with the first three directories of their URL", Q22, LoopQ22),
}

func wallClock(q Query) Query {
	q.WallClock = true
	return q
}

// QueryNames are the names of Queries, in numeric order (q2 before q10).
func QueryNames() []string {
	var out []string
	for n := range Queries {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
	return out
}
