package config

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestSetParsesEveryKind(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // canonical form stored
	}{
		// Int
		{"parallelism.default", "4", "4"},
		{"parallelism.default", " 0 ", "0"},
		{"parallelism.default", "+7", "7"},
		{"pipeline.max-parallelism", "32768", "32768"},
		{"taskmanager.network.memory.floating-buffers-per-gate", "0", "0"},
		// Bool
		{"pipeline.force-serialization", "true", "true"},
		{"pipeline.force-serialization", "TRUE", "true"},
		{"pipeline.operator-chaining", "False", "false"},
		// String, kept verbatim
		{"pipeline.name", "word count", "word count"},
		{"pipeline.name", "", ""},
		// Duration, Flink forms
		{"execution.buffer-timeout", "100 ms", "100 ms"},
		{"execution.buffer-timeout", "100ms", "100 ms"},
		{"execution.buffer-timeout", "10 s", "10 s"},
		{"execution.buffer-timeout", "10s", "10 s"},
		{"execution.buffer-timeout", "1 min", "1 min"},
		{"execution.buffer-timeout", "60 s", "1 min"},
		{"execution.buffer-timeout", "2 h", "2 h"},
		{"execution.buffer-timeout", "1d", "1 d"},
		{"execution.buffer-timeout", "3 Seconds", "3 s"},
		{"execution.buffer-timeout", "500", "500 ms"},
		{"execution.buffer-timeout", "0", "0 ms"},
		{"execution.buffer-timeout", "1500 us", "1500 us"},
		{"execution.buffer-timeout", "7ns", "7 ns"},
		// Duration, Go forms
		{"execution.buffer-timeout", "1m30s", "90 s"},
		{"execution.buffer-timeout", "1.5h", "90 min"},
		// Duration, -1 disables timed flushing
		{"execution.buffer-timeout", "-1", "-1 ms"},
		{"execution.buffer-timeout", "-1 ms", "-1 ms"},
		{"execution.buffer-timeout", "-1ms", "-1 ms"},
		{"execution.checkpointing.interval", "30 s", "30 s"},
		// MemorySize
		{"taskmanager.network.memory.buffer-size", "32kb", "32 kb"},
		{"taskmanager.network.memory.buffer-size", "32 KiB", "32 kb"},
		{"taskmanager.network.memory.buffer-size", "64m", "64 mb"},
		{"taskmanager.network.memory.buffer-size", "1 gb", "1 gb"},
		{"taskmanager.network.memory.buffer-size", "1 GiB", "1 gb"},
		{"taskmanager.network.memory.buffer-size", "2t", "2 tb"},
		{"state.storage.fs.memory-threshold", "1024", "1 kb"},
		{"state.storage.fs.memory-threshold", "1000", "1000 bytes"},
		{"state.storage.fs.memory-threshold", "10 b", "10 bytes"},
		{"state.storage.fs.memory-threshold", "2048 bytes", "2 kb"},
		// Enum, case-insensitive input, canonical spelling stored
		{"execution.runtime-mode", "batch", "BATCH"},
		{"execution.runtime-mode", "Automatic", "AUTOMATIC"},
		{"state.backend.type", "PEBBLE", "pebble"},
		{"execution.checkpointing.mode", "at_least_once", "AT_LEAST_ONCE"},
		{"restart-strategy.type", "Fixed-Delay", "fixed-delay"},
	}
	for _, tt := range tests {
		c := New()
		if err := c.Set(tt.key, tt.value); err != nil {
			t.Errorf("Set(%q, %q): %v", tt.key, tt.value, err)
			continue
		}
		if got := c.Map()[tt.key]; got != tt.want {
			t.Errorf("Set(%q, %q) stored %q, want %q", tt.key, tt.value, got, tt.want)
		}
	}
}

