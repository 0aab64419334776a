// Package streams keeps the events of legacy SSE streams whose client went
// away, so that the client can resume them (2025-11-25 transports,
// "Resumability and Redelivery": a GET with Last-Event-ID) through any
// gateway process: the gateway reads the replica's answer on to its end into
// a Buffer, and a resume replays the events the client missed, then follows
// the rest as it comes.
//
// Two implementations share one contract (streamtest): Memory, for one
// gateway process, and redisstreams.Store, a Redis or Valkey server shared
// by every gateway process.
package streams

import (
	"context"
	"errors"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultTTL            = 5 * time.Minute
	DefaultMaxStreamBytes = 1 << 20
	DefaultMaxTotalBytes  = 256 << 20
)

var (
	// ErrUnknown means the buffer holds no such stream: it was never
	// buffered, or it expired.
	ErrUnknown = errors.New("replaying stream: unknown or expired stream")
	// ErrGone means events the replay needs were dropped: the stream
	// outgrew its bound and its oldest events went.
	ErrGone = errors.New("replaying stream: the events after this position were dropped")
	// ErrUnavailable wraps a failure of the buffer's store (Redis down or
	// timing out).
	ErrUnavailable = errors.New("stream buffer unavailable")
)

// Event is one event of a stream: its position (from 1, contiguous) and
// its bytes, a whole SSE event block as the client gets it.
type Event struct {
	Pos  uint64
	Data []byte
}

// Buffer keeps streams of events by key. Keys are opaque strings chosen by
// the writer (random: no client-chosen text reaches a store key). Each
// stream has one writer, which appends in order of position; any number of
// readers replay it. Implementations are safe for concurrent use.
type Buffer interface {
	// Append adds events to the stream key, making it if new; their
	// positions follow the last one appended. Every append keeps the
	// stream for the buffer's TTL from now. Over the stream's bound the
	// oldest events go.
	Append(ctx context.Context, key string, evs ...Event) error
	// End marks the stream complete: replays end after its last event. The
	// stream is kept for the TTL from now.
	End(ctx context.Context, key string) error
	// Replay opens the stream for reading after position after. It fails
	// with ErrUnknown when there is no such stream and with ErrGone when
	// an event after that position was dropped.
	Replay(ctx context.Context, key string, after uint64) (Cursor, error)
}

// Cursor reads a replayed stream.
type Cursor interface {
	// Next returns the next event, waiting for it if the stream has not
	// ended. It returns io.EOF after the last event of an ended stream,
	// ErrUnknown if the stream expired meanwhile, ErrGone if the reader fell
	// so far behind that its next event was dropped, and ctx's error when
	// ctx ends first.
	Next(ctx context.Context) (Event, error)
}

// Options bounds a buffer. The zero value means the defaults.
type Options struct {
	// TTL is how long a stream is kept after its last append or its end;
	// 0 means DefaultTTL.
	TTL time.Duration
	// MaxStreamBytes bounds one stream's events: over it the oldest go;
	// 0 means DefaultMaxStreamBytes.
	MaxStreamBytes int
	// MaxTotalBytes bounds the events of every stream together (Memory
	// only; a Redis server has its own maxmemory): over it, a stream's new
	// event pushes out its own oldest, and a stream with none is not kept
	// further; 0 means DefaultMaxTotalBytes.
	MaxTotalBytes int64
	// Now is the clock (Memory only); nil means time.Now.
	Now func() time.Time
}

// WithDefaults returns o with its zero fields set to the defaults.
func (o Options) WithDefaults() Options {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxStreamBytes <= 0 {
		o.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
