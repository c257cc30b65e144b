package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	_ "github.com/weirproject/weir/internal/sql/connectors/kafka"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newCluster(t *testing.T, partitions int32, topics ...string) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

// exec runs statements, failing the test on an error.
func exec(t *testing.T, tenv *table.Environment, stmts ...string) *table.Result {
	t.Helper()
	var res *table.Result
	for _, s := range stmts {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var err error
		res, err = tenv.ExecuteSQL(ctx, s)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return res
}

func newEnv(t *testing.T, p int) *table.Environment {
	tenv := table.NewEnvironment()
	exec(t, tenv, fmt.Sprintf("SET 'parallelism.default' = '%d'", p), "SET 'table.dml-sync' = 'true'", "SET 'table.local-time-zone' = 'UTC'")
	return tenv
}

// readTopic reads every record of a topic visible to read_committed with
// a plain franz-go consumer, in offset order per partition.
func readTopic(t *testing.T, brokers, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	// Poll until a poll of 500 ms brings nothing: the writers are done.
	// The first records may take longer (metadata, connections, a
	// loaded machine under -race): until some come, a poll waits up to
	// 5 s, and a topic that stays empty for that long is empty.
	for {
		wait := 500 * time.Millisecond
		if len(out) == 0 {
			wait = 5 * time.Second
		}
		pctx, pcancel := context.WithTimeout(ctx, wait)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if n == 0 {
			return out
		}
	}
}

// compactTopic reads an upsert topic and returns the last value of every
// key (a tombstone removes it) and the number of tombstones.
func compactTopic(t *testing.T, brokers, topic string) (map[string][2]int64, int) {
	t.Helper()
	compacted := map[string][2]int64{}
	tombstones := 0
	for _, r := range readTopic(t, brokers, topic) {
		var key struct{ K string }
		if err := json.Unmarshal(r.Key, &key); err != nil {
			t.Fatalf("key %q: %v", r.Key, err)
		}
		if r.Value == nil {
			delete(compacted, key.K)
			tombstones++
			continue
		}
		var v struct {
			K          string
			Cnt, Total int64
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		compacted[key.K] = [2]int64{v.Cnt, v.Total}
	}
	return compacted, tombstones
}

const allTypesDDL = `CREATE TABLE %s (
	id INT,
	b BOOLEAN,
	ti TINYINT,
	si SMALLINT,
	bi BIGINT,
	f FLOAT,
	d DOUBLE,
	dec DECIMAL(20, 6),
	s STRING,
	vc VARCHAR(10),
	bs BYTES,
	dt DATE,
	tm TIME(0),
	ts TIMESTAMP(3),
	ltz TIMESTAMP_LTZ(3),
	arr ARRAY<INT>,
	m MAP<STRING, INT>,
	r ROW<x INT, y STRING>
) WITH (%s)`

const allTypesValues = `VALUES
	(1, TRUE, CAST(-128 AS TINYINT), CAST(32767 AS SMALLINT), CAST(-9223372036854775807 AS BIGINT), CAST(1.5 AS FLOAT), 2.25E-7,
	 CAST('12345678901234.123456' AS DECIMAL(20, 6)), 'héllo, "world"', 'ab;c', x'00ff10', DATE '2024-02-29', TIME '23:59:58',
	 TIMESTAMP '2024-03-01 12:34:56.789', TO_TIMESTAMP_LTZ(1709296496789, 3), ARRAY[1, 2, 3], MAP['a', 1, 'b', 2], ROW(7, 'seven')),
	(2, FALSE, CAST(0 AS TINYINT), CAST(-1 AS SMALLINT), CAST(0 AS BIGINT), CAST(-0.25 AS FLOAT), -1.0E300,
	 CAST('-0.000001' AS DECIMAL(20, 6)), '', 'x', x'', DATE '1970-01-01', TIME '00:00:00',
	 TIMESTAMP '1969-12-31 23:59:59.999', TO_TIMESTAMP_LTZ(0, 3), ARRAY[CAST(NULL AS INT)], MAP['k', CAST(NULL AS INT)], ROW(CAST(NULL AS INT), 'n')),
	(3, CAST(NULL AS BOOLEAN), CAST(NULL AS TINYINT), CAST(NULL AS SMALLINT), CAST(NULL AS BIGINT), CAST(NULL AS FLOAT), CAST(NULL AS DOUBLE),
	 CAST(NULL AS DECIMAL(20, 6)), CAST(NULL AS STRING), CAST(NULL AS VARCHAR(10)), CAST(NULL AS BYTES), CAST(NULL AS DATE), CAST(NULL AS TIME(0)),
	 CAST(NULL AS TIMESTAMP(3)), CAST(NULL AS TIMESTAMP_LTZ(3)), CAST(NULL AS ARRAY<INT>), CAST(NULL AS MAP<STRING, INT>), CAST(NULL AS ROW<x INT, y STRING>))`

func sortedRows(rows []types.Record, ts []types.DataType) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		b.WriteString(r.Kind.String())
		for j, v := range r.Row {
			b.WriteString("|")
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(types.FormatIn(v, ts[j], time.UTC))
			}
		}
		out[i] = b.String()
	}
	slices.Sort(out)
	return out
}

