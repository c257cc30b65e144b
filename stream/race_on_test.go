//go:build race

package stream_test

// raceEnabled lets the slowest tests skip under the race detector, which
// makes them several times slower without covering more code.
const raceEnabled = true
