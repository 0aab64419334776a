// Package store connects the gateway to its shared state: a Valkey or Redis server that holds what
// several gateway replicas must agree on (idempotency records, see package idem). Nothing kept there
// is a record of truth; the server may lose it on restart or evict it when full, and every user of
// it says what it does then.
package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timeouts applied by NewRedisClient when the URL does not set its own (dial_timeout, read_timeout,
// write_timeout query parameters). They are short on purpose: shared state is an optimisation the
// gateway fails open on, so a slow store must cost a request milliseconds, not seconds.
const (
	DefaultDialTimeout  = 500 * time.Millisecond
	DefaultReadTimeout  = 250 * time.Millisecond
	DefaultWriteTimeout = 250 * time.Millisecond
)

// NewRedisClient returns a client for the server named by rawURL, a redis:// (plain) or rediss://
// (TLS) URL as go-redis parses it, for example redis://:password@valkey:6379/0 or
// rediss://user:password@valkey.internal:6380/0?read_timeout=1s. Timeouts the URL leaves unset get
// the Default* values above, a failed command is retried at most once (unless max_retries says
// otherwise), and a failed dial once, 20 ms later. It does not contact the
// server; the first command does. The caller closes the client. An error never quotes the URL.
func NewRedisClient(rawURL string) (redis.UniversalClient, error) {
	if rawURL == "" {
		return nil, errors.New("parsing redis url: empty")
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing redis url: %s", urlProblem(err))
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 1
	}
	// go-redis dials up to 5 times, 100 ms apart, before a command fails; while the server is
	// down that would add half a second to every call that fails open. Two quick attempts.
	opts.DialerRetries = 2
	opts.DialerRetryTimeout = 20 * time.Millisecond
	return redis.NewClient(opts), nil
}

// urlProblem says what is wrong with a URL that redis.ParseURL refused, in words that quote none of
// it. A *url.Error quotes the whole URL, and its cause, like go-redis's own errors, quotes the part
// refused: a port, a path, an option, an escape. A password with a '/', '?' or '#' in it is cut by
// the parser into exactly those parts (redis://:pa/ss@host has the port "pa" and the path
// "/ss@host"), so only the words before the first colon or quote are kept: "invalid port" of
// `invalid port ":pa" after host`.
func urlProblem(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	if _, ok := errors.AsType[url.InvalidHostError](err); ok {
		return "invalid character in host name"
	}
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "redis: "), "net/url: ")
	if i := strings.IndexAny(msg, `:"`); i >= 0 {
		msg = msg[:i]
	}
	if msg = strings.TrimSpace(msg); msg == "" {
		return "malformed URL"
	}
	return msg
}