func TestSetRejectsInvalidValues(t *testing.T) {
	tests := []struct {
		key, value string
		reason     string // expected tail of the error
	}{
		{"parallelism.default", "abc", "expected an integer >= 0"},
		{"parallelism.default", "-1", "expected an integer >= 0"},
		{"parallelism.default", "1.5", "expected an integer >= 0"},
		{"parallelism.default", "", "expected an integer >= 0"},
		{"parallelism.default", "99999999999999999999", "expected an integer >= 0"},
		{"pipeline.max-parallelism", "32769", "expected an integer between 0 and 32768"},
		{"taskmanager.network.buffer-records", "0", "expected an integer >= 1"},
		{"taskmanager.network.memory.buffers-per-channel", "0", "expected an integer >= 1"},
		{"pipeline.operator-chaining", "yes", "expected true or false"},
		{"pipeline.operator-chaining", "1", "expected true or false"},
		{"execution.buffer-timeout", "abc", `expected a duration such as "100 ms", "10 s", "1 min" or "1m30s"`},
		{"execution.buffer-timeout", "10 parsecs", `expected a duration such as`},
		{"execution.buffer-timeout", "", `expected a duration such as`},
		{"execution.buffer-timeout", "-2 ms", "expected a duration >= 0, or -1 ms to disable"},
		{"execution.buffer-timeout", "-1 s", "expected a duration >= 0, or -1 ms to disable"},
		{"execution.buffer-timeout", "9999999999999 d", "duration out of range"},
		{"execution.checkpointing.interval", "-1", "expected a duration >= 0"},
		{"pipeline.auto-watermark-interval", "-5s", "expected a duration >= 0"},
		{"taskmanager.network.memory.buffer-size", "lots", `expected a memory size such as "32 kb", "64m" or "1 gb"`},
		{"taskmanager.network.memory.buffer-size", "-1kb", "expected a memory size such as"},
		{"taskmanager.network.memory.buffer-size", "1.5 mb", "expected a memory size such as"},
		{"taskmanager.network.memory.buffer-size", "32 kilo", "expected a memory size such as"},
		{"taskmanager.network.memory.buffer-size", "2048", "expected a memory size >= 4 kb"},
		{"taskmanager.network.memory.buffer-size", "9999999 tb", "memory size out of range"},
		{"execution.runtime-mode", "streamin", "expected one of STREAMING, BATCH, AUTOMATIC"},
		{"state.backend.type", "rocksdb", "expected one of hashmap, pebble"},
	}
	for _, tt := range tests {
		c := New()
		err := c.SetFrom("conf.yaml:3", tt.key, tt.value)
		if err == nil {
			t.Errorf("Set(%q, %q) succeeded, want error", tt.key, tt.value)
			continue
		}
		prefix := `config: invalid value "` + tt.value + `" for "` + tt.key + `" (conf.yaml:3): `
		if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg[len(prefix):], tt.reason) {
			t.Errorf("Set(%q, %q) error = %q, want %q followed by %q", tt.key, tt.value, msg, prefix, tt.reason)
		}
		if c.IsSet(tt.key) {
			t.Errorf("Set(%q, %q) failed but stored a value", tt.key, tt.value)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	c := New()
	err := c.SetFrom("conf.yaml:3", "taskmanager.network.buffer-records", "abc")
	want := `config: invalid value "abc" for "taskmanager.network.buffer-records" (conf.yaml:3): expected an integer >= 1`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	err = c.Set("pipeline.operator-chaining", "maybe")
	want = `config: invalid value "maybe" for "pipeline.operator-chaining": expected true or false`
	if err == nil || err.Error() != want {
		t.Errorf("error without source = %v, want %s", err, want)
	}
}

func TestTypedGetAndSet(t *testing.T) {
	var nilConf *Configuration
	if got := BufferTimeout.Get(nilConf); got != 100*time.Millisecond {
		t.Errorf("BufferTimeout.Get(nil) = %v, want default 100ms", got)
	}
	c := New()
	if got := OperatorChaining.Get(c); !got {
		t.Errorf("OperatorChaining default = false, want true")
	}
	if got := RuntimeMode.Get(c); got != RuntimeModeStreaming {
		t.Errorf("RuntimeMode default = %q", got)
	}

	Parallelism.Set(c, 8)
	BufferTimeout.Set(c, -time.Millisecond)
	AutoWatermarkInterval.Set(c, 1500*time.Microsecond)
	NetworkBufferSize.Set(c, 64<<20)
	RuntimeMode.Set(c, "batch")
	PipelineName.Set(c, " spaced ")
	ForceSerialization.Set(c, true)

	if got := Parallelism.Get(c); got != 8 {
		t.Errorf("Parallelism = %d", got)
	}
	if got := BufferTimeout.Get(c); got != -time.Millisecond {
		t.Errorf("BufferTimeout = %v", got)
	}
	if got := AutoWatermarkInterval.Get(c); got != 1500*time.Microsecond {
		t.Errorf("AutoWatermarkInterval = %v", got)
	}
	if got := NetworkBufferSize.Get(c); got != 64<<20 {
		t.Errorf("NetworkBufferSize = %d", got)
	}
	if got := RuntimeMode.Get(c); got != RuntimeModeBatch {
		t.Errorf("RuntimeMode = %q, want canonical BATCH", got)
	}
	if got := PipelineName.Get(c); got != " spaced " {
		t.Errorf("PipelineName = %q", got)
	}
	if !ForceSerialization.Get(c) {
		t.Errorf("ForceSerialization = false")
	}
	want := map[string]string{
		"parallelism.default":                    "8",
		"execution.buffer-timeout":               "-1 ms",
		"pipeline.auto-watermark-interval":       "1500 us",
		"taskmanager.network.memory.buffer-size": "64 mb",
		"execution.runtime-mode":                 "BATCH",
		"pipeline.name":                          " spaced ",
		"pipeline.force-serialization":           "true",
	}
	if got := c.Map(); !maps.Equal(got, want) {
		t.Errorf("Map() = %v, want %v", got, want)
	}
}

func TestTypedSetPanicsOnInvalidValue(t *testing.T) {
	tests := []struct {
		name string
		set  func(*Configuration)
	}{
		{"int below min", func(c *Configuration) { BufferRecords.Set(c, 0) }},
		{"enum not listed", func(c *Configuration) { StateBackend.Set(c, "rocksdb") }},
		{"negative duration", func(c *Configuration) { CheckpointInterval.Set(c, -time.Second) }},
		{"option outside the catalog", func(c *Configuration) { Option[int]{Key: "parallelism.default"}.Set(c, 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic")
				}
			}()
			tt.set(New())
		})
	}
}

