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

// gcLargeLive is the live heap from which gcPercent costs more memory than
// its CPU saving is worth: with streams kept for a resume (up to
// resume.max_total_bytes) the heap would grow to five times them between
// collections. Go's own 100 is used above it.
const gcLargeLive = 32 << 20

// gcPercentFor is the collector's target for a live heap of live bytes,
// coming from was: gcPercent while the heap is small, 100 once it holds
// more than gcLargeLive, back to gcPercent under half of that. Pure.
func gcPercentFor(live uint64, was int) int {
	switch {
	case live > gcLargeLive:
		return 100
	case live < gcLargeLive/2:
		return gcPercent
	}
	return was
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
