package stdio

import "time"

// poolCounts is what a pool of per-session children holds at a moment:
// children leased to a session, and children started (or starting) that
// wait for one.
type poolCounts struct {
	Leased int
	Warm   int
}

// poolLimits are a pool's bounds: at most Max sessions, each with a child
// of its own, and Warm children kept waiting while there is room.
type poolLimits struct {
	Max  int
	Warm int
	// Idle ends a session without a request for this long; 0: never.
	Idle time.Duration
	// MaxAge ends a session this old, busy or not; 0: never.
	MaxAge time.Duration
}

// admits reports whether one more session may take a child: the leased
// children stay under Max (a warm child taken only changes hands).
func (l poolLimits) admits(c poolCounts) bool { return c.Leased < l.Max }

// toStart is how many warm children to start now: the warm count wanted,
// never more than the room Max leaves beside the leased ones, minus those
// already waiting. Leased and warm children together never exceed Max.
func (l poolLimits) toStart(c poolCounts) int {
	want := min(l.Warm, l.Max-c.Leased)
	return max(0, want-c.Warm)
}

// Why a session of the pool ended.
const (
	endIdle   = "idle"
	endMaxAge = "max_age"
)

// expiry says whether a session opened at opened, quiet for quiet (0
// while a call is in flight), ends at now, and why; "" when it goes on.
func (l poolLimits) expiry(opened time.Time, quiet time.Duration, now time.Time) string {
	switch {
	case l.MaxAge > 0 && now.Sub(opened) >= l.MaxAge:
		return endMaxAge
	case l.Idle > 0 && quiet >= l.Idle:
		return endIdle
	}
	return ""
}

// sweepEvery is how often a pool looks for sessions to end: a quarter of
// the shortest of its bounds, between 20ms and 1s, so that a session ends
// within a quarter of its bound after it passed it.
func (l poolLimits) sweepEvery() time.Duration {
	d := time.Second
	for _, b := range []time.Duration{l.Idle, l.MaxAge} {
		if b > 0 {
			d = min(d, b/4)
		}
	}
	return max(d, 20*time.Millisecond)
}
