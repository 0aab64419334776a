package testserver

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time, user and system, this process has used.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBurnUsesCPU checks that burn's cost is CPU: the process has used at
// least the ms asked for once the call returns, however long it took.
func TestBurnUsesCPU(t *testing.T) {
	const ms = 300
	_, base := startServer(t, "replica-b", EraBoth)
	cs := connect(t, t.Context(), base, modernVersion, nil)
	before := processCPU(t)
	callText(t, t.Context(), cs, "burn", map[string]any{"ms": ms})
	if used := processCPU(t) - before; used < ms*time.Millisecond {
		t.Errorf("the process used %v of CPU during a burn of %dms", used, ms)
	}
}
