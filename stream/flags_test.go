package stream_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
)

// parseFlags parses args as a job program's command line and returns the
// environment, or the error of parsing or of building the configuration.
func parseFlags(t *testing.T, args ...string) (*stream.Environment, error) {
	t.Helper()
	fs := flag.NewFlagSet("job", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := stream.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return f.Environment()
}

func mustParseFlags(t *testing.T, args ...string) *stream.Environment {
	t.Helper()
	env, err := parseFlags(t, args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return env
}

func TestFlagsSetTheirOptions(t *testing.T) {
	cases := []struct {
		args      []string
		key, want string
	}{
		{[]string{"--checkpoint-interval", "200ms"}, "execution.checkpointing.interval", "200 ms"},
		{[]string{"--checkpoint-interval=1m30s"}, "execution.checkpointing.interval", "90 s"},
		{[]string{"--checkpoint-interval", "10 s"}, "execution.checkpointing.interval", "10 s"},
		{[]string{"--checkpoint-interval", "0"}, "execution.checkpointing.interval", "0 ms"},
		{[]string{"--checkpoint-dir", "/tmp/chk"}, "state.checkpoints.dir", "/tmp/chk"},
		{[]string{"--checkpoint-dir", "file:///tmp/chk"}, "state.checkpoints.dir", "file:///tmp/chk"},
		{[]string{"--checkpoint-mode", "exactly-once"}, "execution.checkpointing.mode", "EXACTLY_ONCE"},
		{[]string{"--checkpoint-mode", "at-least-once"}, "execution.checkpointing.mode", "AT_LEAST_ONCE"},
		{[]string{"--checkpoint-mode", "AT_LEAST_ONCE"}, "execution.checkpointing.mode", "AT_LEAST_ONCE"},
		{[]string{"--state-backend", "pebble"}, "state.backend.type", "pebble"},
		{[]string{"--state-backend", "HashMap"}, "state.backend.type", "hashmap"},
		{[]string{"-p", "3"}, "parallelism.default", "3"},
		{[]string{"--parallelism", "0"}, "parallelism.default", "0"},
	}
	for _, c := range cases {
		env := mustParseFlags(t, c.args...)
		if got := env.Config().Map()[c.key]; got != c.want {
			t.Errorf("%q: %s = %q, want %q", c.args, c.key, got, c.want)
		}
		if keys := env.Config().Keys(); len(keys) != 1 {
			t.Errorf("%q set %v, want only %s", c.args, keys, c.key)
		}
	}
	// Unset flags leave the options at their defaults.
	if keys := mustParseFlags(t).Config().Keys(); len(keys) != 0 {
		t.Errorf("no flags set %v", keys)
	}
}

func TestFlagsRejectBadValues(t *testing.T) {
	cases := []struct {
		args []string
		want []string // every one must be in the error
	}{
		{[]string{"--checkpoint-interval", "often"}, []string{"checkpoint-interval", `"often"`, "duration"}},
		{[]string{"--checkpoint-interval", "-1s"}, []string{"checkpoint-interval", ">= 0"}},
		{[]string{"--checkpoint-interval", ""}, []string{"checkpoint-interval", "duration"}},
		{[]string{"--checkpoint-mode", "twice"}, []string{"checkpoint-mode", `"twice"`, "exactly-once", "at-least-once"}},
		{[]string{"--checkpoint-mode", ""}, []string{"checkpoint-mode", "exactly-once", "at-least-once"}},
		{[]string{"--state-backend", "rocksdb"}, []string{"state-backend", `"rocksdb"`, "hashmap", "pebble"}},
		{[]string{"--checkpoint-dir", ""}, []string{"checkpoint-dir", "path", "URI"}},
		{[]string{"--checkpoint-dir", "file://%zz/x"}, []string{"checkpoint-dir", "URI"}},
		{[]string{"--parallelism", "-2"}, []string{"parallelism", `"-2"`, ">= 1"}},
		{[]string{"-p", "many"}, []string{"-p", `"many"`}},
		{[]string{"--checkpoint-mode"}, []string{"checkpoint-mode", "needs an argument"}},
	}
	for _, c := range cases {
		_, err := parseFlags(t, c.args...)
		if err == nil {
			t.Errorf("%q: accepted", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not mention %q", c.args, err, w)
			}
		}
	}
}

// TestFlagsAndDefinitionsLastWins: an option flag is -D key=value at the
// same place on the command line, and both override --config.
func TestFlagsAndDefinitionsLastWins(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "conf.yaml")
	yaml := "execution.checkpointing.interval: 5 s\nstate.backend.type: pebble\nparallelism.default: 7\nexecution.checkpointing.mode: AT_LEAST_ONCE\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want map[string]string
	}{
		{[]string{"--config", conf},
			map[string]string{"execution.checkpointing.interval": "5 s", "state.backend.type": "pebble", "parallelism.default": "7"}},
		// Flags override the file wherever --config appears.
		{[]string{"--checkpoint-interval", "100ms", "--state-backend", "hashmap", "-p", "2", "--config", conf},
			map[string]string{"execution.checkpointing.interval": "100 ms", "state.backend.type": "hashmap", "parallelism.default": "2",
				"execution.checkpointing.mode": "AT_LEAST_ONCE"}},
		{[]string{"--config", conf, "--checkpoint-mode", "exactly-once"},
			map[string]string{"execution.checkpointing.mode": "EXACTLY_ONCE", "parallelism.default": "7"}},
		// Between a flag and -D for one key, the later wins.
		{[]string{"-D", "execution.checkpointing.interval=1s", "--checkpoint-interval", "200ms"},
			map[string]string{"execution.checkpointing.interval": "200 ms"}},
		{[]string{"--checkpoint-interval", "200ms", "-D", "execution.checkpointing.interval=1s"},
			map[string]string{"execution.checkpointing.interval": "1 s"}},
		{[]string{"--state-backend", "pebble", "-D", "state.backend.type=hashmap", "--config", conf},
			map[string]string{"state.backend.type": "hashmap"}},
		{[]string{"-D", "state.checkpoints.dir=/a", "--checkpoint-dir", "/b", "-D", "execution.checkpointing.mode=AT_LEAST_ONCE", "--checkpoint-mode", "exactly-once"},
			map[string]string{"state.checkpoints.dir": "/b", "execution.checkpointing.mode": "EXACTLY_ONCE"}},
		{[]string{"-p", "3", "-D", "parallelism.default=5"}, map[string]string{"parallelism.default": "5"}},
		{[]string{"-D", "parallelism.default=5", "--parallelism", "3"}, map[string]string{"parallelism.default": "3"}},
		// A flag repeated: the last one.
		{[]string{"--checkpoint-dir", "/a", "--checkpoint-dir", "/b"}, map[string]string{"state.checkpoints.dir": "/b"}},
	}
	for _, c := range cases {
		got := mustParseFlags(t, c.args...).Config().Map()
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", c.args, k, got[k], v)
			}
		}
	}
	// A bad -D is reported as -D even when a flag for the key follows it.
	_, err := parseFlags(t, "-D", "state.backend.type=rocksdb", "--state-backend", "pebble")
	if err == nil || !strings.Contains(err.Error(), "(-D)") {
		t.Errorf("bad -D before a flag: %v", err)
	}
}

