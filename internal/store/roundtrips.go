package store

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// roundTrips counts the exchanges with a server that every client this
// package built has started: a command is one, a pipeline of any length
// one, and a script run whose EVALSHA meets NOSCRIPT two (the EVAL that
// follows is a command of its own). Dials and the handshake's commands
// are not counted.
var roundTrips atomic.Uint64

// RoundTrips returns how many round trips to a store's server the clients
// of this process (NewClient's) have started, failed ones included. It is
// the client's own count, to set beside the server's INFO commandstats: a
// pipeline is many commands and one round trip. On a cluster a pipeline
// whose keys span several nodes is counted once.
func RoundTrips() uint64 { return roundTrips.Load() }

// countHook adds each command and each pipeline to roundTrips.
type countHook struct{}

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		roundTrips.Add(1)
		return next(ctx, cmd)
	}
}

func (countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 {
			roundTrips.Add(1)
		}
		return next(ctx, cmds)
	}
}
