package file

import "time"

// SetClock replaces the sink's clock, for tests of rolling on time.
func SetClock[T any](s *PartSink[T], now func() time.Time) { s.now = now }
