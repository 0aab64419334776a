package streams

import (
	"context"
	"io"
	"sync"
	"time"
)

// Memory is a Buffer held in this process: right for one gateway process,
// whose resumes it serves. It is also where the gateway keeps the recent
// events of the streams it relays, so that those written into a connection
// that was already dead can be replayed too.
type Memory struct {
	opts Options

	mu        sync.Mutex
	streams   map[string]*memStream // guarded by mu
	total     int64                 // guarded by mu; bytes of every stream's events
	nextSweep time.Time             // guarded by mu
	dropped   uint64                // guarded by mu; events dropped over a bound
	expired   uint64                // guarded by mu; events of streams that expired
}

var _ Buffer = (*Memory)(nil)

// memStream is one stream; its fields are guarded by Memory.mu.
type memStream struct {
	events  []Event // contiguous, oldest first
	bytes   int
	last    uint64 // position of the last event appended
	ended   bool
	expires time.Time
	wake    chan struct{} // closed (and replaced) on every change
}

// NewMemory returns an empty Memory bounded by opts.
func NewMemory(opts Options) *Memory {
	return &Memory{opts: opts.WithDefaults(), streams: make(map[string]*memStream)}
}

// Stats is what Memory holds and has let go, for metrics.
type Stats struct {
	Streams int
	Bytes   int64
	Dropped uint64 // events dropped over a bound
	Expired uint64 // events of streams that expired unread or read
}

// Stats returns the buffer's figures now.
func (m *Memory) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Streams: len(m.streams), Bytes: m.total, Dropped: m.dropped, Expired: m.expired}
}

// Append implements Buffer.
func (m *Memory) Append(_ context.Context, key string, evs ...Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	m.sweepLocked(now)
	s := m.streams[key]
	if s == nil {
		s = &memStream{wake: make(chan struct{})}
		m.streams[key] = s
	}
	for _, ev := range evs {
		m.appendLocked(s, ev)
	}
	s.expires = now.Add(m.opts.TTL)
	s.notifyLocked()
	return nil
}

// appendLocked keeps ev in s within both bounds: the oldest events of s go
// first; an event that still does not fit is dropped.
func (m *Memory) appendLocked(s *memStream, ev Event) {
	s.last = ev.Pos
	n := cap(ev.Data) // what it holds: a kept event is its own allocation
	for len(s.events) > 0 && (s.bytes+n > m.opts.MaxStreamBytes || m.total+int64(n) > m.opts.MaxTotalBytes) {
		m.dropOldestLocked(s)
	}
	if n > m.opts.MaxStreamBytes || m.total+int64(n) > m.opts.MaxTotalBytes {
		m.dropped++
		return
	}
	s.events = append(s.events, ev)
	s.bytes += n
	m.total += int64(n)
}

func (m *Memory) dropOldestLocked(s *memStream) {
	n := cap(s.events[0].Data)
	s.events[0] = Event{}
	s.events = s.events[1:]
	s.bytes -= n
	m.total -= int64(n)
	m.dropped++
}

func (s *memStream) notifyLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// End implements Buffer. Ending a stream that is not there (it expired)
// does nothing.
func (m *Memory) End(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.streams[key]; s != nil {
		s.ended = true
		s.expires = m.opts.Now().Add(m.opts.TTL)
		s.notifyLocked()
	}
	return nil
}

// Discard forgets a stream at once: its client read it to the end.
func (m *Memory) Discard(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.streams[key]; s != nil {
		m.removeLocked(key, s)
	}
}

// Events returns a copy of the slice of a stream's events, for moving them
// to another buffer; nil when there is no such stream.
func (m *Memory) Events(key string) []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.streams[key]; s != nil {
		return append([]Event(nil), s.events...)
	}
	return nil
}

func (m *Memory) removeLocked(key string, s *memStream) {
	m.total -= int64(s.bytes)
	s.events, s.bytes = nil, 0
	delete(m.streams, key)
	s.notifyLocked() // readers see it gone
}

// sweepLocked removes expired streams, at most once per a tenth of the TTL.
func (m *Memory) sweepLocked(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	m.nextSweep = now.Add(m.opts.TTL / 10)
	for key, s := range m.streams {
		if !now.Before(s.expires) {
			m.expired += uint64(len(s.events))
			m.removeLocked(key, s)
		}
	}
}

// Replay implements Buffer.
func (m *Memory) Replay(_ context.Context, key string, after uint64) (Cursor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.liveLocked(key)
	if err != nil {
		return nil, err
	}
	if gapLocked(s, after) {
		return nil, ErrGone
	}
	return &memCursor{m: m, key: key, s: s, after: after}, nil
}

// liveLocked returns the stream key if it is there and unexpired.
func (m *Memory) liveLocked(key string) (*memStream, error) {
	s := m.streams[key]
	if s == nil {
		return nil, ErrUnknown
	}
	if !m.opts.Now().Before(s.expires) {
		m.expired += uint64(len(s.events))
		m.removeLocked(key, s)
		return nil, ErrUnknown
	}
	return s, nil
}

// gapLocked reports whether the event after position after was dropped.
func gapLocked(s *memStream, after uint64) bool {
	if after >= s.last {
		return false
	}
	return len(s.events) == 0 || s.events[0].Pos > after+1
}

type memCursor struct {
	m     *Memory
	key   string
	s     *memStream
	after uint64
}

func (c *memCursor) Next(ctx context.Context) (Event, error) {
	for {
		ev, wake, expires, err := c.next()
		if err != nil || wake == nil {
			return ev, err
		}
		timer := time.NewTimer(time.Until(expires) + time.Millisecond)
		select {
		case <-ctx.Done():
			timer.Stop()
			return Event{}, ctx.Err()
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// next returns the next event, or the channel to wait on for one.
func (c *memCursor) next() (Event, <-chan struct{}, time.Time, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.streams[c.key] != c.s {
		return Event{}, nil, time.Time{}, ErrUnknown
	}
	if _, err := c.m.liveLocked(c.key); err != nil {
		return Event{}, nil, time.Time{}, err
	}
	if gapLocked(c.s, c.after) {
		return Event{}, nil, time.Time{}, ErrGone
	}
	if c.after < c.s.last {
		ev := c.s.events[c.after+1-c.s.events[0].Pos]
		c.after = ev.Pos
		return ev, nil, time.Time{}, nil
	}
	if c.s.ended {
		return Event{}, nil, time.Time{}, io.EOF
	}
	return Event{}, c.s.wake, c.s.expires, nil
}