// TestFlagsDriveCheckpointsAndResume runs a job configured only by flags:
// it must write retained checkpoints where --checkpoint-dir says, and a run
// with --from-savepoint must continue from one of them.
func TestFlagsDriveCheckpointsAndResume(t *testing.T) {
	chkDir, out := t.TempDir(), t.TempDir()
	common := []string{"-p", "2", "--checkpoint-interval", "20ms", "--checkpoint-dir", chkDir, "--checkpoint-mode", "exactly-once",
		"--state-backend", "hashmap", "-D", "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION"}
	run := func(extra ...string) (job *stream.JobClient, jobDir string) {
		t.Helper()
		env := mustParseFlags(t, append(append([]string{}, common...), extra...)...)
		if got := config.CheckpointInterval.Get(env.Config()); got != 20*time.Millisecond {
			t.Fatalf("interval %v", got)
		}
		src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: -1, Fn: func(i int64) kv {
			if i%200 == 0 {
				time.Sleep(time.Millisecond)
			}
			return kv{K: i % 37, V: i}
		}}, "numbers").SetParallelism(1).UID("numbers")
		sums := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("sums")
		lines := stream.Map(sums, func(x kv) string { return strconv.FormatInt(x.K, 10) + ":" + strconv.FormatInt(x.V, 10) }).UID("format")
		stream.SinkTo(lines, file.Text[string](out, nil), "files").UID("files")
		before, _ := filepath.Glob(filepath.Join(chkDir, "*"))
		job, err := env.ExecuteAsync(context.Background(), "flags")
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for job.CompletedCheckpoints() < 3 {
			if time.Now().After(deadline) {
				job.Cancel()
				t.Fatalf("%d checkpoints after 20 s", job.CompletedCheckpoints())
			}
			time.Sleep(5 * time.Millisecond)
		}
		job.Cancel()
		if err := job.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		after, _ := filepath.Glob(filepath.Join(chkDir, "*"))
		if len(after) != len(before)+1 {
			t.Fatalf("job directories before %v, after %v", before, after)
		}
		for _, d := range after {
			if !slices.Contains(before, d) {
				jobDir = d
			}
		}
		return job, jobDir
	}
	chk := func(jobDir string) (string, int) {
		t.Helper()
		metas, _ := filepath.Glob(filepath.Join(jobDir, "chk-*", "_metadata"))
		if len(metas) == 0 {
			t.Fatalf("no retained checkpoint in %s", jobDir)
		}
		var ids []int
		for _, m := range metas {
			n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(m)), "chk-"))
			ids = append(ids, n)
		}
		sort.Ints(ids)
		last := ids[len(ids)-1]
		return filepath.Join(jobDir, "chk-"+strconv.Itoa(last)), last
	}

	_, first := run()
	path, id := chk(first)
	_, second := run("--from-savepoint", path)
	if _, id2 := chk(second); id2 <= id {
		t.Fatalf("the resumed run's checkpoint %d does not follow the restored %d", id2, id)
	}

	// Both runs together committed every running sum of one prefix of
	// the generated numbers, each once: the second run restored the sums
	// and the source position of the first one's checkpoint.
	got, err := file.ReadLines(out)
	if err != nil {
		t.Fatal(err)
	}
	perKey := make(map[int64][]int64)
	for _, l := range got {
		k, v, _ := strings.Cut(l, ":")
		kn, _ := strconv.ParseInt(k, 10, 64)
		vn, _ := strconv.ParseInt(v, 10, 64)
		perKey[kn] = append(perKey[kn], vn)
	}
	var total int64
	for k, vs := range perKey {
		sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
		sum := int64(0)
		for j, v := range vs {
			sum += k + 37*int64(j)
			if v != sum {
				t.Fatalf("key %d: update %d is %d, want %d (lost or duplicated updates)", k, j, v, sum)
			}
		}
		total += int64(len(vs))
	}
	if len(perKey) != 37 {
		t.Fatalf("updates of %d keys, want 37", len(perKey))
	}
	// Every sink subtask committed a prefix of the input, its keys' counts
	// within one of each other. The two subtasks may stand one checkpoint
	// apart: a cancelled run's last checkpoint is committed by the
	// subtasks its notification reached, and by the others when a run
	// restores it, which the second run never is.
	var counts []int
	for _, vs := range perKey {
		counts = append(counts, len(vs))
	}
	sort.Ints(counts)
	gaps := 0
	for i := 1; i < len(counts); i++ {
		if counts[i]-counts[i-1] > 1 {
			gaps++
		}
	}
	if gaps > 1 {
		t.Fatalf("updates per key %v (%d in all): more cuts of the input than the two sink subtasks", counts, total)
	}
	t.Logf("%d committed updates over two runs, resumed from checkpoint %d", total, id)
}