func TestCatalog(t *testing.T) {
	infos := Options()
	if len(infos) != len(catalog) {
		t.Fatalf("Options() returned %d options, catalog has %d", len(infos), len(catalog))
	}
	for i, o := range infos {
		if i > 0 && infos[i-1].Key >= o.Key {
			t.Errorf("Options() not sorted: %q before %q", infos[i-1].Key, o.Key)
		}
		if o.Description == "" || o.Type == "" {
			t.Errorf("%s: missing type or description", o.Key)
		}
		// Every default must be a valid value of its own option, and
		// canonical.
		c := New()
		if err := c.Set(o.Key, o.Default); err != nil {
			t.Errorf("default of %s: %v", o.Key, err)
		} else if got := c.Map()[o.Key]; got != o.Default {
			t.Errorf("default of %s is %q, canonical form %q", o.Key, o.Default, got)
		}
		if (o.Type == "Enum") != (len(o.Values) > 0) {
			t.Errorf("%s: type %s with values %v", o.Key, o.Type, o.Values)
		}
	}
	defaults := map[string]string{
		"parallelism.default":                                              "0",
		"pipeline.max-parallelism":                                         "0",
		"pipeline.name":                                                    "",
		"pipeline.auto-watermark-interval":                                 "200 ms",
		"pipeline.force-serialization":                                     "false",
		"pipeline.operator-chaining":                                       "true",
		"execution.runtime-mode":                                           "STREAMING",
		"execution.buffer-timeout":                                         "100 ms",
		"taskmanager.numberOfTaskSlots":                                    "0",
		"taskmanager.network.buffer-records":                               "1024",
		"taskmanager.network.memory.buffers-per-channel":                   "2",
		"taskmanager.network.memory.floating-buffers-per-gate":             "8",
		"taskmanager.network.memory.buffer-size":                           "32 kb",
		"state.backend.type":                                               "hashmap",
		"execution.checkpointing.interval":                                 "0 ms",
		"execution.checkpointing.mode":                                     "EXACTLY_ONCE",
		"restart-strategy.type":                                            "none",
		"restart-strategy.fixed-delay.attempts":                            "3",
		"restart-strategy.fixed-delay.delay":                               "1 s",
		"execution.checkpointing.timeout":                                  "10 min",
		"state.checkpoints.dir":                                            "",
		"state.checkpoint-storage.jobmanager.max-size":                     "5 mb",
		"io.tmp.dirs":                                                      "",
		"state.storage.fs.memory-threshold":                                "20 kb",
		"state.backend.incremental":                                        "true",
		"state.backend.pebble.block-cache-size":                            "32 mb",
		"state.backend.pebble.l0-compaction-threshold":                     "16",
		"state.backend.pebble.cache-size":                                  "64 mb",
		"execution.checkpointing.min-pause":                                "0 ms",
		"execution.checkpointing.unaligned.enabled":                        "false",
		"execution.checkpointing.aligned-checkpoint-timeout":               "0 ms",
		"execution.checkpointing.max-concurrent-checkpoints":               "1",
		"execution.checkpointing.tolerable-failed-checkpoints":             "-1",
		"execution.checkpointing.externalized-checkpoint-retention":        "DELETE_ON_CANCELLATION",
		"state.checkpoints.num-retained":                                   "1",
		"restart-strategy.failure-rate.max-failures-per-interval":          "1",
		"restart-strategy.failure-rate.failure-rate-interval":              "1 min",
		"restart-strategy.failure-rate.delay":                              "1 s",
		"restart-strategy.exponential-delay.initial-backoff":               "1 s",
		"restart-strategy.exponential-delay.max-backoff":                   "1 min",
		"restart-strategy.exponential-delay.backoff-multiplier":            "1.5",
		"restart-strategy.exponential-delay.reset-backoff-threshold":       "1 h",
		"restart-strategy.exponential-delay.attempts-before-reset-backoff": "2147483647",
		"jobmanager.rpc.address":                                           "127.0.0.1",
		"jobmanager.rpc.port":                                              "6123",
		"metrics.reporter.prom.port":                                       "",
		"jobmanager.bind-host":                                             "127.0.0.1",
		"rest.address":                                                     "127.0.0.1",
		"rest.port":                                                        "8081",
		"rest.allowed-hosts":                                               "",
		"rest.server.max-content-length":                                   "512 mb",
		"taskmanager.bind-host":                                            "127.0.0.1",
		"taskmanager.memory.managed.size":                                  "256 mb",
		"taskmanager.host":                                                 "",
		"taskmanager.rpc.port":                                             "0",
		"taskmanager.resource-id":                                          "",
		"taskmanager.registration.timeout":                                 "5 min",
		"heartbeat.interval":                                               "1 s",
		"heartbeat.timeout":                                                "5 s",
		"rpc.timeout":                                                      "10 s",
		"scheduler-mode":                                                   "default",
		"slot.request.timeout":                                             "5 min",
		"cluster.evenly-spread-out-slots":                                  "false",
		"execution.fault-injection.signals":                                "false",
		"process.working-dir":                                              "",
		"security.token":                                                   "",
		"security.ssl.enabled":                                             "false",
		"security.ssl.cert":                                                "",
		"security.ssl.key":                                                 "",
		"security.ssl.ca":                                                  "",
		"security.ssl.mutual":                                              "false",
		"high-availability.type":                                           "none",
		"high-availability.etcd.endpoints":                                 "",
		"high-availability.cluster-id":                                     "/default",
		"high-availability.storageDir":                                     "",
		"high-availability.etcd.lease-ttl":                                 "10 s",
	}
	got := make(map[string]string)
	for _, o := range infos {
		got[o.Key] = o.Default
	}
	if !maps.Equal(got, defaults) {
		t.Errorf("catalog defaults = %v, want %v", got, defaults)
	}
}

