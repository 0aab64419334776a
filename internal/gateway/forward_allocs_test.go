package gateway

import (
	"bufio"
	"net"
	"runtime"
	"testing"
)

// maxForwardAllocs is what a plain forwarded tools/call may allocate, the
// h1 front server, the gateway and the h1 pool together (docs/BENCHMARKS.md,
// "Allocations").
const maxForwardAllocs = 10

// TestForwardedRequestAllocations counts the allocations of the
// forwarding benchmark's request (BenchmarkForwardJSON), sent one after
// another on one kept-alive connection to a backend that allocates
// nothing: the best of three rounds, so that a collection emptying the
// pools in one round does not count.
func TestForwardedRequestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items on purpose")
	}
	front := newFrontOn("h1", rawGateway(t))
	defer front.Close()
	c, err := net.Dial("tcp", front.URL[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(n int) {
		for range n {
			if _, err := c.Write(rawRequest); err != nil {
				t.Fatal(err)
			}
			if err := readRawAnswer(br); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(100) // the pools and the upstream connection
	const n = 500
	best := float64(1 << 30)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		send(n)
		runtime.ReadMemStats(&after)
		best = min(best, float64(after.Mallocs-before.Mallocs)/n)
	}
	if best > maxForwardAllocs {
		t.Errorf("%.2f allocations a forwarded request, want at most %d", best, maxForwardAllocs)
	}
	t.Logf("%.2f allocations a forwarded request", best)
}
