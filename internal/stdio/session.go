package stdio

import (
	"encoding/json"
	"time"
)

// maxQueued bounds the messages waiting for a session's reader; a session
// whose reader falls that far behind ends, rather than hold the child's
// other sessions or grow without bound.
const maxQueued = 256

// A Session is one client session on a child: what its client sends goes
// to the child with its ids rewritten, and what the child sends for it
// (answers, its progress, list_changed, server requests) comes out of
// Messages with the client's own ids. Its methods are safe for concurrent
// use.
type Session struct {
	c    *Child
	id   SessionID
	gen  int
	init json.RawMessage // the child's initialize result
	out  chan []byte     // closed when the session ends; guarded by c.mu for sends
	end  bool            // guarded by c.mu
}

// Open starts a session on the child; ErrNotReady while it is not
// running and initialized.
func (c *Child) Open() (*Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil, ErrNotReady
	}
	c.nextSID++
	s := &Session{c: c, id: c.nextSID, gen: c.gen, init: c.init, out: make(chan []byte, maxQueued)}
	c.sessions[s.id] = s
	return s, nil
}

// Initialize returns the child's initialize result, as the gateway got it
// when it started the child.
func (s *Session) Initialize() json.RawMessage { return s.init }

// Messages returns what the child sends this session, one JSON-RPC
// message each; it is closed when the session ends. Every request the
// session sent gets its answer here before that, the replica_lost error
// if the child went away first.
func (s *Session) Messages() <-chan []byte { return s.out }

// Send passes one message of the session's client to the child. It
// fails with ErrSessionEnded once the session is over, a mux error for a
// message that cannot go (a batch, an answer to another's request), or
// ErrWrite when the child did not take it within the write timeout: then
// the child is lost, and the request's answer is the replica_lost error.
func (s *Session) Send(msg []byte) error {
	c := s.c
	c.mu.Lock()
	if s.end || c.proc == nil || c.gen != s.gen {
		c.mu.Unlock()
		return ErrSessionEnded
	}
	step, err := c.mux.FromClient(s.id, msg)
	if step.Answer != nil {
		s.deliverLocked(step.Answer)
	}
	p, owed := c.proc, c.takeOwedLocked()
	c.mu.Unlock()
	if err == nil && step.Child != nil {
		owed = append(owed, step.Child)
	}
	for _, m := range owed {
		if err := p.write(m); err != nil {
			p.kill()
			return err
		}
	}
	return err
}

// Close ends the session: its calls still pending are no longer followed,
// and server requests routed to it are answered with an error.
func (s *Session) Close() {
	c := s.c
	c.mu.Lock()
	if s.end {
		c.mu.Unlock()
		return
	}
	var replies [][]byte
	if c.gen == s.gen {
		replies = c.mux.Forget(s.id)
	}
	s.endLocked()
	delete(c.sessions, s.id)
	p := c.proc
	c.mu.Unlock()
	for _, r := range replies {
		if p != nil && p.write(r) != nil {
			p.kill()
			return
		}
	}
}

// deliverLocked queues msg for the session's reader; a reader that fell
// maxQueued behind ends the session.
func (s *Session) deliverLocked(msg []byte) {
	if s.end {
		return
	}
	select {
	case s.out <- msg:
	default:
		s.c.opts.Logger.Warn("stdio session ended: its client fell behind", "child", s.c.opts.Name, "queued", maxQueued)
		// What its end owes the child (errors for its server requests,
		// unsubscribes) is written by whoever holds the child's stdin next.
		s.c.owed = append(s.c.owed, s.c.mux.Forget(s.id)...)
		s.endLocked()
		delete(s.c.sessions, s.id)
	}
}

func (s *Session) endLocked() {
	if !s.end {
		s.end = true
		close(s.out)
	}
}

// Info is what the fleet page shows of a child.
type Info struct {
	Name     string
	Ready    bool
	PID      int
	Started  time.Time // of the current run; zero when none
	Restarts int
	Sessions int
	// LastExit is when the last run ended (RFC 3339), "" if none did.
	LastExit string
	// Stderr are the last lines of the current or last run's stderr.
	Stderr []string
	// StderrTotal counts that run's stderr lines, kept or not.
	StderrTotal int64
	// Initialize is the child's initialize result (a stateless twin's:
	// its server/discover result).
	Initialize json.RawMessage
	// Probe is a stateless twin's state: "probing", "native" (it serves
	// 2026-07-28 requests) or "refused" (the server does not speak that
	// era, and the twin stopped for good); "" for any other child.
	Probe string
}

// Info returns the child's state now.
func (c *Child) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := Info{Name: c.opts.Name, Ready: c.proc != nil, Restarts: c.restarts, Sessions: len(c.sessions), LastExit: c.lastExit, Initialize: c.init}
	if c.proc != nil {
		i.PID, i.Started = c.proc.pid, c.proc.started
	}
	if c.stderr != nil {
		i.Stderr, i.StderrTotal = c.stderr.last()
	}
	if c.opts.Stateless {
		i.Probe = [...]string{probeUnknown: "probing", probeNative: "native", probeRefused: "refused"}[c.probe]
	}
	return i
}
