package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// The memory budget (Options.MemoryLimit; docs/GATEWAY.md, "The memory
// budget"). The process's memory is read every memoryEvery; as it nears
// the budget the gateway sheds, in an order that loses nothing it
// promised: first it stops keeping the events of legacy streams whose
// client still reads (their resume window is not promised past the
// budget), then it refuses new work that would open a stream or a session
// (503 with Retry-After). It never cuts a call in flight, and answers
// resumes of streams it kept.

// MemoryLevel is how near the budget the process is.
type MemoryLevel int32

const (
	MemoryOK MemoryLevel = iota
	// MemoryShedKeeping: legacy streams whose client reads are no longer
	// kept for a resume.
	MemoryShedKeeping
	// MemoryRefuseNew: new streams and sessions are refused too.
	MemoryRefuseNew
)

// The shares of the budget at which each level begins, and the margin
// under them at which it ends (so that a level does not flap).
const (
	shedKeepingAt = 0.70
	refuseNewAt   = 0.85
	levelMargin   = 0.05
)

// memoryEvery is how often the process's memory is read.
const memoryEvery = 100 * time.Millisecond

// levelEps absorbs float rounding at the levels' edges.
const levelEps = 1e-9

// memoryRetry is the Retry-After of a refusal for memory.
const memoryRetry = time.Second

// memoryLevelOf is the level for used bytes of a budget of limit bytes,
// coming from level was: a level is entered at its share and left only
// levelMargin under it. Pure, for the tests.
func memoryLevelOf(used, limit uint64, was MemoryLevel) MemoryLevel {
	if limit == 0 {
		return MemoryOK
	}
	share := float64(used) / float64(limit)
	level := MemoryOK
	switch {
	case share >= refuseNewAt:
		level = MemoryRefuseNew
	case share >= shedKeepingAt:
		level = MemoryShedKeeping
	}
	// Staying: a higher level held until the share is the margin below
	// where it begins.
	if was > level {
		at := shedKeepingAt
		if was == MemoryRefuseNew {
			at = refuseNewAt
		}
		if share > at-levelMargin+levelEps {
			return was
		}
		if was == MemoryRefuseNew && share > shedKeepingAt-levelMargin+levelEps {
			return MemoryShedKeeping
		}
	}
	return level
}

// memoryBudget watches the process's memory against a limit.
type memoryBudget struct {
	limit uint64
	used  func() uint64
	level atomic.Int32
	log   *slog.Logger

	refusedAt atomic.Int64 // unix nanoseconds of the last refusal logged
}

func newMemoryBudget(o *Options, log *slog.Logger) *memoryBudget {
	if o.MemoryLimit <= 0 {
		return nil
	}
	b := &memoryBudget{limit: uint64(o.MemoryLimit), used: o.MemoryUsed, log: log}
	if b.used == nil {
		b.used = processMemory
	}
	return b
}

// run reads the memory every memoryEvery until ctx ends.
func (b *memoryBudget) run(ctx context.Context) {
	t := time.NewTicker(memoryEvery)
	defer t.Stop()
	for {
		b.sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample reads the memory once and sets the level.
func (b *memoryBudget) sample() {
	used := b.used()
	was := MemoryLevel(b.level.Load())
	now := memoryLevelOf(used, b.limit, was)
	if now != was {
		b.level.Store(int32(now))
		b.log.Warn("memory budget: level changed", "level", now.String(), "used_bytes", used, "memory_limit", b.limit)
	}
}

// Level is the level now; MemoryOK without a budget.
func (b *memoryBudget) Level() MemoryLevel {
	if b == nil {
		return MemoryOK
	}
	return MemoryLevel(b.level.Load())
}

func (l MemoryLevel) String() string {
	switch l {
	case MemoryShedKeeping:
		return "shed_keeping"
	case MemoryRefuseNew:
		return "refuse_new"
	}
	return "ok"
}

// processMemory is what the process needs, as opposed to what it holds:
// the heap the last collection found live, plus everything the runtime
// holds outside the heap (stacks, metadata). The garbage between
// collections is left out: the Go soft limit, set to the budget, collects
// it before it matters, and counting it would see every process at its
// budget just before each collection.
func processMemory() uint64 {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	heap := s[2].Value.Uint64() + s[3].Value.Uint64() + s[4].Value.Uint64() + s[5].Value.Uint64()
	other := uint64(0)
	if total := s[1].Value.Uint64(); total > heap {
		other = total - heap
	}
	return s[0].Value.Uint64() + other
}

// errMemoryBudget answers new work refused for memory.
var errMemoryBudget = &mcpmsg.Error{Status: http.StatusServiceUnavailable, Code: mcpmsg.CodeInternalError,
	Message: "the gateway is at its memory budget: retry after " + strconv.FormatInt(memoryRetry.Milliseconds(), 10) + " ms",
	Data:    []byte(`{"retryAfterMs":` + strconv.FormatInt(memoryRetry.Milliseconds(), 10) + `}`)}

// opensNew says whether r would open a new stream or session: a POST that
// carries a JSON-RPC request (its answer may stream; an initialize makes a
// session), or a GET stream that resumes nothing. Notifications,
// responses, DELETEs and resumes pass: they free what is held, or replay
// what was promised.
func opensNew(r *http.Request, q *request) bool {
	switch r.Method {
	case http.MethodPost:
		return q.msg.Kind == mcpmsg.KindRequest
	case http.MethodGet:
		return r.Header.Get("Last-Event-ID") == ""
	}
	return false
}

// refuseForMemory answers r 503 when the budget refuses new work and r
// would open some, and reports whether it did. A line is logged at most
// every 10 s; every refusal is counted.
func (g *Gateway) refuseForMemory(w http.ResponseWriter, r *http.Request, q *request, rec *record) bool {
	if g.mem.Level() < MemoryRefuseNew || !opensNew(r, q) {
		return false
	}
	g.metrics.memoryShed.WithLabelValues("refused").Inc()
	now := time.Now().UnixNano()
	if last := g.mem.refusedAt.Load(); now-last >= int64(10*time.Second) && g.mem.refusedAt.CompareAndSwap(last, now) {
		g.log.Warn("memory budget: refusing new streams and sessions", "memory_limit", g.mem.limit)
	}
	setRetryAfter(w, memoryRetry)
	rec.reject(w, errMemoryBudget, q.id())
	return true
}
