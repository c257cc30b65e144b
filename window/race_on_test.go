//go:build race

package window_test

// raceEnabled: the race detector slows the tests down about tenfold, so
// the randomized tests run fewer inputs.
const raceEnabled = true
