package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirproject/weir/internal/sql/types"
)

// TestWatermarksPerPartition: a Kafka table's WATERMARK FOR runs per
// partition inside the source, as in Flink (the Kafka table source
// supports watermark push-down), and the subtask's watermark is the
// minimum over its partitions. Both partitions hold the same in-order
// times, 0 to 9.9 s; the watermark is the largest time so far, emitted at
// every advance (interval 0). One generator over the subtask would reach
// 9.9 s with the first partition's fetch and drop much of the other's as
// late; per partition nothing is late, and every window of a second
// counts its 10 rows from each partition. The second table takes its
// rowtime from a computed column, which the source's generator computes
// itself.
func TestWatermarksPerPartition(t *testing.T) {
	brokers := newCluster(t, 2, "ev")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Partition 0 first, then partition 1, each in one produce.
	for p := range int32(2) {
		var recs []*kgo.Record
		for i := range 100 {
			ms := int64(i) * 100
			v := fmt.Sprintf(`{"k":"p%d","v":%d,"ms":%d,"ts":"%s"}`, p, i, ms, time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000"))
			recs = append(recs, &kgo.Record{Topic: "ev", Partition: p, Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, columns string }{
		{"physical rowtime", "k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts"},
		{"computed rowtime", "k STRING, v BIGINT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tenv := newEnv(t, 1)
			exec(t, tenv, "SET 'pipeline.auto-watermark-interval' = '0'",
				fmt.Sprintf(`CREATE TABLE ev (%s) WITH ('connector' = 'kafka', 'topic' = 'ev',
					'properties.bootstrap.servers' = '%s', 'format' = 'json',
					'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset')`, c.columns, brokers))
			res := exec(t, tenv, `SELECT window_start, COUNT(*), COUNT(DISTINCT k)
				FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end`)
			if len(res.Rows) != 10 {
				t.Fatalf("%d windows, want 10: %v", len(res.Rows), res.Rows)
			}
			for _, r := range res.Rows {
				if r.Kind != types.Insert || r.Row[1] != int64(20) || r.Row[2] != int64(2) {
					t.Errorf("window %v: %v rows of %v partitions, want 20 of 2 (rows dropped as late)", r.Row[0], r.Row[1], r.Row[2])
				}
			}
		})
	}
}
