package planner

import (
	"strings"
	"testing"
	"time"
)

func TestExecOptionsParse(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"1 h": time.Hour, "3600000": time.Hour, "1h": time.Hour, "60 s": time.Minute, "0": 0, "10 min": 10 * time.Minute, "300 ms": 300 * time.Millisecond,
	} {
		o, err := ParseExecOptions(map[string]string{OptStateTTL: v})
		if err != nil || o.StateTTL != want {
			t.Errorf("ttl %q: %v, %v; want %v", v, o.StateTTL, err, want)
		}
	}
	for _, bad := range [][2]string{
		{OptStateTTL, "soon"}, {OptStateTTL, "1 fortnight"}, {OptMiniBatchEnabled, "yes please"},
		{OptMiniBatchSize, "many"}, {OptAggPhase, "THREE_PHASE"}, {OptMiniBatchLatency, "x"},
		{OptSourceIdle, "a while"}, {OptSourceIdle, "-1 s"},
	} {
		if err := CheckExecOption(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s = %q: error %v", bad[0], bad[1], err)
		}
	}
	if _, err := ParseExecOptions(map[string]string{OptMiniBatchEnabled: "true", OptMiniBatchSize: "100"}); err == nil {
		t.Error("mini-batch without a latency was accepted")
	}
	if _, err := ParseExecOptions(map[string]string{OptMiniBatchEnabled: "true", OptMiniBatchLatency: "1 s"}); err == nil {
		t.Error("mini-batch without a size was accepted")
	}
	if o, err := ParseExecOptions(map[string]string{OptSourceIdle: "30 s"}); err != nil || o.SourceIdleTimeout != 30*time.Second {
		t.Errorf("idle timeout: %v, %v", o.SourceIdleTimeout, err)
	}
	if o, _ := ParseExecOptions(nil); o.SourceIdleTimeout != 0 {
		t.Errorf("idle timeout by default %v, want 0 (off, as in Flink)", o.SourceIdleTimeout)
	}
	o, err := ParseExecOptions(map[string]string{OptMiniBatchEnabled: "TRUE", OptMiniBatchLatency: "2 s", OptMiniBatchSize: "5000", OptAggPhase: "two_phase"})
	if err != nil || !o.MiniBatch || o.MiniBatchLatency != 2*time.Second || o.MiniBatchSize != 5000 || o.AggPhase != "TWO_PHASE" {
		t.Errorf("got %+v, %v", o, err)
	}
}
