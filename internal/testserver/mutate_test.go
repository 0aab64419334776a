package testserver

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMutateCancelled cancels mutate calls through real clients of each era,
// before and after the mutation point, and checks the counter. A legacy
// client cancels with notifications/cancelled; a 2026 client closes the
// request, which the stateless handler propagates.
func TestMutateCancelled(t *testing.T) {
	// The mutation comes at half of the run: a cancel sent 0.2 s in has
	// 0.8 s to reach the handler on a loaded machine, and one sent once the
	// counter has moved has the rest of the run.
	const run = 2 * time.Second
	tests := []struct {
		name    string
		version string
		after   bool // cancel once the mutation is done, else 0.2 s in
		want    int
	}{
		{"legacy before at", legacyVersion, false, 0},
		{"legacy after at", legacyVersion, true, 1},
		{"modern before at", modernVersion, false, 0},
		{"modern after at", modernVersion, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, base := startServer(t, "replica-f", EraBoth)
			cs := connect(t, t.Context(), base, tt.version, nil)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			start := time.Now()
			if tt.after {
				go func() {
					defer cancel()
					for end := start.Add(10 * time.Second); s.Count("k") == 0 && time.Now().Before(end); {
						time.Sleep(5 * time.Millisecond)
					}
				}()
			} else {
				time.AfterFunc(200*time.Millisecond, cancel)
			}
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{
				Name:      "mutate",
				Arguments: map[string]any{"key": "k", "seconds": run.Seconds(), "at": 0.5},
			})
			if err == nil {
				t.Fatalf("cancelled mutate succeeded")
			}
			// Wait past the end of the run: a handler that missed the
			// cancellation would mutate by then.
			time.Sleep(time.Until(start.Add(run + 200*time.Millisecond)))
			if got := s.Count("k"); got != tt.want {
				t.Errorf("Count(k) = %d, want %d", got, tt.want)
			}
			if got := callText(t, t.Context(), cs, "count", map[string]any{"key": "k"}); got != strconv.Itoa(tt.want) {
				t.Errorf("count tool = %q, want %d", got, tt.want)
			}
		})
	}
}

// TestMutateTiming runs the mutate handler on synctest's fake clock and
// checks where in the run the counter moves.
func TestMutateTiming(t *testing.T) {
	tests := []struct {
		name      string
		seconds   float64
		at        *float64
		timeout   time.Duration // 0 means never cancelled
		wantCount int
		wantErr   string // "" means success
	}{
		{"runs to the end", 10, nil, 0, 1, ""},
		{"cancelled before default at", 10, nil, 4 * time.Second, 0, "before the mutation"},
		{"cancelled after default at", 10, nil, 6 * time.Second, 1, "after the mutation"},
		{"cancelled before late at", 10, new(0.9), 8 * time.Second, 0, "before the mutation"},
		{"at 0 mutates at once", 10, new(0.0), time.Second, 1, "after the mutation"},
		{"at 1 mutates at the end", 10, new(1.0), 9999 * time.Millisecond, 0, "before the mutation"},
		{"no wait", 0, nil, 0, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := New("replica-g", nil)
				if err != nil {
					t.Fatal(err)
				}
				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				res, _, err := s.mutate(ctx, nil, mutateInput{Key: "k", Seconds: tt.seconds, At: tt.at})
				checkErr(t, err, tt.wantErr)
				if tt.wantErr == "" && contentText(t, res) != "mutated k on replica-g" {
					t.Errorf("result = %q", contentText(t, res))
				}
				if got := s.Count("k"); got != tt.wantCount {
					t.Errorf("Count(k) = %d, want %d", got, tt.wantCount)
				}
			})
		})
	}
}

// TestSleepTiming runs the sleep handler on synctest's fake clock.
func TestSleepTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New("replica-h", nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, _, err := s.sleep(t.Context(), nil, sleepInput{Seconds: 30, ProgressEvery: 1}); err != nil {
			t.Fatalf("sleep: %v", err)
		}
		if got := time.Since(start); got != 30*time.Second {
			t.Errorf("slept %v, want 30s", got)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, _, err = s.sleep(ctx, nil, sleepInput{Seconds: 30})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled sleep: err = %v, want DeadlineExceeded", err)
		}
	})
}

// checkErr checks that err is nil when want is "", and otherwise mentions want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("err = %v, want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("err = %v, want one mentioning %q", err, want)
	}
}
