package stdio

import (
	"strings"
	"sync"
)

// maxStderrLine bounds one kept stderr line; the rest of a longer line is
// dropped, marked with an ellipsis.
const maxStderrLine = 2048

// lineRing keeps the last lines written to it: a child's stderr, drained
// at once so that a chatty child never blocks on a full pipe. Safe for
// concurrent use.
type lineRing struct {
	mu    sync.Mutex // guards lines, next, full, total
	lines []string
	next  int
	full  bool
	total int64
}

func newLineRing(n int) *lineRing {
	if n < 1 {
		n = 1
	}
	return &lineRing{lines: make([]string, n)}
}

// add keeps line, cut to maxStderrLine bytes.
func (r *lineRing) add(line string) {
	if len(line) > maxStderrLine {
		line = strings.ToValidUTF8(line[:maxStderrLine], "") + "…"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines[r.next] = line
	r.next++
	r.total++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
}

// last returns the kept lines, oldest first, and how many were written in
// all.
func (r *lineRing) last() ([]string, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...), r.total
	}
	out := append([]string(nil), r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...), r.total
}
