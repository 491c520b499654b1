//go:build race

package session

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// a plan's pooled step state is now and then laid out again.
const raceEnabled = true
