package load

import (
	"sync"
	"time"
)

// meter counts what the clients saw, with the time of each event that the
// timeline shows.
type meter struct {
	t0      time.Time
	runaway int // the runaway agent's client, -1 for none

	mu          sync.Mutex
	connects    []int // sessions opened, per client
	notFounds   []time.Duration
	refusals    []time.Duration
	refusedOth  int
	unroutables int
	resumes     int
	seen        map[string]bool // Last-Event-ID values resumed from
	// cut, when set, says whether a client had a stream cut that this
	// resume picks up (the idle cutter's count); nil counts every new
	// Last-Event-ID.
	cut        func(client string) bool
	admissions []int // tools/call POSTs answered 2xx, per client
	runawayIn  []time.Duration
}

func newMeter(clients, runaway int, t0 time.Time) *meter {
	return &meter{t0: t0, runaway: runaway, connects: make([]int, clients), admissions: make([]int, clients), seen: map[string]bool{}}
}

func (m *meter) connected(c int) {
	m.mu.Lock()
	m.connects[c]++
	m.mu.Unlock()
}

func (m *meter) notFound(int) {
	m.mu.Lock()
	m.notFounds = append(m.notFounds, time.Since(m.t0))
	m.mu.Unlock()
}

func (m *meter) refused(c int) {
	m.mu.Lock()
	m.refusals = append(m.refusals, time.Since(m.t0))
	if c != m.runaway {
		m.refusedOth++
	}
	m.mu.Unlock()
}

func (m *meter) unroutable() {
	m.mu.Lock()
	m.unroutables++
	m.mu.Unlock()
}

// resumed counts a resume of a cut stream: once per cut, however often the
// client reconnects (a resumed stream that ends before its answer is
// resumed again).
func (m *meter) resumed(client, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[id] {
		return
	}
	m.seen[id] = true
	if m.cut == nil || m.cut(client) {
		m.resumes++
	}
}

func (m *meter) admitted(c int) {
	m.mu.Lock()
	m.admissions[c]++
	if c == m.runaway {
		m.runawayIn = append(m.runawayIn, time.Since(m.t0))
	}
	m.mu.Unlock()
}
