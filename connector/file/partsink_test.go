package file_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/connector/format/jsonl"
)

type rec struct {
	ID   int64  `json:"id"`
	Key  string `json:"key"`
	Text string `json:"text"`
}

func recs(from, to int64) []rec {
	var out []rec
	for i := from; i < to; i++ {
		out = append(out, rec{ID: i, Key: fmt.Sprintf("k%d", i%3), Text: fmt.Sprintf("Grüße #%d, 東京", i)})
	}
	return out
}

func newPartWriter(t *testing.T, s *file.PartSink[rec], subtask int) *file.PartWriter[rec] {
	t.Helper()
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Subtask: subtask, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	return w.(*file.PartWriter[rec])
}

// published lists the visible part files under dir, relative to it, and
// every hidden file separately.
func published(t *testing.T, dir string) (parts, hiddenFiles []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if strings.HasPrefix(d.Name(), ".") {
			hiddenFiles = append(hiddenFiles, rel)
		} else {
			parts = append(parts, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return parts, hiddenFiles
}

func readRecs(t *testing.T, paths ...string) []rec {
	t.Helper()
	got, err := file.ReadAll[rec](jsonl.Format[rec]{}, paths...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func byID(rs []rec) []rec {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b rec) int { return int(a.ID - b.ID) })
	return rs
}

func writeAll(t *testing.T, w connector.SinkWriter[rec], rs []rec) {
	t.Helper()
	for _, r := range rs {
		if err := w.Write(r, r.ID*1000); err != nil {
			t.Fatal(err)
		}
	}
}

func prepare(t *testing.T, w *file.PartWriter[rec], id int64) []byte {
	t.Helper()
	c, err := w.PrepareCommit(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPartSinkNamesAndRollsOnSize(t *testing.T) {
	dir := t.TempDir()
	const size = 2000
	s := file.Sink[rec](dir, jsonl.Format[rec]{}).RollOnSize(size)
	w := newPartWriter(t, s, 1)
	all := recs(0, 300)
	writeAll(t, w, all)
	if parts, _ := published(t, dir); len(parts) != 0 {
		t.Fatalf("files visible before a commit: %v", parts)
	}
	c := prepare(t, w, math.MaxInt64) // the end of the input rolls all
	if err := w.Commit([][]byte{c}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	parts, hiddenFiles := published(t, dir)
	if len(hiddenFiles) != 0 {
		t.Fatalf("hidden files left: %v", hiddenFiles)
	}
	name := regexp.MustCompile(`^part-([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})-1-(\d+)\.jsonl$`)
	var uid string
	total := 0
	for i := range parts {
		// Counters in order: the records of file i follow those of i-1.
		p := fmt.Sprintf("part-%s-1-%d.jsonl", uid, i)
		if i == 0 {
			m := name.FindStringSubmatch(parts[0])
			if m == nil {
				t.Fatalf("part file name %q is not part-<uuid>-<subtask>-<counter>.jsonl", parts[0])
			}
			uid, p = m[1], parts[0]
		}
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatalf("parts %v: %v", parts, err)
		}
		got := readRecs(t, filepath.Join(dir, p))
		// A file rolls before the record that finds it at the size.
		if i < len(parts)-1 && (fi.Size() < size || fi.Size()-int64(len(lineOf(got[len(got)-1]))) >= size) {
			t.Fatalf("%s has %d bytes, want the first record to reach %d", p, fi.Size(), size)
		}
		if !slices.Equal(got, all[total:total+len(got)]) {
			t.Fatalf("%s holds records %v..., want from %d", p, got[0].ID, total)
		}
		total += len(got)
	}
	if total != len(all) || len(parts) < 5 {
		t.Fatalf("%d parts hold %d records, want %d in several parts", len(parts), total, len(all))
	}
}

func lineOf(r rec) string {
	return fmt.Sprintf(`{"id":%d,"key":%q,"text":%q}`+"\n", r.ID, r.Key, r.Text)
}

func TestPartSinkRollsOnTime(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := file.Sink[rec](dir, jsonl.Format[rec]{}).RollOnTime(10*time.Second, 4*time.Second).RollOnSize(0)
	file.SetClock(s, func() time.Time { return now })
	w := newPartWriter(t, s, 0)
	// One record a second for 25 s: the rollover interval cuts files of
	// 10 records.
	for i := range int64(25) {
		writeAll(t, w, recs(i, i+1))
		now = now.Add(time.Second)
	}
	// 5 s without a record: the inactivity interval rolls the last file
	// at the checkpoint.
	now = now.Add(5 * time.Second)
	c := prepare(t, w, 1)
	if err := w.Commit([][]byte{c}); err != nil {
		t.Fatal(err)
	}
	parts, hiddenFiles := published(t, dir)
	if len(hiddenFiles) != 0 || len(parts) != 3 {
		t.Fatalf("parts %v, hidden %v; want 3 parts, nothing hidden", parts, hiddenFiles)
	}
	var sizes []int
	for _, p := range parts {
		sizes = append(sizes, len(readRecs(t, filepath.Join(dir, p))))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{5, 10, 10}) {
		t.Fatalf("records per file %v, want 10, 10 and 5", sizes)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPartSinkBuckets(t *testing.T) {
	dir := t.TempDir()
	w := newPartWriter(t, file.Sink[rec](dir, jsonl.Format[rec]{}).RollOnCheckpoint(true).Buckets(file.BucketByField(func(r rec) string { return "key=" + r.Key })), 0)
	all := recs(0, 30)
	writeAll(t, w, all)
	c := prepare(t, w, 1)
	if err := w.Commit([][]byte{c}); err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		key := fmt.Sprintf("k%d", k)
		got := readRecs(t, filepath.Join(dir, "key="+key))
		var want []rec
		for _, r := range all {
			if r.Key == key {
				want = append(want, r)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("bucket key=%s holds %v, want %v", key, got, want)
		}
	}

	// Event time, hourly: records 0..7199 s in two hours.
	dir = t.TempDir()
	w = newPartWriter(t, file.Sink[rec](dir, jsonl.Format[rec]{}).RollOnCheckpoint(true).Buckets(file.BucketByEventTime[rec]("", nil)), 0)
	for _, id := range []int64{0, 3599, 3600, 7199} {
		if err := w.Write(rec{ID: id}, id*1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit([][]byte{prepare(t, w, 1)}); err != nil {
		t.Fatal(err)
	}
	for hour, want := range map[string][]int64{"1970-01-01--00": {0, 3599}, "1970-01-01--01": {3600, 7199}} {
		var ids []int64
		for _, r := range readRecs(t, filepath.Join(dir, hour)) {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("bucket %s holds %v, want %v", hour, ids, want)
		}
	}
	if err := w.Write(rec{ID: 1}, math.MinInt64); err == nil || !strings.Contains(err.Error(), "no timestamp") {
		t.Fatalf("a record without a timestamp: %v", err)
	}

	for _, bad := range []string{"../up", "/abs", "a/.hidden", "_tmp"} {
		w := newPartWriter(t, file.Sink[rec](t.TempDir(), jsonl.Format[rec]{}).Buckets(file.BucketByField(func(r rec) string { return bad })), 0)
		if err := w.Write(rec{ID: 7}, 0); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bucket %q of record", bad)) {
			t.Fatalf("bucket %q: %v", bad, err)
		}
		w.Abort()
	}
}

// TestPartSinkRecoversInProgressFiles: a row-format file that stays open
// over a checkpoint is published by a recovery from that checkpoint, cut
// to what the checkpoint covered; what the failed writer wrote after it
// and the files it started after it do not appear.
func TestPartSinkRecoversInProgressFiles(t *testing.T) {
	dir := t.TempDir()
	s := file.Sink[rec](dir, jsonl.Format[rec]{}).RollOnSize(600).Buckets(file.BucketByField(func(r rec) string { return r.Key }))
	w := newPartWriter(t, s, 0)
	writeAll(t, w, recs(0, 100))
	c1 := prepare(t, w, 1)
	if err := w.Commit([][]byte{c1}); err != nil {
		t.Fatal(err)
	}
	rolled1, _ := published(t, dir)
	c2 := prepare(t, w, 2) // nothing new: the same open files
	writeAll(t, w, recs(100, 200))
	_ = prepare(t, w, 3) // never completes
	writeAll(t, w, recs(200, 250))
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	parts, _ := published(t, dir)
	if len(rolled1) == 0 || !slices.Equal(parts, rolled1) {
		t.Fatalf("published after checkpoint 1: %v, after the abort: %v", rolled1, parts)
	}
	if got := byID(readRecs(t, dir)); len(got) >= 100 {
		t.Fatalf("checkpoint 1 published %d records before a recovery, want the rolled files only", len(got))
	}

	// The restarted writer commits the restored checkpoint 2 (with 1's
	// transaction if its commit had not happened), twice to be sure.
	w2 := newPartWriter(t, s, 0)
	for range 2 {
		if err := w2.Commit([][]byte{c1, c2}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := byID(readRecs(t, dir)), recs(0, 100); !slices.Equal(got, want) {
		t.Fatalf("after the recovery the files hold %d records, want the %d before checkpoint 2", len(got), len(want))
	}
	// The files the failed writer prepared for checkpoint 3 stay, hidden:
	// for all it knew, checkpoint 3 completed and a recovery from it would
	// publish them. (Flink leaves them too.)
	w2.Abort()
}

func TestPartSinkRejectsForeignTransactions(t *testing.T) {
	w := newPartWriter(t, file.Sink[rec](t.TempDir(), jsonl.Format[rec]{}), 0)
	defer w.Abort()
	for _, c := range []string{
		`[{"inprogress":"../.part-x.inprogress","final":"../part-x","length":1}]`,
		`[{"inprogress":"a","final":"part-x","length":1}]`,
		`[{"inprogress":".other.inprogress","final":"other","length":1}]`,
		`{`,
	} {
		if err := w.Commit([][]byte{[]byte(c)}); err == nil || !strings.Contains(err.Error(), "decode transaction") {
			t.Fatalf("committable %s: %v", c, err)
		}
	}
}
