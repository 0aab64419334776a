package testserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultAt is the fraction of its run at which mutate mutates when the
// caller gives no "at".
const defaultAt = 0.5

// maxPad bounds sleep's filler per progress message.
const maxPad = 64 << 10

// Tool inputs. Fields without omitempty are required in the input schema.
type (
	noInput   struct{}
	echoInput struct {
		Text string `json:"text" jsonschema:"the text to return"`
	}
	sleepInput struct {
		Seconds       float64 `json:"seconds" jsonschema:"how long to sleep, in seconds"`
		ProgressEvery float64 `json:"progress_every,omitempty" jsonschema:"seconds between progress notifications, sent only when the call has a progress token; 0 means none"`
		Pad           int     `json:"pad,omitempty" jsonschema:"bytes of filler appended to each progress message (a chatty stream), at most 65536"`
	}
	mutateInput struct {
		Key     string   `json:"key" jsonschema:"the counter to increment"`
		Seconds float64  `json:"seconds,omitempty" jsonschema:"how long the call runs, in seconds; 0 means no wait"`
		At      *float64 `json:"at,omitempty" jsonschema:"fraction of the run, 0 to 1, at which the counter is incremented; default 0.5"`
	}
	countInput struct {
		Key string `json:"key" jsonschema:"the counter to read"`
	}
	keyInput struct {
		Key string `json:"key" jsonschema:"the key to look up"`
	}
)

// addTools registers the test tools on the MCP server.
func (s *Server) addTools() {
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{
		Name:        "whoami",
		Description: "Returns the name of the replica that answered.",
		Annotations: readOnly(),
	}), s.whoami)
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{
		Name:        "echo",
		Description: "Returns its text.",
		Annotations: readOnly(),
	}), s.echo)
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{
		Name:        "sleep",
		Description: "Sleeps for seconds, reporting progress every progress_every seconds when the call has a progress token.",
		Annotations: readOnly(),
	}), s.sleep)
	s.addBurn()
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{
		Name:        "mutate",
		Description: "Runs for seconds and increments the counter key at fraction at of its run; cancelled before then, it changes nothing.",
		Annotations: &mcp.ToolAnnotations{
			DestructiveHint: new(false), // it only adds
			OpenWorldHint:   new(false),
		},
	}), s.mutate)
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{
		Name:        "count",
		Description: "Returns how many times key was mutated on this replica, as a decimal integer.",
		Annotations: readOnly(),
	}), s.count)
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{
		Name:        "lookup",
		Description: "Returns the value of key on this replica. Read-only: a cache may answer it.",
		Annotations: readOnly(),
	}), s.value)
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{
		Name:        "fetch",
		Description: "Returns the value of key on this replica, as lookup does, but is not declared read-only: a cache must not answer it.",
		// No readOnlyHint: only tools declared read-only may be cached.
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)},
	}), s.value)
	for _, name := range s.opts.Tools {
		s.AddTool(name)
	}
}

// readOnly returns the annotations of a tool that changes nothing and
// reaches nothing outside the replica.
func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
}

// text returns a result whose only content is t.
func text(t string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
}

// whoami returns the replica name.
func (s *Server) whoami(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return text(s.name), nil, nil
}

// echo returns in.Text.
func (s *Server) echo(_ context.Context, _ *mcp.CallToolRequest, in echoInput) (*mcp.CallToolResult, any, error) {
	return text(in.Text), nil, nil
}

// count returns the counter of in.Key as a decimal integer.
func (s *Server) count(_ context.Context, _ *mcp.CallToolRequest, in countInput) (*mcp.CallToolResult, any, error) {
	return text(strconv.Itoa(s.Count(in.Key))), nil, nil
}

// value returns the value of in.Key, which names the key and the replica;
// lookup and fetch share it.
func (s *Server) value(_ context.Context, _ *mcp.CallToolRequest, in keyInput) (*mcp.CallToolResult, any, error) {
	return text(fmt.Sprintf("value of %s from %s", in.Key, s.name)), nil, nil
}

// sleep waits in.Seconds, or until ctx ends, which is an error. When the call
// carries a progress token and in.ProgressEvery > 0 it sends
// notifications/progress that often (2025-11-25 §Utilities/Progress).
func (s *Server) sleep(ctx context.Context, req *mcp.CallToolRequest, in sleepInput) (*mcp.CallToolResult, any, error) {
	d, err := duration("seconds", in.Seconds)
	if err != nil {
		return nil, nil, fmt.Errorf("sleeping: %w", err)
	}
	every, err := duration("progress_every", in.ProgressEvery)
	if err != nil {
		return nil, nil, fmt.Errorf("sleeping: %w", err)
	}
	if in.Pad < 0 || in.Pad > maxPad {
		return nil, nil, fmt.Errorf("sleeping: pad %d outside [0, %d]", in.Pad, maxPad)
	}
	var tick <-chan time.Time
	if token := progressToken(req); token != nil && every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	done := time.NewTimer(d)
	defer done.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("sleeping: %w", context.Cause(ctx))
		case <-done.C:
			return text(fmt.Sprintf("slept %gs on %s", in.Seconds, s.name)), nil, nil
		case <-tick:
			s.notifyProgress(ctx, req, time.Since(start).Seconds(), in.Seconds, in.Pad)
		}
	}
}

