package verify

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestCompareCountsLostAndDuplicatedAsMultisets(t *testing.T) {
	for _, tt := range []struct {
		name            string
		got, want       []string
		lost, duplicate int
	}{
		{"equal", []string{"a 1", "a 2", "b 1"}, []string{"a 1", "a 2", "b 1"}, 0, 0},
		{"one duplicated", []string{"a 1", "a 1", "a 2", "b 1"}, []string{"a 1", "a 2", "b 1"}, 0, 1},
		{"one lost", []string{"a 1", "b 1"}, []string{"a 1", "a 2", "b 1"}, 1, 0},
		{"both", []string{"a 1", "a 1", "b 1"}, []string{"a 1", "a 2", "b 1"}, 1, 1},
		{"lines the reference has twice", []string{"x", "x"}, []string{"x", "x", "x"}, 1, 0},
		{"nothing committed", nil, []string{"a 1", "b 1"}, 2, 0},
		{"nothing expected", []string{"a 1"}, nil, 0, 1},
	} {
		got, want := slices.Sorted(slices.Values(tt.got)), slices.Sorted(slices.Values(tt.want))
		lost, dup, ex := compare(got, want)
		if lost != tt.lost || dup != tt.duplicate {
			t.Errorf("%s: lost %d, duplicated %d, want %d and %d (examples %q)", tt.name, lost, dup, tt.lost, tt.duplicate, ex)
		}
		if (lost+dup > 0) != (len(ex) > 0) {
			t.Errorf("%s: examples %q for %d differences", tt.name, ex, lost+dup)
		}
	}
}

func TestOptionsRefuseWhatCannotWork(t *testing.T) {
	base := func() Options {
		return Options{Weir: "weir", Program: "job", Args: []string{"--output", "{output}"}, Parallelism: 2, TaskManagers: 3, Slots: 2,
			Faults: []string{KillWorker}, MinInterval: 1, MaxInterval: 2, Dir: t.TempDir()}
	}
	for _, tt := range []struct {
		name   string
		change func(*Options)
	}{
		{"no output placeholder", func(o *Options) { o.Args = []string{"--output", "out"} }},
		{"a table sink without a run placeholder", func(o *Options) {
			o.Committed = func(string) ([]string, error) { return nil, nil }
		}},
		{"unknown kind", func(o *Options) { o.Faults = []string{"meteor"} }},
		{"no kinds", func(o *Options) { o.Faults = nil }},
		{"stop shorter than the heartbeat timeout", func(o *Options) {
			o.Faults, o.StopFor, o.HeartbeatTimeout = []string{StopTaskManager}, 1, 2
		}},
		{"interval", func(o *Options) { o.MinInterval, o.MaxInterval = 2, 1 }},
		{"interval, with a job larger than the TaskManagers left after a kill", func(o *Options) {
			o.Faults, o.Parallelism, o.MinInterval, o.MaxInterval = []string{KillTaskManager}, 6, 2, 1
		}},
	} {
		o := base()
		tt.change(&o)
		if err := o.check(); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	o := base()
	if err := o.check(); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
	// A sink that commits to a table per run names it after {run}.
	o = base()
	o.Args = []string{"--table", "words_{run}"}
	var read []string
	o.Committed = func(run string) ([]string, error) { read = append(read, run); return []string{"b", "a"}, nil }
	if err := o.check(); err != nil {
		t.Errorf("table sink refused: %v", err)
	}
	if got := o.args(filepath.Join(o.Dir, "round-3"), "chk"); got[1] != "words_round_3" {
		t.Errorf("args = %q, want the table words_round_3", got)
	}
	if got, err := o.committed(filepath.Join(o.Dir, "round-3")); err != nil || !slices.Equal(got, []string{"a", "b"}) || !slices.Equal(read, []string{"round_3"}) {
		t.Errorf("committed = %q, %v after reading %q; want a, b sorted from round_3", got, err, read)
	}
}

func TestReportIsOKOnlyWithoutViolations(t *testing.T) {
	r := &Report{Rounds: []Round{{State: "FINISHED"}}}
	for _, tt := range []struct {
		lost, dup int
		state     string
		ok        bool
	}{{0, 0, "FINISHED", true}, {1, 0, "FINISHED", false}, {0, 1, "FINISHED", false}, {0, 0, "TIMEOUT", false}} {
		r.Lost, r.Duplicated, r.Rounds[0].State = tt.lost, tt.dup, tt.state
		if got := r.judge(); got != tt.ok {
			t.Errorf("lost %d, duplicated %d, round %s: ok %v, want %v", tt.lost, tt.dup, tt.state, got, tt.ok)
		}
	}
}
