package testserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientEras are the SDK client versions the tool tests run against a
// server of era "both".
var clientEras = []string{legacyVersion, modernVersion}

// TestToolResults calls each tool through a real client of each era and
// checks its text.
func TestToolResults(t *testing.T) {
	for _, version := range clientEras {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			s, base := startServer(t, "replica-b", EraBoth)
			cs := connect(t, ctx, base, version, nil)
			steps := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"whoami", nil, "replica-b"},
				{"echo", map[string]any{"text": "héllo, world"}, "héllo, world"},
				{"count", map[string]any{"key": "k"}, "0"},
				{"mutate", map[string]any{"key": "k"}, "mutated k on replica-b"},
				{"mutate", map[string]any{"key": "k", "seconds": 0.05, "at": 1}, "mutated k on replica-b"},
				{"count", map[string]any{"key": "k"}, "2"},
				{"count", map[string]any{"key": "other"}, "0"},
				{"sleep", map[string]any{"seconds": 0.01}, "slept 0.01s on replica-b"},
				{"lookup", map[string]any{"key": "k"}, "value of k from replica-b"},
				{"fetch", map[string]any{"key": "k"}, "value of k from replica-b"},
			}
			for _, st := range steps {
				if got := callText(t, ctx, cs, st.tool, st.args); got != st.want {
					t.Errorf("%s %v = %q, want %q", st.tool, st.args, got, st.want)
				}
			}
			if got := s.Count("k"); got != 2 {
				t.Errorf("Count(k) = %d, want 2", got)
			}
		})
	}
}

// TestToolBadInput checks that invalid arguments are tool errors, not
// mutations.
func TestToolBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, base := startServer(t, "replica-c", EraBoth)
	cs := connect(t, ctx, base, modernVersion, nil)
	tests := []struct {
		tool string
		args map[string]any
	}{
		{"sleep", map[string]any{"seconds": -1}},
		{"sleep", map[string]any{"seconds": 1, "progress_every": -1}},
		{"sleep", map[string]any{}},
		{"mutate", map[string]any{"key": "", "seconds": 0}},
		{"mutate", map[string]any{"key": "k", "at": 1.5}},
		{"mutate", map[string]any{"key": "k", "seconds": -2}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.tool, tt.args), func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err == nil && !res.IsError {
				t.Errorf("call succeeded: %+v, want an error", res.Content)
			}
		})
	}
	if got := s.Count("k"); got != 0 {
		t.Errorf("Count(k) = %d after bad calls, want 0", got)
	}
}

// TestToolAnnotations checks the read-only hints in tools/list.
func TestToolAnnotations(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, base := startServer(t, "replica-d", EraBoth)
	cs := connect(t, ctx, base, modernVersion, nil)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
	}
	want := map[string]bool{
		"whoami": true, "echo": true, "sleep": true, "burn": true, "count": true, "lookup": true,
		"mutate": false, "fetch": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readOnlyHint per tool (-want +got):\n%s", diff)
	}
}

// TestSleepProgress checks that sleep sends notifications/progress every
// progress_every seconds when, and only when, the call has a progress token.
func TestSleepProgress(t *testing.T) {
	tests := []struct {
		name    string
		version string
		token   any
		least   int // fewest notifications expected
		most    int // most notifications expected
	}{
		{"legacy with token", legacyVersion, "tok-1", 3, 6},
		{"modern with token", modernVersion, "tok-2", 3, 6},
		{"modern without token", modernVersion, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, base := startServer(t, "replica-e", EraBoth)
			got := make(chan *mcp.ProgressNotificationParams, 100)
			cs := connect(t, ctx, base, tt.version, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					got <- req.Params
				},
			})
			params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 0.5, "progress_every": 0.1}}
			if tt.token != nil {
				params.SetProgressToken(tt.token)
			}
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				t.Fatalf("sleep: %v %+v", err, res)
			}
			checkProgress(t, drain(got), tt.token, tt.least, tt.most)
		})
	}
}

// drain returns what ch holds now.
func drain(ch chan *mcp.ProgressNotificationParams) []*mcp.ProgressNotificationParams {
	var out []*mcp.ProgressNotificationParams
	for {
		select {
		case p := <-ch:
			out = append(out, p)
		default:
			return out
		}
	}
}

// checkProgress checks the count, token and monotonic progress of ps.
func checkProgress(t *testing.T, ps []*mcp.ProgressNotificationParams, token any, least, most int) {
	t.Helper()
	if len(ps) < least || len(ps) > most {
		t.Fatalf("got %d progress notifications, want %d to %d", len(ps), least, most)
	}
	last := 0.0
	for i, p := range ps {
		if p.ProgressToken != token {
			t.Errorf("notification %d has token %v, want %v", i, p.ProgressToken, token)
		}
		if p.Progress <= last || p.Total != 0.5 || !strings.Contains(p.Message, "of 0.5s") {
			t.Errorf("notification %d = %+v after progress %v, want rising progress of total 0.5", i, p, last)
		}
		last = p.Progress
	}
}
