//go:build !race

package gateway

// raceEnabled skips allocation counts: under the race detector sync.Pool
// drops items on purpose.
const raceEnabled = false
