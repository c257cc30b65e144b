package runtime

import (
	"fmt"
	"math"
	"time"

	"github.com/weirproject/weir/config"
)

// restartStrategy decides whether and when a failed job restarts. It sees
// each failure with the time it happened and how long the failed attempt
// ran.
type restartStrategy interface {
	// onFailure returns the pause before the restart, or an error that
	// says why the job must fail instead.
	onFailure(now time.Time, ran time.Duration) (time.Duration, error)
}

func newRestartStrategy(cfg *config.Configuration) restartStrategy {
	switch config.RestartStrategy.Get(cfg) {
	case config.RestartStrategyFixedDelay:
		return &fixedDelay{attempts: config.RestartAttempts.Get(cfg), delay: config.RestartDelay.Get(cfg)}
	case config.RestartStrategyFailureRate:
		return &failureRate{
			max:      config.FailureRateMaxFailures.Get(cfg),
			interval: config.FailureRateInterval.Get(cfg),
			delay:    config.FailureRateDelay.Get(cfg),
		}
	case config.RestartStrategyExponentialDelay:
		return &exponentialDelay{
			initial:    config.ExponentialInitialBackoff.Get(cfg),
			max:        config.ExponentialMaxBackoff.Get(cfg),
			multiplier: config.ExponentialMultiplier.Get(cfg),
			reset:      config.ExponentialResetThreshold.Get(cfg),
			attempts:   config.ExponentialAttempts.Get(cfg),
		}
	}
	return noRestart{}
}

type noRestart struct{}

func (noRestart) onFailure(time.Time, time.Duration) (time.Duration, error) {
	return 0, fmt.Errorf("restart-strategy.type is none")
}

// fixedDelay restarts a fixed number of times with a fixed pause.
type fixedDelay struct {
	attempts, used int
	delay          time.Duration
}

func (s *fixedDelay) onFailure(time.Time, time.Duration) (time.Duration, error) {
	if s.used >= s.attempts {
		return 0, fmt.Errorf("job failed after %d restarts (restart-strategy.fixed-delay.attempts)", s.used)
	}
	s.used++
	return s.delay, nil
}

// failureRate restarts while at most max failures fall within any
// interval.
type failureRate struct {
	max      int
	interval time.Duration
	delay    time.Duration
	failures []time.Time
}

func (s *failureRate) onFailure(now time.Time, _ time.Duration) (time.Duration, error) {
	s.failures = append(s.failures, now)
	recent := s.failures[:0]
	for _, f := range s.failures {
		if now.Sub(f) < s.interval {
			recent = append(recent, f)
		}
	}
	s.failures = recent
	if len(recent) > s.max {
		return 0, fmt.Errorf("job failed %d times within %v (restart-strategy.failure-rate allows %d)", len(recent), s.interval, s.max)
	}
	return s.delay, nil
}

// exponentialDelay restarts with a pause that grows by multiplier up to
// max, and starts over after an attempt ran longer than reset.
type exponentialDelay struct {
	initial, max, reset time.Duration
	multiplier          float64
	attempts, used      int
	next                time.Duration
}

func (s *exponentialDelay) onFailure(_ time.Time, ran time.Duration) (time.Duration, error) {
	if s.next == 0 || ran >= s.reset {
		s.next, s.used = s.initial, 0
	}
	if s.used >= s.attempts {
		return 0, fmt.Errorf("job failed after %d restarts (restart-strategy.exponential-delay.attempts-before-reset-backoff)", s.used)
	}
	s.used++
	d := s.next
	s.next = time.Duration(math.Min(float64(s.max), float64(s.next)*s.multiplier))
	return d, nil
}
