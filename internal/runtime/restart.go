package runtime

import (
	"fmt"
	"math"
	"time"

	"github.com/weirproject/weir/config"
)

// RestartStrategy decides whether and when a failed job restarts. It sees
// each failure with the time it happened and how long the failed attempt
// ran. The mini cluster restarts attempts with it, the cluster whole jobs.
type RestartStrategy interface {
	// OnFailure returns the pause before the restart, or an error that
	// says why the job must fail instead.
	OnFailure(now time.Time, ran time.Duration) (time.Duration, error)
}

// NewRestartStrategy returns the strategy the restart-strategy.* options
// describe; def is the type to use when restart-strategy.type is not set.
func NewRestartStrategy(cfg *config.Configuration, def string) RestartStrategy {
	typ := config.RestartStrategy.Get(cfg)
	if !cfg.IsSet(config.RestartStrategy.Key) {
		typ = def
	}
	switch typ {
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

func (noRestart) OnFailure(time.Time, time.Duration) (time.Duration, error) {
	return 0, fmt.Errorf("restart-strategy.type is none")
}

// fixedDelay restarts a fixed number of times with a fixed pause.
type fixedDelay struct {
	attempts, used int
	delay          time.Duration
}

func (s *fixedDelay) OnFailure(time.Time, time.Duration) (time.Duration, error) {
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

func (s *failureRate) OnFailure(now time.Time, _ time.Duration) (time.Duration, error) {
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

func (s *exponentialDelay) OnFailure(_ time.Time, ran time.Duration) (time.Duration, error) {
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
