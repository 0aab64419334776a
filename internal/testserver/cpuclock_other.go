//go:build !linux

package testserver

import "time"

// cpuClockKind says what [cpuClock] measures, for the docs and tests.
const cpuClockKind = "wall time"

// cpuClock returns the wall time since a fixed point: without cgo there is
// no portable per-thread CPU clock, so outside Linux burn runs a tight loop
// for ms of wall time, which is CPU time while the thread is not preempted.
func cpuClock() (time.Duration, error) {
	return time.Since(clockStart), nil
}

// clockStart is the fixed point of cpuClock.
var clockStart = time.Now()
