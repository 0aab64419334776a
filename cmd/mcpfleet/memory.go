package main

import (
	"context"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
	"github.com/mcpfleet/mcpfleet/internal/config"
)

// memoryBudget resolves memory_limit against this process's cgroup and
// sets the Go runtime's soft limit to it (unless GOMEMLIMIT says
// otherwise); 0 means no budget.
func memoryBudget(cfg *config.Config, log *slog.Logger) int64 {
	m, _ := config.ParseMemoryLimit(cfg.MemoryLimit) // validated
	cgroup, _ := bottleneck.MemoryLimit()
	limit := m.Resolve(cgroup)
	if limit <= 0 {
		return 0
	}
	if debug.SetMemoryLimit(-1) == math.MaxInt64 { // not set by GOMEMLIMIT
		debug.SetMemoryLimit(limit)
	}
	log.Info("memory budget", "memory_limit", limit, "cgroup_limit", cgroup)
	return limit
}

// sizeToBudget holds a service's own buffers to shares of the budget,
// split over the services: kept streams at most a quarter, the local cache
// an eighth. Keys set lower stay lower.
func sizeToBudget(cfg *config.Config, budget int64, services int) {
	if budget <= 0 {
		return
	}
	n := int64(max(services, 1))
	cfg.Resume.MaxTotalBytes = max(min(cfg.Resume.MaxTotalBytes, budget/4/n), int64(cfg.Resume.MaxStreamBytes))
	cfg.Cache.MaxBytes = int(min(int64(cfg.Cache.MaxBytes), budget/8/n))
}

// sendBufferListener sets every accepted TCP connection's kernel send
// buffer (SO_SNDBUF, sse_send_buffer): a client that stops reading then
// holds that much in the kernel, not the megabytes autotuning would grow.
type sendBufferListener struct {
	net.Listener
	bytes int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		_ = tc.SetWriteBuffer(l.bytes)
	}
	return c, err
}

// gcSteps are the collector's targets by live heap: gcPercent while the
// heap is small; Go's 100 past 32 MiB, where five times the live heap
// between collections costs more memory than its CPU saving is worth
// (streams kept for a resume, a cache); 50 past 96 MiB. A step is left
// under half of where it begins, so that the target does not flap.
var gcSteps = []struct {
	from    uint64
	percent int
}{{0, gcPercent}, {32 << 20, 100}, {96 << 20, 50}}

// gcPercentFor is the collector's target for a live heap of live bytes,
// coming from was. Pure.
func gcPercentFor(live uint64, was int) int {
	step := 0
	for i, st := range gcSteps {
		if live > st.from {
			step = i
		}
	}
	for i, st := range gcSteps {
		// Staying on a higher step until under half of where it begins.
		if st.percent == was && i > step && live > st.from/2 {
			return was
		}
	}
	return gcSteps[step].percent
}

// adaptGC keeps the collector's target at gcPercentFor the live heap,
// read every second, until ctx ends; it does nothing when the operator set
// GOGC.
func adaptGC(ctx context.Context) {
	if os.Getenv("GOGC") != "" {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	cur := gcPercent
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(s)
		if next := gcPercentFor(s[0].Value.Uint64(), cur); next != cur {
			debug.SetGCPercent(next)
			cur = next
		}
	}
}