func resultTypes(r *table.Result) []types.DataType {
	ts := make([]types.DataType, len(r.Columns))
	for i, c := range r.Columns {
		ts[i] = c.Type
	}
	return ts
}

// TestKafkaAllTypesRoundTrip writes rows with every supported type, NULLs
// included, through an exactly-once kafka sink in each format, reads them
// back through a bounded kafka source, and compares them with the rows of
// the same VALUES query run without Kafka. The JSON records are also
// checked as Flink's json format writes them.
func TestKafkaAllTypesRoundTrip(t *testing.T) {
	brokers := newCluster(t, 3, "json", "csv")
	for _, format := range []string{"json", "csv"} {
		t.Run(format, func(t *testing.T) {
			tenv := newEnv(t, 2)
			with := fmt.Sprintf(`'connector' = 'kafka', 'topic' = '%s', 'properties.bootstrap.servers' = '%s',
				'format' = '%s', 'csv.null-literal' = '\N', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
				'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'rt-%s'`, format, brokers, format, format)
			exec(t, tenv, fmt.Sprintf(allTypesDDL, "k", with), "INSERT INTO k "+allTypesValues)
			want := exec(t, tenv, "SELECT * FROM ("+allTypesValues+") AS v(id, b, ti, si, bi, f, d, dec, s, vc, bs, dt, tm, ts, ltz, arr, m, r)")
			got := exec(t, tenv, "SELECT * FROM k")
			ts := resultTypes(got)
			w, g := sortedRows(want.Rows, ts), sortedRows(got.Rows, ts)
			if !slices.Equal(w, g) {
				t.Fatalf("read back\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			if format != "json" {
				return
			}
			recs := readTopic(t, brokers, "json")
			if len(recs) != 3 {
				t.Fatalf("%d records in the topic, want 3", len(recs))
			}
			for _, r := range recs {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(r.Value, &obj); err != nil {
					t.Fatalf("%s: %v", r.Value, err)
				}
				if string(obj["id"]) != "1" {
					continue
				}
				for k, v := range map[string]string{"dec": "12345678901234.123456", "bs": `"AP8Q"`, "dt": `"2024-02-29"`,
					"ts": `"2024-03-01 12:34:56.789"`, "ltz": `"2024-03-01 12:34:56.789Z"`, "arr": "[1,2,3]", "r": `{"x":7,"y":"seven"}`, "b": "true"} {
					if string(obj[k]) != v {
						t.Errorf("field %s is %s in the JSON record, want %s (Flink's json format)", k, obj[k], v)
					}
				}
			}
		})
	}
}

// TestKafkaMetadataColumns writes the record timestamp and headers through
// persisted metadata columns and reads them back with the read-only ones
// (topic, partition, offset), checked against a plain consumer.
func TestKafkaMetadataColumns(t *testing.T) {
	brokers := newCluster(t, 2, "meta")
	tenv := newEnv(t, 1)
	exec(t, tenv, fmt.Sprintf(`CREATE TABLE meta (
			id INT,
			ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
			h MAP<STRING, BYTES> METADATA FROM 'headers',
			tp STRING METADATA FROM 'topic' VIRTUAL,
			part INT METADATA FROM 'partition' VIRTUAL,
			off BIGINT METADATA FROM 'offset' VIRTUAL,
			name STRING
		) WITH ('connector' = 'kafka', 'topic' = 'meta', 'properties.bootstrap.servers' = '%s', 'value.format' = 'json',
			'key.format' = 'raw', 'key.fields' = 'name', 'scan.bounded.mode' = 'latest-offset')`, brokers),
		`INSERT INTO meta SELECT id, TO_TIMESTAMP_LTZ(1700000000000 + id * 1000, 3), MAP['trace', CAST(CAST(id AS STRING) AS BYTES)], name
			FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'a')) AS v(id, name)`)
	got := exec(t, tenv, "SELECT id, ts, h, tp, part, off, name FROM meta")
	recs := readTopic(t, brokers, "meta")
	if len(got.Rows) != 4 || len(recs) != 4 {
		t.Fatalf("%d rows read, %d records in the topic, want 4", len(got.Rows), len(recs))
	}
	byID := map[int32]types.Row{}
	for _, r := range got.Rows {
		byID[r.Row[0].(int32)] = r.Row
	}
	for _, r := range recs {
		var v struct {
			ID   int32
			Name string
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		row := byID[v.ID]
		if row == nil {
			t.Fatalf("record %s was not read", r.Value)
		}
		if string(r.Key) != v.Name {
			t.Errorf("id %d: key %q, want the raw name %q", v.ID, r.Key, v.Name)
		}
		if want := 1700000000000 + int64(v.ID)*1000; r.Timestamp.UnixMilli() != want || row[1].(types.TimestampLTZ).Millis != want {
			t.Errorf("id %d: timestamp %d in Kafka, %v read, want %d", v.ID, r.Timestamp.UnixMilli(), row[1], want)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "trace" || string(r.Headers[0].Value) != fmt.Sprint(v.ID) {
			t.Errorf("id %d: headers %v", v.ID, r.Headers)
		}
		h := row[2].(*types.Map)
		if h.Len() != 1 || h.Keys[0] != "trace" || string(h.Values[0].([]byte)) != fmt.Sprint(v.ID) {
			t.Errorf("id %d: headers read as %v", v.ID, h)
		}
		if row[3] != "meta" || row[4] != r.Partition || row[5] != r.Offset || row[6] != v.Name {
			t.Errorf("id %d: topic, partition, offset, name read as %v, want meta %d %d %s", v.ID, row[3:], r.Partition, r.Offset, v.Name)
		}
	}
	// Read-only metadata cannot be written.
	_, err := tenv.ExecuteSQL(context.Background(), fmt.Sprintf(`CREATE TABLE bad (id INT, off BIGINT METADATA FROM 'offset')
		WITH ('connector' = 'kafka', 'topic' = 'meta', 'properties.bootstrap.servers' = '%s', 'format' = 'json')`, brokers))
	if err == nil {
		_, err = tenv.ExecuteSQL(context.Background(), "INSERT INTO bad VALUES (1, CAST(5 AS BIGINT))")
	}
	if err == nil || !strings.Contains(err.Error(), "metadata 'offset' cannot be written") {
		t.Fatalf("writing offset metadata: %v", err)
	}
}

// TestKafkaBoundedSpecificOffsets: a bounded scan stops at the given
// offsets of each partition.
func TestKafkaBoundedSpecificOffsets(t *testing.T) {
	brokers := newCluster(t, 1, "seq")
	tenv := newEnv(t, 1)
	exec(t, tenv, fmt.Sprintf(`CREATE TABLE seq (n BIGINT) WITH ('connector' = 'kafka', 'topic' = 'seq',
			'properties.bootstrap.servers' = '%s', 'format' = 'raw', 'scan.bounded.mode' = 'specific-offsets',
			'scan.bounded.specific-offsets' = 'partition:0,offset:7')`, brokers),
		`CREATE TABLE gen (n BIGINT) WITH ('connector' = 'datagen', 'fields.n.kind' = 'sequence', 'fields.n.start' = '100', 'fields.n.end' = '119')`,
		"INSERT INTO seq SELECT n FROM gen")
	got := exec(t, tenv, "SELECT n FROM seq")
	var ns []int64
	for _, r := range got.Rows {
		ns = append(ns, r.Row[0].(int64))
	}
	if want := []int64{100, 101, 102, 103, 104, 105, 106}; !slices.Equal(ns, want) {
		t.Fatalf("read %v, want %v", ns, want)
	}
}

// TestKafkaRefusesUpdates: an updating query cannot go into an
// append-only kafka table.
func TestKafkaRefusesUpdates(t *testing.T) {
	brokers := newCluster(t, 1, "counts")
	tenv := newEnv(t, 1)
	exec(t, tenv, fmt.Sprintf(`CREATE TABLE counts (k STRING, n BIGINT) WITH ('connector' = 'kafka', 'topic' = 'counts',
			'properties.bootstrap.servers' = '%s', 'format' = 'json')`, brokers),
		`CREATE TABLE gen (n BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10')`)
	_, err := tenv.ExecuteSQL(context.Background(), "INSERT INTO counts SELECT CAST(MOD(n, 3) AS STRING), COUNT(*) FROM gen GROUP BY MOD(n, 3)")
	want := "Table sink '`default_catalog`.`default_database`.`counts`' doesn't support consuming update changes which is produced by node"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	for _, bad := range []struct{ with, msg string }{
		{`'topic' = 'x', 'format' = 'json'`, "option 'properties.bootstrap.servers': missing"},
		{`'topic' = 'x', 'properties.bootstrap.servers' = 'h:1'`, "option 'format': missing"},
		{`'topic' = 'x', 'properties.bootstrap.servers' = 'h:1', 'format' = 'avro'`, `"avro" is not supported`},
		{`'topic' = 'x', 'properties.bootstrap.servers' = 'h:1', 'format' = 'json', 'scan.startup.mode' = 'sometime'`, `"sometime" is not earliest-offset`},
		{`'topic' = 'x', 'properties.bootstrap.servers' = 'h:1', 'format' = 'json', 'properties.foo' = '1'`, "unsupported options for connector 'kafka': properties.foo"},
		{`'topic' = 'x', 'properties.bootstrap.servers' = 'h:1', 'format' = 'json', 'key.fields' = 'nope', 'key.format' = 'json'`, `"nope" is not a physical column`},
	} {
		tenv := newEnv(t, 1)
		exec(t, tenv, "CREATE TABLE bad (k STRING, n BIGINT) WITH ('connector' = 'kafka', "+bad.with+")")
		_, err := tenv.ExecuteSQL(context.Background(), "SELECT * FROM bad")
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("WITH (%s): got %v, want %q", bad.with, err, bad.msg)
		}
	}
}

// event is the Go twin of the ev table's generator.
type event struct {
	k string
	v int64
}

func genEvents(n int) []event {
	out := make([]event, n)
	for i := range int64(n) {
		out[i] = event{k: fmt.Sprintf("k%d", i*31%7), v: i*17%100 - 20}
	}
	return out
}

const evDDL = `CREATE TABLE ev (
		id BIGINT,
		k AS 'k' || CAST(MOD(id * 31, 7) AS STRING),
		v AS CAST(MOD(id * 17, 100) - 20 AS BIGINT))
	WITH ('connector' = 'datagen', 'rows-per-second' = '%d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d')`

// applyChangelog applies a changelog of (k, cnt, total) rows, checking
// that every -U and -D retracts the row the table holds.
func applyChangelog(t *testing.T, rows []types.Record) map[string][2]int64 {
	t.Helper()
	final := map[string][2]int64{}
	for _, r := range rows {
		k := r.Row[0].(string)
		v := [2]int64{r.Row[1].(int64), r.Row[2].(int64)}
		switch r.Kind {
		case types.Insert, types.UpdateAfter:
			if _, ok := final[k]; ok {
				t.Fatalf("%s for key %s, which is in the table", r, k)
			}
			final[k] = v
		case types.UpdateBefore, types.Delete:
			if old, ok := final[k]; !ok || old != v {
				t.Fatalf("%s for key %s, the table holds %v", r, k, old)
			}
			delete(final, k)
		}
	}
	return final
}

// TestUpsertKafkaGroupBy writes updating GROUP BY queries (one whose
// HAVING makes groups disappear again) into upsert-kafka tables, reads
// them back as changelogs through upsert-kafka sources, and compares the
// final tables, and the compacted topics read by a plain consumer, with a
// brute-force GROUP BY.
func TestUpsertKafkaGroupBy(t *testing.T) {
	const n = 2000
	events := genEvents(n)
	groups := map[string][2]int64{}
	for _, e := range events {
		g := groups[e.k]
		groups[e.k] = [2]int64{g[0] + 1, g[1] + e.v}
	}
	brokers := newCluster(t, 3, "all", "having")
	for _, q := range []struct {
		topic, having string
		keep          func([2]int64) bool
	}{
		{"all", "", func([2]int64) bool { return true }},
		{"having", "HAVING MOD(COUNT(*), 3) <> 0", func(g [2]int64) bool { return g[0]%3 != 0 }},
	} {
		want := map[string][2]int64{}
		for k, g := range groups {
			if q.keep(g) {
				want[k] = g
			}
		}
		tenv := newEnv(t, 2)
		exec(t, tenv, fmt.Sprintf(evDDL, 20000, n-1),
			fmt.Sprintf(`CREATE TABLE up (k STRING, cnt BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH (
				'connector' = 'upsert-kafka', 'topic' = '%s', 'properties.bootstrap.servers' = '%s',
				'key.format' = 'json', 'value.format' = 'json', 'scan.bounded.mode' = 'latest-offset',
				'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'up-%s')`, q.topic, brokers, q.topic),
			"INSERT INTO up SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k "+q.having)
		res := exec(t, tenv, "SELECT * FROM up")
		if !res.Updating {
			t.Errorf("%s: an upsert-kafka scan is not taken as updating", q.topic)
		}
		if got := applyChangelog(t, res.Rows); !mapsEqual(got, want) {
			t.Errorf("%s: final table %v, want %v", q.topic, got, want)
		}
		// The compacted topic: the last value of every key, tombstones
		// removing it. readTopic stops at the first quiet half second,
		// which a loaded machine can reach before every partition was
		// fetched: read again until it matches, up to a deadline.
		var compacted map[string][2]int64
		var tombstones int
		for deadline := time.Now().Add(20 * time.Second); ; {
			compacted, tombstones = compactTopic(t, brokers, q.topic)
			if mapsEqual(compacted, want) || time.Now().After(deadline) {
				break
			}
		}
		if !mapsEqual(compacted, want) {
			t.Errorf("%s: compacted topic %v, want %v", q.topic, compacted, want)
		}
		if q.having != "" && tombstones == 0 {
			t.Errorf("%s: no tombstones, though groups left the result", q.topic)
		}
		// An aggregation over the changelog retracts.
		sum := exec(t, tenv, "SELECT SUM(cnt) FROM up")
		final := applyScalar(t, sum.Rows)
		var wantSum int64
		for _, g := range want {
			wantSum += g[0]
		}
		if final != wantSum {
			t.Errorf("%s: SUM(cnt) over the changelog is %d, want %d", q.topic, final, wantSum)
		}
	}
}

func applyScalar(t *testing.T, rows []types.Record) int64 {
	var cur int64
	for _, r := range rows {
		if r.Kind.IsAccumulate() && r.Row[0] != nil {
			cur = r.Row[0].(int64)
		}
	}
	return cur
}

func mapsEqual(a, b map[string][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
