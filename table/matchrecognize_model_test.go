package table_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/table"
)

// mrModel is a brute-force matcher for the patterns TestMatchRecognize-
// AgainstModel draws: variables v0, v1, ... each taking the rows of its
// own letter, the first one a single row. With disjoint conditions and a
// mandatory first variable, a partial match dies at the next row that
// could start one, so per start row at most one match is emitted: the one
// that ends first (the skip strategy discards the other partial matches
// of that start); matches come in start order, and the skip strategy
// drops those that start too early.
type mrModel struct {
	letters []byte
	quants  []string
	skip    string // "PAST LAST ROW", "TO NEXT ROW", "TO LAST v<n>"
	// anyStart: v0 takes any row (no DEFINE), so that matches overlap
	// and the skip strategy decides between them.
	anyStart bool
}

type mrRow struct {
	id, k int
	l     byte
	ts    int64
}

func (m mrModel) regexp() *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i, l := range m.letters {
		if i == 0 && m.anyStart {
			l = '.'
		}
		b.WriteString("(" + string(l) + m.quants[i] + ")")
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// matches returns "k | first id | last id | count per variable" rows.
func (m mrModel) matches(rows []mrRow) []string {
	re := m.regexp()
	byKey := map[int][]mrRow{}
	for _, r := range rows {
		byKey[r.k] = append(byKey[r.k], r)
	}
	var out []string
	for k, rs := range byKey {
		slices.SortFunc(rs, func(a, b mrRow) int { return int(a.ts - b.ts) })
		s := make([]byte, len(rs))
		for i, r := range rs {
			s[i] = r.l
		}
		next := 0
		for i := range rs {
			if i < next {
				continue
			}
			for e := i; e < len(rs); e++ {
				g := re.FindSubmatchIndex(s[i : e+1])
				if g == nil {
					continue
				}
				row := []string{fmt.Sprint(k), fmt.Sprint(rs[i].id), fmt.Sprint(rs[e].id)}
				for v := range m.letters {
					row = append(row, fmt.Sprint(g[2*v+3]-g[2*v+2]))
				}
				out = append(out, strings.Join(row, " | "))
				switch {
				case m.skip == "PAST LAST ROW":
					next = e + 1
				case m.skip == "TO NEXT ROW":
					next = i + 1
				default: // TO LAST v<n>: at the last row of v<n>, or past the match if it took none
					var n int
					fmt.Sscanf(m.skip, "TO LAST v%d", &n)
					if g[2*n+3] > g[2*n+2] {
						next = i + g[2*n+3] - 1
					} else {
						next = i + 1
					}
				}
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func greedyQuant(q string) bool {
	return q != "" && q != "?" && q != "{2}" && !strings.HasSuffix(q, "?")
}

func optionalQuant(q string) bool {
	return strings.HasPrefix(q, "?") || strings.HasPrefix(q, "*") || strings.HasPrefix(q, "{,")
}

func (m mrModel) sql() string {
	var pat, def, meas []string
	meas = append(meas, "FIRST(id) AS s", "LAST(id) AS e")
	for i, l := range m.letters {
		pat = append(pat, fmt.Sprintf("v%d%s", i, m.quants[i]))
		if i > 0 || !m.anyStart {
			def = append(def, fmt.Sprintf("v%d AS l = '%c'", i, l))
		}
		meas = append(meas, fmt.Sprintf("COUNT(v%d.id) AS n%d", i, i))
	}
	return fmt.Sprintf(`SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts
		MEASURES %s AFTER MATCH SKIP %s PATTERN (%s) DEFINE %s)`,
		strings.Join(meas, ", "), m.skip, strings.Join(pat, " "), strings.Join(def, ", "))
}

// TestMatchRecognizeAgainstModel runs random patterns (every quantifier,
// greedy and reluctant, three skip strategies) over random sequences of
// several keys, read out of order, at parallelism 1 (heap state) and 2
// (Pebble), and compares
// the rows with the brute-force matcher.
func TestMatchRecognizeAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 5))
	mid := []string{"", "?", "*", "+", "{2}", "{1,2}", "{2,}", "{,2}", "*?", "+?", "{1,3}?", "{2,}?"}
	last := []string{"", "{2}", "+?", "{2,}?", "{1,3}?"}
	const n = 400
	for iter := 0; iter < 24; iter++ {
		nv := 2 + r.IntN(3)
		m := mrModel{letters: []byte("abcd")[:nv]}
		for i := 0; i < nv; i++ {
			switch {
			case i == 0:
				m.quants = append(m.quants, "")
			case i == nv-1:
				m.quants = append(m.quants, last[r.IntN(len(last))])
			default:
				m.quants = append(m.quants, mid[r.IntN(len(mid))])
			}
			// An optional variable after a greedy one is refused (as by
			// Flink's CEP): draw again.
			for i > 0 && greedyQuant(m.quants[i-1]) && optionalQuant(m.quants[i]) {
				m.quants[i] = mid[r.IntN(len(mid))]
			}
		}
		m.anyStart = iter%2 == 1
		m.skip = []string{"PAST LAST ROW", "TO NEXT ROW", fmt.Sprintf("TO LAST v%d", 1+r.IntN(nv-1))}[iter%3]
		// Rows: letters biased to follow the pattern, 3 keys, distinct
		// times 100 ms apart, arriving up to 5 places out of order (less
		// than the watermark's 1 second delay: none is late).
		rows := make([]mrRow, n)
		for i := range rows {
			l := byte('a' + r.IntN(nv+1))
			rows[i] = mrRow{id: i, k: r.IntN(3), l: l, ts: 1000 + 100*int64(i)}
		}
		order := make([]int, n)
		keys := make([]int, n)
		for i := range order {
			order[i] = i
			keys[i] = i + r.IntN(6)
		}
		slices.SortStableFunc(order, func(a, b int) int { return keys[a] - keys[b] })
		var csv strings.Builder
		for _, i := range order {
			rw := rows[i]
			fmt.Fprintf(&csv, "%d,%d,%c,%s\n", rw.id, rw.k, rw.l, time.UnixMilli(rw.ts).UTC().Format("2006-01-02 15:04:05.000"))
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "ev.csv"), []byte(csv.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		want := m.matches(rows)
		t.Logf("%d matches of %s", len(want), m.sql())
		for _, p := range []int{1, 2} {
			tenv := table.NewEnvironment()
			fsExec(t, tenv, fmt.Sprintf("SET 'parallelism.default' = '%d'", p))
			if p == 2 {
				// The matcher's state in Pebble: rows and runs go through
				// their codecs.
				fsExec(t, tenv, "SET 'state.backend.type' = 'pebble'")
			}
			fsExec(t, tenv, "SET 'pipeline.auto-watermark-interval' = '0'")
			fsExec(t, tenv, fmt.Sprintf(`CREATE TABLE ev (id INT, k INT, l STRING, ts TIMESTAMP(3),
				WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
				WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')`, dir))
			got := mrRun(t, tenv, m.sql())
			if !slices.Equal(got, want) {
				t.Fatalf("parallelism %d, %s\n%s", p, m.sql(), firstDiff(got, want))
			}
		}
	}
}
