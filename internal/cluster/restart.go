package cluster

import (
	"fmt"
	"time"

	"github.com/weirproject/weir/config"
)

// restartStrategy decides whether and when a failed job attempt is
// started again. The cluster restarts a job whole, from its latest
// checkpoint, when its worker fails or its TaskManager is lost.
type restartStrategy interface {
	// onFailure returns the pause before the restart, or why the job must
	// fail instead.
	onFailure(now time.Time, ran time.Duration) (time.Duration, error)
}

// restartStrategyFrom reads a job's restart-strategy.* options. A job that
// sets no restart-strategy.type gets fixed-delay (with the
// restart-strategy.fixed-delay.* options), as Flink gives checkpointed
// jobs: a lost TaskManager should cost a restart, not the job.
func restartStrategyFrom(cfg *config.Configuration) restartStrategy {
	typ := config.RestartStrategyFixedDelay
	if cfg.IsSet(config.RestartStrategy.Key) {
		typ = config.RestartStrategy.Get(cfg)
	}
	switch typ {
	case config.RestartStrategyNone:
		return noRestart{}
	case config.RestartStrategyFailureRate:
		return &failureRate{
			max:      config.FailureRateMaxFailures.Get(cfg),
			interval: config.FailureRateInterval.Get(cfg),
			delay:    config.FailureRateDelay.Get(cfg),
		}
	case config.RestartStrategyExponentialDelay:
		return &exponentialDelay{
			next:       config.ExponentialInitialBackoff.Get(cfg),
			initial:    config.ExponentialInitialBackoff.Get(cfg),
			max:        config.ExponentialMaxBackoff.Get(cfg),
			multiplier: config.ExponentialMultiplier.Get(cfg),
			reset:      config.ExponentialResetThreshold.Get(cfg),
			attempts:   config.ExponentialAttempts.Get(cfg),
		}
	}
	return &fixedDelay{attempts: config.RestartAttempts.Get(cfg), delay: config.RestartDelay.Get(cfg)}
}

type noRestart struct{}

func (noRestart) onFailure(time.Time, time.Duration) (time.Duration, error) {
	return 0, fmt.Errorf("restart-strategy.type is none")
}

type fixedDelay struct {
	attempts, used int
	delay          time.Duration
}

func (s *fixedDelay) onFailure(time.Time, time.Duration) (time.Duration, error) {
	if s.used >= s.attempts {
		return 0, fmt.Errorf("no restart left after %d (restart-strategy.fixed-delay.attempts)", s.used)
	}
	s.used++
	return s.delay, nil
}

type failureRate struct {
	max      int
	interval time.Duration
	delay    time.Duration
	failures []time.Time
}

func (s *failureRate) onFailure(now time.Time, _ time.Duration) (time.Duration, error) {
	recent := s.failures[:0]
	for _, f := range s.failures {
		if now.Sub(f) < s.interval {
			recent = append(recent, f)
		}
	}
	s.failures = append(recent, now)
	if len(s.failures) > s.max {
		return 0, fmt.Errorf("%d failures within %v (restart-strategy.failure-rate.*)", len(s.failures), s.interval)
	}
	return s.delay, nil
}

type exponentialDelay struct {
	next, initial, max, reset time.Duration
	multiplier                float64
	attempts, used            int
}

func (s *exponentialDelay) onFailure(_ time.Time, ran time.Duration) (time.Duration, error) {
	if ran >= s.reset {
		s.next, s.used = s.initial, 0
	}
	if s.used >= s.attempts {
		return 0, fmt.Errorf("no restart left after %d (restart-strategy.exponential-delay.attempts-before-reset-backoff)", s.used)
	}
	s.used++
	d := s.next
	s.next = min(time.Duration(float64(s.next)*s.multiplier), s.max)
	return d, nil
}
