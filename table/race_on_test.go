//go:build race

package table_test

// raceEnabled shortens the random SQL run under the race detector, which
// makes every query several times slower without covering more code.
const raceEnabled = true
