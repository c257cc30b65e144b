package stream_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newEnv returns an environment for tests with the given parallelism and
// options as key/value pairs.
func newEnv(t testing.TB, parallelism int, kv ...string) *stream.Environment {
	t.Helper()
	cfg := config.New()
	config.Parallelism.Set(cfg, parallelism)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return stream.NewEnvironmentWithConfig(cfg)
}
