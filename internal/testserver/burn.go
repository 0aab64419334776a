package testserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxBurn bounds the CPU time one burn call may ask for.
const maxBurn = 10 * time.Second

// burnBlock is the size of the buffer burn hashes in each round.
const burnBlock = 64 << 10

// burnInput is the input of the burn tool.
type burnInput struct {
	MS float64 `json:"ms" jsonschema:"milliseconds of CPU time to spend, more than 0 and at most 10000"`
}

// addBurn registers the burn tool.
func (s *Server) addBurn() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "burn",
		Description: "Spends ms milliseconds of CPU time hashing (SHA-256), " +
			"so that its cost is CPU: a replica limited to one core serves one at a time.",
		Annotations: readOnly(),
	}, s.burn)
}

// burn hashes a buffer with SHA-256, each round over the last one's digest,
// until the calling thread has used in.MS milliseconds of CPU time
// ([cpuClock]), or ctx ends, which is an error. The goroutine stays on its
// thread meanwhile, so that the thread's CPU time is the call's.
func (s *Server) burn(ctx context.Context, _ *mcp.CallToolRequest, in burnInput) (*mcp.CallToolResult, any, error) {
	if !(in.MS > 0) || in.MS > float64(maxBurn/time.Millisecond) { // also rejects NaN
		return nil, nil, fmt.Errorf("burning: ms %v outside (0, %d]", in.MS, maxBurn/time.Millisecond)
	}
	want := time.Duration(math.Round(in.MS * float64(time.Millisecond)))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := cpuClock()
	if err != nil {
		return nil, nil, fmt.Errorf("burning: %w", err)
	}
	buf := make([]byte, burnBlock)
	rounds, used := 0, time.Duration(0)
	for used < want {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("burning: after %v of CPU: %w", used, context.Cause(ctx))
		}
		sum := sha256.Sum256(buf)
		copy(buf, sum[:])
		rounds++
		now, err := cpuClock()
		if err != nil {
			return nil, nil, fmt.Errorf("burning: %w", err)
		}
		used = now - start
	}
	return text(fmt.Sprintf("burned %v of %s on %s: %d rounds of SHA-256 over %d KiB, digest %x",
		used.Round(time.Microsecond), cpuClockKind, s.name, rounds, burnBlock>>10, buf[:8])), nil, nil
}
