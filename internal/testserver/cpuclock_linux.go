package testserver

import (
	"fmt"
	"syscall"
	"time"
)

// cpuClockKind says what [cpuClock] measures, for the docs and tests.
const cpuClockKind = "thread CPU time"

// cpuClock returns the CPU time, user and system, that the calling thread
// has used (getrusage RUSAGE_THREAD, microseconds). The caller locks its
// goroutine to the thread so that this is the goroutine's CPU time.
func cpuClock() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0, fmt.Errorf("reading the thread's CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
