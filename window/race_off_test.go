//go:build !race

package window_test

const raceEnabled = false
