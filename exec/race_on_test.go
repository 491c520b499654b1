//go:build race

package exec

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// a pooled step state is now and then laid out again.
const raceEnabled = true
