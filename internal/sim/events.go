package sim

import "time"

// kind is what an event does when its time comes.
type kind uint8

const (
	evSend      kind = iota // a client sends call ref (again)
	evEnd                   // execution ref finishes
	evIdle                  // idle check of execution ref's stream, version ver
	evReconnect             // the client of execution ref reconnects to its stream
	evDrain                 // replica ref starts draining
	evKill                  // replica ref's drain window ends: kill and reboot
	evUp                    // replica ref is back
	evCheck                 // a round of the gateways' active health checks
	evPlace                 // call ref, waiting at its gateway, asks for a replica's place again
)

// event is one scheduled happening. Events at the same time run in the
// order they were scheduled (seq), so a run is a pure function of its inputs.
type event struct {
	at   time.Duration
	seq  uint64
	ref  int32
	ver  uint32
	kind kind
}

// eventHeap is a binary min-heap of events by (at, seq), typed to avoid
// container/heap's interface boxing on the hot path.
type eventHeap struct {
	ev  []event
	seq uint64
}

func (h *eventHeap) less(i, j int) bool {
	a, b := &h.ev[i], &h.ev[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// push schedules an event.
func (h *eventHeap) push(at time.Duration, k kind, ref int32, ver uint32) {
	h.seq++
	h.ev = append(h.ev, event{at: at, seq: h.seq, ref: ref, ver: ver, kind: k})
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

// peek returns the earliest event's time; ok is false when none is left.
func (h *eventHeap) peek() (time.Duration, bool) {
	if len(h.ev) == 0 {
		return 0, false
	}
	return h.ev[0].at, true
}

// pop removes and returns the earliest event; the heap must not be empty.
func (h *eventHeap) pop() event {
	top := h.ev[0]
	n := len(h.ev) - 1
	h.ev[0] = h.ev[n]
	h.ev = h.ev[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
	return top
}