func TestDerivedMaxParallelism(t *testing.T) {
	tests := []struct{ p, want int }{
		{1, 128}, {85, 128}, {86, 256}, {100, 256}, {171, 256}, {172, 512}, {1000, 2048},
		{20000, 32768}, {1 << 20, 32768},
	}
	for _, tt := range tests {
		if got := DerivedMaxParallelism(tt.p); got != tt.want {
			t.Errorf("DerivedMaxParallelism(%d) = %d, want %d", tt.p, got, tt.want)
		}
	}
}

func TestHAOptionsValidate(t *testing.T) {
	c := New()
	if err := c.SetFrom("ha.yaml:3", "high-availability.etcd.endpoints", " a:2379 , b:2380"); err != nil {
		t.Fatal(err)
	}
	if got := HAEtcdEndpoints.Get(c); got != "a:2379,b:2380" {
		t.Errorf("endpoints = %q", got)
	}
	for key, bad := range map[string][]string{
		"high-availability.etcd.endpoints": {"a", "a:0", "a:70000", ":2379", "http://a:2379", "a:1,,b:2", "a:x"},
		"high-availability.cluster-id":     {"", "/", "a//b", "a/../b", "a b", "ä"},
		"high-availability.type":           {"zookeeper"},
	} {
		for _, v := range bad {
			err := c.SetFrom("ha.yaml:7", key, v)
			if err == nil {
				t.Errorf("%s=%q accepted", key, v)
				continue
			}
			if !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "ha.yaml:7") {
				t.Errorf("%s=%q: error %q does not say what and where", key, v, err)
			}
		}
	}
}
