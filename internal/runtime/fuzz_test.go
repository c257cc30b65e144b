package runtime

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirproject/weir/internal/checksum"
	"github.com/weirproject/weir/internal/storage"
)

func fuzzCheckpoint() *CompletedCheckpoint {
	return &CompletedCheckpoint{ID: 7, JobID: "job", Tasks: []*TaskSnapshot{
		{Vertex: "v1", Subtask: 0, Parallelism: 2, Operators: map[string][]byte{"src": {1, 2}}, MaxParallelism: map[string]int{"src": 128}, UIDs: []string{"src"}},
		{Vertex: "v1", Subtask: 1, Parallelism: 2, Operators: map[string][]byte{}, Files: map[string]string{"src": "state"},
			InFlight: map[string][][]byte{"src": {{3}, nil}}, UIDs: []string{"src"}, Finished: true},
	}}
}

// FuzzLoadCheckpoint feeds arbitrary bytes to the decoding of a
// checkpoint's or savepoint's _metadata: directly, and through
// LoadCheckpoint on a directory holding them as _metadata next to a state
// file. A checkpoint that loads must be usable by a restore (stateFor)
// and survive a re-encoding.
func FuzzLoadCheckpoint(f *testing.F) {
	ctx := context.Background()
	seedDir := f.TempDir()
	loc, err := storage.Open(ctx, seedDir)
	if err != nil {
		f.Fatal(err)
	}
	if err := writeCheckpoint(ctx, loc, fuzzCheckpoint(), 1); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join(seedDir, "_metadata"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	inline, _ := json.Marshal(fuzzCheckpoint())
	f.Add(inline)
	f.Add([]byte(`{"ID":1,"Tasks":[null]}`))
	f.Add([]byte(`{"ID":1,"Tasks":[{"Parallelism":1,"Files":{"op":"../../etc/passwd"}}]}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeMetadata(data)
		if err == nil {
			checkLoaded(t, c)
			// Re-encoding settles nil against empty collections; from
			// then on the form is stable.
			c2 := reencode(t, c)
			if c3 := reencode(t, c2); !reflect.DeepEqual(c2, c3) {
				t.Fatalf("re-encoding not stable:\n%+v\n%+v", c2, c3)
			}
		}

		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "_metadata"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "state"), []byte("state bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
		lc, lerr := LoadCheckpoint(dir)
		// A metadata that decodes may still name a state file that is
		// missing, or (format 1) whose checksum does not match its own.
		if (err == nil) != (lerr == nil) && !errors.Is(lerr, os.ErrNotExist) && !errors.Is(lerr, checksum.ErrCorrupt) {
			t.Fatalf("decodeMetadata: %v, LoadCheckpoint: %v", err, lerr)
		}
		if lerr == nil {
			checkLoaded(t, lc)
			for _, task := range lc.Tasks {
				if len(task.Files) != 0 {
					t.Fatalf("state files left unread: %v", task.Files)
				}
			}
		}
	})
}

func checkLoaded(t *testing.T, c *CompletedCheckpoint) {
	t.Helper()
	for _, task := range c.Tasks {
		if task == nil || task.Subtask < 0 || task.Subtask >= task.Parallelism {
			t.Fatalf("loaded an impossible subtask: %+v", task)
		}
	}
	uids := []string{"src", "other"}
	for p := 1; p <= 3; p++ {
		for s := range p {
			c.stateFor(uids, s, p)
		}
	}
}

func reencode(t *testing.T, c *CompletedCheckpoint) *CompletedCheckpoint {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	c2, err := decodeMetadata(data)
	if err != nil {
		t.Fatalf("re-decode %s: %v", data, err)
	}
	return c2
}

// FuzzControlMsg feeds arbitrary bytes to the control link's decoder as
// a stream of gob-encoded messages, as another worker's bytes arrive. A
// message that decodes must pass its checks and survive a re-encoding.
func FuzzControlMsg(f *testing.F) {
	msgs := []controlMsg{
		{Kind: "trigger", Task: 3, ID: 9, Drain: true},
		{Kind: "ack", Task: 1, ID: 9, Snap: fuzzCheckpoint().Tasks[1], Shared: []string{"job/shared/a"}, Sizes: map[string]int64{"job/shared/a": 10}, Uploaded: 10},
		{Kind: "done", Task: 2, Err: "boom"},
		{Kind: "complete", ID: 1<<63 - 1, Wait: true},
	}
	var all bytes.Buffer
	enc := gob.NewEncoder(&all)
	for _, m := range msgs {
		if err := enc.Encode(&m); err != nil {
			f.Fatal(err)
		}
		var one bytes.Buffer
		gob.NewEncoder(&one).Encode(&m)
		f.Add(one.Bytes())
	}
	f.Add(all.Bytes())

	f.Fuzz(func(t *testing.T, data []byte) {
		dec := gob.NewDecoder(bytes.NewReader(data))
		for range 16 {
			m, err := decodeControl(dec)
			if err != nil {
				return
			}
			if err := m.check(); err != nil {
				t.Fatalf("decoded a message that fails its check: %v", err)
			}
			m2 := gobRoundTrip(t, m)
			if m3 := gobRoundTrip(t, m2); !reflect.DeepEqual(m2, m3) {
				t.Fatalf("re-encoding not stable:\n%+v\n%+v", m2, m3)
			}
		}
	})
}

func gobRoundTrip(t *testing.T, m controlMsg) controlMsg {
	t.Helper()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&m); err != nil {
		t.Fatalf("encode %+v: %v", m, err)
	}
	m2, err := decodeControl(gob.NewDecoder(&b))
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("re-decode %+v: %v", m, err)
	}
	return m2
}

// TestControlMsgChecks: messages the handlers cannot act on are decoding
// errors. An acknowledgement without a snapshot used to reach the
// coordinator, which dereferenced the nil snapshot once every subtask
// acknowledged.
func TestControlMsgChecks(t *testing.T) {
	for _, m := range []controlMsg{
		{Kind: "ack", Task: 0, ID: 1},
		{Kind: "ack", Task: 0, ID: 1, Snap: &TaskSnapshot{Subtask: 2, Parallelism: 2}},
		{Kind: "nonsense"},
		{Kind: "done", Task: -1},
		{Kind: "trigger", ID: -5},
		{Kind: "ack", Exited: true, Sizes: map[string]int64{"x": -1}},
	} {
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(&m); err != nil {
			t.Fatal(err)
		}
		if _, err := decodeControl(gob.NewDecoder(&b)); err == nil {
			t.Errorf("%+v: decoded without error", m)
		}
	}
}
