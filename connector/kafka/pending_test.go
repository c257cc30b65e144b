package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/weirproject/weir/connector"
)

// TestPendingRecordsGauge reads a topic a few records at a time and
// checks the reader's pendingRecords gauge (Flink's source lag metric)
// against what is left: the records behind each partition's end.
func TestPendingRecordsGauge(t *testing.T) {
	_, brokers := newCluster(t, 2, "lag")
	cl := manual(t, brokers)
	fill(t, cl, "lag", 2, 0, 500)
	src, err := NewSource(SourceOptions{Brokers: brokers, Topics: []string{"lag"}, MaxPollRecords: 50}, String)
	if err != nil {
		t.Fatal(err)
	}
	splits, err := src.Splits(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var gauge func() int64
	r, err := src.NewReader(context.Background(), connector.SplitContext{Parallelism: 1, Gauge: func(name string, f func() int64) {
		if name == "pendingRecords" {
			gauge = f
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if gauge == nil {
		t.Fatal("the reader registered no pendingRecords gauge")
	}
	if err := r.AddSplits(splits); err != nil {
		t.Fatal(err)
	}
	out := newSplitOut[string]()
	read := func() int {
		n := 0
		for _, vs := range out.bySplit {
			n += len(vs)
		}
		return n
	}
	seen := map[int64]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for read() < 1000 && time.Now().Before(deadline) {
		if _, err := r.Poll(context.Background(), out); err != nil {
			t.Fatal(err)
		}
		// Once both partitions were fetched, the gauge is exactly what
		// is left to read.
		if len(r.(*reader[string]).ends) == 2 {
			if got, want := gauge(), int64(1000-read()); got != want {
				t.Fatalf("pendingRecords = %d after %d of 1000 records, want %d", got, read(), want)
			}
			seen[gauge()] = true
		}
		time.Sleep(time.Millisecond)
	}
	if read() != 1000 || gauge() != 0 || len(seen) < 3 {
		t.Fatalf("read %d records; pendingRecords %d at the end, %d distinct values on the way", read(), gauge(), len(seen))
	}
}