// notifyProgress sends one progress notification for req. A failure is not
// the call's failure: the stream is gone, and ctx will end the call.
func (s *Server) notifyProgress(ctx context.Context, req *mcp.CallToolRequest, done, total float64, pad int) {
	err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: progressToken(req),
		Progress:      done,
		Total:         total,
		Message:       fmt.Sprintf("slept %.1fs of %gs", done, total) + strings.Repeat(".", pad),
	})
	if err != nil {
		s.logger.Debug("sending progress", "error", err)
	}
}

// mutate runs in.Seconds and increments in.Key at fraction in.At of the run.
// Cancelled before that point it has changed nothing; cancelled after, the
// mutation stays. Either way a cancelled call is an error.
func (s *Server) mutate(ctx context.Context, req *mcp.CallToolRequest, in mutateInput) (*mcp.CallToolResult, any, error) {
	if in.Key == "" {
		return nil, nil, errors.New("mutating: empty key")
	}
	d, err := duration("seconds", in.Seconds)
	if err != nil {
		return nil, nil, fmt.Errorf("mutating %s: %w", in.Key, err)
	}
	at := defaultAt
	if in.At != nil {
		at = *in.At
	}
	if !(at >= 0 && at <= 1) { // also rejects NaN
		return nil, nil, fmt.Errorf("mutating %s: at %v outside [0, 1]", in.Key, at)
	}
	before := time.Duration(float64(d) * at)
	if err := pause(ctx, before); err != nil {
		return nil, nil, fmt.Errorf("mutating %s: cancelled before the mutation: %w", in.Key, err)
	}
	verb := "mutated"
	if !s.increment(in.Key, opOf(req)) {
		verb = "already mutated" // a re-execution of the same operation
	}
	if err := pause(ctx, d-before); err != nil {
		return nil, nil, fmt.Errorf("mutating %s: cancelled after the mutation: %w", in.Key, err)
	}
	return text(fmt.Sprintf("%s %s on %s", verb, in.Key, s.name)), nil, nil
}

// pause waits d, or returns the cause of ctx ending first. A context already
// ended is an error even when d is zero.
func pause(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// duration converts a non-negative number of seconds named field.
func duration(field string, seconds float64) (time.Duration, error) {
	if !(seconds >= 0) || seconds > math.MaxInt64/float64(time.Second) {
		return 0, fmt.Errorf("%s %v out of range", field, seconds)
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// progressToken returns req's progress token, or nil when it has none.
func progressToken(req *mcp.CallToolRequest) any {
	if req == nil || req.Params == nil {
		return nil
	}
	return req.Params.GetProgressToken()
}

// described gives t the description Options.Describe names for it, if any:
// how a test serves a changed definition of one tool.
func (s *Server) described(t *mcp.Tool) *mcp.Tool {
	if d, ok := s.opts.Describe[t.Name]; ok {
		t.Description = d
	}
	return t
}

// RemoveTool removes the tool called name from this replica, which sends
// notifications/tools/list_changed to its listeners.
func (s *Server) RemoveTool(name string) { s.mcp.RemoveTools(name) }

// AddTool adds a tool called name to this replica alone (it answers with
// its own name), so that the replica sends notifications/tools/list_changed
// to its listeners: how tests change one replica of a fleet under a client.
func (s *Server) AddTool(name string) {
	mcp.AddTool(s.mcp, s.described(&mcp.Tool{Name: name, Description: "Added at run time.", Annotations: readOnly()}),
		func(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
			return text(name), nil, nil
		})
}

// opOf returns the call's idempotency key: the _meta member
// io.mcpfleet/idempotency-key, or the Idempotency-Key header. mutate
// applies each (key, op) once: a re-executed call recognises itself.
func opOf(req *mcp.CallToolRequest) string {
	if req == nil || req.Params == nil {
		return ""
	}
	if v, ok := req.Params.GetMeta()["io.mcpfleet/idempotency-key"].(string); ok {
		return v
	}
	if req.Extra != nil && req.Extra.Header != nil {
		return req.Extra.Header.Get("Idempotency-Key")
	}
	return ""
}
