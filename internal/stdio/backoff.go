package stdio

import "time"

// Backoff is the restart delay of a child that exited: Min after the first
// failure, doubled after each next one, at most Max. A child that stayed
// up for Max or longer before it exited starts the count again.
type Backoff struct {
	// Min is the first delay; 0 means 1s.
	Min time.Duration
	// Max bounds the delay; 0 means 30s.
	Max time.Duration
}

func (b Backoff) bounds() (lo, hi time.Duration) {
	lo, hi = b.Min, b.Max
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// Next returns the delay before the next start and the failure count
// after this exit, given the failures counted before it and how long the
// child was up this time.
func (b Backoff) Next(failures int, up time.Duration) (time.Duration, int) {
	lo, hi := b.bounds()
	if up >= hi {
		failures = 0
	}
	d := lo
	for i := 0; i < failures && d < hi; i++ {
		d *= 2
	}
	return min(d, hi), failures + 1
}
