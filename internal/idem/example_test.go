package idem_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/idem"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// runOnce is how a gateway drives a Store for one tools/call with an idempotency key and the
// call's digest (mcpmsg.RequestDigest). run forwards the call; delivered says whether it may
// have reached the upstream.
func runOnce(ctx context.Context, s idem.Store, key, digest string, run func() (result []byte, delivered bool, err error)) ([]byte, error) {
	for {
		out, err := s.Claim(ctx, key, digest, 30*time.Second, idem.Refuse) // lease: at least the upstream timeout
		if errors.Is(err, idem.ErrUnavailable) {
			// Fail open: run without deduplication (and count it).
			result, _, err := run()
			return result, err
		}
		if err != nil {
			return nil, err
		}
		switch out.State {
		case idem.Mismatch: // the key was used for another request: refuse (HTTP 422)
			return nil, errors.New("idempotency key reused for another request")
		case idem.Done:
			return out.Result, nil
		case idem.Running:
			out, err = s.Wait(ctx, key, digest)
			if err != nil && !errors.Is(err, idem.ErrUnavailable) {
				return nil, err
			}
			if err == nil && out.State == idem.Done {
				return out.Result, nil
			}
			continue // released, expired or store gone: claim again
		}
		result, delivered, err := run()
		if err != nil && !delivered {
			_ = s.Release(ctx, key, out.Token) // never reached the upstream: safe to re-run
			return nil, err
		}
		if cerr := s.Complete(ctx, key, out.Token, result, 10*time.Minute); errors.Is(cerr, idem.ErrTooLarge) {
			_ = s.Release(ctx, key, out.Token)
		}
		return result, err
	}
}

func Example() {
	ctx, s := context.Background(), idem.NewMemory(nil)
	key := idem.Digest("caller-digest tools/call create_ticket", "client-chosen-key-1")
	digest := mcpmsg.RequestDigest([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket"}}`))
	runs := 0
	create := func() ([]byte, bool, error) {
		runs++
		return []byte(`{"ticket":42}`), true, nil
	}
	first, _ := runOnce(ctx, s, key, digest, create)
	retry, _ := runOnce(ctx, s, key, digest, create)
	fmt.Printf("%s %s runs=%d\n", first, retry, runs)
	// Output: {"ticket":42} {"ticket":42} runs=1
}
